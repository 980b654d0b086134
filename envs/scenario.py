"""Scenarios: an order of battle on a field, read from YAML or JSON and checked.

A scenario says who fights where: the field (size, grid, length of the battle), the
ground (procedural, open, or drawn from named features: ridges, hills, villages,
woods, rivers with their fords, streams, marshes, lakes, roads), each side's units
(arm, position, facing, formation, strength, quality) and when a side is beaten. The
format is documented in ``docs/scenarios.md``; :func:`load_scenario_file` reads a file
and :func:`scenario_from_dict` a parsed mapping (an entry of
``data/historical/battles.json`` is one, with its history beside it).

Every value is checked where it is read, and an error names the file, the entry and
the field: a scenario that loads runs.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import reprlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from envs.sim import constants as C
from envs.sim.config import BattleConfig
from envs.sim.terrain import TerrainMap
from storage.files import UnreadableFileError, loads_json, loads_yaml, read_regular_file

F32 = np.float32

SIDES = ("blue", "red")
"""The sides of a scenario, in team-code order."""
FORMATION_ALIASES = {"unlimbered": C.LINE}
"""Formation names accepted besides :data:`~envs.sim.constants.FORMATION_NAMES`:
artillery ``unlimbered`` is artillery in line (in battery)."""
TERRAIN_KINDS = ("ridge", "hill", "village", "woods", "river", "stream", "marsh", "lake",
                 "road")
"""The named features a scenario's ground may be drawn from."""
VILLAGE_COVER = 0.7
"""Cover of a village's cells (stone houses and walled gardens)."""
STREAM_GOING = 0.5
"""Going across a stream's cells (banks and a wade)."""
FORD_GOING = 0.4
"""Going at a river's ford or bridge (a defile)."""
MARSH_GOING = 0.3
"""Going in a marsh."""
ROAD_GOING = 1.2
"""Going on a road (open ground is 1)."""
FORD_RADIUS = 60.0
"""Metres around a ford point where a river can be crossed."""
DEFAULT_BREAK_FRACTION = 0.5
"""A side whose routed, destroyed and lost strength reaches this share of its starting
strength is beaten (an army retreats long before it is annihilated)."""
DEFAULT_ROWS = DEFAULT_COLS = 40
FIELD_SIZE_RANGE = C.MAP_SIZE_RANGE
MAX_GRID_SIDE = 1000
"""Most rows or columns a scenario's ground may have."""
MAX_SCENARIO_BYTES = 16 * 2**20
"""Largest scenario file (or JSON list of scenarios) read: the 111 historical battles
take 0.5 MB."""
MAX_SIDE_UNITS = 1000
"""Most units one side may field (the historical battles field at most 20 in all)."""
MAX_FEATURES = 1000
"""Most terrain features a scenario may draw its ground from."""
MAX_FEATURE_POINTS = 1000
"""Most points of one feature's line (a ridge's crest, a river, a road) or fords of a river."""
MAX_RASTER_WORK = 2**26
"""Most cell-shapes rasterising may cost: grid cells times the shapes drawn over all of
them (a disc counts 1, a line one per segment, a road twice, a ford 1). Each costs some
100 ns, so the largest ground allowed takes seconds: on a 1000 x 1000 grid, 67 shapes."""
MAX_REPR_CHARS = 120
"""Longest rendering of an offending value in an error message."""

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 6, 6, 6
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def short_repr(value: Any, limit: int = MAX_REPR_CHARS) -> str:
    """``repr(value)`` for an error message, bounded: nested containers are cut after a
    few items and levels and the result after ``limit`` characters, so a value built
    by YAML aliases (a few hundred bytes referring to billions of items) is never
    expanded."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass(frozen=True)
class UnitSpec:
    """One unit of an order of battle (positions in metres, heading in radians)."""

    id: str
    side: int
    arm: int
    x: float | None
    y: float | None
    theta: float | None
    formation: int
    strength: float
    quality: float
    name: str = ""


@dataclass(frozen=True)
class Scenario:
    """A checked scenario. ``units`` lists Blue's units first, then Red's; positions are
    None when the scenario deploys at random (``deployment: random``)."""

    id: str
    name: str
    width: float
    height: float
    rows: int
    cols: int
    max_steps: int
    terrain: str
    features: tuple[dict[str, Any], ...]
    units: tuple[UnitSpec, ...]
    break_fraction: float
    visibility_radius: float
    description: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    """Settings of the battle model (:class:`~envs.sim.config.BattleConfig` fields)
    this scenario changes, such as ``hill_speed_factor``."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Every key of the source entry this module does not read (a historical battle's
    date, factions, outcome and source)."""

    @property
    def random_deployment(self) -> bool:
        return self.units[0].x is None

    @property
    def n_blue(self) -> int:
        return sum(unit.side == 0 for unit in self.units)

    @property
    def n_red(self) -> int:
        return sum(unit.side == 1 for unit in self.units)

    def config(self, **changes: Any) -> BattleConfig:
        """The battle model on this field, with the scenario's ``model`` settings
        (``changes`` override any of them)."""
        return BattleConfig(**{"map_width": self.width, "map_height": self.height,
                               "max_steps": self.max_steps, **self.model, **changes})

    def terrain_map(self) -> TerrainMap | None:
        """The ground: None for procedural ground (drawn per battle), else the field
        rasterised from its features (open level ground when it has none)."""
        if self.terrain == "procedural":
            return None
        return rasterise_features(self.features, self.width, self.height, self.rows,
                                  self.cols)

    def array(self, name: str, dtype: type = F32) -> np.ndarray:
        """Per-unit values of the ``UnitSpec`` field ``name`` as a (U,) array."""
        return np.array([getattr(unit, name) for unit in self.units], dtype=dtype)


# ------------------------------------------------------------------------- reading


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the source and the field."""


