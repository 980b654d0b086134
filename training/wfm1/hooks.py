"""The extras of a WFM-1 run, as :class:`~training.common.on_policy.TrainerHook`\\ s.

:meth:`training.wfm1.trainer.WFM1Trainer.default_hooks` hangs them in this order (each
sees the metrics of those before it): self-play snapshots, validation, checkpoints,
the run log, a log line per update.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from training.common.on_policy import TrainerHook
from training.common.run_log import RunLog
from training.wfm1.checkpoints import FINAL, LATEST, STEP_PREFIX, STEP_SUFFIX

logger = logging.getLogger(__name__)


class SelfPlayHook(TrainerHook):
    """With ``self_play.enabled``: opens the pool as PPO starts and adds a snapshot each
    time the steps pass a multiple of ``self_play.snapshot_freq``."""

    def on_training_start(self, trainer: Any, metrics: dict[str, Any]) -> None:
        trainer.start_self_play()

    def on_update_end(self, trainer: Any, metrics: dict[str, Any]) -> None:
        due = trainer.snapshot_due
        if due is not None and due(trainer.total_steps):
            trainer.add_snapshot()
            metrics["self_play/pool_size"] = float(trainer.pool.size)


class ValidationHook(TrainerHook):
    """Every ``validation.every_updates`` updates, and at the start of a run that has
    measured none: :meth:`~training.wfm1.trainer.WFM1Trainer.validate`."""

    def on_training_start(self, trainer: Any, metrics: dict[str, Any]) -> None:
        if trainer.config.validate_every_updates and trainer.best_validation < 0:
            metrics.update(trainer.validate())  # the starting point is a candidate too

    def on_update_end(self, trainer: Any, metrics: dict[str, Any]) -> None:
        every = trainer.config.validate_every_updates
        if every and trainer.updates % every == 0:
            metrics.update(trainer.validate())


class RunLogHook(TrainerHook):
    """Every row to the run log (TensorBoard in ``log_dir/wfm1``, W&B as the config
    says); the run's pictures at the end."""

    def __init__(self) -> None:
        self.run_log: RunLog | None = None

    def on_training_start(self, trainer: Any, metrics: dict[str, Any]) -> None:
        config = trainer.config
        self.run_log = RunLog.for_config(Path(config.log_dir) / "wfm1", config).open()
        if metrics:
            self.run_log.log(metrics, trainer.total_steps)

    def on_update_end(self, trainer: Any, metrics: dict[str, Any]) -> None:
        self.run_log.log(metrics, trainer.total_steps)

    def on_training_end(self, trainer: Any) -> None:
        self.run_log.close()
        self.run_log.draw_plots()  # learning curves and losses beside the logs

    def on_close(self, trainer: Any) -> None:
        if self.run_log is not None:
            self.run_log.close()


class ProgressHook(TrainerHook):
    """A log line per update with ``verbose``."""

    def on_update_end(self, trainer: Any, metrics: dict[str, Any]) -> None:
        if trainer.config.verbose:
            logger.info("step %d: win rate %.2f, %.0f steps/s", trainer.total_steps,
                        metrics.get("rollout/win_rate", float("nan")), metrics["time/fps"])


class CheckpointHook(TrainerHook):
    """``wfm1_<steps>_steps.pt`` and ``wfm1_latest.pt`` every
    ``checkpoint.every_updates`` updates; ``wfm1_latest.pt`` and ``wfm1_final.pt`` at
    the end."""

    def on_update_end(self, trainer: Any, metrics: dict[str, Any]) -> None:
        if trainer.updates % trainer.config.checkpoint_every_updates == 0:
            folder = Path(trainer.config.checkpoint_dir)
            trainer.save(folder / f"{STEP_PREFIX}{trainer.total_steps}{STEP_SUFFIX}")
            trainer.save(folder / LATEST)

    def on_training_end(self, trainer: Any) -> None:
        folder = Path(trainer.config.checkpoint_dir)
        trainer.save(folder / LATEST)
        trainer.final_checkpoint = trainer.save(folder / FINAL)


__all__ = ["CheckpointHook", "ProgressHook", "RunLogHook", "SelfPlayHook", "ValidationHook"]
