# The league tutorial (seed 002): steps 3 and 4, its command lines, as written, from a
# checkout's top folder. Step 4 names no command; it runs the exploiters' CLIs (the
# seed's configs) in parallel with the main agent, as it says: here beside Step 3's
# second main-agent command. Under the docs harness (tests/doc_examples.py) every
# training command runs with small budgets.
set -euo pipefail

# --- seed 002, Step 3: Run the Main Agent Loop (CLI) ---
python training/league/train_main_agent.py \
training.total_timesteps=5_000_000 \
league.pfsp_temperature=1.0 \
wandb.tags='["v4","league","main_agent"]'

# --- check (not in the seed): the main agent snapshotted itself into its pool ---
python - <<'EOF'
from training.league import AgentPool
versions = [r.version for r in AgentPool("checkpoints/league/main_agent/pool.json").list()]
assert versions == list(range(len(versions))) and len(versions) >= 2, versions
EOF

# --- setup (not in the seed): Step 4's exploiters, in parallel with the main agent ---
python -m training.league.train_exploiter --config-path configs/league \
    --config-name main_exploiter &
exploiter=$!
python -m training.league.train_league_exploiter --config-path configs/league \
    --config-name league_exploiter &
league_exploiter=$!

# --- seed 002, Step 3: Run the Main Agent Loop (Hydra entry point) ---
python -m training.league.train_main_agent \
--config-path configs/league \
--config-name main_agent

# --- setup (not in the seed): the exploiters end with the main agent ---
wait "$exploiter"
wait "$league_exploiter"

# --- check (not in the seed): the exploiters met the main agent, everyone is rated ---
python - <<'EOF'
import json
from training.league import AgentPool, MatchDatabase
pools = {role: AgentPool(f"checkpoints/league/{role}/pool.json").list()
         for role in ("main_agent", "main_exploiter", "league_exploiter")}
assert all(len(records) >= 2 for records in pools.values()), pools
matches = MatchDatabase("checkpoints/league/matches.jsonl")
for exploiter in ("main_exploiter_001", "league_exploiter_001"):
    met = {r.opponent_id for r in matches.results_for(exploiter)}
    assert any(o.startswith("main_agent_001_v") for o in met), (exploiter, met)
ratings = json.load(open("checkpoints/league/elo.json"))["ratings"]
assert all(r.agent_id in ratings for records in pools.values() for r in records)
# Steps 2 and 5 read the main agent's matches from its folder: they are there.
own = MatchDatabase("checkpoints/league/main_agent/matches.jsonl")
assert own.results and {r.agent_id for r in own.results} == {"main_agent_001"}
assert len(own.results) == len(matches.results_for("main_agent_001"))
EOF
