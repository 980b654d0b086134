"""Team Elo ratings (seed 000, training.elo.TeamEloRegistry, "Typical usage")."""

# --- seed 000, training.elo.TeamEloRegistry: Typical usage ---
from training.elo import TeamEloRegistry
registry = TeamEloRegistry(path="checkpoints/team_elo.json")
# After a self-play evaluation round:
delta = registry.update(
    agent="mappo_blue",
    opponent="self_play_pool",
    outcome=0.6,
    n_games=20,
)

# --- checks (not in the seed) ---
# Both start at 1000; K = 40 for a new agent: 40 * (0.6 - 0.5).
assert abs(delta - 4.0) < 1e-9
registry.save()
again = TeamEloRegistry(path="checkpoints/team_elo.json")
assert again.get_rating("mappo_blue") == 1004.0 and again.get_game_count("mappo_blue") == 20
