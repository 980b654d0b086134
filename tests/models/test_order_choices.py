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
    READINESS_FEATURE,
    VOLLEY_READINESS,
    OrderChoices,
    VolleyChoices,
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


def _model(seed: int = 0, orders: str = "choices") -> PPO:
    return PPO(BattalionMlpPolicy, BattalionVecEnv(4, max_steps=50), n_steps=16, batch_size=32,
               n_epochs=2, device="cpu", seed=seed,
               policy_kwargs={"orders": orders, "normalize_observations": True})


def _readiness(values) -> torch.Tensor:
    observation = torch.zeros(len(values), 25)
    observation[:, READINESS_FEATURE] = torch.tensor(values)
    return observation


def test_volleys_bar_fire_until_the_battalion_is_loaded():
    readiness = [0.05, 0.5, VOLLEY_READINESS - 1e-3, VOLLEY_READINESS, 1.0] * 800
    distribution = VolleyChoices()
    distribution.observation = _readiness(readiness)
    head = torch.zeros(len(readiness), HEAD_SIZE)  # every pair as likely
    distribution.proba_distribution(head, torch.tensor([-1.0]))
    fired = distribution.sample()[:, 2] > 0.5
    loaded = torch.tensor(readiness) >= VOLLEY_READINESS
    assert not fired[~loaded].any()
    assert 0.4 < fired[loaded].float().mean() < 0.6
    # A barred pair has no probability; the others share it, so log-likelihoods stay finite.
    held = torch.tensor([[1.0, 0.0, 0.0]]).expand(len(readiness), 3)
    log_prob = distribution.log_prob(held) - distribution.turn.log_prob(held[:, 1])
    torch.testing.assert_close(log_prob[~loaded], torch.full((int((~loaded).sum()),),
                                                             float(np.log(1 / 3))))
    torch.testing.assert_close(log_prob[loaded], torch.full((int(loaded.sum()),),
                                                            float(np.log(1 / 6))))
    with pytest.raises(RuntimeError, match="needs the observation"):
        VolleyChoices().proba_distribution(head, torch.tensor([-1.0]))


def test_a_teachers_fire_while_unloaded_is_imitated_as_holding():
    distribution = VolleyChoices()
    distribution.observation = _readiness([0.1, 0.1, 1.0])
    head = torch.randn(3, HEAD_SIZE, generator=torch.Generator().manual_seed(0))
    distribution.proba_distribution(head, torch.tensor([-1.0]))
    fire = torch.tensor([[1.0, 0.2, 1.0], [0.0, 0.2, 1.0], [1.0, 0.2, 1.0]])
    hold = fire.clone()
    hold[:2, 2] = 0.0  # the unloaded ones hold; the loaded one still fires
    loss = distribution.imitation_loss(fire)
    assert torch.isfinite(loss)
    torch.testing.assert_close(loss, distribution.imitation_loss(hold))
    torch.testing.assert_close(loss, OrderChoices.imitation_loss(distribution, hold))


def test_a_policy_of_volleys_never_fires_unloaded_in_a_battle_and_survives_a_checkpoint(
        tmp_path):
    model = _model(orders="volleys")
    model.learn(64)
    env = BattalionVecEnv(16, max_steps=60, map_width=300.0, map_height=300.0)  # in range
    env.seed(3)
    observation = env.reset()
    fired_loaded = reloading = 0
    for _ in range(60):
        orders = model.predict(observation, deterministic=False)[0]
        fires = orders[:, 2] > 0.5
        assert (observation[fires, READINESS_FEATURE] >= VOLLEY_READINESS).all()
        fired_loaded += int(fires.sum())
        reloading += int((observation[:, READINESS_FEATURE] < VOLLEY_READINESS).sum())
        observation = env.step(orders)[0]
    assert fired_loaded > 0 and reloading > 100
    loaded = load_ppo(save_ppo(model, tmp_path / "volleys"))
    assert isinstance(loaded.policy.action_dist, VolleyChoices)
    probe = _readiness(np.linspace(0, 1, 200).tolist()).numpy()
    np.testing.assert_array_equal(loaded.predict(probe, deterministic=True)[0],
                                  model.predict(probe, deterministic=True)[0])


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
