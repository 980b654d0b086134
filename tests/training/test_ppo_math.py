"""The one PPO core (training.common.ppo_math): GAE, the clipped loss with per-unit
weights and an auxiliary term, the statistics, and the minibatches."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from training.common.imitation import fit_minibatches
from training.common.ppo_math import (
    AuxiliaryLoss,
    explained_variance,
    gae,
    gradient_step,
    normalize_advantages,
    ppo_loss,
    rollout_diagnostics,
    shuffled_minibatches,
)


def test_gae_matches_a_hand_computed_series_and_stops_at_an_end():
    rewards = torch.tensor([[1.0], [2.0], [0.0]])
    values = torch.tensor([[1.0], [0.5], [0.0]])
    ends = torch.tensor([[False], [True], [False]])
    advantages, returns = gae(rewards, values, ends, torch.tensor([9.0]), 0.9, 0.8)
    # delta_2 = 0 + 0.9 * 9 = 8.1; delta_1 = 2 - 0.5 = 1.5 (ended: no bootstrap, and
    # nothing carried back from step 2); delta_0 = 1 + 0.9 * 0.5 - 1, A_0 = delta_0 + 0.72 * 1.5
    expected = torch.tensor([[0.45 + 0.72 * 1.5], [1.5], [8.1]])
    torch.testing.assert_close(advantages, expected)
    torch.testing.assert_close(returns, expected + values)


def test_gae_keeps_each_series_apart_and_takes_bool_or_float_ends():
    generator = torch.Generator().manual_seed(0)
    rewards, values = torch.randn(6, 3, generator=generator), torch.randn(6, 3, generator=generator)
    ends = torch.rand(6, 3, generator=generator) < 0.3
    last = torch.randn(3, generator=generator)
    together, _ = gae(rewards, values, ends, last, 0.99, 0.95)
    for k in range(3):
        alone, _ = gae(rewards[:, k], values[:, k], ends[:, k], last[k], 0.99, 0.95)
        assert torch.equal(together[:, k], alone)
    as_float, _ = gae(rewards, values, ends.float(), last, 0.99, 0.95)
    assert torch.equal(together, as_float)


def test_normalized_advantages_have_zero_mean_and_unit_spread():
    adv = normalize_advantages(torch.tensor([1.0, 2.0, 3.0, 10.0]))
    assert abs(float(adv.mean())) < 1e-6 and abs(float(adv.std()) - 1) < 1e-5
    assert torch.equal(normalize_advantages(torch.full((3,), 5.0)), torch.zeros(3))


def terms(**changes):
    settings = dict(log_prob=torch.tensor([0.0, 0.5, -0.5]), old_log_prob=torch.zeros(3),
                    advantages=torch.tensor([1.0, 1.0, -1.0]), value=torch.tensor([1.0, 2.0, 3.0]),
                    returns=torch.tensor([1.0, 1.0, 1.0]), entropy=torch.tensor([0.1, 0.2, 0.3]),
                    clip_range=0.2, vf_coef=0.5, ent_coef=0.01)
    settings.update(changes)
    return ppo_loss(**settings)


def test_the_clipped_loss_and_its_statistics_by_hand():
    out = terms()
    ratio = np.exp([0.0, 0.5, -0.5])
    # Sample 1 gains: clipped at 1.2; sample 2 loses with a small ratio: clipped at 0.8.
    surrogate = [ratio[0] * 1.0, 1.2 * 1.0, -0.8]
    assert out.policy.item() == pytest.approx(-np.mean(surrogate))
    assert out.value.item() == pytest.approx((0 + 1 + 4) / 3)
    assert out.entropy.item() == pytest.approx(0.2)
    assert out.total.item() == pytest.approx(-np.mean(surrogate) + 0.5 * 5 / 3 - 0.01 * 0.2)
    assert out.clip_fraction == pytest.approx(2 / 3)
    assert out.approx_kl == pytest.approx(np.mean((ratio - 1) - [0.0, 0.5, -0.5]), rel=1e-6)
    assert set(out.statistics()) == {"policy_loss", "value_loss", "entropy", "total_loss",
                                     "approx_kl", "clip_fraction"}


def test_unchanged_policy_has_no_kl_and_nothing_clipped():
    out = terms(log_prob=torch.zeros(3))
    assert out.approx_kl == 0.0 and out.clip_fraction == 0.0


def test_weights_average_the_ratios_of_the_weighted_units_only():
    log_prob = torch.tensor([[0.1, 0.3], [-0.2, 5.0]])  # unit 1 of sample 1 is not commanded
    weights = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    entropy = torch.tensor([[0.1, 0.2], [0.3, 9.0]])
    weighted = terms(log_prob=log_prob, old_log_prob=torch.zeros(2, 2), entropy=entropy,
                     advantages=torch.tensor([1.0, -1.0]), value=torch.zeros(2),
                     returns=torch.zeros(2), weights=weights)
    ratio = np.exp([0.1, 0.3, -0.2])
    surrogate = [min(ratio[0], 1.2), min(ratio[1], 1.2), -max(ratio[2], 0.8)]
    assert weighted.policy.item() == pytest.approx(-sum(surrogate) / 3)
    assert weighted.entropy.item() == pytest.approx(0.2)
    assert weighted.clip_fraction == pytest.approx(1 / 3)  # the uncommanded 5.0 not counted
    # Changing the uncommanded unit's numbers changes nothing.
    moved = terms(log_prob=log_prob.clone().index_put_((torch.tensor(1), torch.tensor(1)),
                                                       torch.tensor(-3.0)),
                  old_log_prob=torch.zeros(2, 2), entropy=entropy,
                  advantages=torch.tensor([1.0, -1.0]), value=torch.zeros(2),
                  returns=torch.zeros(2), weights=weights)
    assert moved.statistics() == weighted.statistics()


def test_all_ones_weights_give_the_unweighted_loss():
    plain = terms()
    ones = terms(weights=torch.ones(3))
    for name, value in plain.statistics().items():
        assert ones.statistics()[name] == pytest.approx(value, rel=1e-6, abs=1e-7)


def test_the_auxiliary_loss_is_added_with_its_weight_and_reported_by_name():
    mean = torch.tensor([0.5, -0.5], requires_grad=True)
    teacher = AuxiliaryLoss("teacher_loss", (mean ** 2).mean(), 2.0)
    plain, helped = terms(), terms(auxiliary=teacher)
    assert helped.total.item() == pytest.approx(plain.total.item() + 2.0 * 0.25)
    assert helped.statistics()["teacher_loss"] == pytest.approx(0.25)
    helped.total.backward()
    torch.testing.assert_close(mean.grad, 2.0 * 2 * mean.detach() / 2)


def test_a_critic_only_loss_leaves_the_actor_still():
    mean = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)  # stands in for the actor
    value = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)  # and the critic
    full = terms(log_prob=mean * 1.0, value=value * 1.0)
    critic_only = terms(log_prob=mean * 1.0, value=value * 1.0, train_actor=False)
    assert critic_only.total.item() == pytest.approx(0.5 * critic_only.value.item())
    assert critic_only.statistics() | {"total_loss": 0} == full.statistics() | {"total_loss": 0}
    critic_only.total.backward()
    assert mean.grad is None and value.grad is not None and value.grad.abs().sum() > 0
    helped = terms(log_prob=mean * 1.0, value=value * 1.0, train_actor=False,
                   auxiliary=AuxiliaryLoss("teacher_loss", (mean ** 2).sum(), 1.0))
    assert helped.total.item() == pytest.approx(critic_only.total.item())


def test_explained_variance_as_sb3_reports_it():
    returns = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(returns, returns) == 1.0
    assert explained_variance(torch.full((4,), 2.5), returns) == pytest.approx(0.0)
    assert explained_variance(-returns, returns) < 0
    assert math.isnan(explained_variance(returns, torch.ones(4)))


def test_rollout_diagnostics_are_numpy_s_population_statistics():
    values, returns = np.array([[0.5, 1.0], [2.0, 3.5]]), np.array([[1.0, 2.0], [3.0, 4.0]])
    advantages = returns - values
    out = rollout_diagnostics(*(torch.from_numpy(a) for a in (values, advantages, returns)))
    assert out == pytest.approx({
        "explained_variance": 1 - np.var(returns - values) / np.var(returns),
        "advantage_std": np.std(advantages), "return_mean": 2.5, "return_std": np.std(returns)})


def test_gradient_step_clips_the_global_norm():
    weight = torch.nn.Parameter(torch.tensor([0.0, 0.0]))
    optimizer = torch.optim.SGD([weight], lr=1.0)
    gradient_step(optimizer, (weight * torch.tensor([30.0, 40.0])).sum(), [weight], 0.5)
    torch.testing.assert_close(weight.detach(), torch.tensor([-0.3, -0.4]))


@pytest.mark.parametrize("drop_last", [False, True])
def test_minibatches_cover_the_samples_once(drop_last):
    batches = list(shuffled_minibatches(10, 4, torch.Generator().manual_seed(1),
                                        drop_last=drop_last))
    assert [len(b) for b in batches] == ([4, 4] if drop_last else [4, 4, 2])
    seen = torch.cat(batches).tolist()
    assert len(set(seen)) == len(seen) and set(seen) <= set(range(10))


def test_minibatch_orders_come_from_the_generator_given():
    torch_order = torch.cat(list(shuffled_minibatches(8, 3, torch.Generator().manual_seed(5))))
    assert torch.equal(torch_order, torch.randperm(8, generator=torch.Generator().manual_seed(5)))
    numpy_order = torch.cat(list(shuffled_minibatches(8, 3, np.random.default_rng(5))))
    assert numpy_order.tolist() == np.random.default_rng(5).permutation(8).tolist()


def test_fit_minibatches_draws_its_orders_from_an_int_or_a_numpy_generator():
    data = torch.linspace(-1, 1, 12)

    def fit(seed):
        torch.manual_seed(0)
        layer = torch.nn.Linear(1, 1)
        seen = []

        def losses(index):
            seen.append(index.tolist())
            error = ((layer(data[index, None]).squeeze(-1) - 2 * data[index]) ** 2).mean()
            return error, error * 0
        result = fit_minibatches(layer.parameters(), 12, losses, epochs=2, batch_size=5,
                                 learning_rate=0.1, seed=seed)
        return result, seen

    (result, by_torch), (_, again) = fit(3), fit(3)
    assert by_torch == again and math.isfinite(result["action"])
    _, by_numpy = fit(np.random.default_rng(3))
    first = np.random.default_rng(3).permutation(12).tolist()
    assert sum(by_numpy[:3], []) == first and by_numpy != by_torch
