"""How faithfully the simulator replays history, out of sample: every battle of
``data/historical/battles.json`` fought out, compared with what happened and with
trivial rules that simulate nothing.

Each battle is an order of battle on its field (:mod:`envs.scenario`): every unit of
both sides, with its arm, formation, strength and quality, on ground drawn from the
features that mattered. :class:`HistoricalBenchmark` plays it ``n_seeds`` times
(:func:`envs.scenario_battle.play_scenario`; by default both sides commanded by the
scripted combined-arms doctrine, or Blue by a given commander) and compares the
outcome with history (:class:`OutcomeComparator`):

* the simulated winner is the outcome most of its battles had (Blue, Red or a draw);
  it **matches** when it is the historical one;
* ``winner_score`` is the share of its battles that had the historical outcome;
* the simulated **probabilities** of Blue winning, Red winning and a draw are the
  shares of its battles with each outcome, smoothed: ``(k + 0.5) / (n + 1.5)``
  (:func:`benchmarks.historical_scoring.smoothed_probabilities`);
* ``casualty_score = clip(1 - 0.5 (|sim_blue - hist_blue| + |sim_red - hist_red|), 0, 1)``
  on casualties as shares of each side's strength;
* ``duration_score = clip(1 - |sim_hours - hist_hours| / hist_hours, 0, 1)``, a step
  standing for :data:`~envs.scenario_battle.STEP_SECONDS` of real time;
* **fidelity** = 0.5 winner_score + 0.3 casualty_score + 0.2 duration_score (the
  reference design's weights);
* the **casualty-ratio error** ``|log10(sim_blue / sim_red) - log10(hist_blue /
  hist_red)|`` says how far the exchange of losses is from history's, in orders of
  magnitude.

**Out of sample.** The battles are split by a hash of their ids into a training split
(about two thirds) and a held-out one (:func:`benchmarks.historical_scoring.in_training_split`).
The one choice of the simulation that was made by looking at its results on these
battles, the doctrine's rule for who attacks
(:data:`~envs.commanders.arms_doctrine.ATTACK_RULES`), is a declared parameter: every
candidate rule plays the training battles, the one with the highest winner match there
is kept (ties: the lower Brier score, then the candidates' order, the doctrine's default
first). Under it, each nation's combat effectiveness (a multiplier on its units'
quality, :mod:`benchmarks.historical_effectiveness`) is chosen on the training battles
too, and only the chosen rule and values play the held-out battles. The baselines
(:mod:`benchmarks.historical_baselines`: the French win, more men, more strength x
quality, more guns, and two fitted logistic references, the second with each nation's
edge) are fitted on the training battles too. The headline is the held-out winner match;
beside it the training split's (in sample: where the rule and the values were chosen)
and all battles'. Brier score and log-loss
(:mod:`benchmarks.historical_scoring`) are reported for the simulation and every
baseline on the same battles, and the battles the simulation gets wrong are grouped by
categories of their data (:data:`benchmarks.historical_baselines.CATEGORIES`).

Usage (``training.historical_benchmark``, the path the seeds document, hands this module's names on;
``python -m benchmarks.historical`` runs the same command line)::

    python -m training.historical_benchmark [--battles data/historical/battles.json]
        [--seeds 16] [--seed 42] [--output docs/historical_benchmark.md]
        [--attack-rules high_ground_forced power high_ground]
        [--effectiveness-grid 0.7 0.85 1.0 1.2 1.45 1.75 2.1]
    python -m training.historical_benchmark --replay austerlitz_1805 [--seed 42]
        [--gif docs/images/historical_austerlitz_1805.gif]

The first writes the report and, beside it, its picture (``historical_benchmark.png``:
fidelity per battle, simulated against historical casualties). ``--replay`` plays one
battle once (with the first of ``--attack-rules``) and animates it instead of running
the benchmark.
"""

from __future__ import annotations

import argparse
import html
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.historical_baselines import (
    BASELINES,
    CATEGORIES,
    ArmyFigures,
    Prediction,
    army_figures,
    battle_categories,
)
from benchmarks.historical_effectiveness import (
    EFFECTIVENESS_GRID,
    MIN_BATTLES,
    EffectivenessFit,
    check_grid,
    choose_effectiveness,
    fitted_nations,
    with_effectiveness,
)
from benchmarks.historical_scoring import (
    SPLIT_KEY,
    TRAIN_SHARE,
    Scores,
    brier_score,
    historical_winner,
    in_training_split,
    log_loss,
    smoothed_probabilities,
)
from data.historical import BATTLES_JSON, check_historical_outcome, load_battles
from envs.commanders.arms_doctrine import ATTACK_RULES, DEFAULT_ATTACK_RULE, CombinedArmsDoctrine
from envs.rendering.replay import render_gif
from envs.scenario import Scenario
from envs.scenario_battle import NO_WINNER, STEP_SECONDS, Commander, play_scenario
from storage.files import atomic_write_text
from training.plots import draw_historical_benchmark, write_png

logger = logging.getLogger(__name__)

_ROOT = Path(__file__).resolve().parent.parent
_BATTLES_JSON = BATTLES_JSON
_BENCHMARK_MD = _ROOT / "docs" / "historical_benchmark.md"
_BENCHMARK_PNG = _BENCHMARK_MD.with_suffix(".png")
WINNER_MATCH_TARGET = 0.60
"""The seeds' acceptance criterion: the simulated winner is history's in this share of
all battles."""
HELD_OUT_MATCH_TARGET = 0.80
"""The held-out target: the winner match."""
BASELINE_MARGIN_TARGET = 0.10
"""The held-out target: the winner match above every baseline's by this much."""
CASUALTY_RATIO_ERROR_TARGET = 0.25
"""The held-out target: the mean casualty-ratio error, in orders of magnitude."""
DEFAULT_SEEDS = 16
"""Battles played per historical battle (each its own deployment jitter and routs)."""
CANDIDATE_ATTACK_RULES = (DEFAULT_ATTACK_RULE, "power", "high_ground")
"""The attack rules the benchmark chooses among by default, the doctrine's default first
(it wins ties): the rules that weigh the odds (``"always"`` and ``"never"`` do not)."""
WEIGHTS = {"winner": 0.5, "casualties": 0.3, "duration": 0.2}
"""The fidelity's weights (the reference design's)."""
WINNER_NAMES = {0: "Blue", 1: "Red", NO_WINNER: "draw"}
SPLITS = ("held-out", "train", "all")
"""The sets of battles scores are given for."""


