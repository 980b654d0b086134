"""The league tutorial's code, run as written (indentation restored) in a temp directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from training.league import AgentPool, AgentType, LeagueMatchmaker, MatchDatabase

REPO_ROOT = Path(__file__).resolve().parents[2]

# The tutorial's "Minimal Reproducible Example", verbatim.
SMOKE_TEST = '''\
"""
league_smoke_test.py — minimal end-to-end league training check.
Run: python league_smoke_test.py
Expected: prints "Smoke test PASSED" with diversity score and Nash entropy.
"""
import pathlib, tempfile, numpy as np
from training.league import (
    AgentPool, AgentType, MatchDatabase, LeagueMatchmaker,
    build_payoff_matrix, compute_nash_distribution, nash_entropy,
    DiversityTracker, TrajectoryBatch,
)

# ── 1. Bootstrap pool with three synthetic agents ─────────────────────────
with tempfile.TemporaryDirectory() as tmp:
    pool_path = pathlib.Path(tmp) / "pool.json"
    match_path = pathlib.Path(tmp) / "matches.jsonl"

    pool = AgentPool(pool_manifest=str(pool_path))
    match_db = MatchDatabase(db_path=str(match_path))

    a = pool.add(snapshot_path="/dev/null", agent_type=AgentType.MAIN_AGENT,
                 metadata={"note": "seed"})
    b = pool.add(snapshot_path="/dev/null", agent_type=AgentType.MAIN_EXPLOITER)
    c = pool.add(snapshot_path="/dev/null", agent_type=AgentType.LEAGUE_EXPLOITER)
    assert len(pool.list()) == 3, "Pool should contain 3 agents"

    # ── 2. Record some synthetic match outcomes ───────────────────────────
    pairs = [(a.agent_id, b.agent_id, 0.7),
             (a.agent_id, c.agent_id, 0.6),
             (b.agent_id, c.agent_id, 0.55)]
    for src, dst, outcome in pairs:
        match_db.record(src, dst, outcome)
        match_db.record(dst, src, 1.0 - outcome)

    # ── 3. Matchmaker selects an opponent ─────────────────────────────────
    matchmaker = LeagueMatchmaker(agent_pool=pool, match_database=match_db)
    opponent = matchmaker.select_opponent(a.agent_id)
    assert opponent is not None, "Matchmaker should return an opponent"

    # ── 4. Nash distribution ──────────────────────────────────────────────
    ids = [r.agent_id for r in pool.list()]
    payoff = build_payoff_matrix(ids, win_rate_fn=match_db.win_rate)
    nash_probs = compute_nash_distribution(payoff)
    entropy = nash_entropy(nash_probs)
    assert abs(nash_probs.sum() - 1.0) < 1e-6, "Nash probs must sum to 1"

    # ── 5. Diversity tracking ─────────────────────────────────────────────
    tracker = DiversityTracker()
    rng = np.random.default_rng(0)
    for agent_id in ids:
        batch = TrajectoryBatch(
            actions=rng.standard_normal((50, 4)),
            positions=rng.uniform(0, 1, (50, 2)),
            agent_id=agent_id,
        )
        tracker.update(agent_id, batch)
    div_score = tracker.diversity_score()

print(f"Nash entropy : {entropy:.4f} nats")
print(f"Diversity score : {div_score:.4f}")
print("Smoke test PASSED ✓")
'''

STEP_1 = '''\
import tempfile, pathlib
from training.league import AgentPool, AgentType
# Choose a directory for league artefacts.
# In production use: "checkpoints/league/main_agent"
pool_dir = pathlib.Path("checkpoints/league/main_agent")
pool_dir.mkdir(parents=True, exist_ok=True)
pool = AgentPool(pool_manifest=str(pool_dir / "pool.json"))
# Register your pre-trained starting checkpoint.
# The snapshot_path points to a .zip produced by SB3 or a PyTorch .pt file.
record = pool.add(
    snapshot_path="checkpoints/pretrained/battalion_ppo_v1.zip",
    agent_type=AgentType.MAIN_AGENT,
    metadata={"note": "bootstrapped from PPO v1"},
)
print(f"Pool initialised — agent_id: {record.agent_id}, version: {record.version}")
'''

STEP_2 = '''\
from training.league import LeagueMatchmaker, MatchDatabase, AgentPool, AgentType
pool = AgentPool(pool_manifest="checkpoints/league/main_agent/pool.json")
match_db = MatchDatabase(db_path="checkpoints/league/main_agent/matches.jsonl")
matchmaker = LeagueMatchmaker(agent_pool=pool, match_database=match_db)
# Confirm the matchmaker sees the pool.
agents = pool.list()
print(f"Pool size: {len(agents)} agent(s)")
# Optional: switch to a curriculum warm-up weight function (easy-first).
def prefer_easy_opponents(win_rate: float) -> float:
    """Prefer opponents the focal agent already beats — good for warm-up."""
    return win_rate
matchmaker.set_weight_function(prefer_easy_opponents)
# Revert to hard-first default (recommended for main training):
matchmaker.set_weight_function(None)
'''

STEP_5 = '''\
import numpy as np
from training.league import (
    AgentPool, MatchDatabase, LeagueMatchmaker,
    build_payoff_matrix, compute_nash_distribution, nash_entropy,
)
pool = AgentPool(pool_manifest="checkpoints/league/main_agent/pool.json")
match_db = MatchDatabase(db_path="checkpoints/league/main_agent/matches.jsonl")
matchmaker = LeagueMatchmaker(agent_pool=pool, match_database=match_db)
agent_ids = [r.agent_id for r in pool.list()]
# win_rate(a, b) -> float: fraction of games won by a against b.
payoff = build_payoff_matrix(agent_ids, win_rate_fn=match_db.win_rate)
nash_probs = compute_nash_distribution(payoff) # shape (N,)
nash_dist = dict(zip(agent_ids, nash_probs.tolist()))
entropy = nash_entropy(nash_probs) # nats
print(f"Nash entropy: {entropy:.3f} nats (higher = more diverse equilibrium)")
# Activate Nash-weighted sampling in the matchmaker.
matchmaker.set_nash_weights(nash_dist)
# Revert to PFSP at any time:
# matchmaker.set_nash_weights(None)
'''

STEP_6 = '''\
import numpy as np
from training.league import DiversityTracker, TrajectoryBatch
tracker = DiversityTracker()
# After collecting evaluation rollouts for each agent, track them:
for agent_id, actions, positions in eval_rollouts:
    batch = TrajectoryBatch(
        actions=actions, # np.ndarray of shape (T, action_dim)
        positions=positions, # np.ndarray of shape (T, 2), normalised to [0,1]
        agent_id=agent_id,
    )
    tracker.update(agent_id, batch)
score = tracker.diversity_score()
print(f"League diversity score: {score:.4f} (0=identical, ~1=highly diverse)")
# Log to W&B manually if needed:
import wandb
wandb.log({"league/diversity_score": score})
'''

# Step 6 needs rollouts and a W&B run; the tutorial assumes a trainer made both.
STEP_6_PREAMBLE = '''\
import numpy as np
import wandb
rng = np.random.default_rng(0)
eval_rollouts = [
    ("main", rng.normal(2.0, 0.2, (120, 3)), np.column_stack(
        [np.linspace(0.1, 0.9, 120), np.full(120, 0.5)])),
    ("exploiter", rng.normal(0.0, 0.1, (120, 3)), np.full((120, 2), 0.05)),
]
run = wandb.init(mode="offline", project="league-tutorial-test")
'''

STEP_6_POSTAMBLE = '''\
assert run.summary["league/diversity_score"] == score
wandb.finish()
'''


def run_script(source: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "PYTHONIOENCODING": "utf-8",
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(cwd),
        "WANDB_SILENT": "true",
    }
    script = cwd / "script.py"
    script.write_text(source, encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=120)


def test_minimal_reproducible_example_passes(tmp_path: Path) -> None:
    result = run_script(SMOKE_TEST, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Smoke test PASSED" in result.stdout
    assert "Nash entropy : " in result.stdout and "Diversity score : " in result.stdout


def run_step(source: str, namespace: dict | None = None) -> dict:
    namespace = {"__name__": "__tutorial__", **(namespace or {})}
    exec(compile(source, "<tutorial>", "exec"), namespace)  # noqa: S102 - the tutorial's code
    return namespace


def test_steps_1_2_and_5(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)

    step1 = run_step(STEP_1)
    out = capsys.readouterr().out
    assert f"agent_id: {step1['record'].agent_id}, version: 1" in out
    manifest = tmp_path / "checkpoints/league/main_agent/pool.json"
    assert [r.agent_id for r in AgentPool(manifest).list()] == [step1["record"].agent_id]

    step2 = run_step(STEP_2)
    assert "Pool size: 1 agent(s)" in capsys.readouterr().out
    assert step2["matchmaker"].weighting_name == "squared"

    # Between the steps training grows the league and records matches.
    main_id = step1["record"].agent_id
    pool = AgentPool(manifest)
    db = MatchDatabase(manifest.with_name("matches.jsonl"))
    pool.add("snapshots/x.pt", AgentType.MAIN_EXPLOITER, agent_id="exploiter")
    pool.add("snapshots/y.pt", AgentType.LEAGUE_EXPLOITER, agent_id="league_exploiter")
    # A rock-paper-scissors cycle: the equilibrium mixes all three evenly.
    for winner, loser in ((main_id, "exploiter"), ("exploiter", "league_exploiter"),
                          ("league_exploiter", main_id)):
        db.record(winner, loser, 1.0)
        db.record(loser, winner, 0.0)

    step5 = run_step(STEP_5)
    out = capsys.readouterr().out
    assert f"Nash entropy: {np.log(3):.3f} nats" in out
    matchmaker: LeagueMatchmaker = step5["matchmaker"]
    assert matchmaker.nash_weights == pytest.approx(
        {main_id: 1 / 3, "exploiter": 1 / 3, "league_exploiter": 1 / 3})
    assert matchmaker.opponent_probabilities(main_id) == pytest.approx(
        {"exploiter": 0.5, "league_exploiter": 0.5})


def test_step_6_with_wandb_offline(tmp_path: Path) -> None:
    result = run_script(STEP_6_PREAMBLE + STEP_6 + STEP_6_POSTAMBLE, tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(s for s in result.stdout.splitlines() if s.startswith("League diversity score"))
    score = float(line.split(":")[1].split()[0])
    assert score > 0.3  # two clearly different behaviours
    assert list((tmp_path / "wandb").glob("offline-run-*/run-*.wandb"))
