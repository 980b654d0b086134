"""One step of a batch of N-vs-M battles, compiled whole: the orders onto the map, the
battle step, fog of war and every battalion's observation, both sides' rewards and
who is still playing, chunk by chunk of battles.

:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch` calls :func:`team_step` once a
step. Each part is the kernel of its own module, over a run of battles
(:func:`envs.sim.kernels.step_battles`, :func:`envs.battles.multi_observation.observe_battles`,
:func:`envs.reward.side_reward`); this module strings them together and keeps the
episode's books.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from envs.battles.multi_observation import observation_scratch, observe_battles
from envs.reward import side_reward
from envs.sim import kernels
from envs.sim.jit import kernel
from envs.sim.kernels import (
    CHUNK,
    F_DESTROYED,
    F_ROUTED,
    P_DIST,
    chunk_count,
    sense_battles,
    step_battles,
    step_scratch,
    unit_rows,
)

BOTH_SIDES = np.array([0, 1], np.int8)
"""The sides whose rewards a team battle computes: both, Blue's first."""
NO_WINNER = -1
FOGGED, SCOUTED = np.bool_(False), np.bool_(True)
"""``reveal_all`` of :func:`~envs.battles.multi_observation.observe_battles`: after a step
each side reports what it sees; at deployment everything (not literals: see "Literal
arguments" in :mod:`envs.sim.jit`)."""


@kernel()
def team_battles(lo, hi, actions, rotate_sign, x0, y0, theta0, strength0, morale0, readiness0,
                 routed0, destroyed0, step, key, team, patches, cover_map, orders, ground0,
                 cover0, known, k, samples, low, high, dist0, new_step, values_, in_fight_,
                 seen_step_, weights, max_steps, units, flags, pairs, los, target, observation,
                 global_state, reward_values, reward_total, reward, acted, terminated,
                 truncated, battle_over, winner, scratch, seeing, arms):
    """Battles ``lo`` to ``hi - 1``: ``actions`` (B, U, 3), each in its side's frame, onto
    the map (``rotate_sign`` per unit) into ``orders``; the step into the output blocks of
    :func:`envs.sim.kernels.step_battles`; the fog reports (``values_``, ``in_fight_``,
    ``seen_step_``) refreshed and the observations and global states written, with the
    order of battle and the formations after the step from ``arms``
    (:func:`envs.battles.multi_observation.observe_battles`, ``seeing`` its scratch); both sides'
    reward components (:func:`envs.reward.side_reward`); and per battalion its reward
    (its side's, if it acted), whether it acted, terminated or was cut off, per battle
    whether it is over and who won."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    n = team.shape[0]
    for c in range(hi - lo):
        b = lo + c
        for i in range(n):
            orders[0, i, b] = actions[b, i, 0]
            orders[1, i, b] = actions[b, i, 1] * rotate_sign[i]
            orders[2, i, b] = actions[b, i, 2]
    step_battles(lo, hi, x0, y0, theta0, strength0, morale0, readiness0, routed0, destroyed0,
                 step, key, team, patches, cover_map, orders, ground0, cover0, known, k, samples,
                 low, high, units, flags, pairs, los, target, scratch, arms)
    (x, y, _, strength, morale, readiness, cos_h, sin_h, elevation, cover, volley, dealt,
     taken) = unit_rows(units)
    routed, destroyed = flags[F_ROUTED], flags[F_DESTROYED]
    dist = pairs[P_DIST]
    arm, quality, _, _, _, _, _, modes = arms  # modes: the formations after the step
    batch = x0.shape[1]
    side_reward(lo, hi, team, BOTH_SIDES, weights, k, routed0, destroyed0, routed, destroyed,
                strength, dist0, dist, dealt, taken, volley, reward_values, reward_total)
    observe_battles(lo, hi, x, y, cos_h, sin_h, strength, morale, readiness, routed, destroyed,
                    new_step, team, elevation, cover, arm, quality, modes[0], modes[1], dist, los,
                    values_, in_fight_, seen_step_, FOGGED, k, observation, global_state, seeing)
    for c in range(hi - lo):
        b = lo + c
        # A side is out when none of its battalions is left in the fight; the battle is
        # decided when a side is out (both at once: a draw), else cut off at max_steps.
        blue_in = red_in = False
        for i in range(n):
            fighting = not (routed[i, b] or destroyed[i, b])
            if team[i] == 0:
                blue_in = blue_in or fighting
            else:
                red_in = red_in or fighting
        decided = not (blue_in and red_in)
        cut_off = not decided and new_step[b] >= max_steps
        battle_over[b] = decided or cut_off
        winner[b] = 0 if blue_in and not red_in else (1 if red_in and not blue_in
                                                      else NO_WINNER)
        for i in range(n):
            was_in = not (routed0[i, b] or destroyed0[i, b])
            ended = was_in and (routed[i, b] or destroyed[i, b] or decided)
            acted[b, i] = was_in
            terminated[b, i] = ended
            truncated[b, i] = was_in and not ended and cut_off
            reward[b, i] = reward_total[team[i] * batch + b] if was_in else np.float32(0)


@kernel()
def team_step(actions, rotate_sign, x0, y0, theta0, strength0, morale0, readiness0, routed0,
              destroyed0, step, key, team, patches, cover_map, orders, ground0, cover0, known, k,
              samples, low, high, dist0, new_step, values_, in_fight_, seen_step_, weights,
              max_steps, units, flags, pairs, los, target, observation, global_state,
              reward_values, reward_total, reward, acted, terminated, truncated, battle_over,
              winner, arms):
    """:func:`team_battles` over the whole batch, on one thread, chunk by chunk."""
    n, batch = x0.shape
    scratch, seeing = step_scratch(n, min(batch, CHUNK)), observation_scratch(n)
    for lo in range(0, batch, CHUNK):
        team_battles(lo, min(lo + CHUNK, batch), actions, rotate_sign, x0, y0, theta0,
                     strength0, morale0, readiness0, routed0, destroyed0, step, key, team,
                     patches, cover_map, orders, ground0, cover0, known, k, samples, low, high,
                     dist0, new_step, values_, in_fight_, seen_step_, weights, max_steps, units,
                     flags, pairs, los, target, observation, global_state, reward_values,
                     reward_total, reward, acted, terminated, truncated, battle_over, winner,
                     scratch, seeing, arms)


@kernel(parallel=True)
def team_step_parallel(actions, rotate_sign, x0, y0, theta0, strength0, morale0, readiness0,
                       routed0, destroyed0, step, key, team, patches, cover_map, orders, ground0,
                       cover0, known, k, samples, low, high, dist0, new_step, values_,
                       in_fight_, seen_step_, weights, max_steps, units, flags, pairs, los,
                       target, observation, global_state, reward_values, reward_total, reward,
                       acted, terminated, truncated, battle_over, winner, arms):
    """:func:`team_step` with its chunks spread over Numba's threads."""
    n, batch = x0.shape
    for c in prange(chunk_count(batch)):
        lo = c * CHUNK
        hi = min(lo + CHUNK, batch)
        team_battles(lo, hi, actions, rotate_sign, x0,
                     y0, theta0, strength0, morale0, readiness0, routed0, destroyed0, step, key,
                     team, patches, cover_map, orders, ground0, cover0, known, k, samples, low,
                     high, dist0, new_step, values_, in_fight_, seen_step_, weights, max_steps,
                     units, flags, pairs, los, target, observation, global_state, reward_values,
                     reward_total, reward, acted, terminated, truncated, battle_over, winner,
                     step_scratch(n, hi - lo), observation_scratch(n), arms)


