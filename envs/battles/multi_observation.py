"""What each battalion of an N-vs-M battle knows: its own view under fog of war,
and the global state a centralised critic reads.

A side sees an enemy battalion while one of its own in the fight has it within
``visibility_radius`` and in line of sight, and keeps a report of every enemy as last
seen (:class:`FogReports`). A battalion's observation is :data:`OBS_DIM` numbers whatever
the team size (:data:`ARMS_OBS_DIM` in battles with an order of battle,
:func:`observation_dims`), so one network serves 1v1 to 6v6. :func:`global_states` gives
each side's fog-free picture and :func:`critic_states` a battalion's observation followed
by its side's global state. Red's observations, state and orders are in Red's own,
mirrored frame (:data:`ROTATE_SIGN`). Numba kernels compute it all:
:func:`observe_battles` for a run of battles, :func:`observe` for a whole batch.
``docs/simulation.md`` ("N-vs-M battles") gives the layout and the rules of sight.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from envs.battles.observation import MIRROR_NEGATED as DUEL_MIRROR_NEGATED
from envs.battles.observation import OBS_DIM as DUEL_OBS_DIM
from envs.battles.observation import OBSERVATION_FEATURES as DUEL_FEATURES
from envs.battles.observation import ROTATE_SIGN
from envs.sim import kernels
from envs.sim.config import BattleConfig
from envs.sim.constants import ARM_NAMES, FORMATION_NAMES
from envs.sim.engine import Geometry, pair_major, team_codes, unit_major
from envs.sim.jit import kernel
from envs.sim.kernels import (
    CHUNK,
    K_COS_FIRE_ARC,
    K_HIT_EXPONENT,
    K_INV_DIAGONAL,
    K_INV_FIRE_RANGE,
    K_INV_HEIGHT,
    K_INV_MAX_STEPS,
    K_INV_WIDTH,
    hit_chance_of,
    unit_interval,
)
from envs.sim.state import BattleState

F32 = np.float32

MAX_TEAM_SIZE = 6
"""Largest team whose every battalion has a slot in observations and global state."""
ALLY_SLOTS = MAX_TEAM_SIZE - 1
ENEMY_SLOTS = MAX_TEAM_SIZE - 1

FOCUS_FEATURES = ("focus_visible", "focus_report_age", "focus_allies_hit_chance")
"""Whether the focus enemy is in sight now, its report's age, and the best hit chance
any ally's volley would have on it now (allies engaging the same enemy)."""
ALLY_FEATURES = ("present", "distance", "bearing_cos", "bearing_sin", "heading_cos",
                 "heading_sin", "strength", "morale", "readiness")
"""Per ally slot: distance (of the map diagonal), the ally's bearing relative to
one's own heading, its heading relative to one's own, and its state."""
ENEMY_FEATURES = ("present", "visible", "report_age", "distance", "bearing_cos",
                  "bearing_sin", "front_cos", "front_sin", "strength", "morale",
                  "readiness", "hit_chance", "allies_hit_chance")
"""Per enemy slot, from its report: whether it is in sight now, the report's age (of
``max_steps``), distance, its bearing relative to one's own heading, one's own
bearing from its front, its state, the hit chance of one's volley on it now, and the
best hit chance of any ally's (who else is engaging it: concentrating fire wins)."""
TEAM_FEATURES = ("own_in_fight", "enemies_in_fight")
"""Battalions of one's own side in the fight, and enemies believed in it, over
:data:`MAX_TEAM_SIZE`."""
ARMS_FEATURES = (*(f"arm_{name}" for name in ARM_NAMES),
                 *(f"formation_{name}" for name in FORMATION_NAMES), "quality", "disorder")
"""What a battalion is, as WFM-1's entity tokens say it
(:mod:`envs.battles.entity_tokens`): its arm, one-hot; its formation, one-hot; its quality
over :data:`QUALITY_SCALE`, capped at 1; and its disorder, the drill steps left of a
change of formation over its arm's drill steps (0: formed). An enemy's arm and quality
are always known, its formation and disorder only while it is in sight now (zeros
otherwise)."""
QUALITY_SCALE = 2.0
"""Quality read as 1 (a line battalion is 1, so reads 0.5)."""

ARMS_OBSERVATION_FEATURES = (
    *(f"own_{name}" for name in ARMS_FEATURES), *(f"focus_{name}" for name in ARMS_FEATURES),
    *(f"ally_{k}_{name}" for k in range(ALLY_SLOTS) for name in ARMS_FEATURES),
    *(f"enemy_{k}_{name}" for k in range(ENEMY_SLOTS) for name in ARMS_FEATURES),
)
"""The observation's arms block: :data:`ARMS_FEATURES` of the battalion itself, of the
focus enemy, of each ally slot and of each enemy slot (the same battalions, in the same
order, as the slots before it; zeros where a slot is empty)."""
OBSERVATION_FEATURES = (
    *DUEL_FEATURES, *FOCUS_FEATURES,
    *(f"ally_{k}_{name}" for k in range(ALLY_SLOTS) for name in ALLY_FEATURES),
    *(f"enemy_{k}_{name}" for k in range(ENEMY_SLOTS) for name in ENEMY_FEATURES),
    *TEAM_FEATURES,
)
"""Names of a battalion's observation entries, in order, in battles without an order of
battle (infantry in line: the arms block would say nothing)."""
OBS_DIM = len(OBSERVATION_FEATURES)
OBSERVATION_FEATURES_WITH_ARMS = (*OBSERVATION_FEATURES, *ARMS_OBSERVATION_FEATURES)
"""Names of a battalion's observation entries in battles with an order of battle: the
same, then the arms block."""
ARMS_OBS_DIM = len(OBSERVATION_FEATURES_WITH_ARMS)

UNIT_STATE_FEATURES = ("in_fight", "x", "y", "heading_cos", "heading_sin", "strength",
                       "morale", "readiness")
ARMS_STATE_FEATURES = (
    *(f"own_{k}_{name}" for k in range(MAX_TEAM_SIZE) for name in ARMS_FEATURES),
    *(f"enemy_{k}_{name}" for k in range(MAX_TEAM_SIZE) for name in ARMS_FEATURES),
)
"""The global state's arms block: :data:`ARMS_FEATURES` of each slot of one's own
battalions, then of each of the enemy's (fog-free: formations always shown)."""
STATE_FEATURES = (
    *(f"own_{k}_{name}" for k in range(MAX_TEAM_SIZE) for name in UNIT_STATE_FEATURES),
    *(f"enemy_{k}_{name}" for k in range(MAX_TEAM_SIZE) for name in UNIT_STATE_FEATURES),
    "time_fraction",
)
"""Names of a side's global-state entries (battalions out of the fight are zeros), in
battles without an order of battle."""
STATE_DIM = len(STATE_FEATURES)
STATE_FEATURES_WITH_ARMS = (*STATE_FEATURES, *ARMS_STATE_FEATURES)
"""Names of a side's global-state entries in battles with an order of battle."""
ARMS_STATE_DIM = len(STATE_FEATURES_WITH_ARMS)
CRITIC_STATE_DIM = OBS_DIM + STATE_DIM
"""Length of a centralised critic's input: a battalion's observation, then its side's state."""
ARMS_CRITIC_STATE_DIM = ARMS_OBS_DIM + ARMS_STATE_DIM
"""The same in battles with an order of battle."""

