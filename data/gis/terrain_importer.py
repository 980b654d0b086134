"""Real terrain for historical battle sites, from an SRTM GeoTIFF and an OpenStreetMap extract.

:class:`GISTerrainBuilder` turns two files into the simulator's
:class:`~envs.sim.terrain.TerrainMap`: a single-band elevation GeoTIFF in EPSG:4326,
sampled bilinearly at the centre of every grid cell (:func:`read_elevation`), and an OSM
XML file whose tagged ways and nodes are rasterised into road, forest, settlement and
water masks (:func:`read_osm_masks`). Row 0 of the grid is the south edge and column 0
the west edge, as in :mod:`envs.sim.terrain`. There is no synthetic fallback: a missing
file raises :class:`FileNotFoundError` naming it; with no path given the builder reads
the site's shipped files ``data/gis/sites/<site>.tif`` and ``.osm``
(:mod:`data.gis.build_sites`). A sector of a site can be mapped on its own at a finer
scale (``window_m``). Files may come from elsewhere, so sizes are checked before anything
is read (:data:`MAX_GRID_SIDE`, :data:`MAX_RASTER_SIDE`, :data:`MAX_RASTER_READ_PIXELS`,
:data:`MAX_OSM_BYTES`). ``docs/scenarios.md`` ("Battle sites") gives the conventions.
"""

from __future__ import annotations

import logging
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from envs.scenario import FORD_GOING, ROAD_GOING, STREAM_GOING
from envs.sim.terrain import TerrainMap
from envs.sim.validation import (
    check_int,
    check_non_negative,
    check_number,
    check_path,
    check_real_array,
)

logger = logging.getLogger(__name__)

METRES_PER_DEGREE_LAT = 111_320.0
"""Metres per degree of latitude (and of longitude at the equator)."""

SITES_DIR = Path(__file__).resolve().parent / "sites"
"""Where each site's shipped ``<site>.tif`` and ``<site>.osm`` live, when they are shipped."""

RASTER_EPSG = 4326
"""The only raster CRS accepted: WGS-84 longitude/latitude, the CRS SRTM tiles come in."""

ROAD_HIGHWAYS = frozenset({
    "motorway", "trunk", "primary", "secondary", "tertiary", "unclassified", "residential",
    "track", "path",
})
"""``highway=*`` values that count as roads (service roads, footways and steps do not)."""
FOREST_NATURAL = frozenset({"wood", "scrub"})
FOREST_LANDUSE = frozenset({"forest"})
"""``natural=*`` and ``landuse=*`` values that are woods (areas)."""
SETTLEMENT_PLACES = frozenset({"town", "village", "hamlet"})
SETTLEMENT_LANDUSE = frozenset({"residential"})
"""``place=*`` values (nodes or areas) and ``landuse=*`` values (areas) that are settlements."""
WATER_NATURAL = frozenset({"water"})
"""``natural=*`` values that are water areas."""
WATER_WAYS = frozenset({"river", "canal"})
"""``waterway=*`` values that are impassable watercourses (lines)."""
STREAM_WAYS = frozenset({"stream", "brook", "ditch", "drain"})
"""``waterway=*`` values that are fordable watercourses (lines): they slow, not stop."""

DEFAULT_ROWS = 40
DEFAULT_COLS = 40
MAX_GRID_SIDE = 1000
"""Most rows or columns of a site's grid (the scenarios' limit too: 10 m cells on a
10 km site)."""
MAX_RASTER_SIDE = 65_536
"""Most pixels a raster may declare along either side (a full SRTM tile has 3601)."""
MAX_RASTER_READ_PIXELS = 4096 * 4096
"""Most pixels read from a raster at once: the window the site's box needs, or one of
the file's blocks (tiles or strips, which are decoded whole). Some 400 MB as heights
with their mask, above a whole SRTM tile's 13 million."""
RASTER_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "float32", "float64")
"""Pixel types an elevation raster may hold."""
MAX_OSM_BYTES = 256 * 2**20
"""Largest OSM file read (it is parsed whole): a 10 km extract is a few tens of MB."""
DEFAULT_FOREST_COVER_WEIGHT = 1.0
DEFAULT_SETTLEMENT_COVER_WEIGHT = 0.5

