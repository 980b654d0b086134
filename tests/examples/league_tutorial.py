"""The league tutorial (seed 002): steps 1, 2, 5 and 6, as written, in one working folder.

Between the steps the tutorial's trainers grow the league and fill the match
log; the setup sections here do that by hand (a rock-paper-scissors league, whose
equilibrium is known), and step 6 gets the evaluation rollouts and the W&B run
the tutorial assumes a trainer made.
"""

# --- seed 002, Step 1: Bootstrap the Agent Pool ---
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

# --- check (not in the seed) ---
main_id = record.agent_id
assert record.version == 1
assert [r.agent_id for r in AgentPool(pool_dir / "pool.json").list()] == [main_id]

# --- seed 002, Step 2: Configure the Matchmaker ---
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

# --- check (not in the seed) ---
assert len(agents) == 1 and matchmaker.weighting_name == "squared"

# --- setup (not in the seed): training grows the league and records matches ---
pool.add("snapshots/x.pt", AgentType.MAIN_EXPLOITER, agent_id="exploiter")
pool.add("snapshots/y.pt", AgentType.LEAGUE_EXPLOITER, agent_id="league_exploiter")
for winner, loser in ((main_id, "exploiter"), ("exploiter", "league_exploiter"),
                      ("league_exploiter", main_id)):
    match_db.record(winner, loser, 1.0)
    match_db.record(loser, winner, 0.0)

# --- seed 002, Step 5: Activate Nash Distribution Sampling ---
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

# --- check (not in the seed): a rock-paper-scissors cycle mixes all three evenly ---
assert abs(entropy - np.log(3)) < 1e-3
assert all(abs(p - 1 / 3) < 1e-3 for p in matchmaker.nash_weights.values())
probabilities = matchmaker.opponent_probabilities(main_id)
assert set(probabilities) == {"exploiter", "league_exploiter"}
assert all(abs(p - 0.5) < 1e-3 for p in probabilities.values())

# --- setup (not in the seed): evaluation rollouts of two agents, and a W&B run ---
import wandb  # noqa: E402

rng = np.random.default_rng(0)
eval_rollouts = [
    ("main", rng.normal(2.0, 0.2, (120, 3)),
     np.column_stack([np.linspace(0.1, 0.9, 120), np.full(120, 0.5)])),
    ("exploiter", rng.normal(0.0, 0.1, (120, 3)), np.full((120, 2), 0.05)),
]
run = wandb.init(mode="offline", project="league-tutorial")

# --- seed 002, Step 6: Read the Diversity Report ---
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

# --- check (not in the seed): two clearly different behaviours, logged ---
assert score > 0.3
assert run.summary["league/diversity_score"] == score
wandb.finish()
