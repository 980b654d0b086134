"""Training a brigade or division commander with SB3 PPO over frozen lower echelons.

What :mod:`training.echelons.brigade` and :mod:`training.echelons.division` share (their
settings are in :mod:`training.echelons.config`): the evaluation
(:func:`evaluate_commander`: a batch of battles, deterministic orders, won/drawn/lost
counted with draws in the denominator), its callback (:class:`EchelonWinRateCallback`, logging
``<echelon>/win_rate``), and the run (:func:`train_commander`): PPO
(:class:`~models.echelon_policy.EchelonMlpPolicy`), a brigadier after imitating its
doctrine (:func:`imitate_doctrine`), on an :class:`~envs.echelons.echelon_env.EchelonVecEnv` of the
echelon's battles, periodic
checkpoints ``<prefix>_<steps>_steps.zip`` and the final ``<prefix>_final.zip``, all
written atomically, TensorBoard and W&B. Steps are the commander's (macro) steps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium.spaces import Box, MultiDiscrete
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.vec_env import VecMonitor

from envs.battles.multi_battalion_batch import BLUE, RED
from envs.battles.multi_observation import OBS_DIM, STATE_DIM
from envs.commanders.orders import ORDER_DIM
from envs.sim.constants import ACTION_DIM
from models.echelon_policy import EchelonMlpPolicy
from storage.files import clean_stale_temporaries
from training.common.device import resolve_device
from training.common.imitation import make_brigade_doctrine
from training.common.on_policy import steps_to_learn
from training.common.setting_groups import warm_start_budget
from training.common.tracking import start_wandb
from training.echelons.config import BrigadeConfig, EchelonConfig
from training.ppo.callbacks import ManifestCheckpointCallback, WandbCallback, publish
from training.ppo.checkpoints import load_ppo, save_ppo
from training.ppo.warm_start import imitate
from training.utils.freeze_policy import freeze_sb3_policy, load_and_freeze_mappo

logger = logging.getLogger(__name__)


def load_frozen_battalion_policy(checkpoint_path: str | Path, obs_dim: int = OBS_DIM + ORDER_DIM,
                                 action_dim: int = ACTION_DIM, state_dim: int | None = None,
                                 n_agents: int | None = None, device: str = "cpu"):
    """The frozen order-following battalion policy of a MAPPO checkpoint or policy file
    (:func:`~training.utils.freeze_policy.load_and_freeze_mappo`); ``state_dim``
    defaults to ``obs_dim + STATE_DIM``. By default (``n_agents=None``) a policy of any
    number of agents: the echelons' battles give battalion ``s`` of a side the policy's
    agent ``s mod n_agents``, so battalions trained in the division's battles (phase 1,
    ``configs/hrl/phase1_battalion.yaml``) also command a brigade of two.

    Raises:
        FileNotFoundError, ValueError: as ``load_and_freeze_mappo``.
    """
    state_dim = obs_dim + STATE_DIM if state_dim is None else state_dim
    return load_and_freeze_mappo(checkpoint_path, obs_dim, action_dim, state_dim, n_agents,
                                 device)


def load_commander(path: str | Path, obs_dim: int, n_commanded: int, n_choices: int,
                   device: str = "cpu") -> PPO:
    """A brigade or division commander's SB3 archive, loaded without running code from
    it (:func:`~training.ppo.checkpoints.load_ppo`, its spaces checked to be
    ``Box((obs_dim,))`` and ``MultiDiscrete([n_choices] * n_commanded)``) and frozen.

    Raises:
        FileNotFoundError: if nothing is at ``path``.
        ValueError: if the file is not a PPO archive of those spaces.
    """
    spaces = (Box(-1.0, 1.0, (obs_dim,), np.float32), MultiDiscrete([n_choices] * n_commanded))
    return freeze_sb3_policy(load_ppo(path, device=device, spaces=spaces))


def evaluate_commander(model: Any, batch: Any, n_episodes: int, seed: int) -> np.ndarray:
    """Play one battle each of seeds ``seed .. seed + n_episodes - 1`` in ``batch`` (of
    ``n_episodes`` battles), ``model`` giving deterministic commands.

    Returns:
        (n_episodes,) int8 outcomes from Blue's side: 1 won, 0 drawn, -1 lost.
    """
    batch.reset(np.arange(n_episodes), [seed + i for i in range(n_episodes)],
                np.zeros(n_episodes, np.int64))
    outcome = np.zeros(n_episodes, np.int8)
    over = np.zeros(n_episodes, bool)
    observation = batch.observe()
    while not over.all():
        action, _ = model.predict(observation, deterministic=True)
        result = batch.step(np.asarray(action).reshape(n_episodes, -1))
        ended = result.battle_over & ~over
        outcome[ended & (result.winner == BLUE)] = 1
        outcome[ended & (result.winner == RED)] = -1
        over |= result.battle_over
        observation = result.observation
    return outcome


def outcome_rates(outcomes: np.ndarray, prefix: str) -> dict[str, float]:
    """``<prefix>/win_rate``, ``draw_rate`` and ``loss_rate`` of outcomes (draws count in
    the denominator of every rate)."""
    return {f"{prefix}/win_rate": float(np.mean(outcomes == 1)),
            f"{prefix}/draw_rate": float(np.mean(outcomes == 0)),
            f"{prefix}/loss_rate": float(np.mean(outcomes == -1))}


class EchelonWinRateCallback(BaseCallback):
    """Every ``eval_freq`` commander steps, play ``n_eval_episodes`` battles with
    deterministic commands (:func:`evaluate_commander`; a win is Blue's) and log
    ``<echelon>/win_rate``, ``draw_rate`` and ``loss_rate``.

    Args:
        make_batch: builds the evaluation battles (a batch of ``n_eval_episodes``).
        eval_freq: env-steps between evaluations.
        n_eval_episodes: battles per evaluation.
        seed: seed of the first evaluation battle (the same battles every time).

    Attributes:
        history: ``(commander steps, metrics)`` of every evaluation.
    """

    echelon = "echelon"

    def __init__(self, make_batch: Callable[[int], Any], eval_freq: int, n_eval_episodes: int,
                 seed: int = 10_000, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.make_batch, self.seed = make_batch, seed
        self.eval_freq, self.n_eval_episodes = eval_freq, n_eval_episodes
        self.history: list[tuple[int, dict[str, float]]] = []
        self._batch: Any = None
        self._next = eval_freq

    def evaluate(self) -> dict[str, float]:
        """Play the evaluation battles now and log the rates."""
        if self._batch is None:
            self._batch = self.make_batch(self.n_eval_episodes)
        metrics = outcome_rates(evaluate_commander(self.model, self._batch,
                                                   self.n_eval_episodes, self.seed),
                                self.echelon)
        self.history.append((self.num_timesteps, metrics))
        publish(self, metrics)
        if self.verbose:
            logger.info("%s at %d steps: %s", self.echelon, self.num_timesteps, metrics)
        return metrics

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next:
            # The next multiple of eval_freq (a warm start may have passed several).
            self._next = (self.num_timesteps // self.eval_freq + 1) * self.eval_freq
            self.evaluate()
        return True


@dataclass
class EchelonResult:
    """What a brigade or division run did: the model, its final file, its evaluations
    (``(commander steps, metrics)``)."""

    model: PPO
    final_checkpoint: Path
    evaluations: list[tuple[int, dict[str, float]]] = field(default_factory=list)

    def report(self) -> str:
        """The final file and the last evaluation, for a command line."""
        lines = [f"final checkpoint {self.final_checkpoint}"]
        if self.evaluations:
            steps, metrics = self.evaluations[-1]
            lines.append(f"last evaluation at {steps} steps: " + ", ".join(
                f"{k} {v:.2f}" for k, v in metrics.items()))
        return "\n".join(lines)


def make_commander_ppo(config: EchelonConfig, vec_env: Any, *, tensorboard: bool = True) -> PPO:
    """PPO's actor-critic MLP with standardised inputs
    (:class:`~models.echelon_policy.EchelonMlpPolicy`) commanding ``vec_env`` (monitored)
    with ``config``'s settings,
    on ``config.device`` (:func:`~training.common.device.resolve_device`), logging to
    TensorBoard under ``config.log_dir`` if ``tensorboard``.

    Raises:
        ValueError: if ``config.device`` is a CUDA device this machine lacks.
    """
    n_steps = config.rollout_n_steps()
    return PPO(
        EchelonMlpPolicy, VecMonitor(vec_env), learning_rate=config.learning_rate, n_steps=n_steps,
        batch_size=config.minibatch_size(n_steps * config.n_envs), n_epochs=config.n_epochs,
        gamma=config.gamma, gae_lambda=config.gae_lambda, clip_range=config.clip_range,
        ent_coef=config.ent_coef, vf_coef=config.vf_coef, max_grad_norm=config.max_grad_norm,
        target_kl=config.target_kl,
        seed=config.seed, device=resolve_device(config.device, field="device"),
        tensorboard_log=config.log_dir if tensorboard else None,
        verbose=config.verbose)


def imitate_doctrine(model: PPO, vec_env: Any, config: EchelonConfig) -> int:
    """A brigadier's warm start: clone ``config.warm_start_doctrine`` into ``model`` by
    playing it in ``vec_env`` for ``warm_start_steps`` commands (cut to
    ``warm_start_max_share`` of the budget; :func:`~training.ppo.warm_start.imitate`).

    Returns:
        The commands played, which count in the budget; 0 for a config without a doctrine
        (a division commander has none).
    """
    if not isinstance(config, BrigadeConfig) or config.warm_start_doctrine is None:
        return 0
    teacher = make_brigade_doctrine(config.warm_start_doctrine, config.n_blue,
                                    config.map_width, config.map_height)
    return imitate(model, vec_env, teacher, warm_start_budget(config, config.total_timesteps),
                   epochs=config.warm_start_epochs,
                   learning_rate=config.warm_start_learning_rate, seed=config.seed)


def train_commander(config: EchelonConfig, vec_env: Any,
                    evaluation: type[EchelonWinRateCallback], make_batch: Callable[[int], Any],
                    prefix: str) -> EchelonResult:
    """Train PPO (:class:`~models.echelon_policy.EchelonMlpPolicy`) commanding ``vec_env``
    (module docstring), a brigadier after its warm start (:func:`imitate_doctrine`).

    Args:
        config: the run's settings.
        vec_env: the training battles.
        evaluation: the echelon's evaluation callback, which plays ``config``'s
            ``n_eval_episodes`` battles every ``eval_freq`` commander steps.
        make_batch: builds its battles (a batch of ``n`` battles for ``make_batch(n)``).
        prefix: the checkpoints' file-name prefix.

    Returns:
        The model, the path of ``<prefix>_final.zip`` in ``config.checkpoint_dir``, and
        the evaluations.
    """
    torch.set_num_threads(config.torch_threads)
    callback = evaluation(make_batch, config.eval_freq, config.n_eval_episodes,
                          verbose=config.verbose)
    folder = Path(config.checkpoint_dir)
    clean_stale_temporaries(folder)
    model = make_commander_ppo(config, vec_env)
    run, owns_run = (start_wandb(project=config.wandb_project, entity=config.wandb_entity,
                                 tags=config.wandb_tags, config=config.to_dict(),
                                 log_dir=config.log_dir) if config.enable_wandb else (None, False))
    callbacks = [callback, ManifestCheckpointCallback(config.checkpoint_freq, str(folder),
                                                      prefix)]
    if run is not None:
        callbacks.append(WandbCallback())
    try:
        model.num_timesteps = imitate_doctrine(model, vec_env, config)
        remaining = steps_to_learn(config.total_timesteps, model.num_timesteps,
                                   model.n_steps * model.n_envs, after_warm_start=True)
        model.learn(remaining, callback=CallbackList(callbacks),
                    reset_num_timesteps=model.num_timesteps == 0,
                    progress_bar=config.progress_bar, tb_log_name=prefix)
        callback.evaluate()
        final = save_ppo(model, folder / f"{prefix}_final.zip")
    finally:
        if owns_run:
            run.finish()
    return EchelonResult(model, final, callback.history)


__all__ = ["EchelonResult", "EchelonWinRateCallback", "evaluate_commander", "imitate_doctrine",
           "load_commander", "load_frozen_battalion_policy", "make_commander_ppo",
           "outcome_rates", "train_commander"]
