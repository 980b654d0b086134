"""The historical benchmark: its database, its measures and its report."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from envs.scenario import load_scenarios
from envs.scenario_battle import NO_WINNER, STEP_SECONDS
from training.historical_benchmark import (
    _BATTLES_JSON,
    HistoricalBenchmark,
    OutcomeComparator,
    historical_winner,
)

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
