"""Several real processes writing one league's files at once lose nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from training.league import AgentPool, MatchDatabase

REPO_ROOT = Path(__file__).resolve().parents[2]

# Each worker waits for a shared "go" file so that all of them write at the same time.
MATCH_WORKER = textwrap.dedent(
    """
    import pathlib, sys, time
    from training.league import MatchDatabase

    path, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    db = MatchDatabase(path)
    pathlib.Path(f"{go}.ready{worker}").touch()
    while not pathlib.Path(go).exists():
        time.sleep(0.001)
    for seq in range(count):
        db.record(f"w{worker}", f"opp{seq % 5}", (seq % 3) / 2,
                  metadata={"worker": worker, "seq": seq, "pad": "x" * (seq % 200)})
    """
)

POOL_WORKER = textwrap.dedent(
    """
    import pathlib, sys, time
    from training.league import AgentPool

    path, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    pool = AgentPool(path, max_size=1000)
    pathlib.Path(f"{go}.ready{worker}").touch()
    while not pathlib.Path(go).exists():
        time.sleep(0.001)
    for seq in range(count):
        pool.add(f"snapshots/w{worker}_{seq}.pt", "main_agent", agent_id=f"w{worker}-{seq}",
                 metadata={"worker": worker})
    """
)


def run_workers(tmp_path: Path, script: str, target: Path, workers: int, count: int) -> None:
    """Start ``workers`` processes, release them together and wait for all of them."""
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(target), str(w), str(count), str(go)],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for w in range(workers)
    ]
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"go.ready{w}").exists() for w in range(workers)):
            assert time.monotonic() < deadline, "workers did not start"
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.01)
        go.touch()
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


def test_four_processes_record_4000_matches_into_one_file(tmp_path: Path) -> None:
    path = tmp_path / "league" / "matches.jsonl"
    run_workers(tmp_path, MATCH_WORKER, path, workers=4, count=1000)

    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""  # the file ends with a complete line
    rows = [json.loads(line) for line in lines[:-1]]  # every line parses: none is torn
    assert len(rows) == 4000
    assert len({r["match_id"] for r in rows}) == 4000
    for worker in range(4):
        seqs = [r["metadata"]["seq"] for r in rows if r["metadata"]["worker"] == worker]
        assert seqs == list(range(1000))  # each worker's lines, complete and in order
    writers = [r["metadata"]["worker"] for r in rows]
    switches = sum(a != b for a, b in zip(writers, writers[1:], strict=False))
    assert switches > 3, "the workers did not actually overlap"

    db = MatchDatabase(path)
    assert len(db) == 4000 and db.skipped_lines == 0
    # The query agrees with the rows as written, whoever wrote around them.
    outcomes = [r["outcome"] for r in rows if (r["agent_id"], r["opponent_id"]) == ("w0", "opp0")]
    assert len(outcomes) == 200
    assert db.win_rate("w0", "opp0") == sum(outcomes) / len(outcomes)


def test_two_processes_add_agents_to_one_pool(tmp_path: Path) -> None:
    path = tmp_path / "league" / "pool.json"
    AgentPool(path).add("/dev/null", agent_id="seed")
    run_workers(tmp_path, POOL_WORKER, path, workers=2, count=25)

    pool = AgentPool(path)
    expected = {"seed"} | {f"w{w}-{s}" for w in range(2) for s in range(25)}
    assert {r.agent_id for r in pool.list()} == expected
    assert len(pool) == 51
    # The last good copy is a valid manifest missing exactly the final addition.
    backup = json.loads(path.with_name("pool.tmp").read_text())
    assert len(backup["agents"]) == 50
