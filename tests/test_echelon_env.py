"""Brigade and division battles: the single envs' Gymnasium contract, the SB3 VecEnvs'
contract, and battle i of the VecEnv seeded s is the single env reset with seed s + i."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as check_gymnasium_env
from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env

from envs.echelons.brigade_env import BrigadeEnv, brigade_obs_dim, make_brigade_vec_env
from envs.echelons.division_env import DivisionEnv, division_obs_dim, make_division_vec_env


@pytest.mark.parametrize("make_one, sizes, obs_dim, expected", [
    (BrigadeEnv, dict(n_blue=3, n_red=2), brigade_obs_dim(3), 25),
    (DivisionEnv, dict(n_brigades=3, n_blue_per_brigade=2), division_obs_dim(3), 30)])
def test_the_gymnasium_contract_holds(make_one, sizes, obs_dim, expected):
    check_gymnasium_env(make_one(), skip_render_check=True)
    env = make_one(**sizes)
    assert env.observation_space.shape == (obs_dim,) == (expected,)
    assert list(env.action_space.nvec) == [6, 6, 6]


@pytest.mark.parametrize("make_vec, make_one, width", [
    (make_brigade_vec_env, BrigadeEnv, 2), (make_division_vec_env, DivisionEnv, 2)])
def test_battle_i_is_the_single_env_seeded_s_plus_i(make_vec, make_one, width):
    vec = make_vec(3, max_steps=80, red_random=True)
    vec.seed(10)
    obs = vec.reset()
    singles = [make_one(max_steps=80, red_random=True) for _ in range(3)]
    for i, env in enumerate(singles):
        np.testing.assert_array_equal(obs[i], env.reset(seed=10 + i)[0])
    rng = np.random.default_rng(0)
    ended = np.zeros(3, bool)
    for _ in range(12):
        action = rng.integers(0, 6, (3, width))
        obs, reward, done, infos = vec.step(action)
        for i, env in enumerate(singles):
            if ended[i]:
                continue
            one, r, terminated, truncated, info = env.step(action[i])
            assert reward[i] == pytest.approx(r) and done[i] == (terminated or truncated)
            if done[i]:
                ended[i] = True
                np.testing.assert_array_equal(infos[i]["terminal_observation"], one)
                assert infos[i]["TimeLimit.truncated"] == truncated
                assert infos[i]["winner"] == info["winner"]
            else:
                np.testing.assert_array_equal(obs[i], one)
    assert ended.all()  # 80 battalion steps are 8 macro steps: every battle was cut off


def test_sb3_ppo_learns_on_the_brigade_vec_env():
    vec = make_brigade_vec_env(4, max_steps=60)
    model = PPO("MlpPolicy", vec, n_steps=8, batch_size=16, n_epochs=1, verbose=0, seed=0)
    model.learn(64)
    action, _ = model.predict(vec.reset(), deterministic=True)
    assert action.shape == (4, 2)
    check_env(BrigadeEnv(max_steps=60), skip_render_check=True)


def test_bad_actions_are_named():
    vec = make_division_vec_env(2)
    vec.reset()
    with pytest.raises(ValueError, match="action"):
        vec.step(np.full((2, 2), 6))
