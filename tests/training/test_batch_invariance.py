"""A battle plays the same whatever batch it is in: the guarantee distributed rollouts
rest on (sampling draws keyed per battle, inference in whole row blocks)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from envs.battles.multi_battalion_batch import RED
from envs.battles.multi_observation import CRITIC_STATE_DIM, OBS_DIM
from envs.commanders.orders import ORDER_DIM
from envs.metrics.coordination import CoordinationTally
from envs.sim import random as rnd
from envs.sim.constants import ACTION_DIM
from models.mappo_policy import MAPPOPolicy
from training.mappo.battles import DOCTRINE_TEAM, play_team_battles, play_team_matches
from training.mappo.config import MAPPOConfig
from training.mappo.rollout import Rollout, TrainingBattles, collect, join_rollouts


@pytest.mark.parametrize("share", [True, False])
def test_policy_inference_of_a_row_does_not_depend_on_its_batch(share):
    torch.manual_seed(0)
    policy = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=2,
                         share_parameters=share)
    obs, state = torch.randn(200, OBS_DIM), torch.randn(200, CRITIC_STATE_DIM)
    agents = torch.arange(200) % 2
    whole = policy.act(obs, agent_idx=agents, deterministic=True)[0]
    values = policy.get_value(state)
    for start, size in [(0, 1), (3, 2), (17, 5), (40, 31), (9, 33), (100, 64), (1, 199)]:
        rows = slice(start, start + size)
        part = policy.act(obs[rows].clone(), agent_idx=agents[rows].clone(),
                          deterministic=True)[0]
        assert torch.equal(part, whole[rows]), (start, size)
        assert torch.equal(policy.get_value(state[rows].clone()), values[rows]), (start, size)


def test_sampling_with_given_noise_is_mean_plus_std_times_noise():
    policy = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, log_std_init=-0.5)
    obs, noise = torch.randn(6, OBS_DIM), torch.randn(6, ACTION_DIM)
    mean, _ = policy.act(obs, deterministic=True)
    sampled, log_prob = policy.act(obs, noise=noise)
    assert torch.allclose(sampled, mean + np.exp(-0.5) * noise)
    assert torch.allclose(log_prob, policy.evaluate_actions(obs, sampled, torch.zeros(
        6, CRITIC_STATE_DIM))[0])
    with pytest.raises(ValueError, match="noise has 5 rows"):
        policy.act(obs, noise=noise[:5])


def test_keyed_normal_draws_are_standard_normal_and_batch_free():
    keys = rnd.seed_keys(np.arange(2000))
    steps = np.arange(2000) % 37
    draws = rnd.normal(keys, rnd.STREAM_POLICY, steps, 6)
    assert draws.dtype == np.float32 and draws.shape == (2000, 6)
    assert abs(draws.mean()) < 0.03 and abs(draws.std() - 1) < 0.03
    assert np.all(np.isfinite(draws))
    from scipy import stats
    assert stats.kstest(draws.ravel(), "norm").pvalue > 1e-3
    for start, size in [(0, 1), (5, 7), (123, 300), (1999, 1)]:
        rows = slice(start, start + size)
        assert np.array_equal(rnd.normal(keys[rows], rnd.STREAM_POLICY, steps[rows], 6),
                              draws[rows])
    assert not np.array_equal(rnd.normal(keys, rnd.STREAM_RANDOM_ACTIONS, steps, 6), draws)


def assert_same_rollout(a: Rollout, b: Rollout) -> None:
    """Every field of two rollouts equal, bit for bit (also used by tests/distributed)."""
    for name in Rollout.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y), name
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y), name
        elif isinstance(x, CoordinationTally):
            assert np.array_equal(x.sums, y.sums) and np.array_equal(x.counts, y.counts), name
        else:
            assert len(x) == len(y), name
            assert all(np.array_equal(u, v) for u, v in zip(x, y, strict=True)), name


def test_battles_split_collected_and_joined_equal_the_whole_bit_for_bit():
    # Uneven parts, two team sizes, a sampling opponent in some battles, Red learning in
    # others: every rollout field and the battles' state after it are those of the whole.
    config = MAPPOConfig(n_envs=13, n_steps=48, max_steps=30, n_blue=2, n_red=3,
                         warm_start_doctrine=None, enable_wandb=False)
    torch.manual_seed(1)
    policy = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=3)
    opponent = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=3)
    whole = TrainingBattles(config, 2, 3, np.random.default_rng(5))
    whole.deal([opponent], 0.4)
    whole.set_learning_side(RED, np.array([1, 5, 11]))
    split = copy.deepcopy(whole)
    for _ in range(2):
        expected = collect(policy, whole, 48, 0.99)
        parts = split.split(3)
        assert [part.n_battles for part in parts] == [5, 4, 4]
        got = join_rollouts([collect(policy, part, 48, 0.99) for part in parts])
        split.join(parts)
        assert_same_rollout(expected, got)
        assert expected.wins  # battles of 30 steps end inside 48
    assert np.array_equal(whole.batch.observation, split.batch.observation)
    assert np.array_equal(whole.episode_return, split.episode_return)


def test_match_outcomes_do_not_depend_on_how_the_episodes_are_split():
    torch.manual_seed(2)
    blue = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, log_std_init=0.0)
    red = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, log_std_init=0.0)
    small = {"map_width": 200.0, "map_height": 200.0, "max_steps": 150}
    for opponent in (red, DOCTRINE_TEAM, 4):
        whole = play_team_battles(blue, opponent, n_episodes=9, seed=11, env_kwargs=small,
                                  deterministic=False)
        pieces = np.concatenate([play_team_battles(
            blue, opponent, n_episodes=n, seed=11 + start, env_kwargs=small,
            deterministic=False) for start, n in [(0, 4), (4, 1), (5, 4)]])
        assert np.array_equal(whole, pieces)
    assert len(set(whole.tolist())) > 1  # the battles are decided, not all drawn


@pytest.mark.parametrize("orders", [0, 10])
def test_matches_played_in_one_batch_have_the_outcomes_of_matches_played_alone(orders):
    torch.manual_seed(3)
    blue = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, log_std_init=0.0)
    reds = [MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, log_std_init=0.0)
            for _ in range(2)]
    small = {"map_width": 200.0, "map_height": 200.0, "max_steps": 150}
    if orders:  # battalions following orders: the observations carry them
        small["order_period"] = orders
        blue, *reds = [MAPPOPolicy(OBS_DIM + ORDER_DIM, ACTION_DIM, CRITIC_STATE_DIM,
                                   log_std_init=0.0) for _ in range(3)]
    opponents = {"a": reds[0], "l4": 4, "doctrine": DOCTRINE_TEAM, "b": reds[1], "l2": 2}
    for deterministic, opponent_deterministic in [(False, False), (True, True)]:
        kwargs = dict(n_episodes=7, seed=5, env_kwargs=small, deterministic=deterministic,
                      opponent_deterministic=opponent_deterministic)
        together = play_team_matches(blue, opponents, **kwargs)
        assert list(together) == list(opponents)
        for name, opponent in opponents.items():
            assert np.array_equal(together[name], play_team_battles(blue, opponent, **kwargs)), \
                (name, deterministic)
        assert len(set(np.concatenate(list(together.values())).tolist())) > 1
    assert play_team_matches(blue, {}, n_episodes=3) == {}
    with pytest.raises(TypeError, match=r"opponents\['x'\]=.* expected a scripted level"):
        play_team_matches(blue, {"a": 3, "x": "L3"}, n_episodes=3)
    with pytest.raises(ValueError, match=r"opponents\['y'\]"):
        play_team_matches(blue, {"y": 9}, n_episodes=3)
