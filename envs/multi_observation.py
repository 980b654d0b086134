"""What each battalion of an N-vs-M battle knows: its own view under fog of war,
and the global state a centralised critic reads.

**Fog of war.** A side sees an enemy battalion while one of its own battalions
still in the fight has it within ``visibility_radius`` and in line of sight.
Each side keeps a *report* of every enemy: where it was, which way it faced and
what shape it was in when last seen, and when that was. Both deployments are
known at the start (the armies have scouted each other); afterwards a report is
refreshed only while the enemy is in sight, so a battalion that slips behind a
crest is remembered where it vanished. Allies are always known.

**One layout for every team size.** A battalion's observation is
:data:`OBS_DIM` numbers whatever the scenario, so one network serves 1v1 to 6v6:

1. The 25 features of the 1v1 duel (:data:`envs.observation.OBSERVATION_FEATURES`,
   same order and scaling), taken against the *focus* enemy: the nearest enemy
   believed still in the fight, at its reported position. In a 1v1 battle with
   the enemy in sight they equal the duel's observation, which is what lets a v1
   policy seed a multi-agent one (:func:`models.v1_transfer.load_v1_weights_into_mappo`).
2. Whether the focus enemy is in sight now, how old its report is, and how well
   the allies can hit it (who else is engaging it).
3. :data:`ALLY_SLOTS` slots for the nearest allies in the fight, nearest first.
4. :data:`ENEMY_SLOTS` slots for the other enemies believed in the fight, nearest
   first, each with one's own and the allies' best hit chance on it.
5. How many battalions each side still has in the fight.

Empty slots are all zeros, with ``present`` 0. Teams of up to
:data:`MAX_TEAM_SIZE` fit every slot; in bigger teams the farthest are left out.

**Each side in its own frame.** Red's observations and state are mirrored across
the map's north-south centre line, so every battalion sees the battle as if its
side had deployed in the west, facing east: one policy can command either side
(self-play), and the battle is the same game from both chairs. Orders are in
the same frame (:data:`ROTATE_SIGN`): Red's "turn left" turns it right on the
real map.

**Global state.** :func:`global_states` gives each side's fog-free picture of the
battle: :data:`MAX_TEAM_SIZE` slots of its own battalions, then as many of the
enemy's, then the time. The critic of battalion ``i`` reads ``i``'s observation
followed by its side's global state (:func:`critic_states`), the "agent-specific
global state" that MAPPO works best with.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from envs.observation import MIRROR_NEGATED as DUEL_MIRROR_NEGATED
from envs.observation import OBS_DIM as DUEL_OBS_DIM
from envs.observation import OBSERVATION_FEATURES as DUEL_FEATURES
from envs.observation import ROTATE_SIGN
from envs.sim.config import BattleConfig
from envs.sim.engine import Geometry, hit_chance, team_layout
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

OBSERVATION_FEATURES = (
    *DUEL_FEATURES, *FOCUS_FEATURES,
    *(f"ally_{k}_{name}" for k in range(ALLY_SLOTS) for name in ALLY_FEATURES),
    *(f"enemy_{k}_{name}" for k in range(ENEMY_SLOTS) for name in ENEMY_FEATURES),
    *TEAM_FEATURES,
)
"""Names of a battalion's observation entries, in order."""
OBS_DIM = len(OBSERVATION_FEATURES)

UNIT_STATE_FEATURES = ("in_fight", "x", "y", "heading_cos", "heading_sin", "strength",
                       "morale", "readiness")
STATE_FEATURES = (
    *(f"own_{k}_{name}" for k in range(MAX_TEAM_SIZE) for name in UNIT_STATE_FEATURES),
    *(f"enemy_{k}_{name}" for k in range(MAX_TEAM_SIZE) for name in UNIT_STATE_FEATURES),
    "time_fraction",
)
"""Names of a side's global-state entries (battalions out of the fight are zeros)."""
STATE_DIM = len(STATE_FEATURES)
CRITIC_STATE_DIM = OBS_DIM + STATE_DIM
"""Length of a centralised critic's input: a battalion's observation, then its side's state."""

