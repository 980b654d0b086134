"""What the historical battles' data says without simulating anything: each army's
figures, the trivial rules that predict a winner from them (the baselines the simulation
must beat), and the categories the benchmark groups its misses by.

**Figures** (:func:`army_figures`), per side, from the units of a battle and its
``scale`` (:data:`SCALE_KEYS`: a unit of strength 1 stands for ``men_per_unit``
infantry, ``sabres_per_squadron_unit`` cavalry or ``guns_per_battery`` guns; strength
is a unit's size relative to that):

* men: infantry strength x ``men_per_unit`` plus cavalry strength x
  ``sabres_per_squadron_unit`` (gunners are not counted);
* guns: artillery strength x ``guns_per_battery``;
* fighting power: the sum of strength x quality over every unit (what the doctrine
  weighs, :func:`envs.commanders.arms_doctrine.attacking_sides`);
* elevation: the mean relative elevation (0 to 1) of the ground under its units at
  deployment;
* the French side: the side whose ``factions`` entry names the French (None when
  neither or both do);
* each side's nation: the first of :data:`NATIONS` its ``factions`` entry names
  (:func:`nation`; "Anglo-allied" is British, "Mamluk" Ottoman), None when it names
  none.

**Baselines** (:data:`BASELINES`), each fitted on the training battles only
(:mod:`benchmarks.historical_scoring`) and giving every battle a hard winner and a
probability for each outcome (Blue, Red, drawn):

* ``french``, "the French win": the hard winner is the French side; the
  probabilities are the training battles' smoothed frequencies of a French victory,
  defeat and draw (``(k + 0.5) / (n + 1.5)``).
* ``men``, ``power``, ``guns``, "the larger side wins" by men, fighting power or guns:
  the hard winner is the side with more (none on a tie). Probabilities: a draw has the
  training battles' smoothed draw frequency, and the rest is split by a logistic
  ``P(Blue | decisive) = 1 / (1 + exp(-b x))`` of ``x = ln((blue + c) / (red + c))``
  (``c`` is 1 for men and guns, so a side without guns has a finite ratio, and 0 for
  fighting power), ``b`` fitted by maximum likelihood on the decisive training
  battles. It has no intercept: the rule is about size, not about which side is Blue.
* ``logistic``, a fitted reference rather than a one-line rule: ``P(Blue | decisive) =
  1 / (1 + exp(-(a f + b x)))`` with ``f`` +1 when Blue is French, -1 when Red is, 0
  otherwise, and ``x`` the fighting-power log ratio; its hard winner is the side it
  gives more than one half. Draws as above.
* ``nations``, also fitted: the same with one term per nation instead of the French
  edge, ``P(Blue | decisive) = 1 / (1 + exp(-(b x + sum_n a_n s_n)))``, ``s_n`` +1 when
  Blue is of nation ``n``, -1 when Red is, for every nation of the training battles
  but the most frequent (the reference): what the data's figures and the armies'
  nations say together, the information the simulation's fitted combat effectiveness
  (:mod:`benchmarks.historical_effectiveness`) adds to it.

Each logistic fit adds :data:`RIDGE` ``/ 2 * |w|^2`` to the negative log-likelihood so
that a training split that one rule separates perfectly still gives finite weights.

**Categories** (:data:`CATEGORIES`) are facts of a battle's data seen from the French
side (Blue where no side is French): outnumbered, weaker in fighting power, fewer guns,
the enemy on the higher ground (its units' mean elevation above the French by
:data:`~envs.commanders.arms_doctrine.HIGH_GROUND_MARGIN`, the doctrine's own margin),
a river, stream or marsh, or woods on the field, an enemy with British troops
(Wellington's and Abercromby's armies) and the historical result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.historical_scoring import smoothed_probabilities
from envs.commanders.arms_doctrine import HIGH_GROUND_MARGIN
from envs.scenario import Scenario, ScenarioError, short_repr
from envs.scenario_battle import NO_WINNER
from envs.sim import constants as C

SCALE_KEYS = ("men_per_unit", "sabres_per_squadron_unit", "guns_per_battery")
"""The keys of a battle's ``scale`` the figures read: what a unit of strength 1 of
infantry, cavalry and artillery stands for."""
RIDGE = 0.01
"""Weight of the penalty ``RIDGE / 2 * |w|^2`` on every logistic fit."""
NATIONS = ("French", "British", "Anglo", "Austrian", "Russian", "Prussian", "Spanish",
           "Portuguese", "Ottoman", "Mamluk", "Bavarian", "Württemberg", "Saxon", "Polish",
           "Italian", "Neapolitan", "Dutch", "Swedish", "Swiss", "Irish")
"""The nations :func:`nation` recognises in a ``factions`` entry (a name that contains
one, "Württemberger" say, counts as it)."""
NATION_ALIASES = {"Anglo": "British", "Mamluk": "Ottoman"}
"""Names that stand for another nation: Wellington's Anglo-allied army is British, the
Mamluks fought for Ottoman Egypt."""
NEWTON_STEPS = 100
"""Most Newton steps a logistic fit takes (it stops earlier once converged)."""


@dataclass(frozen=True)
class ArmyFigures:
    """Each side's figures in one battle (module docstring); arrays are (Blue, Red)."""

    men: np.ndarray
    guns: np.ndarray
    power: np.ndarray
    elevation: np.ndarray
    french_side: int | None
    features: frozenset[str]
    """The kinds of terrain feature on the field (``river``, ``village``, ...)."""
    factions: tuple[str, str] = ("", "")
    """The ``factions`` entries of Blue and Red."""

    @property
    def nations(self) -> tuple[str | None, str | None]:
        """Blue's and Red's nations (:func:`nation`)."""
        return nation(self.factions[0]), nation(self.factions[1])

    @property
    def focus(self) -> int:
        """The side a category speaks of: the French, or Blue where no side is French."""
        return 0 if self.french_side is None else self.french_side

    @property
    def enemy_british(self) -> bool:
        """The side opposing :attr:`focus` names British or Anglo-allied troops."""
        enemy = self.factions[1 - self.focus]
        return "British" in enemy or "Anglo" in enemy