@dataclass(frozen=True)
class OutcomeComparison:
    """One battle's simulated outcome beside history's."""

    historical_winner: int
    simulated_winner: int
    winner_share: np.ndarray
    """Share of the battles won by Blue, Red, and drawn."""
    winner_score: float
    casualty_score: float
    duration_score: float
    casualty_ratio_error: float
    simulated_casualties: tuple[float, float]
    historical_casualties: tuple[float, float]
    simulated_hours: float
    historical_hours: float
    n_battles: int = 0
    """Simulated battles the shares are of (0: not known, and the probabilities are
    uniform)."""

    @property
    def fidelity(self) -> float:
        return (WEIGHTS["winner"] * self.winner_score + WEIGHTS["casualties"]
                * self.casualty_score + WEIGHTS["duration"] * self.duration_score)

    @property
    def probabilities(self) -> np.ndarray:
        """Blue winning, Red winning, a draw: the winner shares smoothed
        (:func:`~benchmarks.historical_scoring.smoothed_probabilities`)."""
        return smoothed_probabilities(np.asarray(self.winner_share) * self.n_battles)


class OutcomeComparator:
    """Scores simulated battles against history (module docstring)."""

    @staticmethod
    def compare(scenario: Scenario, winners: np.ndarray, casualties: np.ndarray,
                steps: np.ndarray) -> OutcomeComparison:
        """Compare ``scenario``'s battles' (B,) winners, (B, 2) casualty shares and (B,)
        lengths in steps with its historical outcome.

        Raises:
            envs.scenario.ScenarioError: if the historical outcome is invalid.
            ValueError: if the simulated casualties or lengths are not finite (a
                comparison that would be NaN is never scored).
        """
        history = check_historical_outcome(scenario)
        hist_winner = historical_winner(scenario)
        share = np.array([np.mean(winners == w) for w in (0, 1, NO_WINNER)])
        simulated = (0, 1, NO_WINNER)[int(np.argmax(share))]
        sim_cas = casualties.mean(axis=0)
        if not (np.isfinite(sim_cas).all() and np.isfinite(steps).all()):
            raise ValueError(f"battle {scenario.id}: simulated casualties {sim_cas.tolist()} "
                             "or lengths are not finite: expected finite numbers")
        hist_cas = (float(history["blue_casualties"]), float(history["red_casualties"]))
        casualty_score = float(np.clip(1 - 0.5 * (abs(sim_cas[0] - hist_cas[0])
                                                  + abs(sim_cas[1] - hist_cas[1])), 0, 1))
        hours = float(steps.mean()) * STEP_SECONDS / 3600
        hist_hours = float(history["duration_hours"])
        duration_score = 1.0 if hist_hours <= 0 else float(
            np.clip(1 - abs(hours - hist_hours) / hist_hours, 0, 1))
        floor = 1e-3  # a side without losses still has a finite ratio

        def ratio(blue: float, red: float) -> float:
            return math.log10(max(blue, floor) / max(red, floor))

        return OutcomeComparison(
            historical_winner=hist_winner, simulated_winner=simulated, winner_share=share,
            winner_score=float(share[(0, 1, NO_WINNER).index(hist_winner)]),
            casualty_score=casualty_score, duration_score=duration_score,
            casualty_ratio_error=abs(ratio(*sim_cas) - ratio(*hist_cas)),
            simulated_casualties=(float(sim_cas[0]), float(sim_cas[1])),
            historical_casualties=hist_cas, simulated_hours=hours, historical_hours=hist_hours,
            n_battles=len(winners))


_UNIFORM = np.full(3, 1 / 3)


@dataclass(frozen=True)
class BenchmarkEntry:
    """One historical battle's result: its comparison, or the error that stopped it."""

    battle_id: str
    name: str
    date: str
    n_units: tuple[int, int]
    comparison: OutcomeComparison | None
    elapsed_seconds: float
    error: str | None = None
    held_out: bool = False
    """The battle is in the held-out split (else the training one)."""
    historical_winner: int | None = None
    """History's winner (0 Blue, 1 Red, -1 indecisive); None: the comparison's."""
    categories: tuple[str, ...] = ()
    """The :data:`~benchmarks.historical_baselines.CATEGORIES` the battle falls in."""

    @property
    def passed(self) -> bool:
        """The battle ran to its end without an error."""
        return self.error is None

    @property
    def winner_matches(self) -> bool:
        return self.comparison is not None and \
            self.comparison.simulated_winner == self.comparison.historical_winner

    @property
    def fidelity_score(self) -> float:
        return 0.0 if self.comparison is None else self.comparison.fidelity

    @property
    def outcome(self) -> int | None:
        """History's winner, from the entry or its comparison (None if neither says)."""
        if self.historical_winner is not None:
            return self.historical_winner
        return None if self.comparison is None else self.comparison.historical_winner

    @property
    def prediction(self) -> Prediction:
        """The simulation's call: its winner and smoothed probabilities; a battle that
        failed calls no winner and gives each outcome a third."""
        if self.comparison is None:
            return Prediction(None, _UNIFORM)
        return Prediction(self.comparison.simulated_winner, self.comparison.probabilities)


