"""Scripted commanders of curriculum levels 1-5, for a whole batch at once.

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
from envs.sim.config import BattleConfig
from envs.sim.engine import Geometry, team_layout
from envs.sim.state import BattleState

F32 = np.float32
_FIRE_BY_LEVEL = np.array((0.0, *C.SCRIPTED_FIRE_INTENSITY), dtype=F32)


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
    # Unit-major (k, U, B) views, as in the engine.
    _, _, enemy = team_layout(tuple(state.team.tolist()))
    dist = geometry.dist.transpose(1, 2, 0)[units]
    candidates = enemy[units] & ~(state.routed.T | state.destroyed.T)[None, :, :]
    reach = np.where(candidates, dist, F32(np.inf))
    to_enemy = reach.min(axis=1)
    nearest = candidates & (reach <= to_enemy[:, None, :])
    # Ties (two enemies at exactly the same range) average their bearings.
    weight = nearest / np.maximum(nearest.sum(axis=1, dtype=np.int32), 1)[:, None, :]
    bearing_cos = (geometry.facing_cos.transpose(1, 2, 0)[units] * weight).sum(axis=1)
    bearing_sin = (geometry.facing_sin.transpose(1, 2, 0)[units] * weight).sum(axis=1)
    has_enemy = np.isfinite(to_enemy)

    level = levels.astype(np.intp)
    bearing = np.arctan2(bearing_sin, bearing_cos)
    turn = np.clip(bearing * F32(1 / config.max_turn_rate), -1, 1) * ((level >= 2) & has_enemy)
    halt = F32(C.SCRIPTED_HALT_FRACTION * config.fire_range)
    advance = (level >= 3) & has_enemy & (to_enemy > halt)
    actions = np.empty((len(level), len(units), C.ACTION_DIM), F32)
    actions[..., 0] = advance.T
    actions[..., 1] = turn.T
    actions[..., 2] = _FIRE_BY_LEVEL[level][:, None]
    return actions