_SIGNED_SUFFIXES = ("_cos", "_sin")
OBS_LOW = np.array([-1.0 if name.endswith(_SIGNED_SUFFIXES) else 0.0
                    for name in OBSERVATION_FEATURES], F32)
OBS_HIGH = np.ones(OBS_DIM, F32)
STATE_LOW = np.array([-1.0 if name.endswith(_SIGNED_SUFFIXES) else 0.0
                      for name in STATE_FEATURES], F32)
STATE_HIGH = np.ones(STATE_DIM, F32)

# Mirroring across the north-south centre line: x -> 1 - x, headings theta -> pi - theta
# (cosine negated), angles measured between two directions change sign (sine negated).
_NEGATED = {*DUEL_MIRROR_NEGATED,
            *(f"ally_{k}_{name}" for k in range(ALLY_SLOTS)
              for name in ("bearing_sin", "heading_sin")),
            *(f"enemy_{k}_{name}" for k in range(ENEMY_SLOTS)
              for name in ("bearing_sin", "front_sin"))}
_OBS_MIRROR_SIGN = np.array([-1.0 if name in _NEGATED or name == "own_x" else 1.0
                             for name in OBSERVATION_FEATURES], F32)
_OBS_MIRROR_OFFSET = np.array([1.0 if name == "own_x" else 0.0 for name in OBSERVATION_FEATURES],
                              F32)
_STATE_MIRROR_SIGN = np.array([-1.0 if name.endswith(("_x", "_heading_cos")) else 1.0
                               for name in STATE_FEATURES], F32)
_STATE_X = np.array([i for i, name in enumerate(STATE_FEATURES) if name.endswith("_x")])
_STATE_PRESENT = np.array([i for i, name in enumerate(STATE_FEATURES)
                           if name.endswith("_in_fight")])

# What a report remembers of a battalion, in this order.
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
        live = np.stack([state.x.T, state.y.T, geometry.heading_cos.T, geometry.heading_sin.T,
                         state.strength.T, state.morale.T, state.readiness.T,
                         geometry.elevation.T, geometry.cover.T])[:, None]
        in_fight = (~(state.routed | state.destroyed)).T[None]
        step = np.broadcast_to(state.step, sees.shape)
        if isinstance(battles, slice) and battles == slice(None):
            np.copyto(self.values, live, where=sees[None])
            np.copyto(self.in_fight, in_fight, where=sees)
            np.copyto(self.seen_step, step, where=sees)
            return
        for array, new, mask in ((self.values, live, sees[None]),
                                 (self.in_fight, in_fight, sees), (self.seen_step, step, sees)):
            part = array[..., battles]
            np.copyto(part, new, where=mask)
            array[..., battles] = part


@lru_cache(maxsize=64)
def _layout(team: tuple[int, ...]):
    """Index tables for a team layout (cached: layouts are few and fixed)."""
    team_arr = np.array(team, dtype=np.intp)
    n_units = len(team)
    _, _, enemy = team_layout(team)
    ally = ~enemy & ~np.eye(n_units, dtype=bool)[:, :, None]
    own_side = np.stack([team_arr == side for side in (0, 1)])[:, :, None]  # (2, U, 1)
    # Global-state slot order per side: own units padded to MAX_TEAM_SIZE, then the
    # enemy's; index n_units is a row of zeros.
    order = np.full((2, 2 * MAX_TEAM_SIZE), n_units, dtype=np.intp)
    for side in (0, 1):
        own = np.flatnonzero(team_arr == side)[:MAX_TEAM_SIZE]
        other = np.flatnonzero(team_arr != side)[:MAX_TEAM_SIZE]
        order[side, :len(own)] = own
        order[side, MAX_TEAM_SIZE:MAX_TEAM_SIZE + len(other)] = other
    for array in (team_arr, ally, own_side, order):
        array.flags.writeable = False
    return team_arr, enemy, ally, own_side, order


