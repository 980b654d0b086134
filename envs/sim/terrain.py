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
from envs.sim.validation import (
    check_count_fits,
    check_int,
    check_map_size,
    check_real_array,
    check_seed,
)

F32 = np.float32


@dataclass(frozen=True, eq=False)
class TerrainMap:
    """A battlefield: elevation and cover grids laid over ``width x height`` metres.

    Args:
        elevation: (rows, cols) heights in any unit (only relative heights matter).
        cover: (rows, cols) cover density in [0, 1].
        width: map width in metres, in :data:`~envs.sim.constants.MAP_SIZE_RANGE`.
        height: map height in metres, likewise.

    Raises:
        ValueError: if the grids are not real numeric arrays, differ in shape, are
            not 2-D, hold non-finite values, or cover leaves [0, 1]; or if a side is
            out of range.
    """

    elevation: np.ndarray
    cover: np.ndarray
    width: float = C.MAP_WIDTH
    height: float = C.MAP_HEIGHT

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
        elevation.flags.writeable = False
        cover.flags.writeable = False
        object.__setattr__(self, "elevation", elevation)
        object.__setattr__(self, "cover", cover)
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
    highest to 1; level maps become all zeros."""
    elevation = elevation.astype(F32)
    low = elevation.min(axis=(1, 2), keepdims=True)
    relief = elevation.max(axis=(1, 2), keepdims=True) - low
    safe = np.where(relief > 0, relief, F32(1))
    return np.where(relief > 0, (elevation - low) / safe, F32(0))


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
    h00 = elevation.astype(F32)
    h01 = np.concatenate([h00[:, :, 1:], h00[:, :, -1:]], axis=2)
    h10 = np.concatenate([h00[:, 1:, :], h00[:, -1:, :]], axis=1)
    h11 = np.concatenate([h10[:, :, 1:], h10[:, :, -1:]], axis=2)
    return np.stack([h00, h01 - h00, h10 - h00, h11 - h10 - h01 + h00], axis=-1)


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
    # Cell centres in map fractions.
    gx = (np.arange(cols, dtype=F32) + F32(0.5)) / F32(cols)
    gy = (np.arange(rows, dtype=F32) + F32(0.5)) / F32(rows)

    def blobs(counter: int, count: int, sigma: tuple[float, float],
              amount: tuple[float, float]) -> np.ndarray:
        if count == 0:
            return np.zeros((len(keys), rows, cols), F32)
        u = rnd.uniform(keys, rnd.STREAM_TERRAIN, counter, 4 * count).reshape(-1, count, 4)
        lo, hi = C.FEATURE_CENTRE
        cx = lo + (hi - lo) * u[..., 0]
        cy = lo + (hi - lo) * u[..., 1]
        s = sigma[0] + (sigma[1] - sigma[0]) * u[..., 2]
        a = amount[0] + (amount[1] - amount[0]) * u[..., 3]
        inv = F32(-0.5) / (s * s)
        # A 2-D Gaussian is the outer product of two 1-D ones.
        along_x = np.exp((gx[None, None, :] - cx[..., None]) ** 2 * inv[..., None])
        along_y = np.exp((gy[None, None, :] - cy[..., None]) ** 2 * inv[..., None])
        return np.matmul((along_y * a[..., None]).transpose(0, 2, 1), along_x)

    elevation = normalise_elevation(blobs(0, num_hills, C.HILL_SIGMA, C.HILL_HEIGHT))
    cover = np.clip(blobs(1, num_forests, C.FOREST_SIGMA, C.FOREST_DENSITY), 0, 1)
    return elevation, cover.astype(F32)
