"""The league report (training/league/report.py) and what the roles log for it.

A real tiny league (three roles taking turns rollout by rollout on one folder, as
concurrent processes would: the ``league`` fixture of conftest.py) is built once; the
exact numbers are checked on history files written by hand.
"""

from __future__ import annotations

import base64
import glob
import io
import json
import math
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from tests.league.conftest import ROLES
from training.elo import TeamEloRegistry
from training.league import AgentPool, AgentType, MatchDatabase
from training.league.report import PICTURES, REPORT_FILE, read_league, write_league_report

SEED_METRICS = ("league/nash_entropy", "league/diversity_score", "league/pool_size")


def test_the_report_of_a_real_league_draws_every_member(league):
    folder, roles = league
    page = write_league_report(folder)
    assert page == folder / REPORT_FILE
    for name, _, _ in PICTURES:
        with Image.open(folder / name) as image:
            image.verify()
        with Image.open(folder / name) as image:
            assert image.format == "PNG" and 600 <= image.width <= 3000 \
                and 300 <= image.height <= 2000
    text = page.read_text()
    assert 'src="http' not in text and 'href="http' not in text and "<script" not in text
    embedded = text.split('src="data:image/png;base64,')[1:]
    assert len(embedded) == 4
    for chunk in embedded:
        with Image.open(io.BytesIO(base64.b64decode(chunk.split('"')[0]))) as image:
            image.verify()
    for trainer in roles.values():
        assert trainer.agent_id in text
    # Nothing half-written is left behind.
    assert not list(folder.glob(".*.tmp"))

    data = read_league(folder)
    assert data.clock == "main_agent"
    members = [m.agent_id for m in data.members]
    assert {m.agent_type for m in data.members} == set(AgentType)
    for name in [*members, *(trainer.agent_id for trainer in roles.values())]:
        assert len(data.elo.get(name, [])) >= (3 if name.endswith("_001") else 1), name
    for role, trainer in roles.items():
        learner = data.learners[trainer.agent_id]
        assert learner.role == role and learner.step == trainer.trainer.total_steps
        # The exploiters' rows show each reset; the main agent never resets.
        assert (learner.resets is None) == (role == "main_agent")
        if role != "main_agent":
            assert len(learner.resets) == trainer.reset_count >= 1
    # The main agent's evaluations carry the whole league's table, exploiters included.
    main_rows = [e for e in data.evaluations if e.role == "main_agent"]
    assert any(name.startswith("league_exploiter_001") for name in main_rows[-1].elo)
    assert [e.x for e in main_rows] == [e.step for e in main_rows]
    assert set(data.anchors) == {"scripted_team_l5", "doctrine_team"}
    assert data.payoff.shape == (len(data.payoff_rows), len(members) + 2)
    assert data.payoff_rows[:3] == [roles[role].agent_id for role in ROLES]
    assert data.latest("exploitability") is not None and "Last exploitability" in text


def test_the_roles_log_the_seed_metric_names_to_tensorboard_and_wandb(league):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    folder, roles = league
    for role, trainer in roles.items():
        events = EventAccumulator(str(Path(trainer.trainer.config.log_dir) / trainer.agent_id))
        events.Reload()
        tags = set(events.Tags()["scalars"])
        assert {f"elo/{role}", *SEED_METRICS} <= tags, role
    logged = set().union(*(row.keys() for row in wandb_history(folder.parent / "wandb_run")))
    assert {"elo/main_agent", *SEED_METRICS} <= logged