def _scale(scenario: Scenario) -> dict[str, float]:
    scale = scenario.extra.get("scale")
    if not isinstance(scale, dict):
        raise ScenarioError(f"{scenario.id}.scale={short_repr(scale)} is invalid: expected a "
                            f"mapping with {', '.join(SCALE_KEYS)}")
    values = {}
    for key in SCALE_KEYS:
        value = scale.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise ScenarioError(f"{scenario.id}.scale.{key}={short_repr(value)} is invalid: "
                                "expected a finite number > 0")
        values[key] = float(value)
    return values


def factions(scenario: Scenario) -> tuple[str, str]:
    """The ``factions`` entries of Blue and Red ("" where the battle names none)."""
    named = scenario.extra.get("factions")
    named = named if isinstance(named, dict) else {}
    return str(named.get("blue", "")), str(named.get("red", ""))


def nation(faction: str) -> str | None:
    """The nation a ``factions`` entry names first (:data:`NATIONS`, through
    :data:`NATION_ALIASES`): "British, Portuguese and Spanish" is British, "Spanish and
    British" Spanish; None when it names none of them."""
    named = [(faction.find(n), n) for n in NATIONS if n in faction]
    return NATION_ALIASES.get(min(named)[1], min(named)[1]) if named else None


def french_side(scenario: Scenario) -> int | None:
    """The side (0 Blue, 1 Red) whose ``factions`` entry names the French; None when
    neither or both do, or the battle names no factions."""
    french = [side for side, name in enumerate(factions(scenario)) if "French" in name]
    return french[0] if len(french) == 1 else None


def army_figures(scenario: Scenario) -> ArmyFigures:
    """Each side's men, guns, fighting power and mean elevation (module docstring).

    Raises:
        envs.scenario.ScenarioError: naming the battle and the key, for a ``scale``
            without a positive number for each of :data:`SCALE_KEYS`.
    """
    scale = _scale(scenario)
    per_arm = {C.INFANTRY: scale["men_per_unit"], C.CAVALRY: scale["sabres_per_squadron_unit"]}
    men, guns, power = np.zeros(2), np.zeros(2), np.zeros(2)
    for unit in scenario.units:
        if unit.arm == C.ARTILLERY:
            guns[unit.side] += unit.strength * scale["guns_per_battery"]
        else:
            men[unit.side] += unit.strength * per_arm[unit.arm]
        power[unit.side] += unit.strength * unit.quality
    terrain = scenario.terrain_map()
    elevation = np.zeros(2)
    if terrain is not None and not scenario.random_deployment:
        heights = terrain.elevation_at(scenario.array("x"), scenario.array("y"))
        side = scenario.array("side", np.int8)
        elevation = np.array([float(np.mean(heights[side == s])) for s in (0, 1)])
    return ArmyFigures(men, guns, power, elevation, french_side(scenario),
                       frozenset(f["kind"] for f in scenario.features), factions(scenario))


# ------------------------------------------------------------------------ fitting