_PIXEL_TOLERANCE = 1e-6
"""Pixels by which the site box may overrun the raster (float rounding of the geotransform)."""
_MIN_PIECE = 1e-9
"""Length in cells below which a piece of a road or river segment is float rounding noise."""


@dataclass(frozen=True)
class BattleSite:
    """A battlefield's WGS-84 bounding box and the elevation range expected there.

    Args:
        name: the site's key in :data:`BATTLE_SITES`.
        lat_min, lat_max: southern and northern edges in degrees.
        lon_min, lon_max: western and eastern edges in degrees.
        elevation_min, elevation_max: the ground's expected height range in metres;
            an elevation raster far outside it is logged as probably the wrong place.

    Raises:
        ValueError: if a bound is not a finite number or a box side is empty.
    """

    name: str
    lat_min: float
    lat_max: float
    lon_min: float
    lon_max: float
    elevation_min: float
    elevation_max: float

    def __post_init__(self) -> None:
        for key in ("lat_min", "lat_max", "lon_min", "lon_max", "elevation_min",
                    "elevation_max"):
            object.__setattr__(self, key, check_number(key, getattr(self, key)))
        if not -90 <= self.lat_min < self.lat_max <= 90:
            raise ValueError(f"latitudes [{self.lat_min}, {self.lat_max}] are invalid: "
                             "expected -90 <= lat_min < lat_max <= 90")
        if not -180 <= self.lon_min < self.lon_max <= 180:
            raise ValueError(f"longitudes [{self.lon_min}, {self.lon_max}] are invalid: "
                             "expected -180 <= lon_min < lon_max <= 180")
        if self.elevation_min > self.elevation_max:
            raise ValueError(f"elevation range [{self.elevation_min}, {self.elevation_max}] "
                             "is invalid: expected elevation_min <= elevation_max")

    @property
    def height_m(self) -> float:
        """North-south extent in metres."""
        return (self.lat_max - self.lat_min) * METRES_PER_DEGREE_LAT

    @property
    def width_m(self) -> float:
        """East-west extent in metres, at the box's mid-latitude."""
        mid_lat = math.radians(0.5 * (self.lat_min + self.lat_max))
        return (self.lon_max - self.lon_min) * METRES_PER_DEGREE_LAT * math.cos(mid_lat)

    def window(self, x_m: float, y_m: float, width_m: float, height_m: float) -> BattleSite:
        """The part of this site ``width_m x height_m`` metres whose south-west corner is
        ``x_m`` east and ``y_m`` north of the site's (a sector, mapped at a finer scale).

        Raises:
            ValueError: if the window is empty or leaves the site.
        """
        for key, value in (("x_m", x_m), ("y_m", y_m)):
            check_non_negative(key, value)
        for key, value in (("width_m", width_m), ("height_m", height_m)):
            if check_number(key, value) <= 0:
                raise ValueError(f"{key}={value!r} is invalid: expected a number > 0")
        if x_m + width_m > self.width_m + 1e-6 or y_m + height_m > self.height_m + 1e-6:
            raise ValueError(f"the window ({x_m}, {y_m}) + ({width_m} x {height_m}) m leaves "
                             f"site {self.name!r} ({self.width_m:.0f} x {self.height_m:.0f} m)")
        per_lon = self.width_m / (self.lon_max - self.lon_min)
        per_lat = METRES_PER_DEGREE_LAT
        return BattleSite(self.name, self.lat_min + y_m / per_lat,
                          self.lat_min + (y_m + height_m) / per_lat,
                          self.lon_min + x_m / per_lon, self.lon_min + (x_m + width_m) / per_lon,
                          self.elevation_min, self.elevation_max)


