"""The one home of PPO's maths: advantages, losses, statistics and minibatches.

MAPPO, WFM-1 and :class:`~training.ppo.guided.GuidedPPO` take every formula of their
update from here (:func:`training.common.on_policy.ppo_epochs` runs it), and the warm
starts' behaviour cloning its minibatches:

- :func:`gae` and :func:`normalize_advantages`: advantages;
- :func:`ppo_loss` (with an optional :class:`AuxiliaryLoss`) and :func:`gradient_step`;
- :func:`rollout_diagnostics`, :func:`explained_variance`: what every learner logs;
- :func:`kl_exceeded`, :func:`shuffled_minibatches`: the update's passes.
"""


from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn


def gae(rewards: torch.Tensor, values: torch.Tensor, ends: torch.Tensor,
        last_values: torch.Tensor, gamma: float,
        gae_lambda: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over ``T`` steps of independent series.

    Parameters:
        rewards: (T, ...) the reward after each step.
        values: (T, ...) the value before each step.
        ends: (T, ...) true (or 1.0) where a series' episode ended at that step: its
            return stops there (no bootstrap, no advantage carried back across it).
        last_values: (...) the values after the last step (the bootstrap).
        gamma: the discount per step.
        gae_lambda: GAE's lambda (0: one-step TD; 1: Monte Carlo returns).

    Returns:
        ``(advantages, returns)``, (T, ...) each; returns are advantages plus values.
    """
    ends = ends.to(values.dtype)
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(last_values)
    next_value = last_values
    for t in reversed(range(len(rewards))):
        alive = 1.0 - ends[t]
        delta = rewards[t] + gamma * next_value * alive - values[t]
        running = delta + gamma * gae_lambda * alive * running
        advantages[t] = running
        next_value = values[t]
    return advantages, advantages + values


def normalize_advantages(advantages: torch.Tensor) -> torch.Tensor:
    """``advantages`` shifted to mean 0 and scaled to standard deviation 1 (a constant
    batch stays at 0)."""
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


@dataclass(frozen=True)
class AuxiliaryLoss:
    """A loss added to PPO's, toward a reference policy: the slot for a teacher.

    :func:`ppo_loss` adds ``coef * loss`` last, and reports ``loss`` under ``name``.
    WFM-1's ``teacher_loss`` (the squared error between each own unit's action mean and
    the doctrine's order, :func:`models.wfm1.own_action_error`) fills it today; a KL
    divergence or a behaviour-cloning error toward any frozen teacher's actions fits the
    same slot, for any learner that calls :func:`ppo_loss`.

    Attributes:
        name: the statistic's name, e.g. ``"teacher_loss"``.
        loss: the scalar loss, differentiable in the policy's parameters.
        coef: its weight in the total (added even at 0, so the total keeps its form).
    """

    name: str
    loss: torch.Tensor
    coef: float


@dataclass(frozen=True)
class PPOLoss:
    """The terms of one minibatch's PPO loss, and its statistics.

    Attributes:
        total: what to minimise: ``policy + vf_coef * value - ent_coef * entropy``
            (``+ coef * auxiliary.loss`` with an auxiliary loss).
        policy: the clipped surrogate, negated.
        value: the mean squared error of the values to the returns.
        entropy: the mean entropy of the action distributions.
        approx_kl: the estimate ``E[(r - 1) - log r]`` of KL(old || new) (r: ratio).
        clip_fraction: the share of ratios outside ``1 +- clip_range``.
        auxiliary: the auxiliary loss given, if any.
    """

    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor
    approx_kl: float
    clip_fraction: float
    auxiliary: AuxiliaryLoss | None = None

    def statistics(self) -> dict[str, float]:
        """``policy_loss``, ``value_loss``, ``entropy``, ``total_loss``, ``approx_kl``,
        ``clip_fraction`` and the auxiliary loss under its name, as numbers."""
        stats = {"policy_loss": self.policy.item(), "value_loss": self.value.item(),
                 "entropy": self.entropy.item(), "total_loss": self.total.item(),
                 "approx_kl": self.approx_kl, "clip_fraction": self.clip_fraction}
        if self.auxiliary is not None:
            stats[self.auxiliary.name] = self.auxiliary.loss.item()
        return stats


def ppo_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
             value: torch.Tensor, returns: torch.Tensor, entropy: torch.Tensor, *,
             clip_range: float, vf_coef: float, ent_coef: float,
             weights: torch.Tensor | None = None,
             auxiliary: AuxiliaryLoss | None = None, train_actor: bool = True) -> PPOLoss:
    """PPO's clipped loss on one minibatch.

    Parameters:
        log_prob: log-probabilities of the actions taken under the policy now: (n,), or
            (n, U) for ``U`` ratios per sample.
        old_log_prob: the same when they were sampled.
        advantages: (n,) one advantage per sample, shared by its ``U`` ratios.
        value: (n,) the critic's values now.
        returns: (n,) their targets.
        entropy: the action distributions' entropies, shaped like ``log_prob``.
        clip_range: how far the ratio may move from 1.
        vf_coef: the weight of the value loss.
        ent_coef: the weight of the entropy bonus.
        weights: shaped like ``log_prob``, the weight of each ratio (WFM-1: 1 for the
            units a side commands, 0 for the rest); the policy loss, the entropy and the
            statistics are then weighted means over them. None: plain means.
        auxiliary: a loss toward a reference policy added last (:class:`AuxiliaryLoss`).
        train_actor: False: the total is the critic's term alone (``vf_coef * value``),
            so a gradient step moves the critic and leaves the actor as it is (a critic
            warm-up); the other terms are still computed for the statistics.

    Returns:
        The terms and statistics (:class:`PPOLoss`).
    """
    log_ratio = log_prob - old_log_prob
    ratio = log_ratio.exp()
    adv = advantages.reshape(advantages.shape + (1,) * (ratio.dim() - advantages.dim()))
    clipped = ratio.clamp(1 - clip_range, 1 + clip_range)
    surrogate = torch.min(ratio * adv, clipped * adv)
    if weights is None:
        policy_loss = -surrogate.mean()
    else:
        total_weight = weights.sum().clamp(min=1.0)
        policy_loss = -(surrogate * weights).sum() / total_weight
    value_loss = (value - returns).pow(2).mean()
    entropy_mean = entropy.mean() if weights is None else (entropy * weights).sum() / total_weight
    if train_actor:
        loss = policy_loss + vf_coef * value_loss - ent_coef * entropy_mean
        if auxiliary is not None:
            loss = loss + auxiliary.coef * auxiliary.loss
    else:
        loss = vf_coef * value_loss
    with torch.no_grad():
        outside = ((ratio - 1).abs() > clip_range).float()
        if weights is None:
            approx_kl = float(((ratio - 1) - log_ratio).mean())
            clip_fraction = float(outside.mean())
        else:
            approx_kl = float(((ratio - 1) * weights - log_ratio * weights).sum() / total_weight)
            clip_fraction = float((outside * weights).sum() / total_weight)
    return PPOLoss(loss, policy_loss, value_loss, entropy_mean, approx_kl, clip_fraction,
                   auxiliary)


def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> float:
    """``1 - Var(returns - values) / Var(returns)``: 1 for a critic that predicts the
    returns, 0 for one no better than their mean, negative for worse (NaN when the
    returns do not vary), as Stable-Baselines3 reports it."""
    spread = float(returns.var(unbiased=False))
    if spread == 0:
        return float("nan")
    return 1.0 - float((returns - values).var(unbiased=False)) / spread


def rollout_diagnostics(values: torch.Tensor, advantages: torch.Tensor,
                        returns: torch.Tensor) -> dict[str, float]:
    """What a learner logs of the rollout an update starts from (the samples it learns
    from, any shape): ``explained_variance`` of the critic, ``advantage_std`` (before
    normalisation), ``return_mean`` and ``return_std`` (spreads over the samples, as
    NumPy's ``std``)."""
    return {"explained_variance": explained_variance(values, returns),
            "advantage_std": float(advantages.std(unbiased=False)),
            "return_mean": float(returns.mean()),
            "return_std": float(returns.std(unbiased=False))}


def gradient_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                  parameters: Iterable[nn.Parameter], max_grad_norm: float) -> None:
    """One optimiser step on ``loss``, the gradients of ``parameters`` clipped to the
    global norm ``max_grad_norm``."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(parameters, max_grad_norm)
    optimizer.step()


def restore_optimizer(optimizer: torch.optim.Optimizer, state: dict[str, Any],
                      learning_rate: float) -> None:
    """Load a resumed run's optimiser ``state`` (Adam's moments and step counts) into
    ``optimizer``, at the run's ``learning_rate``: the state carries the step size of the
    run that saved it, and a run resumed with another ``learning_rate`` must step with
    the one it was given."""
    optimizer.load_state_dict(state)
    for group in optimizer.param_groups:
        group["lr"] = learning_rate


def kl_exceeded(approx_kl: float, target_kl: float | None) -> bool:
    """Whether an update stops before this minibatch's gradient step: its approx-KL from
    the rollout's policy is above ``1.5 * target_kl`` (Stable-Baselines3's rule; never
    when ``target_kl`` is None)."""
    return target_kl is not None and approx_kl > 1.5 * target_kl


def shuffled_minibatches(n: int, batch_size: int,
                         generator: torch.Generator | np.random.Generator, *,
                         drop_last: bool = False,
                         device: torch.device | str | None = None) -> Iterator[torch.Tensor]:
    """One pass over ``n`` samples: the positions of each minibatch, in a new order.

    Parameters:
        n: the number of samples.
        batch_size: samples per minibatch.
        generator: draws the order: a :class:`torch.Generator` (``torch.randperm``) or a
            :class:`numpy.random.Generator` (its ``permutation``); one draw per pass.
        drop_last: leave out a last minibatch smaller than ``batch_size``.
        device: where the positions go (the samples' device); None: the CPU.

    Yields:
        (m,) int64 positions, ``m == batch_size`` but perhaps for the last.
    """
    if isinstance(generator, np.random.Generator):
        order = torch.as_tensor(generator.permutation(n), device=device)
    else:
        order = torch.randperm(n, generator=generator)
        if device is not None:
            order = order.to(device)
    stop = n - batch_size + 1 if drop_last else n
    for start in range(0, stop, batch_size):
        yield order[start:start + batch_size]


__all__ = ["AuxiliaryLoss", "PPOLoss", "explained_variance", "gae", "gradient_step",
           "kl_exceeded", "normalize_advantages", "ppo_loss", "restore_optimizer",
           "rollout_diagnostics", "shuffled_minibatches"]