@lru_cache(maxsize=16)
def _row_offsets(n_units: int, batch: int) -> np.ndarray:
    """(U, 1, B) flat offset of row ``i``, battle ``b`` in a (U, U, B) array."""
    offsets = (np.arange(n_units)[:, None, None] * (n_units * batch)
               + np.arange(batch)[None, None, :])
    offsets.flags.writeable = False
    return offsets


def sightings(state: BattleState, geometry: Geometry, visibility_radius: float) -> np.ndarray:
    """(2, U, B): whether each side sees each battalion now (its own always)."""
    _, _, _, own_side, _ = _layout(tuple(state.team.tolist()))
    dist = geometry.dist.transpose(1, 2, 0)
    los = geometry.los.transpose(1, 2, 0)
    observer = (~(state.routed | state.destroyed)).T[:, None, :]
    in_sight = (dist <= F32(visibility_radius)) & los & observer  # (observer, target, B)
    sees = np.stack([in_sight[state.team == side].any(axis=0) for side in (0, 1)])
    return sees | own_side


def battalion_observations(state: BattleState, geometry: Geometry, reports: FogReports,
                           sees: np.ndarray, config: BattleConfig) -> np.ndarray:
    """Every battalion's observation (see the module docstring).

    Args:
        state: the batch, after the step.
        geometry: :func:`envs.sim.engine.sense` of ``state``.
        reports: each side's reports, already refreshed with ``sees``.
        sees: :func:`sightings` of ``state``.
        config: the battle model's parameters.

    Returns:
        (B, U, OBS_DIM) float32, C-contiguous.
    """
    k = config.f32
    one = F32(1)
    team, enemy, ally, _, _ = _layout(tuple(state.team.tolist()))
    in_fight = (~(state.routed | state.destroyed)).T
    x, y = state.x.T, state.y.T
    hc, hs = geometry.heading_cos.T, geometry.heading_sin.T

    # What battalion i's side believes about battalion j: (i, j, B) arrays.
    rx, ry, rc, rs, strength, morale, readiness, elevation, cover = reports.values[:, team]
    believed = reports.in_fight[team]
    visible = sees[team]
    age = np.minimum((state.step - reports.seen_step[team]).astype(F32)
                     * F32(1 / config.max_steps), one)

    dx = rx - x[:, None, :]
    dy = ry - y[:, None, :]
    dist = np.sqrt(dx * dx + dy * dy)
    inv = one / np.maximum(dist, F32(1e-3))
    ch, sh = hc[:, None, :], hs[:, None, :]
    rel_cos = np.minimum(np.maximum((dx * ch + dy * sh) * inv, -one), one)
    rel_sin = np.minimum(np.maximum((dy * ch - dx * sh) * inv, -one), one)
    front_cos = np.minimum(np.maximum((-dx * rc - dy * rs) * inv, -one), one)
    front_sin = np.minimum(np.maximum((dx * rs - dy * rc) * inv, -one), one)
    los = (geometry.los.transpose(1, 2, 0) & visible).astype(F32)
    reach = hit_chance(dist, config) * los
    own_hit = reach * (rel_cos > k.cos_fire_arc)
    their_hit = reach * (front_cos > k.cos_fire_arc)
    pairwise = np.stack([
        np.minimum(dist * F32(1 / config.diagonal), one),
        np.minimum(np.maximum(dx * inv, -one), one), np.minimum(np.maximum(dy * inv, -one), one),
        strength, morale, elevation, cover, los, readiness, rel_cos, rel_sin, front_cos,
        front_sin, own_hit, their_hit, _allies_best(own_hit, ally, in_fight),
        visible.astype(F32), age,
        np.minimum(np.maximum(rc * ch + rs * sh, -one), one),
        np.minimum(np.maximum(rs * ch - rc * sh, -one), one),
    ])
    (DIST, BEAR_COS, BEAR_SIN, STR, MOR, ELEV, COVER, LOS, READY, REL_COS, REL_SIN, FRONT_COS,
     FRONT_SIN, OWN_HIT, THEIR_HIT, ALLIES_HIT, VISIBLE, AGE, HEAD_COS,
     HEAD_SIN) = range(len(pairwise))

    # Nearest first: enemies believed in the fight by reported distance (the first is
    # the focus), allies in the fight by distance.
    inf = F32(np.inf)
    enemy_range = np.where(enemy & believed, dist, inf)
    ally_range = np.where(ally & in_fight[None, :, :], dist, inf)
    n_enemy = min(ENEMY_SLOTS + 1, enemy_range.shape[1])
    n_ally = min(ALLY_SLOTS, ally_range.shape[1])
    enemy_order = np.argsort(enemy_range, axis=1, kind="stable")[:, :n_enemy]
    ally_order = np.argsort(ally_range, axis=1, kind="stable")[:, :n_ally]
    # One flat gather for both orderings (faster than take_along_axis's fancy indexing).
    n_units, batch = x.shape
    flat = _row_offsets(n_units, batch) + np.concatenate([enemy_order, ally_order], axis=1) * batch
    gathered = np.take(pairwise.reshape(len(pairwise), -1), flat, axis=1)
    ranges = np.take(np.stack([enemy_range, ally_range]).reshape(2, -1), flat, axis=1)
    enemy_present = np.isfinite(ranges[0, :, :n_enemy])
    ally_present = np.isfinite(ranges[1, :, n_enemy:])
    enemies = gathered[:, :, :n_enemy] * enemy_present[None]
    allies = gathered[:, :, n_enemy:] * ally_present[None]

    focus = enemies[:, :, 0]  # (feature, i, B)
    time_fraction = np.broadcast_to(
        np.minimum(state.step.astype(F32) * F32(1 / config.max_steps), one), x.shape)
    duel = np.stack([
        x * (one / k.map_width), y * (one / k.map_height), hc, hs, state.strength.T,
        state.morale.T, focus[DIST], focus[BEAR_COS], focus[BEAR_SIN], focus[STR], focus[MOR],
        time_fraction, geometry.elevation.T, geometry.cover.T, focus[ELEV], focus[COVER],
        focus[LOS], state.readiness.T, focus[READY], focus[REL_COS], focus[REL_SIN],
        focus[FRONT_COS], focus[FRONT_SIN], focus[OWN_HIT], focus[THEIR_HIT],
        focus[VISIBLE], focus[AGE], focus[ALLIES_HIT]])

    ally_rows = (DIST, REL_COS, REL_SIN, HEAD_COS, HEAD_SIN, STR, MOR, READY)
    enemy_rows = (VISIBLE, AGE, DIST, REL_COS, REL_SIN, FRONT_COS, FRONT_SIN, STR, MOR, READY,
                  OWN_HIT, ALLIES_HIT)
    ally_block = np.zeros((len(ALLY_FEATURES), ALLY_SLOTS) + x.shape, F32)
    ally_block[0, :n_ally] = ally_present.transpose(1, 0, 2)
    ally_block[1:, :n_ally] = allies[list(ally_rows)].transpose(0, 2, 1, 3)
    enemy_block = np.zeros((len(ENEMY_FEATURES), ENEMY_SLOTS) + x.shape, F32)
    others = n_enemy - 1
    enemy_block[0, :others] = enemy_present[:, 1:].transpose(1, 0, 2)
    enemy_block[1:, :others] = enemies[list(enemy_rows)][:, :, 1:].transpose(0, 2, 1, 3)

    scale = F32(1 / MAX_TEAM_SIZE)
    own_count = (ally_range < inf).sum(axis=1, dtype=np.int32) + in_fight
    enemy_count = enemy_present.sum(axis=1, dtype=np.int32)
    team_block = np.minimum(np.stack([own_count, enemy_count]).astype(F32) * scale, one)

    # Feature-major blocks -> (B, U, OBS_DIM) with the features contiguous.
    features = np.concatenate([  # all float32: a float64 block would promote the lot
        duel,
        ally_block.transpose(1, 0, 2, 3).reshape(-1, *x.shape),
        enemy_block.transpose(1, 0, 2, 3).reshape(-1, *x.shape),
        team_block], axis=0)
    observations = np.ascontiguousarray(features.transpose(2, 1, 0))
    red = team == 1
    observations[:, red] = observations[:, red] * _OBS_MIRROR_SIGN + _OBS_MIRROR_OFFSET
    return observations


