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
from envs.sim.validation import check_bool, check_positive, check_scripted_level

_F = {name: i for i, name in enumerate(OBSERVATION_FEATURES)}
_DEFAULT_DIAGONAL = BattleConfig().diagonal
HOLD_RANGE = 60.0
"""The doctrine's own halt, metres: the range at which it stops and opens fire."""
FALL_BACK_UNTIL = 0.35
"""Share of the battle's time after which a doctrine that falls back uphill climbs after
all: an enemy that never comes over the crest (scripted L1 and L2 stand their ground)
would otherwise hold it to a draw. Chosen on validation battles: from 0.2 to 0.5 it wins
as much against L5, from 0.5 on it draws against L1 and L2."""
SPENT_READINESS = 0.5
"""Readiness (the share of its muskets loaded) below which an enemy in sight counts as
having spent its volley, for ``spent_hold_range``. Scripted L5 fires from 160 m on, and
reaches the doctrine's halt with a readiness near 0.05; a doctrine halted at 60 m is
fully loaded (0.5 and 0.8 gave the same battles on validation)."""


class DisciplinedCommander:
    """Face the enemy, close to ``hold_range`` in silence, halt, then volley.

    If a crest hides the enemy at that range, it keeps closing (down to
    ``min_range``) until it can see what it is to fire at. With ``fall_back_uphill``,
    a crest that hides an enemy standing higher is not climbed: the battalion falls
    back, still facing the enemy, until the enemy comes over the crest and into view
    (or until :data:`FALL_BACK_UNTIL` of the battle's time has passed). With
    ``spent_hold_range``, an enemy in sight that has spent its volley
    (:data:`SPENT_READINESS`) is closed on to that range instead: it can no longer
    answer a volley with one, and each metre closed adds to the hit chance.
    Climbing blind meets the enemy at the crest, a few dozen metres off, and whoever
    sees first volleys first; scripted L5, which marches on to 160 m, comes over the
    crest instead, in sight from farther off, and spends its loaded volley at long
    range, as it does on open ground (``docs/training.md``, "Falling back uphill").

    Args:
        hold_range: distance in metres at which to halt and open fire (> 0).
        map_diagonal: length of the map diagonal, to turn the observed distance
            back into metres (the default map's unless told otherwise).
        max_turn_rate: the battle's turn rate, to wheel without overshooting.
        min_range: distance in metres down to which it closes on a hidden enemy (> 0).
        fall_back_uphill: fall back from a hidden enemy that stands higher instead of
            closing on it.
        spent_hold_range: distance in metres at which to halt and open fire on an
            enemy in sight that has spent its volley (> 0), or None to halt at
            ``hold_range`` whatever the enemy's readiness.
    """

    def __init__(self, hold_range: float = HOLD_RANGE, map_diagonal: float = _DEFAULT_DIAGONAL,
                 max_turn_rate: float = C.MAX_TURN_RATE, min_range: float = 15.0,
                 fall_back_uphill: bool = False, spent_hold_range: float | None = None) -> None:
        self.hold_range = check_positive("hold_range", hold_range)
        self.spent_hold_range = (None if spent_hold_range is None
                                 else check_positive("spent_hold_range", spent_hold_range))
        self.min_range = check_positive("min_range", min_range)
        self.map_diagonal = check_positive("map_diagonal", map_diagonal)
        self.max_turn_rate = check_positive("max_turn_rate", max_turn_rate)
        self.fall_back_uphill = check_bool("fall_back_uphill", fall_back_uphill)

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
        hold = self.hold_range
        if self.spent_hold_range is not None:
            spent = ~hidden & (obs[:, _F["enemy_readiness"]] < SPENT_READINESS)
            hold = np.where(spent, self.spent_hold_range, self.hold_range)
        march = facing & ((distance > hold) | (hidden & (distance > self.min_range)))
        fire = facing & ~march & (distance <= hold)
        actions = np.stack([march, turn, fire], axis=1).astype(np.float32)
        if self.fall_back_uphill:
            uphill = (hidden & (obs[:, _F["enemy_elevation"]] > obs[:, _F["own_elevation"]])
                      & (obs[:, _F["time_fraction"]] < FALL_BACK_UNTIL))
            actions[uphill, 0] = -1.0
        return (actions[0] if single else actions), None


STEP_TOLERANCE = 10.0
"""How far, in metres, a battalion of :class:`InStepCommander` may be ahead of its
laggard ally before it waits for it."""

EXPOSED_RANGE = 100.0
"""Metres within which a battalion of :class:`InStepCommander` with ``exposed_range`` set
to it marches on instead of waiting when it sees its enemy: the range MAPPO's team
imitates (chosen on validation battles; ``docs/research/mappo-studies.md``, "Not waiting
under fire")."""

GUARD_RANGE = 150.0
"""Metres within which a battalion of :class:`ConcentratingCommander` faces its nearest
enemy rather than the team's target."""