def load_scenario_file(path: str | Path) -> Scenario:
    """Read and check the scenario in ``path`` (``.yaml``, ``.yml`` or ``.json``).

    Raises:
        FileNotFoundError: if there is no such file.
        ScenarioError: for a malformed file or an invalid field (named in the message).
    """
    path = Path(path)
    text = _read_text(path, "scenario file")
    try:
        data = (loads_json if path.suffix == ".json" else loads_yaml)(text, str(path))
    except UnreadableFileError as error:  # invalid, or nested deeper than MAX_NESTING
        raise ScenarioError(str(error)) from None
    return scenario_from_dict(data, str(path))


def _read_text(path: Path, what: str) -> str:
    """The text of ``path``: a regular file of at most :data:`MAX_SCENARIO_BYTES` (a FIFO
    or a device is refused, never read)."""
    if not path.exists():
        raise FileNotFoundError(f"{what} {path} does not exist")
    try:
        return read_regular_file(path, MAX_SCENARIO_BYTES, f"{what} {path}").decode("utf-8")
    except UnicodeDecodeError as error:
        raise ScenarioError(f"{what} {path} is not UTF-8 text: {error}") from None
    except UnreadableFileError as error:
        raise ScenarioError(str(error)) from None


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Every scenario of a JSON array file (such as ``data/historical/battles.json``).

    Raises:
        FileNotFoundError: if there is no such file.
        ScenarioError: for a malformed file, a repeated id or an invalid entry.
    """
    path = Path(path)
    text = _read_text(path, "scenario list")
    try:
        data = loads_json(text, str(path))
    except UnreadableFileError as error:  # invalid, or nested deeper than MAX_NESTING
        raise ScenarioError(str(error)) from None
    if not isinstance(data, list) or not data:
        raise ScenarioError(f"{path} holds {type(data).__name__}: expected a non-empty JSON "
                            "array of scenarios")
    scenarios = [scenario_from_dict(entry, f"{path}[{n}]") for n, entry in enumerate(data)]
    seen: set[str] = set()
    for scenario in scenarios:
        if scenario.id in seen:
            raise ScenarioError(f"{path}: the id {short_repr(scenario.id)} is used twice")
        seen.add(scenario.id)
    return scenarios


class _Reader:
    """Reads the fields of one mapping, naming ``where`` in every error."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise ScenarioError(f"{where} is {type(data).__name__}: expected a mapping")
        self.data, self.where = data, where

    def fail(self, key: str, value: Any, allowed: str) -> ScenarioError:
        return ScenarioError(f"{self.where}.{key}={short_repr(value)} is invalid: expected "
                             f"{allowed}")

    def only(self, allowed: tuple[str, ...]) -> None:
        """Refuse any key but ``allowed``, naming the nearest allowed key (a misspelt
        key would otherwise be ignored and its default used without a word)."""
        for key in self.data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.5)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ScenarioError(f"{self.where} has an unknown key {short_repr(key)}: "
                                    f"{hint}expected some of {', '.join(allowed)}")

    def get(self, key: str, default: Any = None, required: bool = False) -> Any:
        if key not in self.data:
            if required:
                raise ScenarioError(f"{self.where} has no {short_repr(key)}: it is required")
            return default
        return self.data[key]

    def number(self, key: str, default: float | None = None, *, low: float = -math.inf,
               high: float = math.inf, required: bool = False) -> float:
        value = self.get(key, default, required or default is None)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or not low <= value <= high:
            raise self.fail(key, value, f"a number in [{low}, {high}]")
        return float(value)

    def integer(self, key: str, default: int | None = None, *, low: int, high: int) -> int:
        value = self.get(key, default, default is None)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(key, value, f"an integer in [{low}, {high}]")
        return value

    def text(self, key: str, default: str | None = None) -> str:
        value = self.get(key, default, default is None)
        if not isinstance(value, str):
            raise self.fail(key, value, "a string")
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value = self.get(key, default, default is None)
        if value not in choices:
            raise self.fail(key, value, "one of " + ", ".join(choices))
        return value

    def point(self, value: Any, key: str, width: float, height: float) -> tuple[float, float]:
        if not (isinstance(value, (list, tuple)) and len(value) == 2 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
            raise self.fail(key, value, "a point [x, y] in metres")
        x, y = float(value[0]), float(value[1])
        if not (0 <= x <= width and 0 <= y <= height):
            raise self.fail(key, value, f"a point on the field (0..{width}, 0..{height})")
        return x, y

    def points(self, key: str, width: float, height: float, minimum: int) -> list:
        value = self.get(key, [] if minimum == 0 else None, minimum > 0)
        if not isinstance(value, list) or len(value) < minimum:
            raise self.fail(key, value, f"a list of at least {minimum} points [x, y]")
        if len(value) > MAX_FEATURE_POINTS:
            raise ScenarioError(f"{self.where}.{key} has {len(value):,} points: more than "
                                f"the {MAX_FEATURE_POINTS:,} allowed (MAX_FEATURE_POINTS)")
        return [self.point(p, f"{key}[{n}]", width, height) for n, p in enumerate(value)]


SCENARIO_KEYS = ("id", "name", "description", "field", "terrain", "units", "deployment",
                 "victory", "visibility_radius", "model")
"""The keys :func:`scenario_from_dict` reads; any other key is kept in ``extra``."""
FIELD_KEYS = ("width_m", "height_m", "rows", "cols", "max_steps")
VICTORY_KEYS = ("break_fraction",)
UNIT_KEYS = ("id", "name", "type", "formation", "x", "y", "facing_deg", "strength", "quality")
FEATURE_KEYS = {
    **dict.fromkeys(("village", "marsh", "lake"), ("kind", "x", "y", "radius_m")),
    "hill": ("kind", "x", "y", "radius_m", "height"),
    "woods": ("kind", "x", "y", "radius_m", "density"),
    "ridge": ("kind", "points", "width_m", "height"),
    "river": ("kind", "points", "width_m", "fords"),
    "stream": ("kind", "points", "width_m"),
    "road": ("kind", "points"),
}
"""The keys of the nested mappings (``field``, ``victory``, ``units``' entries and each
kind of terrain feature). Unlike the top level, which keeps other keys in ``extra``,
these refuse any other key, naming the nearest valid one: ``field: {width: 5000}``
must not quietly give the default field."""


def scenario_from_dict(data: Any, where: str = "scenario") -> Scenario:
    """Check a parsed scenario (see ``docs/scenarios.md``) and build it.

    Raises:
        ScenarioError: for a missing or invalid field; the message names ``where`` and
            the field.
    """
    top = _Reader(data, where)
    scenario_id = top.text("id")
    if not scenario_id.replace("_", "").replace("-", "").isalnum():
        raise top.fail("id", scenario_id, "letters, digits, '_' and '-'")
    field_ = _Reader(top.get("field", {}), f"{where}.field")
    field_.only(FIELD_KEYS)
    width = field_.number("width_m", C.MAP_WIDTH, low=FIELD_SIZE_RANGE[0],
                          high=FIELD_SIZE_RANGE[1])
    height = field_.number("height_m", C.MAP_HEIGHT, low=FIELD_SIZE_RANGE[0],
                           high=FIELD_SIZE_RANGE[1])
    rows = field_.integer("rows", DEFAULT_ROWS, low=1, high=MAX_GRID_SIDE)
    cols = field_.integer("cols", DEFAULT_COLS, low=1, high=MAX_GRID_SIDE)
    max_steps = field_.integer("max_steps", C.MAX_STEPS, low=1, high=C.MAX_STEPS_LIMIT)
    terrain, features = _read_terrain(top.get("terrain", "procedural"), f"{where}.terrain",
                                      width, height)
    check_raster_work(features, rows, cols, f"{where}.terrain")
    deployment = top.choice("deployment", ("placed", "random"), "placed")
    units = _read_units(_Reader(top.get("units", required=True), f"{where}.units"),
                        deployment == "random", width, height)
    victory = _Reader(top.get("victory", {}), f"{where}.victory")
    victory.only(VICTORY_KEYS)
    scenario = Scenario(
        id=scenario_id, name=top.text("name", scenario_id),
        description=top.text("description", ""), width=width, height=height, rows=rows,
        cols=cols, max_steps=max_steps, terrain=terrain, features=tuple(features),
        units=tuple(units),
        break_fraction=victory.number("break_fraction", DEFAULT_BREAK_FRACTION, low=0.01,
                                      high=1.0),
        visibility_radius=top.number("visibility_radius", C.VISIBILITY_RADIUS, low=1.0),
        model=_read_model(top.get("model", {}), f"{where}.model"),
        extra={k: v for k, v in data.items() if k not in SCENARIO_KEYS})
    if not scenario.random_deployment:
        _check_dry_feet(scenario, where)
    return scenario


FIELD_SETTINGS = ("map_width", "map_height", "max_steps")
"""BattleConfig settings a scenario's ``field`` sets (its ``model`` may not)."""


def _read_model(value: Any, where: str) -> dict[str, Any]:
    """``model``: BattleConfig settings, each checked as the config checks it."""
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}={short_repr(value)} is invalid: expected a mapping of "
                            "battle model settings")
    known = {f.name for f in dataclasses.fields(BattleConfig)} - set(FIELD_SETTINGS)
    unknown = [k for k in value if k not in known]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), sorted(known), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ScenarioError(f"{where} has unknown settings {short_repr(unknown)}: {hint}"
                            f"expected some of {sorted(known)} (the field sets "
                            f"{', '.join(FIELD_SETTINGS)})")
    for key, setting in value.items():
        # BattleConfig's own errors show the value whole: only scalars reach it.
        if not isinstance(setting, (bool, int, float, str)) and setting is not None:
            raise ScenarioError(f"{where}.{key}={short_repr(setting)} is invalid: expected "
                                "a number, a boolean or a string")
    try:
        BattleConfig(**value)
    except (TypeError, ValueError) as error:
        raise ScenarioError(f"{where}: {error}") from error
    return dict(value)


