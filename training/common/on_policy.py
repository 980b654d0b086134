"""The on-policy skeleton the project's PPO trainers run on.

:func:`ppo_epochs` is PPO's update loop (epochs, minibatches, the KL stop) for MAPPO,
WFM-1 and :class:`~training.ppo.guided.GuidedPPO`; :class:`OnPolicyTrainer` owns
seeding, the budget, a checkpoint's learner and :meth:`OnPolicyTrainer.learn`, whose
extras are :class:`TrainerHook`\\ s (Stable-Baselines3's ``OnPolicyAlgorithm`` and
``BaseCallback`` in the project's shape).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from training.common.ppo_math import PPOLoss, gradient_step, kl_exceeded, restore_optimizer

logger = logging.getLogger(__name__)

Batch = TypeVar("Batch")


@dataclass
class EpochStatistics:
    """What :func:`ppo_epochs` measured: each minibatch's statistics, in order (the
    minibatch that stopped the update included), and the passes begun."""

    values: dict[str, list[float]] = field(default_factory=dict)
    epochs: int = 0

    def add(self, statistics: dict[str, float]) -> None:
        for name, value in statistics.items():
            self.values.setdefault(name, []).append(value)

    def means(self, names: Iterable[str]) -> dict[str, float]:
        """The mean of each of ``names`` over the minibatches, summed in order (0 for a
        name never measured)."""
        means = {}
        for name in names:
            total = 0.0
            values = self.values.get(name, [])
            for value in values:
                total += value
            means[name] = total / max(len(values), 1)
        return means


def ppo_epochs(n_epochs: int, minibatches: Callable[[], Iterable[Batch]],
               loss: Callable[[Batch], PPOLoss], optimizer: torch.optim.Optimizer,
               parameters: Sequence[nn.Parameter], max_grad_norm: float,
               target_kl: float | None) -> EpochStatistics:
    """PPO's passes over a rollout: for each of ``n_epochs`` passes, each minibatch's
    loss and one gradient step, until a minibatch's approx-KL passes ``target_kl``
    (:func:`~training.common.ppo_math.kl_exceeded`: that minibatch takes no step and
    the update ends).

    Args:
        n_epochs: passes over the rollout.
        minibatches: returns one pass's minibatches (called once per pass).
        loss: one minibatch's :class:`~training.common.ppo_math.PPOLoss`.
        optimizer: the learner's optimiser.
        parameters: the parameters whose gradients are clipped.
        max_grad_norm: the global norm the gradients are clipped to.
        target_kl: the early stop's threshold, or None: every pass runs.

    Returns:
        Every minibatch's statistics and the passes begun.
    """
    statistics = EpochStatistics()
    for _ in range(n_epochs):
        statistics.epochs += 1
        for batch in minibatches():
            terms = loss(batch)
            statistics.add(terms.statistics())
            if kl_exceeded(terms.approx_kl, target_kl):
                return statistics
            gradient_step(optimizer, terms.total, parameters, max_grad_norm)
    return statistics


def steps_to_learn(total_timesteps: int, trained: int, rollout_steps: int, *,
                   after_warm_start: bool = False) -> int:
    """The env-steps a run still learns: whole rollouts until ``trained`` reaches
    ``total_timesteps`` (the last rollout may pass it: the log says so), and one rollout
    at least ``after_warm_start``, so that a warm start is always followed by PPO."""
    left = max(total_timesteps - trained, 1 if after_warm_start else 0)
    steps = -(-left // rollout_steps) * rollout_steps
    if steps != left:
        logger.info("total_timesteps=%d rounded up to whole rollouts of %d env-steps: "
                    "training to step %d", total_timesteps, rollout_steps, trained + steps)
    return steps


class TrainerHook:
    """Something hung on :meth:`OnPolicyTrainer.learn`; override what you need.

    Hooks run in the order given, so a hook sees the metrics added by those before it.
    """

    def on_training_start(self, trainer: Any, metrics: dict[str, Any]) -> None:
        """Before the first rollout (after the warm start or the resume); add to
        ``metrics`` to have them logged as the run's first row."""

    def on_update_end(self, trainer: Any, metrics: dict[str, Any]) -> None:
        """After each rollout and update; add to ``metrics`` to have them logged."""

    def on_training_end(self, trainer: Any) -> None:
        """After the last update."""

    def on_close(self, trainer: Any) -> None:
        """When :meth:`OnPolicyTrainer.learn` returns or fails: release what the hook
        opened."""