_T = {name: i for i, name in enumerate(team.OBSERVATION_FEATURES)}
_ALLY_AT = np.array([[_T[f"ally_{k}_{name}"] for name in ("present", "distance", "bearing_cos",
                                                          "bearing_sin")]
                     for k in range(team.ALLY_SLOTS)])
_ENEMY_AT = np.array([[_T[f"enemy_{k}_{name}"] for name in ("present", "distance",
                                                            "bearing_cos", "bearing_sin",
                                                            "visible")]
                      for k in range(team.ENEMY_SLOTS)])


class InStepCommander(DisciplinedCommander):
    """The disciplined doctrine for a team: the battalions march in step.

    Each battalion faces its nearest enemy, closes to ``hold_range`` in silence, halts
    and volleys, as :class:`DisciplinedCommander` does; but while it is more than
    ``step_tolerance`` metres nearer its enemy than an ally is to the enemy nearest that
    ally, it halts and waits for it. The battalions reach their halts together, so the
    enemy cannot turn all its muskets on the one that arrives first (scripted L5 fires
    at the nearest battalion from 160 m). With ``exposed_range`` set, a battalion that
    sees its enemy within that range no longer waits: it stands under that enemy's fire
    there, and halting costs it more than arriving first. It reads a team observation
    (:data:`envs.battles.multi_observation.OBSERVATION_FEATURES`): where each ally
    stands, where each enemy was last reported. Without allies in the fight it is the
    disciplined doctrine.

    ``hold_range``, ``map_diagonal``, ``max_turn_rate``, ``min_range`` and
    ``fall_back_uphill`` are as :class:`DisciplinedCommander`'s.

    Args:
        step_tolerance: metres a battalion may lead its laggard ally (> 0; at 0 the two
            would take turns to step).
        exposed_range: metres within which a battalion that sees its enemy marches on
            instead of waiting (> 0), or None to wait wherever it leads.
    """

    def __init__(self, hold_range: float = HOLD_RANGE, map_diagonal: float = _DEFAULT_DIAGONAL,
                 max_turn_rate: float = C.MAX_TURN_RATE, min_range: float = 15.0,
                 step_tolerance: float = STEP_TOLERANCE,
                 exposed_range: float | None = None, fall_back_uphill: bool = False) -> None:
        super().__init__(hold_range, map_diagonal, max_turn_rate, min_range, fall_back_uphill)
        self.step_tolerance = check_positive("step_tolerance", step_tolerance)
        self.exposed_range = (None if exposed_range is None
                              else check_positive("exposed_range", exposed_range))

    def predict(self, observation: np.ndarray,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """Orders for one team observation (OBS_DIM,) or a batch (n, OBS_DIM) (the arms
        block, if any, is not read)."""
        obs = self._team_observation(observation)
        picture = _TeamPicture(obs, self.map_diagonal)
        orders = np.atleast_2d(super().predict(self._aim(obs, picture))[0]).copy()
        wait = self._lead(picture) > self.step_tolerance
        if self.exposed_range is not None:
            wait &= ~((picture.distance <= self.exposed_range) & (picture.visible[:, 0] > 0.5))
        orders[wait, 0] = 0.0
        return (orders[0] if np.ndim(observation) == 1 else orders), None

    def _aim(self, obs: np.ndarray, picture: _TeamPicture) -> np.ndarray:
        """The observations the disciplined doctrine marches and fires on: each
        battalion's own, its nearest enemy in focus."""
        return obs

    @staticmethod
    def _team_observation(observation: np.ndarray) -> np.ndarray:
        obs = np.atleast_2d(np.asarray(observation, dtype=np.float32))
        if obs.shape[1] < team.OBS_DIM:
            raise ValueError(f"observation has {obs.shape[1]} features: the in-step doctrine "
                             f"reads a team observation of at least {team.OBS_DIM}")
        return obs

    @staticmethod
    def _lead(picture: _TeamPicture) -> np.ndarray:
        """(n,) metres by which each battalion is nearer its nearest enemy than its
        laggard ally is to the enemy nearest that ally (of those this battalion knows
        of); 0 without allies."""
        ally_to_enemy = np.where(picture.known[:, None, :], picture.gaps, np.inf).min(axis=2)
        return np.where(picture.allies, ally_to_enemy - picture.distance[:, None],
                        0.0).max(axis=1)


class ConcentratingCommander(InStepCommander):
    """The in-step doctrine with the team's fire concentrated on one enemy.

    Every battalion marches on, and volleys at, the enemy nearest the team as a whole
    (the least sum of distances from this battalion and its allies), so two battalions
    that would each have met their own enemy bring both volleys onto one, and the fight
    goes on two against one. An enemy that closes within ``guard_range`` is answered
    instead: a battalion then faces its nearest enemy, as :class:`InStepCommander`
    does, so that an enemy marching in is not left to volley into a flank. It keeps
    the in-step rule (a battalion leading its laggard ally waits for it). Without
    allies it is the disciplined doctrine. In 2v2 it wins more against scripted L5 than
    marching in step and less against the doctrine team; MAPPO's clone of it does not
    keep the gain, so the default team imitates :class:`InStepCommander`
    (``docs/research/mappo-studies.md``, "Concentrating fire").

    ``hold_range``, ``map_diagonal``, ``max_turn_rate``, ``min_range``,
    ``step_tolerance``, ``exposed_range`` and ``fall_back_uphill`` are as
    :class:`InStepCommander`'s.

    Args:
        guard_range: metres within which the nearest enemy is faced whatever the
            team's target (> 0). The default, 150 m, is inside scripted L5's halt of
            160 m: L5's battalions stop and fire from beyond it, and the team keeps its
            target; the doctrine's march on to their own halt and are met.
    """

    def __init__(self, hold_range: float = HOLD_RANGE, map_diagonal: float = _DEFAULT_DIAGONAL,
                 max_turn_rate: float = C.MAX_TURN_RATE, min_range: float = 15.0,
                 step_tolerance: float = STEP_TOLERANCE,
                 guard_range: float = GUARD_RANGE, exposed_range: float | None = None,
                 fall_back_uphill: bool = False) -> None:
        super().__init__(hold_range, map_diagonal, max_turn_rate, min_range, step_tolerance,
                         exposed_range, fall_back_uphill)
        self.guard_range = check_positive("guard_range", guard_range)

    def _aim(self, obs: np.ndarray, picture: _TeamPicture) -> np.ndarray:
        """The observations with the team's target in focus (the enemy nearest the team;
        one's own nearest within ``guard_range``)."""
        # Column 0 is the focus (this battalion's nearest).
        together = picture.enemy_distance + np.where(picture.allies[..., None], picture.gaps,
                                                     0.0).sum(axis=1)
        target = np.where(picture.known, together, np.inf).argmin(axis=1)
        target[picture.distance < self.guard_range] = 0
        rows = np.arange(len(obs))
        aimed = obs.copy()
        aimed[:, _F["enemy_distance"]] = picture.enemy_distance[rows, target] / self.map_diagonal
        aimed[:, _F["enemy_relative_bearing_cos"]] = picture.bearing_cos[rows, target]
        aimed[:, _F["enemy_relative_bearing_sin"]] = picture.bearing_sin[rows, target]
        aimed[:, _F["line_of_sight"]] = picture.visible[rows, target]
        return aimed


class _TeamPicture:
    """Where a team observation puts the enemies and the allies, in one's own frame
    (x ahead, y to the left, metres). Enemy column 0 is the focus enemy (the nearest),
    then the enemy slots; ``known`` marks the columns that hold an enemy."""

    def __init__(self, obs: np.ndarray, map_diagonal: float) -> None:
        self.distance = obs[:, _F["enemy_distance"]] * map_diagonal
        slots = obs[:, _ENEMY_AT]
        self.enemy_distance = np.concatenate([self.distance[:, None],
                                              slots[..., 1] * map_diagonal], axis=1)
        self.bearing_cos = np.concatenate([obs[:, [_F["enemy_relative_bearing_cos"]]],
                                           slots[..., 2]], axis=1)
        self.bearing_sin = np.concatenate([obs[:, [_F["enemy_relative_bearing_sin"]]],
                                           slots[..., 3]], axis=1)
        self.visible = np.concatenate([obs[:, [_F["line_of_sight"]]], slots[..., 4]], axis=1)
        self.known = np.concatenate([np.ones((len(obs), 1), bool), slots[..., 0] > 0.5], axis=1)
        allies = obs[:, _ALLY_AT]
        self.allies = allies[..., 0] > 0.5
        ally_x = allies[..., 1] * map_diagonal * allies[..., 2]
        ally_y = allies[..., 1] * map_diagonal * allies[..., 3]
        enemy_x = self.enemy_distance * self.bearing_cos
        enemy_y = self.enemy_distance * self.bearing_sin
        # (n, allies, enemies): each ally's distance to each enemy.
        self.gaps = np.hypot(enemy_x[:, None, :] - ally_x[..., None],
                             enemy_y[:, None, :] - ally_y[..., None])


class ScriptedCommander:
    """The scripted opponent of a curriculum level, driven from an observation.

    It gives the same orders as the built-in scripted Red (:mod:`envs.sim.scripted`)
    would in a 1v1 battle (in the frame of the side it commands), but as a
    policy: it can command Blue (to pit a level against itself) or be put in a
    pool of opponents.

    Args:
        level: curriculum level, 1 to :data:`~envs.sim.constants.NUM_CURRICULUM_LEVELS`.
        map_diagonal: the battle's, as for :class:`DisciplinedCommander`.
        max_turn_rate: the battle's, as for :class:`DisciplinedCommander`.
        fire_range: the battle's, as for :class:`DisciplinedCommander`.
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
