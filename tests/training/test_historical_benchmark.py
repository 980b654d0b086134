"""The historical benchmark: its database, its measures and its report."""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from benchmarks.historical import (
    _BATTLES_JSON,
    HistoricalBenchmark,
    OutcomeComparator,
    historical_winner,
)
from envs.scenario import load_scenarios, scenario_from_dict
from envs.scenario_battle import NO_WINNER, STEP_SECONDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def battles():
    return load_scenarios(_BATTLES_JSON)


def test_the_database_holds_a_hundred_real_battles_of_the_period_with_all_arms(battles):
    assert len(battles) >= 100
    assert len({b.id for b in battles}) == len(battles)
    for battle in battles:
        history = battle.extra
        # from the first battle of the Revolutionary Wars (April 1792) to the end of 1815
        assert date(1792, 4, 1) <= date.fromisoformat(history["date"]) <= date(1815, 12, 31)
        assert history["source"] and history["scale"]["sector"] and history["factions"]
        assert history["historical_outcome"]["winner"] in ("blue", "red", None)
        assert 0 <= history["historical_outcome"]["blue_casualties"] <= 1
        assert battle.features, battle.id  # the ground that mattered
    arms = [{u.arm for u in b.units} for b in battles]
    assert sum(len(a) == 3 for a in arms) >= 40  # most battles have all three arms
    winners = [historical_winner(b) for b in battles]
    # French defeats and draws too: at least a comfortable third of the battles
    assert winners.count(1) + winners.count(NO_WINNER) >= 0.38 * len(battles)


def test_the_comparison_follows_the_documented_formulas(battles):
    battle = next(b for b in battles if historical_winner(b) == 0)
    history = battle.extra["historical_outcome"]
    winners = np.array([0, 0, 0, 1])
    casualties = np.array([[0.2, 0.4]] * 4)
    steps = np.full(4, 900)
    c = OutcomeComparator.compare(battle, winners, casualties, steps)
    assert c.simulated_winner == 0 and c.winner_score == 0.75
    assert c.casualty_score == pytest.approx(np.clip(1 - 0.5 * (
        abs(0.2 - history["blue_casualties"]) + abs(0.4 - history["red_casualties"])), 0, 1))
    hours = 900 * STEP_SECONDS / 3600
    assert c.duration_score == pytest.approx(max(0.0, 1 - abs(hours - history["duration_hours"])
                                                 / history["duration_hours"]))
    assert c.fidelity == pytest.approx(0.5 * 0.75 + 0.3 * c.casualty_score
                                       + 0.2 * c.duration_score)
    assert c.casualty_ratio_error == pytest.approx(abs(
        np.log10(0.2 / 0.4) - np.log10(history["blue_casualties"]
                                        / history["red_casualties"])))


def test_a_run_reports_every_battle_and_writes_its_markdown(tmp_path):
    entries = json.loads(_BATTLES_JSON.read_text())[:2]
    path = tmp_path / "two.json"
    path.write_text(json.dumps(entries))
    benchmark = HistoricalBenchmark(path, seed=3, n_seeds=2)
    summary = benchmark.run()
    assert (summary.total, summary.passed, len(summary.entries)) == (2, 2, 2)
    assert summary.winner_match_rate == np.mean([e.winner_matches for e in summary.entries])
    assert not summary.meets_target  # two battles are not fifty
    report = benchmark.write_markdown(summary, tmp_path / "out" / "report.md")
    text = report.read_text()
    assert all(e.name in text for e in summary.entries) and "winner match" in text
    # Both battles are in the training split: the held-out column has nothing to score.
    assert "| battles | 0 | 2 | 2 |" in text and "| **n/a ± n/a** |" in text
    assert [p.name for p in report.parent.iterdir()] == ["report.md"]


def test_a_battle_that_fails_is_reported_and_the_others_run(tmp_path):
    class Broken:
        def orders(self, state, geometry):
            raise RuntimeError("no orders")

    path = tmp_path / "one.json"
    path.write_text(json.dumps(json.loads(_BATTLES_JSON.read_text())[:1]))
    summary = HistoricalBenchmark(path, n_seeds=1, blue=Broken()).run()
    assert summary.passed == 0 and "no orders" in summary.entries[0].error


