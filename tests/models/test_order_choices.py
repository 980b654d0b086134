"""Orders as choices: the march and the fire chosen together, the wheel Gaussian."""

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
    ORDER_CHOICES,
    OrderChoices,
    choice_index,
    most_likely_orders,
)
from training.ppo.checkpoints import load_ppo, save_ppo


def _distribution(n: int = 4000, seed: int = 0) -> OrderChoices:
    generator = torch.Generator().manual_seed(seed)
    head = torch.randn(n, HEAD_SIZE, generator=generator)
    return OrderChoices().proba_distribution(head, torch.tensor([-1.0]))


def test_samples_are_the_choices_and_their_log_likelihood_is_the_pairs_and_the_wheels():
    torch.manual_seed(0)
    distribution = _distribution()
    actions = distribution.sample()
    pairs = {(m, f) for m, f in actions[:, [0, 2]].tolist()}
    assert pairs == set(ORDER_CHOICES)
    assert len(torch.unique(actions[:, 1])) > 0.99 * len(actions)  # the wheel is continuous
    index = choice_index(actions)
    expected = (torch.log_softmax(distribution.choice.logits, 1).gather(1, index[:, None])[:, 0]
                + torch.distributions.Normal(distribution.turn.mean, np.exp(-1.0))
                .log_prob(actions[:, 1]))
    torch.testing.assert_close(distribution.log_prob(actions), expected)
    torch.testing.assert_close(distribution.entropy(),
                               distribution.choice.entropy() + distribution.turn.entropy())


def test_the_mode_is_the_likeliest_pair_and_the_wheels_mean():
    # Logits of (fall back, hold), (fall back, fire), (halt, hold), (halt, fire),
    # (march, hold), (march, fire), then the wheel.
    head = torch.tensor([[0.0, 1.0, 0.5, 3.0, 1.0, 0.0, 0.25],
                         [0.0, 0.0, 0.0, 0.0, 2.0, 0.0, -0.5]])
    expected = torch.tensor([[0.0, 0.25, 1.0], [1.0, -0.5, 0.0]])
    distribution = OrderChoices().proba_distribution(head, torch.tensor([-3.0]))
    torch.testing.assert_close(distribution.mode(), expected)
    torch.testing.assert_close(most_likely_orders(head), expected)


def test_an_order_between_choices_counts_as_the_nearest_pair():
    orders = torch.tensor([[-0.9, 0.0, 0.2], [-0.4, 0.5, 0.6], [0.7, -1.0, 1.3], [1.0, 0.0, 0.0]])
    assert [ORDER_CHOICES[i] for i in choice_index(orders).tolist()] == \
        [(-1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (1.0, 0.0)]
    assert len(ORDER_CHOICES) == len(MOVE_CHOICES) * len(FIRE_CHOICES)


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
    assert {(m, f) for m, f in sampled[:, [0, 2]].tolist()} <= set(ORDER_CHOICES)
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
