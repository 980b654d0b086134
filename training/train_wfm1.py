"""Train WFM-1, the generalist commander, over a distribution of scenarios: one command.

Run it as::

    python -m training.train_wfm1
    python -m training.train_wfm1 training.total_timesteps=2000000 env.num_envs=32

with the settings of ``configs/wfm1_train.yaml`` (:mod:`training.wfm1.config`);
``resume.checkpoint=PATH`` continues a run, ``resume.auto=true`` continues from the
newest complete checkpoint in ``checkpoint.dir`` if there is one
(:func:`training.wfm1.checkpoints.newest_checkpoint`). The run writes checkpoints every
``checkpoint.every_updates`` updates and ``wfm1_final.pt`` at the end
(:class:`training.wfm1.trainer.WFM1Trainer`), and logs to TensorBoard under
``logging.log_dir`` and to W&B.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from envs.sim.validation import short_repr
from training.wfm1.checkpoints import newest_checkpoint, resume_file
from training.wfm1.config import CONFIG_FILE, WFM1TrainConfig
from training.wfm1.trainer import WFM1Trainer


def train_wfm1(config: WFM1TrainConfig | None = None, *, resume: str | Path | None = None,
               **overrides: Any) -> WFM1Trainer:
    """Train WFM-1 (module docstring).

    Args:
        config: the run's settings (defaults: :class:`WFM1TrainConfig`'s).
        resume: a checkpoint to continue.
        **overrides: settings to change, by field name.

    Raises:
        ValueError: for a bad setting (named), or a checkpoint of another policy size.
    """
    if config is None:
        config = WFM1TrainConfig()
    elif not isinstance(config, WFM1TrainConfig):  # never by truthiness: {} is not None
        raise TypeError(f"config={short_repr(config)} is invalid: expected None or a "
                        "WFM1TrainConfig")
    if overrides:
        config = config.replace(**overrides)
    return WFM1Trainer(config, resume=resume).learn()


def _resume_path(resume: dict[str, Any], config: WFM1TrainConfig) -> Path | None:
    if resume.get("checkpoint"):
        return resume_file(resume["checkpoint"], "resume.checkpoint")
    return newest_checkpoint(config.checkpoint_dir) if resume.get("auto") else None


def main() -> None:
    """Hydra entry point: ``python -m training.train_wfm1 key=value ...``."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    def app(config: WFM1TrainConfig, resume: dict[str, Any]) -> None:
        trainer = train_wfm1(config, resume=_resume_path(resume, config))
        print(f"final checkpoint {trainer.final_checkpoint} after {trainer.total_steps} steps")

    CONFIG_FILE.run(app)


__all__ = ["WFM1TrainConfig", "train_wfm1"]

if __name__ == "__main__":
    main()
