"""Writes the shipped terrain files of the four battle sites: ``data/gis/sites/<site>.tif``
and ``data/gis/sites/<site>.osm``, the inputs :mod:`data.gis.terrain_importer` reads.

``<site>.tif`` is a single-band float32 GeoTIFF (deflate) of ground height in metres,
EPSG:4326, :data:`PIXELS` pixels square over the site's box plus :data:`MARGIN_PIXELS`
on every side; ``<site>.osm`` is OSM XML (version 0.6, negative ids as for unsaved data)
with the roads, woods, settlements and water the importer rasterises. **These are not
survey data**: every feature is a hand-written approximation of the battlefield's
documented geography, placed by eye, on ground made of smooth shapes; they give the
simulator a battlefield of the right shape, not a map to navigate by
(``docs/scenarios.md``, "Battle sites"). The files are written deterministically, so
running the script again reproduces them byte for byte::

    python -m data.gis.build_sites                  # writes data/gis/sites/
    python -m data.gis.build_sites --out-dir /tmp/sites --site waterloo
"""

from __future__ import annotations

import argparse
import math
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from data.gis.terrain_importer import (
    BATTLE_SITES,
    METRES_PER_DEGREE_LAT,
    SITES_DIR,
    BattleSite,
)

PIXELS = 200
"""Raster pixels across the site's box, in each direction."""
MARGIN_PIXELS = 2
"""Pixels the raster reaches beyond the box on every side."""
HEIGHT_STEP_M = 0.1
"""Heights are rounded to this before they are stored (smaller, reproducible files)."""

LonLat = tuple[float, float]


# --- the description's vocabulary ------------------------------------------------------


@dataclass(frozen=True)
class Hill:
    """A hill (or, with a negative height, a hollow) centred at ``(lon, lat)``.

    Its profile is ``height * exp(-0.5 * r ** sharpness)`` with ``r`` the elliptical
    distance in units of ``rx_m`` east-west and ``ry_m`` north-south: sharpness 2 is a
    Gaussian, larger values give a flat top and steep sides.
    """

    name: str
    lon: float
    lat: float
    height: float
    rx_m: float
    ry_m: float
    sharpness: float = 2.0


@dataclass(frozen=True)
class Ridge:
    """A ridge of ``height`` metres along a polyline, with the cross profile
    ``exp(-0.5 * (d / width_m) ** sharpness)`` of the distance ``d`` to the line."""

    name: str
    points: tuple[LonLat, ...]
    height: float
    width_m: float
    sharpness: float = 2.0


@dataclass(frozen=True)
class Valley:
    """A valley ``depth`` metres deep cut along a polyline (profile as for :class:`Ridge`).
    With a ``waterway`` (``"river"`` or ``"stream"``) the polyline is also a watercourse
    in the OSM file; without one it is a dry hollow."""

    name: str
    points: tuple[LonLat, ...]
    depth: float
    width_m: float
    sharpness: float = 2.0
    waterway: str | None = None


@dataclass(frozen=True)
class Way:
    """An OSM way: a line (``closed=False``: roads) or an area (``closed=True``: woods,
    residential land, ponds), with its tags."""

    name: str
    points: tuple[LonLat, ...]
    tags: tuple[tuple[str, str], ...]
    closed: bool = False


@dataclass(frozen=True)
class Place:
    """A tagged OSM node: a town, village or hamlet (``place=*``)."""

    name: str
    lon: float
    lat: float
    place: str


@dataclass(frozen=True)
class SiteDescription:
    """One battlefield: its ground (a plane plus hills, ridges and valleys) and its
    features. The plane is ``base_m`` at the box's centre, rising ``tilt_east`` and
    ``tilt_north`` metres per kilometre."""

    site: str
    base_m: float
    tilt_east: float
    tilt_north: float
    hills: tuple[Hill, ...]
    ridges: tuple[Ridge, ...]
    valleys: tuple[Valley, ...]
    ways: tuple[Way, ...]
    places: tuple[Place, ...]


def _road(name: str, points: Sequence[LonLat], highway: str) -> Way:
    return Way(name, tuple(points), (("highway", highway), ("name", name)))


def _area(name: str, points: Sequence[LonLat], key: str, value: str) -> Way:
    return Way(name, tuple(points), ((key, value), ("name", name)), closed=True)