@dataclass(frozen=True)
class RuleTrial:
    """One candidate attack rule's scores on the training battles."""

    rule: str
    scores: Scores
    chosen: bool


@dataclass(frozen=True)
class BaselineResult:
    """One baseline fitted on the training battles, and its call on every battle (in
    the order of the summary's entries)."""

    key: str
    name: str
    parameters: str
    """Its fitted parameters, as text."""
    predictions: tuple[Prediction, ...]


def score_entries(entries: Sequence[BenchmarkEntry]) -> Scores:
    """The simulation's scores over ``entries`` (each with its historical outcome)."""
    return Scores.of([e.prediction.winner for e in entries],
                     np.array([e.prediction.probabilities for e in entries]).reshape(-1, 3),
                     [e.outcome for e in entries])


def choose_attack_rule(trials: dict[str, Scores]) -> str:
    """The rule with the highest winner match, then the lowest Brier score, then the
    first in ``trials``' order (module docstring); scores of no battles (NaN) rank
    last, so with no training battles the first rule is kept.

    Raises:
        ValueError: for no rules.
    """
    if not trials:
        raise ValueError("trials is empty: expected the scores of at least one attack rule")

    def rank(item: tuple[int, tuple[str, Scores]]) -> tuple[float, float, int]:
        order, (_, scores) = item
        match = scores.winner_match if np.isfinite(scores.winner_match) else -1.0
        brier = scores.brier if np.isfinite(scores.brier) else math.inf
        return (-match, brier, order)

    return min(enumerate(trials.items()), key=rank)[1][0]


@dataclass(frozen=True)
class BenchmarkSummary:
    """Every battle's entry (under the attack rule chosen on the training split), the
    candidate rules' training scores, the baselines' calls and the totals."""

    total: int
    passed: int
    winner_match_rate: float
    """Over all battles."""
    mean_fidelity: float
    std_fidelity: float
    total_elapsed_seconds: float
    entries: list[BenchmarkEntry] = field(default_factory=list)
    n_seeds: int = DEFAULT_SEEDS
    seed: int = 42
    attack_rule: str = DEFAULT_ATTACK_RULE
    """The attack rule chosen on the training split, which played every battle here."""
    rule_trials: tuple[RuleTrial, ...] = ()
    baselines: tuple[BaselineResult, ...] = ()
    effectiveness: EffectivenessFit | None = None
    """The nations' combat effectiveness chosen on the training split, with which every
    battle here was played (None: none fitted)."""

    def indices(self, split: str) -> list[int]:
        """Positions in :attr:`entries` of the battles of ``split`` (one of
        :data:`SPLITS`) whose historical outcome is known.

        Raises:
            ValueError: for another split.
        """
        if split not in SPLITS:
            raise ValueError(f"split={split!r} is invalid: expected one of {', '.join(SPLITS)}")
        return [n for n, e in enumerate(self.entries) if e.outcome is not None and (
            split == "all" or e.held_out == (split == "held-out"))]

    def _scores(self, predictions: Sequence[Prediction], split: str) -> Scores:
        chosen = self.indices(split)
        return Scores.of([predictions[n].winner for n in chosen],
                         np.array([predictions[n].probabilities for n in chosen]).reshape(-1, 3),
                         [self.entries[n].outcome for n in chosen])

    def simulation_scores(self, split: str = "held-out") -> Scores:
        """The simulation's winner match, Brier score and log-loss on ``split``."""
        return self._scores([e.prediction for e in self.entries], split)

    def baseline_scores(self, baseline: BaselineResult, split: str = "held-out") -> Scores:
        """A baseline's scores on ``split``."""
        return self._scores(baseline.predictions, split)

    def casualty_ratio_error(self, split: str = "all") -> float:
        """Mean casualty-ratio error of the battles of ``split`` that ran (NaN: none)."""
        errors = [self.entries[n].comparison.casualty_ratio_error for n in self.indices(split)
                  if self.entries[n].comparison is not None]
        return float(np.mean(errors)) if errors else float("nan")

    def fidelity(self, split: str = "all") -> float:
        """Mean fidelity of the battles of ``split`` (a failed battle scores 0)."""
        chosen = self.indices(split)
        return float(np.mean([self.entries[n].fidelity_score for n in chosen])) \
            if chosen else float("nan")

    @property
    def mean_casualty_ratio_error(self) -> float:
        return self.casualty_ratio_error("all")

    @property
    def held_out_winner_match(self) -> float:
        """The headline: the simulation's winner match on the held-out battles."""
        return self.simulation_scores("held-out").winner_match

    def best_baseline(self, split: str = "held-out") -> BaselineResult | None:
        """The baseline with the highest winner match on ``split`` (ties: the lower
        Brier score, then the first); None without baselines."""
        if not self.baselines:
            return None

        def rank(b: BaselineResult) -> tuple[float, float]:
            s = self.baseline_scores(b, split)
            return (-np.nan_to_num(s.winner_match, nan=-1.0),
                    np.nan_to_num(s.brier, nan=math.inf))

        return min(self.baselines, key=rank)

    def out_of_sample_targets(self) -> list[tuple[str, str, bool]]:
        """The targets on the held-out battles: (criterion, what was measured,
        met). A target that cannot be measured (no held-out battle) is not met."""
        sim = self.simulation_scores("held-out")
        best = self.best_baseline("held-out")
        best_match = self.baseline_scores(best).winner_match if best else float("nan")
        best_brier = min((self.baseline_scores(b).brier for b in self.baselines),
                         default=float("nan"))
        error = self.casualty_ratio_error("held-out")
        return [
            (f"held-out winner match at least {_pct(HELD_OUT_MATCH_TARGET)}",
             _pct(sim.winner_match), bool(sim.winner_match >= HELD_OUT_MATCH_TARGET)),
            (f"held-out winner match at least {100 * BASELINE_MARGIN_TARGET:.0f} points "
             "above every baseline's",
             f"{_pct(sim.winner_match)} vs {_pct(best_match)}"
             + (f" ({best.name})" if best else ""),
             bool(sim.winner_match >= best_match + BASELINE_MARGIN_TARGET)),
            ("held-out Brier score below every baseline's",
             f"{sim.brier:.3f} vs best {best_brier:.3f}", bool(sim.brier < best_brier)),
            (f"held-out casualty-ratio error at most {CASUALTY_RATIO_ERROR_TARGET:.2f}",
             f"{error:.2f}", bool(error <= CASUALTY_RATIO_ERROR_TARGET)),
        ]

    @property
    def meets_out_of_sample_targets(self) -> bool:
        """Every one of :meth:`out_of_sample_targets` is met."""
        return all(met for _, _, met in self.out_of_sample_targets())

    @property
    def meets_target(self) -> bool:
        """The seeds' acceptance: 50 battles or more, all run, and the winner match
        over all of them at least :data:`WINNER_MATCH_TARGET`."""
        return self.total >= 50 and self.passed == self.total and \
            self.winner_match_rate >= WINNER_MATCH_TARGET