@pytest.mark.parametrize("n_seeds", [0, 1.5])
def test_settings_are_checked(n_seeds):
    with pytest.raises(ValueError, match="n_seeds"):
        HistoricalBenchmark(n_seeds=n_seeds)


# ------------------------------------------------------------- a database from elsewhere


def _one_battle(tmp_path, **outcome):
    entry = json.loads(_BATTLES_JSON.read_text())[0]
    entry["historical_outcome"] = {**entry["historical_outcome"], **outcome}
    path = tmp_path / "one.json"
    path.write_text(json.dumps([entry]))  # NaN is written as JSON's NaN
    return path


@pytest.mark.parametrize("field, value, allowed", [
    ("winner", "green", "'blue', 'red' or null"),
    ("winner", True, "'blue', 'red' or null"),
    ("blue_casualties", float("nan"), "finite share"),
    ("red_casualties", -0.1, r"\[0, 1\]"),
    ("red_casualties", 1.5, r"\[0, 1\]"),
    ("blue_casualties", "0.2", "finite share"),
    ("duration_hours", 0, "finite number of hours"),
    ("duration_hours", float("inf"), "finite number of hours"),
])
def test_an_invalid_historical_outcome_is_refused_by_name_before_any_battle(
        tmp_path, field, value, allowed):
    from data.historical import load_battles
    from envs.scenario import ScenarioError

    path = _one_battle(tmp_path, **{field: value})
    pattern = rf"one\.json\[0\] \(montenotte_1796\)\.historical_outcome\.{field}=.*{allowed}"
    with pytest.raises(ScenarioError, match=pattern):
        load_battles(path)
    with pytest.raises(ScenarioError, match=field):
        HistoricalBenchmark(path, n_seeds=1).run()


def test_the_command_line_exits_non_zero_on_an_invalid_database(tmp_path, capsys):
    from benchmarks.historical import main

    path = _one_battle(tmp_path, winner="green")
    with pytest.raises(SystemExit) as stop:
        main(["--battles", str(path), "--seeds", "1", "--output", str(tmp_path / "r.md")])
    assert stop.value.code not in (0, None)
    assert "winner='green'" in str(stop.value.code) and "one.json" in str(stop.value.code)
    assert not (tmp_path / "r.md").exists()
    entry = json.loads(path.read_text())[0]
    del entry["historical_outcome"]
    path.write_text(json.dumps([entry]))
    with pytest.raises(SystemExit, match="historical_outcome=None"):
        main(["--battles", str(path), "--replay", "montenotte_1796"])


def test_a_comparison_never_scores_a_nan(battles):
    battle = battles[0]
    with pytest.raises(ValueError, match="not finite"):
        OutcomeComparator.compare(battle, np.array([0]), np.array([[np.nan, 0.2]]),
                                  np.array([100]))


def test_the_report_escapes_battle_names_and_errors():
    from benchmarks.historical import BenchmarkEntry, BenchmarkSummary, render_markdown

    name = "<script>alert(1)</script> | [x](javascript:y)\n| row"
    entry = BenchmarkEntry("evil", name, "1800-01-01", (1, 1), None, 0.0,
                           "ValueError: <img src=x> | *boom*")
    summary = BenchmarkSummary(total=1, passed=0, winner_match_rate=0.0, mean_fidelity=0.0,
                               std_fidelity=0.0, total_elapsed_seconds=0.0, entries=[entry])
    report = render_markdown(summary)
    assert "<script>" not in report and "<img" not in report and "[x](javascript" not in report
    row = next(line for line in report.splitlines() if "alert(1)" in line)
    assert "&lt;script&gt;" in row and "&lt;img src=x&gt;" in row
    # Escaped bars do not split cells: the row has the table's 13 columns.
    assert len(row.replace("\\|", "").split("|")) == 13 + 2


