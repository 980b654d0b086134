"""One step of a batch of 1v1 duels, compiled whole: Red's scripted orders, the battle
step, both sides' observations, Blue's reward and the episode's end, battle by battle.

:class:`~envs.battalion_batch.BattalionBatch` calls :func:`duel_step` once a step, so
a single env's step is this kernel plus a thin Python shell. Each part is the
per-battle kernel of its own module (:func:`envs.sim.scripted.scripted_orders`,
:func:`envs.sim.kernels.step_battles`, :func:`envs.observation.duel_observe`,
:func:`envs.reward.side_reward`); this module only strings them together.
"""

from __future__ import annotations

import numpy as np

from envs.observation import duel_observe
from envs.reward import side_reward
from envs.sim import kernels
from envs.sim.jit import kernel
from envs.sim.kernels import (
    F_DESTROYED,
    F_ROUTED,
    P_DIST,
    P_DX,
    P_DY,
    P_FACING_COS,
    P_FACING_SIN,
    U_COS,
    U_COVER,
    U_DEALT,
    U_ELEVATION,
    U_MORALE,
    U_READINESS,
    U_SIN,
    U_STRENGTH,
    U_TAKEN,
    U_VOLLEY,
    U_X,
    U_Y,
    batch_kernels,
    sense_battles,
    step_battles,
    step_scratch,
)
from envs.sim.scripted import scripted_orders

RED = 1
BLUE_ONLY = np.zeros(1, np.int8)
"""The sides whose reward the duel computes: Blue's."""


@kernel()
def duel_battles(lo, hi, state, blocks, arms, inputs, outputs, scratch):
    """Duels ``lo`` to ``hi - 1``: where ``scripted``, Red's orders (written into
    ``orders``) come from its level's script; then the step (``state``, ``blocks``,
    ``arms`` and ``scratch`` as :func:`envs.sim.kernels.step_battles` takes them), both
    observations into ``observation`` (2, B, OBS_DIM), Blue's reward into ``values`` (10,
    B) and ``total`` (B,), and whether the duel terminated or was cut off into ``ends``
    (2, B). ``inputs`` is ``(dist0, facing_cos0, facing_sin0, levels, scripted,
    fire_by_level, weights, mirror, max_steps)``, ``outputs`` ``(observation, values,
    total, ends)``."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    (_, _, _, _, _, _, routed0, destroyed0, step, _, team, _, _, orders, _, _, _, k, _, _,
     _) = state
    dist0, facing_cos0, facing_sin0, levels, scripted, fire_by_level, weights, mirror, \
        max_steps = inputs
    observation, values, total, ends = outputs
    units, flags, pairs, los = blocks[0], blocks[1], blocks[2], blocks[3]
    scripted_orders(lo, hi, RED, levels, team, routed0, destroyed0, dist0, facing_cos0,
                    facing_sin0, k, fire_by_level, scripted, orders[0, RED], orders[1, RED],
                    orders[2, RED])
    step_battles(lo, hi, state, blocks, arms, scratch)
    x, y, cos_h, sin_h = units[U_X], units[U_Y], units[U_COS], units[U_SIN]
    strength, morale, readiness = units[U_STRENGTH], units[U_MORALE], units[U_READINESS]
    elevation, cover = units[U_ELEVATION], units[U_COVER]
    dealt, taken, volley = units[U_DEALT], units[U_TAKEN], units[U_VOLLEY]
    dx, dy, dist = pairs[P_DX], pairs[P_DY], pairs[P_DIST]
    facing_cos, facing_sin = pairs[P_FACING_COS], pairs[P_FACING_SIN]
    routed, destroyed = flags[F_ROUTED], flags[F_DESTROYED]
    duel_observe(lo, hi, x, y, cos_h, sin_h, strength, morale, readiness, step, 1, elevation,
                 cover, dx, dy, dist, facing_cos, facing_sin, los, k, mirror, observation)
    side_reward(lo, hi, team, BLUE_ONLY, weights, k, routed0, destroyed0, routed, destroyed,
                strength, dist0, dist, dealt, taken, volley, values, total)
    for c in range(hi - lo):
        b = lo + c
        over = routed[0, b] or destroyed[0, b] or routed[1, b] or destroyed[1, b]
        ends[0, b] = over
        ends[1, b] = not over and step[b] + 1 >= max_steps


duel_step, duel_step_parallel = batch_kernels("duel_step", duel_battles, step_scratch)
"""The duels' step over a whole batch, on one thread and on every Numba thread
(:func:`envs.sim.kernels.batch_kernels` of :func:`duel_battles`): ``(state, blocks, arms,
inputs, outputs)`` as :func:`duel_battles` takes them."""


@kernel()
def restart_duels(battles, x, y, theta, strength, morale, readiness, step, team, patches,
                  cover_map, k, samples, mirror, cos_h, sin_h, elevation, cover, dx, dy, dist,
                  facing_cos, facing_sin, los, observation):
    """The geometry (unit-major, written in place) and both observations (``observation``
    (2, B, OBS_DIM)) of the duels ``battles`` just deployed, the rest left as they are."""
    for b in battles:
        sense_battles(b, b + 1, x, y, theta, team, patches, cover_map, k, samples, cos_h,
                      sin_h, elevation, cover, dx, dy, dist, facing_cos, facing_sin, los)
        duel_observe(b, b + 1, x, y, cos_h, sin_h, strength, morale, readiness, step, 0,
                     elevation, cover, dx, dy, dist, facing_cos, facing_sin, los, k, mirror,
                     observation)


def duel_step_kernel(batch: int):
    """The kernel for ``batch`` duels: on every Numba thread when the batch is large."""
    return duel_step_parallel if batch >= kernels.PARALLEL_MIN_BATTLES else duel_step