class HistoricalBenchmark:
    """Run all 50+ historical battles, choose the attack rule on the training split and
    compare each battle with history and with the baselines (module docstring).

    Args:
        battles_path: the JSON battle database (``data/historical/battles.json``).
        seed: the first seed of every battle's batch.
        n_seeds: battles played per historical battle.
        blue: Blue's commander (the combined-arms doctrine if None); Red always follows
            the doctrine.
        attack_rules: the doctrine's attack rules to choose among on the training split
            (:data:`~envs.commanders.arms_doctrine.ATTACK_RULES`), in tie-breaking order.
        effectiveness_grid: the combat effectiveness values each nation's is chosen among
            on the training split (:mod:`benchmarks.historical_effectiveness`); ``(1.0,)``
            fits none.

    Raises:
        ValueError: for ``n_seeds`` below 1, a negative seed, attack rules that are
            empty, repeated or unknown, or an effectiveness grid that is not distinct
            positive numbers including 1.
    """

    def __init__(self, battles_path: str | Path = _BATTLES_JSON, seed: int = 42,
                 n_seeds: int = DEFAULT_SEEDS, blue: Commander | None = None,
                 attack_rules: Sequence[str] = CANDIDATE_ATTACK_RULES,
                 effectiveness_grid: Sequence[float] = EFFECTIVENESS_GRID) -> None:
        if not isinstance(n_seeds, int) or n_seeds < 1:
            raise ValueError(f"n_seeds={n_seeds!r} is invalid: expected an integer >= 1")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed={seed!r} is invalid: expected an integer >= 0")
        rules = tuple(attack_rules) if not isinstance(attack_rules, str) else (attack_rules,)
        if not rules or len(set(rules)) < len(rules) or not set(rules) <= set(ATTACK_RULES):
            raise ValueError(f"attack_rules={list(rules)!r} is invalid: expected distinct "
                             f"rules among {', '.join(ATTACK_RULES)}")
        self.battles_path = Path(battles_path)
        self.seed, self.n_seeds, self.blue = seed, n_seeds, blue
        self.attack_rules = rules
        self.effectiveness_grid = check_grid(effectiveness_grid)

    def run(self) -> BenchmarkSummary:
        """Run the full benchmark and return a :class:`BenchmarkSummary`.

        Every candidate attack rule plays the training battles; under the chosen one
        the training battles of the nations fitted play once more at every other value
        of the effectiveness grid; the chosen rule and values play the held-out
        battles. Every unit of both sides is simulated, ``n_seeds`` battles per
        historical one.

        Raises:
            FileNotFoundError: if the battle database is missing.
            envs.scenario.ScenarioError: if it is malformed, a historical outcome or a
                battle's ``scale`` included (nothing runs then).
        """
        scenarios = load_battles(self.battles_path)
        figures = [army_figures(s) for s in scenarios]
        outcomes = [historical_winner(s) for s in scenarios]
        held_out = [not in_training_split(s.id) for s in scenarios]
        train = [n for n, out in enumerate(held_out) if not out]
        start = time.perf_counter()
        played: dict[str, dict[int, BenchmarkEntry]] = {}
        trials: dict[str, Scores] = {}
        for rule in self.attack_rules:
            played[rule] = {n: self._run_one(scenarios[n], rule, False, figures[n],
                                             outcomes[n]) for n in train}
            trials[rule] = score_entries([played[rule][n] for n in train])
            logger.info("attack rule %s: training winner match %.3f over %d battles", rule,
                        trials[rule].winner_match, len(train))
        chosen = choose_attack_rule(trials)
        fit, passes = self._fit_effectiveness(scenarios, figures, outcomes, train, chosen,
                                              played[chosen])
        entries = []
        for n, (scenario, out) in enumerate(zip(scenarios, held_out, strict=True)):
            # A training battle was played already at its nation's value if it has one
            # fitted nation (the grid's passes) or none (as the data has it).
            values = {fit.values[x] for x in figures[n].nations if x in fit.values} or {1.0}
            value = next(iter(values)) if len(values) == 1 else None
            if not out and n in passes.get(value, {}):
                entries.append(passes[value][n])
            else:
                entries.append(self._run_one(with_effectiveness(scenario, fit.values),
                                             chosen, out, figures[n], outcomes[n]))
        baselines = []
        for baseline in BASELINES:
            fitted = baseline.fit([figures[n] for n in train], [outcomes[n] for n in train])
            baselines.append(BaselineResult(fitted.key, fitted.name, fitted.describe(),
                                            tuple(fitted.predict(f) for f in figures)))
        elapsed = time.perf_counter() - start
        fidelity = np.array([e.fidelity_score for e in entries])
        return BenchmarkSummary(
            total=len(entries), passed=sum(e.passed for e in entries),
            winner_match_rate=float(np.mean([e.winner_matches for e in entries])),
            mean_fidelity=float(fidelity.mean()), std_fidelity=float(fidelity.std()),
            total_elapsed_seconds=elapsed, entries=entries, n_seeds=self.n_seeds,
            seed=self.seed, attack_rule=chosen, effectiveness=fit,
            rule_trials=tuple(RuleTrial(rule, trials[rule], rule == chosen)
                              for rule in self.attack_rules),
            baselines=tuple(baselines))

    def _fit_effectiveness(self, scenarios: Sequence[Scenario],
                           figures: Sequence[ArmyFigures], outcomes: Sequence[int],
                           train: Sequence[int], rule: str,
                           unchanged: dict[int, BenchmarkEntry],
                           ) -> tuple[EffectivenessFit, dict[float, dict[int, BenchmarkEntry]]]:
        """The nations' combat effectiveness chosen on the training battles under
        ``rule`` (:mod:`benchmarks.historical_effectiveness`), and the training battles
        played at each grid value (``unchanged``: those played as the data has them)."""
        reference, battles = fitted_nations([figures[n] for n in train])
        battles = {nation: [train[k] for k in chosen] for nation, chosen in battles.items()}
        fitted = sorted({n for chosen in battles.values() for n in chosen})
        passes = {1.0: unchanged}
        for value in self.effectiveness_grid:
            if value == 1.0 or not fitted:
                continue
            everyone = dict.fromkeys(battles, value)
            passes[value] = {n: self._run_one(
                with_effectiveness(scenarios[n], everyone), rule, False,
                figures[n], outcomes[n]) for n in fitted}
            logger.info("combat effectiveness %.2f: training winner match %.3f over the %d "
                        "battles of the fitted nations", value,
                        score_entries(list(passes[value].values())).winner_match, len(fitted))
        fit = choose_effectiveness(reference, battles, list(passes), lambda value, chosen:
                                   score_entries([passes[value][n] for n in chosen]))
        return fit, passes

    def _run_one(self, scenario: Scenario, rule: str, held_out: bool, figures: ArmyFigures,
                 outcome: int) -> BenchmarkEntry:
        start = time.perf_counter()
        sizes = (scenario.n_blue, scenario.n_red)
        date = str(scenario.extra.get("date", ""))
        details = {"held_out": held_out, "historical_winner": outcome,
                   "categories": tuple(battle_categories(figures, outcome))}
        try:
            doctrine = CombinedArmsDoctrine(scenario.config(), attack_rule=rule)
            result = play_scenario(scenario, self.n_seeds, self.seed,
                                     blue=doctrine if self.blue is None else self.blue,
                                     red=doctrine)
            comparison = OutcomeComparator.compare(scenario, result.winner,
                                                   result.casualties, result.steps)
        except Exception as error:  # one battle's failure is reported, the others run
            logger.exception("historical battle %s failed", scenario.id)
            return BenchmarkEntry(scenario.id, scenario.name, date, sizes, None,
                                  time.perf_counter() - start, f"{type(error).__name__}: {error}",
                                  **details)
        entry = BenchmarkEntry(scenario.id, scenario.name, date, sizes, comparison,
                               time.perf_counter() - start, **details)
        logger.info("%s (%s): history %s, simulated %s (fidelity %.2f)", scenario.id, rule,
                    WINNER_NAMES[comparison.historical_winner],
                    WINNER_NAMES[comparison.simulated_winner], comparison.fidelity)
        return entry

    def write_markdown(self, summary: BenchmarkSummary,
                       output_path: str | Path = _BENCHMARK_MD) -> Path:
        """Write the benchmark results to a Markdown file.

        Args:
            summary: what :meth:`run` returned.
            output_path: destination; parent directories are created if missing.

        Returns:
            The path written.
        """
        path = Path(output_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, render_markdown(summary))
        return path

    def write_plot(self, summary: BenchmarkSummary,
                   output_path: str | Path = _BENCHMARK_PNG) -> Path:
        """Draw the results (:func:`draw_results`) to a PNG, atomically.

        Args:
            summary: what :meth:`run` returned.
            output_path: destination (by default beside the Markdown report);
                parent directories are created if missing.

        Returns:
            The path written.
        """
        return write_png(output_path, draw_results(summary))


