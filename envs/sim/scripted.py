"""Scripted commanders of curriculum levels 1-5, compiled, for a whole batch at once.

Each scripted battalion deals with the nearest enemy still in the fight: L1 stands
still and holds fire, L2 wheels to face the enemy, L3 also marches on it until it is
within ``SCRIPTED_HALT_FRACTION`` of fire range, L4 also fires at half intensity, and L5
fires at full intensity every step, whatever the range. Levels 2 to 5 also use their
other arms (:func:`arms_orders`: infantry deploying and forming square, cavalry charging,
guns unlimbering and firing) at the level's ``SCRIPTED_ARMS_INTENSITY``, so that each
level beats the one below in a battle of all arms (``python -m benchmarks.scripted_ladder``);
an infantry battle in line gets exactly the orders of the arm-blind levels.
``docs/simulation.md`` ("Scripted opponents") gives each level's rules per arm.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from envs.sim import constants as C
from envs.sim import kernels
from envs.sim.config import BattleConfig
from envs.sim.engine import Geometry, pair_major, unit_major
from envs.sim.jit import kernel, read_only
from envs.sim.kernels import K_INV_TURN_RATE, K_SCRIPTED_HALT
from envs.sim.state import BattleState
from envs.sim.vector_math import atan2

F32 = np.float32
FIRE_BY_LEVEL = np.array((0.0, *C.SCRIPTED_FIRE_INTENSITY), dtype=F32)
"""Fire intensity of each level's infantry (index 0 unused)."""
ARMS_BY_LEVEL = np.array((0.0, *C.SCRIPTED_ARMS_INTENSITY), dtype=F32)
"""Intensity of each level's charges and gunfire (index 0 unused)."""
R_DEPLOY, R_SQUARE, R_UNSQUARE, R_CHARGE, R_SHY, R_UNLIMBER, R_GUN_RANGE = range(7)
"""Entries of :func:`arms_ranges`."""
INFANTRY, CAVALRY, ARTILLERY = (np.int8(C.INFANTRY), np.int8(C.CAVALRY),
                                np.int8(C.ARTILLERY))
LINE, COLUMN, SQUARE, LIMBERED = (np.int16(C.LINE), np.int16(C.COLUMN), np.int16(C.SQUARE),
                                  np.int16(C.LIMBERED))
KEEP = np.int8(C.KEEP_FORMATION)


@lru_cache(maxsize=64)
def arms_ranges(config: BattleConfig) -> np.ndarray:
    """The float32 distances (metres) the arm-aware levels act on, in the order of the
    ``R_*`` indices (read only)."""
    ranges = np.array((C.SCRIPTED_DEPLOY_WITHIN, C.SCRIPTED_SQUARE_WITHIN,
                       C.SCRIPTED_UNSQUARE_BEYOND, C.SCRIPTED_CHARGE_WITHIN,
                       C.SCRIPTED_CAVALRY_SHY,
                       C.SCRIPTED_UNLIMBER_FRACTION * config.artillery_fire_range,
                       config.artillery_fire_range), dtype=F32)
    return read_only(ranges)


@kernel(inline="always")
def _among_nearest(i, j, b, c, routed, destroyed, dist, nearest):
    """Whether enemy ``j`` is in the fight and at the nearest range (``nearest[c]``) of
    those from ``i`` in battle ``b``."""
    return (not (routed[j, b] | destroyed[j, b])) & (dist[i, j, b] <= nearest[c])


