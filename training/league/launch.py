"""Starting league roles: one role from its Hydra command line (:func:`run_role_cli`)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def role_class(role: str) -> type:
    """The trainer class of ``role`` (``main_agent``, ``main_exploiter``,
    ``league_exploiter``)."""
    from training.league.train_exploiter import MainExploiterTrainer
    from training.league.train_league_exploiter import LeagueExploiterTrainer
    from training.league.train_main_agent import MainAgentTrainer

    return {"main_agent": MainAgentTrainer, "main_exploiter": MainExploiterTrainer,
            "league_exploiter": LeagueExploiterTrainer}[role]


def run_role(role: str, config: Any, resume: dict[str, Any]) -> Any:
    """Train ``role`` with ``config``, continuing its checkpoint as ``resume`` says
    (``resume.auto``: the role's ``mappo_policy.pt`` if there is one)."""
    from training.common.tracking import start_wandb
    from training.mappo.checkpoints import resolve_resume

    checkpoint = resolve_resume(resume, config)
    run, owns_run = (start_wandb(project=config.wandb_project, entity=config.wandb_entity,
                                 tags=config.wandb_tags, config=config.to_dict(),
                                 log_dir=config.log_dir)
                     if config.enable_wandb else (None, False))
    trainer = role_class(role).from_config(config, resume=checkpoint, run=run)
    trainer.learn()
    if owns_run:
        run.finish()
    return trainer


def run_role_cli(role: str, argv: list[str] | None = None) -> None:
    """The Hydra command line of ``configs/league/{role}.yaml``.

    A relative ``--config-path`` is taken from the current folder (Hydra would take it
    from the folder of the module that declares the app).
    """
    from training.league.config import CONFIG_FILES

    args = list(sys.argv[1:] if argv is None else argv)
    for i, arg in enumerate(args):
        if arg in ("--config-path", "-cp") and i + 1 < len(args):
            args[i + 1] = str(Path(args[i + 1]).resolve())
        elif arg.startswith("--config-path="):
            args[i] = "--config-path=" + str(Path(arg.split("=", 1)[1]).resolve())
    sys.argv = [sys.argv[0], *args]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    CONFIG_FILES[role].run(lambda config, resume: run_role(role, config, resume))


__all__ = ["role_class", "run_role", "run_role_cli"]