def _read_terrain(value: Any, where: str, width: float,
                  height: float) -> tuple[str, list[dict[str, Any]]]:
    """``"procedural"``, ``"flat"`` or a list of features, checked."""
    if value in ("procedural", "flat"):
        return value, []
    if not isinstance(value, list):
        raise ScenarioError(f"{where}={short_repr(value)} is invalid: expected 'procedural', "
                            "'flat' or a list of features")
    if len(value) > MAX_FEATURES:
        raise ScenarioError(f"{where} has {len(value):,} features: more than the "
                            f"{MAX_FEATURES:,} allowed (MAX_FEATURES)")
    features = []
    for n, entry in enumerate(value):
        r = _Reader(entry, f"{where}[{n}]")
        kind = r.choice("kind", TERRAIN_KINDS)
        r.only(FEATURE_KEYS[kind])
        feature: dict[str, Any] = {"kind": kind}
        if kind in ("hill", "village", "woods", "marsh", "lake"):
            feature["x"], feature["y"] = r.point([r.get("x", required=True),
                                                  r.get("y", required=True)], "x, y", width,
                                                 height)
            feature["radius_m"] = r.number("radius_m", low=1.0, high=max(width, height))
        if kind == "ridge":
            feature["points"] = r.points("points", width, height, 2)
            feature["width_m"] = r.number("width_m", low=1.0, high=max(width, height))
        if kind in ("river", "stream", "road"):
            feature["points"] = r.points("points", width, height, 2)
        if kind in ("river", "stream"):
            feature["width_m"] = r.number("width_m", 20.0, low=1.0, high=1000.0)
        if kind == "river":
            feature["fords"] = r.points("fords", width, height, 0)
        if kind in ("ridge", "hill"):
            feature["height"] = r.number("height", low=0.0, high=1.0)
        if kind == "woods":
            feature["density"] = r.number("density", 0.6, low=0.0, high=1.0)
        features.append(feature)
    return "features", features


