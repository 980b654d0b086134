"""Weights & Biases for the trainers: the mode (online or offline), starting a run, the
final model as an artifact. The project's own trainers log through the run log
(:class:`training.common.run_log.RunLog`), which starts its run here; the SB3 stack
(:func:`training.train`) starts its run here and logs through SB3's logger."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def wandb_mode() -> str:
    """``WANDB_MODE`` if set; online when an API key is configured; else offline.

    Offline keeps a run's files locally (``wandb sync`` uploads them later) and
    never touches the network, which is what a machine without credentials wants.
    """
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"]
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    netrc = Path.home() / ".netrc"
    try:
        if "api.wandb.ai" in netrc.read_text():
            return "online"
    except OSError:
        pass
    return "offline"


def start_wandb(*, project: str, entity: str | None, tags: list[str], config: dict[str, Any],
                log_dir: str) -> tuple[Any, bool]:
    """Start a W&B run: (run or None, whether this call started it).

    A caller's active run is used and left open. A failure is reported, not fatal.
    """
    # W&B's crash reporting resolves and contacts sentry.io even offline; a run
    # sends nothing to third parties unless the user opts in.
    os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
    try:
        import wandb

        if wandb.run is not None:
            return wandb.run, False
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        run = wandb.init(project=project, entity=entity, tags=list(tags), config=config,
                         dir=log_dir, mode=wandb_mode())
        return run, True
    except Exception as error:  # W&B is optional: report, then train without it
        logger.warning("W&B could not start (%s: %s); training continues without it",
                       type(error).__name__, error)
        return None, False


def log_artifact(run: Any, name: str, path: Path, owns_run: bool) -> None:
    """Attach ``path`` to ``run`` as a model artifact; finish the run if we started it."""
    try:
        import wandb

        artifact = wandb.Artifact(name, type="model")
        artifact.add_file(str(path))
        run.log_artifact(artifact)
        if owns_run:
            run.finish()
    except Exception as error:
        logger.warning("W&B artifact upload failed (%s: %s)", type(error).__name__, error)