def draw_results(summary: BenchmarkSummary) -> bytes:
    """The battles that ran as a PNG: each one's fidelity, green where the simulated winner
    is history's (hatched where held out), the simulated against the historical
    casualties of both sides, and the held-out winner match and Brier score of the
    simulation and of every baseline (when there are held-out battles)."""
    ran = [e for e in summary.entries if e.comparison is not None]
    held = summary.simulation_scores("held-out")
    predictors = {f"the simulation ({summary.attack_rule})": (held.winner_match, held.brier)}
    for b in summary.baselines:
        scores = summary.baseline_scores(b, "held-out")
        predictors[b.name] = (scores.winner_match, scores.brier)
    scored = held.n > 0 and all(np.isfinite(v).all() for v in predictors.values())
    return draw_historical_benchmark(
        [e.name for e in ran], [e.fidelity_score for e in ran],
        [e.winner_matches for e in ran],
        np.array([e.comparison.simulated_casualties for e in ran]),
        np.array([e.comparison.historical_casualties for e in ran]),
        predictors=predictors if scored and summary.baselines else None,
        held_out=[e.held_out for e in ran])


def _pct(x: float) -> str:
    return "n/a" if not np.isfinite(x) else f"{100 * x:.0f}%"


def _num(x: float, digits: int = 3) -> str:
    return "n/a" if not np.isfinite(x) else f"{x:.{digits}f}"


