"""One step of a batch of 1v1 duels, compiled whole: Red's scripted orders, the battle
step, both sides' observations, Blue's reward and the episode's end, battle by battle.

:class:`~envs.battles.battalion_batch.BattalionBatch` calls :func:`duel_step` once a step, so
a single env's step is this kernel plus a thin Python shell. Each part is the
per-battle kernel of its own module (:func:`envs.sim.scripted.scripted_orders`,
:func:`envs.sim.kernels.step_battles`, :func:`envs.battles.observation.duel_observe`,
:func:`envs.reward.side_reward`); this module only strings them together.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from envs.battles.observation import duel_observe
from envs.reward import side_reward
from envs.sim import kernels
from envs.sim.jit import kernel
from envs.sim.kernels import (
    CHUNK,
    F_DESTROYED,
    F_ROUTED,
    P_DIST,
    P_DX,
    P_DY,
    P_FACING_COS,
    P_FACING_SIN,
    chunk_count,
    sense_battles,
    step_battles,
    step_scratch,
    unit_rows,
)
from envs.sim.scripted import scripted_orders

RED = 1
AT_START, AFTER_STEP = np.intp(0), np.intp(1)
"""Steps to add to a duel's clock in its observation: none at a restart, one after a
step (not literals: see "Literal arguments" in :mod:`envs.sim.jit`)."""
BLUE_ONLY = np.zeros(1, np.int8)
"""The sides whose reward the duel computes: Blue's."""


@kernel()
def duel_battles(lo, hi, x0, y0, theta0, strength0, morale0, readiness0, routed0, destroyed0,
                 step, key, team, patches, cover_map, orders, ground0, cover0, known, k,
                 samples, low, high, dist0, facing_cos0, facing_sin0, levels, scripted,
                 fire_by_level, weights, mirror, max_steps, units, flags, pairs, los, target,
                 observation, values, total, ends, scratch, arms):
    """Duels ``lo`` to ``hi - 1``: where ``scripted``, Red's orders (written into
    ``orders``) come from its level's script; then the step (into the output blocks of
    :func:`envs.sim.kernels.step_battles`), both observations into ``observation`` (2, B,
    OBS_DIM), Blue's reward into ``values`` (10, B) and ``total`` (B,), and whether the
    duel terminated or was cut off into ``ends`` (2, B)."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    scripted_orders(lo, hi, RED, levels, team, routed0, destroyed0, dist0, facing_cos0,
                    facing_sin0, k, fire_by_level, scripted, orders[0, RED], orders[1, RED],
                    orders[2, RED])
    step_battles(lo, hi, x0, y0, theta0, strength0, morale0, readiness0, routed0, destroyed0,
                 step, key, team, patches, cover_map, orders, ground0, cover0, known, k, samples,
                 low, high, units, flags, pairs, los, target, scratch, arms)
    (x, y, _, strength, morale, readiness, cos_h, sin_h, elevation, cover, volley, dealt,
     taken) = unit_rows(units)
    dx, dy, dist = pairs[P_DX], pairs[P_DY], pairs[P_DIST]
    facing_cos, facing_sin = pairs[P_FACING_COS], pairs[P_FACING_SIN]
    routed, destroyed = flags[F_ROUTED], flags[F_DESTROYED]
    duel_observe(lo, hi, x, y, cos_h, sin_h, strength, morale, readiness, step, AFTER_STEP,
                 elevation, cover, dx, dy, dist, facing_cos, facing_sin, los, k, mirror,
                 observation)
    side_reward(lo, hi, team, BLUE_ONLY, weights, k, routed0, destroyed0, routed, destroyed,
                strength, dist0, dist, dealt, taken, volley, values, total)
    for c in range(hi - lo):
        b = lo + c
        over = routed[0, b] or destroyed[0, b] or routed[1, b] or destroyed[1, b]
        ends[0, b] = over
        ends[1, b] = not over and step[b] + 1 >= max_steps


@kernel()
def duel_step(x0, y0, theta0, strength0, morale0, readiness0, routed0, destroyed0, step, key,
              team, patches, cover_map, orders, ground0, cover0, known, k, samples, low, high,
              dist0, facing_cos0, facing_sin0, levels, scripted, fire_by_level, weights, mirror,
              max_steps, units, flags, pairs, los, target, observation, values, total, ends,
              arms):
    """:func:`duel_battles` over the whole batch, on one thread, chunk by chunk."""
    batch = x0.shape[1]
    scratch = step_scratch(x0.shape[0], min(batch, CHUNK))
    for lo in range(0, batch, CHUNK):
        duel_battles(lo, min(lo + CHUNK, batch), x0, y0, theta0, strength0, morale0,
                     readiness0, routed0, destroyed0, step, key, team, patches, cover_map,
                     orders, ground0, cover0, known, k, samples, low, high, dist0, facing_cos0,
                     facing_sin0, levels, scripted, fire_by_level, weights, mirror, max_steps,
                     units, flags, pairs, los, target, observation, values, total, ends,
                     scratch, arms)


@kernel(parallel=True)
def duel_step_parallel(x0, y0, theta0, strength0, morale0, readiness0, routed0, destroyed0,
                       step, key, team, patches, cover_map, orders, ground0, cover0, known, k,
                       samples, low, high, dist0, facing_cos0, facing_sin0, levels, scripted,
                       fire_by_level, weights, mirror, max_steps, units, flags, pairs, los,
                       target, observation, values, total, ends, arms):
    """:func:`duel_step` with its chunks spread over Numba's threads."""
    batch = x0.shape[1]
    for c in prange(chunk_count(batch)):
        lo = c * CHUNK
        hi = min(lo + CHUNK, batch)
        duel_battles(lo, hi, x0, y0, theta0, strength0,
                     morale0, readiness0, routed0, destroyed0, step, key, team, patches,
                     cover_map, orders, ground0, cover0, known, k, samples, low, high, dist0,
                     facing_cos0, facing_sin0, levels, scripted, fire_by_level, weights, mirror,
                     max_steps, units, flags, pairs, los, target, observation, values, total,
                     ends, step_scratch(x0.shape[0], hi - lo), arms)


@kernel()
def restart_duels(battles, x, y, theta, strength, morale, readiness, step, team, patches,
                  cover_map, k, samples, mirror, cos_h, sin_h, elevation, cover, dx, dy, dist,
                  facing_cos, facing_sin, los, observation):
    """The geometry (unit-major, written in place) and both observations (``observation``
    (2, B, OBS_DIM)) of the duels ``battles`` just deployed, the rest left as they are."""
    for b in battles:
        sense_battles(b, b + 1, x, y, theta, team, patches, cover_map, k, samples, cos_h,
                      sin_h, elevation, cover, dx, dy, dist, facing_cos, facing_sin, los)
        duel_observe(b, b + 1, x, y, cos_h, sin_h, strength, morale, readiness, step, AT_START,
                     elevation, cover, dx, dy, dist, facing_cos, facing_sin, los, k, mirror,
                     observation)


def duel_step_kernel(batch: int):
    """The kernel for ``batch`` duels: on every Numba thread when the batch is large."""
    return duel_step_parallel if batch >= kernels.PARALLEL_MIN_BATTLES else duel_step
