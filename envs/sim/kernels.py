"""The battle step as compiled kernels (Numba): one loop over battles, then over units.

:func:`envs.sim.engine.step` and :func:`envs.sim.engine.sense` call these; the model is
the one ``docs/simulation.md`` describes, computed in the same float32 operations in
the same order as the NumPy engine they replace (the golden battles of
``tests/sim/golden.py`` hold them to it). Only ``cos``, ``sin`` and the power of the hit
chance may round differently in the last bit, as LLVM's and NumPy's float32 routines
do.

Arrays come unit-major, ``(U, B)`` per unit and ``(U, U, B)`` per pair, the layout the
rest of the engine keeps (the public ``(B, U)`` arrays are their transposes). Every
constant arrives as a float32 in the vector ``k`` (indices below), so that the
kernels compile once for every battle model.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import prange

from envs.sim import random as rnd
from envs.sim.constants import (
    ARM_FORMATIONS,
    ARM_NAMES,
    ARTILLERY,
    CAVALRY,
    FORMATION_NAMES,
    INFANTRY,
    SCRIPTED_HALT_FRACTION,
    SQUARE,
)
from envs.sim.jit import kernel
from envs.sim.vector_math import sincos, wrap_angle

F32 = np.float32

# Indices into the constants vector built by :func:`constants`.
K_MAX_TURN_RATE, K_HILL, K_FOREST, K_BACKWARD, K_STEP_LENGTH = 0, 1, 2, 3, 4
K_WIDTH, K_HEIGHT, K_FIRE_RANGE, K_INV_FIRE_RANGE, K_COS_FIRE_ARC = 5, 6, 7, 8, 9
K_HIT_EXPONENT, K_MOVING_PENALTY, K_TURNING_PENALTY, K_VOLLEY_DAMAGE = 10, 11, 12, 13
K_COS_FRONT, K_COS_REAR, K_FLANK_MULT, K_REAR_MULT, K_HEIGHT_ADVANTAGE = 14, 15, 16, 17, 18
K_COVER_PROTECTION, K_MORALE_PER_DAMAGE, K_FLANK_MORALE, K_REAR_MORALE = 19, 20, 21, 22
K_VOLLEY_SHOCK, K_MORALE_RECOVERY, K_RELOAD, K_DESTROYED, K_ROUT = 23, 24, 25, 26, 27
K_EYE_HEIGHT, K_COLS_PER_WIDTH, K_ROWS_PER_HEIGHT = 28, 29, 30
K_INV_WIDTH, K_INV_HEIGHT, K_INV_DIAGONAL, K_INV_MAX_STEPS = 31, 32, 33, 34
K_INV_TURN_RATE, K_SCRIPTED_HALT = 35, 36
K_MELEE_DAMAGE, K_CHARGE_IMPACT, K_CHARGE_SPEED, K_DISORDER = 37, 38, 39, 40
K_MELEE_MORALE, K_MELEE_REACH = 41, 42
CHUNK = 256
"""Battles a thread steps together, phase by phase: a few SIMD vectors wide, and few
enough that their terrain stays in the core's cache while each phase loops over them.
A large batch's chunks are spread over Numba's threads."""
PARALLEL_MIN_BATTLES = 512
"""Batches of at least this many battles step on every Numba thread; smaller ones on one
(starting the threads costs more than it saves, and idle OpenMP threads spin)."""


@kernel(inline="always")
def chunk_count(batch):
    """Chunks of :data:`CHUNK` battles (the last one shorter) covering ``batch`` battles."""
    return (batch + CHUNK - 1) // CHUNK

_NAMES = ("max_turn_rate", "hill_speed_factor", "forest_speed_penalty",
          "backward_speed_fraction", "step_length", "map_width", "map_height", "fire_range",
          "inv_fire_range", "cos_fire_arc", "hit_falloff_exponent", "moving_fire_penalty",
          "turning_fire_penalty", "volley_damage", "cos_front", "cos_rear",
          "flank_damage_multiplier", "rear_damage_multiplier", "height_advantage",
          "cover_protection", "morale_per_damage", "flank_morale_extra", "rear_morale_extra",
          "volley_shock", "morale_recovery", "reload_rate", "destroyed_threshold",
          "rout_threshold", "eye_height")
_MELEE_NAMES = ("melee_damage", "charge_impact", "charge_speed", "disorder_melee",
                "melee_morale_extra", "melee_reach")
"""The model-wide melee constants, at ``K_MELEE_DAMAGE`` onwards."""


def set_num_threads(n: int) -> None:
    """Threads the kernels spread a batch's battles over (Numba's; default: every core,
    or ``NUMBA_NUM_THREADS``). A process sharing the machine with others, such as a Ray
    worker reserving one CPU, sets it to its share so the cores are not oversubscribed.

    Raises:
        ValueError: for a count below 1 or above Numba's thread pool.
    """
    import numba

    if not isinstance(n, int) or not 1 <= n <= numba.config.NUMBA_NUM_THREADS:
        raise ValueError(f"n={n!r} is invalid: expected an integer in 1.."
                         f"{numba.config.NUMBA_NUM_THREADS}")
    numba.set_num_threads(n)


@lru_cache(maxsize=64)
def constants(config, rows: int, cols: int) -> np.ndarray:
    """The float32 constants vector of ``config`` (a BattleConfig) on a rows x cols grid
    (built once per model and grid: the step asks for it every time)."""
    k = config.f32
    values = [getattr(k, name) for name in _NAMES]
    values += [F32(cols / config.map_width), F32(rows / config.map_height),
               F32(1) / k.map_width, F32(1) / k.map_height, F32(1 / config.diagonal),
               F32(1 / config.max_steps), F32(1 / config.max_turn_rate),
               F32(SCRIPTED_HALT_FRACTION * config.fire_range)]
    values += [getattr(k, name) for name in _MELEE_NAMES]
    vector = np.array(values, dtype=F32)
    vector.flags.writeable = False
    return vector


# Columns of the arms table (:func:`arms_table`), one row per arm and formation
# (row ``arm * N_FORMATIONS + formation``).
A_SPEED, A_FIREPOWER, A_EXPOSURE, A_CAVALRY_DEFENCE, A_RANGE, A_INV_RANGE = 0, 1, 2, 3, 4, 5
A_EXPONENT, A_COS_ARC, A_RELOAD, A_MELEE, A_RADIUS, A_DRILL, A_MORALE = 6, 7, 8, 9, 10, 11, 12
A_ALL_ROUND, A_ALLOWED, A_CHARGES = 13, 14, 15
ARMS_FIELDS = 16
N_FORMATIONS = len(FORMATION_NAMES)
ALL_ROUND_ARC = F32(-2)
"""The arc cosine of a square: every bearing's cosine exceeds it."""


