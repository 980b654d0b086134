"""One step of every battle in a batch: manoeuvre, sight, fire, casualties, morale.

``step(state, actions, config) -> (state, events)`` is a pure function of its
inputs over a whole batch (B battles x U battalions); there is no Python loop
over battles or units. The model, with every constant, is documented in
``docs/simulation.md``. In short, all battalions act at once:

1. **Manoeuvre.** Each wheels by ``rotate * max_turn_rate`` and then marches
   ``move * max_speed * dt`` metres along its new heading (half speed backwards),
   slowed on high ground and in woods, and stays on the map.
2. **Sight.** Distances, bearings and line of sight are measured from the new
   positions; a crest between two battalions hides them from each other.
3. **Fire.** A battalion fires at the nearest enemy in range, inside its frontal
   arc and in sight. A volley spends ``fire * readiness`` of its loaded muskets
   (readiness refills by ``reload_rate`` a step), so holding fire for close range
   pays. Damage falls with range, is ragged on the move or while wheeling, grows
   on the enemy's flank and rear and from higher ground, and is absorbed by cover.
4. **Casualties and morale.** Damage costs strength and morale, more from the
   flank and rear; a battalion not under fire recovers morale; one whose morale
   has fallen below the rout threshold may rout; one at 1 % strength is destroyed.
   Routed and destroyed battalions take no further part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.constants import (
    ACTION_HIGH,
    ACTION_LOW,
    DESTROYED_THRESHOLD,
    DT,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
)
from envs.sim.state import BattleState
from envs.sim.terrain import bilinear, cell_index, line_of_sight

# The model's headline constants are also importable from here, where the reference
# design defines them; their home is envs.sim.constants.
__all__ = [
    "DESTROYED_THRESHOLD", "DT", "MAP_HEIGHT", "MAP_WIDTH", "MAX_STEPS",
    "Geometry", "StepEvents", "hit_chance", "sense", "step",
]

F32 = np.float32
TWO_PI = F32(2 * math.pi)


@dataclass(frozen=True, eq=False)
class Geometry:
    """What each battalion sees of the others, from the current positions.

    Pairwise arrays are (B, U, U) and read "from unit i to unit j"; like the
    state, they are stored with the battle axis contiguous.
    """

    heading_cos: np.ndarray
    """(B, U) cosine of each heading."""
    heading_sin: np.ndarray
    dx: np.ndarray
    """(B, U, U) x-offset of j from i in metres."""
    dy: np.ndarray
    dist: np.ndarray
    """(B, U, U) distance in metres."""
    facing_cos: np.ndarray
    """(B, U, U) cosine of the angle between i's heading and the direction to j
    (1 when j is dead ahead; 0 on the diagonal)."""
    facing_sin: np.ndarray
    """(B, U, U) sine of that angle (positive when j lies counter-clockwise)."""
    elevation: np.ndarray
    """(B, U) relative elevation of the ground under each unit."""
    cover: np.ndarray
    """(B, U) cover density under each unit."""
    los: np.ndarray
    """(B, U, U) line of sight between opposing units (True between allies)."""


@dataclass(frozen=True, eq=False)
class StepEvents:
    """What happened during one step, for rewards, observations and replays."""

    geometry: Geometry
    """Geometry after the manoeuvre (the positions of the returned state)."""
    volley: np.ndarray
    """(B, U) readiness each unit spent firing."""
    target: np.ndarray
    """(B, U) index of the unit each one fired at, or -1."""
    damage_dealt: np.ndarray
    """(B, U) strength each unit removed from the enemy (after cover and clamping)."""
    damage_taken: np.ndarray
    """(B, U) strength each unit lost."""


# The step computes in unit-major layout, (U, B) per unit and (U, U, B) per pair,
# C-contiguous with the battle axis innermost: broadcasts and reductions over the
# short unit axes then run over whole contiguous rows. The public (B, U) arrays
# are transposed views of these, so no data is copied either way.

def _unit_major(a: np.ndarray) -> np.ndarray:
    return a.T if a.ndim == 2 else a.transpose(1, 2, 0)


def _battle_major(a: np.ndarray) -> np.ndarray:
    return a.T if a.ndim == 2 else a.transpose(2, 0, 1)


@lru_cache(maxsize=64)
def team_layout(team: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a team layout: indices of the opposing pairs (i < j), and the (U, U, 1)
    enemy mask in unit-major layout."""
    team_arr = np.array(team)
    enemy = team_arr[:, None] != team_arr[None, :]
    first, second = np.nonzero(np.triu(enemy))
    return first, second, enemy[:, :, None]


@lru_cache(maxsize=64)
def _map_offsets(batch: int, cells_per_map: int) -> np.ndarray:
    """Offset of each battle's map in the flattened (B * rows * cols) terrain stack."""
    offsets = np.arange(batch, dtype=np.int32) * np.int32(cells_per_map)
    offsets.flags.writeable = False
    return offsets


