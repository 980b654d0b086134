"""Elo ratings: K schedule, protected baselines, files shared by processes."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from training.elo import (
    BASELINE_RATINGS,
    DEFAULT_RATING,
    EloRegistry,
    TeamEloRegistry,
    expected_score,
    k_factor,
)


def test_expected_score_and_k_schedule():
    assert expected_score(1000, 1000) == 0.5
    assert expected_score(1400, 1000) == pytest.approx(10 / 11)
    assert [k_factor(n) for n in (0, 29, 30, 99, 100)] == [40, 40, 20, 20, 10]


def test_update_moves_only_the_agent_with_k_from_the_count_before():
    registry = EloRegistry(path=None)
    delta = registry.update("agent", "scripted_l3", outcome=1.0, n_games=20)
    assert delta == pytest.approx(40 * (1 - expected_score(DEFAULT_RATING, 800)))
    assert registry.get_rating("scripted_l3") == BASELINE_RATINGS["scripted_l3"]
    assert registry.get_game_count("agent") == 20
    registry.update("agent", "scripted_l3", outcome=0.0, n_games=20)  # 20 games so far: K=40
    assert registry.get_game_count("agent") == 40
    before = registry.get_rating("agent")
    delta = registry.update("agent", "scripted_l5", outcome=0.5)  # 40 games: K=20
    assert delta == pytest.approx(20 * (0.5 - expected_score(before, 1000)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(agent="scripted_l5", opponent="x", outcome=1.0), "baseline"),
    (dict(agent="a", opponent="x", outcome=1.5), "outcome"),
    (dict(agent="a", opponent="x", outcome=0.5, n_games=0), "n_games"),
])
def test_bad_updates_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EloRegistry(path=None).update(**kwargs)


def test_json_round_trip(tmp_path):
    path = tmp_path / "elo.json"
    registry = EloRegistry(path)
    registry.update("a", "random", 1.0, n_games=5)
    registry.save()
    data = json.loads(path.read_text())
    assert list(data) == ["game_counts", "ratings"] and data["game_counts"] == {"a": 5}
    again = EloRegistry(path)
    assert again.get_rating("a") == registry.get_rating("a") and again.can_save
    with pytest.raises(ValueError, match="no file"):
        EloRegistry(path=None).save()


def test_team_registry_checks_team_baselines_first_and_protects_both():
    registry = TeamEloRegistry(path=None)
    assert registry.get_rating("scripted_team_l2") == 700
    assert registry.get_rating("scripted_l4") == 900
    for baseline in ("scripted_team_l1", "scripted_l1"):
        with pytest.raises(ValueError, match="baseline"):
            registry.update(baseline, "random", 1.0)


def _rate(path: str, agent: str) -> None:
    registry = EloRegistry(path)
    for _ in range(20):
        registry.update(agent, "scripted_l3", 1.0)
        registry.save()


def test_two_processes_sharing_a_file_lose_nothing(tmp_path):
    path = str(tmp_path / "elo.json")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_rate, args=(path, name)) for name in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    registry = EloRegistry(path)
    assert registry.get_game_count("a") == 20 and registry.get_game_count("b") == 20


def test_a_corrupt_file_is_named_in_the_error(tmp_path):
    path = tmp_path / "elo.json"
    path.write_text('{"ratings": {"a": 10')
    with pytest.raises(ValueError, match="elo.json"):
        EloRegistry(path)


def test_a_pair_update_moves_both_players_from_the_ratings_before(tmp_path):
    registry = TeamEloRegistry(tmp_path / "elo.json")
    registry.set_rating("a", 1100.0)
    delta_a, delta_b = registry.update_pair("a", "b", 1.0, n_games=10)
    expected = 40 * (1 - expected_score(1100.0, 1000.0))
    assert delta_a == pytest.approx(expected) and delta_b == pytest.approx(-expected)
    assert registry.update_pair("a", "scripted_team_l5", 0.5)[1] == 0.0  # anchors stay
    registry.save()
    # Another process's registry replays its pair updates on the saved ratings.
    other = TeamEloRegistry(tmp_path / "elo.json")
    other.update_pair("b", "a", 1.0)
    registry.update_pair("a", "b", 1.0)
    registry.save()
    other.save()
    assert TeamEloRegistry(tmp_path / "elo.json").get_game_count("b") == 12
    with pytest.raises(ValueError, match="both fixed baselines"):
        registry.update_pair("scripted_team_l5", "doctrine_team", 0.5)


def test_the_performance_rating_inverts_the_expected_score():
    from training.elo import expected_score, performance_rating

    for score in (0.2, 0.5, 0.64, 0.9):
        rating = performance_rating(score, 1000.0, 100)
        assert expected_score(rating, 1000.0) == pytest.approx(score)
    assert performance_rating(0.5, 800.0, 10) == pytest.approx(800.0)
    sweep = performance_rating(1.0, 1000.0, 200)
    assert expected_score(sweep, 1000.0) == pytest.approx(1 - 0.5 / 200)
    with pytest.raises(ValueError, match="score"):
        performance_rating(1.5, 1000.0, 10)