@lru_cache(maxsize=64)
def arms_table(config) -> np.ndarray:
    """The float32 arms table of ``config`` (a BattleConfig): per arm and formation its
    speed, volley, exposure to guns and to a charge, fire range and arc, reload, melee,
    frontage, drill time and morale, as ``docs/simulation.md`` tabulates them (columns
    ``A_*``); the model-wide melee constants are in :func:`constants`."""
    table = np.zeros((len(ARM_NAMES) * N_FORMATIONS, ARMS_FIELDS), np.float64)
    fire = {INFANTRY: (config.fire_range, config.hit_falloff_exponent, config.fire_arc,
                       config.reload_rate, config.volley_damage),
            CAVALRY: (0.0, 1.0, 0.0, 0.0, 0.0),
            ARTILLERY: (config.artillery_fire_range, config.artillery_hit_exponent,
                        config.artillery_fire_arc, config.artillery_reload_rate,
                        config.artillery_volley_damage)}
    for arm in range(len(ARM_NAMES)):
        fire_range, exponent, arc, reload, volley = fire[arm]
        for formation in range(N_FORMATIONS):
            row = table[arm * N_FORMATIONS + formation]
            row[A_SPEED] = config.arm_speed[arm][formation]
            row[A_FIREPOWER] = volley * config.arm_firepower[arm][formation]
            row[A_EXPOSURE] = config.arm_exposure[arm][formation]
            row[A_CAVALRY_DEFENCE] = config.arm_cavalry_defence[arm][formation]
            row[A_RANGE] = fire_range
            row[A_INV_RANGE] = 1 / fire_range if fire_range > 0 else 0.0
            row[A_EXPONENT] = exponent
            row[A_COS_ARC] = ALL_ROUND_ARC if formation == SQUARE else np.cos(arc)
            row[A_RELOAD] = reload
            row[A_MELEE] = config.arm_melee[arm]
            row[A_RADIUS] = config.arm_radius[arm]
            row[A_DRILL] = config.arm_drill_steps[arm]
            row[A_MORALE] = config.arm_morale[arm]
            row[A_ALL_ROUND] = formation == SQUARE
            row[A_ALLOWED] = formation in ARM_FORMATIONS[arm]
            row[A_CHARGES] = arm == CAVALRY
    table = table.astype(F32)
    table.flags.writeable = False
    return table


_ROUT_OFFSET = rnd.stream_offset(rnd.STREAM_ROUT)


@kernel(inline="always")
def _patch(patches, b, gx, gy, rows, cols):
    """Bilinear ground height at grid coordinates already clamped to the cell centres."""
    c0 = min(np.int32(gx), np.int32(max(cols - 2, 0)))
    r0 = min(np.int32(gy), np.int32(max(rows - 2, 0)))
    u = gx - F32(c0)
    v = gy - F32(r0)
    a = patches[b, r0, c0, 0]
    pb = patches[b, r0, c0, 1]
    pc = patches[b, r0, c0, 2]
    pd = patches[b, r0, c0, 3]
    return a + u * pb + v * (pc + u * pd)


@kernel(inline="always")
def _grid(x, y, k, rows, cols):
    """Grid coordinates of a point, clamped to the outermost cell centres."""
    half, zero = F32(0.5), F32(0)
    gx = min(max(x * k[K_COLS_PER_WIDTH] - half, zero), F32(cols - 1))
    gy = min(max(y * k[K_ROWS_PER_HEIGHT] - half, zero), F32(rows - 1))
    return gx, gy


@kernel(inline="always")
def _cell(grid, b, x, y, k, rows, cols):
    """The value of the cell of a per-battle (B, rows, cols) grid under a point."""
    col = min(np.int32(x * k[K_COLS_PER_WIDTH]), np.int32(cols - 1))
    row = min(np.int32(y * k[K_ROWS_PER_HEIGHT]), np.int32(rows - 1))
    return grid[b, row, col]


@kernel(inline="always")
def _can_hit(i, j, b, c, active, los, dist, facing_cos, fire_range, arc):
    """Whether ``i`` can fire at enemy ``j`` in battle ``b`` (column ``c`` of ``active``
    and ``arc``, the step's scratch): both in the fight, in sight, in range
    (``fire_range``, ``i``'s arm's), in ``i``'s arc (``arc``, the cosine of its
    half-angle in its formation)."""
    return (active[i, c] & active[j, c] & los[i, j, b]
            & (dist[i, j, b] <= fire_range) & (facing_cos[i, j, b] > arc[i, c]))


@kernel(inline="always")
def _fires_at(i, j, b, c, active, los, dist, facing_cos, near, fire_range, arc):
    """Whether ``i`` fires at ``j`` in battle ``b``: it can hit it and no enemy it can hit
    is nearer (``near``, the step's scratch row of those ranges, column ``c``)."""
    return _can_hit(i, j, b, c, active, los, dist, facing_cos, fire_range, arc) \
        & (dist[i, j, b] <= near[i, c])