def _wood(name: str, points: Sequence[LonLat]) -> Way:
    return _area(name, points, "natural", "wood")


def _forest(name: str, points: Sequence[LonLat]) -> Way:
    return _area(name, points, "landuse", "forest")


def _residential(name: str, points: Sequence[LonLat]) -> Way:
    return _area(name, points, "landuse", "residential")


def _pond(name: str, points: Sequence[LonLat]) -> Way:
    return _area(name, points, "natural", "water")


def _box(west: float, south: float, east: float, north: float) -> tuple[LonLat, ...]:
    return ((west, south), (east, south), (east, north), (west, north))


# --- the four battlefields -------------------------------------------------------------

# Waterloo, 18 June 1815. Wellington's line held the Mont-Saint-Jean ridge (the Ohain
# lane along its crest) with Hougoumont, La Haye Sainte and Papelotte/La Haie as
# outposts in front; Napoleon's army formed on the La Belle Alliance ridge ~1.2 km to
# the south; the Prussians came from the east through the Lasne valley and the Bois de
# Paris towards Plancenoit.
_WATERLOO_BRUSSELS_ROAD = (
    (4.3975, 50.7400), (4.3990, 50.7250), (4.3995, 50.7150), (4.4020, 50.7000),
    (4.4050, 50.6900), (4.4095, 50.6810), (4.4125, 50.6785), (4.4175, 50.6705),
    (4.4210, 50.6600),
)
WATERLOO = SiteDescription(
    site="waterloo", base_m=125.0, tilt_east=0.0, tilt_north=0.5,
    hills=(
        Hill("Rossomme height", 4.4200, 50.6625, 8.0, 600.0, 450.0),
        Hill("Soignes plateau", 4.4300, 50.7250, 10.0, 2500.0, 1800.0),
    ),
    ridges=(
        Ridge("Mont-Saint-Jean ridge", (
            (4.3720, 50.6765), (4.3850, 50.6790), (4.3980, 50.6805), (4.4095, 50.6810),
            (4.4220, 50.6805), (4.4350, 50.6790), (4.4450, 50.6775)), 20.0, 330.0),
        Ridge("La Belle Alliance ridge", (
            (4.3800, 50.6665), (4.3950, 50.6680), (4.4080, 50.6695), (4.4175, 50.6700),
            (4.4280, 50.6690), (4.4360, 50.6675)), 17.0, 330.0),
    ),
    valleys=(
        Valley("valley between the ridges", (
            (4.3850, 50.6740), (4.4000, 50.6745), (4.4150, 50.6748), (4.4280, 50.6745)),
            5.0, 220.0),
        Valley("Lasne", (
            (4.4460, 50.6600), (4.4500, 50.6700), (4.4545, 50.6800), (4.4575, 50.6900),
            (4.4600, 50.6980)), 30.0, 450.0, waterway="stream"),
        Valley("Smohain stream", (
            (4.4270, 50.6780), (4.4340, 50.6768), (4.4420, 50.6752), (4.4480, 50.6758),
            (4.4531, 50.6770)), 9.0, 180.0, waterway="stream"),
    ),
    ways=(
        _road("Brussels-Charleroi road", _WATERLOO_BRUSSELS_ROAD, "primary"),
        _road("Nivelles road", (
            (4.4050, 50.6900), (4.3945, 50.6810), (4.3855, 50.6720), (4.3760, 50.6600)),
            "secondary"),
        _road("Ohain road", (
            (4.3830, 50.6800), (4.3960, 50.6812), (4.4095, 50.6810), (4.4220, 50.6807),
            (4.4350, 50.6800), (4.4460, 50.6810), (4.4600, 50.6830)), "unclassified"),
        _road("Waterloo-Braine-l'Alleud road", (
            (4.3995, 50.7150), (4.3850, 50.7020), (4.3700, 50.6880), (4.3600, 50.6840)),
            "secondary"),
        _road("Plancenoit lane", (
            (4.4175, 50.6705), (4.4230, 50.6665), (4.4285, 50.6625), (4.4380, 50.6600)),
            "track"),
        _road("Papelotte lane", (
            (4.4300, 50.6803), (4.4325, 50.6780), (4.4395, 50.6790), (4.4440, 50.6720)),
            "track"),
        _road("Hougoumont lane", ((4.3870, 50.6735), (4.3925, 50.6717)), "track"),
        _wood("Hougoumont wood and orchard", (
            (4.3895, 50.6655), (4.3985, 50.6660), (4.3975, 50.6735), (4.3885, 50.6735))),
        _wood("Bois de Paris", (
            (4.4350, 50.6640), (4.4440, 50.6650), (4.4460, 50.6700), (4.4360, 50.6710))),
        _forest("Forêt de Soignes", (
            (4.4150, 50.7000), (4.4600, 50.6990), (4.4600, 50.7400), (4.4200, 50.7400),
            (4.4100, 50.7200))),
        _residential("Waterloo", (
            (4.3920, 50.7090), (4.4060, 50.7090), (4.4070, 50.7210), (4.3930, 50.7220))),
        _residential("Mont-Saint-Jean", _box(4.4010, 50.6885, 4.4090, 50.6945)),
        _residential("Plancenoit", _box(4.4235, 50.6605, 4.4335, 50.6655)),
        _residential("Braine-l'Alleud", (
            (4.3600, 50.6790), (4.3740, 50.6790), (4.3760, 50.6890), (4.3600, 50.6900))),
    ),
    places=(
        Place("Waterloo", 4.3995, 50.7150, "town"),
        Place("Braine-l'Alleud", 4.3680, 50.6840, "town"),
        Place("Mont-Saint-Jean", 4.4055, 50.6915, "village"),
        Place("Plancenoit", 4.4285, 50.6625, "village"),
        Place("Mont-Saint-Jean farm", 4.4075, 50.6870, "hamlet"),
        Place("Hougoumont", 4.3925, 50.6717, "hamlet"),
        Place("La Haye Sainte", 4.4125, 50.6785, "hamlet"),
        Place("Papelotte", 4.4325, 50.6780, "hamlet"),
        Place("La Haie", 4.4395, 50.6790, "hamlet"),
        Place("Frichermont", 4.4440, 50.6720, "hamlet"),
        Place("Smohain", 4.4470, 50.6760, "hamlet"),
        Place("La Belle Alliance", 4.4175, 50.6705, "hamlet"),
        Place("Rossomme", 4.4200, 50.6625, "hamlet"),
    ),
)

