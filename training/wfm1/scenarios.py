"""WFM-1's battles: the distribution the generalist trains on, and the reference design's
20 held-out scenarios it is judged on.

A :class:`WFMScenario` is an N-vs-M battle of all arms on procedural ground or on a
sector of one of the four battle sites (``data/gis/sites``), in some weather: ``n_blue``
and ``n_red`` units (1 to :data:`MAX_SIDE`), each side's arms drawn from the scenario's
seed (cavalry up to :data:`MAX_CAVALRY_SHARE`, artillery up to
:data:`MAX_ARTILLERY_SHARE`), on a square field of :func:`map_side` metres, with weather
as how far a battalion sees (:data:`WEATHER_VISIBILITY`); Red is the combined-arms
doctrine or, in self-play, a past snapshot of the generalist, told the battle by Red's
card (:meth:`WFMScenario.card`). The held-out set (:data:`HELD_OUT_SCENARIOS`) is the
reference design's twenty; training draws (:func:`sample_training_scenario`) take their
seeds from :data:`TRAINING_SEEDS`, which no held-out seed is in. ``docs/wfm1.md``
("Scenarios") has the details.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from data.gis.sectors import site_terrain
from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.scenario import OrderOfBattle
from envs.sim.config import BattleConfig
from envs.sim.constants import ARM_NAMES, ARTILLERY, CAVALRY, VISIBILITY_RADIUS
from envs.sim.terrain import TerrainMap
from envs.sim.validation import check_int
from models.wfm1 import (
    ECHELON_BATTALION,
    GIS_AUSTERLITZ,
    GIS_BORODINO,
    GIS_SALAMANCA,
    GIS_WATERLOO,
    TERRAIN_PROCEDURAL,
    WEATHER_CLEAR,
    WEATHER_FOG,
    WEATHER_RAIN,
    WEATHER_SNOW,
    ScenarioCard,
)

TERRAINS = {"procedural": TERRAIN_PROCEDURAL, "waterloo": GIS_WATERLOO,
            "austerlitz": GIS_AUSTERLITZ, "borodino": GIS_BORODINO, "salamanca": GIS_SALAMANCA}
"""The grounds, by name, and the scenario card's code of each."""
WEATHERS = {"clear": WEATHER_CLEAR, "rain": WEATHER_RAIN, "fog": WEATHER_FOG,
            "snow": WEATHER_SNOW}
"""The weathers, by name, and the scenario card's code of each."""
WEATHER_VISIBILITY = {"clear": VISIBILITY_RADIUS, "rain": 0.6 * VISIBILITY_RADIUS,
                      "fog": 0.3 * VISIBILITY_RADIUS, "snow": 0.5 * VISIBILITY_RADIUS}
"""How far a battalion sees in each weather, in metres."""
MAX_SIDE = 16
"""Most units a side fields."""
MAX_CAVALRY_SHARE = 0.3
MAX_ARTILLERY_SHARE = 0.2
TRAINING_SEEDS = (100_000, 2**31)
"""Seeds of training scenarios are drawn from this range (the held-out seeds are below)."""
TERRAIN_CELLS = 40
"""Rows and columns of every scenario's ground."""
CARD_MAP_SCALE = 2000.0
"""A map this wide (metres) has ``map_scale`` 1 on the scenario card."""


def map_side(n_units: int) -> float:
    """The side of the square field of a battle of ``n_units`` units, in metres: room for
    the armies to deploy and manoeuvre, 250 m per square root of a unit, 600 m to 1.5 km."""
    return float(np.clip(250.0 * math.sqrt(n_units), 600.0, 1500.0))


