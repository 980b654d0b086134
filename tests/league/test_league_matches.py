"""MatchDatabase and MatchResult: format, queries, validation, torn lines, rewrites."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from training.league import MatchDatabase, MatchResult


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "league" / "matches.jsonl"


def test_rows_have_the_documented_keys_and_optional_fields_only_when_set(db_path: Path) -> None:
    db = MatchDatabase(db_path)
    db.record("a", "b", 1.0, metadata={"step": 5})
    db.record("a", "b", 0.5, match_id="m2", territory_control=0.25, blue_casualties=3,
              red_casualties=0.0, supply_consumed=1.5)
    rows = [json.loads(line) for line in db_path.read_text().splitlines()]
    assert list(rows[0]) == ["match_id", "agent_id", "opponent_id", "outcome", "timestamp",
                             "metadata"]
    assert rows[0]["metadata"] == {"step": 5} and rows[0]["outcome"] == 1.0
    assert rows[1]["match_id"] == "m2"
    assert {k: rows[1][k] for k in ("territory_control", "blue_casualties", "red_casualties",
                                    "supply_consumed")} == {
        "territory_control": 0.25, "blue_casualties": 3.0, "red_casualties": 0.0,
        "supply_consumed": 1.5}
    assert db_path.read_bytes().endswith(b"\n")


def test_queries(db_path: Path) -> None:
    db = MatchDatabase(db_path)
    assert db.win_rate("a", "b") is None
    assert db.win_rates_for("a") == {}
    assert db.mean_territory_control("a") is None
    assert db.mean_casualties("a") is None
    db.record("a", "b", 1.0, territory_control=0.5, blue_casualties=2.0)
    db.record("a", "b", 0.0, territory_control=1.0, red_casualties=4.0)
    db.record("a", "c", 0.5, supply_consumed=3.0)
    db.record("b", "a", 1.0)  # reverse perspective: never used by a's queries

    assert db.win_rate("a", "b") == 0.5
    assert db.win_rate("b", "a") == 1.0
    assert db.win_rate("c", "a") is None
    assert db.win_rates_for("a") == {"b": 0.5, "c": 0.5}
    assert [r.outcome for r in db.results_for("a")] == [1.0, 0.0, 0.5]
    assert [r.outcome for r in db.results_for("a", "c")] == [0.5]
    assert db.mean_territory_control("a") == 0.75
    assert db.mean_territory_control("a", "c") is None
    assert db.mean_casualties("a") == {"blue": 2.0, "red": 4.0}
    assert db.mean_supply_consumed("a") == 3.0
    assert len(db) == 4

    again = MatchDatabase(db_path)
    assert [r.to_dict() for r in again.results] == [r.to_dict() for r in db.results]
    assert again.skipped_lines == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"outcome": 1.5}, ValueError, r"outcome=1\.5.*\[0, 1\]"),
        ({"outcome": -0.1}, ValueError, "outcome=-0.1"),
        ({"outcome": float("nan")}, ValueError, "outcome=nan"),
        ({"outcome": "1"}, TypeError, "outcome"),
        ({"outcome": True}, TypeError, "outcome"),
        ({"territory_control": 2.0}, ValueError, "territory_control=2.0"),
        ({"blue_casualties": -1}, ValueError, "blue_casualties=-1"),
        ({"supply_consumed": float("inf")}, ValueError, "supply_consumed=inf"),
        ({"agent_id": ""}, ValueError, "agent_id=''"),
        ({"opponent_id": None}, ValueError, "opponent_id=None"),
        ({"metadata": {"x": {1, 2}}}, ValueError, "JSON"),
    ],
)
def test_record_validates_and_writes_nothing_on_error(db_path: Path, kwargs, error, match):
    db = MatchDatabase(db_path)
    args = {"agent_id": "a", "opponent_id": "b", "outcome": 1.0, **kwargs}
    with pytest.raises(error, match=match):
        db.record(args.pop("agent_id"), args.pop("opponent_id"), args.pop("outcome"), **args)
    assert len(db) == 0 and not db_path.exists()


def test_match_result_round_trip() -> None:
    result = MatchResult("a", "b", 0.25, metadata={"k": [1]}, red_casualties=2.0)
    assert MatchResult.from_dict(result.to_dict()) == result
    assert "territory_control" not in result.to_dict()
    with pytest.raises(KeyError, match="outcome"):
        MatchResult.from_dict({"agent_id": "a", "opponent_id": "b"})


def test_torn_last_line_is_skipped_counted_logged_and_repaired(db_path: Path, caplog) -> None:
    db = MatchDatabase(db_path)
    db.record("a", "b", 1.0)
    db.record("a", "b", 0.0)
    with open(db_path, "ab") as handle:  # a writer killed mid-line
        handle.write(b'{"match_id": "torn", "agent_id": "a", "opp')

    with caplog.at_level(logging.WARNING, logger="training.league.match_database"):
        reader = MatchDatabase(db_path)
    assert len(reader) == 2 and reader.skipped_lines == 1
    assert str(db_path) in caplog.text and "torn last line 3" in caplog.text

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="training.league.match_database"):
        reader.record("a", "b", 1.0, match_id="after")
    assert "torn line" in caplog.text
    assert reader.skipped_lines == 1  # the same fragment is not counted twice
    lines = db_path.read_bytes().split(b"\n")
    assert json.loads(lines[-2])["match_id"] == "after"  # our line stayed whole

    fresh = MatchDatabase(db_path)
    assert len(fresh) == 3 and fresh.skipped_lines == 1
    assert fresh.win_rate("a", "b") == pytest.approx(2 / 3)
    assert len(db) == 3  # the first instance picks up the new line too


def test_malformed_middle_lines_are_skipped(db_path: Path, caplog) -> None:
    db_path.parent.mkdir(parents=True)
    good, other = (json.dumps(MatchResult("a", "b", 1.0).to_dict()) for _ in range(2))
    db_path.write_text("\n".join([good, "not json", '{"agent_id": "a"}',
                                  '{"agent_id": "a", "opponent_id": "b", "outcome": 7}',
                                  "", other]) + "\n")
    with caplog.at_level(logging.WARNING):
        db = MatchDatabase(db_path)
    assert len(db) == 2 and db.skipped_lines == 3
    assert "line 2" in caplog.text and "line 4" in caplog.text


def test_instances_see_each_others_records(db_path: Path) -> None:
    writer, reader = MatchDatabase(db_path), MatchDatabase(db_path)
    writer.record("a", "b", 1.0)
    assert reader.win_rate("a", "b") == 1.0
    reader.record("a", "b", 0.0)
    writer.record("a", "b", 0.5)
    assert writer.win_rate("a", "b") == reader.win_rate("a", "b") == 0.5
    assert [r.outcome for r in writer.results] == [r.outcome for r in reader.results]


def test_prune_is_memory_only_until_rewrite(db_path: Path) -> None:
    db = MatchDatabase(db_path)
    other = MatchDatabase(db_path)
    for k in range(10):
        db.record("a", "b", float(k % 2))
    assert db.prune(4) == 6 and len(db) == 4
    assert len(db_path.read_text().splitlines()) == 10
    db.rewrite()
    assert len(db_path.read_text().splitlines()) == 4
    assert len(other) == 4  # a rewritten file is reloaded by other readers
    db.record("a", "c", 1.0)
    assert len(other) == 5 and len(MatchDatabase(db_path)) == 5
    with pytest.raises(ValueError, match="keep_last=-1"):
        db.prune(-1)
    assert sorted(p.name for p in db_path.parent.iterdir()) == ["matches.jsonl",
                                                               "matches.jsonl.lock"]


def test_fsync_option_and_bad_paths(tmp_path: Path) -> None:
    db = MatchDatabase(tmp_path / "m.jsonl", fsync=True)
    db.record("a", "b", 1.0)
    assert MatchDatabase(tmp_path / "m.jsonl").win_rate("a", "b") == 1.0
    with pytest.raises(ValueError, match="directory"):
        MatchDatabase(tmp_path)
    with pytest.raises(ValueError, match="agent_id"):
        db.win_rate(3, "b")  # type: ignore[arg-type]


# --- silent acceptance ---------------------------------------------------------------------

@pytest.mark.parametrize("field", ["agent_id", "opponent_id", "match_id"])
@pytest.mark.parametrize("bad", ["a\nb", "a\0b", "\x7f"])
def test_ids_with_control_characters_are_refused(db_path: Path, field: str, bad: str) -> None:
    db = MatchDatabase(db_path)
    kwargs = {"agent_id": "a", "opponent_id": "b", "outcome": 1.0, field: bad}
    with pytest.raises(ValueError, match=f"{field}=.* printable characters only"):
        db.record(**kwargs)
    assert not db_path.exists() or db_path.read_text() == ""


def test_outcomes_and_flags_must_have_real_types(db_path: Path) -> None:
    import numpy as np

    db = MatchDatabase(db_path)
    with pytest.raises(TypeError, match="outcome=.* expected a number"):
        db.record("a", "b", np.array([1.0]))
    with pytest.raises(TypeError, match="metadata key 1 is not a string"):
        db.record("a", "b", 1.0, metadata={1: 2})
    with pytest.raises(ValueError, match="fsync='no' is invalid"):
        MatchDatabase(db_path, fsync="no")