BATTLE_SITES: dict[str, BattleSite] = {
    site.name: site for site in (
        BattleSite("waterloo", 50.66, 50.74, 4.36, 4.46, 80.0, 160.0),
        BattleSite("austerlitz", 49.09, 49.17, 16.73, 16.85, 220.0, 320.0),
        BattleSite("borodino", 55.49, 55.55, 35.79, 35.90, 190.0, 240.0),
        BattleSite("salamanca", 40.90, 40.98, -5.55, -5.42, 780.0, 870.0),
    )
}
"""The four battlefields, by name (boxes of roughly 10 km x 8 km)."""


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.array(array)  # a private copy, so freezing never touches the caller's array
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class TerrainLayers:
    """Every grid the importer derives for one site, each ``(rows, cols)``, row 0 south.

    Attributes:
        site: the battlefield.
        elevation: float32 elevation min-max normalised to [0, 1] (zeros when flat).
        cover: float32 cover density in [0, 1] (weighted forest plus settlement).
        road: bool, cells a road crosses.
        forest: bool, cells whose centre lies in woods.
        settlement: bool, cells of towns, villages and hamlets.
        water: bool, cells of lakes, rivers and canals (impassable but at bridges: see
            :attr:`going`).
        stream: bool, cells of fordable watercourses (streams, brooks, ditches), which
            slow a unit crossing them.

    The arrays are read-only copies.
    """

    site: BattleSite
    elevation: np.ndarray
    cover: np.ndarray
    road: np.ndarray
    forest: np.ndarray
    settlement: np.ndarray
    water: np.ndarray
    stream: np.ndarray

    def __post_init__(self) -> None:
        shape = self.elevation.shape
        for key in ("elevation", "cover", "road", "forest", "settlement", "water", "stream"):
            array = getattr(self, key)
            if array.shape != shape:
                raise ValueError(f"{key} has shape {array.shape}: expected the elevation "
                                 f"shape {shape}")
            object.__setattr__(self, key, _frozen(array))

    @property
    def shape(self) -> tuple[int, int]:
        return self.elevation.shape  # type: ignore[return-value]

    @property
    def going(self) -> np.ndarray:
        """Speed multiplier per cell: water impassable (0) but where a road crosses it
        (a bridge, :data:`~envs.scenario.FORD_GOING`), streams slow
        (:data:`~envs.scenario.STREAM_GOING`), roads quicker
        (:data:`~envs.scenario.ROAD_GOING`, a bridge over a stream too), elsewhere 1."""
        return np.where(self.water, np.where(self.road, FORD_GOING, 0.0),
                        np.where(self.road, ROAD_GOING,
                                 np.where(self.stream, STREAM_GOING, 1.0))).astype(np.float32)

    def to_terrain_map(self) -> TerrainMap:
        """The simulator's map: these elevation, cover and going grids over the site in
        metres."""
        return TerrainMap(self.elevation, self.cover, width=self.site.width_m,
                          height=self.site.height_m, going=self.going)


@dataclass(frozen=True, eq=False)
class OsmMasks:
    """The ``(rows, cols)`` bool masks rasterised from one OSM file."""

    road: np.ndarray
    forest: np.ndarray
    settlement: np.ndarray
    water: np.ndarray
    stream: np.ndarray


# --- the site grid -------------------------------------------------------------------


