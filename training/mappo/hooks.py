"""The extras of a MAPPO run, as :class:`~training.common.on_policy.TrainerHook`\\ s.

:func:`training.train_mappo.train_mappo` hangs them on the trainer in this order, each
seeing the metrics of those before it: :class:`CurriculumHook` (a promotion swaps the
battles for the next team sizes, same weights), :class:`SelfPlayHook` (snapshots into the
team pool every ``self_play_snapshot_freq`` steps, pool members dealt to the battles, the
learner rated against the pool every ``self_play_eval_freq`` steps),
:class:`ScriptEvaluationHook` (deterministic battles against scripted Red every
``eval_freq`` steps, with the team Elo update), :class:`MetricsLogHook` (the run log; the
run's pictures at the end), :class:`CheckpointHook` (``mappo_policy.pt`` every
``checkpoint_freq`` steps and ``mappo_policy_final.pt`` at the end) and
:class:`ProgressHook` (the progress bar, or a log line per update).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from models.mappo_policy import MAPPOPolicy
from training.common.on_policy import TrainerHook
from training.common.run_log import RunLog
from training.common.schedule import EveryNSteps
from training.elo import TEAM_BASELINE_RATINGS, TeamEloRegistry
from training.mappo.battles import WIN, score
from training.mappo.checkpoints import CHECKPOINT_NAME, FINAL_CHECKPOINT_NAME
from training.mappo.evaluation import nash_exploitability_proxy
from training.mappo.pool import TeamOpponentPool
from training.mappo.trainer import MAPPOTrainer

logger = logging.getLogger(__name__)

OPPONENTS_PER_SWAP = 4
"""Pool members dealt across the self-play battles at each swap."""


class CurriculumHook(TrainerHook):
    """Promotes the team through the curriculum's stages (1v1 -> 2v1 -> 2v2 ...).

    Args:
        run: the W&B run that records promotion events, or None.
    """

    def __init__(self, run: Any = None) -> None:
        self.run = run

    def on_update_end(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        scheduler = trainer.scheduler
        scheduler.record_episodes(trainer.rollout.wins)
        if scheduler.should_promote():
            metrics["curriculum/promotion_win_rate"] = scheduler.win_rate()
            metrics["curriculum/promoted_from"] = scheduler.stage_label
            scheduler.promote()
            scheduler.log_promotion_event(trainer.total_steps, self.run)
            metrics["curriculum/promotion_step"] = trainer.total_steps
            # One network for every team size: swap the battles, keep the weights.
            sizes = scheduler.env_kwargs()
            trainer.swap_battles(sizes["n_blue"], sizes["n_red"])
        metrics.update(scheduler.wandb_metrics())


class SelfPlayHook(TrainerHook):
    """Team self-play: snapshots of the learner become its opponents.

    Args:
        registry: the team Elo registry the pool evaluations update.
    """

    def __init__(self, registry: TeamEloRegistry) -> None:
        self.registry = registry
        self.pool: TeamOpponentPool | None = None

    def on_training_start(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        config = trainer.config
        self.pool = TeamOpponentPool(config.self_play_pool_dir, config.self_play_pool_max_size)
        trainer.self_play_version = max(trainer.self_play_version, self.pool.latest_version)
        if self.pool.size:
            trainer.battles.deal(sample_members(self.pool, trainer.rng),
                                 config.self_play_scripted_share)
        self.snapshot_due = EveryNSteps(config.self_play_snapshot_freq, trainer.total_steps)
        self.evaluation_due = EveryNSteps(config.self_play_eval_freq, trainer.total_steps)

    def on_update_end(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        config, pool = trainer.config, self.pool
        if self.snapshot_due(trainer.total_steps):
            trainer.self_play_version += 1
            pool.add(trainer.policy, trainer.self_play_version)
            trainer.battles.deal(sample_members(pool, trainer.rng),
                                 config.self_play_scripted_share)
            metrics["self_play/pool_size"] = pool.size
        # The evaluation clock only runs once the pool has somebody to play.
        if pool.size and self.evaluation_due(trainer.total_steps):
            metrics.update(self._evaluate(trainer))

    def _evaluate(self, trainer: MAPPOTrainer) -> dict[str, float]:
        """Win rate against a sampled snapshot, the exploitability proxy, the Elo update."""
        config, pool, battles = trainer.config, self.pool, trainer.battles
        step = trainer.total_steps
        path = pool.snapshot_paths[int(trainer.rng.integers(pool.size))]
        outcomes = trainer.play_matches({path.stem: pool.load(path)},
                                        config.self_play_n_eval_episodes,
                                        seed=2 * 10**6 + step)[path.stem]
        self.registry.update(config.elo_agent_name, path.stem, score(outcomes),
                             n_games=len(outcomes))
        self.registry.save()
        exploitability = nash_exploitability_proxy(
            trainer.policy, pool, battles.n_blue, battles.n_red,
            config.self_play_exploitability_episodes, seed=3 * 10**6 + step,
            env_kwargs=config.field_kwargs(), order_of_battle=config.forces())
        return {"self_play/win_rate_vs_pool": float((outcomes == WIN).mean()),
                "self_play/exploitability": exploitability,
                "elo/team_rating": self.registry.get_rating(config.elo_agent_name)}


class ScriptEvaluationHook(TrainerHook):
    """Deterministic battles against scripted Red at the current team sizes.

    Args:
        registry: the team Elo registry to update.
    """

    def __init__(self, registry: TeamEloRegistry) -> None:
        self.registry = registry

    def on_training_start(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        self.due = EveryNSteps(trainer.config.eval_freq, trainer.total_steps)

    def on_update_end(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        if not self.due(trainer.total_steps):
            return
        config = trainer.config
        opponent = trainer.scripted_opponent_id
        outcomes = trainer.play_matches({opponent: config.red_level}, config.n_eval_episodes,
                                        seed=10**6 + trainer.total_steps)[opponent]
        self.registry.update(config.elo_agent_name, opponent, score(outcomes),
                             n_games=len(outcomes))
        self.registry.save()
        metrics.update({"eval/win_rate": float((outcomes == WIN).mean()),
                        "eval/draw_rate": float((outcomes == 0).mean()),
                        "eval/loss_rate": float((outcomes < 0).mean()),
                        "elo/team_rating": self.registry.get_rating(config.elo_agent_name)})


class MetricsLogHook(TrainerHook):
    """Every update's numbers to the run log (:class:`~training.common.run_log.RunLog`:
    TensorBoard in ``log_dir/mappo`` and the W&B run); at the end, the run's pictures
    drawn from those TensorBoard files, beside them (:func:`training.plots.write_run_plots`).

    Args:
        run: the W&B run, or None.
    """

    def __init__(self, run: Any = None) -> None:
        self.run = run
        self.run_log: RunLog | None = None

    @staticmethod
    def log_folder(config: Any) -> Path:
        """The folder of a run's TensorBoard files (and pictures)."""
        return Path(config.log_dir) / "mappo"

    def on_training_start(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        self.run_log = RunLog(self.log_folder(trainer.config), run=self.run).open()
        counts = trainer.policy.parameter_count()
        self.run_log.log({**metrics, "model/actor_params": counts["actor"],
                          "model/critic_params": counts["critic"],
                          "model/total_params": counts["total"]}, trainer.total_steps)

    def on_update_end(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        self.run_log.log(metrics, trainer.total_steps)

    def on_training_end(self, trainer: MAPPOTrainer) -> None:
        self.run_log.close()
        opponent = trainer.scripted_opponent_id  # the evaluations' opponent
        self.run_log.draw_plots(anchors={opponent: TEAM_BASELINE_RATINGS[opponent]})

    def on_close(self, trainer: MAPPOTrainer) -> None:
        if self.run_log is not None:
            self.run_log.close()


class CheckpointHook(TrainerHook):
    """``mappo_policy.pt`` every ``checkpoint_freq`` steps (replaced atomically) and
    ``mappo_policy_final.pt`` at the end, in ``checkpoint_dir``."""

    def on_training_start(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        self.due = EveryNSteps(trainer.config.checkpoint_freq, trainer.total_steps)

    def on_update_end(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        if self.due(trainer.total_steps):
            trainer.save(trainer.checkpoint_dir / CHECKPOINT_NAME)

    def on_training_end(self, trainer: MAPPOTrainer) -> None:
        trainer.final_checkpoint = trainer.save(trainer.checkpoint_dir / FINAL_CHECKPOINT_NAME)


class ProgressHook(TrainerHook):
    """A progress bar in env-steps (``progress_bar``), else a log line per update
    (``verbose``)."""

    def __init__(self) -> None:
        self.bar = None

    def on_training_start(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        if trainer.config.progress_bar:
            from tqdm.auto import tqdm

            remaining = max(0, trainer.config.total_timesteps - trainer.total_steps)
            total = -(-remaining // trainer.rollout_steps) * trainer.rollout_steps
            self.bar = tqdm(total=total, unit="step", desc="MAPPO", dynamic_ncols=True)

    def on_update_end(self, trainer: MAPPOTrainer, metrics: dict[str, Any]) -> None:
        battles = trainer.battles
        win_rate = metrics.get("rollout/win_rate", float("nan"))
        if self.bar is not None:
            self.bar.update(trainer.rollout_steps)
            self.bar.set_postfix(win=f"{win_rate:.2f}", stage=f"{battles.n_blue}v{battles.n_red}")
        elif trainer.config.verbose:
            logger.info("step %d: %dv%d, win rate %.2f, %.0f env-steps/s", trainer.total_steps,
                        battles.n_blue, battles.n_red, win_rate, metrics["time/fps"])

    def on_close(self, trainer: MAPPOTrainer) -> None:
        if self.bar is not None:
            self.bar.close()


def sample_members(pool: TeamOpponentPool, rng: np.random.Generator) -> list[MAPPOPolicy]:
    """Up to ``OPPONENTS_PER_SWAP`` distinct pool members, drawn uniformly."""
    paths = pool.snapshot_paths
    chosen = rng.choice(len(paths), size=min(OPPONENTS_PER_SWAP, len(paths)), replace=False)
    return [pool.load(paths[i]) for i in sorted(chosen)]


__all__ = ["CheckpointHook", "CurriculumHook", "MetricsLogHook", "OPPONENTS_PER_SWAP",
           "ProgressHook", "ScriptEvaluationHook", "SelfPlayHook", "sample_members"]
