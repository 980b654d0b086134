"""Scripted commanders of curriculum levels 1-5, compiled, for a whole batch at once.

Each scripted battalion deals with the nearest enemy still in the fight:

* **L1** stands still and holds fire.
* **L2** wheels to face the enemy (by the shortest arc) but neither advances nor fires.
* **L3** wheels to face the enemy and marches on it until it is within
  ``SCRIPTED_HALT_FRACTION`` of fire range; it never fires.
* **L4** does the same and fires at half intensity.
* **L5** does the same and fires at full intensity every step, whatever the range
  (no fire discipline).
"""

from __future__ import annotations

import numpy as np

from envs.sim import constants as C
from envs.sim import kernels
from envs.sim.config import BattleConfig
from envs.sim.engine import Geometry, pair_major, unit_major
from envs.sim.jit import kernel, read_only
from envs.sim.kernels import K_INV_TURN_RATE, K_SCRIPTED_HALT
from envs.sim.state import BattleState
from envs.sim.vector_math import atan2

F32 = np.float32
FIRE_BY_LEVEL = np.array((0.0, *C.SCRIPTED_FIRE_INTENSITY), dtype=F32)
"""Fire intensity of each level (index 0 unused)."""


@kernel(inline="always")
def _among_nearest(i, j, b, c, routed, destroyed, dist, nearest):
    """Whether enemy ``j`` is in the fight and at the nearest range (``nearest[c]``) of
    those from ``i`` in battle ``b``."""
    return (not (routed[j, b] | destroyed[j, b])) & (dist[i, j, b] <= nearest[c])


@kernel()
def scripted_orders(lo, hi, i, levels, team, routed, destroyed, dist, facing_cos, facing_sin, k,
                    fire_by_level, chosen, move, rotate, fire):
    """Orders on the map of unit ``i`` in battles ``lo`` to ``hi - 1``, each commanded at
    its ``levels[b]``, from the unit-major state and geometry at the start of the step:
    written into ``move[b]``, ``rotate[b]`` and ``fire[b]`` where ``chosen[b]`` (the
    other battles' entries are left as they are). Battles are the inner loop, so the
    orders are worked out across SIMD lanes."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    n = team.shape[0]
    width = hi - lo
    nearest = np.full(width, np.inf, F32)
    count = np.zeros(width, np.int32)
    bearing_cos = np.zeros(width, np.float64)
    bearing_sin = np.zeros(width, np.float64)
    for j in range(n):
        if team[j] == team[i]:
            continue
        for c in range(hi - lo):
            b = lo + c
            if not (routed[j, b] | destroyed[j, b]):
                nearest[c] = min(nearest[c], dist[i, j, b])
    # Ties (two enemies at exactly the same range) average their bearings; like the
    # reference NumPy code, the bearing is worked out in float64.
    for j in range(n):
        if team[j] == team[i]:
            continue
        for c in range(hi - lo):
            b = lo + c
            if _among_nearest(i, j, b, c, routed, destroyed, dist, nearest):
                count[c] += 1
    for j in range(n):
        if team[j] == team[i]:
            continue
        for c in range(hi - lo):
            b = lo + c
            if _among_nearest(i, j, b, c, routed, destroyed, dist, nearest):
                bearing_cos[c] += (np.float64(facing_cos[i, j, b])
                                   * (1.0 / max(count[c], 1)))
        for c in range(hi - lo):
            b = lo + c
            if _among_nearest(i, j, b, c, routed, destroyed, dist, nearest):
                bearing_sin[c] += (np.float64(facing_sin[i, j, b])
                                   * (1.0 / max(count[c], 1)))
    inv_turn_rate, halt = np.float64(k[K_INV_TURN_RATE]), k[K_SCRIPTED_HALT]
    for c in range(hi - lo):
        b = lo + c
        turning = (levels[b] >= 2) & (count[c] > 0)
        turn = min(max(atan2(bearing_sin[c], bearing_cos[c]) * inv_turn_rate, -1.0), 1.0)
        if chosen[b]:
            rotate[b] = F32(turn) if turning else F32(0)
    for c in range(hi - lo):
        b = lo + c
        advancing = (levels[b] >= 3) & (count[c] > 0) & (nearest[c] > halt)
        if chosen[b]:
            move[b] = F32(1) if advancing else F32(0)
    for c in range(hi - lo):
        b = lo + c
        if chosen[b]:
            fire[b] = fire_by_level[levels[b]]


@kernel()
def scripted_kernel(units, levels, team, routed, destroyed, dist, facing_cos, facing_sin, k,
                    fire_by_level, out):
    """Orders of the scripted ``units`` of every battle into ``out`` (B, len(units), 3)."""
    batch = levels.shape[0]
    everyone = np.ones(batch, np.bool_)
    for slot in range(units.shape[0]):
        scripted_orders(0, batch, units[slot], levels, team, routed, destroyed, dist,
                        facing_cos, facing_sin, k, fire_by_level, everyone, out[:, slot, 0],
                        out[:, slot, 1], out[:, slot, 2])


def scripted_actions(state: BattleState, geometry: Geometry, units: np.ndarray,
                     levels: np.ndarray, config: BattleConfig) -> np.ndarray:
    """Actions of scripted battalions.

    Args:
        state: current batch state.
        geometry: :func:`envs.sim.engine.sense` of ``state``.
        units: (k,) indices of the battalions to command.
        levels: (B,) curriculum level (1..5) of each battle.
        config: the battle model's parameters.

    Returns:
        (B, k, 3) float32 ``[move, rotate, fire]``.
    """
    rows, cols = state.grid_shape
    units = np.asarray(units, dtype=np.intp)
    out = np.empty((state.batch_size, len(units), C.ACTION_DIM), F32)
    scripted_kernel(units, read_only(np.asarray(levels, dtype=np.int8)),
                    np.ascontiguousarray(state.team, dtype=np.int8),
                    unit_major(state.routed), unit_major(state.destroyed),
                    pair_major(geometry.dist), pair_major(geometry.facing_cos),
                    pair_major(geometry.facing_sin), kernels.constants(config, rows, cols),
                    FIRE_BY_LEVEL, out)
    return out

