"""AgentPool: manifest format, validation, multi-instance safety, corruption and recovery."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from training.league import AgentPool, AgentRecord, AgentType, PoolManifestError


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    return tmp_path / "league" / "pool.json"


def test_add_persists_in_the_documented_manifest_format(manifest: Path) -> None:
    pool = AgentPool(manifest, max_size=5)
    rec = pool.add("snapshots/a.pt", AgentType.MAIN_AGENT, agent_id="a", version=3,
                   metadata={"step": 100})
    pool.add("snapshots/b.pt", "league_exploiter", agent_id="b")

    data = json.loads(manifest.read_text())
    assert data["max_size"] == 5
    assert [a["agent_id"] for a in data["agents"]] == ["a", "b"]
    first = data["agents"][0]
    assert set(first) == {"agent_id", "agent_type", "version", "snapshot_path", "created_at",
                          "metadata"}
    assert first["agent_type"] == "main_agent" and first["version"] == 3
    assert first["metadata"] == {"step": 100}
    assert manifest.read_text().startswith('{\n  "max_size"')  # indent 2

    reopened = AgentPool(manifest, max_size=5)
    assert reopened.list() == [rec, reopened.get("b")]
    assert reopened.get("b").agent_type is AgentType.LEAGUE_EXPLOITER
    assert "a" in reopened and rec in reopened and "zzz" not in reopened
    assert len(reopened) == reopened.size == 2


def test_generated_ids_are_unique_and_list_filters_by_type(manifest: Path) -> None:
    pool = AgentPool(manifest)
    a = pool.add("/dev/null")
    b = pool.add("/dev/null", AgentType.MAIN_EXPLOITER)
    assert a.agent_id != b.agent_id and a.version == 1
    assert pool.list(AgentType.MAIN_EXPLOITER) == [b]
    assert pool.list("MAIN_AGENT") == [a]
    assert pool.latest() == b and pool.latest("main_agent") == a
    assert pool.latest(AgentType.LEAGUE_EXPLOITER) is None


def test_agent_type_parsing_is_case_insensitive_and_strict() -> None:
    assert AgentType.from_str("Main_Exploiter") is AgentType.MAIN_EXPLOITER
    assert AgentType.from_str("LEAGUE_EXPLOITER") is AgentType.LEAGUE_EXPLOITER
    assert AgentType.MAIN_AGENT == "main_agent"
    with pytest.raises(ValueError, match="'bogus'.*main_agent"):
        AgentType.from_str("bogus")
    with pytest.raises(TypeError):
        AgentType.from_str(3)  # type: ignore[arg-type]


def test_record_round_trip_and_equality_by_id() -> None:
    rec = AgentRecord("x", "main_agent", 0, "a.pt", created_at=12.5, metadata={"k": [1, 2]})
    again = AgentRecord.from_dict(rec.to_dict())
    assert again == rec and hash(again) == hash(rec)
    assert again.to_dict() == rec.to_dict()
    assert AgentRecord("x", "main_exploiter", 9, "other.pt") == rec
    with pytest.raises(KeyError, match="snapshot_path"):
        AgentRecord.from_dict({"agent_id": "x", "agent_type": "main_agent", "version": 1})


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"agent_type": "bogus"}, ValueError, "agent_type='bogus'"),
        ({"version": -1}, ValueError, "version=-1"),
        ({"version": 1.5}, TypeError, "version=1.5"),
        ({"agent_id": ""}, ValueError, "agent_id=''"),
        ({"metadata": {"x": float("nan")}}, ValueError, "JSON"),
        ({"metadata": {"x": object()}}, ValueError, "JSON"),
        ({"metadata": [1]}, TypeError, "metadata"),
    ],
)
def test_add_validates_its_inputs(manifest: Path, kwargs, error, match) -> None:
    pool = AgentPool(manifest)
    with pytest.raises(error, match=match):
        pool.add("/dev/null", **kwargs)
    assert len(pool) == 0 and not manifest.exists()


def test_constructor_validates(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_size=0"):
        AgentPool(tmp_path / "pool.json", max_size=0)
    with pytest.raises(TypeError, match="max_size"):
        AgentPool(tmp_path / "pool.json", max_size="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\.tmp"):
        AgentPool(tmp_path / "pool.tmp")
    with pytest.raises(ValueError, match="directory"):
        AgentPool(tmp_path)


def test_duplicate_id_and_capacity(manifest: Path, caplog) -> None:
    pool = AgentPool(manifest, max_size=2)
    pool.add("/dev/null", agent_id="a")
    with pytest.raises(ValueError, match="'a' is already"):
        pool.add("/dev/null", agent_id="a")
    pool.add("/dev/null", agent_id="b")
    with pytest.raises(RuntimeError, match="full.*force=True"):
        pool.add("/dev/null", agent_id="c")
    assert [r.agent_id for r in AgentPool(manifest, max_size=2).list()] == ["a", "b"]
    with caplog.at_level(logging.INFO, logger="training.league"):
        pool.add("/dev/null", agent_id="c", force=True)
    assert [r.agent_id for r in pool.list()] == ["b", "c"]
    assert "evicted oldest agent a" in caplog.text
    with pytest.raises(KeyError, match="'zzz'"):
        pool.remove("zzz")
    assert pool.remove("b").agent_id == "b"
    assert [r.agent_id for r in AgentPool(manifest, max_size=2).list()] == ["c"]


def test_two_instances_never_overwrite_each_other(manifest: Path) -> None:
    first, second = AgentPool(manifest), AgentPool(manifest)
    first.add("/dev/null", agent_id="a")
    second.add("/dev/null", agent_id="b")  # second never saw "a" in memory
    first.add("/dev/null", agent_id="c")
    assert [r.agent_id for r in AgentPool(manifest).list()] == ["a", "b", "c"]
    assert [r.agent_id for r in first.list()] == ["a", "b", "c"]
    assert [r.agent_id for r in second.list()] == ["a", "b"]  # reads use the last load
    second.reload()
    assert [r.agent_id for r in second.list()] == ["a", "b", "c"]


def test_save_merges_metadata_edits_without_losing_others(manifest: Path) -> None:
    mine, other = AgentPool(manifest), AgentPool(manifest)
    mine.add("/dev/null", agent_id="a")
    other.add("/dev/null", agent_id="b")
    mine.get("a").metadata["elo"] = 1200
    mine.save()
    reloaded = AgentPool(manifest)
    assert reloaded.get("a").metadata == {"elo": 1200}
    assert "b" in reloaded
    other.remove("b")
    mine.save()  # "b" was removed elsewhere: it must stay removed
    assert [r.agent_id for r in AgentPool(manifest).list()] == ["a"]


def test_every_save_keeps_the_previous_manifest_as_pool_tmp(manifest: Path) -> None:
    pool = AgentPool(manifest)
    pool.add("/dev/null", agent_id="a")
    backup = manifest.with_name("pool.tmp")
    assert pool.backup_path == backup
    assert not backup.exists()  # nothing to keep before the first save
    first_text = manifest.read_text()
    pool.add("/dev/null", agent_id="b")
    assert backup.read_text() == first_text
    pool.add("/dev/null", agent_id="c")
    assert [a["agent_id"] for a in json.loads(backup.read_text())["agents"]] == ["a", "b"]
    # No stray temporary files are left behind.
    assert sorted(p.name for p in manifest.parent.iterdir()) == [
        "pool.json", "pool.json.lock", "pool.tmp"
    ]


def test_truncated_manifest_raises_a_clear_error_naming_the_file(manifest: Path) -> None:
    pool = AgentPool(manifest)
    pool.add("/dev/null", agent_id="a")
    pool.add("/dev/null", agent_id="b")
    text = manifest.read_text()
    manifest.write_text(text[: len(text) // 2])

    with pytest.raises(PoolManifestError) as info:
        AgentPool(manifest)
    message = str(info.value)
    assert str(manifest) in message
    assert "corrupt" in message and "truncated" in message
    assert "pool.tmp" in message and "AgentPool.recover" in message
    assert "1 agent(s)" in message  # what the copy holds
    assert isinstance(info.value, ValueError) and info.value.path == manifest

    # Writers refuse to overwrite the evidence.
    with pytest.raises(PoolManifestError):
        pool.add("/dev/null", agent_id="c")
    assert manifest.read_text() == text[: len(text) // 2]


def test_recover_restores_the_last_good_copy(manifest: Path, caplog) -> None:
    pool = AgentPool(manifest)
    pool.add("/dev/null", agent_id="a")
    pool.add("/dev/null", agent_id="b")
    pool.add("/dev/null", agent_id="c")
    corrupt_text = manifest.read_text()[:40]
    manifest.write_text(corrupt_text)

    with caplog.at_level(logging.WARNING, logger="training.league"):
        recovered = AgentPool.recover(manifest)
    assert [r.agent_id for r in recovered.list()] == ["a", "b"]
    assert "recovered" in caplog.text and "2 agent(s) restored" in caplog.text
    kept = [p for p in manifest.parent.iterdir() if p.name.startswith("pool.json.corrupt-")]
    assert len(kept) == 1 and kept[0].read_text() == corrupt_text
    # The restored manifest is a normal, writable pool again.
    assert [r.agent_id for r in AgentPool(manifest).list()] == ["a", "b"]
    recovered.add("/dev/null", agent_id="c2")
    assert len(AgentPool(manifest)) == 3


def test_recover_flag_and_valid_manifest_is_left_alone(manifest: Path) -> None:
    pool = AgentPool(manifest)
    pool.add("/dev/null", agent_id="a")
    pool.add("/dev/null", agent_id="b")
    assert [r.agent_id for r in AgentPool(manifest, recover=True).list()] == ["a", "b"]
    manifest.write_text('{"max_size": 200, "agents": [{"agent_id": 5}]}')
    with pytest.raises(PoolManifestError, match=r"agents\[0\]"):
        AgentPool(manifest)
    assert [r.agent_id for r in AgentPool(manifest, recover=True).list()] == ["a"]


def test_recover_on_a_new_pool_starts_empty(manifest: Path) -> None:
    assert len(AgentPool.recover(manifest)) == 0
    assert not manifest.exists()


def test_corrupt_without_backup_says_so(manifest: Path) -> None:
    manifest.parent.mkdir(parents=True)
    manifest.write_text("[1, 2")
    with pytest.raises(PoolManifestError, match="no valid last-good copy"):
        AgentPool(manifest)
    with pytest.raises(PoolManifestError, match="does not exist"):
        AgentPool.recover(manifest)
    manifest.write_text("")
    with pytest.raises(PoolManifestError, match="empty"):
        AgentPool(manifest)


def test_resolve_snapshot_refuses_paths_outside_the_league(manifest: Path, tmp_path) -> None:
    pool = AgentPool(manifest)
    inside = pool.add("snapshots/a.pt", agent_id="inside")
    pool.add(str(manifest.parent / "b.pt"), agent_id="abs")
    dev_null = pool.add("/dev/null", agent_id="devnull")
    escape = pool.add("../../etc/passwd", agent_id="escape")

    assert pool.resolve_snapshot(inside) == (manifest.parent / "snapshots/a.pt").resolve()
    assert pool.resolve_snapshot("abs") == (manifest.parent / "b.pt").resolve()
    for rec in (dev_null, escape):
        with pytest.raises(ValueError, match="outside the league directory"):
            pool.resolve_snapshot(rec)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (manifest.parent / "link").symlink_to(outside)
    linked = pool.add("link/c.pt", agent_id="linked")
    with pytest.raises(ValueError, match="outside"):
        pool.resolve_snapshot(linked)
    assert pool.resolve_snapshot(linked, root=tmp_path) == (outside / "c.pt").resolve()
    with pytest.raises(KeyError):
        pool.resolve_snapshot("missing")


def test_sampling(manifest: Path) -> None:
    pool = AgentPool(manifest)
    for name, kind in (("m", "main_agent"), ("e", "main_exploiter"), ("l", "league_exploiter")):
        pool.add("/dev/null", kind, agent_id=name)
    rng = np.random.default_rng(0)
    # squared weighting: m is always beaten (weight 0), e always wins (weight 1).
    picks = {pool.sample_pfsp({"m": 1.0, "e": 0.0, "l": 1.0}, rng=rng).agent_id
             for _ in range(50)}
    assert picks == {"e"}
    assert pool.sample_pfsp({"m": 0.0}, exclude_ids=["m"], agent_type="main_agent") is None
    uniform = {pool.sample_uniform(exclude_ids={"l"}, rng=rng).agent_id for _ in range(100)}
    assert uniform == {"m", "e"}
    assert pool.sample_pfsp({"m": 0.9}, pfsp_weight_fn="variance", rng=1) in pool.list()
    # None (no data, as MatchDatabase.win_rate returns it) counts as 0.5.
    assert pool.sample_pfsp({"m": None, "e": 1.0, "l": 1.0}, rng=rng).agent_id == "m"
    with pytest.raises(ValueError, match="unknown"):
        pool.sample_pfsp({}, pfsp_weight_fn="cubic")
    with pytest.raises(ValueError, match=r"win rate for candidate m is 1\.5"):
        pool.sample_pfsp({"m": 1.5})
    with pytest.raises(TypeError, match="exclude_ids"):
        pool.sample_uniform(exclude_ids="m")


def test_missing_manifest_with_leftover_copy_warns(manifest: Path, caplog) -> None:
    pool = AgentPool(manifest)
    pool.add("/dev/null", agent_id="a")
    pool.add("/dev/null", agent_id="b")
    os.remove(manifest)
    with caplog.at_level(logging.WARNING, logger="training.league"):
        empty = AgentPool(manifest)
    assert len(empty) == 0 and "AgentPool.recover" in caplog.text
    assert [r.agent_id for r in AgentPool.recover(manifest).list()] == ["a"]


# --- silent acceptance ---------------------------------------------------------------------

def test_a_string_force_flag_is_refused_and_evicts_nothing(manifest: Path) -> None:
    pool = AgentPool(manifest, max_size=1)
    pool.add("snapshots/a.pt", agent_id="a")
    with pytest.raises(ValueError, match="force='no' is invalid: expected true or false"):
        pool.add("snapshots/b.pt", agent_id="b", force="no")
    assert [r.agent_id for r in AgentPool(manifest)] == ["a"]
    with pytest.raises(ValueError, match="recover='yes' is invalid"):
        AgentPool(manifest, recover="yes")


@pytest.mark.parametrize("agent_id", ["a\nb", "a\0b", "\t", "a\u2028b", "x" * 201])
def test_agent_ids_must_be_printable_and_short(manifest: Path, agent_id: str) -> None:
    pool = AgentPool(manifest)
    with pytest.raises(ValueError, match="agent_id=.* is invalid"):
        pool.add("snapshots/a.pt", agent_id=agent_id)
    assert len(AgentPool(manifest)) == 0


def test_a_snapshot_path_with_a_nul_is_refused(manifest: Path) -> None:
    with pytest.raises(ValueError, match="snapshot_path=.* without NUL"):
        AgentPool(manifest).add("snapshots/a\0.pt")