class OnPolicyTrainer:
    """The base of the project's PPO trainers: a policy, its optimiser, the run's
    generators, the step counters and the loop.

    A subclass builds ``policy`` and ``optimizer`` and implements
    :meth:`collect_rollout` and :meth:`learn_from` (which advances ``total_steps`` by
    ``rollout_steps``); :meth:`learn` runs them until the budget is trained.

    Attributes:
        config: the run's settings (``seed``, ``total_timesteps``, ``learning_rate``).
        rng: the run's NumPy generator.
        total_steps: env-steps trained so far (any warm start included).
        rollout_steps: env-steps one rollout adds.
        history: the metrics of every row :meth:`learn` logged.
    """

    config: Any
    policy: nn.Module
    optimizer: torch.optim.Optimizer
    rollout_steps: int
    total_steps: int = 0

    def seed(self, seed: int) -> None:
        """The run's generators: ``rng`` (NumPy) and torch's global one."""
        self.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)

    # --- the budget ---------------------------------------------------------------------

    def budget_spent(self) -> bool:
        """Whether ``total_timesteps`` is trained: a run trains whole rollouts until
        ``total_steps >= total_timesteps``, so the last one may pass the budget."""
        return self.total_steps >= self.config.total_timesteps


    # --- the loop -----------------------------------------------------------------------

    def collect_rollout(self) -> Any:
        """One rollout of every training battle, the learner sampling from its policy."""
        raise NotImplementedError

    def learn_from(self, rollout: Any) -> dict[str, Any]:
        """The PPO update on ``rollout``; advances ``total_steps``; its metrics."""
        raise NotImplementedError

    def default_hooks(self) -> list[TrainerHook]:
        """The hooks :meth:`learn` runs when given none."""
        return []

    def close(self) -> None:
        """Release what the trainer started (workers); called when :meth:`learn` ends."""

    def learn(self, hooks: Sequence[TrainerHook] | None = None) -> OnPolicyTrainer:
        """Rollouts and updates until ``total_timesteps`` is trained, calling ``hooks``
        (None: :meth:`default_hooks`) around them; returns the trainer."""
        hooks = self.default_hooks() if hooks is None else list(hooks)
        try:
            # Whole rollouts until the budget is reached (budget_spent); this logs when the
            # last one passes it.
            steps_to_learn(self.config.total_timesteps, self.total_steps, self.rollout_steps)
            first: dict[str, Any] = {}
            for hook in hooks:
                hook.on_training_start(self, first)
            if first:
                self.history.append(first)
            while not self.budget_spent():
                started = time.perf_counter()
                rollout = self.collect_rollout()
                collected = time.perf_counter()
                metrics = self.learn_from(rollout)
                metrics["time/fps"] = self.rollout_steps / (time.perf_counter() - started)
                metrics["time/rollout_fps"] = self.rollout_steps / (collected - started)
                for hook in hooks:
                    hook.on_update_end(self, metrics)
                self.history.append(metrics)
            for hook in hooks:
                hook.on_training_end(self)
        finally:
            for hook in hooks:
                hook.on_close(self)
            self.close()
        return self

    # --- checkpoints ----------------------------------------------------------------------

    def restore_learner(self, saved: Any, resume: str | Path) -> None:
        """Load a checkpoint's learner: the policy's weights (refused when the
        checkpoint's policy was built with other arguments), the optimiser at this run's
        learning rate, and the NumPy and torch generators."""
        if saved.kwargs != self.policy.kwargs:
            raise ValueError(f"resume={str(resume)!r} holds a policy built with "
                             f"{saved.kwargs}, but this config builds {self.policy.kwargs}")
        self.policy.load_state_dict(saved.weights)
        restore_optimizer(self.optimizer, saved.optimizer, self.config.learning_rate)
        self.rng.bit_generator.state = saved.rng["numpy"]
        torch.set_rng_state(saved.rng["torch"])


__all__ = ["EpochStatistics", "OnPolicyTrainer", "TrainerHook", "ppo_epochs", "steps_to_learn"]
