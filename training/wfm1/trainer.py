"""WFM1Trainer: WFM-1's multi-task PPO, one generalist over battles of many scenarios.

The loop (:meth:`~training.common.on_policy.OnPolicyTrainer.learn`)::

    rollout = trainer.collect_rollout()      # n_steps of every battle, one order per unit
    metrics = trainer.learn_from(rollout)    # GAE per battle, clipped PPO per own unit
    for hook in hooks: hook.on_update_end(trainer, metrics)

Battles of new scenarios are drawn every ``resample_every`` rollouts; the warm start
imitates Blue's teacher first; self-play, validation, checkpoints and the run log are
hooks (:mod:`training.wfm1.hooks`). ``docs/wfm1.md`` explains each part.
"""

from __future__ import annotations

import copy
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.wfm1 import WFM1Batch, WFM1Policy, own_order_error
from storage.files import clean_stale_temporaries
from training.common.device import resolve_device
from training.common.on_policy import OnPolicyTrainer, TrainerHook, ppo_epochs
from training.common.ppo_math import (
    AuxiliaryLoss,
    PPOLoss,
    gae,
    normalize_advantages,
    ppo_loss,
    shuffled_minibatches,
)
from training.common.schedule import EveryNSteps, linear_decay
from training.wfm1.battles import ScenarioBattles, echelon_rows, play_out
from training.wfm1.checkpoints import (
    BEST,
    FINAL,
    LATEST,
    WARM_START,
    load_checkpoint,
    resume_file,
    save_checkpoint,
)
from training.wfm1.config import WFM1TrainConfig
from training.wfm1.hooks import (
    CheckpointHook,
    ProgressHook,
    RunLogHook,
    SelfPlayHook,
    ValidationHook,
)
from training.wfm1.lookahead import Lookahead
from training.wfm1.minibatches import Outputs, in_length_groups
from training.wfm1.pool import WFM1OpponentPool
from training.wfm1.rollout import WFMRollout, collect
from training.wfm1.scenarios import sample_training_scenario
from training.wfm1.warm_start import clone, collect_demonstrations, join_demonstrations

logger = logging.getLogger(__name__)

PER_TOKEN = ("tokens", "actions", "pad_mask", "own_mask")
"""A rollout's inputs of the policy along the tokens."""
VALIDATION_SEED = 7_000_000
"""Offset of the validation battles' seeds from the run's seed."""


