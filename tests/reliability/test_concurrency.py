"""Four processes on one Elo table, one manifest, one match log: nothing lost, nothing doubled."""

from __future__ import annotations

import json

from tests.reliability.concurrency import (
    duplicate_matches,
    elo_updates,
    manifest_registrations,
)
from training.elo import EloRegistry
from training.league.match_database import MatchDatabase, MatchResult


def test_every_elo_update_of_one_agent_counts(tmp_path):
    counts = elo_updates(tmp_path, n_updates=30)
    assert counts.found == counts.expected == 120


def test_concurrent_registrations_of_the_same_artifacts_write_one_row_each(tmp_path):
    counts = manifest_registrations(tmp_path, n_artifacts=40)
    assert counts.found == counts.expected == 40


def test_a_match_id_is_recorded_once_whoever_records_it(tmp_path):
    counts = duplicate_matches(tmp_path, n_matches=40)
    assert counts.found == counts.expected == 40


def test_a_duplicate_match_line_counts_once_on_reload(tmp_path):
    path = tmp_path / "matches.jsonl"
    line = json.dumps(MatchResult("a", "b", 1.0, match_id="m1").to_dict())
    path.write_text(f"{line}\n{line}\n")
    db = MatchDatabase(path)
    assert len(db) == 1 and db.win_rate("a", "b") == 1.0


def test_elo_saves_replay_games_on_what_others_saved(tmp_path):
    path = tmp_path / "elo.json"
    first, second = EloRegistry(path), EloRegistry(path)
    first.update("x", "scripted_l5", 1.0)
    second.update("x", "scripted_l5", 1.0)
    first.save()
    second.save()
    merged = EloRegistry(path)
    assert merged.get_game_count("x") == 2
    # As if played one after the other: 1000 -> 1020 -> 1020 + 40 * (1 - E(1020, 1000)).
    expected = 1020 + 40 * (1 - 1 / (1 + 10 ** ((1000 - 1020) / 400)))
    assert abs(merged.get_rating("x") - expected) < 1e-9


def test_an_elo_file_cannot_move_a_baseline_or_hold_bad_counts(tmp_path):
    import pytest

    path = tmp_path / "elo.json"
    for data, problem in (
            ({"game_counts": {}, "ratings": {"scripted_l5": 5000}}, "baseline"),
            ({"game_counts": {"x": -3}, "ratings": {}}, "game count"),
            ({"game_counts": {"x": "7"}, "ratings": {}}, "game count"),
            ({"game_counts": {}, "ratings": {"x": "1000"}}, "rating")):
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match=problem):
            EloRegistry(path)