_SIGNED_SUFFIXES = ("_cos", "_sin")
ARMS_OBS_LOW = np.array([-1.0 if name.endswith(_SIGNED_SUFFIXES) else 0.0
                         for name in OBSERVATION_FEATURES_WITH_ARMS], F32)
ARMS_OBS_HIGH = np.ones(ARMS_OBS_DIM, F32)
ARMS_STATE_LOW = np.array([-1.0 if name.endswith(_SIGNED_SUFFIXES) else 0.0
                           for name in STATE_FEATURES_WITH_ARMS], F32)
ARMS_STATE_HIGH = np.ones(ARMS_STATE_DIM, F32)
OBS_LOW, OBS_HIGH = ARMS_OBS_LOW[:OBS_DIM], ARMS_OBS_HIGH[:OBS_DIM]
STATE_LOW, STATE_HIGH = ARMS_STATE_LOW[:STATE_DIM], ARMS_STATE_HIGH[:STATE_DIM]


def observation_dims(arms: bool) -> tuple[int, int]:
    """The lengths of a battalion's observation and of a side's global state, with the
    arms blocks (``arms``: battles with an order of battle) or without."""
    return (ARMS_OBS_DIM, ARMS_STATE_DIM) if arms else (OBS_DIM, STATE_DIM)


# Mirroring across the north-south centre line: x -> 1 - x, headings theta -> pi - theta
# (cosine negated), angles measured between two directions change sign (sine negated).
_NEGATED = {*DUEL_MIRROR_NEGATED,
            *(f"ally_{k}_{name}" for k in range(ALLY_SLOTS)
              for name in ("bearing_sin", "heading_sin")),
            *(f"enemy_{k}_{name}" for k in range(ENEMY_SLOTS)
              for name in ("bearing_sin", "front_sin"))}
_OBS_MIRROR_SIGN = np.array([-1.0 if name in _NEGATED or name == "own_x" else 1.0
                             for name in OBSERVATION_FEATURES_WITH_ARMS], F32)
_OBS_MIRROR_OFFSET = np.array([1.0 if name == "own_x" else 0.0
                               for name in OBSERVATION_FEATURES_WITH_ARMS], F32)
_STATE_MIRROR_SIGN = np.array([-1.0 if name.endswith(("_x", "_heading_cos")) else 1.0
                               for name in STATE_FEATURES_WITH_ARMS], F32)
_STATE_X = np.array([i for i, name in enumerate(STATE_FEATURES) if name.endswith("_x")])
_STATE_PRESENT = np.array([i for i, name in enumerate(STATE_FEATURES)
                           if name.endswith("_in_fight")])

# What a report remembers of a battalion, in this order (_refresh's too).
_REPORTED = ("x", "y", "heading_cos", "heading_sin", "strength", "morale", "readiness",
             "elevation", "cover")


@dataclass(frozen=True, eq=False)
class FogReports:
    """What each side last saw of every battalion, for a batch of battles.

    Arrays are indexed ``[side, unit, battle]`` (unit-major, like the engine).

    Attributes:
        values: (9, 2, U, B) float32: x, y, heading cosine and sine, strength,
            morale, readiness, ground elevation and cover, as last seen.
        in_fight: (2, U, B) whether the unit was in the fight when last seen.
        seen_step: (2, U, B) int32 step of the battle it was last seen at.
    """

    values: np.ndarray
    in_fight: np.ndarray
    seen_step: np.ndarray

    @classmethod
    def empty(cls, n_units: int, batch: int) -> FogReports:
        return cls(np.zeros((len(_REPORTED), 2, n_units, batch), F32),
                   np.zeros((2, n_units, batch), bool), np.zeros((2, n_units, batch), np.int32))

    def refresh(self, state: BattleState, geometry: Geometry, sees: np.ndarray,
                battles: np.ndarray | slice = slice(None)) -> None:
        """Overwrite the reports of what each side ``sees`` ((2, U, b) for ``battles``)."""
        targets = np.arange(self.seen_step.shape[-1])[battles]
        refresh_kernel(*_unit_arrays(state, geometry), np.ascontiguousarray(sees), targets,
                       self.values, self.in_fight, self.seen_step)


def sightings(state: BattleState, geometry: Geometry, visibility_radius: float) -> np.ndarray:
    """(2, U, B): whether each side sees each battalion now (its own always)."""
    return sightings_kernel(*_unit_arrays(state, geometry), pair_major(geometry.dist),
                            pair_major(geometry.los), F32(visibility_radius))


def battalion_observations(state: BattleState, geometry: Geometry, reports: FogReports,
                           sees: np.ndarray, config: BattleConfig, *,
                           arms: bool = False) -> np.ndarray:
    """Every battalion's observation (``docs/simulation.md``, "N-vs-M battles").

    Args:
        state: the batch, after the step.
        geometry: :func:`envs.sim.engine.sense` of ``state``.
        reports: each side's reports, already refreshed with ``sees``.
        sees: :func:`sightings` of ``state``.
        config: the battle model's parameters.
        arms: add the arms block (battles with an order of battle).

    Returns:
        (B, U, OBS_DIM) float32, C-contiguous; (B, U, ARMS_OBS_DIM) with ``arms``.
    """
    # ``sees`` is given, so the constants' visibility radius is never read.
    return observations_kernel(*_unit_arrays(state, geometry), pair_major(geometry.los),
                               reports.values, reports.in_fight, reports.seen_step,
                               np.ascontiguousarray(sees),
                               observation_constants(config, np.inf, *state.grid_shape),
                               observation_dims(arms)[0])


def global_states(state: BattleState, geometry: Geometry, config: BattleConfig, *,
                  arms: bool = False) -> np.ndarray:
    """Each side's fog-free picture of the battle: (2, B, STATE_DIM) float32, (2, B,
    ARMS_STATE_DIM) with the arms block (``arms``: battles with an order of battle).

    Row 0 is Blue's view (Blue's battalions first), row 1 Red's.
    """
    # No sight is involved: the constants' visibility radius is never read.
    return global_states_kernel(*_unit_arrays(state, geometry),
                                observation_constants(config, np.inf, *state.grid_shape),
                                observation_dims(arms)[1])


