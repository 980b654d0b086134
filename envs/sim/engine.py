"""One step of every battle in a batch: manoeuvre, sight, fire, casualties, morale.

``step(state, actions, config) -> (state, events)`` is a pure function of its
inputs over a whole batch (B battles x U battalions), computed by the compiled
kernels of :mod:`envs.sim.kernels` (loops over battles, spread over Numba's
threads, then over units). The model, with every constant, is documented in
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

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from envs.sim import kernels
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

# The model's headline constants are also importable from here, where the reference
# design defines them; their home is envs.sim.constants.
__all__ = [
    "DESTROYED_THRESHOLD", "DT", "MAP_HEIGHT", "MAP_WIDTH", "MAX_STEPS",
    "Geometry", "StepEvents", "hit_chance", "sense", "step",
]

F32 = np.float32


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


# The kernels take and give unit-major arrays, (U, B) per unit and (U, U, B) per pair,
# C-contiguous with the battle axis innermost, the layout the NumPy code reading the
# state and the geometry (observations, rewards, scripted commanders) runs fastest on.
# The public (B, U) arrays are transposed views of these, so no data is copied either way.

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


def sense(state: BattleState, config: BattleConfig) -> Geometry:
    """Distances, bearings, terrain under each unit and line of sight for ``state``."""
    rows, cols = state.grid_shape
    geometry = kernels.sense_kernel(
        _unit_major_c(state.x), _unit_major_c(state.y), _unit_major_c(state.theta),
        _team(state), state.elevation_patches, state.cover,
        kernels.constants(config, rows, cols), config.los_samples)
    return Geometry(*(_battle_major(a) for a in geometry))


def step(state: BattleState, actions: np.ndarray, config: BattleConfig,
         geometry: Geometry | None = None) -> tuple[BattleState, StepEvents]:
    """Advance every battle by one step (compiled: :func:`envs.sim.kernels.step_kernel`).

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
    rows, cols = state.grid_shape
    orders = np.ascontiguousarray(np.asarray(actions, dtype=F32).transpose(2, 1, 0))
    known = geometry is not None
    ground = _unit_major_c(geometry.elevation) if known else _NO_GROUND
    cover = _unit_major_c(geometry.cover) if known else _NO_GROUND
    (x, y, theta, strength, morale, readiness, routed, destroyed, *geo, volley, target, dealt,
     taken) = _step_kernel(state.batch_size)(
        _unit_major_c(state.x), _unit_major_c(state.y), _unit_major_c(state.theta),
        _unit_major_c(state.strength), _unit_major_c(state.morale),
        _unit_major_c(state.readiness), _unit_major_c(state.routed),
        _unit_major_c(state.destroyed), state.step, state.key, _team(state),
        state.elevation_patches, state.cover, orders, ground, cover, known,
        kernels.constants(config, rows, cols), config.los_samples, _ACTION_LOW, _ACTION_HIGH)
    new_state = BattleState(
        x=x.T, y=y.T, theta=theta.T, strength=strength.T, morale=morale.T,
        readiness=readiness.T, routed=routed.T, destroyed=destroyed.T, step=state.step + 1,
        key=state.key, elevation=state.elevation, cover=state.cover,
        elevation_patches=state.elevation_patches, team=state.team)
    return new_state, StepEvents(Geometry(*(_battle_major(a) for a in geo)), volley.T,
                                 target.T, dealt.T, taken.T)


def _step_kernel(batch: int):
    """The kernel for a batch of ``batch`` battles: on every Numba thread when it is large."""
    if batch >= kernels.PARALLEL_MIN_BATTLES:
        return kernels.step_kernel_parallel
    return kernels.step_kernel


def _unit_major_c(a: np.ndarray) -> np.ndarray:
    """The (U, B) C-contiguous form of a (B, U) array (a view when it is laid out so)."""
    return np.ascontiguousarray(a.T)


def _team(state: BattleState) -> np.ndarray:
    return np.ascontiguousarray(state.team, dtype=np.int8)


_NO_GROUND = np.zeros((0, 0), F32)
_ACTION_LOW = np.array(ACTION_LOW, dtype=F32)
_ACTION_HIGH = np.array(ACTION_HIGH, dtype=F32)


def hit_chance(dist: np.ndarray, config: BattleConfig) -> np.ndarray:
    """Share of a volley that hits at ``dist`` metres, arc and sight aside: 1 at point
    blank, falling as ``(1 - dist / fire_range) ** hit_falloff_exponent`` to 0 at
    ``fire_range`` and beyond. Float32 like ``dist``; the fire model and the
    observations both read it from here."""
    k = config.f32
    return np.maximum(F32(1) - dist * k.inv_fire_range, F32(0)) ** k.hit_falloff_exponent