@dataclass(frozen=True)
class _Grid:
    """Maps lon/lat onto continuous grid coordinates: cell ``(r, c)`` is
    ``[c, c + 1) x [r, r + 1)``, x east and y north."""

    site: BattleSite
    rows: int
    cols: int

    def to_grid(self, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self.site
        gx = (np.asarray(lon, float) - s.lon_min) * (self.cols / (s.lon_max - s.lon_min))
        gy = (np.asarray(lat, float) - s.lat_min) * (self.rows / (s.lat_max - s.lat_min))
        return gx, gy

    def centres(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols) longitude and latitude of every cell centre."""
        s = self.site
        lon = s.lon_min + (np.arange(self.cols) + 0.5) * ((s.lon_max - s.lon_min) / self.cols)
        lat = s.lat_min + (np.arange(self.rows) + 0.5) * ((s.lat_max - s.lat_min) / self.rows)
        lon_grid, lat_grid = np.meshgrid(lon, lat)
        return lon_grid, lat_grid

    def mark_point(self, mask: np.ndarray, gx: float, gy: float) -> None:
        """Mark the cell under a grid point; the box is closed, so a point on the north or
        east edge belongs to the last row or column (as in ``terrain.cell_index``)."""
        if 0 <= gx <= self.cols and 0 <= gy <= self.rows:
            mask[min(int(gy), self.rows - 1), min(int(gx), self.cols - 1)] = True


def _grid_crossings(a: float, b: float, n: int) -> np.ndarray:
    """Parameters ``t`` in (0, 1) where the segment ``a + t (b - a)`` crosses the integer
    grid lines 0..n."""
    if a == b:
        return np.empty(0)
    low, high = max(math.ceil(min(a, b)), 0), min(math.floor(max(a, b)), n)
    lines = np.arange(low, high + 1, dtype=float)
    t = (lines - a) / (b - a)
    return t[(t > 0) & (t < 1)]


def rasterise_segment(mask: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> None:
    """Mark every cell of ``mask`` that the segment from ``(x0, y0)`` to ``(x1, y1)`` passes
    through, in grid coordinates (cell ``(r, c)`` is ``[c, c + 1) x [r, r + 1)``).

    The segment is split where it crosses grid lines; the cell holding the midpoint of
    each piece is crossed, and so are the cells of the end points. A segment through a
    cell corner therefore marks the two diagonal cells, not the two it only touches.
    Parts outside the grid are ignored.
    """
    rows, cols = mask.shape
    t = np.concatenate(([0.0, 1.0], _grid_crossings(x0, x1, cols),
                        _grid_crossings(y0, y1, rows)))
    t = np.unique(t)
    # Pieces shorter than _MIN_PIECE cells are rounding noise (a line through a cell
    # corner crosses both grid lines at "the same" t); dropping them keeps the corner
    # cells it only touches unmarked.
    length = math.hypot(x1 - x0, y1 - y0)
    keep = np.diff(t) * length > _MIN_PIECE
    mid = 0.5 * (t[:-1] + t[1:])[keep]
    xs = np.concatenate((x0 + mid * (x1 - x0), [x0, x1]))
    ys = np.concatenate((y0 + mid * (y1 - y0), [y0, y1]))
    inside = (xs >= 0) & (xs <= cols) & (ys >= 0) & (ys <= rows)
    c = np.minimum(xs[inside].astype(np.int64), cols - 1)
    r = np.minimum(ys[inside].astype(np.int64), rows - 1)
    mask[r, c] = True


def fill_polygon(mask: np.ndarray, gx: np.ndarray, gy: np.ndarray) -> None:
    """Mark the cells of ``mask`` whose centre lies inside the polygon with grid-coordinate
    vertices ``(gx, gy)`` (even-odd rule; the closing vertex may be repeated or not)."""
    rows, cols = mask.shape
    cy, cx = np.mgrid[0:rows, 0:cols] + 0.5
    inside = np.zeros((rows, cols), bool)
    xj, yj = gx[-1], gy[-1]
    for xi, yi in zip(gx, gy, strict=True):
        # A crossing of the ray going east from the centre; the half-open test on y
        # counts a vertex exactly at the centre's height once, not twice.
        straddles = (yi > cy) != (yj > cy)
        if yi != yj:
            x_cross = xi + (cy - yi) * (xj - xi) / (yj - yi)
            inside ^= straddles & (cx < x_cross)
        xj, yj = xi, yi
    mask |= inside


# --- elevation -----------------------------------------------------------------------


def _require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{what} file {str(path)!r} does not exist")
    return path


def _grid_size(rows: Any, cols: Any, minimum: int = 1) -> tuple[int, int]:
    """``rows`` and ``cols`` checked: integers in [``minimum``, :data:`MAX_GRID_SIDE`]."""
    return (check_int("rows", rows, minimum=minimum, maximum=MAX_GRID_SIDE),
            check_int("cols", cols, minimum=minimum, maximum=MAX_GRID_SIDE))


def _check_declared_raster(src: Any, path: Path) -> None:
    """Refuse a raster whose declared pixel type, sides or blocks exceed the limits
    (module docstring), from its header alone."""
    name = f"elevation raster {str(path)!r}"
    dtype = src.dtypes[0]
    if dtype not in RASTER_DTYPES:
        raise ValueError(f"{name} holds {dtype} pixels: expected one of "
                         + ", ".join(RASTER_DTYPES))
    for key, value in (("width", src.width), ("height", src.height)):
        if value > MAX_RASTER_SIDE:
            raise ValueError(f"{name} declares {key} {value:,} pixels: more than the "
                             f"{MAX_RASTER_SIDE:,} allowed (MAX_RASTER_SIDE)")
    block_rows, block_cols = src.block_shapes[0]
    if block_rows * block_cols > MAX_RASTER_READ_PIXELS:
        raise ValueError(f"{name} declares blocks of {block_rows:,} x {block_cols:,} pixels: "
                         f"more than the {MAX_RASTER_READ_PIXELS:,} decoded at once "
                         "(MAX_RASTER_READ_PIXELS); retile it, e.g. gdal_translate -co "
                         "TILED=YES")


def read_elevation(path: str | Path, site: BattleSite, rows: int, cols: int) -> np.ndarray:
    """Sample a single-band EPSG:4326 GeoTIFF at the centres of the site's grid cells.

    Values are interpolated bilinearly between pixel centres (the raster's geotransform
    maps each cell centre's lon/lat to a fractional pixel); cell centres within half a
    pixel of the raster's edge use the edge pixels.

    Args:
        path: the GeoTIFF.
        site: the battlefield whose box is sampled.
        rows, cols: the grid size.

    Returns:
        float64 ``(rows, cols)`` elevations in the raster's unit, row 0 south.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if ``rows`` or ``cols`` is not an integer in [1,
            :data:`MAX_GRID_SIDE`]; if the file is not a readable raster, has more than
            one band, holds other pixels than :data:`RASTER_DTYPES`, declares more
            pixels than :data:`MAX_RASTER_SIDE` or :data:`MAX_RASTER_READ_PIXELS` allow
            (checked before anything is read), is not in EPSG:4326, does not cover the
            site's box, or has no-data (or non-finite) pixels among those the box is
            sampled from.
    """
    import rasterio  # a heavy import (GDAL): only paid by callers that read rasters
    from rasterio.errors import RasterioIOError
    from rasterio.windows import Window

    rows, cols = _grid_size(rows, cols)
    path = _require_file(Path(path), "elevation raster")
    try:
        src = rasterio.open(path)
    except RasterioIOError as exc:
        raise ValueError(f"elevation raster {str(path)!r} cannot be read: {exc}") from exc
    with src:
        if src.count != 1:
            raise ValueError(f"elevation raster {str(path)!r} has {src.count} bands: expected "
                             "a single band of heights")
        _check_declared_raster(src, path)
        epsg = src.crs.to_epsg() if src.crs is not None else None
        if epsg != RASTER_EPSG:
            raise ValueError(f"elevation raster {str(path)!r} has CRS {src.crs}: expected "
                             f"EPSG:{RASTER_EPSG} (WGS-84 lon/lat); reproject it first, "
                             "e.g. with gdalwarp -t_srs EPSG:4326")
        inverse = ~src.transform
        # The box's corners must lie on the raster (in pixel space, so rotated or
        # south-up geotransforms are handled like the usual north-up one).
        corners = [inverse @ (lon, lat) for lon in (site.lon_min, site.lon_max)
                   for lat in (site.lat_min, site.lat_max)]
        tol = _PIXEL_TOLERANCE
        if not all(-tol <= px <= src.width + tol and -tol <= py <= src.height + tol
                   for px, py in corners):
            raise ValueError(
                f"elevation raster {str(path)!r} spans lon [{src.bounds.left}, "
                f"{src.bounds.right}], lat [{src.bounds.bottom}, {src.bounds.top}]: expected "
                f"it to cover site {site.name!r} (lon [{site.lon_min}, {site.lon_max}], "
                f"lat [{site.lat_min}, {site.lat_max}])")

        lon, lat = _Grid(site, rows, cols).centres()
        a, b, c, d, e, f = inverse[:6]
        # Fractional pixel coordinates measured from pixel centres.
        u = np.clip(a * lon + b * lat + c - 0.5, 0, src.width - 1)
        v = np.clip(d * lon + e * lat + f - 0.5, 0, src.height - 1)
        i0 = np.floor(u).astype(np.int64)
        j0 = np.floor(v).astype(np.int64)
        i1 = np.minimum(i0 + 1, src.width - 1)
        j1 = np.minimum(j0 + 1, src.height - 1)
        # Read only the window the samples need: a full SRTM tile is 3601 x 3601.
        col_off, row_off = int(i0.min()), int(j0.min())
        window = Window(col_off, row_off, int(i1.max()) - col_off + 1,
                        int(j1.max()) - row_off + 1)
        pixels = int(window.width) * int(window.height)
        if pixels > MAX_RASTER_READ_PIXELS:
            raise ValueError(f"elevation raster {str(path)!r}: site {site.name!r}'s box spans "
                             f"{int(window.width):,} x {int(window.height):,} = {pixels:,} "
                             f"pixels: more than the {MAX_RASTER_READ_PIXELS:,} read at once "
                             "(MAX_RASTER_READ_PIXELS); resample the raster coarser")
        band = src.read(1, window=window, masked=True)
    values = np.ma.filled(band.astype(float), np.nan)
    if not np.isfinite(values).all():
        bad_row, bad_col = (int(k) for k in np.argwhere(~np.isfinite(values))[0])
        raise ValueError(
            f"elevation raster {str(path)!r} has no-data at pixel (row {bad_row + row_off}, "
            f"col {bad_col + col_off}) inside site {site.name!r}'s box: expected heights "
            "everywhere in the box (fill the voids first)")
    i0, i1, j0, j1 = i0 - col_off, i1 - col_off, j0 - row_off, j1 - row_off
    fu, fv = u - np.floor(u), v - np.floor(v)
    top = values[j0, i0] * (1 - fu) + values[j0, i1] * fu
    bottom = values[j1, i0] * (1 - fu) + values[j1, i1] * fu
    return top * (1 - fv) + bottom * fv


def normalise(elevation: np.ndarray) -> np.ndarray:
    """Min-max normalise to [0, 1] as float32; a flat grid becomes all zeros."""
    grid = check_real_array("elevation", elevation, dtype=np.float64)
    low, high = float(grid.min()), float(grid.max())
    if high - low <= 0:
        return np.zeros(grid.shape, np.float32)
    return ((grid - low) / (high - low)).astype(np.float32)


# --- OpenStreetMap -------------------------------------------------------------------


def _tags(element: ET.Element) -> dict[str, str]:
    return {tag.get("k", ""): tag.get("v", "") for tag in element.iter("tag")}


def _classify(tags: dict[str, str]) -> tuple[bool, bool, bool, bool, bool, bool]:
    """(road, forest, settlement, water area, water line, stream) for a way's tags."""
    return (
        tags.get("highway") in ROAD_HIGHWAYS,
        tags.get("natural") in FOREST_NATURAL or tags.get("landuse") in FOREST_LANDUSE,
        tags.get("place") in SETTLEMENT_PLACES or tags.get("landuse") in SETTLEMENT_LANDUSE,
        tags.get("natural") in WATER_NATURAL,
        tags.get("waterway") in WATER_WAYS,
        tags.get("waterway") in STREAM_WAYS,
    )


def _parse_nodes(root: ET.Element, path: Path) -> dict[str, tuple[float, float]]:
    nodes: dict[str, tuple[float, float]] = {}
    for node in root.iter("node"):
        node_id = node.get("id")
        try:
            lat, lon = float(node.get("lat", "")), float(node.get("lon", ""))
        except ValueError:
            lat = lon = math.nan
        if node_id is None or not (math.isfinite(lat) and math.isfinite(lon)):
            raise ValueError(f"OSM file {str(path)!r}: node id={node_id!r} has lat="
                             f"{node.get('lat')!r}, lon={node.get('lon')!r}: expected an id "
                             "and finite coordinates")
        nodes[node_id] = (lon, lat)
    return nodes


def read_osm_masks(path: str | Path, site: BattleSite, rows: int, cols: int) -> OsmMasks:
    """Rasterise an OSM XML file's roads, woods, settlements and water onto the site grid.

    Roads and watercourses are lines: every cell a segment passes through is marked.
    Woods, residential land, lakes and place areas are closed ways (first node = last
    node) filled by the cell-centre rule; an open way with an area tag cannot be filled
    and is skipped with a warning. ``place`` nodes mark the cell under them. Relations
    (multipolygons) are not read.

    Args:
        path: the ``.osm`` file.
        site: the battlefield whose box is rasterised.
        rows, cols: the grid size.

    Returns:
        The four bool masks, row 0 south.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if ``rows`` or ``cols`` is not an integer in [1,
            :data:`MAX_GRID_SIDE`], the file is larger than :data:`MAX_OSM_BYTES`, is
            not well-formed OSM XML, a node lacks finite
            coordinates, or a way references a node the file does not hold (the
            message names the file and the way id).
    """
    rows, cols = _grid_size(rows, cols)
    path = _require_file(Path(path), "OSM")
    size = path.stat().st_size
    if size > MAX_OSM_BYTES:
        raise ValueError(f"OSM file {str(path)!r} holds {size:,} bytes: more than the "
                         f"{MAX_OSM_BYTES:,} allowed (MAX_OSM_BYTES); cut a smaller extract")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"OSM file {str(path)!r} is not well-formed XML: {exc}") from exc
    if root.tag != "osm":
        raise ValueError(f"OSM file {str(path)!r} has root element <{root.tag}>: expected "
                         "<osm>")
    grid = _Grid(site, rows, cols)
    nodes = _parse_nodes(root, path)
    road, forest, settlement, water, stream = (np.zeros((rows, cols), bool) for _ in range(5))

    for node in root.iter("node"):
        if _tags(node).get("place") in SETTLEMENT_PLACES:
            grid.mark_point(settlement, *grid.to_grid(*nodes[node.get("id")]))

    skipped = 0
    for way in root.iter("way"):
        way_id = way.get("id")
        refs = [nd.get("ref") for nd in way.iter("nd")]
        if not refs:
            raise ValueError(f"OSM file {str(path)!r}: way id={way_id!r} has no nodes")
        missing = next((ref for ref in refs if ref not in nodes), None)
        if missing is not None:
            raise ValueError(f"OSM file {str(path)!r}: way id={way_id!r} references node "
                             f"{missing!r}, which the file does not hold")
        is_road, is_forest, is_settlement, is_lake, is_river, is_stream = _classify(_tags(way))
        if not (is_road or is_forest or is_settlement or is_lake or is_river or is_stream):
            continue
        gx, gy = grid.to_grid(*np.array([nodes[ref] for ref in refs]).T)
        lines = [m for m, flag in ((road, is_road), (water, is_river), (stream, is_stream))
                 if flag]
        for mask in lines:
            for k in range(len(refs) - 1):
                rasterise_segment(mask, gx[k], gy[k], gx[k + 1], gy[k + 1])
        areas = [m for m, flag in ((forest, is_forest), (settlement, is_settlement),
                                   (water, is_lake)) if flag]
        if areas and (len(refs) < 4 or refs[0] != refs[-1]):
            skipped += 1
            logger.warning("OSM file %s: way %s has an area tag but is not closed; skipped",
                           path, way_id)
            continue
        for mask in areas:
            fill_polygon(mask, gx[:-1], gy[:-1])
    logger.debug("OSM file %s: %d road, %d forest, %d settlement, %d water cells (%d open "
                 "areas skipped)", path, road.sum(), forest.sum(), settlement.sum(),
                 water.sum(), skipped)
    return OsmMasks(road, forest, settlement, water, stream)


