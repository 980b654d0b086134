"""The GIS terrain importer on real GeoTIFF and OSM XML files written into tmp_path."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import rasterio

from data.gis import terrain_importer as ti
from data.gis.terrain_importer import (
    BATTLE_SITES,
    GISTerrainBuilder,
    TerrainLayers,
    build_all_battle_terrains,
)
from envs.scenario import FORD_GOING, ROAD_GOING, STREAM_GOING
from envs.sim.terrain import TerrainMap

WATERLOO = BATTLE_SITES["waterloo"]
RES = 0.001  # raster pixel size in degrees (~100 m), finer than the test grids
MARGIN = 0.005  # how far the test rasters reach beyond a site's box


# --- file writers ----------------------------------------------------------------------


def write_raster(path: Path, site, height_fn, *, crs="EPSG:4326", margin=MARGIN,
                 south_up=False, nodata=None, lat_max=None) -> Path:
    """A single-band float32 GeoTIFF over the site's box plus ``margin``, with heights
    ``height_fn(lon, lat)`` at the pixel centres."""
    west, east = site.lon_min - margin, site.lon_max + margin
    south = site.lat_min - margin
    north = (site.lat_max + margin) if lat_max is None else lat_max
    width, height = round((east - west) / RES), round((north - south) / RES)
    lon = west + (np.arange(width) + 0.5) * RES
    if south_up:
        transform = rasterio.Affine(RES, 0, west, 0, RES, south)
        lat = south + (np.arange(height) + 0.5) * RES
    else:
        transform = rasterio.Affine(RES, 0, west, 0, -RES, north)
        lat = north - (np.arange(height) + 0.5) * RES
    lon_grid, lat_grid = np.meshgrid(lon, lat)
    values = np.asarray(height_fn(lon_grid, lat_grid), np.float32)
    with rasterio.open(path, "w", driver="GTiff", width=width, height=height, count=1,
                       dtype="float32", crs=crs, transform=transform, nodata=nodata) as dst:
        dst.write(values, 1)
    return path


def grid_lonlat(site, rows, cols, gx, gy) -> tuple[float, float]:
    """The lon/lat of grid coordinates (gx east, gy north, in cells)."""
    return (site.lon_min + gx * (site.lon_max - site.lon_min) / cols,
            site.lat_min + gy * (site.lat_max - site.lat_min) / rows)


class Osm:
    """Builds an OSM XML file from ways given in grid coordinates."""

    def __init__(self, site=WATERLOO, rows=8, cols=8):
        self.site, self.rows, self.cols = site, rows, cols
        self.nodes: list[str] = []
        self.ways: list[str] = []

    def node(self, gx, gy, tags=None) -> str:
        node_id = str(len(self.nodes) + 1)
        lon, lat = grid_lonlat(self.site, self.rows, self.cols, gx, gy)
        self.nodes.append(f'<node id="{node_id}" lat="{lat!r}" lon="{lon!r}">'
                          + _tags(tags) + "</node>")
        return node_id

    def way(self, points, tags, *, closed=False, refs=None) -> None:
        refs = list(refs) if refs is not None else [self.node(x, y) for x, y in points]
        if closed:
            refs.append(refs[0])
        body = "".join(f'<nd ref="{r}"/>' for r in refs)
        self.ways.append(f'<way id="{100 + len(self.ways)}">{body}{_tags(tags)}</way>')

    def write(self, path: Path) -> Path:
        path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<osm version="0.6">'
                        + "".join(self.nodes) + "".join(self.ways) + "</osm>")
        return path


def _tags(tags) -> str:
    return "".join(f'<tag k="{k}" v="{v}"/>' for k, v in (tags or {}).items())


def flat(lon, lat):
    return np.full(np.shape(lon), 120.0)


def cells(mask) -> set[tuple[int, int]]:
    return {(int(r), int(c)) for r, c in np.argwhere(mask)}


@pytest.fixture
def flat_tif(tmp_path):
    return write_raster(tmp_path / "flat.tif", WATERLOO, flat)


# --- sites -----------------------------------------------------------------------------


def test_sites_hold_the_reference_boxes_and_sizes_in_metres():
    assert list(BATTLE_SITES) == ["waterloo", "austerlitz", "borodino", "salamanca"]
    s = BATTLE_SITES["salamanca"]
    assert (s.lat_min, s.lat_max, s.lon_min, s.lon_max) == (40.90, 40.98, -5.55, -5.42)
    assert (s.elevation_min, s.elevation_max) == (780, 870)
    assert WATERLOO.height_m == pytest.approx(0.08 * 111_320)
    assert WATERLOO.width_m == pytest.approx(0.10 * 111_320 * math.cos(math.radians(50.70)))
    assert 7000 < WATERLOO.width_m < 7100  # a degree of longitude shrinks at 50.7 deg N
    with pytest.raises(AttributeError):
        WATERLOO.lat_min = 0.0  # frozen


# --- elevation -------------------------------------------------------------------------


def test_ridge_cells_are_highest_after_normalisation(tmp_path):
    rows, cols = 8, 6
    ridge_lat = WATERLOO.lat_min + 5.5 * (WATERLOO.lat_max - WATERLOO.lat_min) / rows

    def ridge(lon, lat):
        return 90.0 + 60.0 * np.exp(-((lat - ridge_lat) / 0.02) ** 2)

    tif = write_raster(tmp_path / "ridge.tif", WATERLOO, ridge)
    osm = Osm(rows=rows, cols=cols).write(tmp_path / "empty.osm")
    layers = GISTerrainBuilder("waterloo", rows, cols, srtm_path=tif, osm_path=osm).build_layers()
    elevation = layers.elevation
    assert elevation.dtype == np.float32 and elevation.shape == (rows, cols)
    assert np.all(np.argmax(elevation, axis=0) == 5)  # row 0 is south: the ridge is row 5
    assert np.allclose(elevation[5], 1.0) and elevation.min() == pytest.approx(0.0)
    assert np.all(np.diff(elevation[:6], axis=0) > 0) and np.all(np.diff(elevation[5:], axis=0) < 0)


@pytest.mark.parametrize("south_up", [False, True])
def test_plane_is_reproduced_exactly_with_south_row_first(tmp_path, south_up):
    rows, cols = 5, 4

    def plane(lon, lat):  # rises 2 units per 0.001 deg north and 1 per 0.001 deg east
        return 100.0 + 2000.0 * (lat - WATERLOO.lat_min) + 1000.0 * (lon - WATERLOO.lon_min)

    tif = write_raster(tmp_path / "plane.tif", WATERLOO, plane, south_up=south_up)
    osm = Osm(rows=rows, cols=cols).write(tmp_path / "empty.osm")
    got = GISTerrainBuilder("waterloo", rows, cols, srtm_path=tif, osm_path=osm).build_layers()
    lon = WATERLOO.lon_min + (np.arange(cols) + 0.5) * 0.1 / cols
    lat = WATERLOO.lat_min + (np.arange(rows) + 0.5) * 0.08 / rows
    expected = plane(*np.meshgrid(lon, lat))
    expected = (expected - expected.min()) / (expected.max() - expected.min())
    np.testing.assert_allclose(got.elevation, expected, atol=1e-5)  # bilinear is exact here
    assert got.elevation[-1, -1] == 1.0 and got.elevation[0, 0] == 0.0  # north-east highest


def test_flat_raster_gives_zero_elevation(tmp_path, flat_tif):
    osm = Osm().write(tmp_path / "empty.osm")
    terrain = GISTerrainBuilder("waterloo", 8, 8, srtm_path=flat_tif, osm_path=osm).build()
    assert np.array_equal(terrain.elevation, np.zeros((8, 8)))


def test_raster_in_another_crs_is_refused(tmp_path):
    tif = write_raster(tmp_path / "mercator.tif", WATERLOO, flat, crs="EPSG:3857")
    osm = Osm().write(tmp_path / "empty.osm")
    with pytest.raises(ValueError, match=r"mercator\.tif.*EPSG:3857.*expected EPSG:4326"):
        GISTerrainBuilder("waterloo", srtm_path=tif, osm_path=osm).build()


def test_raster_not_covering_the_box_is_refused(tmp_path):
    # Stops at the box's mid-latitude: the northern half of the site is missing.
    tif = write_raster(tmp_path / "half.tif", WATERLOO, flat, lat_max=50.70)
    osm = Osm().write(tmp_path / "empty.osm")
    with pytest.raises(ValueError, match=r"half\.tif.*expected it to cover site 'waterloo'"):
        GISTerrainBuilder("waterloo", srtm_path=tif, osm_path=osm).build()


def test_raster_exactly_on_the_box_is_accepted(tmp_path):
    tif = write_raster(tmp_path / "exact.tif", WATERLOO, lambda lon, lat: lon * 1000, margin=0)
    osm = Osm().write(tmp_path / "empty.osm")
    terrain = GISTerrainBuilder("waterloo", 8, 8, srtm_path=tif, osm_path=osm).build()
    assert np.all(np.diff(terrain.elevation, axis=1) > 0)  # rises east, column 0 west


def test_no_data_inside_the_box_is_refused(tmp_path):
    def with_hole(lon, lat):
        heights = np.full(np.shape(lon), 120.0)
        heights[np.abs(lat - 50.70) + np.abs(lon - 4.41) < 0.003] = -32768.0
        return heights

    tif = write_raster(tmp_path / "voids.tif", WATERLOO, with_hole, nodata=-32768.0)
    osm = Osm().write(tmp_path / "empty.osm")
    with pytest.raises(ValueError, match=r"voids\.tif.*no-data"):
        GISTerrainBuilder("waterloo", srtm_path=tif, osm_path=osm).build()


def test_no_data_outside_the_box_is_ignored(tmp_path):
    def outside_hole(lon, lat):
        heights = np.full(np.shape(lon), 120.0)
        heights[lat > WATERLOO.lat_max + 0.003] = -32768.0
        return heights

    tif = write_raster(tmp_path / "edge.tif", WATERLOO, outside_hole, nodata=-32768.0)
    osm = Osm().write(tmp_path / "empty.osm")
    terrain = GISTerrainBuilder("waterloo", srtm_path=tif, osm_path=osm).build()
    assert np.array_equal(terrain.elevation, np.zeros((40, 40)))


# --- OSM layers ------------------------------------------------------------------------


def test_road_marks_exactly_the_cells_the_line_crosses(tmp_path, flat_tif):
    osm = Osm(rows=4, cols=4)
    # Slope 2/3 from (0.5, 0.5) to (3.5, 2.5): crosses x = 1, 2, 3 at t = 1/6, 1/2, 5/6
    # and y = 1, 2 at t = 1/4, 3/4, so it visits these six cells in turn.
    osm.way([(0.5, 0.5), (3.5, 2.5)], {"highway": "primary"})
    path = osm.write(tmp_path / "road.osm")
    road = GISTerrainBuilder("waterloo", 4, 4, srtm_path=flat_tif,
                             osm_path=path).build_road_network_data()
    assert road.dtype == bool and road.shape == (4, 4)
    assert cells(road) == {(0, 0), (0, 1), (1, 1), (1, 2), (2, 2), (2, 3)}


def test_road_through_cell_corners_marks_only_the_diagonal(tmp_path):
    osm = Osm(rows=4, cols=4)
    osm.way([(0.5, 0.5), (2.5, 2.5)], {"highway": "track"})
    # A polyline leaving the box: only the part inside is drawn.
    osm.way([(3.5, 0.5), (3.5, 1.5), (5.0, 1.5)], {"highway": "residential"})
    road = GISTerrainBuilder("waterloo", 4, 4,
                             osm_path=osm.write(tmp_path / "r.osm")).build_road_network_data()
    assert cells(road) == {(0, 0), (1, 1), (2, 2), (0, 3), (1, 3)}


def test_untagged_and_other_ways_are_ignored(tmp_path):
    osm = Osm(rows=4, cols=4)
    osm.way([(0.5, 0.5), (3.5, 0.5)], {"highway": "footway"})
    osm.way([(0.5, 1.5), (3.5, 1.5)], {"name": "a boundary"})
    osm.way([(0.2, 2.2), (3.8, 2.2), (3.8, 3.8), (0.2, 3.8)], {"landuse": "meadow"}, closed=True)
    builder = GISTerrainBuilder("waterloo", 4, 4, osm_path=osm.write(tmp_path / "o.osm"))
    masks = builder.build_osm_masks()
    for mask in (masks.road, masks.forest, masks.settlement, masks.water):
        assert not mask.any()


def _feature_osm(tmp_path) -> Path:
    osm = Osm(rows=8, cols=8)
    # Wood: cell centres 1.5..4.5 east and 2.5..5.5 north lie inside.
    osm.way([(1.2, 2.2), (4.8, 2.2), (4.8, 5.8), (1.2, 5.8)], {"natural": "wood"}, closed=True)
    # Residential land overlapping the wood's north-east corner: columns 4-5, rows 5-6.
    osm.way([(3.7, 4.7), (5.8, 4.7), (5.8, 6.9), (3.7, 6.9)], {"landuse": "residential"},
            closed=True)
    osm.node(7.5, 0.5, {"place": "village", "name": "Plancenoit"})
    osm.node(7.5, 1.5, {"place": "city"})  # not a settlement class the importer reads
    osm.way([(-1.0, 7.5), (9.0, 7.5)], {"waterway": "river"})  # across the northern row
    # A triangular pond with cell centres (0, 0), (0, 1) and (1, 0) inside.
    osm.way([(0.1, 0.1), (2.2, 0.1), (0.1, 2.2)], {"natural": "water"}, closed=True)
    return osm.write(tmp_path / "features.osm")


def _block(rows, cols) -> set[tuple[int, int]]:
    return {(r, c) for r in rows for c in cols}


def test_forest_settlement_and_water_masks(tmp_path, flat_tif):
    layers = GISTerrainBuilder("waterloo", 8, 8, srtm_path=flat_tif,
                               osm_path=_feature_osm(tmp_path)).build_layers()
    assert isinstance(layers, TerrainLayers)
    assert cells(layers.forest) == _block(range(2, 6), range(1, 5))
    assert cells(layers.settlement) == _block(range(5, 7), range(4, 6)) | {(0, 7)}
    assert cells(layers.water) == {(7, c) for c in range(8)} | {(0, 0), (0, 1), (1, 0)}
    assert not layers.road.any()
    with pytest.raises(ValueError):
        layers.water[0, 0] = False  # read-only


@pytest.mark.parametrize("forest_w, settlement_w", [(1.0, 0.5), (0.3, 0.4), (0.0, 2.0)])
def test_cover_weights_forest_and_settlement_and_clips_to_one(tmp_path, flat_tif, forest_w,
                                                              settlement_w):
    layers = GISTerrainBuilder("waterloo", 8, 8, srtm_path=flat_tif,
                               osm_path=_feature_osm(tmp_path), forest_cover_weight=forest_w,
                               settlement_cover_weight=settlement_w).build_layers()
    forest, settlement = layers.forest, layers.settlement
    expected = np.zeros((8, 8))
    expected[forest & ~settlement] = min(forest_w, 1)
    expected[settlement & ~forest] = min(settlement_w, 1)
    expected[forest & settlement] = min(forest_w + settlement_w, 1)
    assert (forest & settlement).any() and (forest & ~settlement).any()
    np.testing.assert_allclose(layers.cover, expected, atol=1e-6)
    assert layers.cover[5, 4] == pytest.approx(min(forest_w + settlement_w, 1.0))


def test_default_weights_give_one_for_woods_and_half_for_villages(tmp_path, flat_tif):
    terrain = GISTerrainBuilder("waterloo", 8, 8, srtm_path=flat_tif,
                                osm_path=_feature_osm(tmp_path)).build()
    assert terrain.cover[2, 1] == 1.0 and terrain.cover[0, 7] == 0.5
    assert terrain.cover[6, 5] == 0.5 and terrain.cover[7, 0] == 0.0


def test_open_way_with_an_area_tag_is_skipped(tmp_path, caplog):
    osm = Osm(rows=4, cols=4)
    osm.way([(0.2, 0.2), (3.8, 0.2), (3.8, 3.8), (0.2, 3.8)], {"landuse": "forest"})
    builder = GISTerrainBuilder("waterloo", 4, 4, osm_path=osm.write(tmp_path / "open.osm"))
    assert not builder.build_osm_masks().forest.any()
    assert "way 100 has an area tag but is not closed" in caplog.text


def test_malformed_xml_is_refused_naming_the_file(tmp_path, flat_tif):
    bad = tmp_path / "broken.osm"
    bad.write_text('<osm version="0.6"><node id="1" lat="50.7" lon="4.4"></osm>')
    with pytest.raises(ValueError, match=r"broken\.osm.*not well-formed XML"):
        GISTerrainBuilder("waterloo", srtm_path=flat_tif, osm_path=bad).build()


def test_way_with_a_missing_node_is_refused_naming_the_way(tmp_path):
    osm = Osm(rows=4, cols=4)
    first = osm.node(0.5, 0.5)
    osm.way([], {"highway": "path"}, refs=[first, "999"])
    path = osm.write(tmp_path / "dangling.osm")
    with pytest.raises(ValueError, match=r"dangling\.osm.*way id='100'.*node '999'"):
        GISTerrainBuilder("waterloo", 4, 4, osm_path=path).build_road_network_data()


# --- the builder -----------------------------------------------------------------------


def test_build_returns_a_terrain_map_of_the_site(tmp_path):
    site = BATTLE_SITES["borodino"]
    tif = write_raster(tmp_path / "b.tif", site, lambda lon, lat: 200 + 1000 * (lat - 55.49))
    osm = Osm(site, 12, 10).write(tmp_path / "b.osm")
    terrain = GISTerrainBuilder("borodino", rows=12, cols=10, srtm_path=str(tif),
                                osm_path=osm).build()
    assert isinstance(terrain, TerrainMap) and terrain.shape == (12, 10)
    assert terrain.width == pytest.approx(site.width_m)
    assert terrain.height == pytest.approx(0.06 * 111_320)
    # The simulator's y runs north like the rows: its elevation grows with y.
    assert terrain.elevation_at(100.0, terrain.height - 1) > terrain.elevation_at(100.0, 1.0)


def test_unknown_site_is_a_key_error_listing_the_sites():
    with pytest.raises(KeyError, match=r"'jena'.*'waterloo', 'austerlitz'"):
        GISTerrainBuilder("jena")


@pytest.mark.parametrize("kwargs, field", [
    ({"rows": 1}, "rows"), ({"cols": 2.5}, "cols"), ({"rows": True}, "rows"),
    ({"forest_cover_weight": -0.1}, "forest_cover_weight"),
    ({"settlement_cover_weight": math.nan}, "settlement_cover_weight"),
    ({"osm_path": ""}, "osm_path"),
])
def test_invalid_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"^{field}="):
        GISTerrainBuilder("waterloo", **kwargs)


def test_missing_shipped_files_raise_file_not_found(tmp_path, monkeypatch):
    monkeypatch.setattr(ti, "SITES_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"elevation raster file .*austerlitz\.tif"):
        GISTerrainBuilder("austerlitz").build()
    write_raster(tmp_path / "austerlitz.tif", BATTLE_SITES["austerlitz"],
                 lambda lon, lat: 250 + 0 * lon)
    with pytest.raises(FileNotFoundError, match=r"OSM file .*austerlitz\.osm"):
        GISTerrainBuilder("austerlitz").build()
    Osm(BATTLE_SITES["austerlitz"]).write(tmp_path / "austerlitz.osm")
    assert GISTerrainBuilder("austerlitz", 6, 6).build().shape == (6, 6)


def test_build_all_battle_terrains_reads_every_site(tmp_path):
    for name, site in BATTLE_SITES.items():
        mid = 0.5 * (site.elevation_min + site.elevation_max)
        write_raster(tmp_path / f"{name}.tif", site,
                     lambda lon, lat, mid=mid, site=site: mid + 500 * (lon - site.lon_min))
        osm = Osm(site, 6, 5)
        osm.way([(0.5, 0.5), (4.5, 0.5)], {"highway": "secondary"})
        osm.write(tmp_path / f"{name}.osm")
    terrains = build_all_battle_terrains(6, 5, tmp_path)
    assert list(terrains) == list(BATTLE_SITES)
    for name, terrain in terrains.items():
        assert terrain.shape == (6, 5)
        assert terrain.width == pytest.approx(BATTLE_SITES[name].width_m)
        assert np.all(np.diff(terrain.elevation, axis=1) > 0)
    (tmp_path / "salamanca.osm").unlink()
    with pytest.raises(FileNotFoundError, match=r"salamanca\.osm"):
        build_all_battle_terrains(6, 5, tmp_path)


def test_water_is_impassable_but_where_a_road_bridges_it_and_roads_are_quick(tmp_path,
                                                                              flat_tif):
    osm = Osm(rows=8, cols=8)
    osm.way([(-1.0, 7.5), (9.0, 7.5)], {"waterway": "river"})  # across the northern row
    osm.way([(3.5, -1.0), (3.5, 9.0)], {"highway": "primary"})  # column 3, south to north
    terrain = GISTerrainBuilder("waterloo", 8, 8, srtm_path=flat_tif,
                                osm_path=osm.write(tmp_path / "bridge.osm")).build()
    assert terrain.going[7, 3] == pytest.approx(FORD_GOING)  # the bridge
    assert (np.delete(terrain.going[7], 3) == 0).all()
    assert terrain.going[2, 3] == pytest.approx(ROAD_GOING)
    assert terrain.going[2, 2] == 1.0


def test_a_stream_slows_and_does_not_stop(tmp_path, flat_tif):
    osm = Osm(rows=8, cols=8)
    osm.way([(2.5, -1.0), (2.5, 9.0)], {"waterway": "stream"})  # column 2
    layers = GISTerrainBuilder("waterloo", 8, 8, srtm_path=flat_tif,
                               osm_path=osm.write(tmp_path / "stream.osm")).build_layers()
    assert layers.stream[:, 2].all() and not layers.water.any()
    assert (layers.going[:, 2] == pytest.approx(STREAM_GOING))