def _read_units(r: _Reader, random: bool, width: float, height: float) -> list[UnitSpec]:
    units: list[UnitSpec] = []
    r.only(SIDES)
    for side, name in enumerate(SIDES):
        entries = r.get(name, required=True)
        if not isinstance(entries, list) or not entries:
            raise r.fail(name, entries, "a non-empty list of units")
        if len(entries) > MAX_SIDE_UNITS:
            raise ScenarioError(f"{r.where}.{name} has {len(entries):,} units: more than the "
                                f"{MAX_SIDE_UNITS:,} allowed (MAX_SIDE_UNITS)")
        for n, entry in enumerate(entries):
            u = _Reader(entry, f"{r.where}.{name}[{n}]")
            u.only(UNIT_KEYS)
            arm_name = u.choice("type", C.ARM_NAMES, "infantry")
            arm = C.ARM_NAMES.index(arm_name)
            allowed = tuple(C.FORMATION_NAMES[f] for f in C.ARM_FORMATIONS[arm]) + tuple(
                alias for alias, code in FORMATION_ALIASES.items()
                if arm == C.ARTILLERY and code in C.ARM_FORMATIONS[arm])
            formation_name = u.choice("formation", allowed, allowed[0])
            formation = FORMATION_ALIASES.get(formation_name,
                                              C.FORMATION_NAMES.index(formation_name)
                                              if formation_name in C.FORMATION_NAMES else 0)
            if random:
                for key in ("x", "y", "facing_deg"):
                    if key in entry:
                        raise u.fail(key, entry[key], "no position: this scenario deploys "
                                     "at random (deployment: random)")
                x = y = theta = None
            else:
                x = u.number("x", low=0.0, high=width)
                y = u.number("y", low=0.0, high=height)
                theta = math.radians(u.number("facing_deg", 0.0 if side == 0 else 180.0,
                                              low=-360.0, high=360.0))
            units.append(UnitSpec(
                id=u.text("id", f"{name[0]}{n + 1}"), side=side, arm=arm, x=x, y=y,
                theta=theta, formation=formation,
                strength=u.number("strength", 1.0, low=0.01, high=1.5),
                quality=u.number("quality", 1.0, low=0.25, high=4.0), name=u.text("name", "")))
    repeated = sorted(i for i, n in Counter(unit.id for unit in units).items() if n > 1)
    if repeated:
        raise ScenarioError(f"{r.where}: unit ids {short_repr(repeated)} are used more than "
                            "once")
    return units


