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
from envs.sim.jit import kernel
from envs.sim.kernels import K_INV_TURN_RATE, K_SCRIPTED_HALT
from envs.sim.state import BattleState

F32 = np.float32
FIRE_BY_LEVEL = np.array((0.0, *C.SCRIPTED_FIRE_INTENSITY), dtype=F32)
"""Fire intensity of each level (index 0 unused)."""


@kernel()
def scripted_orders(b, i, level, team, routed, destroyed, dist, facing_cos, facing_sin, k,
                    fire_by_level):
    """``(move, rotate, fire)`` on the map of unit ``i`` of battle ``b`` commanded at
    ``level``, from the unit-major state and geometry at the start of the step."""
    n = team.shape[0]
    nearest = F32(np.inf)
    for j in range(n):
        if team[j] != team[i] and not (routed[j, b] or destroyed[j, b]):
            nearest = min(nearest, dist[i, j, b])
    # Ties (two enemies at exactly the same range) average their bearings; like the
    # reference NumPy code, the bearing is worked out in float64.
    count = 0
    for j in range(n):
        if team[j] != team[i] and not (routed[j, b] or destroyed[j, b]) \
                and dist[i, j, b] <= nearest:
            count += 1
    has_enemy = count > 0
    weight = 1.0 / max(count, 1)
    bearing_cos = 0.0
    bearing_sin = 0.0
    for j in range(n):
        if team[j] != team[i] and not (routed[j, b] or destroyed[j, b]) \
                and dist[i, j, b] <= nearest:
            bearing_cos += np.float64(facing_cos[i, j, b]) * weight
            bearing_sin += np.float64(facing_sin[i, j, b]) * weight
    turn = 0.0
    if level >= 2 and has_enemy:
        turn = min(max(np.arctan2(bearing_sin, bearing_cos) * np.float64(k[K_INV_TURN_RATE]),
                       -1.0), 1.0)
    advance = F32(1) if level >= 3 and has_enemy and nearest > k[K_SCRIPTED_HALT] else F32(0)
    return advance, F32(turn), fire_by_level[level]


@kernel()
def scripted_kernel(units, levels, team, routed, destroyed, dist, facing_cos, facing_sin, k,
                    fire_by_level, out):
    """Orders of the scripted ``units`` of every battle into ``out`` (B, len(units), 3)."""
    for b in range(levels.shape[0]):
        for slot in range(units.shape[0]):
            out[b, slot, 0], out[b, slot, 1], out[b, slot, 2] = scripted_orders(
                b, units[slot], levels[b], team, routed, destroyed, dist, facing_cos,
                facing_sin, k, fire_by_level)


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
    scripted_kernel(units, np.asarray(levels, dtype=np.int8),
                    np.ascontiguousarray(state.team, dtype=np.int8),
                    unit_major(state.routed), unit_major(state.destroyed),
                    pair_major(geometry.dist), pair_major(geometry.facing_cos),
                    pair_major(geometry.facing_sin), kernels.constants(config, rows, cols),
                    FIRE_BY_LEVEL, out)
    return out