# ------------------------------------------------------------ out of sample


def _battle(battle_id, blue, red, winner, scale=(2000, 1000, 10), factions=("French", "Austrian"),
            features=()):
    """A hand-made battle entry: ``blue`` and ``red`` are lists of (type, strength,
    quality) on a flat 2 km field, with ``scale`` (men, sabres, guns per unit of
    strength 1)."""
    def units(side, specs, x):
        return [{"id": f"{side[0]}{n}", "type": arm, "x": x, "y": 200.0 + 300 * n,
                 "strength": strength, "quality": quality}
                for n, (arm, strength, quality) in enumerate(specs)]

    return scenario_from_dict({
        "id": battle_id, "field": {"width_m": 2000, "height_m": 2000},
        "terrain": list(features) or "flat",
        "units": {"blue": units("blue", blue, 500.0), "red": units("red", red, 1500.0)},
        "factions": {"blue": factions[0], "red": factions[1]},
        "scale": {"men_per_unit": scale[0], "sabres_per_squadron_unit": scale[1],
                  "guns_per_battery": scale[2]},
        "historical_outcome": {"winner": winner, "blue_casualties": 0.1,
                               "red_casualties": 0.2, "duration_hours": 5},
    })


@pytest.fixture(scope="module")
def tiny():
    """Four hand-made battles: the French (Blue) win two, lose one, draw one."""
    return [
        _battle("a", [("infantry", 1.0, 1.0), ("cavalry", 0.5, 1.0)],
                [("infantry", 0.5, 1.0)], "blue"),
        _battle("b", [("infantry", 1.0, 1.0)],
                [("infantry", 1.0, 1.0), ("artillery", 0.5, 1.0)], "blue"),
        _battle("c", [("infantry", 1.0, 1.0), ("artillery", 1.0, 1.5)],
                [("infantry", 1.0, 1.0), ("infantry", 1.0, 1.0)], "red"),
        _battle("d", [("infantry", 1.0, 2.0)], [("infantry", 1.5, 1.0)], None,
                factions=("Russian", "French")),
    ]


def test_army_figures_count_men_guns_and_fighting_power_from_the_scale(tiny):
    from benchmarks.historical_baselines import army_figures

    a, b, c, d = (army_figures(s) for s in tiny)
    assert a.men.tolist() == [2000 + 500, 1000] and a.guns.tolist() == [0, 0]
    assert a.power.tolist() == [1.5, 0.5] and a.french_side == 0
    assert b.men.tolist() == [2000, 2000] and b.guns.tolist() == [0, 5]
    assert c.men.tolist() == [2000, 4000] and c.guns.tolist() == [10, 0]
    assert d.power.tolist() == [2.0, 1.5] and d.french_side == 1 and d.focus == 1


def test_a_battle_without_its_scale_is_refused_by_name(tiny):
    from benchmarks.historical_baselines import army_figures
    from envs.scenario import ScenarioError

    battle = tiny[0]
    broken = dataclasses.replace(battle, extra={**battle.extra, "scale": {"men_per_unit": 0}})
    with pytest.raises(ScenarioError, match=r"a\.scale\.men_per_unit=0 .*> 0"):
        army_figures(broken)