@kernel(inline="always")
def _ground(patches, cover_map, b, x, y, k, rows, cols):
    """Relative height (bilinear) and cover density of the ground at a point of battle ``b``."""
    gx, gy = _grid(x, y, k, rows, cols)
    return _patch(patches, b, gx, gy, rows, cols), _cell(cover_map, b, x, y, k, rows, cols)


@kernel()
def sight(lo, hi, x, y, cos_h, sin_h, team, patches, cover_map, k, samples, out_elev,
          out_cover, dx, dy, dist, facing_cos, facing_sin, los):
    """Sight of battles ``lo`` to ``hi - 1`` from unit-major positions and headings, written
    in place. The loops run over battles innermost, so LLVM vectorises the pairs'
    arithmetic across battles."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    n = x.shape[0]
    rows, cols = patches.shape[1], patches.shape[2]
    for i in range(n):
        for c in range(hi - lo):
            b = lo + c
            out_elev[i, b], out_cover[i, b] = _ground(patches, cover_map, b, x[i, b], y[i, b],
                                                      k, rows, cols)
    one, floor = F32(1), F32(1e-3)
    # One or two arrays written a loop, so that each vectorises (see step_battles).
    for i in range(n):
        for j in range(n):
            for c in range(hi - lo):
                b = lo + c
                dx[i, j, b] = x[j, b] - x[i, b]
                dy[i, j, b] = y[j, b] - y[i, b]
            for c in range(hi - lo):
                b = lo + c
                dist[i, j, b] = np.sqrt(dx[i, j, b] * dx[i, j, b] + dy[i, j, b] * dy[i, j, b])
            for c in range(hi - lo):
                b = lo + c
                facing_cos[i, j, b] = ((dx[i, j, b] * cos_h[i, b] + dy[i, j, b] * sin_h[i, b])
                                       * (one / max(dist[i, j, b], floor)))
            for c in range(hi - lo):
                b = lo + c
                facing_sin[i, j, b] = ((dy[i, j, b] * cos_h[i, b] - dx[i, j, b] * sin_h[i, b])
                                       * (one / max(dist[i, j, b], floor)))
            for c in range(hi - lo):
                b = lo + c
                los[i, j, b] = True
    # A sight line is blocked where the ground at any of its samples rises above it.
    # LLVM does not vectorise the ground's gathers on this CPU, so this loop is scalar,
    # battle by battle, and stops at the first blocking sample.
    eye = k[K_EYE_HEIGHT]
    denominator = F32(samples + 1)
    for i in range(n):
        for j in range(i + 1, n):
            if team[i] == team[j]:
                continue
            for c in range(hi - lo):
                b = lo + c
                gx0, gy0 = _grid(x[i, b], y[i, b], k, rows, cols)
                gx1, gy1 = _grid(x[j, b], y[j, b], k, rows, cols)
                e0 = out_elev[i, b]
                sight = e0 + eye
                rise = out_elev[j, b] - e0
                across, up = gx1 - gx0, gy1 - gy0
                clear = True
                for s in range(1, samples + 1):
                    t = F32(s) / denominator
                    if _patch(patches, b, gx0 + across * t, gy0 + up * t, rows, cols) \
                            > sight + rise * t:
                        clear = False
                        break
                los[i, j, b] = clear
                los[j, i, b] = clear


@kernel()
def sense_battles(lo, hi, x, y, theta, team, patches, cover_map, k, samples, cos_h, sin_h,
                  elevation, cover, dx, dy, dist, facing_cos, facing_sin, los):
    """Headings' cosines and sines, then :func:`sight`, of battles ``lo`` to ``hi - 1``
    (unit-major, written in place): the geometry of battles just deployed."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    for i in range(x.shape[0]):
        for c in range(hi - lo):
            b = lo + c
            cos_h[i, b], sin_h[i, b] = sincos(theta[i, b])
    sight(lo, hi, x, y, cos_h, sin_h, team, patches, cover_map, k, samples, elevation, cover,
          dx, dy, dist, facing_cos, facing_sin, los)


@kernel()
def sense_kernel(x, y, theta, team, patches, cover_map, k, samples):
    """:func:`envs.sim.engine.sense` over a batch: unit-major arrays in, geometry out."""
    n, batch = x.shape
    cos_h = np.empty((n, batch), F32)
    sin_h = np.empty((n, batch), F32)
    elevation = np.empty((n, batch), F32)
    cover = np.empty((n, batch), F32)
    dx = np.empty((n, n, batch), F32)
    dy = np.empty((n, n, batch), F32)
    dist = np.empty((n, n, batch), F32)
    facing_cos = np.empty((n, n, batch), F32)
    facing_sin = np.empty((n, n, batch), F32)
    los = np.empty((n, n, batch), np.bool_)
    # np.intp(0), not 0: see "Literal arguments" in envs.sim.jit.
    sense_battles(np.intp(0), batch, x, y, theta, team, patches, cover_map, k, samples, cos_h,
                  sin_h, elevation, cover, dx, dy, dist, facing_cos, facing_sin, los)
    return cos_h, sin_h, dx, dy, dist, facing_cos, facing_sin, elevation, cover, los


# The step's outputs are written into five blocks the caller allocates (so that one
# allocation serves a whole state and nothing is boxed on the way back), indexed:
U_X, U_Y, U_THETA, U_STRENGTH, U_MORALE, U_READINESS = 0, 1, 2, 3, 4, 5
U_COS, U_SIN, U_ELEVATION, U_COVER, U_VOLLEY, U_DEALT, U_TAKEN = 6, 7, 8, 9, 10, 11, 12
UNIT_FLOATS = 13
"""``units`` (UNIT_FLOATS, U, B) float32: the new state, heading cosine and sine, the
ground under each unit, and the step's volleys, damage dealt and taken."""
F_ROUTED, F_DESTROYED = 0, 1
UNIT_FLAGS = 2
"""``flags`` (UNIT_FLAGS, U, B) bool: routed and destroyed."""
P_DX, P_DY, P_DIST, P_FACING_COS, P_FACING_SIN = 0, 1, 2, 3, 4
PAIR_FLOATS = 5
"""``pairs`` (PAIR_FLOATS, U, U, B) float32: offsets, distance and facing of each pair;
``los`` (U, U, B) bool and ``target`` (U, B) int32 complete the outputs."""