def fit_logistic(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Weights ``w`` of ``P(y = 1) = 1 / (1 + exp(-x @ w))`` (no intercept unless ``x``
    has a column of ones), minimising the negative log-likelihood plus ``ridge / 2 *
    |w|^2`` by Newton's method; zeros for no rows.

    Args:
        x: (n, k) features.
        y: (n,) 0 or 1.

    Raises:
        ValueError: for features that are not (n, k) with n the outcomes' count.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"x of shape {x.shape} and y of {len(y)} values: expected (n, k) "
                         "features for n outcomes")
    w = np.zeros(x.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1 / (1 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + ridge * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + ridge * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


def _decisive(outcomes: Sequence[int]) -> list[int]:
    return [n for n, o in enumerate(outcomes) if o != NO_WINNER]


def _draw_share(outcomes: Sequence[int]) -> float:
    counts = [sum(o == w for o in outcomes) for w in (0, 1, NO_WINNER)]
    return float(smoothed_probabilities(counts)[2])


@dataclass(frozen=True)
class Prediction:
    """A baseline's call on one battle: a hard winner (0 Blue, 1 Red, None: no call)
    and the probabilities of Blue winning, Red winning and a draw."""

    winner: int | None
    probabilities: np.ndarray


@dataclass(frozen=True)
class FittedBaseline:
    """A baseline with its parameters fitted on the training battles."""

    key: str
    name: str
    parameters: dict[str, float]
    predict: Callable[[ArmyFigures], Prediction]

    def describe(self) -> str:
        """Its fitted parameters as text, e.g. ``b = 1.23, P(draw) = 0.05``."""
        return ", ".join(f"{k} = {v:.2f}" for k, v in self.parameters.items())


def _row(p_blue_decisive: float, p_draw: float) -> np.ndarray:
    return np.array([(1 - p_draw) * p_blue_decisive, (1 - p_draw) * (1 - p_blue_decisive),
                     p_draw])


@dataclass(frozen=True)
class Baseline:
    """A rule that predicts a battle's outcome from its figures (module docstring)."""

    key: str
    name: str
    fit: Callable[[Sequence[ArmyFigures], Sequence[int]], FittedBaseline]


def _fit_french(figures: Sequence[ArmyFigures], outcomes: Sequence[int]) -> FittedBaseline:
    counts = np.zeros(3)  # the French won, lost, drew
    for f, o in zip(figures, outcomes, strict=True):
        if f.french_side is not None:
            counts[2 if o == NO_WINNER else int(o != f.french_side)] += 1
    won, lost, drawn = smoothed_probabilities(counts)

    def predict(f: ArmyFigures) -> Prediction:
        if f.french_side is None:
            return Prediction(None, np.array([(won + lost) / 2, (won + lost) / 2, drawn]))
        row = np.array([won, lost, drawn] if f.french_side == 0 else [lost, won, drawn])
        return Prediction(f.french_side, row)

    return FittedBaseline("french", "the French win",
                          {"P(French win)": won, "P(French defeat)": lost, "P(draw)": drawn},
                          predict)


def _log_ratio(measure: str, f: ArmyFigures) -> float:
    value = getattr(f, measure)
    offset = 0.0 if measure == "power" else 1.0
    return math.log((value[0] + offset) / (value[1] + offset))


def _larger(measure: str, name: str) -> Baseline:
    def fit(figures: Sequence[ArmyFigures], outcomes: Sequence[int]) -> FittedBaseline:
        decisive = _decisive(outcomes)
        x = np.array([[_log_ratio(measure, figures[n])] for n in decisive]).reshape(-1, 1)
        y = np.array([outcomes[n] == 0 for n in decisive], float)
        (b,) = fit_logistic(x, y)
        p_draw = _draw_share(outcomes)

        def predict(f: ArmyFigures) -> Prediction:
            ratio = _log_ratio(measure, f)
            winner = 0 if ratio > 0 else 1 if ratio < 0 else None
            return Prediction(winner, _row(_sigmoid(b * ratio), p_draw))

        return FittedBaseline(measure, name, {"b": float(b), "P(draw)": p_draw}, predict)

    return Baseline(measure, name, fit)


def _french_sign(f: ArmyFigures) -> float:
    return 0.0 if f.french_side is None else (1.0 if f.french_side == 0 else -1.0)


def _fit_logistic_reference(figures: Sequence[ArmyFigures],
                            outcomes: Sequence[int]) -> FittedBaseline:
    decisive = _decisive(outcomes)
    x = np.array([[_french_sign(figures[n]), _log_ratio("power", figures[n])]
                  for n in decisive]).reshape(-1, 2)
    y = np.array([outcomes[n] == 0 for n in decisive], float)
    a, b = fit_logistic(x, y)
    p_draw = _draw_share(outcomes)

    def predict(f: ArmyFigures) -> Prediction:
        z = a * _french_sign(f) + b * _log_ratio("power", f)
        winner = 0 if z > 0 else 1 if z < 0 else None
        return Prediction(winner, _row(_sigmoid(z), p_draw))

    return FittedBaseline("logistic", "fitted: the French edge + fighting power",
                          {"a": float(a), "b": float(b), "P(draw)": p_draw}, predict)


def _nation_signs(f: ArmyFigures, nations: Sequence[str]) -> list[float]:
    blue, red = f.nations
    return [float(blue == n) - float(red == n) for n in nations]


def reference_nation(figures: Sequence[ArmyFigures]) -> str | None:
    """The nation on most sides of ``figures``' battles (ties: the first in
    :data:`NATIONS`' order); None when no side names one."""
    counts = {n: sum(f.nations.count(n) for f in figures) for n in NATIONS}
    best = max(counts.values(), default=0)
    return next((n for n in NATIONS if counts[n] == best), None) if best else None


def _fit_nations(figures: Sequence[ArmyFigures], outcomes: Sequence[int]) -> FittedBaseline:
    reference = reference_nation(figures)
    nations = [n for n in NATIONS if n != reference
               and any(n in f.nations for f in figures)]
    decisive = _decisive(outcomes)
    x = np.array([[_log_ratio("power", figures[n]), *_nation_signs(figures[n], nations)]
                  for n in decisive]).reshape(-1, 1 + len(nations))
    y = np.array([outcomes[n] == 0 for n in decisive], float)
    w = fit_logistic(x, y)
    p_draw = _draw_share(outcomes)

    def predict(f: ArmyFigures) -> Prediction:
        z = float(np.dot(w, [_log_ratio("power", f), *_nation_signs(f, nations)]))
        winner = 0 if z > 0 else 1 if z < 0 else None
        return Prediction(winner, _row(_sigmoid(z), p_draw))

    parameters = {"b": float(w[0]), **{f"a[{n}]": float(a) for n, a in zip(nations, w[1:],
                                                                           strict=True)},
                  "P(draw)": p_draw}
    return FittedBaseline("nations", "fitted: fighting power + each nation's edge",
                          parameters, predict)


BASELINES = (
    Baseline("french", "the French win", _fit_french),
    _larger("men", "more men win"),
    _larger("power", "more strength x quality wins"),
    _larger("guns", "more guns win"),
    Baseline("logistic", "fitted: the French edge + fighting power", _fit_logistic_reference),
    Baseline("nations", "fitted: fighting power + each nation's edge", _fit_nations),
)
"""Every baseline the benchmark reports (module docstring), in the report's order."""


# ---------------------------------------------------------------------- categories


def _enemy(f: ArmyFigures) -> int:
    return 1 - f.focus


CATEGORIES: tuple[tuple[str, Callable[[ArmyFigures, int], bool]], ...] = (
    ("the French outnumbered (fewer men)", lambda f, o: f.men[f.focus] < f.men[_enemy(f)]),
    ("the French weaker in strength x quality",
     lambda f, o: f.power[f.focus] < f.power[_enemy(f)]),
    ("the French with fewer guns", lambda f, o: f.guns[f.focus] < f.guns[_enemy(f)]),
    ("the enemy on the higher ground",
     lambda f, o: f.elevation[_enemy(f)] - f.elevation[f.focus] > HIGH_GROUND_MARGIN),
    ("a river on the field", lambda f, o: "river" in f.features),
    ("a stream or marsh on the field", lambda f, o: bool({"stream", "marsh"} & f.features)),
    ("woods on the field", lambda f, o: "woods" in f.features),
    ("the enemy with British troops", lambda f, o: f.enemy_british),
    ("a French defeat in history", lambda f, o: o not in (NO_WINNER, f.focus)),
    ("indecisive in history", lambda f, o: o == NO_WINNER),
)
"""Each category's name and its test of a battle's figures and historical outcome
(module docstring); a battle may fall in several."""


def battle_categories(figures: ArmyFigures, outcome: int) -> list[str]:
    """The names of the :data:`CATEGORIES` a battle falls in."""
    return [name for name, test in CATEGORIES if test(figures, outcome)]


__all__ = ["BASELINES", "CATEGORIES", "NATIONS", "NATION_ALIASES", "RIDGE", "SCALE_KEYS",
           "ArmyFigures", "Baseline", "FittedBaseline", "Prediction", "army_figures",
           "battle_categories", "factions", "fit_logistic", "french_side", "nation",
           "reference_nation"]
