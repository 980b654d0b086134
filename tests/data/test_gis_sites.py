"""The shipped battle-site files (data/gis/sites/) and the script that writes them."""

from __future__ import annotations

import numpy as np
import pytest
import rasterio
from scipy import ndimage

from data.gis import build_sites as bs
from data.gis.terrain_importer import BATTLE_SITES, SITES_DIR, GISTerrainBuilder

GRIDS = [(40, 40), (20, 20)]  # the default grid and a coarser one


@pytest.fixture(scope="module")
def layers():
    """Every site's layers at every grid of GRIDS, built once from the shipped files."""
    return {(name, rows, cols): GISTerrainBuilder(name, rows, cols).build_layers()
            for name in BATTLE_SITES for rows, cols in GRIDS}


def cell(name, rows, cols, lon, lat) -> tuple[int, int]:
    """The (row, col) of the cell holding (lon, lat); row 0 is south."""
    s = BATTLE_SITES[name]
    r = int((lat - s.lat_min) / (s.lat_max - s.lat_min) * rows)
    c = int((lon - s.lon_min) / (s.lon_max - s.lon_min) * cols)
    return min(r, rows - 1), min(c, cols - 1)


def feature(name, feature_name):
    """A feature of the site's description, by name."""
    desc = bs.SITE_DESCRIPTIONS[name]
    found = [f for f in (*desc.hills, *desc.ridges, *desc.valleys, *desc.ways, *desc.places)
             if f.name == feature_name]
    assert found, f"{name} has no feature {feature_name!r}"
    return found[0]


def ring(grid, r, c, k):
    """Values of ``grid`` at Chebyshev distance exactly ``k`` from (r, c)."""
    rows, cols = grid.shape
    return np.array([grid[i, j] for i in range(r - k, r + k + 1)
                     for j in range(c - k, c + k + 1)
                     if max(abs(i - r), abs(j - c)) == k and 0 <= i < rows and 0 <= j < cols])


# --- the shipped files -----------------------------------------------------------------


def test_every_site_has_a_description_and_shipped_files():
    assert list(bs.SITE_DESCRIPTIONS) == list(BATTLE_SITES)
    for name in BATTLE_SITES:
        for ext in ("tif", "osm"):
            path = SITES_DIR / f"{name}.{ext}"
            assert path.is_file() and 0 < path.stat().st_size < 300_000, path


@pytest.mark.parametrize("name", list(BATTLE_SITES))
def test_rasters_are_epsg4326_heights_over_the_box_in_the_site_range(name):
    site = BATTLE_SITES[name]
    with rasterio.open(SITES_DIR / f"{name}.tif") as src:
        assert src.count == 1 and src.crs.to_epsg() == 4326 and src.dtypes[0] == "float32"
        assert src.profile["compress"] == "deflate"
        b = src.bounds
        assert b.left <= site.lon_min and b.right >= site.lon_max
        assert b.bottom <= site.lat_min and b.top >= site.lat_max
        assert b.right - b.left < 1.05 * (site.lon_max - site.lon_min)  # only slightly more
        heights = src.read(1)
    assert site.elevation_min <= heights.min() < heights.max() <= site.elevation_max


@pytest.mark.parametrize("name", list(BATTLE_SITES))
@pytest.mark.parametrize("rows, cols", GRIDS + [(30, 24)])
def test_shipped_files_build_with_every_layer_populated(layers, name, rows, cols):
    built = (layers[name, rows, cols] if (name, rows, cols) in layers
             else GISTerrainBuilder(name, rows, cols).build_layers())
    assert built.shape == (rows, cols)
    assert built.elevation.min() == 0.0 and built.elevation.max() == 1.0
    for mask in (built.forest, built.settlement, built.road, built.water | built.stream):
        assert 0 < mask.sum() < rows * cols
    terrain = built.to_terrain_map()
    assert terrain.shape == (rows, cols)


