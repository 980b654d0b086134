"""MAPPO's maths checked directly: GAE on a hand-computed case, the truncation
bootstrap, the first PPO minibatch, the loss going down; and the learning side
chosen per battle."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from envs.battles.multi_battalion_batch import BLUE, RED
from envs.battles.multi_observation import CRITIC_STATE_DIM, OBS_DIM
from envs.sim.constants import ACTION_DIM
from models.mappo_policy import MAPPOPolicy
from training.mappo.config import MAPPOConfig
from training.mappo.rollout import Rollout, TrainingBattles, collect
from training.mappo.update import advantages_and_returns, update


def hand_rollout() -> Rollout:
    """One battle, two battalions, three steps: battalion 0 is beaten at step 1,
    battalion 1 is cut off by the clock at step 2 (its bootstrap already in its reward)."""
    values = torch.tensor([[[1.0, 2.0]], [[0.5, 1.5]], [[0.0, 1.0]]])
    rewards = np.array([[[1.0, 0.0]], [[2.0, 0.5]], [[0.0, 3.0]]], np.float32)
    dones = np.array([[[0, 0]], [[1, 0]], [[0, 1]]], np.float32)
    shape = (3, 1, 2)
    return Rollout(torch.zeros(shape + (OBS_DIM,)), torch.zeros(shape + (CRITIC_STATE_DIM,)),
                   torch.zeros(shape + (ACTION_DIM,)), torch.zeros(shape), values, rewards,
                   dones, np.ones(shape, bool), np.array([[9.0, 9.0]], np.float32), [], [], [], [],
                   [], [])


def test_advantages_and_returns_match_a_hand_computed_case():
    advantages, returns = advantages_and_returns(hand_rollout(), gamma=0.9, gae_lambda=0.8)
    # Battalion 0: delta_2 = 0 + 0.9 * 9 - 0 = 8.1 (the steps after its end are not
    # samples, but the recursion must stop at its end); delta_1 = 2 - 0.5 = 1.5 (done:
    # no bootstrap); delta_0 = 1 + 0.9 * 0.5 - 1 = 0.45, A_0 = 0.45 + 0.72 * 1.5.
    # Battalion 1: delta_2 = 3 - 1 = 2 (done); delta_1 = 0.5 + 0.9 * 1 - 1.5 = -0.1,
    # A_1 = -0.1 + 0.72 * 2; delta_0 = 0.9 * 1.5 - 2 = -0.65, A_0 = -0.65 + 0.72 * 1.34.
    expected = np.array([[[1.53, -0.65 + 0.72 * 1.34]], [[1.5, 1.34]], [[8.1, 2.0]]])
    np.testing.assert_allclose(advantages, expected, rtol=1e-6)
    values = np.array([[[1.0, 2.0]], [[0.5, 1.5]], [[0.0, 1.0]]])
    np.testing.assert_allclose(returns, expected + values, rtol=1e-6)


def battles_and_policy(**changes) -> tuple[MAPPOConfig, TrainingBattles, MAPPOPolicy]:
    # Scripted Red in every battle unless a test deals the doctrine some.
    settings = dict(n_envs=8, n_steps=5, max_steps=5, n_epochs=1, enable_wandb=False,
                    doctrine_share=0.0)
    settings.update(changes)
    config = MAPPOConfig(**settings)
    torch.manual_seed(0)
    battles = TrainingBattles(config, config.n_blue, config.n_red, np.random.default_rng(0))
    policy = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=2)
    return config, battles, policy


@pytest.mark.parametrize("gamma", [0.5, 0.99])
def test_truncated_battalions_get_the_discounted_value_of_where_they_stood(gamma):
    rollouts = {}
    for g in (0.0, gamma):
        _, battles, policy = battles_and_policy()
        torch.manual_seed(1)
        rollouts[g] = collect(policy, battles, 5, g)
    plain, bootstrapped = rollouts[0.0], rollouts[gamma]
    # The same play (the same seeds): only the last step's reward differs, by gamma * V.
    torch.testing.assert_close(plain.actions, bootstrapped.actions)
    np.testing.assert_array_equal(plain.rewards[:4], bootstrapped.rewards[:4])
    cut_off = bootstrapped.dones[4].astype(bool) & plain.valid[4]
    assert cut_off.any()
    assert bootstrapped.dones[:4].sum() == plain.dones[:4].sum()
    bonus = bootstrapped.rewards[4] - plain.rewards[4]
    assert np.all(bonus[~plain.valid[4]] == 0)
    assert np.abs(bonus[cut_off]).min() > 0
    # Divided by gamma, the bonus is the critic's value of the final state: the same
    # whatever gamma is.
    _, battles, policy = battles_and_policy()
    torch.manual_seed(1)
    other = collect(policy, battles, 5, 0.9)
    np.testing.assert_allclose(bonus[cut_off] / gamma,
                               (other.rewards[4] - plain.rewards[4])[cut_off] / 0.9, rtol=1e-4)


def test_first_ppo_minibatch_has_ratio_one_and_nothing_clipped():
    config, battles, policy = battles_and_policy(n_minibatches=1)
    rollout = collect(policy, battles, 5, config.gamma)
    advantages, returns = advantages_and_returns(rollout, config.gamma, config.gae_lambda)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    metrics = update(policy, optimizer, rollout, advantages, returns, config,
                     torch.Generator().manual_seed(0))
    assert metrics["train/clip_fraction"] == 0.0
    assert abs(metrics["train/approx_kl"]) < 1e-7
    # The weights moved: the second pass over the same samples is off-policy.
    again = update(policy, optimizer, rollout, advantages, returns, config,
                   torch.Generator().manual_seed(0))
    assert again["train/approx_kl"] > 0


def test_a_few_updates_lower_the_loss_on_a_fixed_batch():
    config, battles, policy = battles_and_policy(n_minibatches=1, n_steps=30, max_steps=30)
    rollout = collect(policy, battles, 30, config.gamma)
    advantages, returns = advantages_and_returns(rollout, config.gamma, config.gae_lambda)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-4)
    losses = [update(policy, optimizer, rollout, advantages, returns, config,
                     torch.Generator().manual_seed(0)) for _ in range(10)]
    policy_losses = [m["train/policy_loss"] for m in losses]
    value_losses = [m["train/value_loss"] for m in losses]
    # The clipped surrogate is maximised step after step; the critic's error falls
    # (noisily: the returns are small) well below where it started.
    assert all(b < a for a, b in zip(policy_losses, policy_losses[1:], strict=False))
    assert max(value_losses[-3:]) < 0.6 * value_losses[0]


def test_the_learner_plays_the_side_it_is_given_in_each_battle():
    config, battles, policy = battles_and_policy(n_blue=2, n_red=1, n_steps=1)
    red_battles = np.array([1, 4, 6])
    battles.set_learning_side(RED, red_battles)
    blue_battles = np.setdiff1d(np.arange(8), red_battles)
    assert battles.n_slots == 2
    before = battles.batch.observation.copy()
    scripted = battles.batch.scripted_actions(np.arange(3), config.red_level)
    rollout = collect(policy, battles, 1, config.gamma)
    observed = rollout.obs[0].numpy()
    # Blue battles: both Blue battalions; Red battles: Red's one battalion, slot 1 empty.
    np.testing.assert_array_equal(observed[blue_battles], before[blue_battles][:, :2])
    np.testing.assert_array_equal(observed[red_battles, 0], before[red_battles, 2])
    assert not rollout.valid[0, red_battles, 1].any()
    assert rollout.valid[0, blue_battles].all()
    # The learner's orders went to its own battalions, the script's to the others.
    orders, actions = battles.orders, rollout.actions[0].numpy()
    np.testing.assert_array_equal(orders[red_battles, 2], actions[red_battles, 0])
    np.testing.assert_array_equal(orders[red_battles, :2], scripted[red_battles, :2])
    np.testing.assert_array_equal(orders[blue_battles, :2], actions[blue_battles])
    np.testing.assert_array_equal(orders[blue_battles, 2], scripted[blue_battles, 2])


def test_learning_side_is_checked_and_kept_through_a_battle_swap():
    _, battles, _ = battles_and_policy()
    with pytest.raises(ValueError, match="side=2"):
        battles.set_learning_side(2)
    battles.set_learning_side(RED, np.array([0]))
    assert battles.learner_side.tolist() == [RED] + [BLUE] * 7
    battles.set_learning_side(BLUE)
    assert battles.all_blue and battles.n_slots == battles.n_blue


def red_orders(battles, noise):
    """Red's orders as :meth:`TrainingBattles.set_red_orders` writes them this step."""
    battles.set_red_orders(noise)
    return battles.orders[:, battles.red_units].copy()