# Austerlitz, 2 December 1805. The Allies held the Pratzen heights and came down them
# westwards against Napoleon's right along the Goldbach (Telnitz, Sokolnitz, Kobelnitz);
# Soult's corps then took the emptied heights from the west. The Santon anchored the
# French left on the Brünn-Olmütz road; the Allied left fell back over the frozen
# Satschan and Menitz ponds in the south.
_GOLDBACH = (
    (16.7460, 49.1700), (16.7480, 49.1560), (16.7450, 49.1400), (16.7420, 49.1250),
    (16.7400, 49.1120), (16.7380, 49.1000), (16.7350, 49.0900),
)
AUSTERLITZ = SiteDescription(
    site="austerlitz", base_m=244.0, tilt_east=-0.5, tilt_north=1.0,
    hills=(
        Hill("Pratzen heights (Pratzeberg)", 16.7630, 49.1280, 52.0, 1100.0, 1400.0),
        Hill("Stare Vinohrady (the old vineyards)", 16.7800, 49.1450, 18.0, 900.0, 900.0),
        Hill("Santon", 16.7520, 49.1670, 22.0, 300.0, 300.0),
        Hill("Satschan pond basin", 16.7580, 49.0950, -12.0, 1000.0, 600.0),
        Hill("Menitz pond basin", 16.7360, 49.0935, -5.0, 700.0, 500.0),
    ),
    ridges=(
        Ridge("Pratzen plateau", (
            (16.7600, 49.1080), (16.7640, 49.1250), (16.7720, 49.1400), (16.7850, 49.1520)),
            20.0, 900.0),
    ),
    valleys=(
        Valley("Goldbach", _GOLDBACH, 12.0, 350.0, waterway="stream"),
    ),
    ways=(
        _road("Brünn-Olmütz road", (
            (16.7300, 49.1610), (16.7520, 49.1635), (16.7800, 49.1660), (16.8100, 49.1680),
            (16.8500, 49.1698)), "primary"),
        _road("Brünn-Austerlitz road", (
            (16.7300, 49.1480), (16.7505, 49.1530), (16.7700, 49.1545), (16.8000, 49.1530),
            (16.8200, 49.1515), (16.8430, 49.1520)), "secondary"),
        _road("Goldbach east-bank track", (
            (16.7440, 49.1020), (16.7470, 49.1120), (16.7490, 49.1250), (16.7520, 49.1370),
            (16.7540, 49.1530)), "track"),
        _road("Telnitz crossing", ((16.7300, 49.1030), (16.7380, 49.1010), (16.7440, 49.1020)),
              "track"),
        _road("Sokolnitz crossing", ((16.7300, 49.1190), (16.7420, 49.1180), (16.7480, 49.1180)),
              "track"),
        _road("Kobelnitz-Pratzen-Austerlitz track", (
            (16.7300, 49.1385), (16.7470, 49.1370), (16.7660, 49.1390), (16.7950, 49.1400),
            (16.8280, 49.1420), (16.8430, 49.1520)), "track"),
        _road("Blasowitz-Pratzen track", (
            (16.7880, 49.1650), (16.7800, 49.1545), (16.7660, 49.1390)), "track"),
        _wood("Sokolnitz pheasantry", (
            (16.7445, 49.1070), (16.7540, 49.1075), (16.7545, 49.1135), (16.7450, 49.1135))),
        _pond("Satschan pond", (
            (16.7470, 49.0905), (16.7680, 49.0905), (16.7700, 49.0990), (16.7600, 49.1010),
            (16.7480, 49.0980))),
        _pond("Menitz pond", (
            (16.7305, 49.0905), (16.7420, 49.0905), (16.7415, 49.0960), (16.7305, 49.0965))),
        _pond("Kobelnitz pond", (
            (16.7330, 49.1280), (16.7440, 49.1285), (16.7445, 49.1330), (16.7335, 49.1335))),
        _residential("Telnitz", _box(16.7320, 49.0985, 16.7440, 49.1045)),
        _residential("Sokolnitz", _box(16.7370, 49.1150, 16.7465, 49.1210)),
        _residential("Kobelnitz", _box(16.7450, 49.1340, 16.7520, 49.1400)),
        _residential("Pratzen", _box(16.7625, 49.1370, 16.7700, 49.1410)),
        _residential("Austerlitz", _box(16.8360, 49.1470, 16.8500, 49.1580)),
    ),
    places=(
        Place("Austerlitz", 16.8430, 49.1520, "town"),
        Place("Telnitz", 16.7380, 49.1010, "village"),
        Place("Sokolnitz", 16.7420, 49.1180, "village"),
        Place("Kobelnitz", 16.7470, 49.1370, "village"),
        Place("Puntowitz", 16.7505, 49.1530, "village"),
        Place("Pratzen", 16.7660, 49.1390, "village"),
        Place("Blasowitz", 16.7880, 49.1650, "village"),
        Place("Krzenowitz", 16.8280, 49.1420, "village"),
    ),
)