@kernel()
def scripted_orders(lo, hi, i, levels, team, routed, destroyed, dist, facing_cos, facing_sin, k,
                    fire_by_level, chosen, move, rotate, fire):
    """Orders on the map of unit ``i`` in battles ``lo`` to ``hi - 1``, each commanded at
    its ``levels[b]``, from the unit-major state and geometry at the start of the step:
    written into ``move[b]``, ``rotate[b]`` and ``fire[b]`` where ``chosen[b]`` (the
    other battles' entries are left as they are). Battles are the inner loop, so the
    orders are worked out across SIMD lanes."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    n = team.shape[0]
    width = hi - lo
    nearest = np.full(width, np.inf, F32)
    count = np.zeros(width, np.int32)
    bearing_cos = np.zeros(width, np.float64)
    bearing_sin = np.zeros(width, np.float64)
    for j in range(n):
        if team[j] == team[i]:
            continue
        for c in range(hi - lo):
            b = lo + c
            if not (routed[j, b] | destroyed[j, b]):
                nearest[c] = min(nearest[c], dist[i, j, b])
    # Ties (two enemies at exactly the same range) average their bearings; like the
    # reference NumPy code, the bearing is worked out in float64.
    for j in range(n):
        if team[j] == team[i]:
            continue
        for c in range(hi - lo):
            b = lo + c
            if _among_nearest(i, j, b, c, routed, destroyed, dist, nearest):
                count[c] += 1
    for j in range(n):
        if team[j] == team[i]:
            continue
        for c in range(hi - lo):
            b = lo + c
            if _among_nearest(i, j, b, c, routed, destroyed, dist, nearest):
                bearing_cos[c] += (np.float64(facing_cos[i, j, b])
                                   * (1.0 / max(count[c], 1)))
        for c in range(hi - lo):
            b = lo + c
            if _among_nearest(i, j, b, c, routed, destroyed, dist, nearest):
                bearing_sin[c] += (np.float64(facing_sin[i, j, b])
                                   * (1.0 / max(count[c], 1)))
    inv_turn_rate, halt = np.float64(k[K_INV_TURN_RATE]), k[K_SCRIPTED_HALT]
    for c in range(hi - lo):
        b = lo + c
        turning = (levels[b] >= 2) & (count[c] > 0)
        turn = min(max(atan2(bearing_sin[c], bearing_cos[c]) * inv_turn_rate, -1.0), 1.0)
        if chosen[b]:
            rotate[b] = F32(turn) if turning else F32(0)
    for c in range(hi - lo):
        b = lo + c
        advancing = (levels[b] >= 3) & (count[c] > 0) & (nearest[c] > halt)
        if chosen[b]:
            move[b] = F32(1) if advancing else F32(0)
    for c in range(hi - lo):
        b = lo + c
        if chosen[b]:
            fire[b] = fire_by_level[levels[b]]


@kernel()
def arms_orders(i, levels, arm, formation, team, routed, destroyed, dist, facing_cos,
                facing_sin, k, ranges, arms_by_level, move, rotate, fire, form):
    """Unit ``i``'s orders in every battle adapted to its arm at its level (module
    docstring): ``move``, ``rotate`` and ``fire`` (B,) hold the arm-blind orders of
    :func:`scripted_orders` and are overwritten where the arm commands otherwise; its
    formation orders are written into ``form`` (B,), ``KEEP`` where it keeps its
    formation."""
    n = team.shape[0]
    inv_turn_rate = np.float64(k[K_INV_TURN_RATE])
    for b in range(levels.shape[0]):
        form[b] = KEEP
        # The level from which each arm acts as its arm (docs/simulation.md).
        first = 3 if arm[i] == INFANTRY else 2 if arm[i] == CAVALRY else 4
        level = levels[b]
        if level < first or routed[i, b] or destroyed[i, b]:
            continue
        near, horse, prey, nearest, target = np.inf, np.inf, np.inf, -1, -1
        for j in range(n):
            if team[j] == team[i] or routed[j, b] or destroyed[j, b]:
                continue
            d = dist[i, j, b]
            if d < near:
                near, nearest = d, j
            if arm[j] == CAVALRY:
                horse = min(horse, d)
            if formation[j, b] != SQUARE and d < prey:
                prey, target = d, j
        if nearest < 0:
            continue
        own = formation[i, b]
        if arm[i] == INFANTRY:
            if own == COLUMN and near <= ranges[R_DEPLOY]:
                form[b] = LINE
            if level == 5:
                if horse <= ranges[R_SQUARE]:
                    form[b] = SQUARE
                elif own == SQUARE:
                    form[b] = LINE if horse > ranges[R_UNSQUARE] else KEEP
                if own == SQUARE or form[b] == SQUARE:
                    move[b] = F32(0)
                elif arm[nearest] == ARTILLERY:
                    move[b] = F32(1)
        elif arm[i] == CAVALRY:
            charge = arms_by_level[level]
            if level < 5:
                move[b] = F32(1)
                fire[b] = charge if near <= ranges[R_CHARGE] else F32(0)
            elif target >= 0:
                turn = atan2(np.float64(facing_sin[i, target, b]),
                             np.float64(facing_cos[i, target, b])) * inv_turn_rate
                rotate[b] = F32(min(max(turn, -1.0), 1.0))
                move[b] = F32(1)
                fire[b] = charge if prey <= ranges[R_CHARGE] else F32(0)
            else:
                move[b] = F32(-1) if near < ranges[R_SHY] else F32(0)
                fire[b] = F32(0)
        elif own == LIMBERED:  # guns on the move
            fire[b] = F32(0)
            move[b] = F32(0) if near <= ranges[R_UNLIMBER] else F32(1)
            form[b] = LINE if near <= ranges[R_UNLIMBER] else KEEP
        else:  # guns in battery stand and fire
            move[b] = F32(0)
            fire[b] = arms_by_level[level]
            if level == 5 and near > ranges[R_GUN_RANGE]:
                form[b] = LIMBERED


@kernel()
def scripted_kernel(units, levels, team, arm, formation, routed, destroyed, dist, facing_cos,
                    facing_sin, k, ranges, fire_by_level, arms_by_level, out, forms):
    """Orders of the scripted ``units`` of every battle into ``out`` (B, len(units), 3)
    and their formation orders into ``forms`` (B, len(units))."""
    batch = levels.shape[0]
    everyone = np.ones(batch, np.bool_)
    for slot in range(units.shape[0]):
        scripted_orders(0, batch, units[slot], levels, team, routed, destroyed, dist,
                        facing_cos, facing_sin, k, fire_by_level, everyone, out[:, slot, 0],
                        out[:, slot, 1], out[:, slot, 2])
        arms_orders(units[slot], levels, arm, formation, team, routed, destroyed, dist,
                    facing_cos, facing_sin, k, ranges, arms_by_level, out[:, slot, 0],
                    out[:, slot, 1], out[:, slot, 2], forms[:, slot])


def scripted_actions(state: BattleState, geometry: Geometry, units: np.ndarray,
                     levels: np.ndarray, config: BattleConfig,
                     formations: np.ndarray | None = None) -> np.ndarray:
    """Actions of scripted units.

    Args:
        state: current batch state.
        geometry: :func:`envs.sim.engine.sense` of ``state``.
        units: (k,) indices of the units to command.
        levels: (B,) curriculum level (1..5) of each battle.
        config: the battle model's parameters.
        formations: a (B, k) int8 array to write the units' formation orders into
            (:data:`~envs.sim.constants.KEEP_FORMATION` to keep, as
            :func:`envs.sim.engine.step` takes them), or None when the caller keeps
            every formation (an infantry battle in line needs none).

    Returns:
        (B, k, 3) float32 ``[move, rotate, fire]``.

    Raises:
        ValueError: for ``formations`` that is not a writable, C-contiguous (B, k) int8
            array.
    """
    rows, cols = state.grid_shape
    units = np.asarray(units, dtype=np.intp)
    shape = (state.batch_size, len(units))
    if formations is None:
        formations = np.empty(shape, np.int8)
    elif (not isinstance(formations, np.ndarray) or formations.shape != shape
          or formations.dtype != np.int8 or not formations.flags.writeable
          or not formations.flags.c_contiguous):
        got = getattr(formations, "dtype", type(formations))
        raise ValueError(f"formations is invalid: expected None or a writable, C-contiguous "
                         f"{shape} int8 array, got {got} {getattr(formations, 'shape', '')}")
    out = np.empty((*shape, C.ACTION_DIM), F32)
    scripted_kernel(units, read_only(np.asarray(levels, dtype=np.int8)),
                    np.ascontiguousarray(state.team, dtype=np.int8),
                    np.ascontiguousarray(state.arm, dtype=np.int8),
                    unit_major(state.formation),
                    unit_major(state.routed), unit_major(state.destroyed),
                    pair_major(geometry.dist), pair_major(geometry.facing_cos),
                    pair_major(geometry.facing_sin), kernels.constants(config, rows, cols),
                    arms_ranges(config), FIRE_BY_LEVEL, ARMS_BY_LEVEL, out, formations)
    return out

