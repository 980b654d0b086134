"""A hand-written commander that practises fire discipline: a baseline to beat.

It squares up to the enemy, marches on it without firing, halts at close range
and only then opens fire. It reads nothing but its own observation, so it can
command Blue or Red (observations are symmetric) and work on one battle or a
batch. Against scripted L5, which fires from the moment the enemy is in range,
it wins most battles (see ``docs/simulation.md``); against an enemy in woods or
on a ridge it does no thinking at all.
"""

from __future__ import annotations

import numpy as np

from envs.battles.observation import OBSERVATION_FEATURES
from envs.sim import constants as C
from envs.sim.config import BattleConfig
from envs.sim.validation import check_positive, check_scripted_level

_F = {name: i for i, name in enumerate(OBSERVATION_FEATURES)}
_DEFAULT_DIAGONAL = BattleConfig().diagonal
HOLD_RANGE = 60.0
"""The doctrine's own halt, metres: the range at which it stops and opens fire."""


class DisciplinedCommander:
    """Face the enemy, close to ``hold_range`` in silence, halt, then volley.

    If a crest hides the enemy at that range, it keeps closing (down to
    ``min_range``) until it can see what it is to fire at.

    Args:
        hold_range: distance in metres at which to halt and open fire (> 0).
        map_diagonal: length of the map diagonal, to turn the observed distance
            back into metres (the default map's unless told otherwise).
        max_turn_rate: the battle's turn rate, to wheel without overshooting.
    """

    def __init__(self, hold_range: float = HOLD_RANGE, map_diagonal: float = _DEFAULT_DIAGONAL,
                 max_turn_rate: float = C.MAX_TURN_RATE, min_range: float = 15.0) -> None:
        self.hold_range = check_positive("hold_range", hold_range)
        self.min_range = check_positive("min_range", min_range)
        self.map_diagonal = check_positive("map_diagonal", map_diagonal)
        self.max_turn_rate = check_positive("max_turn_rate", max_turn_rate)

    def predict(self, observation: np.ndarray,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """Actions for one observation (OBS_DIM,) or a batch (n, OBS_DIM)."""
        obs = np.asarray(observation, dtype=np.float32)
        single = obs.ndim == 1
        obs = np.atleast_2d(obs)
        distance = obs[:, _F["enemy_distance"]] * self.map_diagonal
        off_front = np.arctan2(obs[:, _F["enemy_relative_bearing_sin"]],
                               obs[:, _F["enemy_relative_bearing_cos"]])
        turn = np.clip(off_front / self.max_turn_rate, -1, 1)
        facing = np.abs(off_front) < 0.3
        hidden = obs[:, _F["line_of_sight"]] < 0.5
        march = facing & ((distance > self.hold_range)
                          | (hidden & (distance > self.min_range)))
        fire = facing & ~march & (distance <= self.hold_range)
        actions = np.stack([march, turn, fire], axis=1).astype(np.float32)
        return (actions[0] if single else actions), None


class ScriptedCommander:
    """The scripted opponent of a curriculum level, driven from an observation.

    It gives the same orders as the built-in scripted Red (:mod:`envs.sim.scripted`)
    would in a 1v1 battle (in the frame of the side it commands), but as a
    policy: it can command Blue (to pit a level against itself) or be put in a
    pool of opponents.

    Args:
        level: curriculum level, 1 to :data:`~envs.sim.constants.NUM_CURRICULUM_LEVELS`.
        map_diagonal, max_turn_rate, fire_range: the battle's, as for
            :class:`DisciplinedCommander`.
    """

    def __init__(self, level: int, map_diagonal: float = _DEFAULT_DIAGONAL,
                 max_turn_rate: float = C.MAX_TURN_RATE,
                 fire_range: float = C.FIRE_RANGE) -> None:
        self.level = check_scripted_level("level", level)
        self.map_diagonal = check_positive("map_diagonal", map_diagonal)
        self.max_turn_rate = check_positive("max_turn_rate", max_turn_rate)
        self.halt = C.SCRIPTED_HALT_FRACTION * check_positive("fire_range", fire_range)

    def predict(self, observation: np.ndarray,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """Actions for one observation (OBS_DIM,) or a batch (n, OBS_DIM)."""
        obs = np.atleast_2d(np.asarray(observation, dtype=np.float32))
        distance = obs[:, _F["enemy_distance"]] * self.map_diagonal
        off_front = np.arctan2(obs[:, _F["enemy_relative_bearing_sin"]],
                               obs[:, _F["enemy_relative_bearing_cos"]])
        turn = np.clip(off_front / self.max_turn_rate, -1, 1) * (self.level >= 2)
        march = (self.level >= 3) & (distance > self.halt)
        fire = np.full(len(obs), C.SCRIPTED_FIRE_INTENSITY[self.level - 1])
        actions = np.stack([march, turn, fire], axis=1).astype(np.float32)
        return (actions[0] if np.ndim(observation) == 1 else actions), None
