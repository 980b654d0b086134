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

from envs.battles import multi_observation as team
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


STEP_TOLERANCE = 10.0
"""How far, in metres, a battalion of :class:`InStepCommander` may be ahead of its
laggard ally before it waits for it."""

_T = {name: i for i, name in enumerate(team.OBSERVATION_FEATURES)}
_ALLY_AT = np.array([[_T[f"ally_{k}_{name}"] for name in ("present", "distance", "bearing_cos",
                                                          "bearing_sin")]
                     for k in range(team.ALLY_SLOTS)])
_ENEMY_AT = np.array([[_T[f"enemy_{k}_{name}"] for name in ("present", "distance",
                                                            "bearing_cos", "bearing_sin")]
                      for k in range(team.ENEMY_SLOTS)])


class InStepCommander(DisciplinedCommander):
    """The disciplined doctrine for a team: the battalions march in step.

    Each battalion faces its nearest enemy, closes to ``hold_range`` in silence, halts
    and volleys, as :class:`DisciplinedCommander` does; but while it is more than
    ``step_tolerance`` metres nearer its enemy than an ally is to the enemy nearest that
    ally, it halts and waits for it. The battalions reach their halts together, so the
    enemy cannot turn all its muskets on the one that arrives first (scripted L5 fires
    at the nearest battalion from 160 m). It reads a team observation
    (:data:`envs.battles.multi_observation.OBSERVATION_FEATURES`): where each ally
    stands, where each enemy was last reported. Without allies in the fight it is the
    disciplined doctrine.

    Args:
        hold_range, map_diagonal, max_turn_rate, min_range: as
            :class:`DisciplinedCommander`'s.
        step_tolerance: metres a battalion may lead its laggard ally (> 0; at 0 the two
            would take turns to step).
    """

    def __init__(self, hold_range: float = HOLD_RANGE, map_diagonal: float = _DEFAULT_DIAGONAL,
                 max_turn_rate: float = C.MAX_TURN_RATE, min_range: float = 15.0,
                 step_tolerance: float = STEP_TOLERANCE) -> None:
        super().__init__(hold_range, map_diagonal, max_turn_rate, min_range)
        self.step_tolerance = check_positive("step_tolerance", step_tolerance)

    def predict(self, observation: np.ndarray,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """Orders for one team observation (OBS_DIM,) or a batch (n, OBS_DIM) (the arms
        block, if any, is not read)."""
        obs = np.atleast_2d(np.asarray(observation, dtype=np.float32))
        if obs.shape[1] < team.OBS_DIM:
            raise ValueError(f"observation has {obs.shape[1]} features: the in-step doctrine "
                             f"reads a team observation of at least {team.OBS_DIM}")
        orders = np.atleast_2d(super().predict(obs)[0]).copy()
        # Positions in one's own frame (x ahead, y to the left), metres.
        distance = obs[:, _F["enemy_distance"]] * self.map_diagonal
        enemies = obs[:, _ENEMY_AT] * np.array([1, self.map_diagonal, 1, 1], np.float32)
        enemy_x = np.concatenate([(distance * obs[:, _F["enemy_relative_bearing_cos"]])[:, None],
                                  enemies[..., 1] * enemies[..., 2]], axis=1)
        enemy_y = np.concatenate([(distance * obs[:, _F["enemy_relative_bearing_sin"]])[:, None],
                                  enemies[..., 1] * enemies[..., 3]], axis=1)
        known = np.concatenate([np.ones((len(obs), 1), bool), enemies[..., 0] > 0.5], axis=1)
        allies = obs[:, _ALLY_AT]
        ally_x = allies[..., 1] * self.map_diagonal * allies[..., 2]
        ally_y = allies[..., 1] * self.map_diagonal * allies[..., 3]
        # Each ally's distance to the enemy nearest it (of those this battalion knows of).
        gaps = np.hypot(enemy_x[:, None, :] - ally_x[..., None],
                        enemy_y[:, None, :] - ally_y[..., None])
        ally_to_enemy = np.where(known[:, None, :], gaps, np.inf).min(axis=2)
        lead = np.where(allies[..., 0] > 0.5, ally_to_enemy - distance[:, None], 0.0).max(axis=1)
        orders[lead > self.step_tolerance, 0] = 0.0
        return (orders[0] if np.ndim(observation) == 1 else orders), None


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