# --- the builder ---------------------------------------------------------------------


def _site(name: Any) -> BattleSite:
    if not isinstance(name, str) or name not in BATTLE_SITES:
        raise KeyError(f"unknown battle site {name!r}: expected one of "
                       + ", ".join(repr(k) for k in BATTLE_SITES))
    return BATTLE_SITES[name]


@dataclass(eq=False)
class GISTerrainBuilder:
    """Builds a battle site's terrain from its elevation raster and OSM extract.

    Args:
        site: a key of :data:`BATTLE_SITES`.
        rows, cols: the grid size, integers in [2, :data:`MAX_GRID_SIDE`] (row 0 south,
            column 0 west).
        srtm_path: single-band EPSG:4326 GeoTIFF of heights; None for the shipped
            ``data/gis/sites/<site>.tif``.
        osm_path: OSM XML extract; None for the shipped ``data/gis/sites/<site>.osm``.
        forest_cover_weight: cover added by woods, finite and >= 0.
        settlement_cover_weight: cover added by settlements, finite and >= 0.
        window_m: ``(x, y, width, height)`` in metres from the site's south-west corner:
            map only that sector (:meth:`BattleSite.window`); None maps the whole site.

    Raises:
        KeyError: for an unknown site (the message lists the known ones).
        ValueError: for invalid sizes, weights or paths.

    The files are read by :meth:`build`, :meth:`build_layers` and
    :meth:`build_road_network_data`, which raise ``FileNotFoundError`` naming a missing
    file.
    """

    site: str
    rows: int = DEFAULT_ROWS
    cols: int = DEFAULT_COLS
    srtm_path: str | Path | None = None
    osm_path: str | Path | None = None
    forest_cover_weight: float = DEFAULT_FOREST_COVER_WEIGHT
    settlement_cover_weight: float = DEFAULT_SETTLEMENT_COVER_WEIGHT
    window_m: tuple[float, float, float, float] | None = None
    battle_site: BattleSite = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.battle_site = _site(self.site)
        if self.window_m is not None:
            if not isinstance(self.window_m, (tuple, list)) or len(self.window_m) != 4:
                raise ValueError(f"window_m={self.window_m!r} is invalid: expected (x, y, "
                                 "width, height) in metres")
            self.battle_site = self.battle_site.window(*self.window_m)
        self.rows, self.cols = _grid_size(self.rows, self.cols, minimum=2)
        self.forest_cover_weight = check_non_negative("forest_cover_weight",
                                                      self.forest_cover_weight)
        self.settlement_cover_weight = check_non_negative("settlement_cover_weight",
                                                          self.settlement_cover_weight)
        self.srtm_path = (SITES_DIR / f"{self.site}.tif" if self.srtm_path is None
                          else check_path("srtm_path", self.srtm_path))
        self.osm_path = (SITES_DIR / f"{self.site}.osm" if self.osm_path is None
                         else check_path("osm_path", self.osm_path))

    def build_osm_masks(self) -> OsmMasks:
        """The road, forest, settlement and water masks from the OSM file."""
        return read_osm_masks(self.osm_path, self.battle_site, self.rows, self.cols)

    def build_layers(self) -> TerrainLayers:
        """Read both files and return every grid (see :class:`TerrainLayers`)."""
        raw = read_elevation(self.srtm_path, self.battle_site, self.rows, self.cols)
        site = self.battle_site
        if raw.min() > site.elevation_max or raw.max() < site.elevation_min:
            # Heights entirely outside the site's range usually mean a tile of another place.
            logger.warning("elevation raster %s spans %.1f-%.1f m, outside %s's expected "
                           "%.0f-%.0f m: is it the right tile?", self.srtm_path, raw.min(),
                           raw.max(), site.name, site.elevation_min, site.elevation_max)
        masks = self.build_osm_masks()
        cover = np.clip(masks.forest * self.forest_cover_weight
                        + masks.settlement * self.settlement_cover_weight, 0, 1)
        logger.info("built %s terrain: %dx%d cells over %.0f x %.0f m", site.name, self.rows,
                    self.cols, site.width_m, site.height_m)
        return TerrainLayers(site=site, elevation=normalise(raw),
                             cover=cover.astype(np.float32), road=masks.road,
                             forest=masks.forest, settlement=masks.settlement,
                             water=masks.water, stream=masks.stream)

    def build(self) -> TerrainMap:
        """The site's :class:`~envs.sim.terrain.TerrainMap`: normalised elevation and
        ``clip(forest * forest_cover_weight + settlement * settlement_cover_weight, 0, 1)``
        cover over ``width_m x height_m`` metres."""
        return self.build_layers().to_terrain_map()

    def build_road_network_data(self) -> np.ndarray:
        """The ``(rows, cols)`` bool road mask (reads only the OSM file)."""
        return self.build_osm_masks().road


def build_all_battle_terrains(rows: int = DEFAULT_ROWS, cols: int = DEFAULT_COLS,
                              data_dir: str | Path = SITES_DIR) -> dict[str, TerrainMap]:
    """Build every site of :data:`BATTLE_SITES` from ``<data_dir>/<site>.tif`` and
    ``<data_dir>/<site>.osm``.

    Returns:
        Site name -> :class:`~envs.sim.terrain.TerrainMap`, in :data:`BATTLE_SITES` order.

    Raises:
        FileNotFoundError: naming the first missing file.
        ValueError: for invalid sizes or a bad file (see :class:`GISTerrainBuilder`).
    """
    directory = check_path("data_dir", data_dir)
    return {
        name: GISTerrainBuilder(name, rows, cols, srtm_path=directory / f"{name}.tif",
                                osm_path=directory / f"{name}.osm").build()
        for name in BATTLE_SITES
    }
