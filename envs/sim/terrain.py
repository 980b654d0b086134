"""Terrain: elevation and cover grids, their lookups, line of sight and generation.

A map is a grid of ``rows x cols`` cells laid over ``width x height`` metres; row 0
is the south edge (y near 0) and column 0 the west edge (x near 0). Elevation is
relative: the simulator rescales it so 1 is the top of the highest hill and 0
the lowest ground. The grid holds the height at each cell's centre and the
ground between centres is bilinear, so slopes are smooth and line of sight is
blocked by real crests, not by the steps of a staircase. Cover in [0, 1], the
density of woods, walls and hedges that absorb fire, is constant over a cell:
woods have edges.

:class:`TerrainMap` is one map, for users. The functions below it work on a batch
of maps stacked as ``(B, rows, cols)`` arrays, one per battle, and are what the
simulator calls every step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.sim import constants as C
from envs.sim import random as rnd
from envs.sim.jit import kernel
from envs.sim.validation import (
    check_count_fits,
    check_int,
    check_map_size,
    check_real_array,
    check_seed,
)
from envs.sim.vector_math import exp

F32 = np.float32


MAX_GOING = 2.0
"""Fastest going a cell may have (a good road doubles the pace at most)."""


@dataclass(frozen=True, eq=False)
class TerrainMap:
    """A battlefield: elevation and cover grids laid over ``width x height`` metres.

    Args:
        elevation: (rows, cols) heights in any unit (only relative heights matter).
        cover: (rows, cols) cover density in [0, 1].
        width: map width in metres, in :data:`~envs.sim.constants.MAP_SIZE_RANGE`.
        height: map height in metres, likewise.
        going: (rows, cols) speed multiplier of each cell in [0, :data:`MAX_GOING`]:
            1 on open ground (the default everywhere), below 1 in marsh or across a
            stream, 0 on impassable water (a unit never enters such a cell).

    Raises:
        ValueError: if the grids are not real numeric arrays, differ in shape, are
            not 2-D, hold non-finite values, or cover leaves [0, 1] or going
            [0, MAX_GOING]; or if a side is out of range.
    """

    elevation: np.ndarray
    cover: np.ndarray
    width: float = C.MAP_WIDTH
    height: float = C.MAP_HEIGHT
    going: np.ndarray | None = None

    def __post_init__(self) -> None:
        elevation = check_real_array("elevation", self.elevation).copy()
        cover = check_real_array("cover", self.cover).copy()
        if elevation.ndim != 2 or elevation.size == 0:
            raise ValueError(f"elevation has shape {elevation.shape}: expected a non-empty "
                             "(rows, cols) grid")
        if cover.shape != elevation.shape:
            raise ValueError(f"cover has shape {cover.shape}: expected the elevation shape "
                             f"{elevation.shape}")
        if cover.min() < 0 or cover.max() > 1:
            raise ValueError(f"cover spans [{cover.min()}, {cover.max()}]: expected values "
                             "in [0, 1]")
        if self.going is None:
            going = np.ones_like(cover)
        else:
            going = check_real_array("going", self.going, cover.shape).copy()
            if going.min() < 0 or going.max() > MAX_GOING:
                raise ValueError(f"going spans [{going.min()}, {going.max()}]: expected values "
                                 f"in [0, {MAX_GOING}]")
        elevation.flags.writeable = False
        cover.flags.writeable = False
        going.flags.writeable = False
        object.__setattr__(self, "elevation", elevation)
        object.__setattr__(self, "cover", cover)
        object.__setattr__(self, "going", going)
        object.__setattr__(self, "width", check_map_size("width", self.width))
        object.__setattr__(self, "height", check_map_size("height", self.height))

    # --- construction ---------------------------------------------------------

    @classmethod
    def flat(cls, width: float = C.MAP_WIDTH, height: float = C.MAP_HEIGHT) -> TerrainMap:
        """Open, level ground with no cover."""
        return cls(np.zeros((1, 1), F32), np.zeros((1, 1), F32), width, height)

    @classmethod
    def generate_random(
        cls,
        seed: int,
        width: float = C.MAP_WIDTH,
        height: float = C.MAP_HEIGHT,
        rows: int = C.TERRAIN_ROWS,
        cols: int = C.TERRAIN_COLS,
        num_hills: int = C.NUM_HILLS,
        num_forests: int = C.NUM_FORESTS,
    ) -> TerrainMap:
        """Procedural hills and woods; the same ``seed`` always gives the same map.

        Raises:
            ValueError: if ``seed`` is not an integer in [0, 2**63), a size or count is
                invalid, or the grid would not fit in memory.
        """
        if seed is None:
            raise ValueError("seed=None is invalid: expected an integer in [0, 2**63)")
        seed = check_seed("seed", seed)
        rows = check_int("rows", rows, minimum=1)
        cols = check_int("cols", cols, minimum=1)
        features = check_int("num_hills", num_hills, minimum=0) + check_int(
            "num_forests", num_forests, minimum=0)
        # generate_terrain holds a (rows, cols) float32 grid per feature at once.
        check_count_fits("rows * cols", rows * cols, 4 * (features + 4),
                         "grid cells of terrain")
        keys = rnd.seed_keys(np.array([seed], dtype=np.uint64))
        elevation, cover = generate_terrain(keys, rows, cols, num_hills, num_forests)
        return cls(elevation[0], cover[0], width, height)

    # --- queries --------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, int]:
        return self.elevation.shape  # type: ignore[return-value]

    def relative_elevation(self) -> np.ndarray:
        """Elevation divided by the highest point (all zeros on level ground)."""
        return normalise_elevation(self.elevation[None])[0]

    def _patches(self) -> np.ndarray:
        return elevation_patches(self.relative_elevation()[None]).reshape(-1, 4)

    def _cells(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x = np.clip(np.asarray(x, dtype=F32), 0, self.width)
        y = np.clip(np.asarray(y, dtype=F32), 0, self.height)
        rows, cols = self.shape
        return cell_index(x, y, self.width, self.height, rows, cols)

    def elevation_at(self, x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray:
        """Relative elevation (0..1) of the ground at the points ``(x, y)``."""
        x = np.clip(np.asarray(x, dtype=F32), 0, self.width)
        y = np.clip(np.asarray(y, dtype=F32), 0, self.height)
        rows, cols = self.shape
        return bilinear(self._patches(), np.int32(0), x, y, self.width, self.height, rows, cols)

    def cover_at(self, x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray:
        """Cover density of the cells under the points ``(x, y)``."""
        return self.cover.reshape(-1)[self._cells(x, y)]

    def going_at(self, x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray:
        """Going of the cells under the points ``(x, y)`` (0: impassable)."""
        return self.going.reshape(-1)[self._cells(x, y)]

    def line_of_sight(self, x0: float, y0: float, x1: float, y1: float,
                      eye_height: float = C.EYE_HEIGHT,
                      samples: int = C.LOS_SAMPLES) -> bool:
        """Whether a battalion at ``(x0, y0)`` can see one at ``(x1, y1)``."""
        rows, cols = self.shape
        xs = np.clip(np.array([[x0], [x1]], dtype=F32), 0, self.width)
        ys = np.clip(np.array([[y0], [y1]], dtype=F32), 0, self.height)
        patches = self._patches()
        ground = bilinear(patches, np.int32(0), xs, ys, self.width, self.height, rows, cols)
        result = line_of_sight(
            patches, 1, xs[0:1], ys[0:1], ground[0:1], xs[1:2], ys[1:2], ground[1:2],
            self.width, self.height, rows, cols, eye_height, samples)
        return bool(result[0, 0])


# --- batched functions ------------------------------------------------------


def normalise_elevation(elevation: np.ndarray) -> np.ndarray:
    """Shift each map of a (B, rows, cols) stack to a lowest point of 0 and scale its
    highest to 1; level maps become all zeros. Returns a new float32 stack."""
    maps = np.array(elevation, dtype=F32, order="C")
    _normalise_maps(maps)
    return maps


@kernel(inline="always")
def _normalise(grid):
    """:func:`normalise_elevation` of one (rows, cols) map, in place."""
    low = grid[0, 0]
    high = grid[0, 0]
    for r in range(grid.shape[0]):
        for c in range(grid.shape[1]):
            low = min(low, grid[r, c])
            high = max(high, grid[r, c])
    relief = high - low
    for r in range(grid.shape[0]):
        for c in range(grid.shape[1]):
            grid[r, c] = (grid[r, c] - low) / relief if relief > F32(0) else F32(0)


@kernel()
def _normalise_maps(maps):
    for b in range(maps.shape[0]):
        _normalise(maps[b])


def cell_index(x: np.ndarray, y: np.ndarray, width: float, height: float,
               rows: int, cols: int) -> np.ndarray:
    """Flat index (row * cols + col) of the cell under each point; points must be on the map.

    Indices are int32: float32-to-int32 conversion is vectorised on common CPUs,
    conversion to int64 is not.
    """
    col = np.minimum((x * F32(cols / width)).astype(np.int32), np.int32(cols - 1))
    row = np.minimum((y * F32(rows / height)).astype(np.int32), np.int32(rows - 1))
    return row * np.int32(cols) + col


def elevation_patches(elevation: np.ndarray) -> np.ndarray:
    """Bilinear patch coefficients of a (B, rows, cols) stack of elevation grids.

    Patch ``(r, c)`` spans the square between the centres of cells ``(r, c)`` and
    ``(r + 1, c + 1)``; inside it the ground is ``a + b*u + c*v + d*u*v`` with
    ``(u, v)`` in [0, 1]^2 the position across the patch. Returns (B, rows, cols, 4)
    float32 ``[a, b, c, d]``; the last row and column repeat the edge. Storing the
    four coefficients together lets one gather fetch a whole patch.
    """
    maps = np.ascontiguousarray(elevation, dtype=F32)
    patches = np.empty((*maps.shape, 4), F32)
    _patch_maps(maps, patches)
    return patches


@kernel(inline="always")
def _patches(grid, out):
    """:func:`elevation_patches` of one (rows, cols) map into ``out`` (rows, cols, 4)."""
    rows, cols = grid.shape
    for r in range(rows):
        above = min(r + 1, rows - 1)
        for c in range(cols):
            right = min(c + 1, cols - 1)
            h00, h01 = grid[r, c], grid[r, right]
            h10, h11 = grid[above, c], grid[above, right]
            out[r, c, 0] = h00
            out[r, c, 1] = h01 - h00
            out[r, c, 2] = h10 - h00
            out[r, c, 3] = h11 - h10 - h01 + h00


@kernel()
def _patch_maps(maps, patches):
    for b in range(maps.shape[0]):
        _patches(maps[b], patches[b])


def bilinear(patches_flat: np.ndarray, offset: np.ndarray, x: np.ndarray, y: np.ndarray,
             width: float, height: float, rows: int, cols: int) -> np.ndarray:
    """Bilinear elevation at points on the map.

    ``patches_flat`` is a stack of :func:`elevation_patches` reshaped to
    (B * rows * cols, 4); ``offset`` (broadcast against ``x``) is where each
    point's map starts in it. Beyond the outermost cell centres the edge values
    extend flat.
    """
    gx = np.minimum(np.maximum(x * F32(cols / width) - F32(0.5), F32(0)), F32(cols - 1))
    gy = np.minimum(np.maximum(y * F32(rows / height) - F32(0.5), F32(0)), F32(rows - 1))
    return _bilinear_grid(patches_flat, offset, gx, gy, rows, cols)


def _bilinear_grid(patches_flat: np.ndarray, offset: np.ndarray, gx: np.ndarray,
                   gy: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """:func:`bilinear` at grid coordinates already inside [0, cols-1] x [0, rows-1]."""
    c0 = np.minimum(gx.astype(np.int32), np.int32(max(cols - 2, 0)))
    r0 = np.minimum(gy.astype(np.int32), np.int32(max(rows - 2, 0)))
    # float32 minus int32 would promote to float64.
    u = gx - c0.astype(F32)
    v = gy - r0.astype(F32)
    patch = np.take(patches_flat, r0 * np.int32(cols) + c0 + offset, axis=0)
    a, b, c, d = patch[..., 0], patch[..., 1], patch[..., 2], patch[..., 3]
    return a + u * b + v * (c + u * d)


def line_of_sight(
    patches_flat: np.ndarray, batch: int,
    x0: np.ndarray, y0: np.ndarray, e0: np.ndarray,
    x1: np.ndarray, y1: np.ndarray, e1: np.ndarray,
    width: float, height: float, rows: int, cols: int,
    eye_height: float, samples: int,
) -> np.ndarray:
    """Line of sight along the (P, B) sight lines ``(x0, y0) -> (x1, y1)``.

    ``patches_flat`` holds the :func:`elevation_patches` of the batch's ``batch``
    maps as (B * rows * cols, 4) and ``e0``, ``e1`` the ground under the two ends. A
    line is blocked when the ground at one of ``samples`` points strictly between
    the ends stands higher than the straight line joining the two battalions'
    eyes (ground + ``eye_height``). Sight is symmetric, and level ground or an
    even slope never blocks it; a crest between the two does.
    """
    offset = np.arange(batch, dtype=np.int32) * np.int32(rows * cols)
    # Work in grid coordinates, clamped to the cell centres once at the ends: every
    # point between two clamped ends is inside the clamped box too.
    sx, sy = F32(cols / width), F32(rows / height)
    hi_x, hi_y, half = F32(cols - 1), F32(rows - 1), F32(0.5)
    gx0 = np.minimum(np.maximum(x0 * sx - half, F32(0)), hi_x)
    gy0 = np.minimum(np.maximum(y0 * sy - half, F32(0)), hi_y)
    gx1 = np.minimum(np.maximum(x1 * sx - half, F32(0)), hi_x)
    gy1 = np.minimum(np.maximum(y1 * sy - half, F32(0)), hi_y)
    # Samples lead the shape (K, P, B) so the final "any" combines whole slabs.
    t = (np.arange(1, samples + 1, dtype=F32) / F32(samples + 1))[:, None, None]
    ground = _bilinear_grid(patches_flat, offset, gx0 + (gx1 - gx0) * t,
                            gy0 + (gy1 - gy0) * t, rows, cols)
    sight = (e0 + F32(eye_height)) + (e1 - e0) * t
    return ~(ground > sight).any(axis=0)


def generate_terrain(
    keys: np.ndarray,
    rows: int = C.TERRAIN_ROWS,
    cols: int = C.TERRAIN_COLS,
    num_hills: int = C.NUM_HILLS,
    num_forests: int = C.NUM_FORESTS,
) -> tuple[np.ndarray, np.ndarray]:
    """Procedural maps for the battles with episode keys ``keys``.

    Hills are Gaussian bumps and woods Gaussian blobs of cover, with centres,
    spreads and heights drawn from the counter-based generator, so a battle's map
    depends only on its key. Returns relative elevation and cover, each
    (len(keys), rows, cols) float32.
    """
    rows = check_int("rows", rows, minimum=1)
    cols = check_int("cols", cols, minimum=1)
    num_hills = check_int("num_hills", num_hills, minimum=0)
    num_forests = check_int("num_forests", num_forests, minimum=0)
    keys = np.asarray(keys, dtype=np.uint64)
    elevation = np.empty((len(keys), rows, cols), F32)
    cover = np.empty((len(keys), rows, cols), F32)
    patches = np.empty((len(keys), rows, cols, 4), F32)
    generate_into(keys, np.arange(len(keys)), num_hills, num_forests, elevation, cover, patches)
    return elevation, cover


def _feature_draws(centre: tuple[float, float], sigma: tuple[float, float],
                   amount: tuple[float, float]) -> np.ndarray:
    """A feature kind's ranges as the float32 (low, span) pairs its draws are scaled by."""
    return np.array([centre[0], centre[1] - centre[0], sigma[0], sigma[1] - sigma[0],
                     amount[0], amount[1] - amount[0]], F32)