@kernel(inline="always")
def unit_rows(units):
    """The rows of ``units`` in ``U_*`` order: x, y, theta, strength, morale, readiness,
    heading cosine and sine, elevation, cover, volley, damage dealt, damage taken."""
    return (units[U_X], units[U_Y], units[U_THETA], units[U_STRENGTH], units[U_MORALE],
            units[U_READINESS], units[U_COS], units[U_SIN], units[U_ELEVATION],
            units[U_COVER], units[U_VOLLEY], units[U_DEALT], units[U_TAKEN])


SCRATCH_FLOATS = 14
(S_MOVE, S_ROTATE, S_FIRE, S_LIVE, S_FIREPOWER, S_NEAR, S_INCOMING, S_SHARE, S_SHAKEN, S_ARC,
 S_EXPOSURE, S_GUARD, S_STEADY, S_MELEE) = range(SCRATCH_FLOATS)
"""Rows of the float block of :func:`step_scratch`."""


@kernel()
def step_scratch(n, width):
    """Working rows of one thread's step over ``width`` battles: per unit and battle the
    orders applied (move, rotate, fire), whether it is in the fight (``live`` as 1 or 0
    and ``active``), its shots' firepower, targets, range and share, the damage coming
    in, its loss share and morale shock, its arc, exposure to guns, defence against a
    charge, steadiness in melee and the melee damage coming in; per pair the damage;
    per unit the enemies it fights hand to hand."""
    return (np.empty((SCRATCH_FLOATS, n, width), F32), np.empty((n, width), np.bool_),
            np.empty((n, n, width), F32), np.empty((n, width), np.int32),
            np.empty((n, width), np.int32))


@kernel(inline="always")
def _flank_rear(arrival, arc, cos_front, cos_rear):
    """Whether a blow arriving at cosine ``arrival`` off the target's front strikes its
    flank and its rear (1 or 0 each); a square (``arc``, its arc cosine, all round) has
    neither."""
    zero, one = F32(0), F32(1)
    formed = arc > ALL_ROUND_ARC
    return (one if (arrival <= cos_front) & formed else zero,
            one if (arrival < cos_rear) & formed else zero)


@kernel(inline="always")
def _arm_row(arm, formation):
    """The arms table's row of an arm in a formation."""
    return np.int32(arm) * np.int32(N_FORMATIONS) + np.int32(formation)


# The step's phases, in the order step_battles calls them (its docstring says how their
# loops vectorise). Each is inlined into it (Numba's inline="always"): a call passing
# this many arrays costs more than a phase's work in a small battle, and inlined they
# compile to the same loops as one function. A phase reads its constants from ``k`` into
# locals outside its loops: a load from ``k`` inside a loop would be one more array LLVM
# must prove apart from the loop's stores to vectorise it. A phase takes at most 30
# arguments: Python compiles a longer call as ``f(*args)``, which Numba cannot inline.


@kernel(inline="always")
def _drill(lo, hi, n, arm, table, formation0, drill0, drill_orders, routed0, destroyed0,
           formation, drill):
    """Drill: a formation order the arm can take starts a change (the unit stands and
    holds its fire for the arm's drill steps); otherwise a change under way goes on.
    Writes each unit's new ``formation`` and ``drill`` steps left."""
    zero = F32(0)
    for i in range(n):
        base = _arm_row(arm[i], 0)
        drill_steps = np.int16(table[base, A_DRILL])
        for c in range(hi - lo):
            b = lo + c
            wanted = drill_orders[i, b]
            starts = ((wanted >= 0) & (wanted != formation0[i, b]) & (drill0[i, b] == 0)
                      & (not (routed0[i, b] | destroyed0[i, b])))
            if starts:
                starts = table[base + wanted, A_ALLOWED] > zero
            formation[i, b] = wanted if starts else formation0[i, b]
            drill[i, b] = drill_steps if starts else max(drill0[i, b] - 1, 0)


@kernel(inline="always")
def _obey(lo, hi, n, routed0, destroyed0, drill, orders, low, high, active, live, move,
          rotate, fire):
    """Orders: who is in the fight (``active``; ``live`` as 1 or 0 also excludes a unit
    changing formation, which obeys no order until it is done) and the orders each
    applies, clipped to their bounds (``move``, ``rotate``, ``fire``; 0 when not live)."""
    zero, one = F32(0), F32(1)
    for i in range(n):
        for c in range(hi - lo):
            b = lo + c
            active[i, c] = not (routed0[i, b] | destroyed0[i, b])
        for c in range(hi - lo):
            b = lo + c
            live[i, c] = one if active[i, c] & (drill[i, b] == 0) else zero
        for c in range(hi - lo):
            b = lo + c
            move[i, c] = min(max(orders[0, i, b], low[0]), high[0]) * live[i, c]
        for c in range(hi - lo):
            b = lo + c
            rotate[i, c] = min(max(orders[1, i, b], low[1]), high[1]) * live[i, c]
        for c in range(hi - lo):
            b = lo + c
            fire[i, c] = min(max(orders[2, i, b], low[2]), high[2]) * live[i, c]