def test_the_baselines_call_winners_by_their_rules_and_fit_probabilities_on_training(tiny):
    from benchmarks.historical_baselines import BASELINES, army_figures, fit_logistic

    figures = [army_figures(s) for s in tiny]
    outcomes = [historical_winner(s) for s in tiny]
    fitted = {b.key: b.fit(figures, outcomes) for b in BASELINES}
    calls = {key: [f.predict(x).winner for x in figures] for key, f in fitted.items()}
    assert calls["french"] == [0, 0, 0, 1]
    assert calls["men"] == [0, None, 1, 1]  # b: as many men on each side
    assert calls["power"] == [0, 1, 0, 0]
    assert calls["guns"] == [None, 1, 0, None]
    # The French won 2, lost 1 (c) and drew 1 (d) of the four: (k + 0.5) / (4 + 1.5).
    french = fitted["french"].predict(figures[3]).probabilities
    assert french == pytest.approx([1.5 / 5.5, 2.5 / 5.5, 1.5 / 5.5])  # Red is French in d
    assert fitted["french"].parameters["P(French win)"] == pytest.approx(2.5 / 5.5)
    # A size rule: P(draw) is the smoothed draw share, the rest split by b * log ratio,
    # b the maximum of the penalised likelihood over the three decisive battles.
    x = np.array([[np.log(1.5 / 0.5)], [np.log(1.0 / 1.5)], [np.log(2.5 / 2.0)]])
    y = np.array([1.0, 1.0, 0.0])
    (b,) = fit_logistic(x, y)
    p = 1 / (1 + np.exp(-x[:, 0] * b))
    assert (x[:, 0] * (p - y)).sum() + 0.01 * b == pytest.approx(0, abs=1e-9)
    assert fitted["power"].parameters["b"] == pytest.approx(b)
    row = fitted["power"].predict(figures[0]).probabilities
    draw = 1.5 / 5.5
    assert row == pytest.approx([(1 - draw) * p[0], (1 - draw) * (1 - p[0]), draw])
    for f in fitted.values():
        for x_ in figures:
            assert f.predict(x_).probabilities.sum() == pytest.approx(1)


def test_a_logistic_fit_stays_finite_when_one_rule_separates_the_battles():
    from benchmarks.historical_baselines import fit_logistic

    w = fit_logistic(np.array([[1.0], [2.0], [-1.0]]), np.array([1.0, 1.0, 0.0]))
    assert np.isfinite(w).all() and w[0] > 1
    assert fit_logistic(np.zeros((0, 2)), np.zeros(0)).tolist() == [0, 0]


def test_brier_score_and_log_loss_follow_their_definitions():
    from benchmarks.historical_scoring import (
        Scores,
        brier_score,
        log_loss,
        smoothed_probabilities,
    )

    p = np.array([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1]])
    outcomes = [0, NO_WINNER]
    # (0.25 + 0.09 + 0.04 + 0.01 + 0.64 + 0.81) / 2
    assert brier_score(p, outcomes) == pytest.approx(0.92)
    assert log_loss(p, outcomes) == pytest.approx(-(np.log(0.5) + np.log(0.1)) / 2)
    scores = Scores.of([0, 1], p, outcomes)
    assert (scores.n, scores.winner_match) == (2, 0.5)
    assert scores.winner_match_stderr == pytest.approx(np.sqrt(0.25 / 2))
    assert smoothed_probabilities([16, 0, 0]) == pytest.approx([16.5 / 17.5, 0.5 / 17.5,
                                                                0.5 / 17.5])
    assert np.isnan(brier_score(np.zeros((0, 3)), []))
    with pytest.raises(ValueError, match="summing to 1"):
        brier_score(np.array([[0.5, 0.5, 0.5]]), [0])
    with pytest.raises(ValueError, match="one row per battle"):
        log_loss(p, [0])
    with pytest.raises(ValueError, match="winner=2"):
        log_loss(p, [0, 2])
    with pytest.raises(ValueError, match="three counts"):
        smoothed_probabilities([1, -1, 0])


def test_the_split_is_declared_by_the_ids_alone():
    from benchmarks.historical_scoring import in_training_split

    # Pinned: a change of the hash or key would move battles between the splits.
    assert [in_training_split(i) for i in ("montenotte_1796", "lodi_1796",
                                           "castiglione_1796", "arcole_1796",
                                           "austerlitz_1805", "waterloo_1815")] == \
        [True, True, False, False, True, False]
    ids = [f"battle_{n}" for n in range(3000)]
    share = np.mean([in_training_split(i) for i in ids])
    assert 0.64 < share < 0.70  # about TRAIN_SHARE = 2/3 (3 standard errors)
    assert not any(in_training_split(i, train_share=0.0) for i in ids[:50])
    assert all(in_training_split(i, train_share=1.0) for i in ids[:50])


