"""One step of every battle in a batch: manoeuvre, sight, fire, casualties, morale.

``step(state, actions, config) -> (state, events)`` is a pure function of its
inputs over a whole batch (B battles x U battalions), computed by the compiled
kernels of :mod:`envs.sim.kernels` (loops over battles, spread over Numba's
threads, then over units). All battalions act at once: they wheel and march
(slowed by the ground), then sight is measured from the new positions (a crest
hides), then each fires at the nearest enemy in range, arc and sight, spending its
readiness, and damage costs strength and morale, so that a battalion may rout or
be destroyed. The model, with every constant, is documented in ``docs/simulation.md``.
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
    FORMATION_NAMES,
    KEEP_FORMATION,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
)
from envs.sim.jit import read_only
from envs.sim.state import BattleState
from envs.sim.validation import check_real_array

# The model's headline constants are also importable from here, where the reference
# design defines them; their home is envs.sim.constants.
__all__ = [
    "DESTROYED_THRESHOLD", "DT", "MAP_HEIGHT", "MAP_WIDTH", "MAX_STEPS",
    "Geometry", "RESTART_GEOMETRY", "StepBlocks", "StepEvents", "arms_inputs",
    "check_formation_orders", "formation_orders", "keep_formations", "pair_major", "sense",
    "step", "step_inputs", "team_codes", "unit_major", "writable_major",
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


RESTART_GEOMETRY = ("heading_cos", "heading_sin", "elevation", "cover", "dx", "dy", "dist",
                    "facing_cos", "facing_sin", "los")
"""The :class:`Geometry` fields in the order the restart kernels take them
(:func:`envs.battles.duel_step.restart_duels`, :func:`envs.battles.team_step.restart_teams`)."""


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


def sense(state: BattleState, config: BattleConfig) -> Geometry:
    """Distances, bearings, terrain under each unit and line of sight for ``state``."""
    rows, cols = state.grid_shape
    geometry = kernels.sense_kernel(
        unit_major(state.x), unit_major(state.y), unit_major(state.theta),
        team_codes(state), state.elevation_patches, state.cover,
        kernels.constants(config, rows, cols), config.los_samples)
    return Geometry(*(_battle_major(a) for a in geometry))


def step(state: BattleState, actions: np.ndarray, config: BattleConfig,
         geometry: Geometry | None = None,
         formations: np.ndarray | None = None) -> tuple[BattleState, StepEvents]:
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
        formations: (B, U) formation orders, codes of
            :data:`~envs.sim.constants.FORMATION_NAMES` or
            :data:`~envs.sim.constants.KEEP_FORMATION`; None keeps every formation. An
            order the unit's arm cannot take, or given while a change is under way, is
            ignored.

    Returns:
        The new state and the step's events.

    Raises:
        ValueError: if ``formations`` is not a (B, U) array of such codes.
    """
    orders = np.ascontiguousarray(np.asarray(actions, dtype=F32).transpose(2, 1, 0))
    drill_orders = formation_orders(formations, state.x.shape)
    blocks = StepBlocks.allocate(state.batch_size, state.n_units)
    _step_kernel(state.batch_size)(*step_inputs(state, config, geometry, orders),
                                   *blocks.arrays(),
                                   arms_inputs(state, config, drill_orders, blocks.modes))
    return blocks.views(state)


def check_formation_orders(name: str, value: object, shape: tuple[int, int]) -> np.ndarray:
    """``value`` as a (B, U) int8 array of formation orders.

    Raises:
        ValueError: naming ``name``, for another shape or a code outside
            :data:`~envs.sim.constants.KEEP_FORMATION` to the last formation.
    """
    codes = check_real_array(name, value, shape)
    last = len(FORMATION_NAMES) - 1
    if codes.size and (np.any(codes != np.round(codes)) or codes.min() < KEEP_FORMATION
                       or codes.max() > last):
        raise ValueError(f"{name} holds {np.unique(codes)[:8]}: expected integer codes "
                         f"{KEEP_FORMATION} (keep) to {last} ({', '.join(FORMATION_NAMES)})")
    return codes.astype(np.int8)


def arms_inputs(state: BattleState, config: BattleConfig, drill_orders: np.ndarray | None,
                modes: np.ndarray) -> tuple:
    """The kernels' ``arms`` tuple (see :func:`envs.sim.kernels.step_battles`) for
    ``state``, (U, B) ``drill_orders`` (None: keep every formation) and the (2, U, B)
    int16 block the step writes the formations and drill steps to."""
    if drill_orders is None:
        drill_orders = keep_formations(state.n_units, state.batch_size)
    return (np.ascontiguousarray(state.arm, dtype=np.int8),
            np.ascontiguousarray(state.quality, dtype=F32), unit_major(state.formation),
            unit_major(state.drill), read_only(drill_orders), state.going,
            kernels.arms_table(config),
            modes)


@lru_cache(maxsize=64)
def keep_formations(n_units: int, batch: int) -> np.ndarray:
    """(U, B) formation orders that keep every formation (read only, shared)."""
    orders = np.full((n_units, batch), KEEP_FORMATION, np.int8)
    orders.flags.writeable = False
    return orders