def _allies_best(own_hit: np.ndarray, ally: np.ndarray, in_fight: np.ndarray) -> np.ndarray:
    """(i, j, B): the best hit chance on j of any ally of i in the fight."""
    # Allies share their side's reports, so ally a's view of j is own_hit[a, j].
    engaged = own_hit[None, :, :, :] * (ally & in_fight[None, :, :])[:, :, None, :]
    return engaged.max(axis=1)


def global_states(state: BattleState, geometry: Geometry, config: BattleConfig) -> np.ndarray:
    """Each side's fog-free picture of the battle: (2, B, STATE_DIM) float32.

    Row 0 is Blue's view (Blue's battalions first), row 1 Red's.
    """
    k = config.f32
    one = F32(1)
    _, _, _, _, order = _layout(tuple(state.team.tolist()))
    in_fight = (~(state.routed | state.destroyed)).T
    units = np.stack([
        np.ones_like(state.x.T), state.x.T * (one / k.map_width),
        state.y.T * (one / k.map_height), geometry.heading_cos.T, geometry.heading_sin.T,
        state.strength.T, state.morale.T, state.readiness.T]) * in_fight
    padded = np.concatenate([units, np.zeros(units.shape[:1] + (1,) + units.shape[2:], F32)],
                            axis=1)
    slots = padded[:, order]  # (feature, side, slot, B)
    batch = state.batch_size
    out = np.empty((2, batch, STATE_DIM), F32)
    out[:, :, :-1] = slots.transpose(1, 3, 2, 0).reshape(2, batch, -1)
    out[:, :, -1] = np.minimum(state.step.astype(F32) * F32(1 / config.max_steps), one)
    # Red's view, mirrored; an empty slot's x stays 0 (x -> in_fight - x).
    out[1] *= _STATE_MIRROR_SIGN
    out[1][:, _STATE_X] += out[1][:, _STATE_PRESENT]
    return out