_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]|#"})


def _cell(text: object) -> str:
    """``text`` as inert Markdown table-cell text: HTML escaped (a ``<script>`` in a
    battle's name stays text), Markdown's marks and the cell bar ``|`` backslashed,
    line breaks as spaces (a name cannot end its row)."""
    flat = " ".join(str(text).split())
    return html.escape(flat, quote=False).translate(_MARKDOWN_SPECIAL)


def _headline(summary: BenchmarkSummary) -> list[str]:
    splits = [summary.simulation_scores(s) for s in SPLITS]
    lines = [
        "| measure | held-out (headline) | training split (in sample) | all battles |",
        "|---|---:|---:|---:|",
        "| battles | " + " | ".join(str(s.n) for s in splits) + " |",
        "| winner match (simulated winner is history's) | " + " | ".join(
            ("**{}**" if n == 0 else "{}").format(
                f"{_pct(s.winner_match)} ± {_pct(s.winner_match_stderr)}")
            for n, s in enumerate(splits)) + " |",
        "| Brier score (3 outcomes; lower is better) | "
        + " | ".join(_num(s.brier) for s in splits) + " |",
        "| log-loss (lower is better) | " + " | ".join(_num(s.log_loss) for s in splits) + " |",
        "| mean casualty-ratio error (orders of magnitude) | "
        + " | ".join(_num(summary.casualty_ratio_error(s), 2) for s in SPLITS) + " |",
        "| mean fidelity | " + " | ".join(_num(summary.fidelity(s)) for s in SPLITS) + " |",
    ]
    return lines


def _rule_table(summary: BenchmarkSummary) -> list[str]:
    lines = ["| attack rule | training winner match | training Brier | training log-loss "
             "| chosen |", "|---|---:|---:|---:|---|"]
    for trial in summary.rule_trials:
        s = trial.scores
        lines.append(f"| `{trial.rule}` | {_pct(s.winner_match)} | {_num(s.brier)} | "
                     f"{_num(s.log_loss)} | {'**chosen**' if trial.chosen else ''} |")
    return lines


def _effectiveness_table(summary: BenchmarkSummary) -> list[str]:
    fit = summary.effectiveness
    if fit is None or not fit.trials:
        return ["No nation has enough training battles against the reference nation"
                + (f" ({_cell(fit.reference)})" if fit and fit.reference else "")
                + ": every quality is as the data has it."]
    grid = sorted(next(iter(fit.trials.values())))
    lines = ["| nation | training battles | " + " | ".join(f"{g:g}" for g in grid)
             + " | chosen |", "|---|---:|" + "---:|" * len(grid) + "---:|"]
    for nation, trials in fit.trials.items():
        cells = " | ".join(("**{}**" if g == fit.values[nation] else "{}").format(
            _pct(trials[g].winner_match)) for g in grid)
        lines.append(f"| {_cell(nation)} | {trials[grid[0]].n} | {cells} | "
                     f"{fit.values[nation]:g} |")
    lines += ["", f"The reference nation ({_cell(fit.reference)}) and every other nation "
              "keep 1."]
    return lines


def _baseline_table(summary: BenchmarkSummary) -> list[str]:
    lines = ["| predictor | fitted on the training split | held-out winner match | "
             "held-out Brier | held-out log-loss | all battles: winner match | Brier | "
             "log-loss |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    fitted = "the attack rule" + ("" if summary.effectiveness is None else ", " + ", ".join(
        f"{_cell(n)} {v:g}" for n, v in summary.effectiveness.values.items()))
    rows = [(f"**the simulation** (`{summary.attack_rule}`)", fitted,
             summary.simulation_scores("held-out"), summary.simulation_scores("all"))]
    rows += [(_cell(b.name), _cell(b.parameters), summary.baseline_scores(b, "held-out"),
              summary.baseline_scores(b, "all")) for b in summary.baselines]
    for name, fitted, held, every in rows:
        lines.append(f"| {name} | {fitted} | {_pct(held.winner_match)} | {_num(held.brier)} | "
                     f"{_num(held.log_loss)} | {_pct(every.winner_match)} | "
                     f"{_num(every.brier)} | {_num(every.log_loss)} |")
    return lines


def _category_table(summary: BenchmarkSummary) -> list[str]:
    best = summary.best_baseline("held-out")
    best_hits = [] if best is None else [
        p.winner is not None and p.winner == e.outcome
        for p, e in zip(best.predictions, summary.entries, strict=True)]
    header = "best baseline's misses" if best is None else \
        f"misses of \"{_cell(best.name)}\" (the best baseline held out)"
    lines = [f"| category | battles | simulation misses | miss share | {header} | "
             "the battles the simulation misses |", "|---|---:|---:|---:|---:|---|"]
    groups = [("all battles", list(range(len(summary.entries))))] + [
        (name, [n for n, e in enumerate(summary.entries) if name in e.categories])
        for name, _ in CATEGORIES]
    for name, members in groups:
        members = [n for n in members if summary.entries[n].outcome is not None]
        missed = [n for n in members if not summary.entries[n].winner_matches]
        baseline_missed = "" if best is None else str(sum(not best_hits[n] for n in members))
        names = ", ".join(_cell(summary.entries[n].name) + (" (h)" if summary.entries[n].held_out
                                                             else "") for n in missed)
        share = len(missed) / len(members) if members else float("nan")
        lines.append(f"| {_cell(name)} | {len(members)} | {len(missed)} | {_pct(share)} | "
                     f"{baseline_missed} | {names if name != 'all battles' else ''} |")
    return lines