@kernel(inline="always")
def _manoeuvre(lo, hi, n, arm, table, formation, x0, y0, theta0, known, ground0, cover0,
               going_map, patches, cover_map, k, move, rotate, fire, x, y, theta, cos_h, sin_h,
               elevation, cover, steady):
    """Manoeuvre: wheel, then march along the new heading over the ground one stood on
    (``ground0``/``cover0`` when ``known``, else looked up into ``elevation``/``cover``),
    never onto impassable ground. Writes the new positions and headings."""
    rows, cols = patches.shape[1], patches.shape[2]
    zero, one = F32(0), F32(1)
    two_pi = F32(2 * np.pi)
    turn_rate, hill, forest, backward = (k[K_MAX_TURN_RATE], k[K_HILL], k[K_FOREST],
                                         k[K_BACKWARD])
    step_length, width, height = k[K_STEP_LENGTH], k[K_WIDTH], k[K_HEIGHT]
    charge_speed = k[K_CHARGE_SPEED]
    for i in range(n):
        base = _arm_row(arm[i], 0)
        charges = table[base, A_CHARGES]
        if not known:
            for c in range(hi - lo):
                b = lo + c
                elevation[i, b], cover[i, b] = _ground(patches, cover_map, b, x0[i, b],
                                                       y0[i, b], k, rows, cols)
        under_rows = ground0 if known else elevation
        wood_rows = cover0 if known else cover
        for c in range(hi - lo):
            b = lo + c
            theta[i, b] = wrap_angle(theta0[i, b] + rotate[i, c] * turn_rate, two_pi)
        for c in range(hi - lo):
            b = lo + c
            cos_h[i, b], sin_h[i, b] = sincos(theta[i, b])
        for c in range(hi - lo):
            b = lo + c
            # Cavalry's fire order is its charge: forward at up to charge_speed.
            forward = one if move[i, c] > zero else zero
            gait = one + (charge_speed - one) * (fire[i, c] * forward * charges)
            steady[i, c] = table[base + formation[i, b], A_SPEED] * gait
        for c in range(hi - lo):
            b = lo + c
            going = _cell(going_map, b, x0[i, b], y0[i, b], k, rows, cols)
            ground_speed = ((one - (one - hill) * under_rows[i, b]) - forest * wood_rows[i, b]) \
                * going * steady[i, c]
            pace = one - (one - backward) * (one if move[i, c] < zero else zero)
            stride = move[i, c] * pace * ground_speed * step_length
            x[i, b] = min(max(x0[i, b] + cos_h[i, b] * stride, zero), width)
            y[i, b] = min(max(y0[i, b] + sin_h[i, b] * stride, zero), height)
        for c in range(hi - lo):
            b = lo + c
            # Impassable ground (water, going 0) is not entered: the unit stays put.
            blocked = _cell(going_map, b, x[i, b], y[i, b], k, rows, cols) <= zero
            x[i, b] = x0[i, b] if blocked else x[i, b]
            y[i, b] = y0[i, b] if blocked else y[i, b]


@kernel(inline="always")
def _take_aim(lo, hi, n, arm, table, team, quality, formation, drill, active, los, dist,
              facing_cos, move, rotate, fire, readiness0, strength0, k, arc, exposure, guard,
              near, aim, target, volley, firepower, share):
    """Fire, aiming: each unit's stance in its formation (its fire ``arc``, ``exposure``
    to guns, ``guard`` against a charge), then its target, the nearest enemy in range, in
    the arc and in sight (ties share the volley: ``aim`` counts them, ``share`` is each
    one's part), the ``volley`` it gives and its ``firepower``."""
    zero, one = F32(0), F32(1)
    moving_penalty, turning_penalty = k[K_MOVING_PENALTY], k[K_TURNING_PENALTY]
    disorder = k[K_DISORDER]
    for i in range(n):
        base = _arm_row(arm[i], 0)
        fire_range = table[base, A_RANGE]
        for c in range(hi - lo):
            b = lo + c
            arc[i, c] = table[base + formation[i, b], A_COS_ARC]
        for c in range(hi - lo):
            b = lo + c
            exposure[i, c] = table[base + formation[i, b], A_EXPOSURE]
        for c in range(hi - lo):
            b = lo + c
            guard[i, c] = (table[base + formation[i, b], A_CAVALRY_DEFENCE]
                           * (disorder if drill[i, b] > 0 else one))
        for c in range(hi - lo):
            near[i, c] = F32(np.inf)
        for c in range(hi - lo):
            aim[i, c] = 0
        for c in range(hi - lo):
            b = lo + c
            target[i, b] = -1
        for j in range(n):
            if team[i] == team[j]:
                continue
            for c in range(hi - lo):
                b = lo + c
                if _can_hit(i, j, b, c, active, los, dist, facing_cos, fire_range, arc):
                    near[i, c] = min(near[i, c], dist[i, j, b])
        for j in range(n):
            if team[i] == team[j]:
                continue
            for c in range(hi - lo):
                b = lo + c
                if _fires_at(i, j, b, c, active, los, dist, facing_cos, near, fire_range, arc):
                    aim[i, c] += 1
            for c in range(hi - lo):
                b = lo + c
                if _fires_at(i, j, b, c, active, los, dist, facing_cos, near, fire_range, arc):
                    target[i, b] = j
        for c in range(hi - lo):
            b = lo + c
            volley[i, b] = fire[i, c] * readiness0[i, b] if aim[i, c] > 0 else zero
        for c in range(hi - lo):
            b = lo + c
            steadiness = ((one - moving_penalty * abs(move[i, c]))
                          * (one - turning_penalty * abs(rotate[i, c])))
            firepower[i, c] = (table[base + formation[i, b], A_FIREPOWER] * volley[i, b]
                               * strength0[i, b] * steadiness) * quality[i]
        for c in range(hi - lo):
            share[i, c] = one / F32(max(aim[i, c], 1))