_HILL_DRAWS = _feature_draws(C.FEATURE_CENTRE, C.HILL_SIGMA, C.HILL_HEIGHT)
_FOREST_DRAWS = _feature_draws(C.FEATURE_CENTRE, C.FOREST_SIGMA, C.FOREST_DENSITY)
_TERRAIN_OFFSET = rnd.stream_offset(rnd.STREAM_TERRAIN)


def generate_into(keys: np.ndarray, battles: np.ndarray, num_hills: int, num_forests: int,
                  elevation: np.ndarray, cover: np.ndarray, patches: np.ndarray) -> None:
    """:func:`generate_terrain` for the battles with keys ``keys``, written (with the
    elevation's :func:`elevation_patches`) into rows ``battles`` of the C-contiguous
    stacks ``elevation``, ``cover`` (B, rows, cols) and ``patches`` (B, rows, cols, 4)."""
    _generate_kernel(keys, np.asarray(battles, dtype=np.intp), num_hills, num_forests,
                     _HILL_DRAWS, _FOREST_DRAWS, _TERRAIN_OFFSET, elevation, cover, patches)


@kernel(inline="always")
def _blobs(key, counter, count, draws, offset, out, along_x, along_y):
    """The sum of ``count`` Gaussian blobs of one map into ``out`` (rows, cols): blob
    ``h`` has lanes ``4h`` to ``4h + 3`` of ``counter`` (centre x and y, spread, amount,
    each scaled by ``draws``' (low, span) pairs). A 2-D Gaussian is the outer product
    of two 1-D ones; the sum runs over blobs in order, each term the product of the
    scaled row factor and the column factor."""
    rows, cols = out.shape
    for h in range(count):
        cx = draws[0] + draws[1] * rnd.uniform_draw(key, counter, 4 * h, offset)
        cy = draws[0] + draws[1] * rnd.uniform_draw(key, counter, 4 * h + 1, offset)
        s = draws[2] + draws[3] * rnd.uniform_draw(key, counter, 4 * h + 2, offset)
        a = draws[4] + draws[5] * rnd.uniform_draw(key, counter, 4 * h + 3, offset)
        inv = F32(-0.5) / (s * s)
        for c in range(cols):
            d = (F32(c) + F32(0.5)) / F32(cols) - cx
            along_x[h, c] = exp(d * d * inv)
        for r in range(rows):
            d = (F32(r) + F32(0.5)) / F32(rows) - cy
            along_y[h, r] = exp(d * d * inv) * a
    for r in range(rows):
        for c in range(cols):
            out[r, c] = F32(0)
        for h in range(count):
            for c in range(cols):
                out[r, c] += along_y[h, r] * along_x[h, c]


@kernel()
def _generate_kernel(keys, battles, num_hills, num_forests, hill_draws, forest_draws, offset,
                     elevation, cover, patches):
    rows, cols = elevation.shape[1], elevation.shape[2]
    features = max(num_hills, num_forests, 1)
    along_x = np.empty((features, cols), F32)
    along_y = np.empty((features, rows), F32)
    for i in range(keys.shape[0]):
        b = battles[i]
        _blobs(keys[i], 0, num_hills, hill_draws, offset, elevation[b], along_x, along_y)
        _normalise(elevation[b])
        _patches(elevation[b], patches[b])
        _blobs(keys[i], 1, num_forests, forest_draws, offset, cover[b], along_x, along_y)
        for r in range(rows):
            for c in range(cols):
                cover[b, r, c] = min(max(cover[b, r, c], F32(0)), F32(1))
