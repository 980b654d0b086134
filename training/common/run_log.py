"""The one run log every trainer of the project writes through.

A :class:`RunLog` owns what a training run leaves for people to read: the TensorBoard
event files of one folder (``log_dir/mappo``, ``log_dir/wfm1``, ``log_dir/<agent_id>`` of
a league role), every number of every :meth:`RunLog.log` call at the run's env-step; the
W&B run (:mod:`training.common.tracking`), which gets every logged dict whole; the run's
history (the logged dicts kept in a list the trainer hands over, and a JSON-lines file of
rows the trainer composes, :meth:`RunLog.append_history`); and the pictures drawn from
the event files at the end (:meth:`RunLog.draw_plots`). Logging never touches the maths:
no random draw, no tensor of the run. The SB3 stack (:func:`training.train`) logs through
SB3's own logger instead.
"""

from __future__ import annotations

import logging
import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from storage.files import append_json_line
from training.common.tracking import start_wandb
from training.plots import plot_run

logger = logging.getLogger(__name__)


def scalar_items(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The entries of ``metrics`` that TensorBoard records: real numbers (NaN and
    infinities included, which TensorBoard keeps), not booleans, strings or others."""
    return {key: value for key, value in metrics.items()
            if isinstance(value, numbers.Real) and not isinstance(value, bool)}


class RunLog:
    """A training run's TensorBoard files, W&B run, history and pictures (module docstring).

    The event files are opened by :meth:`open`, or by the first :meth:`log`; a log that
    is never written leaves no folder behind.

    Args:
        folder: the folder of the run's TensorBoard event files and pictures.
        run: the W&B run to log to (a caller's, or one :meth:`for_config` started), or None.
        owns_run: whether :meth:`close` finishes ``run`` (this log started it).
        history: a list every logged dict is appended to, or None.
        history_file: the JSON-lines file :meth:`append_history` appends to, or None.

    Raises:
        TypeError: if ``history`` is not a list or None.
    """

    def __init__(self, folder: str | Path, *, run: Any = None, owns_run: bool = False,
                 history: list[dict[str, Any]] | None = None,
                 history_file: str | Path | None = None) -> None:
        if history is not None and not isinstance(history, list):
            raise TypeError(f"history={type(history).__name__} is invalid: expected a list "
                            "or None")
        self.folder = Path(folder)
        self.run = run
        self.owns_run = bool(owns_run) and run is not None
        self.history = history
        self.history_file = None if history_file is None else Path(history_file)
        self._writer: Any = None

    @classmethod
    def for_config(cls, folder: str | Path, config: Any, **kwargs: Any) -> RunLog:
        """A log whose W&B run is started here (and finished by :meth:`close`) when
        ``config.enable_wandb``, from ``config``'s ``wandb_project``, ``wandb_entity``,
        ``wandb_tags``, ``log_dir`` and ``to_dict()``; ``kwargs`` as the constructor's.
        A caller's active W&B run is used and left open."""
        run, owns_run = (start_wandb(project=config.wandb_project, entity=config.wandb_entity,
                                     tags=config.wandb_tags, config=config.to_dict(),
                                     log_dir=config.log_dir) if config.enable_wandb
                         else (None, False))
        return cls(folder, run=run, owns_run=owns_run, **kwargs)

    @property
    def is_open(self) -> bool:
        """Whether the TensorBoard event file is open."""
        return self._writer is not None

    def open(self) -> RunLog:
        """Open a new TensorBoard event file in :attr:`folder` (created) unless one is open."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(self.folder))
        return self

    def log(self, metrics: dict[str, Any], step: int) -> None:
        """Record ``metrics`` at env-step ``step``: appended to :attr:`history`, their
        numbers (:func:`scalar_items`) to TensorBoard, the whole dict to W&B."""
        if self.history is not None:
            self.history.append(metrics)
        self.open()
        for key, value in scalar_items(metrics).items():
            self._writer.add_scalar(key, value, step)
        if self.run is not None:
            self.run.log(dict(metrics), step=step)

    def append_history(self, row: dict[str, Any]) -> None:
        """Append ``row`` as one JSON line to :attr:`history_file` (under its lock, one
        complete line: :func:`storage.files.append_json_line`).

        Raises:
            ValueError: if this log has no history file.
        """
        if self.history_file is None:
            raise ValueError(f"the run log of {self.folder} has no history_file to append to")
        append_json_line(self.history_file, row)

    def close(self) -> None:
        """Flush and close the event file; finish the W&B run if this log started it. A
        later :meth:`log` opens a new event file in the same folder."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self.owns_run:
            self.run.finish()
            self.run, self.owns_run = None, False

    def draw_plots(self, anchors: Mapping[str, float] | None = None) -> list[Path]:
        """The run's pictures from its event files, beside them
        (:func:`training.plots.plot_run`: nothing when nothing was logged; a failure is
        logged, not raised). ``anchors`` are fixed-rating opponents for the Elo picture.

        Returns:
            The paths written.
        """
        return plot_run(self.folder, anchors=anchors)


__all__ = ["RunLog", "scalar_items"]