def observe(state: BattleState, geometry: Geometry, reports: FogReports,
            visibility_radius: float, config: BattleConfig, *,
            reveal_all: bool = False, arms: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sightings`, :meth:`FogReports.refresh`, :func:`battalion_observations` and
    :func:`global_states` in one compiled pass over the batch, on this thread
    (:func:`observe_battles` chunk by chunk: the kernel the team step runs after the
    battle step, on every Numba thread for a large batch).

    Args:
        state: the batch, after the step.
        geometry: :func:`envs.sim.engine.sense` of ``state``.
        reports: each side's reports, refreshed in place with what it sees now.
        visibility_radius: how far a battalion sees, in metres.
        config: the battle model's parameters.
        reveal_all: refresh every report, seen or not (at deployment: the armies have
            scouted each other). The observations' ``visible`` flags stay what is in
            sight now.
        arms: add the arms blocks (battles with an order of battle).

    Returns:
        The (B, U, OBS_DIM) observations and the (2, B, STATE_DIM) global states
        (ARMS_OBS_DIM and ARMS_STATE_DIM with ``arms``).
    """
    batch = state.batch_size
    obs_dim, state_dim = observation_dims(arms)
    obs = np.empty((batch, state.n_units, obs_dim), F32)
    states = np.empty((2, batch, state_dim), F32)
    arguments = (*_unit_arrays(state, geometry), pair_major(geometry.dist),
                 pair_major(geometry.los), reports.values, reports.in_fight, reports.seen_step,
                 np.bool_(reveal_all),
                 observation_constants(config, visibility_radius, *state.grid_shape), obs,
                 states, observation_scratch(state.n_units))
    for lo in range(0, batch, CHUNK):
        observe_battles(lo, min(lo + CHUNK, batch), *arguments)
    return obs, states


def critic_states(observations: np.ndarray, states: np.ndarray, team: np.ndarray) -> np.ndarray:
    """(B, U, obs + state): each battalion's observation, then its side's global state
    (CRITIC_STATE_DIM numbers, ARMS_CRITIC_STATE_DIM with the arms blocks)."""
    batch, n_units, obs_dim = observations.shape
    out = np.empty((batch, n_units, obs_dim + states.shape[-1]), F32)
    out[:, :, :obs_dim] = observations
    out[:, :, obs_dim:] = states[team].transpose(1, 0, 2)
    return out


def _unit_arrays(state: BattleState, geometry: Geometry) -> tuple[np.ndarray, ...]:
    """The leading arguments of every kernel below, unit-major and C-contiguous (views of
    the engine's arrays, which are laid out so): x, y, heading cosine and sine, strength,
    morale, readiness, routed, destroyed, step, team, ground elevation and cover; then
    the order of battle (each unit's arm and quality) and each unit's formation and
    drill steps left."""
    return (*(unit_major(a) for a in (
        state.x, state.y, geometry.heading_cos, geometry.heading_sin, state.strength,
        state.morale, state.readiness, state.routed, state.destroyed)),
        np.ascontiguousarray(state.step, np.int32), team_codes(state),
        unit_major(geometry.elevation), unit_major(geometry.cover),
        np.ascontiguousarray(state.arm, np.int8), np.ascontiguousarray(state.quality, F32),
        unit_major(state.formation), unit_major(state.drill))


# --- the kernels ----------------------------------------------------------------------
#
# Per battle: which battalions each side sees (_sight), the reports refreshed with them
# (_refresh), what each battalion i believes about each other battalion j (_believe,
# from i's side's reports, seen from i) and what each unit's arms block shows
# (_shown_arms), then i's observation: the others ordered nearest first and written
# into the slots, then their arms blocks (_write_observations); and each side's global
# state (_write_global_state, then its arms blocks, _write_global_arms). Every number
# ahead of the arms blocks is the NumPy reference's float32 operation in its order, and
# the arms blocks are the entity tokens' (tests/envs_kernels holds them to the
# reference).
# Each step is inlined into its caller (Numba's inline="always"): a call passing this
# many arrays costs more than the step's work in a small battle. For the same reason
# the loops index the arrays directly rather than through row views.

K_VISIBILITY = kernels.constants(BattleConfig(), 1, 1).size
"""Index of the visibility radius in :func:`observation_constants`' vector (the kernels
read the rest at :mod:`envs.sim.kernels`' indices)."""
K_DRILL_STEPS = K_VISIBILITY + 1
"""Index of the first arm's drill steps in :func:`observation_constants`' vector, one
entry per arm (:data:`~envs.sim.constants.ARM_NAMES`): what a disorder is counted in."""


@lru_cache(maxsize=64)
def observation_constants(config: BattleConfig, visibility_radius: float, rows: int,
                          cols: int) -> np.ndarray:
    """The float32 constants vector the kernels read: :func:`envs.sim.kernels.constants`
    of ``config`` on a rows x cols grid (the float32 numbers the NumPy code used), then
    the visibility radius, then each arm's drill steps (``config.arm_drill_steps``, as
    the entity tokens read them); so a fused step can pass the one vector to the battle
    step and to :func:`observe_battles`. Built once per model, radius and grid."""
    vector = np.concatenate([kernels.constants(config, rows, cols), [F32(visibility_radius)],
                             np.asarray(config.arm_drill_steps, F32)], dtype=F32)
    vector.flags.writeable = False
    return vector


# What battalion i believes about battalion j (a row of the ``beliefs`` scratch), in
# the names of the slot features that show it; the duel's own absolute bearing, the
# hit chance of j's volley on i and the raw distance in metres (the sort key) besides.
_BELIEFS = ("distance", "map_bearing_cos", "map_bearing_sin", "strength", "morale",
            "elevation", "cover", "line_of_sight", "readiness", "bearing_cos", "bearing_sin",
            "front_cos", "front_sin", "hit_chance", "their_hit_chance", "allies_hit_chance",
            "visible", "report_age", "heading_cos", "heading_sin", "metres")
(_DISTANCE, _MAP_BEARING_COS, _MAP_BEARING_SIN, _STRENGTH, _MORALE, _ELEVATION, _COVER,
 _LINE_OF_SIGHT, _READINESS, _BEARING_COS, _BEARING_SIN, _FRONT_COS, _FRONT_SIN, _HIT_CHANCE,
 _THEIR_HIT_CHANCE, _ALLIES_HIT_CHANCE, _VISIBLE, _REPORT_AGE, _HEADING_COS, _HEADING_SIN,
 _METRES) = range(len(_BELIEFS))
N_BELIEFS = len(_BELIEFS)
# The reported state a belief shows as it is (its ``values`` row, then its belief row).
_COPIED = ("strength", "morale", "readiness", "elevation", "cover")
_REPORT_COPIES = np.array([_REPORTED.index(name) for name in _COPIED])
_COPIED_TO = np.array([_BELIEFS.index(name) for name in _COPIED])
# Rows of the ``work`` scratch: one pair's offsets, inverse distance and hit chance.
_DX, _DY, _INV, _REACH = range(4)

# The duel's and focus features that describe the focus enemy, and the beliefs they show.
_FOCUS = {"enemy_distance": "distance", "enemy_bearing_cos": "map_bearing_cos",
          "enemy_bearing_sin": "map_bearing_sin", "enemy_strength": "strength",
          "enemy_morale": "morale", "enemy_elevation": "elevation", "enemy_cover": "cover",
          "line_of_sight": "line_of_sight", "enemy_readiness": "readiness",
          "enemy_relative_bearing_cos": "bearing_cos",
          "enemy_relative_bearing_sin": "bearing_sin",
          "own_bearing_from_enemy_front_cos": "front_cos",
          "own_bearing_from_enemy_front_sin": "front_sin", "own_hit_chance": "hit_chance",
          "enemy_hit_chance": "their_hit_chance", "focus_visible": "visible",
          "focus_report_age": "report_age", "focus_allies_hit_chance": "allies_hit_chance"}
_FOCUS_AT = np.array([OBSERVATION_FEATURES.index(name) for name in _FOCUS])
_FOCUS_ROWS = np.array([_BELIEFS.index(name) for name in _FOCUS.values()])
# The rest of the duel's features are one's own.
(_OWN_X, _OWN_Y, _OWN_HEADING_COS, _OWN_HEADING_SIN, _OWN_STRENGTH, _OWN_MORALE, _TIME,
 _OWN_ELEVATION, _OWN_COVER, _OWN_READINESS) = (OBSERVATION_FEATURES.index(name) for name in (
    "own_x", "own_y", "own_heading_cos", "own_heading_sin", "own_strength", "own_morale",
    "time_fraction", "own_elevation", "own_cover", "own_readiness"))
# A slot is ``present`` and then these beliefs.
_ALLY_ROWS = np.array([_BELIEFS.index(name) for name in ALLY_FEATURES[1:]])
_ENEMY_ROWS = np.array([_BELIEFS.index(name) for name in ENEMY_FEATURES[1:]])
_ALLY_AT = OBSERVATION_FEATURES.index("ally_0_present")
_ENEMY_AT = OBSERVATION_FEATURES.index("enemy_0_present")
_ALLY_WIDTH, _ENEMY_WIDTH = len(ALLY_FEATURES), len(ENEMY_FEATURES)
_OWN_IN_FIGHT = OBSERVATION_FEATURES.index("own_in_fight")
_ENEMIES_IN_FIGHT = OBSERVATION_FEATURES.index("enemies_in_fight")
_PER_BATTALION = F32(1 / MAX_TEAM_SIZE)
_UNIT_WIDTH = len(UNIT_STATE_FEATURES)
# The arms blocks: each described battalion's ARMS_FEATURES in a run of _ARMS_WIDTH.
_ARMS_WIDTH = len(ARMS_FEATURES)
_FORMATION, _QUALITY, _DISORDER = (ARMS_FEATURES.index(name) for name in (
    "formation_line", "quality", "disorder"))
_OWN_ARMS, _FOCUS_ARMS, _ALLY_ARMS, _ENEMY_ARMS = (
    OBSERVATION_FEATURES_WITH_ARMS.index(name) for name in (
        "own_arm_infantry", "focus_arm_infantry", "ally_0_arm_infantry",
        "enemy_0_arm_infantry"))
_STATE_ARMS = STATE_FEATURES_WITH_ARMS.index("own_0_arm_infantry")
_QUALITY_SCALE = F32(QUALITY_SCALE)
# Rows of the ``arms`` scratch: each unit's quality as shown, and its disorder.
_SHOWN_QUALITY, _SHOWN_DISORDER = range(2)
# The kernels mirror Red's view as they write it: these beliefs change sign when formed
# (_believe), own_x becomes 1 - x and own_heading_cos changes sign (_write_observations),
# and so do each unit's x and heading cosine in the global state (_write_global_state):
# what the mirror tables above say.
_MIRRORED_BELIEFS = ("map_bearing_cos", "bearing_sin", "front_sin", "heading_sin")
assert {_BELIEFS[row] for at, row in (
    *zip(_FOCUS_AT, _FOCUS_ROWS, strict=True),
    *((_ENEMY_AT + s * _ENEMY_WIDTH + 1 + f, row) for s in range(ENEMY_SLOTS)
      for f, row in enumerate(_ENEMY_ROWS)),
    *((_ALLY_AT + s * _ALLY_WIDTH + 1 + f, row) for s in range(ALLY_SLOTS)
      for f, row in enumerate(_ALLY_ROWS))) if _OBS_MIRROR_SIGN[at] < 0} == set(_MIRRORED_BELIEFS)
assert [OBSERVATION_FEATURES[f] for f in range(DUEL_OBS_DIM + len(FOCUS_FEATURES))
        if _OBS_MIRROR_SIGN[f] < 0 and f not in _FOCUS_AT] == ["own_x", "own_heading_cos"]
assert np.flatnonzero(_OBS_MIRROR_OFFSET).tolist() == [_OWN_X]
assert UNIT_STATE_FEATURES[1] == "x" and UNIT_STATE_FEATURES[3] == "heading_cos" and \
    [STATE_FEATURES_WITH_ARMS[f] for f in np.flatnonzero(_STATE_MIRROR_SIGN < 0)] == [
        f"{who}_{k}_{name}" for who in ("own", "enemy") for k in range(MAX_TEAM_SIZE)
        for name in ("x", "heading_cos")]
# The arms blocks are all in [0, 1] and unsigned: mirroring leaves them as they are.
assert ARMS_FEATURES[:len(ARM_NAMES)] == tuple(f"arm_{name}" for name in ARM_NAMES) and \
    _FORMATION == len(ARM_NAMES) and ARMS_FEATURES[_FORMATION:_QUALITY] == tuple(
        f"formation_{name}" for name in FORMATION_NAMES) and _DISORDER == _QUALITY + 1
assert (_OWN_ARMS, _FOCUS_ARMS, _ALLY_ARMS, _ENEMY_ARMS) == tuple(
    OBS_DIM + _ARMS_WIDTH * n for n in (0, 1, 2, 2 + ALLY_SLOTS)) and \
    _STATE_ARMS == STATE_DIM and STATE_FEATURES[STATE_DIM - 1] == \
    "time_fraction"
assert (_OBS_MIRROR_SIGN[OBS_DIM:] == 1).all() and \
    not _OBS_MIRROR_OFFSET[OBS_DIM:].any() and \
    (_STATE_MIRROR_SIGN[STATE_DIM:] == 1).all() and \
    not ARMS_OBS_LOW[OBS_DIM:].any() and not ARMS_STATE_LOW[STATE_DIM:].any()
assert sorted([*_FOCUS_AT, _OWN_X, _OWN_Y, _OWN_HEADING_COS, _OWN_HEADING_SIN, _OWN_STRENGTH,
               _OWN_MORALE, _TIME, _OWN_ELEVATION, _OWN_COVER, _OWN_READINESS]) == \
    list(range(DUEL_OBS_DIM + len(FOCUS_FEATURES))) and _ALLY_AT == DUEL_OBS_DIM + 3


@kernel(inline="always")
def _in_fight(routed, destroyed, i, b):
    # ``|``, not ``or``: Numba's short-circuit ``or`` in a returned value compiles to
    # branches that make the loops calling this several times slower.
    return not (routed[i, b] | destroyed[i, b])


@kernel(inline="always")
def _sight(lo, hi, routed, destroyed, team, dist, los, radius, sees):
    """Which battalions of battles ``lo`` to ``hi - 1`` each side sees now, into
    ``sees[:, :, b - lo]`` (2, U, width): its own always, an enemy while one of the
    side's battalions in the fight has it within ``radius`` and in line of sight."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    n = team.shape[0]
    for side in range(2):
        for j in range(n):
            own = team[j] == side
            for c in range(hi - lo):
                sees[side, j, c] = own
    for i in range(n):
        side = team[i]
        for j in range(n):
            if team[j] == side:
                continue
            for c in range(hi - lo):
                b = lo + c
                sees[side, j, c] |= (_in_fight(routed, destroyed, i, b)
                                     & (dist[i, j, b] <= radius) & los[i, j, b])


@kernel(inline="always")
def _take_if(lo, hi, source_lo, report, source, sees, sees_lo, reveal_all):
    """``report[lo + c] = source[source_lo + c]`` where ``sees[sees_lo + c]`` (or everywhere
    when ``reveal_all``), for ``c`` up to ``hi - lo``."""
    assert lo >= 0 and source_lo >= 0 and sees_lo >= 0  # contiguous lanes (envs.sim.jit)
    for c in range(hi - lo):
        b = lo + c
        report[b] = source[source_lo + c] if reveal_all | sees[sees_lo + c] else report[b]


@kernel(inline="always")
def _refresh(lo, hi, source_lo, sees_lo, x, y, heading_cos, heading_sin, strength, morale,
             readiness, routed, destroyed, step, elevation, cover, sees, reveal_all, values,
             in_fight, seen_step):
    """Overwrite the reports of battles ``lo + c`` (``c`` up to ``hi - lo``) of the
    battalions each side sees (``sees[side, j, sees_lo + c]``; every one when
    ``reveal_all``) with their state in battle ``source_lo + c`` of the unit arrays."""
    assert lo >= 0 and source_lo >= 0 and sees_lo >= 0  # contiguous lanes (envs.sim.jit)
    n = x.shape[0]
    reported = (x, y, heading_cos, heading_sin, strength, morale, readiness, elevation, cover)
    for side in range(2):
        for j in range(n):
            seen = sees[side, j]
            for f in range(len(reported)):
                _take_if(lo, hi, source_lo, values[f, side, j], reported[f][j], seen, sees_lo,
                         reveal_all)
            _take_if(lo, hi, source_lo, seen_step[side, j], step, seen, sees_lo, reveal_all)
            report = in_fight[side, j]
            for c in range(hi - lo):
                if reveal_all | seen[sees_lo + c]:
                    report[lo + c] = _in_fight(routed, destroyed, j, source_lo + c)


@kernel(inline="always")
def _believe(lo, hi, x, y, heading_cos, heading_sin, routed, destroyed, step, team, los, values,
             seen_step, sees, k, beliefs, work):
    """What each battalion ``i`` of battles ``lo`` to ``hi - 1`` believes about each other
    one ``j`` (its side's report of ``j``, seen from where ``i`` stands and faces), into
    ``beliefs[i, j, :, b - lo]`` (rows named by ``_BELIEFS``; ``allies_hit_chance`` for
    enemies only). ``work`` (4, width) holds one pair's offsets, inverse distance and hit chance.

    One array is written a loop, indexed directly (no row views), so that every loop
    vectorises across the battles (see :func:`envs.sim.kernels.step_battles`)."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    n = team.shape[0]
    zero, one, floor = F32(0), F32(1), F32(1e-3)
    inv_diagonal, inv_max_steps = k[K_INV_DIAGONAL], k[K_INV_MAX_STEPS]
    cos_arc, exponent = k[K_COS_FIRE_ARC], k[K_HIT_EXPONENT]
    inv_range = k[K_INV_FIRE_RANGE]
    w = hi - lo
    for i in range(n):
        side = team[i]
        # Red sees the battle mirrored (see the module docstring): these rows change sign.
        mirror = -one if side == 1 else one
        for j in range(n):
            if j == i:
                continue
            for c in range(w):
                work[_DX, c] = values[0, side, j, lo + c] - x[i, lo + c]
            for c in range(w):
                work[_DY, c] = values[1, side, j, lo + c] - y[i, lo + c]
            for c in range(w):
                beliefs[i, j, _METRES, c] = np.sqrt(work[_DX, c] * work[_DX, c]
                                                    + work[_DY, c] * work[_DY, c])
            for c in range(w):
                work[_INV, c] = one / max(beliefs[i, j, _METRES, c], floor)
            for c in range(w):
                beliefs[i, j, _DISTANCE, c] = min(beliefs[i, j, _METRES, c] * inv_diagonal, one)
            for c in range(w):
                beliefs[i, j, _MAP_BEARING_COS, c] = (unit_interval(work[_DX, c] * work[_INV, c])
                                                      * mirror)
            for c in range(w):
                beliefs[i, j, _MAP_BEARING_SIN, c] = unit_interval(work[_DY, c] * work[_INV, c])
            for c in range(w):
                beliefs[i, j, _BEARING_COS, c] = unit_interval(
                    (work[_DX, c] * heading_cos[i, lo + c] + work[_DY, c] * heading_sin[i, lo + c])
                    * work[_INV, c])
            for c in range(w):
                beliefs[i, j, _BEARING_SIN, c] = unit_interval(
                    (work[_DY, c] * heading_cos[i, lo + c] - work[_DX, c] * heading_sin[i, lo + c])
                    * work[_INV, c]) * mirror
            for c in range(w):
                beliefs[i, j, _FRONT_COS, c] = unit_interval(
                    (-work[_DX, c] * values[2, side, j, lo + c]
                     - work[_DY, c] * values[3, side, j, lo + c]) * work[_INV, c])
            for c in range(w):
                beliefs[i, j, _FRONT_SIN, c] = unit_interval(
                    (work[_DX, c] * values[3, side, j, lo + c]
                     - work[_DY, c] * values[2, side, j, lo + c]) * work[_INV, c]) * mirror
            for c in range(w):
                beliefs[i, j, _HEADING_COS, c] = unit_interval(
                    values[2, side, j, lo + c] * heading_cos[i, lo + c]
                    + values[3, side, j, lo + c] * heading_sin[i, lo + c])
            for c in range(w):
                beliefs[i, j, _HEADING_SIN, c] = unit_interval(
                    values[3, side, j, lo + c] * heading_cos[i, lo + c]
                    - values[2, side, j, lo + c] * heading_sin[i, lo + c]) * mirror
            for f in range(_REPORT_COPIES.shape[0]):
                for c in range(w):
                    beliefs[i, j, _COPIED_TO[f], c] = values[_REPORT_COPIES[f], side, j, lo + c]
            for c in range(w):
                beliefs[i, j, _VISIBLE, c] = one if sees[side, j, c] else zero
            for c in range(w):
                beliefs[i, j, _REPORT_AGE, c] = min(
                    F32(step[lo + c] - seen_step[side, j, lo + c]) * inv_max_steps, one)
            for c in range(w):
                beliefs[i, j, _LINE_OF_SIGHT, c] = one if los[i, j, lo + c] & sees[side, j, c] \
                    else zero
            # The hit chance a volley would have now, each way, in sight (out of range it
            # is 0: the power's base is clamped there).
            for c in range(w):
                work[_REACH, c] = (hit_chance_of(beliefs[i, j, _METRES, c], inv_range, exponent)
                                   * beliefs[i, j, _LINE_OF_SIGHT, c])
            for c in range(w):
                beliefs[i, j, _HIT_CHANCE, c] = work[_REACH, c] \
                    if beliefs[i, j, _BEARING_COS, c] > cos_arc else zero
            for c in range(w):
                beliefs[i, j, _THEIR_HIT_CHANCE, c] = work[_REACH, c] \
                    if beliefs[i, j, _FRONT_COS, c] > cos_arc else zero
    # Who else engages j: allies share their side's reports, so ally a's hit chance on
    # j is its own belief.
    for i in range(n):
        for j in range(n):
            if team[j] == team[i]:
                continue
            for c in range(w):
                beliefs[i, j, _ALLIES_HIT_CHANCE, c] = zero
            for a in range(n):
                if a == i or team[a] != team[i]:
                    continue
                for c in range(w):
                    beliefs[i, j, _ALLIES_HIT_CHANCE, c] = max(
                        beliefs[i, j, _ALLIES_HIT_CHANCE, c],
                        beliefs[a, j, _HIT_CHANCE, c] if _in_fight(routed, destroyed, a, lo + c)
                        else zero)


@kernel(inline="always")
def _insert(order, ranges, count, j, d):
    """Insert battalion ``j`` at range ``d`` into the ``count`` nearest-first entries of
    ``order``/``ranges``; equal ranges keep index order (a stable sort). Returns the new
    count."""
    slot = count
    while slot > 0 and ranges[slot - 1] > d:
        order[slot] = order[slot - 1]
        ranges[slot] = ranges[slot - 1]
        slot -= 1
    order[slot] = j
    ranges[slot] = d
    return count + 1


@kernel(inline="always")
def _shown_arms(lo, hi, arm, quality, drill, k, arms):
    """Each unit's quality over :data:`QUALITY_SCALE` (capped at 1) and disorder (drill
    steps left over its arm's, 0 for an arm that does not drill) in battles ``lo`` to
    ``hi - 1``, into ``arms[:, u, b - lo]``: the numbers of its entity token
    (:func:`envs.battles.entity_tokens.entity_tokens`), worked out once, across battles,
    for every block that shows the unit."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    zero, one = F32(0), F32(1)
    for u in range(arm.shape[0]):
        shown_quality = min(quality[u] / _QUALITY_SCALE, one)
        for c in range(hi - lo):
            arms[_SHOWN_QUALITY, u, c] = shown_quality
        drill_steps = k[K_DRILL_STEPS + np.intp(arm[u])]
        if drill_steps > zero:
            per_drill = max(drill_steps, one)
            for c in range(hi - lo):
                arms[_SHOWN_DISORDER, u, c] = F32(drill[u, lo + c]) / per_drill
        else:
            for c in range(hi - lo):
                arms[_SHOWN_DISORDER, u, c] = zero


@kernel(inline="always")
def _write_arms(out, p, q, at, u, b, c, shown, arm, formation, arms):
    """Battalion ``u``'s :data:`ARMS_FEATURES` in battle ``b`` (column ``c`` of ``arms``,
    :func:`_shown_arms`) into ``out[p, q, at:]`` (zeros before): its arm and quality, and
    its formation and disorder when ``shown`` (an enemy out of sight shows neither)."""
    one = F32(1)
    # Branch-free (whether an enemy is in sight is hard to predict; a branch here cost
    # a quarter of writing the observations): a hidden formation and disorder are
    # written as the zeros they are.
    seen = one if shown else F32(0)
    kind = np.intp(arm[u])
    code = np.intp(formation[u, b])
    quality = arms[_SHOWN_QUALITY, u, c]
    disorder = arms[_SHOWN_DISORDER, u, c] * seen
    out[p, q, at + kind] = one
    out[p, q, at + _QUALITY] = quality
    out[p, q, at + _FORMATION + code] = seen
    out[p, q, at + _DISORDER] = disorder


@kernel(inline="always")
def _write_observations(b, c, x, y, heading_cos, heading_sin, strength, morale, readiness, routed,
                        destroyed, step, team, elevation, cover, arm, formation, in_fight, k,
                        beliefs, arms, obs, enemy_order, enemy_range, ally_order, ally_range):
    """Every battalion's observation in battle ``b``, into ``obs[b]``, from column ``c`` of
    ``beliefs`` and ``arms``: the enemies believed in the fight and the allies in it, each
    nearest first, then the arms block of the same battalions. Battle by battle: each
    battalion's row is written whole, in order."""
    n = team.shape[0]
    zero, one = F32(0), F32(1)
    time_fraction = min(F32(step[b]) * k[K_INV_MAX_STEPS], one)
    for i in range(n):
        side = team[i]
        n_enemies = n_allies = 0
        for j in range(n):
            if j == i:
                continue
            if team[j] != side:
                if in_fight[side, j, b]:
                    n_enemies = _insert(enemy_order, enemy_range, n_enemies, j,
                                        beliefs[i, j, _METRES, c])
            elif _in_fight(routed, destroyed, j, b):
                n_allies = _insert(ally_order, ally_range, n_allies, j,
                                   beliefs[i, j, _METRES, c])

        for f in range(obs.shape[2]):
            obs[b, i, f] = zero
        own_x = x[i, b] * k[K_INV_WIDTH]
        # Red's own position and heading in its mirrored frame; its beliefs were
        # mirrored when they were formed.
        obs[b, i, _OWN_X] = one - own_x if side == 1 else own_x
        obs[b, i, _OWN_Y] = y[i, b] * k[K_INV_HEIGHT]
        obs[b, i, _OWN_HEADING_COS] = -heading_cos[i, b] if side == 1 else heading_cos[i, b]
        obs[b, i, _OWN_HEADING_SIN] = heading_sin[i, b]
        obs[b, i, _OWN_STRENGTH] = strength[i, b]
        obs[b, i, _OWN_MORALE] = morale[i, b]
        obs[b, i, _TIME] = time_fraction
        obs[b, i, _OWN_ELEVATION] = elevation[i, b]
        obs[b, i, _OWN_COVER] = cover[i, b]
        obs[b, i, _OWN_READINESS] = readiness[i, b]
        if n_enemies:  # the focus: the nearest enemy believed in the fight
            focus = enemy_order[0]
            for f in range(_FOCUS_AT.shape[0]):
                obs[b, i, _FOCUS_AT[f]] = beliefs[i, focus, _FOCUS_ROWS[f], c]
        for s in range(min(n_enemies - 1, ENEMY_SLOTS)):
            enemy = enemy_order[s + 1]
            at = _ENEMY_AT + s * _ENEMY_WIDTH
            obs[b, i, at] = one
            for f in range(_ENEMY_ROWS.shape[0]):
                obs[b, i, at + 1 + f] = beliefs[i, enemy, _ENEMY_ROWS[f], c]
        for s in range(min(n_allies, ALLY_SLOTS)):
            ally = ally_order[s]
            at = _ALLY_AT + s * _ALLY_WIDTH
            obs[b, i, at] = one
            for f in range(_ALLY_ROWS.shape[0]):
                obs[b, i, at + 1 + f] = beliefs[i, ally, _ALLY_ROWS[f], c]
        own = n_allies + (1 if _in_fight(routed, destroyed, i, b) else 0)
        obs[b, i, _OWN_IN_FIGHT] = min(F32(own) * _PER_BATTALION, one)
        shown = min(n_enemies, ENEMY_SLOTS + 1)  # the focus and the enemy slots
        obs[b, i, _ENEMIES_IN_FIGHT] = min(F32(shown) * _PER_BATTALION, one)

        # The arms block (battles with an order of battle): one's own, then the same
        # battalions as the slots above; an enemy's formation and disorder only while it
        # is in sight now.
        if obs.shape[2] == OBS_DIM:
            continue
        _write_arms(obs, b, i, _OWN_ARMS, i, b, c, True, arm, formation, arms)
        if n_enemies:
            focus = enemy_order[0]
            _write_arms(obs, b, i, _FOCUS_ARMS, focus, b, c,
                        beliefs[i, focus, _VISIBLE, c] > zero, arm, formation, arms)
        for s in range(min(n_enemies - 1, ENEMY_SLOTS)):
            enemy = enemy_order[s + 1]
            _write_arms(obs, b, i, _ENEMY_ARMS + s * _ARMS_WIDTH, enemy, b, c,
                        beliefs[i, enemy, _VISIBLE, c] > zero, arm, formation, arms)
        for s in range(min(n_allies, ALLY_SLOTS)):
            _write_arms(obs, b, i, _ALLY_ARMS + s * _ARMS_WIDTH, ally_order[s], b, c, True, arm,
                        formation, arms)


@kernel(inline="always")
def _write_global_state(b, x, y, heading_cos, heading_sin, strength, morale, readiness, routed,
                        destroyed, step, team, k, state):
    """Each side's global state of battle ``b`` but the arms blocks, into ``state[:, b]``:
    its first :data:`MAX_TEAM_SIZE` battalions, then as many of the enemy's (zeros for
    those out of the fight and for empty slots), then the time; Red's mirrored. Each
    entry is written once."""
    n = team.shape[0]
    zero, one = F32(0), F32(1)
    inv_width, inv_height = k[K_INV_WIDTH], k[K_INV_HEIGHT]
    for side in range(2):
        for half in range(2):  # one's own battalions, then the enemy's
            owner = side if half == 0 else 1 - side
            filled = 0
            for u in range(n):
                if team[u] != owner or filled == MAX_TEAM_SIZE:
                    continue
                at = (half * MAX_TEAM_SIZE + filled) * _UNIT_WIDTH
                filled += 1
                if not _in_fight(routed, destroyed, u, b):
                    for f in range(_UNIT_WIDTH):
                        state[side, b, at + f] = zero
                    continue
                unit_x = x[u, b] * inv_width
                state[side, b, at] = one
                state[side, b, at + 1] = one - unit_x if side == 1 else unit_x
                state[side, b, at + 2] = y[u, b] * inv_height
                state[side, b, at + 3] = -heading_cos[u, b] if side == 1 else heading_cos[u, b]
                state[side, b, at + 4] = heading_sin[u, b]
                state[side, b, at + 5] = strength[u, b]
                state[side, b, at + 6] = morale[u, b]
                state[side, b, at + 7] = readiness[u, b]
            for f in range((half * MAX_TEAM_SIZE + filled) * _UNIT_WIDTH,
                           (half + 1) * MAX_TEAM_SIZE * _UNIT_WIDTH):
                state[side, b, f] = zero
        state[side, b, STATE_DIM - 1] = min(F32(step[b]) * k[K_INV_MAX_STEPS], one)


@kernel(inline="always")
def _write_global_arms(b, c, routed, destroyed, team, arm, formation, arms, state):
    """Each side's global state's arms blocks of battle ``b``, into ``state[:, b]``: those
    of the slots :func:`_write_global_state` fills (zeros for battalions out of the fight
    and for empty slots), every formation shown, from column ``c`` of ``arms``
    (:func:`_shown_arms`). A pass of its own: the same stores inside
    :func:`_write_global_state`'s loop made :func:`observe_battles` a third slower in
    2v2 battles (1.8 against 1.3 us a battle on one thread)."""
    n = team.shape[0]
    zero = F32(0)
    for side in range(2):
        for f in range(_STATE_ARMS, state.shape[2]):
            state[side, b, f] = zero
        for half in range(2):  # one's own battalions, then the enemy's
            owner = side if half == 0 else 1 - side
            filled = 0
            for u in range(n):
                if team[u] != owner or filled == MAX_TEAM_SIZE:
                    continue
                slot = half * MAX_TEAM_SIZE + filled
                filled += 1
                if _in_fight(routed, destroyed, u, b):
                    _write_arms(state, side, b, _STATE_ARMS + slot * _ARMS_WIDTH, u, b, c, True,
                                arm, formation, arms)


@kernel(inline="always")
def observation_width(n_units):
    """Battles :func:`observe_battles` works through together (at most :data:`CHUNK`): few
    enough that their beliefs (``N_BELIEFS`` x U x U floats each) stay in the core's
    cache while every battle's rows are written from them."""
    width = CHUNK
    while width > 16 and N_BELIEFS * n_units * n_units * width > 96 * 1024:
        width //= 2
    return width


@kernel()
def observation_scratch(n_units):
    """One thread's working arrays for :func:`observe_battles` in battles of ``n_units``
    battalions, :func:`observation_width` battles wide (allocated once per chunk of
    battles, never per battle):

    - ``sees`` (2, U, width) bool: which battalions each side sees now;
    - ``beliefs`` (U, U, N_BELIEFS, width) float32: what each battalion believes about
      each other one (rows named by ``_BELIEFS``; a pair's rows together, so that
      writing a battle's observations reads nearby lines);
    - ``work`` (4, width) float32: one pair's offsets, inverse distance and hit chance;
    - ``enemy_order``, ``ally_order`` (U,) int64 and ``enemy_range``, ``ally_range`` (U,)
      float32: one battalion's enemies believed in the fight and allies in it, nearest
      first, and their distances;
    - ``arms`` (2, U, width) float32: each unit's quality and disorder as the arms
      blocks show them (:func:`_shown_arms`).
    """
    width = observation_width(n_units)
    return (np.empty((2, n_units, width), np.bool_),
            np.empty((n_units, n_units, N_BELIEFS, width), F32), np.empty((4, width), F32),
            np.empty(n_units, np.int64), np.empty(n_units, F32), np.empty(n_units, np.int64),
            np.empty(n_units, F32), np.empty((2, n_units, width), F32))


@kernel(inline="always")
def _observe_seen(start, stop, x, y, heading_cos, heading_sin, strength, morale, readiness,
                  routed, destroyed, step, team, elevation, cover, arm, quality, formation, drill,
                  los, values, in_fight, seen_step, k, obs, scratch):
    """Every battalion's beliefs and observation in battles ``start`` to ``stop - 1`` (at
    most :func:`observation_width` of them), from the reports and what each side sees
    now (the ``sees`` of ``scratch``, :func:`observation_scratch`); each unit's quality
    and disorder as shown into the ``arms`` of ``scratch`` (the global states' too)."""
    sees, beliefs, work, enemy_order, enemy_range, ally_order, ally_range, arms = scratch
    _believe(start, stop, x, y, heading_cos, heading_sin, routed, destroyed, step, team, los,
             values, seen_step, sees, k, beliefs, work)
    if obs.shape[2] > OBS_DIM:
        _shown_arms(start, stop, arm, quality, drill, k, arms)
    for c in range(stop - start):
        _write_observations(start + c, c, x, y, heading_cos, heading_sin, strength, morale,
                            readiness, routed, destroyed, step, team, elevation, cover, arm,
                            formation, in_fight, k, beliefs, arms, obs, enemy_order, enemy_range,
                            ally_order, ally_range)


@kernel()
def observe_battles(lo, hi, x, y, heading_cos, heading_sin, strength, morale, readiness, routed,
                    destroyed, step, team, elevation, cover, arm, quality, formation, drill, dist,
                    los, values, in_fight, seen_step, reveal_all, k, obs, state, scratch):
    """Refresh the fog reports of battles ``lo`` to ``hi - 1`` (``values``/``in_fight``/
    ``seen_step``, in place) with what each side sees now (everything when
    ``reveal_all``, as at deployment), then write every battalion's observation
    ``obs[b]`` (U, OBS_DIM or ARMS_OBS_DIM) and each side's global state ``state[:, b]``
    (the arms blocks only into outputs wide enough for them).

    Sight, reports and beliefs loop over battles innermost (vectorised across them,
    :func:`observation_width` battles at a time); the observations and global states
    are then written battle by battle, each row whole.

    Args:
        lo, hi: the battles.
        x, y, heading_cos, heading_sin, strength, morale, readiness: (U, B) float32.
        routed, destroyed: (U, B) bool.
        step: (B,) int32.
        team: (U,) int8, 0 Blue, 1 Red.
        elevation, cover: (U, B) float32, the ground under each battalion.
        arm: (U,) int8 arm codes; quality: (U,) float32.
        formation, drill: (U, B) int16 formation codes and drill steps left.
        dist: (U, U, B) float32 distances; los: (U, U, B) bool line of sight.
        values, in_fight, seen_step: the :class:`FogReports` arrays.
        reveal_all: refresh every report; the observations' ``visible`` flags stay
            what is in sight now.
        k: :func:`observation_constants`.
        obs: (B, U, OBS_DIM or ARMS_OBS_DIM) float32; state: (2, B, STATE_DIM or
            ARMS_STATE_DIM) float32: outputs.
        scratch: the tuple :func:`observation_scratch` gave the calling thread.

    A compiled function of its own, not inlined: its assertions inside a ``prange`` loop
    would keep Numba from running the loop in parallel.
    """
    assert lo >= 0  # battle indices start + c known non-negative (see envs.sim.jit)
    sees, arms = scratch[0], scratch[-1]
    width = sees.shape[2]
    for start in range(lo, hi, width):
        stop = min(start + width, hi)
        _sight(start, stop, routed, destroyed, team, dist, los, k[K_VISIBILITY], sees)
        _refresh(start, stop, start, 0, x, y, heading_cos, heading_sin, strength, morale,
                 readiness, routed, destroyed, step, elevation, cover, sees, reveal_all, values,
                 in_fight, seen_step)
        _observe_seen(start, stop, x, y, heading_cos, heading_sin, strength, morale,
                      readiness, routed, destroyed, step, team, elevation, cover, arm, quality,
                      formation, drill, los, values, in_fight, seen_step, k, obs, scratch)
        for c in range(stop - start):
            _write_global_state(start + c, x, y, heading_cos, heading_sin, strength, morale,
                                readiness, routed, destroyed, step, team, k, state)
        if state.shape[2] > STATE_DIM:
            for c in range(stop - start):
                _write_global_arms(start + c, c, routed, destroyed, team, arm, formation, arms,
                                   state)


# The public functions' own kernels: one stage of observe_battles each, over the batch.

@kernel()
def sightings_kernel(x, y, heading_cos, heading_sin, strength, morale, readiness, routed,
                     destroyed, step, team, elevation, cover, arm, quality, formation, drill,
                     dist, los, radius):
    """:func:`sightings`: (2, U, B) bool."""
    n, batch = x.shape
    sees = np.empty((2, n, batch), np.bool_)
    _sight(0, batch, routed, destroyed, team, dist, los, radius, sees)
    return sees


@kernel()
def refresh_kernel(x, y, heading_cos, heading_sin, strength, morale, readiness, routed,
                   destroyed, step, team, elevation, cover, arm, quality, formation, drill, sees,
                   battles, values, in_fight, seen_step):
    """:meth:`FogReports.refresh`: battle ``c`` of the unit arrays and ``sees`` (2, U, C)
    into battle ``battles[c]`` of the reports."""
    for c in range(battles.shape[0]):
        _refresh(battles[c], battles[c] + 1, c, c, x, y, heading_cos, heading_sin,
                 strength, morale, readiness, routed, destroyed, step, elevation, cover, sees,
                 False, values, in_fight, seen_step)


@kernel()
def observations_kernel(x, y, heading_cos, heading_sin, strength, morale, readiness, routed,
                        destroyed, step, team, elevation, cover, arm, quality, formation, drill,
                        los, values, in_fight, seen_step, sees, k, obs_dim):
    """:func:`battalion_observations`: (B, U, obs_dim) float32."""
    n, batch = x.shape
    obs = np.empty((batch, n, obs_dim), F32)
    scratch = observation_scratch(n)
    seeing = scratch[0]
    width = seeing.shape[2]
    for start in range(0, batch, width):
        stop = min(start + width, batch)
        seeing[:, :, :stop - start] = sees[:, :, start:stop]
        _observe_seen(start, stop, x, y, heading_cos, heading_sin, strength, morale,
                      readiness, routed, destroyed, step, team, elevation, cover, arm, quality,
                      formation, drill, los, values, in_fight, seen_step, k, obs, scratch)
    return obs


@kernel()
def global_states_kernel(x, y, heading_cos, heading_sin, strength, morale, readiness, routed,
                         destroyed, step, team, elevation, cover, arm, quality, formation, drill,
                         k, state_dim):
    """:func:`global_states`: (2, B, state_dim) float32."""
    n, batch = x.shape
    state = np.empty((2, batch, state_dim), F32)
    arms = observation_scratch(n)[-1]
    width = arms.shape[2]
    for start in range(0, batch, width):
        stop = min(start + width, batch)
        _shown_arms(start, stop, arm, quality, drill, k, arms)
        for c in range(stop - start):
            _write_global_state(start + c, x, y, heading_cos, heading_sin, strength, morale,
                                readiness, routed, destroyed, step, team, k, state)
            if state_dim > STATE_DIM:
                _write_global_arms(start + c, c, routed, destroyed, team, arm, formation, arms,
                                   state)
    return state


assert DUEL_OBS_DIM == 25 and OBS_DIM == 25 + 3 + ALLY_SLOTS * 9 + ENEMY_SLOTS * 13 + 2
assert ARMS_OBS_DIM == OBS_DIM + (2 + ALLY_SLOTS + ENEMY_SLOTS) * len(ARMS_FEATURES)
assert ARMS_STATE_DIM == STATE_DIM + 2 * MAX_TEAM_SIZE * len(ARMS_FEATURES)

__all__ = ["ALLY_FEATURES", "ALLY_SLOTS", "ARMS_CRITIC_STATE_DIM", "ARMS_FEATURES",
           "ARMS_OBSERVATION_FEATURES", "ARMS_OBS_DIM", "ARMS_OBS_HIGH", "ARMS_OBS_LOW",
           "ARMS_STATE_DIM", "ARMS_STATE_FEATURES", "ARMS_STATE_HIGH", "ARMS_STATE_LOW",
           "CRITIC_STATE_DIM", "ENEMY_FEATURES", "ENEMY_SLOTS", "FOCUS_FEATURES", "FogReports",
           "MAX_TEAM_SIZE", "N_BELIEFS", "OBSERVATION_FEATURES",
           "OBSERVATION_FEATURES_WITH_ARMS", "OBS_DIM", "OBS_HIGH", "OBS_LOW", "QUALITY_SCALE",
           "ROTATE_SIGN", "STATE_DIM", "STATE_FEATURES", "STATE_FEATURES_WITH_ARMS",
           "STATE_HIGH", "STATE_LOW", "TEAM_FEATURES", "UNIT_STATE_FEATURES",
           "observation_dims",
           "battalion_observations", "critic_states", "global_states", "observation_constants",
           "observation_scratch", "observation_width", "observe", "observe_battles",
           "sightings"]

