"""The training API's quick-start (seed 000, "Quick-start"): both forms, as written."""

# --- seed 000, Quick-start ---
from training import train, TrainingConfig
# Minimal run with defaults
model = train(total_timesteps=500_000, n_envs=4, enable_wandb=False)
# Full config object
config = TrainingConfig(
    total_timesteps=1_000_000,
    n_envs=8,
    curriculum_level=3,
    enable_self_play=True,
    wandb_project="my_project",
)
model = train(config)

# --- checks (not in the seed) ---
from pathlib import Path  # noqa: E402

rollout = config.rollout_n_steps() * config.n_envs  # whole rollouts until the budget
assert config.total_timesteps <= model.num_timesteps < config.total_timesteps + rollout
assert Path("checkpoints/ppo_battalion_s42_c3_final.zip").is_file()
assert Path("checkpoints/ppo_battalion_s42_c5_final.zip").is_file()