@kernel(inline="always")
def _fire(lo, hi, n, arm, table, team, active, los, dist, facing_cos, near, arc, exposure,
          elevation, cover, firepower, share, k, raw):
    """Fire, hitting: the damage each unit's volley does to each enemy it fires at,
    into ``raw`` (0 for every other pair), by range, the side it strikes, the height
    between them and the target's cover (and, for guns, its exposure)."""
    zero, one = F32(0), F32(1)
    cos_front, cos_rear = k[K_COS_FRONT], k[K_COS_REAR]
    flank_mult, rear_mult, height_advantage = (k[K_FLANK_MULT], k[K_REAR_MULT],
                                               k[K_HEIGHT_ADVANTAGE])
    cover_protection = k[K_COVER_PROTECTION]
    for i in range(n):
        base = _arm_row(arm[i], 0)
        fire_range, inv_range = table[base, A_RANGE], table[base, A_INV_RANGE]
        exponent = table[base, A_EXPONENT]
        guns = arm[i] == ARTILLERY
        for j in range(n):
            if team[i] == team[j]:
                for c in range(hi - lo):
                    raw[i, j, c] = zero
                continue
            for c in range(hi - lo):
                b = lo + c
                d = dist[i, j, b]
                arrival = facing_cos[j, i, b]
                # A square has no flank or rear.
                flank, rear = _flank_rear(arrival, arc[j, c], cos_front, cos_rear)
                angle = (one + (flank_mult - one) * flank) + (rear_mult - flank_mult) * rear
                rise = one + height_advantage * (elevation[i, b] - elevation[j, b])
                protection = one - cover_protection * cover[j, b]
                chance = hit_chance_of(d, inv_range, exponent)
                hit = _fires_at(i, j, b, c, active, los, dist, facing_cos, near, fire_range,
                                arc)
                damage = (firepower[i, c] * share[i, c]) * (chance * angle * rise * protection)
                damage = damage * exposure[j, c] if guns else damage
                raw[i, j, c] = damage if hit else zero


@kernel(inline="always")
def _melee(lo, hi, n, arm, table, team, quality, active, dist, facing_cos, arc, guard, fire,
           strength0, k, contacts, melee_in, raw):
    """Melee: enemies within touching distance fight hand to hand, every unit spreading
    its effort over the enemies it touches (``contacts``); a charge multiplies cavalry's,
    a square or a column blunts it, a unit caught changing formation suffers more. Adds
    each blow to ``raw`` and the blows each unit takes to ``melee_in``."""
    zero, one = F32(0), F32(1)
    cos_front, cos_rear = k[K_COS_FRONT], k[K_COS_REAR]
    flank_mult, rear_mult = k[K_FLANK_MULT], k[K_REAR_MULT]
    melee_damage, charge_impact = k[K_MELEE_DAMAGE], k[K_CHARGE_IMPACT]
    reach_slack = k[K_MELEE_REACH]
    for i in range(n):
        for c in range(hi - lo):
            contacts[i, c] = 0
        for j in range(n):
            if team[i] == team[j]:
                continue
            reach = table[_arm_row(arm[i], 0), A_RADIUS] + table[_arm_row(arm[j], 0), A_RADIUS] \
                + reach_slack
            for c in range(hi - lo):
                b = lo + c
                touching = active[i, c] & active[j, c] & (dist[i, j, b] <= reach)
                contacts[i, c] += 1 if touching else 0
    for j in range(n):
        for c in range(hi - lo):
            melee_in[j, c] = zero
    for i in range(n):
        base = _arm_row(arm[i], 0)
        power = melee_damage * table[base, A_MELEE] * quality[i]
        charges = table[base, A_CHARGES]
        for j in range(n):
            if team[i] == team[j]:
                continue
            reach = table[base, A_RADIUS] + table[_arm_row(arm[j], 0), A_RADIUS] + reach_slack
            for c in range(hi - lo):
                b = lo + c
                touching = active[i, c] & active[j, c] & (dist[i, j, b] <= reach)
                arrival = facing_cos[j, i, b]
                flank, rear = _flank_rear(arrival, arc[j, c], cos_front, cos_rear)
                angle = (one + (flank_mult - one) * flank) + (rear_mult - flank_mult) * rear
                impetus = one + (charge_impact - one) * (fire[i, c] * charges)
                defence = one + (guard[j, c] - one) * charges
                blow = (power * strength0[i, b] * impetus * defence * angle
                        / F32(max(contacts[i, c], 1)))
                melee = blow if touching else zero
                raw[i, j, c] += melee
                melee_in[j, c] += melee


@kernel(inline="always")
def _share_losses(lo, hi, n, strength0, raw, incoming, share, taken, dealt):
    """Losses: a target cannot lose more than it has (``taken``, of the damage
    ``incoming``); its shooters share the loss (``share``, and ``raw`` becomes the damage
    applied, ``dealt`` its sum per shooter)."""
    zero = F32(0)
    for j in range(n):
        for c in range(hi - lo):
            incoming[j, c] = zero
        for i in range(n):
            for c in range(hi - lo):
                incoming[j, c] += raw[i, j, c]
        for c in range(hi - lo):
            b = lo + c
            taken[j, b] = min(incoming[j, c], strength0[j, b])
        for c in range(hi - lo):
            b = lo + c
            share[j, c] = taken[j, b] / max(incoming[j, c], F32(1e-12))
    for i in range(n):
        for j in range(n):
            for c in range(hi - lo):
                raw[i, j, c] = raw[i, j, c] * share[j, c]
        for c in range(hi - lo):
            b = lo + c
            dealt[i, b] = zero
        for j in range(n):
            for c in range(hi - lo):
                b = lo + c
                dealt[i, b] += raw[i, j, c]