# Borodino, 7 September 1812. The Russian right lay behind the steep-banked Kolocha
# from Borodino northwards; the centre held the Raevsky (Great) redoubt on the Kurgan
# height; the left the Bagration fleches by Semyonovskaya, across the Semyonovka ravine,
# and the woods around Utitsa on the Old Smolensk road. The French had taken the
# Shevardino redoubt two days before.
_KOLOCHA = (
    (35.7900, 55.5130), (35.8000, 55.5165), (35.8100, 55.5225), (35.8165, 55.5265),
    (35.8250, 55.5330), (35.8320, 55.5400), (35.8380, 55.5460), (35.8430, 55.5500),
)
BORODINO = SiteDescription(
    site="borodino", base_m=221.0, tilt_east=0.5, tilt_north=-0.5,
    hills=(
        Hill("Kurgan height (Raevsky redoubt)", 35.8245, 55.5205, 14.0, 380.0, 380.0),
        Hill("Semyonovskaya heights (Bagration fleches)", 35.8250, 55.5090, 9.0, 500.0,
             500.0),
        Hill("Shevardino redoubt hill", 35.7955, 55.5020, 12.0, 350.0, 350.0),
        Hill("Utitsa kurgan", 35.8180, 55.4945, 13.0, 350.0, 350.0),
        Hill("Gorki height", 35.8420, 55.5300, 11.0, 500.0, 500.0),
    ),
    ridges=(),
    valleys=(
        Valley("Kolocha", _KOLOCHA, 17.0, 170.0, sharpness=4.0, waterway="river"),
        Valley("Voyna", (
            (35.7900, 55.5450), (35.8020, 55.5360), (35.8110, 55.5300), (35.8165, 55.5265)),
            9.0, 150.0, sharpness=4.0, waterway="stream"),
        Valley("Semyonovka", (
            (35.8340, 55.4950), (35.8310, 55.5030), (35.8295, 55.5095), (35.8230, 55.5160),
            (35.8170, 55.5210), (35.8130, 55.5243)), 11.0, 150.0, waterway="stream"),
    ),
    ways=(
        _road("New Smolensk road", (
            (35.7900, 55.5240), (35.8050, 55.5262), (35.8190, 55.5270), (35.8300, 55.5290),
            (35.8420, 55.5310), (35.8700, 55.5240), (35.9000, 55.5200)), "primary"),
        _road("Old Smolensk road", (
            (35.7900, 55.4960), (35.8050, 55.4940), (35.8300, 55.4985), (35.8600, 55.5050),
            (35.9000, 55.5120)), "secondary"),
        _road("Semyonovskaya-Gorki track", (
            (35.8360, 55.5100), (35.8400, 55.5200), (35.8420, 55.5310)), "track"),
        _road("Semyonovskaya-Utitsa track", (
            (35.8360, 55.5100), (35.8200, 55.5020), (35.8050, 55.4940)), "track"),
        _road("Shevardino-Semyonovskaya track", (
            (35.7925, 55.5060), (35.8100, 55.5080), (35.8230, 55.5090), (35.8360, 55.5100)),
            "track"),
        _road("track north across the Voyna", (
            (35.8050, 55.5262), (35.8020, 55.5400), (35.8000, 55.5500)), "track"),
        _wood("Utitsa woods", (
            (35.8100, 55.4905), (35.8330, 55.4905), (35.8320, 55.5010), (35.8160, 55.5045),
            (35.8100, 55.5000))),
        _wood("woods south of Shevardino", (
            (35.7900, 55.4905), (35.8000, 55.4905), (35.8010, 55.4975), (35.7900, 55.4985))),
        _wood("woods east of Semyonovskaya", (
            (35.8450, 55.4905), (35.8900, 55.4905), (35.8900, 55.5150), (35.8500, 55.5120))),
        _wood("woods north-east of Gorki", (
            (35.8600, 55.5320), (35.9000, 55.5300), (35.9000, 55.5500), (35.8650, 55.5500))),
        _residential("Borodino", _box(35.8140, 55.5245, 35.8240, 55.5300)),
        _residential("Semyonovskaya", _box(35.8330, 55.5080, 35.8390, 55.5120)),
        _residential("Gorki", _box(35.8395, 55.5295, 35.8455, 55.5330)),
    ),
    places=(
        Place("Borodino", 35.8190, 55.5270, "village"),
        Place("Semyonovskaya", 35.8360, 55.5100, "village"),
        Place("Utitsa", 35.8050, 55.4940, "village"),
        Place("Shevardino", 35.7925, 55.5060, "village"),
        Place("Gorki", 35.8420, 55.5310, "village"),
        Place("Tatarinovo", 35.8700, 55.5240, "village"),
    ),
)