def critic_states(observations: np.ndarray, states: np.ndarray, team: np.ndarray) -> np.ndarray:
    """(B, U, CRITIC_STATE_DIM): each battalion's observation, then its side's global state."""
    batch, n_units, _ = observations.shape
    out = np.empty((batch, n_units, CRITIC_STATE_DIM), F32)
    out[:, :, :OBS_DIM] = observations
    out[:, :, OBS_DIM:] = states[team].transpose(1, 0, 2)
    return out


assert DUEL_OBS_DIM == 25 and OBS_DIM == 25 + 3 + ALLY_SLOTS * 9 + ENEMY_SLOTS * 13 + 2

__all__ = ["ALLY_FEATURES", "ALLY_SLOTS", "CRITIC_STATE_DIM", "ENEMY_FEATURES", "ENEMY_SLOTS",
           "FOCUS_FEATURES", "FogReports", "MAX_TEAM_SIZE", "OBSERVATION_FEATURES", "OBS_DIM",
           "OBS_HIGH", "OBS_LOW", "ROTATE_SIGN", "STATE_DIM", "STATE_FEATURES", "STATE_HIGH",
           "STATE_LOW", "TEAM_FEATURES", "UNIT_STATE_FEATURES", "battalion_observations",
           "critic_states", "global_states", "sightings"]
