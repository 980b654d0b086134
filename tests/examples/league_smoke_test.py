"""The league tutorial's minimal reproducible example (seed 002), as written."""

# --- seed 002, Minimal Reproducible Example ---
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