def test_the_attack_rule_is_chosen_by_training_match_then_brier_then_order():
    from benchmarks.historical import choose_attack_rule
    from benchmarks.historical_scoring import Scores

    nan = float("nan")
    assert choose_attack_rule({"power": Scores(10, 0.6, 0.5, 1.0),
                               "high_ground": Scores(10, 0.7, 0.6, 1.0)}) == "high_ground"
    assert choose_attack_rule({"power": Scores(10, 0.7, 0.5, 1.0),
                               "high_ground": Scores(10, 0.7, 0.4, 1.0)}) == "high_ground"
    assert choose_attack_rule({"power": Scores(10, 0.7, 0.5, 1.0),
                               "high_ground": Scores(10, 0.7, 0.5, 1.0)}) == "power"
    assert choose_attack_rule({"power": Scores(0, nan, nan, nan),
                               "high_ground": Scores(0, nan, nan, nan)}) == "power"


def test_the_doctrines_attack_rules_decide_who_attacks():
    from envs.commanders.arms_doctrine import CombinedArmsDoctrine, attacking_sides
    from envs.sim.state import BattleState

    # Blue 1.0, Red 1.2 of fighting power; Red stands 0.5 higher.
    state = BattleState.empty(1, np.array([0, 1]), 1, 1)
    state.strength[:] = [[1.0, 1.2]]
    elevation = np.array([[0.0, 0.5]], np.float32)
    assert attacking_sides(state, elevation, "power").tolist() == [[False, True]]
    assert attacking_sides(state, elevation, "high_ground").tolist() == [[False, False]]
    assert attacking_sides(state, elevation, "high_ground_forced").tolist() == [[False, True]]
    assert attacking_sides(state, elevation).tolist() == [[False, True]]  # the default
    with pytest.raises(ValueError, match="attack_rule='cautious'"):
        CombinedArmsDoctrine(None, attack_rule="cautious")


def _subset(tmp_path, ids, name="subset.json"):
    entries = {e["id"]: e for e in json.loads(_BATTLES_JSON.read_text())}
    path = tmp_path / name
    path.write_text(json.dumps([entries[i] for i in ids]))
    return path


THREE = ("montenotte_1796", "lodi_1796", "castiglione_1796")
"""Two training battles and a held-out one."""


@pytest.fixture(scope="module")
def three_battles(tmp_path_factory):
    path = _subset(tmp_path_factory.mktemp("three"), THREE)
    return HistoricalBenchmark(path, seed=5, n_seeds=2).run()


def test_every_rule_plays_the_training_battles_and_only_the_chosen_one_the_held_out(
        three_battles):
    from benchmarks.historical import CANDIDATE_ATTACK_RULES, score_entries

    summary = three_battles
    assert [e.held_out for e in summary.entries] == [False, False, True]
    assert [t.rule for t in summary.rule_trials] == list(CANDIDATE_ATTACK_RULES)
    assert all(t.scores.n == 2 for t in summary.rule_trials)
    assert [t.rule for t in summary.rule_trials if t.chosen] == [summary.attack_rule]
    chosen = next(t for t in summary.rule_trials if t.chosen)
    assert score_entries(summary.entries[:2]) == chosen.scores
    assert summary.simulation_scores("held-out").n == 1
    assert summary.simulation_scores("all").n == 3
    # Each baseline calls every battle; the French win is the French side.
    assert [b.key for b in summary.baselines] == ["french", "men", "power", "guns", "logistic",
                                                  "nations"]
    # Three battles of the French against the Austrians: too few to fit an effectiveness.
    assert summary.effectiveness.reference == "French"
    assert summary.effectiveness.values == {} and summary.effectiveness.trials == {}
    french = summary.baselines[0]
    assert [p.winner for p in french.predictions] == [0, 0, 0]
    held = summary.baseline_scores(french, "held-out")
    assert held.winner_match == 1.0  # Castiglione, a French victory