@pytest.mark.parametrize("name", list(BATTLE_SITES))
@pytest.mark.parametrize("rows, cols", GRIDS)
def test_passable_ground_is_one_region(layers, name, rows, cols):
    # Rivers and ponds are impassable but where a road bridges them (streams only slow):
    # every one is crossed or skirted somewhere, so no part of the field is cut off
    # (4-connected cells).
    built = layers[name, rows, cols]
    _, regions = ndimage.label(~built.water | built.road)
    assert regions == 1


# --- the features are where the description puts them ---------------------------------


@pytest.mark.parametrize("rows, cols", GRIDS)
def test_waterloo_ridge_hougoumont_and_brussels_road(layers, rows, cols):
    got = layers["waterloo", rows, cols]
    # Along the front, the Mont-Saint-Jean crest (lat 50.6805) is well above (by more than
    # a tenth of the site's relief) the valley (lat 50.6745) between it and the La Belle
    # Alliance ridge to the south.
    for lon in np.linspace(4.385, 4.435, 6):
        crest, valley = cell("waterloo", rows, cols, lon, 50.6805), cell(
            "waterloo", rows, cols, lon, 50.6745)
        assert crest[0] > valley[0]
        assert got.elevation[crest] > got.elevation[valley] + 0.1, lon
    # La Belle Alliance (on its ridge) is above the valley too.
    ba, valley = cell("waterloo", rows, cols, 4.4175, 50.6700), cell(
        "waterloo", rows, cols, 4.4175, 50.6745)
    assert ba[0] < valley[0] and got.elevation[ba] > got.elevation[valley]
    assert got.forest[cell("waterloo", rows, cols, 4.3925, 50.6717)]  # Hougoumont
    # La Haye Sainte and Mont-Saint-Jean lie on the Brussels road; Waterloo is a town.
    for lon, lat in [(4.4125, 50.6785), (4.4050, 50.6900), (4.3995, 50.7150), (4.4175, 50.6705)]:
        assert got.road[cell("waterloo", rows, cols, lon, lat)]
    road = feature("waterloo", "Brussels-Charleroi road")
    assert all(got.road[cell("waterloo", rows, cols, lon, lat)] for lon, lat in road.points)
    for lon, lat in [(4.3995, 50.7150), (4.4055, 50.6915), (4.4285, 50.6625)]:
        assert got.settlement[cell("waterloo", rows, cols, lon, lat)]
    assert got.forest[cell("waterloo", rows, cols, 4.4400, 50.6680)]  # Bois de Paris
    assert got.stream[cell("waterloo", rows, cols, 4.4545, 50.6800)]  # the Lasne, fordable


@pytest.mark.parametrize("rows, cols", GRIDS)
def test_austerlitz_pratzen_is_highest_and_the_goldbach_below_it(layers, rows, cols):
    got = layers["austerlitz", rows, cols]
    site = BATTLE_SITES["austerlitz"]
    top = np.unravel_index(np.argmax(got.elevation), got.shape)
    top_lat = site.lat_min + (top[0] + 0.5) * (site.lat_max - site.lat_min) / rows
    top_lon = site.lon_min + (top[1] + 0.5) * (site.lon_max - site.lon_min) / cols
    # The highest cell is within ~1 km of the Pratzen summit (16.763 E, 49.128 N).
    assert abs(top_lat - 49.128) * 111_320 < 1000 and abs(top_lon - 16.763) * 72_900 < 1000
    pratzen = got.elevation[cell("austerlitz", rows, cols, 16.763, 49.128)]
    assert pratzen > 0.9
    for other in ("Stare Vinohrady (the old vineyards)", "Santon"):
        hill = feature("austerlitz", other)
        assert got.elevation[cell("austerlitz", rows, cols, hill.lon, hill.lat)] < pratzen
    for lon, lat in feature("austerlitz", "Goldbach").points:
        rc = cell("austerlitz", rows, cols, lon, lat)
        assert got.stream[rc] and got.elevation[rc] < pratzen - 0.5
    # The Goldbach villages lie west of the heights, Austerlitz town in the east.
    for lon, lat in [(16.7380, 49.1010), (16.7420, 49.1180), (16.7470, 49.1370),
                     (16.8430, 49.1520)]:
        assert got.settlement[cell("austerlitz", rows, cols, lon, lat)]
    # The Satschan pond in the south is water; the Brünn-Olmütz road runs in the north.
    assert got.water[cell("austerlitz", rows, cols, 16.7600, 49.0950)]
    assert got.road[cell("austerlitz", rows, cols, 16.7800, 49.1660)]


