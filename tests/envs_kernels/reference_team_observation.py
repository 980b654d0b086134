"""A NumPy implementation of :mod:`envs.battles.multi_observation`'s fog of war,
observations and global states, the reference the compiled kernels are tested against
(``tests/envs_kernels/test_team_observation_kernel.py``).

``FogReports.refresh`` is :func:`refresh` (``self`` is ``reports``); the feature layout,
constants and mirroring tables are imported from the module itself. The observations'
and global states' arms blocks are added at the end of each (:func:`unit_arms`, computed
as the entity tokens compute them), after the arm-blind entries.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from envs.battles.multi_observation import (
    _OBS_MIRROR_OFFSET,
    _OBS_MIRROR_SIGN,
    _STATE_MIRROR_SIGN,
    _STATE_PRESENT,
    _STATE_X,
    ALLY_FEATURES,
    ALLY_SLOTS,
    ARMS_FEATURES,
    ARMS_STATE_DIM,
    ENEMY_FEATURES,
    ENEMY_SLOTS,
    MAX_TEAM_SIZE,
    QUALITY_SCALE,
    STATE_DIM,
    FogReports,
)
from envs.sim.config import BattleConfig
from envs.sim.constants import ARM_NAMES, FORMATION_NAMES
from envs.sim.engine import Geometry
from envs.sim.state import BattleState


@lru_cache(maxsize=64)
def team_layout(team: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a team layout: indices of the opposing pairs (i < j), and the (U, U, 1)
    enemy mask in unit-major layout."""
    team_arr = np.array(team)
    enemy = team_arr[:, None] != team_arr[None, :]
    first, second = np.nonzero(np.triu(enemy))
    return first, second, enemy[:, :, None]



def hit_chance(dist: np.ndarray, config: BattleConfig) -> np.ndarray:
    """The NumPy hit chance: ``(1 - dist / fire_range) ** hit_falloff_exponent``,
    at least 0, float32 like ``dist``."""
    k = config.f32
    return np.maximum(np.float32(1) - dist * k.inv_fire_range,
                      np.float32(0)) ** k.hit_falloff_exponent

F32 = np.float32