def _check_dry_feet(scenario: Scenario, where: str) -> None:
    """No unit may start on impassable ground (it could never leave)."""
    terrain = scenario.terrain_map()
    if terrain is None:
        return
    for unit in scenario.units:
        if terrain.going_at(unit.x, unit.y) <= 0:
            raise ScenarioError(f"{where}: unit {short_repr(unit.id)} starts at ({unit.x:g}, "
                                f"{unit.y:g}), in impassable water: expected dry ground")


# ---------------------------------------------------------------- orders of battle


@dataclass(frozen=True)
class OrderOfBattle:
    """Each unit's arm, starting formation and quality, Blue's units first: what a
    batch of battles needs to field a scenario's forces wherever they deploy."""

    arm: tuple[int, ...]
    formation: tuple[int, ...]
    quality: tuple[float, ...]
    n_blue: int

    @property
    def n_red(self) -> int:
        return len(self.arm) - self.n_blue

    @classmethod
    def of(cls, value: Any, name: str = "order_of_battle") -> OrderOfBattle:
        """An order of battle from a :class:`Scenario`, an ``OrderOfBattle``, or a mapping
        ``{"blue": [...], "red": [...]}`` of units as a scenario lists them (mappings, or
        just arm names such as ``"cavalry"``; positions are not allowed).

        Raises:
            ScenarioError: naming ``name`` and the field, for anything else.
        """
        if isinstance(value, OrderOfBattle):
            return value
        if isinstance(value, Scenario):
            units = value.units
        else:
            if not isinstance(value, dict) or set(value) != set(SIDES):
                raise ScenarioError(f"{name}={short_repr(value)} is invalid: expected a "
                                    "Scenario or a mapping {'blue': [...], 'red': [...]} of "
                                    "units")
            entries = {side: [{"type": u} if isinstance(u, str) else u for u in units]
                       if isinstance(units, list) else units for side, units in value.items()}
            units = _read_units(_Reader(entries, name), True, C.MAP_SIZE_RANGE[1],
                                C.MAP_SIZE_RANGE[1])
        return cls(tuple(u.arm for u in units), tuple(u.formation for u in units),
                   tuple(u.quality for u in units), sum(u.side == 0 for u in units))


