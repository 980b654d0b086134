"""The historical benchmark: its database, its measures and its report."""

from __future__ import annotations

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
from envs.scenario import load_scenarios
from envs.scenario_battle import NO_WINNER, STEP_SECONDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def battles():
    return load_scenarios(_BATTLES_JSON)


def test_the_database_holds_fifty_real_battles_of_the_period_with_all_arms(battles):
    assert len(battles) >= 50
    for battle in battles:
        history = battle.extra
        assert date(1796, 1, 1) <= date.fromisoformat(history["date"]) <= date(1815, 12, 31)
        assert history["source"] and history["scale"]["sector"] and history["factions"]
        assert history["historical_outcome"]["winner"] in ("blue", "red", None)
        assert 0 <= history["historical_outcome"]["blue_casualties"] <= 1
        assert battle.features, battle.id  # the ground that mattered
    arms = [{u.arm for u in b.units} for b in battles]
    assert sum(len(a) == 3 for a in arms) >= 40  # most battles have all three arms
    winners = [historical_winner(b) for b in battles]
    assert winners.count(1) + winners.count(NO_WINNER) >= 10  # French defeats too


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
    # Escaped bars do not split cells: the row has the table's 11 columns.
    assert len(row.replace("\\|", "").split("|")) == 11 + 2