class WFM1Trainer(OnPolicyTrainer):
    """PPO for WFM-1 on ``config``'s scenarios (module docstring).

    Args:
        config: the run's settings.
        resume: a checkpoint of an earlier run of the same config to continue.
        scenarios: train on these scenarios only (a specialist, or a fine-tuning on a
            held-out one) instead of drawing them; ``config.scenarios_per_rollout`` must
            then be their number.
        init_policy: start from these weights: a :class:`~models.wfm1.WFM1Policy` (copied)
            or its checkpoint (a trained generalist).
        adapter_only: train the scenario-card adapter only, the base frozen (fine-tuning
            on one scenario).

    Raises:
        TypeError: if ``config`` is not a WFM1TrainConfig.
        ValueError: if the budget is smaller than one rollout, ``resume`` holds a
            policy of another size, ``scenarios`` does not match the config, or
            ``config.device`` is a CUDA device this machine lacks.
    """

    def __init__(self, config: WFM1TrainConfig, *, resume: str | Path | None = None,
                 scenarios: list | None = None, init_policy: Any = None,
                 adapter_only: bool = False) -> None:
        if not isinstance(config, WFM1TrainConfig):
            raise TypeError(f"config={config!r} is invalid: expected a WFM1TrainConfig")
        if resume is not None:  # a FIFO or a folder is refused before anything is built
            resume = resume_file(resume)
        torch.set_num_threads(config.torch_threads)
        self.config = config
        self.device = resolve_device(config.device, field="device")
        """Where the policy, every rollout tensor and every update live."""
        self.n_steps, self.rollout_steps = config.rollout_size()
        self.seed(config.seed)
        if scenarios is not None and len(scenarios) != config.scenarios_per_rollout:
            raise ValueError(f"scenarios has {len(scenarios)} scenarios: expected "
                             f"scenarios.per_rollout={config.scenarios_per_rollout}")
        self.fixed_scenarios = None if scenarios is None else list(scenarios)
        if init_policy is None:
            self.policy = WFM1Policy(**config.model_kwargs())
        elif isinstance(init_policy, WFM1Policy):
            self.policy = copy.deepcopy(init_policy)
        else:
            self.policy = WFM1Policy.load_checkpoint(init_policy)
        self.policy.to(self.device)
        if adapter_only:
            self.policy.freeze_base()
        trained = self.policy.adapter_parameters() if adapter_only else self.policy.parameters()
        self.optimizer = torch.optim.Adam(list(trained), lr=config.learning_rate, eps=1e-5)
        self.total_steps = self.updates = self.episodes = 0
        self.self_play_version = 0
        """The last snapshot version this run added to its self-play pool (0: none)."""
        self.pool: WFM1OpponentPool | None = None
        """The self-play pool, opened when PPO starts with ``config.enable_self_play``; until then
        (the warm start) Red is the doctrine everywhere."""
        self.snapshot_due: EveryNSteps | None = None
        """When the next self-play snapshot is due (set as self-play starts)."""
        self.battles: ScenarioBattles | None = None
        self.history: list[dict[str, Any]] = []
        self.best_validation = -1.0
        """The best validation win rate so far (-1: none measured)."""
        self.final_checkpoint: Path | None = None
        self.warm_starting = False
        """Whether the warm start is running (its battles' teacher is learned from)."""
        clean_stale_temporaries(config.checkpoint_dir)
        if resume is not None:
            self._restore(Path(resume))
        elif init_policy is None and config.warm_start_steps:
            self.warm_start()

    def warm_start(self) -> int:
        """Imitate Blue's teacher for ``warm_start_steps`` battle steps of training
        scenarios, then ``warm_start_dagger_rounds`` rounds of DAgger
        (:mod:`training.wfm1.warm_start`; the steps count towards the budget, leaving at
        least one rollout); returns the steps used."""
        config = self.config
        budget = config.total_timesteps - self.rollout_steps
        steps = min(config.warm_start_steps, budget)
        if steps <= 0:
            return 0
        self.warm_starting = True
        try:
            used = self._imitate(budget, steps)
        finally:
            self.warm_starting = False
        with torch.no_grad():
            self.policy.log_std.fill_(math.log(config.warm_start_std))
        self.total_steps += used
        self.battles = None  # PPO starts on new scenarios
        self.save(Path(config.checkpoint_dir) / WARM_START)
        return used

    def _imitate(self, budget: int, steps: int) -> int:
        """The warm start's imitation and DAgger rounds; returns the steps played."""
        config = self.config
        brigade_size = self.policy.brigade_size if self.policy.echelon_tokens else None
        demonstrations, used = collect_demonstrations(
            self.draw_battles, steps, config.gamma, self.n_steps * config.resample_every,
            brigade_size=brigade_size)
        self._fit(demonstrations)
        for _ in range(config.warm_start_dagger_rounds):
            steps = min(config.warm_start_dagger_steps, budget - used)
            if steps <= 0:
                break
            own, played = collect_demonstrations(
                self.draw_battles, steps, config.gamma, self.n_steps * config.resample_every,
                brigade_size=brigade_size, policy=self.policy)
            demonstrations = join_demonstrations([demonstrations, own])
            used += played
            self._fit(demonstrations)
        return used

    def _fit(self, demonstrations) -> None:
        clone(self.policy, demonstrations, epochs=self.config.warm_start_epochs,
              learning_rate=self.config.warm_start_learning_rate,
              seed=int(self.rng.integers(0, 2**31)))

    # --- the battles ------------------------------------------------------------------------

    def draw_battles(self) -> ScenarioBattles:
        """New training scenarios, ``battles_per_scenario`` battles of each; with the
        self-play pool open, Red dealt scenario by scenario (:meth:`deal_reds`)."""
        config = self.config
        scenarios = self.fixed_scenarios or [
            sample_training_scenario(self.rng, config.max_side, config.gis_share)
            for _ in range(config.scenarios_per_rollout)]
        seed = int(self.rng.integers(0, 2**31))
        reds = None if self.pool is None else self.deal_reds(len(scenarios))
        # The lookahead teacher searches while its orders are learned from: in the warm
        # start, and while teacher_coef weighs them.
        lookahead = None
        if config.warm_start_lookahead and (self.warm_starting or linear_decay(
                config.teacher_coef, self.updates * self.rollout_steps,
                config.teacher_decay_steps) > 0):
            lookahead = Lookahead(tuple(config.warm_start_lookahead),
                                  config.warm_start_lookahead_every,
                                  config.warm_start_lookahead_horizon)
        self.battles = ScenarioBattles(scenarios, config.battles_per_scenario, config.max_steps,
                                       seed=seed, formation_orders=self.policy.formation_orders,
                                       reds=reds, lookahead=lookahead,
                                       blue_plan=None if lookahead else
                                       config.warm_start_arms_plan)
        return self.battles

    def deal_reds(self, n_scenarios: int) -> list[WFM1Policy | None]:
        """Red of each of ``n_scenarios`` scenarios: the doctrine (None) with probability
        ``self_play_scripted_share``, else a snapshot drawn uniformly from the pool (the
        doctrine while it is empty); both draws from the run's generator."""
        scripted = self.rng.random(n_scenarios) < self.config.self_play_scripted_share
        return [None if keep else self.pool.sample(self.rng, device=self.device)
                for keep in scripted]

    # --- self-play ------------------------------------------------------------------------

    def start_self_play(self) -> None:
        """Open the self-play pool (``config.enable_self_play``) and add the policy as it starts
        PPO, unless the run (resumed) added snapshots before and the pool holds some; new
        versions go above every version in the pool. Called as :meth:`learn` starts."""
        config = self.config
        if not config.enable_self_play or self.pool is not None:
            return
        self.pool = WFM1OpponentPool(config.self_play_pool_dir, config.self_play_pool_max_size)
        first = self.self_play_version == 0 or self.pool.size == 0
        self.self_play_version = max(self.self_play_version, self.pool.latest_version)
        if first:
            self.add_snapshot()
        self.snapshot_due = EveryNSteps(config.self_play_snapshot_freq, self.total_steps)

    def add_snapshot(self) -> Path:
        """Add the policy's current weights to the pool as the next version."""
        self.self_play_version += 1
        path = self.pool.add(self.policy, self.self_play_version)
        logger.info("self-play snapshot %s at step %d", path.name, self.total_steps)
        return path

    # --- a rollout ------------------------------------------------------------------------

    def collect_rollout(self) -> WFMRollout:
        """``n_steps`` of every battle, each Blue unit sampling its order (new battles
        every ``resample_every`` rollouts)."""
        if self.battles is None or self.updates % self.config.resample_every == 0:
            self.draw_battles()
        return collect(self.policy, self.battles, self.n_steps, self.device)

    # --- advantages and the update ----------------------------------------------------------

    def advantages(self, rollout: WFMRollout) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE per battle (:func:`training.common.ppo_math.gae`, a battle's series ending
        where it ends): (T, B) advantages and returns."""
        return gae(rollout.rewards, rollout.values, rollout.dones, rollout.last_values,
                   self.config.gamma, self.config.gae_lambda)

    def learn_from(self, rollout: WFMRollout) -> dict[str, Any]:
        """PPO's epochs on ``rollout`` (:func:`training.common.ppo_math.ppo_loss`, each
        battle's advantage shared by its own units' ratios, the teacher's loss as the
        auxiliary); its metrics."""
        config, policy = self.config, self.policy
        advantages, returns = self.advantages(rollout)
        flat = {key: getattr(rollout, key).flatten(0, 1) for key in (
            "tokens", "pad_mask", "own_mask", "actions", "log_probs", "values", "teacher")}
        flat.update({key: value.flatten(0, 1) for key, value in rollout.echelons.items()})
        flat["cards"] = rollout.cards.repeat(len(rollout.rewards), 1)
        flat["advantages"], flat["returns"] = advantages.flatten(), returns.flatten()
        n = len(flat["advantages"])
        batch_size = min(config.batch_size or n // config.n_minibatches, n)
        generator = torch.Generator().manual_seed(int(self.rng.integers(0, 2**31)))
        # The pull's weight falls with the PPO steps taken, which resume with the updates.
        teacher_coef = linear_decay(config.teacher_coef, self.updates * self.rollout_steps,
                                    config.teacher_decay_steps)

        inputs = ("tokens", "actions", "pad_mask", "own_mask", "cards", *rollout.echelons)

        def evaluate(rows: dict[str, torch.Tensor]) -> Outputs:
            batch = WFM1Batch.trusted(rows["tokens"], rows["pad_mask"], rows["own_mask"],
                                      rows["cards"], echelon_rows(rows, policy.brigade_size))
            log_prob, entropy, value, orders = policy.evaluate_actions(
                batch, rows["actions"], return_orders=True)
            return (log_prob, entropy, orders.gaussian.mean, orders.formation_logits), (value,)

        def loss(index: torch.Tensor) -> PPOLoss:
            b = {key: value[index] for key, value in flat.items()}
            own = b["own_mask"]
            (log_prob, entropy, mean, logits), (value,) = in_length_groups(
                evaluate, {key: b[key] for key in inputs}, PER_TOKEN)
            teacher = AuxiliaryLoss("teacher_loss", own_order_error(
                mean, logits, b["teacher"], own), teacher_coef)
            # Each battle's advantage, normalised over the minibatch, is shared by its
            # own units' ratios (weight 1; the other tokens 0).
            return ppo_loss(log_prob, b["log_probs"], normalize_advantages(b["advantages"]),
                            value, b["returns"], entropy, clip_range=config.clip_range,
                            vf_coef=config.vf_coef, ent_coef=config.ent_coef,
                            weights=own.float(), auxiliary=teacher)

        policy.train()
        statistics = ppo_epochs(
            config.n_epochs, lambda: shuffled_minibatches(n, batch_size, generator,
                                                          drop_last=True, device=self.device),
            loss, self.optimizer, list(policy.parameters()), config.max_grad_norm,
            config.target_kl)
        self.total_steps += self.rollout_steps
        self.updates += 1
        self.episodes += len(rollout.outcomes)
        means = statistics.means(("policy_loss", "value_loss", "entropy", "approx_kl",
                                  "clip_fraction", "teacher_loss"))
        metrics: dict[str, Any] = {f"train/{k}": v for k, v in means.items()}
        metrics.update({"time/total_steps": self.total_steps, "time/updates": self.updates,
                        "time/episodes": self.episodes, "train/teacher_coef": teacher_coef,
                        "reward/step_mean": float(rollout.rewards.mean())})
        if rollout.outcomes:
            outcomes = np.array(rollout.outcomes)
            metrics.update({"rollout/win_rate": float(np.mean(outcomes == 1)),
                            "rollout/draw_rate": float(np.mean(outcomes == 0)),
                            "rollout/n_episodes": len(outcomes)})
        if self.pool is not None:
            metrics.update(self_play_metrics(rollout, self.pool.size))
        return metrics

    # --- validation -----------------------------------------------------------------------------

    def validation_battles(self) -> ScenarioBattles:
        """The validation battles, the same at every call: ``validation.scenarios``
        training scenarios drawn from the run's seed, ``validation.battles_per_scenario``
        battles of each."""
        config = self.config
        rng = np.random.default_rng(config.seed + VALIDATION_SEED)
        scenarios = [sample_training_scenario(rng, config.max_side, config.gis_share)
                     for _ in range(config.validation_scenarios)]
        return ScenarioBattles(scenarios, config.validation_battles, config.max_steps,
                               seed=config.seed + VALIDATION_SEED)

    def validate(self) -> dict[str, float]:
        """Play the validation battles on the policy's means (module docstring); keep the
        policy as ``wfm1_best.pt`` if it won more of them than any before. Returns the
        ``validation/*`` metrics."""
        outcomes = play_out(self.validation_battles(), self.policy)
        win_rate = float(np.mean(outcomes == 1))
        if win_rate > self.best_validation:
            self.best_validation = win_rate
            self.save(Path(self.config.checkpoint_dir) / BEST)
        return {"validation/win_rate": win_rate,
                "validation/draw_rate": float(np.mean(outcomes == 0)),
                "validation/best_win_rate": self.best_validation}

    # --- the run --------------------------------------------------------------------------------

    def default_hooks(self) -> list[TrainerHook]:
        """Self-play snapshots, validation, checkpoints (``wfm1_final.pt`` at the end), the
        run log (TensorBoard in ``log_dir/wfm1``, W&B as the config says, :attr:`history`)
        and a log line per update (:mod:`training.wfm1.hooks`)."""
        return [SelfPlayHook(), ValidationHook(), CheckpointHook(), RunLogHook(),
                ProgressHook()]

    # --- files ------------------------------------------------------------------------------------

    def save(self, path: Path) -> Path:
        """A resumable checkpoint at ``path``, written atomically
        (:func:`training.wfm1.checkpoints.save_checkpoint`): the policy's constructor
        arguments and weights (which :meth:`models.wfm1.WFM1Policy.load_checkpoint` reads
        too), the optimiser, the counters (the self-play version among them) and the
        generators."""
        return save_checkpoint(path, self.policy, self.optimizer, total_steps=self.total_steps,
                               updates=self.updates, episodes=self.episodes,
                               best_validation=self.best_validation, rng=self.rng,
                               config=self.config, self_play_version=self.self_play_version)

    def _restore(self, path: Path) -> None:
        saved = load_checkpoint(path)
        self.restore_learner(saved, path)
        counters = saved.counters
        self.total_steps, self.updates, self.episodes = (
            int(counters[name]) for name in ("total_steps", "updates", "episodes"))
        self.best_validation = float(counters["best_validation"])
        self.self_play_version = int(counters.get("self_play_version", 0))
        best = Path(self.config.checkpoint_dir) / BEST
        if best.exists() or best.is_symlink():
            # Written after the checkpoint resumed from, it may know better; a damaged
            # one is reported and left out rather than blocking every resume.
            try:
                kept = float(load_checkpoint(best).counters["best_validation"])
            except (OSError, ValueError, KeyError, TypeError) as error:
                logger.warning("ignoring the best-so-far checkpoint %s, which cannot be "
                               "read (%s); the next better validation rewrites it", best,
                               error)
            else:
                self.best_validation = max(self.best_validation, kept)
        logger.info("resuming %s at step %d", path, self.total_steps)


def self_play_metrics(rollout: WFMRollout, pool_size: int) -> dict[str, float]:
    """A self-play rollout's numbers: the win rate of the battles that ended split by
    Red (``rollout/win_rate_doctrine``, ``rollout/win_rate_self_play``, each only when
    such a battle ended), the share of battles against a snapshot and the pool's size."""
    metrics = {"self_play/pool_size": float(pool_size),
               "self_play/snapshot_share": rollout.snapshot_share}
    outcomes = np.array(rollout.outcomes)
    snapshot = np.array(rollout.snapshot_red, bool)
    for name, kind in (("doctrine", ~snapshot), ("self_play", snapshot)):
        if kind.any():
            metrics[f"rollout/win_rate_{name}"] = float(np.mean(outcomes[kind] == 1))
    return metrics


__all__ = ["BEST", "FINAL", "LATEST", "VALIDATION_SEED", "WARM_START", "WFM1Trainer", "WFMRollout",
           "self_play_metrics"]