@kernel(inline="always")
def _shock(lo, hi, n, arm, table, quality, facing_cos, arc, raw, taken, melee_in, share, k,
           shaken):
    """Morale shock: what each unit's losses cost its morale (``shaken``), more for
    blows to its flank or rear, for a heavy loss at once and for melee, divided by its
    arm's steadiness and its quality."""
    zero = F32(0)
    cos_front, cos_rear = k[K_COS_FRONT], k[K_COS_REAR]
    per_damage = k[K_MORALE_PER_DAMAGE]
    flank_morale, rear_morale, shock = k[K_FLANK_MORALE], k[K_REAR_MORALE], k[K_VOLLEY_SHOCK]
    melee_morale = k[K_MELEE_MORALE]
    for j in range(n):
        frailty = table[_arm_row(arm[j], 0), A_MORALE] / quality[j]
        for c in range(hi - lo):
            shaken[j, c] = zero
        for i in range(n):
            for c in range(hi - lo):
                b = lo + c
                arrival = facing_cos[j, i, b]
                flank, rear = _flank_rear(arrival, arc[j, c], cos_front, cos_rear)
                weight = per_damage + flank_morale * flank + (rear_morale - flank_morale) * rear
                shaken[j, c] += raw[i, j, c] * weight
        for c in range(hi - lo):
            b = lo + c
            shaken[j, c] += shock * taken[j, b] * taken[j, b]
        for c in range(hi - lo):
            shaken[j, c] = (shaken[j, c] + melee_morale * (melee_in[j, c] * share[j, c])) \
                * frailty


@kernel(inline="always")
def _casualties(lo, hi, n, arm, table, active, live, incoming, shaken, taken, volley,
                strength0, morale0, readiness0, routed0, destroyed0, step, key, k, strength,
                morale, readiness, routed, destroyed):
    """Casualties and morale: the new morale (recovering out of fire), strength and
    readiness (reloading), who is destroyed and who breaks and routs (a random draw
    against how far morale fell below the rout threshold)."""
    zero, one = F32(0), F32(1)
    recovery_rate, destroyed_at, rout_at = k[K_MORALE_RECOVERY], k[K_DESTROYED], k[K_ROUT]
    for i in range(n):
        reload = table[_arm_row(arm[i], 0), A_RELOAD]
        for c in range(hi - lo):
            b = lo + c
            quiet = one if incoming[i, c] <= zero else zero
            recovery = recovery_rate * ((one if active[i, c] else zero) * quiet)
            morale[i, b] = min(max(morale0[i, b] - shaken[i, c] + recovery, zero), one)
        for c in range(hi - lo):
            b = lo + c
            strength[i, b] = strength0[i, b] - taken[i, b]
        for c in range(hi - lo):
            b = lo + c
            r0 = readiness0[i, b]
            readiness[i, b] = r0 + live[i, c] * (min(r0 - volley[i, b] + reload, one) - r0)
        for c in range(hi - lo):
            b = lo + c
            destroyed[i, b] = destroyed0[i, b] | (strength[i, b] <= destroyed_at)
        for c in range(hi - lo):
            b = lo + c
            m = morale[i, b]
            draw = rnd.uniform_draw(key[b], step[b], i, _ROUT_OFFSET)
            breaks = active[i, c] & (not destroyed[i, b]) & (m < rout_at) \
                & (draw < one - m / rout_at)
            routed[i, b] = routed0[i, b] | breaks


@kernel()
def step_battles(lo, hi, x0, y0, theta0, strength0, morale0, readiness0, routed0, destroyed0,
                 step, key, team, patches, cover_map, orders, ground0, cover0, known, k,
                 samples, low, high, units, flags, pairs, los, target, scratch, arms):
    """Step battles ``lo`` to ``hi - 1``: unit-major state in, their rows of the output
    blocks written (``scratch`` is :func:`step_scratch` of the caller's thread, at least
    ``hi - lo`` wide). ``arms`` holds the order of battle: each unit's arm and quality
    (U,; quality multiplies its fire and melee and divides its morale losses), its
    formation and drill steps left before the step (U, B), the formation orders (U, B;
    :data:`~envs.sim.constants.KEEP_FORMATION` keeps), the going map (B, rows, cols), the
    arms table (:func:`arms_table`) and the (2, U, B) block the new formations and drill
    steps are written to.

    Each phase loops over units (and pairs) outside and over battles inside, so that
    LLVM vectorises the battles' arithmetic across SIMD lanes (sight lines, which gather
    the ground, stay battle by battle); the float32 operations and their order are
    those of one battle alone. Every loop over battles writes one or two arrays: with
    more, LLVM's runtime checks that they do not overlap the arrays read exceed its
    limit and the loop stays scalar."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    arm, quality, formation0, drill0, drill_orders, going_map, table, modes = arms
    (x, y, theta, strength, morale, readiness, cos_h, sin_h, elevation, cover, volley, dealt,
     taken) = unit_rows(units)
    routed, destroyed = flags[F_ROUTED], flags[F_DESTROYED]
    formation, drill = modes[0], modes[1]
    dx, dy, dist = pairs[P_DX], pairs[P_DY], pairs[P_DIST]
    facing_cos, facing_sin = pairs[P_FACING_COS], pairs[P_FACING_SIN]
    rows_, active, raw, aim, contacts = scratch
    move, rotate, fire, live = rows_[S_MOVE], rows_[S_ROTATE], rows_[S_FIRE], rows_[S_LIVE]
    firepower, near, incoming = rows_[S_FIREPOWER], rows_[S_NEAR], rows_[S_INCOMING]
    share, shaken, arc = rows_[S_SHARE], rows_[S_SHAKEN], rows_[S_ARC]
    exposure, guard, steady, melee_in = (rows_[S_EXPOSURE], rows_[S_GUARD], rows_[S_STEADY],
                                         rows_[S_MELEE])
    n = x0.shape[0]
    width, height = k[K_WIDTH], k[K_HEIGHT]

    _drill(lo, hi, n, arm, table, formation0, drill0, drill_orders, routed0, destroyed0,
           formation, drill)
    _obey(lo, hi, n, routed0, destroyed0, drill, orders, low, high, active, live, move, rotate,
          fire)
    _manoeuvre(lo, hi, n, arm, table, formation, x0, y0, theta0, known, ground0, cover0,
               going_map, patches, cover_map, k, move, rotate, fire, x, y, theta, cos_h, sin_h,
               elevation, cover, steady)
    _separate(lo, hi, n, arm, table, active, x, y, width, height)
    sight(lo, hi, x, y, cos_h, sin_h, team, patches, cover_map, k, samples, elevation,
          cover, dx, dy, dist, facing_cos, facing_sin, los)
    _take_aim(lo, hi, n, arm, table, team, quality, formation, drill, active, los, dist,
              facing_cos, move, rotate, fire, readiness0, strength0, k, arc, exposure, guard,
              near, aim, target, volley, firepower, share)
    _fire(lo, hi, n, arm, table, team, active, los, dist, facing_cos, near, arc, exposure,
          elevation, cover, firepower, share, k, raw)
    _melee(lo, hi, n, arm, table, team, quality, active, dist, facing_cos, arc, guard, fire,
           strength0, k, contacts, melee_in, raw)
    _share_losses(lo, hi, n, strength0, raw, incoming, share, taken, dealt)
    _shock(lo, hi, n, arm, table, quality, facing_cos, arc, raw, taken, melee_in, share, k,
           shaken)
    _casualties(lo, hi, n, arm, table, active, live, incoming, shaken, taken, volley,
                strength0, morale0, readiness0, routed0, destroyed0, step, key, k, strength,
                morale, readiness, routed, destroyed)


@kernel()
def _separate(lo, hi, n, arm, table, active, x, y, width, height):
    """Push apart every two units in the fight that stand closer than their radii allow,
    each half the overlap along the line between them (pair by pair, in index order;
    a unit exactly on another steps east of it), and keep them on the map."""
    zero, half = F32(0), F32(0.5)
    for i in range(n):
        for j in range(i + 1, n):
            apart = table[_arm_row(arm[i], 0), A_RADIUS] + table[_arm_row(arm[j], 0), A_RADIUS]
            if apart <= zero:
                continue
            for c in range(hi - lo):
                b = lo + c
                ox = x[j, b] - x[i, b]
                oy = y[j, b] - y[i, b]
                d = np.sqrt(ox * ox + oy * oy)
                push = (apart - d) * half if active[i, c] & active[j, c] & (d < apart) else zero
                ux = ox / d if d > zero else F32(1)
                uy = oy / d if d > zero else zero
                x[i, b] = min(max(x[i, b] - ux * push, zero), width)
                y[i, b] = min(max(y[i, b] - uy * push, zero), height)
                x[j, b] = min(max(x[j, b] + ux * push, zero), width)
                y[j, b] = min(max(y[j, b] + uy * push, zero), height)


@kernel(inline="always")
def unit_interval(a):
    """``a`` clamped to [-1, 1]: rounding can nudge a ratio of lengths just past 1, and
    observation spaces' bounds are exact."""
    return min(max(a, F32(-1)), F32(1))


