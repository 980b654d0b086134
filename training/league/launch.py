"""One league role's command line (:func:`run_role_cli`), and its run from Python
(:func:`run_role`).

This is the only home of the command line: the role modules the seeds document
(``python -m training.league.train_main_agent``, ``train_exploiter``,
``train_league_exploiter``) call :func:`run_role_cli` from their ``main``, and this
module finds the role classes in :mod:`training.league.roles`, never in those modules,
so the imports point one way. (All three roles at once, as processes watched and
restarted: :mod:`training.league.launcher`, which runs those command lines.)
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from storage.files import FolderInUseError
from training.league.layout import IN_USE_EXIT_CODE, STOPPED_EXIT_CODE
from training.league.role import LeagueRole, claim_role_folder
from training.league.roles import ROLE_CLASSES

logger = logging.getLogger(__name__)


def role_class(role: str) -> type[LeagueRole]:
    """The trainer class of ``role`` (``main_agent``, ``main_exploiter``,
    ``league_exploiter``).

    Raises:
        ValueError: for another role name.
    """
    if role not in ROLE_CLASSES:
        raise ValueError(f"role={role!r} is invalid: expected one of {', '.join(ROLE_CLASSES)}")
    return ROLE_CLASSES[role]


def run_role(role: str, config: Any, resume: dict[str, Any], *,
             stop_on_signals: bool = False) -> Any:
    """Train ``role`` with ``config``, continuing its checkpoint as ``resume`` says
    (``resume.auto``: the role's ``mappo_policy.pt`` if there is one).

    With ``stop_on_signals`` (the command line), SIGINT and SIGTERM received once the
    role is built stop it after the current rollout, with a checkpoint and the status
    ``stopped`` (:meth:`~training.league.role.LeagueRole.learn`); the handlers are
    restored on return. Before that (building, warm start) they act as usual:
    nothing is saved yet. Returns the role; ``role.done`` is False when it was stopped.

    The role's folder is claimed first of all (:func:`~training.league.role.claim_role_folder`):
    while another process trains it, nothing is started or written.

    Raises:
        storage.files.FolderInUseError: if another process owns the role's folder,
            naming its pid.
    """
    from training.common.tracking import start_wandb
    from training.mappo.checkpoints import resolve_resume

    folder_lock = claim_role_folder(Path(config.pool_manifest).parent)
    try:
        checkpoint = resolve_resume(resume, config)
        run, owns_run = (start_wandb(project=config.wandb_project, entity=config.wandb_entity,
                                     tags=config.wandb_tags, config=config.to_dict(),
                                     log_dir=config.log_dir)
                         if config.enable_wandb else (None, False))
        trainer = role_class(role).from_config(config, resume=checkpoint, run=run,
                                               folder_lock=folder_lock)
    except BaseException:
        folder_lock.release()
        raise
    with _stop_requests() if stop_on_signals else contextlib.nullcontext() as stop:
        trainer.learn(stop=stop)
    if owns_run:
        run.finish()
    return trainer


@contextlib.contextmanager
def _stop_requests() -> Iterator[Callable[[], bool]]:
    """While in the block, SIGINT and SIGTERM only note that a stop was asked for;
    yields the question "was it?"."""
    received: list[int] = []

    def note(signum: int, frame: Any) -> None:
        received.append(signum)

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield lambda: bool(received)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if received:
            logger.info("stopped by %s", signal.Signals(received[0]).name)


def run_role_cli(role: str, argv: list[str] | None = None) -> None:
    """The Hydra command line of ``configs/league/{role}.yaml``; exits with
    :data:`STOPPED_EXIT_CODE` when SIGINT or SIGTERM stopped the role, and with
    :data:`IN_USE_EXIT_CODE` (the refusal on stderr, naming the owner's pid) when another
    process owns the role's folder.

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
    trained: list[Any] = []
    refused: list[FolderInUseError] = []

    def app(config: Any, resume: dict[str, Any]) -> None:
        try:
            trained.append(run_role(role, config, resume, stop_on_signals=True))
        except FolderInUseError as error:  # not a crash: reported plainly, not by Hydra
            refused.append(error)

    CONFIG_FILES[role].run(app)
    if refused:
        print(f"{type(refused[0]).__name__}: {refused[0]}", file=sys.stderr, flush=True)
        sys.exit(IN_USE_EXIT_CODE)
    if trained and not trained[0].done:  # stopped by a signal
        sys.exit(STOPPED_EXIT_CODE)


__all__ = ["IN_USE_EXIT_CODE", "STOPPED_EXIT_CODE", "role_class", "run_role", "run_role_cli"]