def test_dealt_opponents_sample_or_act_on_their_mean_as_dealt():
    from training.mappo.battles import team_actions

    _, battles, policy = battles_and_policy()
    opponent = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=2)
    red = battles.batch.observation[:, battles.red_units]
    battles.deal([opponent], 0.0, deterministic=True)
    mean = team_actions(opponent, red, deterministic=True)
    noise = battles.batch.action_noise()
    assert np.array_equal(red_orders(battles, noise), mean)
    battles.deal([opponent], 0.0)
    sampled = red_orders(battles, noise)
    assert not np.allclose(sampled, mean)
    std = opponent.get_actor(0).log_std.exp().detach().numpy()
    assert np.allclose(sampled, mean + std * noise[:, battles.red_units], atol=1e-6)


def test_the_doctrine_commands_red_in_its_share_of_the_battles_and_is_never_dealt_over():
    from training.mappo.battles import team_actions

    _, battles, _ = battles_and_policy(doctrine_share=0.25)
    assert battles.doctrine_battles.tolist() == [6, 7]
    red = battles.batch.observation[:, battles.red_units]
    noise = battles.batch.action_noise()
    orders = red_orders(battles, noise)
    scripted = battles.batch.scripted_actions(battles.red_units, battles.config.red_level)
    doctrine = team_actions(battles.doctrine, red, deterministic=True)
    assert np.array_equal(orders[6:], doctrine[6:])
    assert np.array_equal(orders[:6], scripted[:6])
    assert not np.array_equal(doctrine[6:], scripted[6:])  # the test can tell them apart
    opponent = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=2)
    battles.deal([opponent], 0.0)  # every battle the doctrine leaves
    assert [b.tolist() for _, b in battles.opponents] == [list(range(6))]
    # A part (a worker's share of the battles) keeps the doctrine's battles, renumbered.
    parts = battles.split(3)
    assert [p.doctrine_battles.tolist() for p in parts] == [[], [], [0, 1]]
    assert [len(p.opponents) for p in parts] == [1, 1, 0]