# Salamanca (Los Arapiles), 22 July 1812. Wellington's line ran west from the Lesser
# Arapile through the village of Los Arapiles; Marmont held the Greater Arapile and,
# coming from Calvarrasa de Arriba in the east, extended his left westwards along the
# long ridge to the south, where Wellington's attack broke it. The Tormes runs west to
# Salamanca north of the field.
SALAMANCA = SiteDescription(
    site="salamanca", base_m=816.0, tilt_east=0.5, tilt_north=-1.2,
    hills=(
        Hill("Arapil Grande (Greater Arapile)", -5.5000, 40.9230, 40.0, 420.0, 260.0,
             sharpness=6.0),
        Hill("Arapil Chico (Lesser Arapile)", -5.4950, 40.9320, 30.0, 330.0, 220.0,
             sharpness=6.0),
        Hill("Teso de San Miguel", -5.5180, 40.9370, 12.0, 400.0, 400.0),
        Hill("Nuestra Señora de la Peña heights", -5.4650, 40.9380, 14.0, 600.0, 600.0),
    ),
    ridges=(
        Ridge("southern ridge (Monte de Azán)", (
            (-5.4950, 40.9140), (-5.5150, 40.9120), (-5.5350, 40.9110), (-5.5500, 40.9100)),
            24.0, 450.0),
    ),
    valleys=(
        Valley("hollow between Los Arapiles and the southern ridge", (
            (-5.4900, 40.9185), (-5.5200, 40.9190), (-5.5500, 40.9180)), 5.0, 300.0),
        Valley("Tormes", (
            (-5.4200, 40.9600), (-5.4450, 40.9665), (-5.4700, 40.9710), (-5.4950, 40.9690),
            (-5.5200, 40.9720), (-5.5500, 40.9700)), 18.0, 500.0, waterway="river"),
    ),
    ways=(
        _road("Los Arapiles-Salamanca road", (
            (-5.5150, 40.9275), (-5.5300, 40.9400), (-5.5500, 40.9530)), "secondary"),
        _road("Salamanca-Calvarrasa-Alba de Tormes road", (
            (-5.5500, 40.9640), (-5.5100, 40.9580), (-5.4700, 40.9560), (-5.4530, 40.9320),
            (-5.4300, 40.9100), (-5.4200, 40.9000)), "tertiary"),
        _road("Los Arapiles-Calvarrasa de Arriba track", (
            (-5.5150, 40.9275), (-5.4950, 40.9280), (-5.4750, 40.9300), (-5.4530, 40.9320)),
            "track"),
        _road("track south over the ridge", (
            (-5.5150, 40.9275), (-5.5200, 40.9120), (-5.5250, 40.9000)), "track"),
        _road("track to a ford of the Tormes", (
            (-5.4700, 40.9560), (-5.4720, 40.9710), (-5.4730, 40.9800)), "track"),
        _wood("encinar south-west of the ridge", (
            (-5.5500, 40.9000), (-5.5150, 40.9000), (-5.5150, 40.9060), (-5.5500, 40.9070))),
        _wood("encinar south of the Arapiles", (
            (-5.4900, 40.9000), (-5.4500, 40.9000), (-5.4450, 40.9150), (-5.4850, 40.9120))),
        _wood("woods east of Calvarrasa de Arriba", (
            (-5.4400, 40.9250), (-5.4200, 40.9250), (-5.4200, 40.9500), (-5.4400, 40.9480))),
        _residential("Los Arapiles", _box(-5.5200, 40.9250, -5.5100, 40.9300)),
        _residential("Calvarrasa de Arriba", _box(-5.4570, 40.9300, -5.4490, 40.9345)),
        _residential("Calvarrasa de Abajo", _box(-5.4740, 40.9540, -5.4660, 40.9580)),
    ),
    places=(
        Place("Los Arapiles", -5.5150, 40.9275, "village"),
        Place("Calvarrasa de Arriba", -5.4530, 40.9320, "village"),
        Place("Calvarrasa de Abajo", -5.4700, 40.9560, "village"),
    ),
)