# ---------------------------------------------------------------------- the ground


def _distance_to_polyline(px: np.ndarray, py: np.ndarray, points: list) -> np.ndarray:
    """Distance in metres from each point to the nearest segment of ``points``."""
    best = np.full(px.shape, np.inf)
    for (x0, y0), (x1, y1) in zip(points[:-1], points[1:], strict=True):
        ax, ay = x1 - x0, y1 - y0
        length2 = ax * ax + ay * ay
        t = np.zeros(px.shape) if length2 == 0 else np.clip(
            ((px - x0) * ax + (py - y0) * ay) / length2, 0.0, 1.0)
        best = np.minimum(best, np.hypot(px - (x0 + t * ax), py - (y0 + t * ay)))
    return best


def raster_work(features: tuple[dict[str, Any], ...] | list[dict[str, Any]], rows: int,
                cols: int) -> int:
    """What rasterising ``features`` on a rows x cols grid costs, in cell-shapes
    (:data:`MAX_RASTER_WORK`)."""
    shapes = 0
    for f in features:
        kind = f["kind"]
        segments = max(len(f.get("points", ())) - 1, 0)
        if kind == "road":
            shapes += 2 * segments  # drawn with the others, then again on top
        elif kind in ("ridge", "river", "stream"):
            shapes += segments + len(f.get("fords", ()))
        else:
            shapes += 1
    return rows * cols * shapes


def check_raster_work(features: tuple[dict[str, Any], ...] | list[dict[str, Any]], rows: int,
                      cols: int, where: str = "terrain") -> None:
    """Refuse ground that would cost more than :data:`MAX_RASTER_WORK` to rasterise,
    before any of it is drawn.

    Raises:
        ScenarioError: naming ``where``, the cost and the limit.
    """
    work = raster_work(features, rows, cols)
    if work > MAX_RASTER_WORK:
        raise ScenarioError(f"{where}: {len(features):,} features on a {rows} x {cols} grid "
                            f"cost {work:,} cell-shapes to rasterise: more than the "
                            f"{MAX_RASTER_WORK:,} allowed (MAX_RASTER_WORK); use fewer "
                            "features, fewer points or a coarser grid")


