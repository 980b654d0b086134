"""GuidedPPO: Stable-Baselines3's PPO, updated by the project's PPO core, with a teacher.

:func:`training.train.train` returns one: everything SB3's ``PPO`` offers works as for
``PPO``. Its update is :func:`training.common.on_policy.ppo_epochs` over
:mod:`training.common.ppo_math`'s loss, and with a ``teacher`` (any object with
``predict(obs, deterministic)``) each minibatch adds a behaviour-cloning pull toward the
teacher's orders on the learner's own states, its weight falling linearly from
``teacher_coef`` to 0 over ``teacher_decay_steps`` env-steps. The teacher is not saved
with the model; a resumed run attaches it again. ``docs/training.md`` ("Fine-tuning after
imitation") explains the pull and the diagnostics each update logs.
"""


from __future__ import annotations

from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO

from envs.sim.validation import check_int, check_non_negative
from training.common.imitation import order_loss
from training.common.on_policy import ppo_epochs
from training.common.ppo_math import (
    AuxiliaryLoss,
    PPOLoss,
    normalize_advantages,
    ppo_loss,
    rollout_diagnostics,
)
from training.common.schedule import linear_decay


class GuidedPPO(PPO):
    """PPO (Stable-Baselines3) whose update is :mod:`training.common.ppo_math`'s, with an
    optional decaying behaviour-cloning pull toward a teacher.

    Args:
        *args: as for :class:`stable_baselines3.PPO`.
        **kwargs: as for :class:`stable_baselines3.PPO` (``clip_range_vf`` must stay
            None: the core clips the policy's ratio, not the values).
        teacher: an object with ``predict(obs, deterministic) -> (actions, state)`` that
            takes an (n, obs_dim) batch; None: plain PPO.
        teacher_coef: the pull's weight at the first update (>= 0; 0: none).
        teacher_decay_steps: env-steps, from the first update, over which the weight
            falls linearly to 0 (>= 1).

    Raises:
        ValueError: if ``teacher_coef`` or ``teacher_decay_steps`` is out of range, or
            ``clip_range_vf`` is set.
    """

    def __init__(self, *args: Any, teacher: Any = None, teacher_coef: float = 0.0,
                 teacher_decay_steps: int = 1, **kwargs: Any) -> None:
        if kwargs.get("clip_range_vf") is not None:
            raise ValueError(f"clip_range_vf={kwargs['clip_range_vf']!r} is invalid: "
                             "GuidedPPO does not clip values (expected None)")
        self.teacher_coef = check_non_negative("teacher_coef", teacher_coef)
        self.teacher_decay_steps = check_int("teacher_decay_steps", teacher_decay_steps,
                                             minimum=1)
        if teacher is not None and not callable(getattr(teacher, "predict", None)):
            raise ValueError("teacher is invalid: expected None or an object with "
                             "predict(obs, deterministic)")
        self.teacher = teacher
        self.teacher_start: int | None = None  # the step of the first update
        super().__init__(*args, **kwargs)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "teacher"]

    def current_teacher_coef(self) -> float:
        """The teacher term's weight now: ``teacher_coef`` at the first update (step
        ``teacher_start``), falling linearly to 0 over ``teacher_decay_steps`` env-steps
        (0 without a teacher)."""
        if self.teacher is None or self.teacher_coef == 0.0:
            return 0.0
        start = self.num_timesteps if self.teacher_start is None else self.teacher_start
        return linear_decay(self.teacher_coef, self.num_timesteps - start,
                            self.teacher_decay_steps)

    def _teacher_loss(self, observations: torch.Tensor) -> torch.Tensor:
        orders = self.teacher.predict(observations.cpu().numpy(), deterministic=True)[0]
        return order_loss(self.policy, observations,
                          torch.as_tensor(np.asarray(orders), device=observations.device))

    def train(self) -> None:
        """One PPO update on the rollout buffer (the SB3 hook ``learn`` calls)."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = float(self.clip_range(self._current_progress_remaining))
        if self.teacher_start is None:  # the teacher's decay counts from the first update
            self.teacher_start = self.num_timesteps
        coef = self.current_teacher_coef()

        def loss(batch: Any) -> PPOLoss:
            values, log_prob, entropy = self.policy.evaluate_actions(batch.observations,
                                                                      batch.actions)
            advantages = batch.advantages
            if self.normalize_advantage and len(advantages) > 1:
                advantages = normalize_advantages(advantages)
            auxiliary = None
            if coef > 0.0:
                auxiliary = AuxiliaryLoss("teacher_loss",
                                          self._teacher_loss(batch.observations), coef)
            return ppo_loss(log_prob, batch.old_log_prob, advantages, values.flatten(),
                            batch.returns, entropy, clip_range=clip_range,
                            vf_coef=self.vf_coef, ent_coef=self.ent_coef, auxiliary=auxiliary)

        statistics = ppo_epochs(self.n_epochs, lambda: self.rollout_buffer.get(self.batch_size),
                                loss, self.policy.optimizer, list(self.policy.parameters()),
                                self.max_grad_norm, self.target_kl)
        self._n_updates += statistics.epochs
        self._record(statistics.values, clip_range, coef)

    def _record(self, stats: dict[str, list[float]], clip_range: float, coef: float) -> None:
        buffer = self.rollout_buffer
        mean = {key: float(np.mean(values)) for key, values in stats.items()}
        record = self.logger.record
        # SB3's names, so its console table, TensorBoard and the plots read the same.
        record("train/entropy_loss", -mean["entropy"])
        record("train/policy_gradient_loss", mean["policy_loss"])
        record("train/value_loss", mean["value_loss"])
        record("train/approx_kl", mean["approx_kl"])
        record("train/clip_fraction", mean["clip_fraction"])
        record("train/loss", stats["total_loss"][-1])
        record("train/std", torch.exp(self.policy.log_std).mean().item())
        for name, value in rollout_diagnostics(torch.from_numpy(buffer.values),
                                               torch.from_numpy(buffer.advantages),
                                               torch.from_numpy(buffer.returns)).items():
            record(f"train/{name}", value)
        if "teacher_loss" in mean:
            record("train/teacher_loss", mean["teacher_loss"])
        record("train/teacher_coef", coef)
        record("train/n_updates", self._n_updates, exclude="tensorboard")
        record("train/clip_range", clip_range)


__all__ = ["GuidedPPO"]