def test_the_split_and_the_results_do_not_depend_on_the_files_order(tmp_path, three_battles):
    path = _subset(tmp_path, THREE[::-1])
    summary = HistoricalBenchmark(path, seed=5, n_seeds=2).run()
    by_id = {e.battle_id: e for e in summary.entries}
    assert summary.attack_rule == three_battles.attack_rule
    assert summary.rule_trials == three_battles.rule_trials
    for e in three_battles.entries:
        assert by_id[e.battle_id].held_out == e.held_out
        np.testing.assert_array_equal(by_id[e.battle_id].comparison.winner_share,
                                      e.comparison.winner_share)


def test_the_report_carries_the_headline_the_baselines_and_the_misses(three_battles):
    from benchmarks.historical import render_markdown
    from benchmarks.historical_baselines import CATEGORIES

    report = render_markdown(three_battles)
    assert "| measure | held-out (headline) | training split (in sample) | all battles |" \
        in report
    for heading in ("## The attack rule, chosen on the training split",
                    "## Each nation's combat effectiveness, chosen on the training split",
                    "## Against baselines that simulate nothing",
                    "## Issue 36's targets (held-out battles)", "## Misses by category",
                    "## Every battle"):
        assert heading in report
    for baseline in three_battles.baselines:
        assert f"| {baseline.name.replace('_', chr(92) + '_')} |" in report
    for trial in three_battles.rule_trials:
        assert f"| `{trial.rule}` |" in report
    for name, _ in CATEGORIES:
        assert f"| {name} |" in report
    assert "Brier" in report and "log-loss" in report and "Runtime" in report
    held = three_battles.simulation_scores("held-out")
    assert f"**{100 * held.winner_match:.0f}% ± 0%**" in report  # one held-out battle
    assert len(three_battles.out_of_sample_targets()) == 4


def test_the_picture_draws_the_battles_and_the_held_out_scores(three_battles, tmp_path):
    path = HistoricalBenchmark().write_plot(three_battles, tmp_path / "report.png")
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 10_000


# ------------------------------------------------------------ combat effectiveness


@pytest.mark.parametrize("faction, expected", [
    ("French", "French"),
    ("British, Portuguese and Spanish", "British"),
    ("Spanish and British", "Spanish"),
    ("Anglo-allied (British, Dutch-Belgian, Brunswick, Hanoverian, Nassau)", "British"),
    ("Mamluk and Ottoman Egyptian", "Ottoman"),
    ("Württemberger and Austrian", "Württemberg"),
    ("Martians", None),
    ("", None),
])
def test_a_sides_nation_is_the_first_it_names(faction, expected):
    from benchmarks.historical_baselines import nation

    assert nation(faction) == expected


def test_an_effectiveness_multiplies_the_quality_of_its_nations_side_only(battles):
    from benchmarks.historical_baselines import army_figures
    from benchmarks.historical_effectiveness import QUALITY_BOUNDS, with_effectiveness

    battle = next(b for b in battles if b.id == "maida_1806")  # French against British
    figures = army_figures(battle)
    assert figures.nations == ("French", "British")
    changed = with_effectiveness(battle, {"British": 1.5, "Austrian": 3.0})
    for before, after in zip(battle.units, changed.units, strict=True):
        expected = before.quality * (1.5 if before.side == 1 else 1.0)
        assert after.quality == pytest.approx(expected)
        assert dataclasses.replace(after, quality=before.quality) == before
    assert with_effectiveness(battle, {"Austrian": 3.0}) is battle
    huge = with_effectiveness(battle, {"British": 100.0})
    assert max(u.quality for u in huge.units) == QUALITY_BOUNDS[1]


def test_the_nations_fitted_are_those_with_enough_battles_against_the_reference(battles):
    from benchmarks.historical_baselines import army_figures
    from benchmarks.historical_effectiveness import MIN_BATTLES, fitted_nations

    figures = [army_figures(b) for b in battles]
    reference, chosen = fitted_nations(figures)
    assert reference == "French"
    for nation, members in chosen.items():
        assert len(members) >= MIN_BATTLES and nation != "French"
        assert all(set(figures[n].nations) == {"French", nation} for n in members)
    british = [n for n, f in enumerate(figures) if f.nations == ("French", "British")]
    assert chosen["British"] == british
    # Fewer than MIN_BATTLES: no value of its own.
    assert "Bavarian" not in chosen


