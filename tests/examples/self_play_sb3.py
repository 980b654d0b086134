"""Self-play with plain Stable-Baselines3 (seed 000, training.self_play, "Typical usage")."""

# --- seed 000, training.self_play: Typical usage ---
from training.self_play import OpponentPool, SelfPlayCallback, WinRateVsPoolCallback
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from envs.battalion_env import BattalionEnv
pool = OpponentPool(pool_dir="checkpoints/pool", max_size=10)
env = make_vec_env(BattalionEnv, n_envs=8)
model = PPO("MlpPolicy", env)
sp_cb = SelfPlayCallback(pool=pool, snapshot_freq=50_000, vec_env=env)
wr_cb = WinRateVsPoolCallback(pool=pool, eval_freq=50_000)
model.learn(total_timesteps=1_000_000, callback=[sp_cb, wr_cb])

# --- checks (not in the seed) ---
# The learner was snapshotted into the pool, the pool kept the newest, and the
# learner was evaluated against a pool member.
assert sp_cb.version >= 1 and pool.size == min(sp_cb.version, pool.max_size)
assert 0.0 <= wr_cb.last_win_rate <= 1.0
