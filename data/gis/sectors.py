"""The heart of each battle site as a square map: the sector a battle is fought on.

A whole site (:data:`~data.gis.terrain_importer.BATTLE_SITES`) is some 8 to 11 km
across, far larger than the ground a few battalions fight over. :data:`SITE_WINDOWS`
names, for each site, the south-west corner of the sector where its battle was decided,
and :func:`site_terrain` maps a square of that sector from the site's elevation raster
and OpenStreetMap extract (:class:`~data.gis.terrain_importer.GISTerrainBuilder`). The
transfer benchmark (:mod:`benchmarks.transfer`) and WFM-1's scenarios
(:mod:`training.wfm1.scenarios`) fight on these maps.
"""

from __future__ import annotations

from pathlib import Path

from data.gis.terrain_importer import DEFAULT_COLS, DEFAULT_ROWS, SITES_DIR, GISTerrainBuilder
from envs.sim.terrain import TerrainMap
from envs.sim.validation import check_choice, check_positive

SITE_WINDOWS: dict[str, tuple[float, float]] = {
    "waterloo": (3200.0, 1560.0),
    "austerlitz": (900.0, 3100.0),
    "borodino": (1675.0, 2895.0),
    "salamanca": (3900.0, 2550.0),
}
"""South-west corner (metres east and north of the site's) of each site's sector: the
crossroads of La Haye Sainte on the Mont-Saint-Jean ridge; the Goldbach at Sokolnitz
and the western slope of the Pratzen; the Raevsky redoubt above the Kolocha; the two
Arapiles."""

DEFAULT_WINDOW_M = 1000.0
"""The side of a sector's map by default, in metres: the default battle map's size."""


def site_terrain(site: str, *, rows: int = DEFAULT_ROWS, cols: int = DEFAULT_COLS,
                 window_m: float = DEFAULT_WINDOW_M,
                 gis_data_dir: str | Path | None = None) -> TerrainMap:
    """Map the sector of ``site`` (:data:`SITE_WINDOWS`) as a ``window_m`` square.

    Args:
        site: a key of :data:`SITE_WINDOWS`.
        rows, cols: the grid size, integers >= 2 (row 0 south, column 0 west).
        window_m: the side of the square, in metres, > 0; the map is this size.
        gis_data_dir: where ``<site>.tif`` and ``<site>.osm`` are (default
            ``data/gis/sites``).

    Returns:
        The sector's :class:`~envs.sim.terrain.TerrainMap`: normalised elevation, cover
        and going (rivers impassable, streams slow).

    Raises:
        ValueError: naming the argument, for an unknown site or a size out of range.
        FileNotFoundError: naming a missing site file.
    """
    check_choice("site", site, tuple(SITE_WINDOWS))
    window_m = check_positive("window_m", window_m)
    directory = Path(gis_data_dir) if gis_data_dir is not None else SITES_DIR
    x, y = SITE_WINDOWS[site]
    layers = GISTerrainBuilder(site, rows, cols, srtm_path=directory / f"{site}.tif",
                               osm_path=directory / f"{site}.osm",
                               window_m=(x, y, window_m, window_m)).build_layers()
    return TerrainMap(layers.elevation, layers.cover, window_m, window_m, going=layers.going)


__all__ = ["DEFAULT_WINDOW_M", "SITE_WINDOWS", "site_terrain"]