@dataclass(frozen=True)
class WFMScenario:
    """One battle setting (module docstring).

    Raises:
        ValueError: for an unknown ground or weather, a side out of [1, MAX_SIDE], or a
            negative seed.
    """

    name: str
    terrain: str
    weather: str
    n_blue: int
    n_red: int
    seed: int

    def __post_init__(self) -> None:
        if self.terrain not in TERRAINS:
            raise ValueError(f"terrain={self.terrain!r} is invalid: expected one of "
                             f"{', '.join(TERRAINS)}")
        if self.weather not in WEATHERS:
            raise ValueError(f"weather={self.weather!r} is invalid: expected one of "
                             f"{', '.join(WEATHERS)}")
        for field in ("n_blue", "n_red"):
            value = getattr(self, field)
            if not isinstance(value, int) or not 1 <= value <= MAX_SIDE:
                raise ValueError(f"{field}={value!r} is invalid: expected an integer in "
                                 f"[1, {MAX_SIDE}]")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed={self.seed!r} is invalid: expected a non-negative integer")

    @property
    def key(self) -> tuple:
        """What makes two scenarios the same battle."""
        return (self.terrain, self.weather, self.n_blue, self.n_red, self.seed)

    @property
    def side(self) -> float:
        return map_side(self.n_blue + self.n_red)

    @functools.cached_property
    def order_of_battle(self) -> OrderOfBattle:
        """Both sides' arms and qualities, drawn from the seed (``docs/wfm1.md``)."""
        rng = np.random.default_rng([self.seed, 7])
        sides = {}
        for name, n in (("blue", self.n_blue), ("red", self.n_red)):
            cavalry = int(np.floor(rng.uniform(0, MAX_CAVALRY_SHARE) * n + 0.5))
            artillery = int(np.floor(rng.uniform(0, MAX_ARTILLERY_SHARE) * n + 0.5))
            cavalry = min(cavalry, n - 1)
            artillery = min(artillery, n - 1 - cavalry)
            arms = [ARM_NAMES[CAVALRY]] * cavalry + [ARM_NAMES[ARTILLERY]] * artillery
            arms += ["infantry"] * (n - len(arms))
            qualities = rng.uniform(0.75, 1.25, n)
            sides[name] = [{"type": arm, "quality": round(float(q), 3)}
                           for arm, q in zip(arms, qualities, strict=True)]
        return OrderOfBattle.of(sides, f"scenario {self.name}")

    def shares(self, side: int) -> tuple[float, float]:
        """``side``'s (cavalry, artillery) shares of its units."""
        arms = np.array(self.order_of_battle.arm)
        mine = arms[:self.n_blue] if side == 0 else arms[self.n_blue:]
        return float(np.mean(mine == CAVALRY)), float(np.mean(mine == ARTILLERY))

    def ground(self) -> TerrainMap:
        """The scenario's field (cached per ground, size and seed)."""
        return _ground(self.terrain, self.side, self.seed if self.terrain == "procedural" else 0)

    def card(self, side: int = BLUE) -> ScenarioCard:
        """``side``'s scenario card: what the generalist is told about the battle when it
        commands that side. Blue's (the default) counts Blue's units as its own
        (``n_blue_units``) and Red's as the enemy's (``n_red_units``), with Blue's arms'
        shares; Red's, for a generalist commanding Red (self-play), is the same battle seen
        from the other side: the counts swapped, Red's shares."""
        side = check_int("side", side, minimum=BLUE, maximum=RED)
        cavalry, artillery = self.shares(side)
        own, enemy = (self.n_blue, self.n_red) if side == BLUE else (self.n_red, self.n_blue)
        return ScenarioCard(map_scale=self.side / CARD_MAP_SCALE, echelon_level=ECHELON_BATTALION,
                            weather_code=WEATHERS[self.weather], n_blue_units=float(own),
                            n_red_units=float(enemy), terrain_type=TERRAINS[self.terrain],
                            cavalry_fraction=cavalry, artillery_fraction=artillery,
                            max_units=2 * MAX_SIDE)

    def battles(self, n_battles: int, max_steps: int) -> MultiBattalionBatch:
        """``n_battles`` battles of this scenario (not yet reset)."""
        side = self.side
        config = BattleConfig(map_width=side, map_height=side, max_steps=max_steps)
        return MultiBattalionBatch(n_battles, self.n_blue, self.n_red, config=config,
                                   terrain=self.ground(), randomize_terrain=False,
                                   visibility_radius=WEATHER_VISIBILITY[self.weather],
                                   reward_weights=None, order_of_battle=self.order_of_battle)


@functools.lru_cache(maxsize=64)
def _ground(terrain: str, side: float, seed: int) -> TerrainMap:
    if terrain == "procedural":
        return TerrainMap.generate_random(seed, side, side, TERRAIN_CELLS, TERRAIN_CELLS, 4, 3)
    return site_terrain(terrain, rows=TERRAIN_CELLS, cols=TERRAIN_CELLS, window_m=side)


def _held_out() -> tuple[WFMScenario, ...]:
    sizes = ((4, 4), (6, 6), (4, 8), (8, 4), (8, 8), (12, 12), (16, 12), (4, 12), (12, 4),
             (6, 8), (8, 6), (6, 6))
    weathers = tuple(WEATHERS)
    procedural = [WFMScenario(f"procedural_{seed}_{weathers[i % 4]}_{b}v{r}", "procedural",
                              weathers[i % 4], b, r, seed)
                  for i, (seed, (b, r)) in enumerate(zip(range(1001, 1013), sizes, strict=True))]
    sites = [("waterloo", "clear", 6, 6, 2001), ("waterloo", "rain", 4, 8, 2002),
             ("austerlitz", "fog", 8, 8, 3001), ("austerlitz", "clear", 6, 4, 3002),
             ("borodino", "snow", 8, 8, 4001), ("borodino", "clear", 4, 6, 4002),
             ("salamanca", "fog", 6, 6, 5001), ("salamanca", "rain", 8, 4, 5002)]
    gis = [WFMScenario(f"{site}_{weather}_{b}v{r}", site, weather, b, r, seed)
           for site, weather, b, r, seed in sites]
    return tuple(procedural + gis)


HELD_OUT_SCENARIOS = _held_out()
"""The reference design's twenty held-out scenarios: twelve on procedural ground (seeds
1001-1012, the weathers in turn), two on each site."""
assert len(HELD_OUT_SCENARIOS) == 20


def sample_training_scenario(rng: np.random.Generator, max_side: int = MAX_SIDE,
                             gis_share: float = 0.25) -> WFMScenario:
    """A training battle: each side 1 to ``max_side`` units, a site's sector with chance
    ``gis_share`` (else procedural ground), any weather, a seed from
    :data:`TRAINING_SEEDS`."""
    n_blue, n_red = (int(v) for v in rng.integers(1, max_side + 1, 2))
    sites = [name for name in TERRAINS if name != "procedural"]
    terrain = str(rng.choice(sites)) if rng.random() < gis_share else "procedural"
    weather = str(rng.choice(list(WEATHERS)))
    seed = int(rng.integers(*TRAINING_SEEDS))
    return WFMScenario(f"train_{terrain}_{weather}_{n_blue}v{n_red}_{seed}", terrain, weather,
                       n_blue, n_red, seed)


__all__ = ["HELD_OUT_SCENARIOS", "MAX_SIDE", "TERRAINS", "TRAINING_SEEDS", "WEATHERS",
           "WEATHER_VISIBILITY", "WFMScenario", "map_side", "sample_training_scenario"]