def _ground(state: BattleState, x: np.ndarray, y: np.ndarray,
            config: BattleConfig) -> tuple[np.ndarray, np.ndarray]:
    """Elevation and cover of the ground under unit-major (U, B) points."""
    rows, cols = state.grid_shape
    offsets = _map_offsets(state.batch_size, rows * cols)
    width, height = config.map_width, config.map_height
    elevation = bilinear(state.elevation_patches.reshape(-1, 4), offsets, x, y, width, height,
                         rows, cols)
    cover = np.take(state.cover.reshape(-1),
                    cell_index(x, y, width, height, rows, cols) + offsets)
    return elevation, cover


def sense(state: BattleState, config: BattleConfig) -> Geometry:
    """Distances, bearings, terrain under each unit and line of sight for ``state``."""
    theta = state.theta.T
    return _sense(state, state.x.T, state.y.T, np.cos(theta), np.sin(theta), config)


def _sense(state: BattleState, x: np.ndarray, y: np.ndarray, cos_h: np.ndarray,
           sin_h: np.ndarray, config: BattleConfig) -> Geometry:
    """:func:`sense` for unit-major positions and headings that replace the state's."""
    dx = x[None, :, :] - x[:, None, :]
    dy = y[None, :, :] - y[:, None, :]
    dist = np.sqrt(dx * dx + dy * dy)
    inv = np.float32(1) / np.maximum(dist, np.float32(1e-3))
    ch, sh = cos_h[:, None, :], sin_h[:, None, :]
    facing_cos = (dx * ch + dy * sh) * inv
    facing_sin = (dy * ch - dx * sh) * inv

    elevation, cover = _ground(state, x, y, config)

    first, second, _ = team_layout(tuple(state.team.tolist()))
    rows, cols = state.grid_shape
    pair_los = line_of_sight(
        state.elevation_patches.reshape(-1, 4), state.batch_size,
        x[first], y[first], elevation[first], x[second], y[second], elevation[second],
        config.map_width, config.map_height, rows, cols, config.eye_height,
        config.los_samples)
    los = np.ones(dist.shape, bool)
    los[first, second] = pair_los
    los[second, first] = pair_los
    return Geometry(*(_battle_major(a) for a in (
        cos_h, sin_h, dx, dy, dist, facing_cos, facing_sin, elevation, cover, los)))


def step(state: BattleState, actions: np.ndarray, config: BattleConfig,
         geometry: Geometry | None = None) -> tuple[BattleState, StepEvents]:
    """Advance every battle by one step.

    Args:
        state: the batch to advance (not modified).
        actions: (B, U, 3) ``[move, rotate, fire]`` per battalion; values outside
            the action box (:data:`~envs.sim.constants.ACTION_LOW` to
            :data:`~envs.sim.constants.ACTION_HIGH`) are clipped. Actions of routed or
            destroyed battalions are ignored. An array laid out as the transpose of a
            C-contiguous (3, U, B) array is used without copying.
        config: the battle model's parameters.
        geometry: ``sense(state, config)`` if the caller already has it (the
            previous step's ``events.geometry``); it saves looking up the ground.

    Returns:
        The new state and the step's events.
    """
    k = config.f32
    # Unit-major views of the state: (U, B).
    active = ~(state.routed.T | state.destroyed.T)
    live = active.astype(F32)
    orders = np.ascontiguousarray(np.asarray(actions, dtype=F32).transpose(2, 1, 0))
    move, rotate, fire = np.minimum(np.maximum(orders, _ORDER_LOW), _ORDER_HIGH) * live

    x, y, theta, cos_h, sin_h = _manoeuvre(state, move, rotate, geometry, config)
    geo = _sense(state, x, y, cos_h, sin_h, config)
    volley, target, dealt, taken, shaken, under_fire = _fire(
        state, geo, active, move, rotate, fire, config)

    # Morale: casualties shake it, a quiet step restores a little.
    one = F32(1)
    recovery = k.morale_recovery * (live * ~under_fire)
    morale = np.minimum(np.maximum(state.morale.T - shaken + recovery, F32(0)), one)
    strength = state.strength.T - taken
    readiness0 = state.readiness.T
    readiness = readiness0 + live * (
        np.minimum(readiness0 - volley + k.reload_rate, one) - readiness0)

    destroyed = state.destroyed.T | (strength <= k.destroyed_threshold)
    routed = state.routed.T
    wavering = active & ~destroyed & (morale < k.rout_threshold)
    if wavering.any():  # the draws are keyed, so skipping them changes nothing else
        draw = rnd.uniform(state.key, rnd.STREAM_ROUT, state.step, state.n_units).T
        routed = routed | (wavering & (draw < one - morale / k.rout_threshold))

    new_state = BattleState(
        x=x.T, y=y.T, theta=theta.T, strength=strength.T, morale=morale.T,
        readiness=readiness.T, routed=routed.T, destroyed=destroyed.T, step=state.step + 1,
        key=state.key, elevation=state.elevation, cover=state.cover,
        elevation_patches=state.elevation_patches, team=state.team)
    return new_state, StepEvents(geo, volley.T, target.T, dealt.T, taken.T)


# The action box, broadcast over unit-major (3, U, B) orders.
_ORDER_LOW = np.array(ACTION_LOW, dtype=F32)[:, None, None]
_ORDER_HIGH = np.array(ACTION_HIGH, dtype=F32)[:, None, None]


