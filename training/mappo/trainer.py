"""MAPPOTrainer: MAPPO one rollout and one update at a time, extras on hooks.

The loop, top to bottom::

    rollout = trainer.collect_rollout()            # n_steps of every battle
    metrics = trainer.learn_from(rollout)           # GAE, clipped-PPO epochs, counters
    for hook in hooks: hook.on_update_end(trainer, metrics)

:meth:`MAPPOTrainer.learn` runs it until the budget is spent. A league role
drives the same two calls itself and changes, between rollouts, who the
learner fights (:meth:`TrainingBattles.deal`) and which side it learns from
(:meth:`TrainingBattles.set_learning_side`). Curriculum, self-play, evaluation,
logging, checkpoints and progress are hooks (:mod:`training.mappo.hooks`).
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch

from envs.battles.multi_battalion_batch import RED
from envs.play.commanders import CombinedArmsRed
from models.mappo_files import load_policy, save_policy
from models.mappo_policy import MAPPOPolicy
from models.v1_transfer import load_v1_weights_into_mappo
from storage.files import clean_stale_temporaries
from training.common.device import resolve_device
from training.common.on_policy import OnPolicyTrainer
from training.curriculum_scheduler import STAGE_ENV_KWARGS, STAGE_LABELS, CurriculumScheduler
from training.mappo.battles import DOCTRINE_TEAM, play_team_matches
from training.mappo.checkpoints import (
    CHECKPOINT_NAME,
    FINAL_CHECKPOINT_NAME,
    load_checkpoint,
    save_checkpoint,
)
from training.mappo.config import MAPPOConfig
from training.mappo.rollout import Rollout, TrainingBattles, collect
from training.mappo.update import advantages_and_returns, update
from training.mappo.warm_start import warm_start_team

logger = logging.getLogger(__name__)


class MAPPOTrainer(OnPolicyTrainer):
    """MAPPO on ``config``'s battles: the policy, its optimiser, the battles, the counters.

    Building it builds the policy (big enough for every team size of the
    curriculum), then continues ``resume`` (weights, optimiser, counters,
    curriculum, generators), or seeds the policy from ``config.v1_checkpoint``,
    or starts from the weights of ``config.init_policy``, or imitates
    ``config.warm_start_doctrine`` (those steps count towards the budget, leaving
    at least one rollout).

    Args:
        config: the run's settings.
        resume: a checkpoint of an earlier run to continue, or None.

    Attributes:
        policy, optimizer: the learner.
        battles: the :class:`~training.mappo.rollout.TrainingBattles` it trains in.
        scheduler: the curriculum, or None.
        total_steps, episodes: env-steps trained (imitation included) and battles finished.
        self_play_version: the last snapshot version a self-play hook added.
        rng, generator: the run's NumPy generator and the minibatch generator.
        device: the torch device of ``config.device``, where the policy and its updates
            live (rollouts are gathered on the CPU).
        rollout: the last rollout collected.
        history: the metrics of every update of :meth:`learn`.
        transfer: the ``{"loaded", "skipped"}`` report of a v1 warm start, or None.
        final_checkpoint: set by the checkpoint hook when the run ends.
        resumed_extra: the ``extra`` values of the checkpoint resumed, or None.

    Raises:
        TypeError: if ``config`` is not a MAPPOConfig.
        ValueError: if the budget is smaller than one rollout, ``resume`` holds
            a policy of another shape, or ``config.device`` is a CUDA device this
            machine lacks.
        FileNotFoundError: if ``resume``, ``init_policy`` or ``v1_checkpoint`` does not
            exist.
    """

    def __init__(self, config: MAPPOConfig, *, resume: str | Path | None = None) -> None:
        if not isinstance(config, MAPPOConfig):
            raise TypeError(f"config={config!r} is invalid: expected a MAPPOConfig")
        self.config = config
        self.device = resolve_device(config.device, field="device")
        self.n_steps, self.rollout_steps = config.rollout_size()
        torch.set_num_threads(config.torch_threads)
        self.seed(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.checkpoint_dir = Path(config.checkpoint_dir)
        clean_stale_temporaries(self.checkpoint_dir)  # left by a run killed mid-write

        self.scheduler = self._curriculum()
        self.policy = self._new_policy()
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.learning_rate,
                                          eps=1e-5)
        self.total_steps = self.episodes = self.self_play_version = 0
        self.ppo_steps = 0  # env-steps of MAPPO updates (the critic warm-up counts them)
        self.transfer: dict[str, list[str]] | None = None
        self.rollout: Rollout | None = None
        self.history: list[dict[str, Any]] = []
        self.pending_metrics: dict[str, float] = {}
        """Metrics of what came before the first update (the warm start's fit), logged
        with it."""
        self.final_checkpoint: Path | None = None
        self.resumed_extra: dict[str, Any] | None = None
        self._workers: Any = None  # RolloutWorkers, started on first use when distributed
        saved_reference = self._start(resume)
        self.policy.eval()

        sizes = self.scheduler.env_kwargs() if self.scheduler else dict(n_blue=config.n_blue,
                                                                        n_red=config.n_red)
        self.battles = TrainingBattles(config, sizes["n_blue"], sizes["n_red"], self.rng)
        if resume is None and config.v1_checkpoint is None and config.init_policy is None \
                and config.warm_start_doctrine:
            self._warm_start()
        self.formation_reference = self._formation_reference(saved_reference)
        """With ``formation_pull``: the frozen policy whose formation choices the updates
        pull toward, the one MAPPO started from (a resumed run keeps its run's; one resumed
        from a run without the pull starts from the checkpoint's weights)."""

    def _curriculum(self) -> CurriculumScheduler | None:
        config = self.config
        if not config.curriculum:
            return None
        initial = next(s for s, label in STAGE_LABELS.items()
                       if label == config.curriculum_initial_stage)
        return CurriculumScheduler(config.curriculum_threshold, config.curriculum_window,
                                   initial)

    def _new_policy(self) -> MAPPOPolicy:
        """A policy big enough for every team size of the curriculum."""
        config = self.config
        largest_team = max([config.n_blue] + [kw["n_blue"] for kw in STAGE_ENV_KWARGS.values()]
                           if config.curriculum else [config.n_blue])
        return MAPPOPolicy(**config.policy_kwargs(), n_agents=largest_team).to(self.device)

    def _start(self, resume: str | Path | None) -> dict[str, torch.Tensor] | None:
        """The starting weights: ``resume``'s run, ``init_policy``'s or v1's; returns the
        weights a resumed run's formation pull pulls toward (None if none)."""
        config = self.config
        if resume is not None:
            return self._restore(resume)
        if config.init_policy is not None:
            self._start_from(config.init_policy)
        elif config.v1_checkpoint is not None:
            self.transfer = load_v1_weights_into_mappo(config.v1_checkpoint, self.policy)
            logger.info("warm start from %s: %d tensors loaded, %d skipped",
                        config.v1_checkpoint, len(self.transfer["loaded"]),
                        len(self.transfer["skipped"]))
        return None

    def _warm_start(self) -> None:
        """Imitate the warm start's doctrine; those steps count towards the budget, leaving
        at least one rollout."""
        config = self.config
        steps = min(config.warm_start_budget(config.total_timesteps),
                    config.total_timesteps - self.rollout_steps)
        if steps < config.n_envs:
            return
        self.total_steps, fit = warm_start_team(self.policy, self.battles, steps)
        # Logged with the first update: how closely the clone fits its teacher explains
        # where a run starts (docs/research/mappo-studies.md, "What undoes a good start").
        self.pending_metrics.update({"warm_start/action_loss": fit["action"],
                                     "warm_start/value_loss": fit["value"],
                                     "warm_start/samples": fit["samples"]})

    def _formation_reference(self, saved: dict[str, torch.Tensor] | None
                             ) -> MAPPOPolicy | None:
        if not self.config.formation_pull:
            return None
        reference = copy.deepcopy(self.policy).eval()
        if saved is not None:
            reference.load_state_dict(saved)
        for parameter in reference.parameters():
            parameter.requires_grad_(False)
        return reference

    # --- the loop ------------------------------------------------------------------------

    def collect_rollout(self) -> Rollout:
        """``n_steps`` of every battle, the learner sampling from its policy: in this
        process, or on the Ray workers with ``distributed.enabled`` (the same rollout,
        bit for bit)."""
        if self.config.distributed:
            self.rollout = self.workers.collect(self.policy, self.battles, self.n_steps,
                                                self.config.gamma)
        else:
            self.rollout = collect(self.policy, self.battles, self.n_steps, self.config.gamma)
        return self.rollout

    def play_matches(self, opponents: dict[str, Any], n_episodes: int, seed: int, *,
                     opponent_deterministic: bool = False) -> dict[str, np.ndarray]:
        """Each opponent's outcomes (Blue's side: 1 won, 0 drawn, -1 lost) of
        ``n_episodes`` battles against the learner acting on its policy's mean, at the
        current team sizes and field, battle ``i`` seeded ``seed + i``: played here, every
        match in one batch, or split across the Ray workers with ``distributed.enabled``
        (same outcomes).

        Args:
            opponents: name -> a scripted level, a MAPPOPolicy or a battalion commander.
        """
        settings = dict(n_blue=self.battles.n_blue, n_red=self.battles.n_red,
                        env_kwargs=self.config.field_kwargs(),
                        opponent_deterministic=opponent_deterministic,
                        order_of_battle=self.config.forces())
        if self.config.distributed:
            return self.workers.play(self.policy, opponents, n_episodes, seed, **settings)
        return play_team_matches(self.policy, opponents, n_episodes=n_episodes, seed=seed,
                                 **settings)

    @property
    def workers(self) -> Any:
        """The run's :class:`~training.mappo.distributed.RolloutWorkers` (started, and
        Ray with them, on first use)."""
        if self._workers is None:
            from training.mappo.distributed import RolloutWorkers  # Ray only when asked for
            self._workers = RolloutWorkers(self.config)
        return self._workers

    def close(self) -> None:
        """Stop the Ray workers, if any (a later rollout starts new ones)."""
        if self._workers is not None:
            self._workers.close()
            self._workers = None

    def learn_from(self, rollout: Rollout) -> dict[str, Any]:
        """Advantages, PPO epochs and counters for one rollout; its metrics."""
        config = self.config
        advantages, returns = advantages_and_returns(rollout, config.gamma, config.gae_lambda)
        train_actor = self.ppo_steps >= config.critic_warmup_steps
        metrics = update(self.policy, self.optimizer, rollout, advantages, returns, config,
                         self.generator, train_actor=train_actor,
                         reference=self.formation_reference)
        metrics["train/actor_frozen"] = float(not train_actor)
        self.total_steps += self.rollout_steps
        self.ppo_steps += self.rollout_steps
        self.episodes += len(rollout.wins)
        metrics.update({
            "time/total_steps": self.total_steps, "time/episodes": self.episodes,
            "rollout/n_wins": int(sum(rollout.wins)), "reward/n_episodes": len(rollout.wins),
            "curriculum/n_blue": self.battles.n_blue, "curriculum/n_red": self.battles.n_red,
        })
        take_order_counts = getattr(self.battles.batch, "take_order_counts", None)
        if take_order_counts is not None:  # battalions following orders (envs.commanders.orders)
            issued, met = take_order_counts()
            metrics["orders/issued"] = issued
            if issued:
                metrics["orders/met_rate"] = met / issued
        if rollout.coordination is not None:  # coordination/<name>: means over the rollout
            metrics.update(rollout.coordination.means())
        if rollout.wins:
            metrics["rollout/win_rate"] = float(np.mean(rollout.wins))
            metrics["reward/team_mean"] = float(np.mean(rollout.episode_returns))
            per_agent = np.mean(rollout.agent_returns, axis=0)
            metrics.update({f"reward/agent_{i}": float(r) for i, r in enumerate(per_agent)})
        metrics.update(self.pending_metrics)
        self.pending_metrics.clear()
        return metrics

    # --- what a league role reads (training.league.role; an EchelonLearner has the same) ---

    CHECKPOINT_NAME = CHECKPOINT_NAME
    FINAL_CHECKPOINT_NAME = FINAL_CHECKPOINT_NAME
    SNAPSHOT_SUFFIX = ".pt"

    @property
    def warm_started(self) -> bool:
        """Whether the run started from trained weights (v1's, or ``init_policy``)."""
        return self.transfer is not None or self.config.init_policy is not None

    @property
    def scripted_opponent_id(self) -> str:
        """The league id of the scripted Red in the battles nobody is dealt."""
        return f"scripted_team_l{self.config.red_level}"

    def anchors(self) -> dict[str, Any]:
        """The league's fixed members (:data:`~training.league.layout.ANCHORS`) as
        opponents: scripted L5 and the doctrine: the disciplined doctrine commanding Red's
        battalions, or with an order of battle the combined-arms doctrine."""
        doctrine = DOCTRINE_TEAM if self.config.order_of_battle is None else CombinedArmsRed()
        return {"scripted_team_l5": 5, "doctrine_team": doctrine}

    def deal(self, opponents: list[MAPPOPolicy], scripted_share: float) -> None:
        """:meth:`TrainingBattles.deal` on the training battles (sampling opponents)."""
        self.battles.deal(opponents, scripted_share)

    def opponent_battles(self) -> list[tuple[MAPPOPolicy, np.ndarray]]:
        """``(opponent, battle indices)`` of the last deal."""
        return self.battles.opponents

    def behaviour_trajectory(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The first battalion's orders and positions in battle 0 over the last rollout,
        or None before one."""
        if self.rollout is None:
            return None
        return self.rollout.actions[:, 0, 0].numpy(), self.rollout.obs[:, 0, 0, :2].numpy()

    def save_snapshot(self, path: Path, version: int) -> Path:
        """The policy's weights as a policy file (atomically)."""
        return save_policy(self.policy, path, version=version)

    def load_snapshot(self, path: str | Path) -> MAPPOPolicy:
        """A policy file's policy (weights only)."""
        return load_policy(path)

    def snapshot_weights(self, path: str | Path) -> dict[str, torch.Tensor]:
        return load_policy(path).state_dict()

    def frozen_copy(self) -> MAPPOPolicy:
        """The learner's current weights as a frozen opponent (self-play)."""
        return copy.deepcopy(self.policy).eval()

    # --- changing the battles -----------------------------------------------------------------

    def swap_battles(self, n_blue: int, n_red: int) -> None:
        """New battles of ``n_blue`` against ``n_red`` with the same weights, the same
        dealt opponents and the same learning sides (a curriculum promotion)."""
        opponents = [policy for policy, _ in self.battles.opponents]
        sides, deterministic = self.battles.learner_side, self.battles.opponents_deterministic
        self.battles = TrainingBattles(self.config, n_blue, n_red, self.rng)
        if opponents:
            self.battles.deal(opponents, self.config.self_play_scripted_share,
                              deterministic=deterministic)
        red = np.flatnonzero(sides == RED)
        if len(red):
            self.battles.set_learning_side(RED, red)

    def save(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        """Write a resumable checkpoint of the run to ``path`` (atomically), with a
        driver's ``extra`` plain values (read back as :attr:`resumed_extra`)."""
        return save_checkpoint(path, self.policy, self.optimizer, self.total_steps,
                               self.episodes, self.config, self.scheduler, self.rng,
                               self.generator, self.self_play_version, extra,
                               ppo_steps=self.ppo_steps,
                               formation_reference=self.formation_reference)

    def _start_from(self, policy_file: str) -> None:
        start = load_policy(policy_file)
        if start.kwargs != self.policy.kwargs:
            raise ValueError(f"init_policy={policy_file!r} holds a policy built with "
                             f"{start.kwargs}, but this config builds {self.policy.kwargs}")
        self.policy.load_state_dict(start.state_dict())
        logger.info("starting from the policy in %s", policy_file)

    def _restore(self, resume: str | Path) -> dict[str, torch.Tensor] | None:
        """Load the run of checkpoint ``resume``; the weights its formation pull pulled
        toward (None if it had none)."""
        saved = load_checkpoint(resume)
        self.restore_learner(saved, resume)
        counters = saved.counters
        self.total_steps, self.episodes = counters["total_steps"], counters["episodes"]
        self.self_play_version = counters.get("self_play_version", 0)
        # A checkpoint without the counter: its run is past any critic warm-up.
        self.ppo_steps = counters.get("ppo_steps", self.total_steps)
        self.resumed_extra = saved.extras.get("driver")
        if self.scheduler is not None and saved.extras.get("curriculum") is not None:
            self.scheduler.load_state_dict(saved.extras["curriculum"])
        self.generator.set_state(saved.rng["minibatch"])
        logger.info("resuming %s at step %d", resume, self.total_steps)
        return saved.extras.get("formation_reference")


__all__ = ["MAPPOTrainer"]