@pytest.mark.parametrize("rows, cols", GRIDS)
def test_borodino_kolocha_redoubts_and_woods(layers, rows, cols):
    got = layers["borodino", rows, cols]
    for lon, lat in feature("borodino", "Kolocha").points:
        assert got.water[cell("borodino", rows, cols, lon, lat)]
    village = cell("borodino", rows, cols, 35.8190, 55.5270)
    assert got.settlement[village] and got.road[village]
    # The Raevsky redoubt stands above the Kolocha at Borodino and the Semyonovka ravine.
    raevsky = got.elevation[cell("borodino", rows, cols, 35.8245, 55.5205)]
    assert raevsky > got.elevation[cell("borodino", rows, cols, 35.8165, 55.5265)]
    assert raevsky > got.elevation[cell("borodino", rows, cols, 35.8295, 55.5095)]
    assert got.forest[cell("borodino", rows, cols, 35.8200, 55.4960)]  # the Utitsa woods
    assert got.settlement[cell("borodino", rows, cols, 35.8050, 55.4940)]  # Utitsa


@pytest.mark.parametrize("rows, cols", GRIDS)
def test_salamanca_arapiles_stand_above_their_surroundings(layers, rows, cols):
    got = layers["salamanca", rows, cols]
    for name in ("Arapil Grande (Greater Arapile)", "Arapil Chico (Lesser Arapile)"):
        hill = feature("salamanca", name)
        r, c = cell("salamanca", rows, cols, hill.lon, hill.lat)
        assert got.elevation[r, c] > ring(got.elevation, r, c, 2).max(), name
    grande = cell("salamanca", rows, cols, -5.5000, 40.9230)
    chico = cell("salamanca", rows, cols, -5.4950, 40.9320)
    assert chico[0] > grande[0]  # the Lesser Arapile is the northern one
    assert got.elevation[grande] == 1.0  # the Greater Arapile is the highest ground
    # The Tormes crosses the north of the box; the village lies west of the hills.
    tormes = feature("salamanca", "Tormes")
    assert all(got.water[cell("salamanca", rows, cols, lon, lat)] for lon, lat in tormes.points)
    assert min(lat for _, lat in tormes.points) > 40.95
    assert got.settlement[cell("salamanca", rows, cols, -5.5150, 40.9275)]


# --- the script ------------------------------------------------------------------------


def test_build_script_is_deterministic_and_reproduces_the_shipped_files(tmp_path):
    first = bs.build_sites(tmp_path / "a")
    second = bs.build_sites(tmp_path / "b")
    assert [p.name for p in first] == [f"{n}.{e}" for n in BATTLE_SITES for e in ("tif", "osm")]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    for path in first:
        shipped = SITES_DIR / path.name
        if path.suffix == ".osm":
            assert path.read_bytes() == shipped.read_bytes(), path.name
        else:  # the same grid and heights (to the stored 0.1 m) as the shipped raster
            with rasterio.open(path) as new, rasterio.open(shipped) as old:
                assert new.transform == old.transform and new.shape == old.shape
                np.testing.assert_allclose(new.read(1), old.read(1), atol=0.11)


def test_build_script_builds_one_site_and_refuses_unknown_ones(tmp_path):
    assert bs.main(["--out-dir", str(tmp_path), "--site", "borodino"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["borodino.osm", "borodino.tif"]
    with pytest.raises(KeyError, match="jena"):
        bs.build_sites(tmp_path, ["jena"])


def test_features_outside_the_box_are_refused():
    desc = bs.SITE_DESCRIPTIONS["waterloo"]
    moved = bs.SiteDescription(**{**desc.__dict__,
                                  "places": (bs.Place("Brussels", 4.35, 50.85, "city"),)})
    with pytest.raises(ValueError, match="'Brussels'.*outside the site's box"):
        bs.check_description(moved, BATTLE_SITES["waterloo"])