def hit_chance(dist: np.ndarray, config: BattleConfig) -> np.ndarray:
    """Share of a volley that hits at ``dist`` metres, arc and sight aside: 1 at point
    blank, falling as ``(1 - dist / fire_range) ** hit_falloff_exponent`` to 0 at
    ``fire_range`` and beyond. Float32 like ``dist``; the fire model and the
    observations both read it from here."""
    k = config.f32
    return np.maximum(F32(1) - dist * k.inv_fire_range, F32(0)) ** k.hit_falloff_exponent


def _manoeuvre(state: BattleState, move: np.ndarray, rotate: np.ndarray,
               geometry: Geometry | None, config: BattleConfig):
    """Wheel, then march along the new heading over the ground one stands on."""
    k = config.f32
    theta = np.remainder(state.theta.T + rotate * k.max_turn_rate, TWO_PI)
    cos_h, sin_h = np.cos(theta), np.sin(theta)
    x0, y0 = state.x.T, state.y.T
    if geometry is None:
        elevation0, cover0 = _ground(state, x0, y0, config)
    else:
        elevation0, cover0 = geometry.elevation.T, geometry.cover.T
    ground_speed = (F32(1) - (F32(1) - k.hill_speed_factor) * elevation0
                    - k.forest_speed_penalty * cover0)
    pace = F32(1) - (F32(1) - k.backward_speed_fraction) * (move < 0)
    stride = move * pace * ground_speed * k.step_length
    x = np.minimum(np.maximum(x0 + cos_h * stride, F32(0)), k.map_width)
    y = np.minimum(np.maximum(y0 + sin_h * stride, F32(0)), k.map_height)
    return x, y, theta, cos_h, sin_h


def _fire(state: BattleState, geo: Geometry, active: np.ndarray, move: np.ndarray,
          rotate: np.ndarray, fire: np.ndarray, config: BattleConfig):
    """Every battalion fires at the nearest enemy in range, in its arc and in sight.

    Returns unit-major (U, B) arrays: readiness spent, target index (-1 for none),
    strength removed from the enemy, strength lost, morale lost, and whether
    the unit came under fire.
    """
    k = config.f32
    one = F32(1)
    dist, facing_cos = _unit_major(geo.dist), _unit_major(geo.facing_cos)
    _, _, enemy = team_layout(tuple(state.team.tolist()))
    can_hit = (enemy & active[:, None, :] & active[None, :, :] & _unit_major(geo.los)
               & (dist <= k.fire_range) & (facing_cos > k.cos_fire_arc))
    if not can_hit.any():  # nobody is in reach: a quiet step everywhere
        nothing = np.zeros(active.shape, F32)
        return nothing, np.full(active.shape, -1, np.int32), nothing, nothing, nothing, \
            np.zeros(active.shape, bool)

    # The nearest target; targets at exactly equal range share the volley.
    reach = np.where(can_hit, dist, F32(np.inf))
    aimed = can_hit & (reach <= reach.min(axis=1)[:, None, :])
    n_aimed = aimed.sum(axis=1, dtype=np.int32)
    has_target = n_aimed > 0
    unit_ids = np.arange(state.n_units, dtype=np.int32)[None, :, None]
    target = (aimed * unit_ids).max(axis=1) - ~has_target
    aim_share = aimed * (one / np.maximum(n_aimed, 1).astype(F32))[:, None, :]

    volley = fire * state.readiness.T * has_target
    steadiness = ((one - k.moving_fire_penalty * np.abs(move))
                  * (one - k.turning_fire_penalty * np.abs(rotate)))
    firepower = k.volley_damage * volley * state.strength.T * steadiness
    hits = hit_chance(dist, config)
    # How fire arrives: the angle between the target's front and the shooter.
    arrival_cos = facing_cos.transpose(1, 0, 2)
    flank = arrival_cos <= k.cos_front
    rear = arrival_cos < k.cos_rear
    angle_mult = (one + (k.flank_damage_multiplier - one) * flank
                  + (k.rear_damage_multiplier - k.flank_damage_multiplier) * rear)
    elevation, cover = geo.elevation.T, geo.cover.T
    height_mult = one + k.height_advantage * (elevation[:, None, :] - elevation[None, :, :])
    protection = one - k.cover_protection * cover[None, :, :]
    raw = (firepower[:, None, :] * aim_share) * (hits * angle_mult * height_mult * protection)

    # A target cannot lose more than it has; its shooters share the loss.
    incoming = raw.sum(axis=0)
    taken = np.minimum(incoming, state.strength.T)
    share = taken / np.maximum(incoming, F32(1e-12))
    applied = raw * share[None, :, :]
    dealt = applied.sum(axis=1)
    morale_weight = (k.morale_per_damage + k.flank_morale_extra * flank
                     + (k.rear_morale_extra - k.flank_morale_extra) * rear)
    shaken = (applied * morale_weight).sum(axis=0) + k.volley_shock * taken * taken
    return volley, target, dealt, taken, shaken, incoming > 0