def test_each_nation_takes_the_value_that_matches_history_most_often_ties_nearest_one():
    from benchmarks.historical_effectiveness import choose_effectiveness
    from benchmarks.historical_scoring import Scores

    # Each battle's (winner matched, Brier) at each value.
    played = {
        0.85: {0: (1, 0.5), 1: (0, 0.5), 2: (1, 0.5), 3: (1, 0.5)},
        1.0: {0: (1, 0.5), 1: (0, 0.5), 2: (0, 0.5), 3: (1, 0.5)},
        1.45: {0: (1, 0.5), 1: (1, 0.5), 2: (0, 0.5), 3: (1, 0.5)},
        1.75: {0: (1, 0.5), 1: (1, 0.5), 2: (0, 0.5), 3: (1, 0.1)},
    }

    def score(value, chosen):
        match, brier = np.mean([played[value][n] for n in chosen], axis=0)
        return Scores(n=len(chosen), winner_match=float(match), brier=float(brier),
                      log_loss=1.0)

    fit = choose_effectiveness("French", {"British": [0, 1], "Austrian": [2, 3]}, list(played),
                               score)
    # British: 1.45 and 1.75 both match both battles; equal Brier, so the one nearer 1.
    # Austrian: only 0.85 matches both.
    assert fit.values == {"British": 1.45, "Austrian": 0.85}
    assert fit.trials["British"][1.0].winner_match == 0.5
    assert fit.trials["British"][1.0].n == 2
    # A better Brier score breaks a tie of winner match first.
    played[1.75][1] = (1, 0.1)
    assert choose_effectiveness("French", {"British": [0, 1]}, list(played), score).values == \
        {"British": 1.75}


@pytest.mark.parametrize("grid", [(), (0.8, 1.2), (1.0, 1.0), (1.0, -1.0), (1.0, float("nan"))])
def test_an_effectiveness_grid_without_one_or_with_bad_values_is_refused(grid):
    with pytest.raises(ValueError, match="effectiveness_grid"):
        HistoricalBenchmark(effectiveness_grid=grid)


BRITISH = ("maida_1806", "bussaco_1810", "albuera_1811", "castlebar_1798", "rolica_1808",
           "alexandria_1801")
"""Five training battles of the French against the British and a held-out one."""


def test_a_fitted_effectiveness_plays_the_training_battles_at_each_value_and_keeps_the_best(
        tmp_path):
    from benchmarks.historical import render_markdown, score_entries

    path = _subset(tmp_path, BRITISH)
    summary = HistoricalBenchmark(path, seed=5, n_seeds=2, attack_rules=("power",),
                                  effectiveness_grid=(1.0, 1.75)).run()
    assert [e.held_out for e in summary.entries] == [False] * 5 + [True]
    fit = summary.effectiveness
    assert fit.reference == "French" and set(fit.trials) == {"British"}
    assert set(fit.trials["British"]) == {1.0, 1.75}
    assert all(s.n == 5 for s in fit.trials["British"].values())
    chosen = fit.values["British"]
    # The training entries reported are those played at the chosen value.
    assert dataclasses.astuple(score_entries(summary.entries[:5])) == pytest.approx(
        dataclasses.astuple(fit.trials["British"][chosen]))
    assert "| British | 5 |" in render_markdown(summary)


def test_the_always_and_never_rules_ignore_the_odds():
    from types import SimpleNamespace

    from envs.commanders.arms_doctrine import attacking_sides

    state = SimpleNamespace(active=np.ones((3, 4), bool))
    assert attacking_sides(state, None, "always").tolist() == [[True, True]] * 3
    assert attacking_sides(state, None, "never").tolist() == [[False, False]] * 3
