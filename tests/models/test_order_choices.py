"""Orders as choices: the march and the fire chosen from their values, the wheel Gaussian."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3 import PPO

from envs.vec_env import BattalionVecEnv
from models.battalion_policy import BattalionMlpPolicy
from models.order_choices import (
    FIRE_CHOICES,
    HEAD_SIZE,
    MOVE_CHOICES,
    OrderChoices,
    choice_index,
    most_likely_orders,
)
from training.ppo.checkpoints import load_ppo, save_ppo


def _distribution(n: int = 4000, seed: int = 0) -> OrderChoices:
    generator = torch.Generator().manual_seed(seed)
    head = torch.randn(n, HEAD_SIZE, generator=generator)
    return OrderChoices().proba_distribution(head, torch.tensor([-1.0]))


def test_samples_are_the_choices_and_their_log_likelihood_sums_the_three_orders():
    torch.manual_seed(0)
    distribution = _distribution()
    actions = distribution.sample()
    assert set(actions[:, 0].tolist()) == set(MOVE_CHOICES)
    assert set(actions[:, 2].tolist()) == set(FIRE_CHOICES)
    assert len(torch.unique(actions[:, 1])) > 0.99 * len(actions)  # the wheel is continuous
    move = choice_index(actions[:, 0], MOVE_CHOICES)
    fire = choice_index(actions[:, 2], FIRE_CHOICES)
    expected = (torch.log_softmax(distribution.move.logits, 1).gather(1, move[:, None])[:, 0]
                + torch.distributions.Normal(distribution.turn.mean, np.exp(-1.0))
                .log_prob(actions[:, 1])
                + torch.log_softmax(distribution.fire.logits, 1).gather(1, fire[:, None])[:, 0])
    torch.testing.assert_close(distribution.log_prob(actions), expected)
    entropy = distribution.entropy()
    torch.testing.assert_close(entropy, distribution.move.entropy() + distribution.turn.entropy()
                               + distribution.fire.entropy())


def test_the_mode_is_the_likeliest_choice_and_the_wheels_mean():
    head = torch.tensor([[0.0, 3.0, 1.0, 0.25, 2.0, -1.0],
                         [5.0, 0.0, 1.0, -0.5, -2.0, 1.0]])
    expected = torch.tensor([[0.0, 0.25, 0.0], [-1.0, -0.5, 1.0]])
    distribution = OrderChoices().proba_distribution(head, torch.tensor([-3.0]))
    torch.testing.assert_close(distribution.mode(), expected)
    torch.testing.assert_close(most_likely_orders(head), expected)


def test_an_order_between_choices_counts_as_the_nearest():
    assert choice_index(torch.tensor([-0.9, -0.4, 0.3, 0.7]), MOVE_CHOICES).tolist() == \
        [0, 1, 1, 2]
    assert choice_index(torch.tensor([0.2, 0.6, 1.3]), FIRE_CHOICES).tolist() == [0, 1, 1]


def test_the_imitation_loss_is_the_teachers_negative_log_likelihood_at_the_spread_held():
    distribution = _distribution(64)
    orders = torch.stack([torch.tensor(MOVE_CHOICES)[torch.arange(64) % 3],
                          torch.linspace(-1, 1, 64),
                          torch.tensor(FIRE_CHOICES)[torch.arange(64) % 2]], dim=1)
    torch.testing.assert_close(distribution.imitation_loss(orders),
                               -distribution.log_prob(orders).mean()
                               - 0.5 * np.log(2 * np.pi) - (-1.0))


def _model(seed: int = 0) -> PPO:
    return PPO(BattalionMlpPolicy, BattalionVecEnv(4, max_steps=50), n_steps=16, batch_size=32,
               n_epochs=2, device="cpu", seed=seed,
               policy_kwargs={"orders": "choices", "normalize_observations": True})


def test_a_policy_of_choices_learns_acts_and_survives_a_checkpoint(tmp_path):
    model = _model()
    assert model.policy.action_net.out_features == HEAD_SIZE
    assert model.policy.log_std.shape == (1,)
    model.learn(64)  # SB3's own rollout and update score the stored orders
    observations = np.random.default_rng(0).uniform(0, 1, (200, 25)).astype(np.float32)
    sampled = model.predict(observations, deterministic=False)[0]
    assert set(sampled[:, 0]) <= set(MOVE_CHOICES) and set(sampled[:, 2]) <= set(FIRE_CHOICES)
    loaded = load_ppo(save_ppo(model, tmp_path / "choices"))
    assert loaded.policy.orders == "choices"
    np.testing.assert_array_equal(loaded.predict(observations, deterministic=True)[0],
                                  model.predict(observations, deterministic=True)[0])


def test_misuse_is_refused():
    env = BattalionVecEnv(2)
    with pytest.raises(ValueError, match="orders='bang'"):
        PPO(BattalionMlpPolicy, env, policy_kwargs={"orders": "bang"})
    with pytest.raises(ValueError, match="initial_fire_bias=-1.0 is invalid with orders"):
        PPO(BattalionMlpPolicy, env,
            policy_kwargs={"orders": "choices", "initial_fire_bias": -1.0})
    with pytest.raises(ValueError, match="orders='choices' is invalid for action_space"):
        BattalionMlpPolicy(env.observation_space, spaces.Box(-1, 1, (2,)), lambda _: 1e-3,
                           orders="choices")