@kernel()
def restart_teams(battles, x, y, theta, strength, morale, readiness, routed, destroyed, step,
                  team, arm, quality, formation, drill, patches, cover_map, k, samples, cos_h,
                  sin_h, elevation, cover, dx, dy, dist, facing_cos, facing_sin, los, values,
                  in_fight, seen_step, observation, global_state):
    """The geometry (unit-major, written in place), every report (both sides have scouted
    the field at deployment), the observations and the global states of the battles
    ``battles`` just deployed, the rest left as they are. ``arm``, ``quality`` (U,) and
    ``formation``, ``drill`` (U, B) are the order of battle and the units' formations
    (:func:`envs.battles.multi_observation.observe_battles`)."""
    seeing = observation_scratch(x.shape[0])
    for b in battles:
        sense_battles(b, b + 1, x, y, theta, team, patches, cover_map, k, samples, cos_h,
                      sin_h, elevation, cover, dx, dy, dist, facing_cos, facing_sin, los)
        observe_battles(b, b + 1, x, y, cos_h, sin_h, strength, morale, readiness, routed,
                        destroyed, step, team, elevation, cover, arm, quality, formation, drill,
                        dist, los, values, in_fight, seen_step, SCOUTED, k, observation,
                        global_state, seeing)


def team_step_kernel(batch: int):
    """The kernel for ``batch`` battles: on every Numba thread when the batch is large."""
    return team_step_parallel if batch >= kernels.PARALLEL_MIN_BATTLES else team_step