def wandb_history(log_dir: Path) -> list[dict]:
    """The history rows of the one offline W&B run under ``log_dir``, read from its
    ``.wandb`` file: a LevelDB-style log (a 7-byte header, then 32 KiB blocks of records,
    each ``crc32 (4) | length (2) | type (1) | data``, a record split over blocks as
    first/middle/last pieces) of ``wandb_internal_pb2.Record`` messages."""
    from wandb.proto import wandb_internal_pb2

    (path,) = glob.glob(str(log_dir / "wandb" / "offline-run-*" / "run-*.wandb"))
    data = Path(path).read_bytes()
    assert data[:4] == b":W&B"
    block, header, full, last = 32768, 7, 1, 4
    position, pieces, rows = header, b"", []
    while position + header <= len(data):
        if block - position % block < header:  # a block's tail too short for a header
            position += block - position % block
            continue
        _, length, kind = struct.unpack("<IHB", data[position:position + header])
        pieces += data[position + header:position + header + length]
        position += header + length
        if kind in (full, last):
            record = wandb_internal_pb2.Record.FromString(pieces)
            pieces = b""
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
    return rows


def write_history(path: Path, rows: list[dict]) -> None:
    """``history.jsonl`` as ``role_hooks.record_history`` writes it, one row a line:
    time, agent_id, role, step, elo {id: rating}, nash {id: probability}, metrics."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def history_row(t: float, agent_id: str, role: str, step: int, elo: dict, nash: dict,
                metrics: dict) -> dict:
    return {"time": t, "agent_id": agent_id, "role": role, "step": step, "elo": elo,
            "nash": nash, "metrics": metrics}


@pytest.fixture
def synthetic_league(tmp_path):
    """Two roles with known evaluations: the main agent at 1000, 2000 and 3000 steps
    (times 10, 20, 30 after it started), the main exploiter resetting at its step 600
    (time 15) and evaluating last (time 35)."""
    folder = tmp_path / "league"
    t0 = time.time()  # the main agent's start: its first snapshot's date, at step 0
    main = AgentPool(folder / "main_agent" / "pool.json")
    exploiter = AgentPool(folder / "main_exploiter" / "pool.json")
    main.add("snapshots/m0.pt", AgentType.MAIN_AGENT, agent_id="main_agent_001_v000000",
             version=0, metadata={"parent_agent_id": "main_agent_001", "step": 0})
    exploiter.add("snapshots/e0.pt", AgentType.MAIN_EXPLOITER,
                  agent_id="main_exploiter_001_v000000", version=0,
                  metadata={"parent_agent_id": "main_exploiter_001", "step": 0,
                            "reset_count": 0})
    nash = {"main_agent_001_v000000": 0.75, "main_exploiter_001_v000000": 0.25}
    entropy = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    write_history(folder / "main_agent" / "history.jsonl", [
        history_row(t0 + 10, "main_agent_001", "main_agent", 1000,
                    {"main_agent_001": 1010.0, "main_agent_001_v000000": 1000.0},
                    {"main_agent_001_v000000": 1.0},
                    {"elo/main_agent": 1010.0, "league/nash_entropy": 0.0,
                     "league/diversity_score": 0.1, "matchup/win_rate/scripted_team_l5": 0.5}),
        history_row(t0 + 20, "main_agent_001", "main_agent", 2000,
                    {"main_agent_001": 1020.0, "main_agent_001_v000000": 995.0}, {},
                    {"league/nash_entropy": 0.1, "league/diversity_score": 0.2}),
        history_row(t0 + 30, "main_agent_001", "main_agent", 3000,
                    {"main_agent_001": 1030.0, "main_agent_001_v000000": 990.0}, {},
                    {"league/nash_entropy": 0.2, "league/diversity_score": 0.3})])
    write_history(folder / "main_exploiter" / "history.jsonl", [
        # The main exploiter's metrics are named exploiter/... (its metric prefix).
        history_row(t0 + 15, "main_exploiter_001", "main_exploiter", 600,
                    {"main_exploiter_001": 980.0}, {},
                    {"exploiter/reset_count": 1.0, "exploiter/reset_step": 600.0,
                     "league/diversity_score": 0.15}),
        history_row(t0 + 35, "main_exploiter_001", "main_exploiter", 1200,
                    {"main_exploiter_001": 990.0}, nash,
                    {"exploiter/reset_count": 1.0, "league/nash_entropy": entropy,
                     "league/diversity_score": 0.25})])
    matches = MatchDatabase(folder / "matches.jsonl")
    matches.record("main_agent_001", "main_agent_001_v000000", 1.0)
    matches.record("main_agent_001", "main_agent_001_v000000", 0.5)
    matches.record("main_agent_001", "doctrine_team", 0.0)
    matches.record("main_exploiter_001", "main_agent_001_v000000", 0.25)
    elo = TeamEloRegistry(folder / "elo.json")
    for name, rating in (("main_agent_001", 1040.0), ("main_agent_001_v000000", 985.0),
                         ("main_exploiter_001", 995.0), ("main_exploiter_001_v000000", 1000.0)):
        elo.set_rating(name, rating)
    elo.save()
    return folder, entropy


def test_the_gathered_numbers_of_a_known_history(synthetic_league):
    folder, entropy = synthetic_league
    data = read_league(folder)
    assert data.clock == "main_agent"
    main, exploiter = data.learners["main_agent_001"], data.learners["main_exploiter_001"]
    assert (main.step, main.elo, main.resets) == (3000, 1030.0, None)
    # The reset at the exploiter's step 600 came at time 15: the main agent's 1500.
    assert exploiter.resets == [(600, pytest.approx(1500.0))]
    assert (exploiter.step, exploiter.elo) == (1200, 990.0)
    assert data.latest("league/nash_entropy") == pytest.approx(entropy)
    assert data.latest("league/diversity_score") == 0.25
    assert data.latest("exploitability") is None
    assert data.latest_nash.nash == {"main_agent_001_v000000": 0.75,
                                     "main_exploiter_001_v000000": 0.25}
    # Anchors: those played (a match, an evaluation), at their fixed ratings.
    assert data.anchors == {"scripted_team_l5": 1000.0, "doctrine_team": 1150.0}
    # Each line: the evaluations' tables, then the Elo file's at the main agent's last step.
    assert data.elo["main_agent_001_v000000"] == [(1000, 1000.0), (2000, 995.0),
                                                  (3000, 990.0), (3000, 985.0)]
    # After the main agent's last date its steps stay at its last.
    assert data.elo["main_exploiter_001"] == [(1500, 980.0), (3000, 990.0), (3000, 995.0)]
    assert data.payoff_rows == ["main_agent_001", "main_exploiter_001"]
    assert data.payoff_columns == ["main_agent_001_v000000", "main_exploiter_001_v000000",
                                   "scripted_team_l5", "doctrine_team"]
    assert data.payoff[0, 0] == 0.75 and data.payoff[1, 0] == 0.25
    assert data.payoff[0, 3] == 0.0 and math.isnan(data.payoff[0, 2])
    page = write_league_report(folder).read_text()
    assert "main_exploiter_001" in page and "Last exploitability" not in page

    # Without the main agent's history each evaluation lies at its own role's step.
    (folder / "main_agent" / "history.jsonl").unlink()
    data = read_league(folder)
    assert data.clock == "own"
    assert data.learners["main_exploiter_001"].resets == [(600, 600.0)]
    assert data.elo["main_exploiter_001"] == [(600, 980.0), (1200, 990.0), (1200, 995.0)]


def test_a_folder_without_pools_is_not_a_league(tmp_path):
    (tmp_path / "main_agent").mkdir()
    with pytest.raises(FileNotFoundError, match="is not a league directory.*pool.json"):
        write_league_report(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_league(tmp_path / "missing")


def test_the_command_line_prints_the_paths_it_wrote(synthetic_league, tmp_path):
    folder, _ = synthetic_league
    done = subprocess.run([sys.executable, "-m", "training.league.report", str(folder)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.split()
    assert printed == [str(folder / name) for name, _, _ in PICTURES] + \
        [str(folder / REPORT_FILE)]
    assert all(Path(path).is_file() for path in printed)
    done = subprocess.run([sys.executable, "-m", "training.league.report", str(tmp_path)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 2 and "is not a league directory" in done.stderr