@kernel(inline="always")
def hit_chance(dist, k):
    """Share of a volley that hits at ``dist`` metres, arc and sight aside: 1 at point
    blank, falling as ``(1 - dist / fire_range) ** hit_falloff_exponent`` to 0 at
    ``fire_range`` and beyond (float32). The fire model and the observations both
    read it from here."""
    return hit_chance_for(dist, k, k[K_HIT_EXPONENT])


@kernel(inline="always")
def hit_chance_for(dist, k, exponent):
    """:func:`hit_chance` with the exponent read once by the caller. The default
    exponent 2 squares, as NumPy does, in one multiplication that vectorises (a call
    to ``powf`` does not)."""
    return hit_chance_of(dist, k[K_INV_FIRE_RANGE], exponent)


@kernel(inline="always")
def hit_chance_of(dist, inv_fire_range, exponent):
    """:func:`hit_chance` with the constants read once by the caller (a loop that reads
    none of ``k`` has one array fewer to prove apart from its stores)."""
    base = max(F32(1) - dist * inv_fire_range, F32(0))
    return base * base if exponent == F32(2) else base ** exponent


@kernel()
def step_kernel(x0, y0, theta0, strength0, morale0, readiness0, routed0, destroyed0, step,
                key, team, patches, cover_map, orders, ground0, cover0, known, k, samples, low,
                high, units, flags, pairs, los, target, arms):
    """:func:`envs.sim.engine.step` over a batch, on one thread (see the engine's
    docstring for the model). ``orders`` is (3, U, B); ``ground0``/``cover0`` the ground
    under the units before the step when ``known`` (else looked up here). Writes the
    output blocks (see :data:`UNIT_FLOATS` and below)."""
    n, batch = x0.shape
    scratch = step_scratch(n, min(batch, CHUNK))
    for lo in range(0, batch, CHUNK):
        step_battles(lo, min(lo + CHUNK, batch), x0, y0, theta0, strength0, morale0,
                     readiness0, routed0, destroyed0, step, key, team, patches, cover_map,
                     orders, ground0, cover0, known, k, samples, low, high, units, flags,
                     pairs, los, target, scratch, arms)


@kernel(parallel=True)
def step_kernel_parallel(x0, y0, theta0, strength0, morale0, readiness0, routed0, destroyed0,
                         step, key, team, patches, cover_map, orders, ground0, cover0, known, k,
                         samples, low, high, units, flags, pairs, los, target, arms):
    """:func:`step_kernel` with its chunks spread over Numba's threads (each chunk has its
    own scratch rows)."""
    n, batch = x0.shape
    for c in prange(chunk_count(batch)):
        lo = c * CHUNK
        hi = min(lo + CHUNK, batch)
        step_battles(lo, hi, x0, y0, theta0, strength0, morale0, readiness0, routed0,
                     destroyed0, step, key, team, patches, cover_map, orders, ground0, cover0,
                     known, k, samples, low, high, units, flags, pairs, los, target,
                     step_scratch(n, hi - lo), arms)