def render_markdown(summary: BenchmarkSummary) -> str:
    """The report of ``summary`` as Markdown: the headline (held-out, training and all
    battles), the attack rule's choice, the baselines, the held-out targets, the misses
    by category and every battle."""
    verdict = "PASS" if summary.meets_target else "FAIL"
    held_out = summary.indices("held-out")
    lines = [
        "# Historical benchmark",
        "",
        "Every battle of `data/historical/battles.json` fought out with every unit of both "
        "sides, both commanded by the scripted combined-arms doctrine "
        "(`envs/commanders/arms_doctrine.py`), "
        f"{summary.n_seeds} battles each (seeds {summary.seed} to "
        f"{summary.seed + summary.n_seeds - 1}). Written by `python -m "
        "training.historical_benchmark`; the measures, the split and the baselines are "
        "defined in the docstrings of `benchmarks/historical.py`, "
        "`benchmarks/historical_scoring.py` and `benchmarks/historical_baselines.py`.",
        "",
        f"The battles are split by a hash of their ids: {summary.total - len(held_out)} "
        f"in the training split, {len(held_out)} held out (the split expects "
        f"{_pct(TRAIN_SHARE)} in training and does not depend on the file's order or "
        "length). The choices of the simulation made by looking at its results on these "
        "battles, the doctrine's attack rule and each nation's combat effectiveness, are "
        "made on the training split only; the baselines are fitted there too. Held-out "
        "figures are the headline; ± is the binomial standard error.",
        "",
        *_headline(summary),
        "",
        f"Battles run / in the database: {summary.passed} / {summary.total}. Runtime "
        f"{summary.total_elapsed_seconds / 60:.1f} min (every candidate rule on the "
        "training battles, then every effectiveness value on the training battles of the "
        "fitted nations, the chosen ones on the held-out battles). The acceptance criterion "
        f"(winner match over all battles >= {_pct(WINNER_MATCH_TARGET)}): {verdict}.",
        "",
        "## The attack rule, chosen on the training split",
        "",
        "Highest training winner match; ties go to the lower Brier score, then to the "
        "doctrine's default. No candidate plays the held-out battles but the chosen one.",
        "",
        *_rule_table(summary),
        "",
        "## Each nation's combat effectiveness, chosen on the training split",
        "",
        "Under the chosen attack rule, a value multiplies the quality of every unit of the "
        "nation's side (`benchmarks/historical_effectiveness.py`); each nation with "
        f"{MIN_BATTLES} or more training battles against the reference nation gets the "
        "value whose training battles match history most often (ties: the lower Brier "
        "score, then the value nearest 1). Training winner match of those battles at "
        "each value:",
        "",
        *_effectiveness_table(summary),
        "",
        "## Against baselines that simulate nothing",
        "",
        "Each baseline names a winner by a one-line rule, or by a logistic fit for the "
        "two marked fitted, and gives probabilities fitted on "
        "the training split (`benchmarks/historical_baselines.py`); an indecisive battle "
        "is a miss for every rule that names a winner. The simulation's probabilities are "
        "its outcome shares smoothed, (k + 0.5) / (n + 1.5).",
        "",
        *_baseline_table(summary),
        "",
        "## Issue 36's targets (held-out battles)",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        *[f"| {_cell(name)} | {_cell(value)} | {'yes' if met else '**no**'} |"
          for name, value, met in summary.out_of_sample_targets()],
        "",
        "## Misses by category",
        "",
        "The battles whose simulated winner is not history's, grouped by facts of their "
        "data seen from the French side (`CATEGORIES` in "
        "`benchmarks/historical_baselines.py`; a battle may fall in several). (h) marks "
        "a held-out battle.",
        "",
        *_category_table(summary),
        "",
        "## Every battle",
        "",
        "Simulated battles are decided within minutes of contact (fire and melee are quick "
        "in this model, and the break rule ends a battle when a side has lost half its "
        "strength), so the duration score is near zero for most battles: the model has no "
        "reserves committed over hours, no night and no pursuit. The reference design's "
        "benchmark matched 7.7 % of winners with a static duel of the first unit of each "
        "side; here every unit fights.",
        "",
        "Casualties are shares of each side's strength (Blue / Red). Winner shares are the "
        "shares of the simulated battles won by Blue, won by Red and drawn; P(history) is "
        "the smoothed probability the simulation gives history's outcome; (x) marks a "
        "battle whose simulated winner is not history's.",
        "",
        "| battle | date | split | units B/R | history | simulated | B / R / draw | "
        "P(history) | casualties history | casualties simulated | ratio error | "
        "hours hist / sim | fidelity |",
        "|---|---|---|---|---|---|---|---:|---|---|---:|---|---:|",
    ]
    for e in summary.entries:
        c = e.comparison
        split = "held-out" if e.held_out else "train"
        if c is None:
            lines.append(f"| {_cell(e.name)} | {_cell(e.date)} | {split} | "
                         f"{e.n_units[0]}/{e.n_units[1]} | | error: {_cell(e.error)} "
                         "| | | | | | | |")
            continue
        mark = "" if e.winner_matches else " (x)"
        shares = " / ".join(_pct(s) for s in c.winner_share)
        p_history = c.probabilities[(0, 1, NO_WINNER).index(c.historical_winner)]
        lines.append(
            f"| {_cell(e.name)} | {_cell(e.date)} | {split} | {e.n_units[0]}/{e.n_units[1]} | "
            f"{WINNER_NAMES[c.historical_winner]} | {WINNER_NAMES[c.simulated_winner]}{mark} | "
            f"{shares} | {p_history:.2f} | "
            f"{c.historical_casualties[0]:.2f} / {c.historical_casualties[1]:.2f} | "
            f"{c.simulated_casualties[0]:.2f} / {c.simulated_casualties[1]:.2f} | "
            f"{c.casualty_ratio_error:.2f} | {c.historical_hours:.1f} / "
            f"{c.simulated_hours:.1f} | {c.fidelity:.2f} |")
    lines.append("")
    return "\n".join(lines)