SITE_DESCRIPTIONS: dict[str, SiteDescription] = {
    d.site: d for d in (WATERLOO, AUSTERLITZ, BORODINO, SALAMANCA)
}
"""Each battle site's hand-written description, in :data:`BATTLE_SITES` order."""


# --- checks ------------------------------------------------------------------------------


def _all_points(desc: SiteDescription) -> Iterable[tuple[str, LonLat]]:
    for hill in desc.hills:
        yield hill.name, (hill.lon, hill.lat)
    for place in desc.places:
        yield place.name, (place.lon, place.lat)
    for feature in (*desc.ridges, *desc.valleys, *desc.ways):
        for point in feature.points:
            yield feature.name, point


def check_description(desc: SiteDescription, site: BattleSite) -> None:
    """Raise ValueError if a feature's point lies outside the site's box."""
    for name, (lon, lat) in _all_points(desc):
        if not (site.lon_min <= lon <= site.lon_max and site.lat_min <= lat <= site.lat_max):
            raise ValueError(f"{desc.site}: {name!r} has a point at lon {lon}, lat {lat} "
                             f"outside the site's box (lon [{site.lon_min}, {site.lon_max}], "
                             f"lat [{site.lat_min}, {site.lat_max}])")


# --- elevation ---------------------------------------------------------------------------