def refresh(reports: FogReports, state: BattleState, geometry: Geometry, sees: np.ndarray,
            battles: np.ndarray | slice = slice(None)) -> None:
    """Overwrite the reports of what each side ``sees`` ((2, U, b) for ``battles``)."""
    live = np.stack([state.x.T, state.y.T, geometry.heading_cos.T, geometry.heading_sin.T,
                     state.strength.T, state.morale.T, state.readiness.T,
                     geometry.elevation.T, geometry.cover.T])[:, None]
    in_fight = (~(state.routed | state.destroyed)).T[None]
    step = np.broadcast_to(state.step, sees.shape)
    if isinstance(battles, slice) and battles == slice(None):
        np.copyto(reports.values, live, where=sees[None])
        np.copyto(reports.in_fight, in_fight, where=sees)
        np.copyto(reports.seen_step, step, where=sees)
        return
    for array, new, mask in ((reports.values, live, sees[None]),
                             (reports.in_fight, in_fight, sees),
                             (reports.seen_step, step, sees)):
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
    """Every battalion's observation (see the module docstring), from the arguments of
    :func:`envs.battles.multi_observation.battalion_observations` (``sees`` from this
    module's :func:`sightings`), always with the arms block.

    Returns:
        (B, U, ARMS_OBS_DIM) float32, C-contiguous.
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

    # The arms block: each side's view of every unit (an enemy's formation and disorder
    # only while in sight), gathered in the slots' order.
    by_side = np.stack([unit_arms(state, config, sees[side].T) for side in (0, 1)])
    battles = np.arange(batch)[None, None, :]
    viewer_side = team[:, None, None]

    def arms_of(order, present):  # (i, n, B) -> (i, n, B, ARMS)
        return by_side[viewer_side, battles, order] * present[..., None]

    own_arms = by_side[team[:, None], np.arange(batch)[None, :], np.arange(n_units)[:, None]]
    enemy_arms = arms_of(enemy_order, enemy_present)
    ally_arms = arms_of(ally_order, ally_present)
    width = len(ARMS_FEATURES)
    arms_block = np.zeros((n_units, 2 + ALLY_SLOTS + ENEMY_SLOTS, batch, width), F32)
    arms_block[:, 0] = own_arms
    arms_block[:, 1] = enemy_arms[:, 0]
    arms_block[:, 2:2 + n_ally] = ally_arms
    arms_block[:, 2 + ALLY_SLOTS:2 + ALLY_SLOTS + others] = enemy_arms[:, 1:]
    arms_block = arms_block.transpose(1, 3, 0, 2).reshape(-1, *x.shape)  # feature-major

    # Feature-major blocks -> (B, U, ARMS_OBS_DIM) with the features contiguous.
    features = np.concatenate([  # all float32: a float64 block would promote the lot
        duel,
        ally_block.transpose(1, 0, 2, 3).reshape(-1, *x.shape),
        enemy_block.transpose(1, 0, 2, 3).reshape(-1, *x.shape),
        team_block, arms_block], axis=0)
    observations = np.ascontiguousarray(features.transpose(2, 1, 0))
    red = team == 1
    observations[:, red] = observations[:, red] * _OBS_MIRROR_SIGN + _OBS_MIRROR_OFFSET
    return observations


def _allies_best(own_hit: np.ndarray, ally: np.ndarray, in_fight: np.ndarray) -> np.ndarray:
    """(i, j, B): the best hit chance on j of any ally of i in the fight."""
    # Allies share their side's reports, so ally a's view of j is own_hit[a, j].
    engaged = own_hit[None, :, :, :] * (ally & in_fight[None, :, :])[:, :, None, :]
    return engaged.max(axis=1)


def unit_arms(state: BattleState, config: BattleConfig, shown: np.ndarray) -> np.ndarray:
    """(B, U, len(ARMS_FEATURES)) float32: every unit's arm and formation one-hot, quality
    and disorder, as :func:`envs.battles.entity_tokens.entity_tokens` computes them; the
    formation and disorder only where ``shown`` (B, U)."""
    batch, n_units = state.x.shape
    arm = state.arm.astype(np.intp)
    out = np.zeros((batch, n_units, len(ARMS_FEATURES)), F32)
    out[:, np.arange(n_units), arm] = 1.0
    formation = np.zeros((batch, n_units, len(FORMATION_NAMES)), F32)
    np.put_along_axis(formation, state.formation.astype(np.intp)[..., None], 1.0, axis=2)
    at = len(ARM_NAMES)
    out[..., at:at + len(FORMATION_NAMES)] = formation * shown[..., None]
    out[..., ARMS_FEATURES.index("quality")] = np.minimum(state.quality / QUALITY_SCALE, 1.0)
    drill_steps = np.asarray(config.arm_drill_steps, F32)[arm]
    out[..., ARMS_FEATURES.index("disorder")] = np.where(
        shown & (drill_steps > 0), state.drill / np.maximum(drill_steps, 1), 0.0)
    return out


def global_states(state: BattleState, geometry: Geometry, config: BattleConfig) -> np.ndarray:
    """Each side's fog-free picture of the battle: (2, B, ARMS_STATE_DIM) float32.

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
    out = np.empty((2, batch, ARMS_STATE_DIM), F32)
    out[:, :, :STATE_DIM - 1] = slots.transpose(1, 3, 2, 0).reshape(2, batch, -1)
    out[:, :, STATE_DIM - 1] = np.minimum(
        state.step.astype(F32) * F32(1 / config.max_steps), one)
    # The arms blocks of the same slots, fog-free (every formation shown).
    arms = unit_arms(state, config, np.ones(state.x.shape, bool)) * in_fight.T[..., None]
    arms = np.concatenate([arms, np.zeros((batch, 1, arms.shape[2]), F32)], axis=1)
    out[:, :, STATE_DIM:] = arms[:, order].transpose(1, 0, 2, 3).reshape(2, batch, -1)
    # Red's view, mirrored; an empty slot's x stays 0 (x -> in_fight - x).
    out[1] *= _STATE_MIRROR_SIGN
    out[1][:, _STATE_X] += out[1][:, _STATE_PRESENT]
    return out