def replay_gif(battles_path: str | Path, battle_id: str, seed: int = 42,
               path: str | Path | None = None,
               attack_rule: str = DEFAULT_ATTACK_RULE) -> Path:
    """Play battle ``battle_id`` once (seed ``seed``, both sides following the doctrine
    with ``attack_rule``) and write its GIF.

    Raises:
        KeyError: if the database has no such battle (the message lists the ids).
        envs.scenario.ScenarioError: if the database is invalid.
        ValueError: for an attack rule not in
            :data:`~envs.commanders.arms_doctrine.ATTACK_RULES`.
    """
    scenarios = {s.id: s for s in load_battles(battles_path)}
    if battle_id not in scenarios:
        raise KeyError(f"battle {battle_id!r} is not in {battles_path}: expected one of "
                       f"{sorted(scenarios)}")
    scenario = scenarios[battle_id]
    doctrine = CombinedArmsDoctrine(scenario.config(), attack_rule=attack_rule)
    outcome = play_scenario(scenario, 1, seed, blue=doctrine, red=doctrine, record=True)
    target = Path(path) if path else _ROOT / "docs" / "images" / f"historical_{battle_id}.gif"
    target.parent.mkdir(parents=True, exist_ok=True)
    stride = max(1, outcome.replay.n_steps // 60)  # about 60 frames: a small file
    return render_gif(outcome.replay, target, size=480, fps=10, frame_stride=stride)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.historical_benchmark",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--battles", default=str(_BATTLES_JSON), help="battle database (JSON)")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS,
                        help="battles per historical battle")
    parser.add_argument("--seed", type=int, default=42, help="first seed")
    parser.add_argument("--output", default=str(_BENCHMARK_MD), help="Markdown report")
    parser.add_argument("--attack-rules", nargs="+", choices=ATTACK_RULES,
                        default=list(CANDIDATE_ATTACK_RULES), metavar="RULE",
                        help="the doctrine's attack rules to choose among on the training "
                        f"split, in tie-breaking order (default: {' '.join(CANDIDATE_ATTACK_RULES)}"
                        "); --replay plays the first")
    parser.add_argument("--effectiveness-grid", nargs="+", type=float,
                        default=list(EFFECTIVENESS_GRID), metavar="VALUE",
                        help="combat effectiveness values each nation's is chosen among on "
                             "the training split (1.0 alone: none fitted)")
    parser.add_argument("--replay", metavar="ID", help="animate this battle instead")
    parser.add_argument("--gif", help="where --replay writes its GIF "
                        "(default docs/images/historical_<ID>.gif)")
    args = parser.parse_args(argv)
    try:
        if args.replay:
            path = replay_gif(args.battles, args.replay, args.seed, args.gif,
                              attack_rule=args.attack_rules[0])
            print(f"replay of {args.replay}: {path}")
            return
        benchmark = HistoricalBenchmark(args.battles, seed=args.seed, n_seeds=args.seeds,
                                        attack_rules=args.attack_rules,
                                        effectiveness_grid=args.effectiveness_grid)
        summary = benchmark.run()
    except (FileNotFoundError, KeyError, ValueError) as error:
        # A bad database or argument: its message, and a failing exit status.
        raise SystemExit(f"error: {error}") from None
    for e in summary.entries:
        c = e.comparison
        status = e.error if c is None else (
            f"history {WINNER_NAMES[c.historical_winner]:5s} simulated "
            f"{WINNER_NAMES[c.simulated_winner]:5s} fidelity {c.fidelity:.2f}")
        print(f"{e.battle_id:32s} {'held-out' if e.held_out else 'train':8s} {status}")
    path = benchmark.write_markdown(summary, args.output)
    picture = benchmark.write_plot(summary, Path(args.output).with_suffix(".png"))
    held, every = summary.simulation_scores("held-out"), summary.simulation_scores("all")
    fit = summary.effectiveness
    print("combat effectiveness: " + (", ".join(f"{n} {v:g}" for n, v in fit.values.items())
                                      if fit and fit.values else "none fitted"))
    print(f"attack rule {summary.attack_rule} (chosen on {every.n - held.n} training "
          f"battles); winner match held out {_pct(held.winner_match)} over {held.n} battles "
          f"(Brier {_num(held.brier)}, log-loss {_num(held.log_loss)}), all "
          f"{_pct(every.winner_match)} over {every.n}; "
          f"{summary.total_elapsed_seconds / 60:.1f} min; report: {path}, picture: {picture}")
    for b in summary.baselines:
        s = summary.baseline_scores(b)
        print(f"  baseline {b.name}: held out {_pct(s.winner_match)} "
              f"(Brier {_num(s.brier)}, log-loss {_num(s.log_loss)})")
    if summary.passed < summary.total:
        raise SystemExit(f"error: {summary.total - summary.passed} of {summary.total} battles "
                         "failed (see the report)")


__all__ = ["BASELINES", "BASELINE_MARGIN_TARGET", "CANDIDATE_ATTACK_RULES",
           "CASUALTY_RATIO_ERROR_TARGET", "DEFAULT_SEEDS", "HELD_OUT_MATCH_TARGET", "SPLITS",
           "SPLIT_KEY", "TRAIN_SHARE", "WEIGHTS", "WINNER_MATCH_TARGET", "WINNER_NAMES",
           "BaselineResult", "BenchmarkEntry", "BenchmarkSummary", "HistoricalBenchmark",
           "OutcomeComparator", "OutcomeComparison", "RuleTrial", "Scores", "army_figures",
           "brier_score", "choose_attack_rule", "draw_results", "historical_winner",
           "in_training_split", "log_loss", "main", "render_markdown", "replay_gif",
           "score_entries", "smoothed_probabilities"]

if __name__ == "__main__":
    main()