def rasterise_features(features: tuple[dict[str, Any], ...] | list[dict[str, Any]],
                       width: float, height: float, rows: int, cols: int) -> TerrainMap:
    """The ground of named features on a rows x cols grid (row 0 south).

    Hills are Gaussian domes (spread half their radius) and ridges Gaussian ridges
    along their crest line (spread half their width), of their relative ``height``;
    heights add up and the map is rescaled so its top is 1. Woods cover their disc at
    their density and villages at :data:`VILLAGE_COVER`. A river's cells (within half
    its width, and never narrower than a cell's half-diagonal so it has no gaps) are
    impassable but within :data:`FORD_RADIUS` of a ford; streams slow
    (:data:`STREAM_GOING`), marshes more (:data:`MARSH_GOING`), lakes are impassable
    and roads are quicker (:data:`ROAD_GOING`).

    Raises:
        ScenarioError: if drawing them would cost more than :data:`MAX_RASTER_WORK`.
    """
    check_raster_work(features, rows, cols)
    cell_w, cell_h = width / cols, height / rows
    px, py = np.meshgrid((np.arange(cols) + 0.5) * cell_w, (np.arange(rows) + 0.5) * cell_h)
    elevation = np.zeros((rows, cols))
    cover = np.zeros((rows, cols))
    going = np.ones((rows, cols))
    half_diagonal = 0.5 * math.hypot(cell_w, cell_h)
    for f in features:
        kind = f["kind"]
        if kind in ("hill", "village", "woods", "marsh", "lake"):
            distance = np.hypot(px - f["x"], py - f["y"])
            inside = distance <= max(f["radius_m"], half_diagonal)
        else:
            distance = _distance_to_polyline(px, py, f["points"])
        if kind == "hill":
            elevation += f["height"] * np.exp(-0.5 * (distance / (0.5 * f["radius_m"])) ** 2)
        elif kind == "ridge":
            elevation += f["height"] * np.exp(-0.5 * (distance / (0.5 * f["width_m"])) ** 2)
        elif kind == "woods":
            cover[inside] = np.maximum(cover[inside], f["density"])
        elif kind == "village":
            cover[inside] = np.maximum(cover[inside], VILLAGE_COVER)
        elif kind == "marsh":
            going[inside] = np.minimum(going[inside], MARSH_GOING)
        elif kind == "lake":
            going[inside] = 0.0
        elif kind in ("river", "stream"):
            wet = distance <= max(0.5 * f["width_m"], half_diagonal)
            if kind == "stream":
                going[wet] = np.minimum(going[wet], STREAM_GOING)
            else:
                ford = np.zeros_like(wet)
                for fx, fy in f["fords"]:
                    ford |= np.hypot(px - fx, py - fy) <= max(FORD_RADIUS, half_diagonal)
                going[wet & ~ford] = 0.0
                going[wet & ford] = np.minimum(going[wet & ford], FORD_GOING)
    for f in features:  # roads last: a road crosses a stream by a bridge
        if f["kind"] == "road":
            on_road = _distance_to_polyline(px, py, f["points"]) <= half_diagonal
            going[on_road] = np.where(going[on_road] > 0, np.maximum(going[on_road], ROAD_GOING),
                                      FORD_GOING)
    return TerrainMap(elevation.astype(F32), cover.astype(F32), width, height,
                      going=going.astype(F32))


__all__ = ["DEFAULT_BREAK_FRACTION", "FORMATION_ALIASES", "MAX_FEATURES", "MAX_FEATURE_POINTS",
           "MAX_GRID_SIDE", "MAX_RASTER_WORK", "MAX_SCENARIO_BYTES", "MAX_SIDE_UNITS",
           "OrderOfBattle", "SIDES", "TERRAIN_KINDS", "Scenario", "ScenarioError", "UnitSpec",
           "check_raster_work", "load_scenario_file", "load_scenarios", "raster_work",
           "rasterise_features", "scenario_from_dict", "short_repr"]