def formation_orders(formations: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray | None:
    """``formations`` (B, U) as the kernels take them, (U, B) int8, checked; None stays None.

    Raises:
        ValueError: as :func:`check_formation_orders`.
    """
    if formations is None:
        return None
    return unit_major(check_formation_orders("formations", formations, shape))


@dataclass(frozen=True, eq=False)
class StepBlocks:
    """The memory one step writes (:mod:`envs.sim.kernels` names the rows): the new
    state, its geometry and the step's events, in five unit-major blocks that
    :meth:`views` presents as a :class:`BattleState` and :class:`StepEvents`."""

    units: np.ndarray
    flags: np.ndarray
    pairs: np.ndarray
    los: np.ndarray
    target: np.ndarray
    modes: np.ndarray

    @classmethod
    def allocate(cls, batch: int, n_units: int) -> StepBlocks:
        unit, pair = (n_units, batch), (n_units, n_units, batch)
        return cls(np.empty((kernels.UNIT_FLOATS, *unit), F32),
                   np.empty((kernels.UNIT_FLAGS, *unit), bool),
                   np.empty((kernels.PAIR_FLOATS, *pair), F32), np.empty(pair, bool),
                   np.empty(unit, np.int32), np.empty((2, *unit), np.int16))

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The blocks in the kernels' argument order (``modes`` rides in the ``arms``
        tuple, :func:`arms_inputs`)."""
        return self.units, self.flags, self.pairs, self.los, self.target

    def views(self, before: BattleState) -> tuple[BattleState, StepEvents]:
        """The state after the step from ``before`` and the step's events."""
        u, f, p = self.units, self.flags, self.pairs
        state = BattleState(
            x=u[kernels.U_X].T, y=u[kernels.U_Y].T, theta=u[kernels.U_THETA].T,
            strength=u[kernels.U_STRENGTH].T, morale=u[kernels.U_MORALE].T,
            readiness=u[kernels.U_READINESS].T, routed=f[kernels.F_ROUTED].T,
            destroyed=f[kernels.F_DESTROYED].T, step=before.step + 1, key=before.key,
            elevation=before.elevation, cover=before.cover,
            elevation_patches=before.elevation_patches, team=before.team,
            formation=self.modes[0].T, drill=self.modes[1].T, going=before.going,
            arm=before.arm, quality=before.quality)
        geometry = Geometry(
            u[kernels.U_COS].T, u[kernels.U_SIN].T, *(_battle_major(a) for a in p),
            u[kernels.U_ELEVATION].T, u[kernels.U_COVER].T, _battle_major(self.los))
        return state, StepEvents(geometry, u[kernels.U_VOLLEY].T, self.target.T,
                                 u[kernels.U_DEALT].T, u[kernels.U_TAKEN].T)


def step_inputs(state: BattleState, config: BattleConfig, geometry: Geometry | None,
                orders: np.ndarray, constants: np.ndarray | None = None) -> tuple:
    """The kernels' arguments before the output blocks, for ``state`` and (3, U, B)
    C-contiguous ``orders``; ``constants`` replaces :func:`envs.sim.kernels.constants`
    where a caller's kernels read more after them."""
    rows, cols = state.grid_shape
    known = geometry is not None
    ground = unit_major(geometry.elevation) if known else _NO_GROUND
    cover = unit_major(geometry.cover) if known else _NO_GROUND
    return (unit_major(state.x), unit_major(state.y), unit_major(state.theta),
            unit_major(state.strength), unit_major(state.morale),
            unit_major(state.readiness), unit_major(state.routed),
            unit_major(state.destroyed), state.step, state.key, team_codes(state),
            state.elevation_patches, state.cover, orders, ground, cover, known,
            kernels.constants(config, rows, cols) if constants is None else read_only(constants),
            config.los_samples, _ACTION_LOW, _ACTION_HIGH)


def _step_kernel(batch: int):
    """The kernel for a batch of ``batch`` battles: on every Numba thread when it is large."""
    if batch >= kernels.PARALLEL_MIN_BATTLES:
        return kernels.step_kernel_parallel
    return kernels.step_kernel


def unit_major(a: np.ndarray) -> np.ndarray:
    """The (U, B) C-contiguous form of a (B, U) array (a view when it is laid out so, as
    the state's and the geometry's are): what the kernels take."""
    return np.ascontiguousarray(a.T)


def writable_major(a: np.ndarray) -> np.ndarray:
    """The unit-major view of a (B, U) or (B, U, U) array a kernel writes into.

    Raises:
        ValueError: if the array is not laid out so (a copy would take the writes).
    """
    view = a.T if a.ndim == 2 else a.transpose(1, 2, 0)
    if not view.flags.c_contiguous:
        raise ValueError(f"an array of shape {a.shape} is not laid out with the battle axis "
                         "contiguous: expected the engine's own arrays (BattleState.empty, "
                         "step, sense)")
    return view


def pair_major(a: np.ndarray) -> np.ndarray:
    """The (U, U, B) C-contiguous form of a (B, U, U) geometry array (a view when it is
    laid out so, as the engine's are)."""
    return np.ascontiguousarray(a.transpose(1, 2, 0))


def team_codes(state: BattleState) -> np.ndarray:
    """``state.team`` as the kernels take it: (U,) int8, C-contiguous."""
    return np.ascontiguousarray(state.team, dtype=np.int8)


_NO_GROUND = np.zeros((0, 0), F32)
_ACTION_LOW = np.array(ACTION_LOW, dtype=F32)
_ACTION_HIGH = np.array(ACTION_HIGH, dtype=F32)