def _metres_per_degree_lon(site: BattleSite) -> float:
    return METRES_PER_DEGREE_LAT * math.cos(math.radians(0.5 * (site.lat_min + site.lat_max)))


def _polyline_distance(x: np.ndarray, y: np.ndarray, xs: np.ndarray,
                       ys: np.ndarray) -> np.ndarray:
    """Distance from every point ``(x, y)`` to the polyline through ``(xs, ys)``."""
    best = np.full(x.shape, np.inf)
    for k in range(len(xs) - 1):
        ax, ay, bx, by = xs[k], ys[k], xs[k + 1], ys[k + 1]
        dx, dy = bx - ax, by - ay
        t = np.clip(((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy), 0.0, 1.0)
        best = np.minimum(best, np.hypot(x - (ax + t * dx), y - (ay + t * dy)))
    return best


def elevation_at(desc: SiteDescription, site: BattleSite, lon: np.ndarray,
                 lat: np.ndarray) -> np.ndarray:
    """Heights in metres of the described ground at ``(lon, lat)`` (float64, unrounded)."""
    mx = _metres_per_degree_lon(site)
    lon0 = 0.5 * (site.lon_min + site.lon_max)
    lat0 = 0.5 * (site.lat_min + site.lat_max)

    def local(lo, la):
        return (np.asarray(lo, float) - lon0) * mx, (np.asarray(la, float) - lat0) * (
            METRES_PER_DEGREE_LAT)

    x, y = local(lon, lat)
    z = desc.base_m + desc.tilt_east * x / 1000.0 + desc.tilt_north * y / 1000.0
    for hill in desc.hills:
        hx, hy = local(hill.lon, hill.lat)
        r = np.hypot((x - hx) / hill.rx_m, (y - hy) / hill.ry_m)
        z = z + hill.height * np.exp(-0.5 * r ** hill.sharpness)
    for ridge in desc.ridges:
        d = _polyline_distance(x, y, *local(*np.array(ridge.points).T))
        z = z + ridge.height * np.exp(-0.5 * (d / ridge.width_m) ** ridge.sharpness)
    for valley in desc.valleys:
        d = _polyline_distance(x, y, *local(*np.array(valley.points).T))
        z = z - valley.depth * np.exp(-0.5 * (d / valley.width_m) ** valley.sharpness)
    return z


def elevation_raster(desc: SiteDescription, site: BattleSite):
    """The stored heights (float32, rounded to :data:`HEIGHT_STEP_M`, north row first) and
    the geotransform of the raster over the site's box plus the margin."""
    import rasterio

    res_lon = (site.lon_max - site.lon_min) / PIXELS
    res_lat = (site.lat_max - site.lat_min) / PIXELS
    size = PIXELS + 2 * MARGIN_PIXELS
    west = site.lon_min - MARGIN_PIXELS * res_lon
    north = site.lat_max + MARGIN_PIXELS * res_lat
    transform = rasterio.Affine(res_lon, 0.0, west, 0.0, -res_lat, north)
    lon = west + (np.arange(size) + 0.5) * res_lon
    lat = north - (np.arange(size) + 0.5) * res_lat
    heights = elevation_at(desc, site, *np.meshgrid(lon, lat))
    heights = (np.round(heights / HEIGHT_STEP_M) * HEIGHT_STEP_M).astype(np.float32)
    if heights.min() < site.elevation_min or heights.max() > site.elevation_max:
        raise ValueError(f"{desc.site}: heights span {heights.min():.1f}-{heights.max():.1f} m, "
                         f"outside the site's {site.elevation_min:.0f}-"
                         f"{site.elevation_max:.0f} m")
    return heights, transform


def write_elevation(desc: SiteDescription, site: BattleSite, path: Path) -> Path:
    """Write the site's single-band EPSG:4326 float32 GeoTIFF (deflate) to ``path``."""
    import rasterio

    heights, transform = elevation_raster(desc, site)
    profile = {
        "driver": "GTiff", "width": heights.shape[1], "height": heights.shape[0], "count": 1,
        "dtype": "float32", "crs": "EPSG:4326", "transform": transform,
        "compress": "deflate", "predictor": 3, "zlevel": 9,
    }
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(heights, 1)
        dst.update_tags(SITE=desc.site, UNITS="metre",
                        SOURCE="hand-described approximation for simulation, not survey "
                               "data (data/gis/build_sites.py)")
    return path


# --- OpenStreetMap -----------------------------------------------------------------------


def _coord(value: float) -> str:
    return f"{value:.7f}"


def osm_tree(desc: SiteDescription, site: BattleSite) -> ET.ElementTree:
    """The site's OSM XML: place nodes, then the ways' nodes (shared where two ways meet
    at the same point), then the ways; ids are negative and count down from -1."""
    root = ET.Element("osm", version="0.6", generator="data.gis.build_sites")
    root.append(ET.Comment(
        f" {desc.site}: hand-described approximation of the battlefield for simulation, "
        "not survey data (written by data/gis/build_sites.py) "))
    ET.SubElement(root, "bounds", minlat=_coord(site.lat_min), minlon=_coord(site.lon_min),
                  maxlat=_coord(site.lat_max), maxlon=_coord(site.lon_max))
    next_id = -1
    way_nodes: dict[tuple[str, str], str] = {}
    nodes: list[ET.Element] = []

    def new_id() -> str:
        nonlocal next_id
        value, next_id = str(next_id), next_id - 1
        return value

    def add_tags(element: ET.Element, tags: Iterable[tuple[str, str]]) -> None:
        for k, v in tags:
            ET.SubElement(element, "tag", k=k, v=v)

    for place in desc.places:
        node = ET.Element("node", id=new_id(), lat=_coord(place.lat), lon=_coord(place.lon))
        add_tags(node, (("place", place.place), ("name", place.name)))
        nodes.append(node)

    lines = [Way(v.name, v.points, (("waterway", v.waterway), ("name", v.name)))
             for v in desc.valleys if v.waterway is not None]
    ways: list[ET.Element] = []
    for feature in (*lines, *desc.ways):
        refs = []
        for lon, lat in feature.points:
            key = (_coord(lat), _coord(lon))
            if key not in way_nodes:
                way_nodes[key] = new_id()
                nodes.append(ET.Element("node", id=way_nodes[key], lat=key[0], lon=key[1]))
            refs.append(way_nodes[key])
        if feature.closed:
            refs.append(refs[0])
        way = ET.Element("way", id=new_id())
        for ref in refs:
            ET.SubElement(way, "nd", ref=ref)
        add_tags(way, feature.tags)
        ways.append(way)
    root.extend(nodes)
    root.extend(ways)
    ET.indent(root, space="  ")
    return ET.ElementTree(root)


def write_osm(desc: SiteDescription, site: BattleSite, path: Path) -> Path:
    """Write the site's OSM XML (UTF-8) to ``path``."""
    body = ET.tostring(osm_tree(desc, site).getroot(), encoding="unicode")
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n", encoding="utf-8")
    return path


# --- the script --------------------------------------------------------------------------


def build_sites(out_dir: str | Path = SITES_DIR,
                sites: Iterable[str] | None = None) -> list[Path]:
    """Write ``<site>.tif`` and ``<site>.osm`` for each named site (all four by default)
    into ``out_dir`` (created if missing); returns the paths written, in order."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in (list(SITE_DESCRIPTIONS) if sites is None else list(sites)):
        if name not in SITE_DESCRIPTIONS:
            raise KeyError(f"unknown battle site {name!r}: expected one of "
                           + ", ".join(repr(k) for k in SITE_DESCRIPTIONS))
        desc, site = SITE_DESCRIPTIONS[name], BATTLE_SITES[name]
        check_description(desc, site)
        written.append(write_elevation(desc, site, out / f"{name}.tif"))
        written.append(write_osm(desc, site, out / f"{name}.osm"))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", type=Path, default=SITES_DIR,
                        help=f"where to write the files (default: {SITES_DIR})")
    parser.add_argument("--site", action="append", choices=list(SITE_DESCRIPTIONS),
                        help="a site to build (repeatable; default: all four)")
    args = parser.parse_args(argv)
    for path in build_sites(args.out_dir, args.site):
        print(f"{path}  {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
