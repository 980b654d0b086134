"""WFM-1 training checkpoints: the weights, the optimiser, the counters and the generators.

A checkpoint is the project's one training checkpoint
(:class:`models.weights.TrainingCheckpoint`, ``kind`` ``"wfm1"``): the policy's constructor
arguments and weights, the optimiser, the counters (``total_steps``, ``episodes``,
``updates``, ``best_validation``, ``self_play_version``), the random generators and the
run's config. It is written atomically and read with ``weights_only=True``;
:meth:`models.wfm1.WFM1Policy.load_checkpoint` reads its policy, so every checkpoint of a
run is also a policy file. :func:`newest_checkpoint` finds the one to resume from among
a run's folder's ``wfm1_<steps>_steps.pt``, ``wfm1_latest.pt`` and ``wfm1_warm_start.pt``,
skipping, with a warning naming it, any that cannot be read. A file without
``checkpoint_format`` (``config``, ``state_dict``, ``optimizer``, ``counters`` as
``[total_steps, updates, episodes]``, ``best_validation``, ``numpy_rng``, ``torch_rng``)
loads through :func:`read_legacy_checkpoint`. ``docs/wfm1.md`` ("Training") lists a run's
checkpoints.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.weights import (
    TrainingCheckpoint,
    check_legacy_keys,
    read_checkpoint,
    write_checkpoint,
)
from models.wfm1 import TRAINING_CHECKPOINT_KIND as KIND
from models.wfm1 import WFM1Policy
from storage.files import existing_regular_file, numbered_files

logger = logging.getLogger(__name__)

LATEST = "wfm1_latest.pt"
"""The newest checkpoint, rewritten beside every step checkpoint and at the end."""
FINAL = "wfm1_final.pt"
"""The checkpoint written when the run ends."""
WARM_START = "wfm1_warm_start.pt"
"""The checkpoint written after the warm start (the imitation alone)."""
BEST = "wfm1_best.pt"
"""The policy that won most validation battles so far."""
STEP_PREFIX, STEP_SUFFIX = "wfm1_", "_steps.pt"
"""A step checkpoint is ``wfm1_<total_steps>_steps.pt``."""

_LEGACY_REQUIRED = frozenset({"config", "state_dict", "optimizer", "counters", "numpy_rng",
                              "torch_rng"})


def save_checkpoint(path: str | Path, policy: WFM1Policy, optimizer: torch.optim.Optimizer, *,
                    total_steps: int, updates: int, episodes: int, best_validation: float,
                    rng: np.random.Generator, config: Any, self_play_version: int = 0) -> Path:
    """Write a resumable WFM-1 checkpoint to ``path`` atomically.

    Args:
        path: where to write it.
        policy: the learner.
        optimizer: its Adam state.
        total_steps: the run's env-steps so far.
        updates: the run's updates so far.
        episodes: the run's finished battles so far.
        best_validation: the best validation win rate so far (-1: none measured).
        rng: the run's NumPy generator (the global torch generator is saved too).
        config: the run's :class:`~training.wfm1.config.WFM1TrainConfig` (kept as a dict).
        self_play_version: the last snapshot version the run added to its self-play pool
            (0: none), so a resumed run continues the numbering.

    Returns:
        ``path`` as a Path.
    """
    return write_checkpoint(path, TrainingCheckpoint(
        kind=KIND, kwargs=policy.kwargs, weights=policy.state_dict(),
        optimizer=optimizer.state_dict(),
        counters={"total_steps": int(total_steps), "episodes": int(episodes),
                  "updates": int(updates), "best_validation": float(best_validation),
                  "self_play_version": int(self_play_version)},
        rng={"numpy": rng.bit_generator.state, "torch": torch.get_rng_state()},
        extras={"config": config.to_dict()}))


def load_checkpoint(path: str | Path) -> TrainingCheckpoint:
    """Read a checkpoint written by :func:`save_checkpoint`, or one without
    ``checkpoint_format`` (:func:`read_legacy_checkpoint`); never unpickles code.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if it is not a WFM-1 training checkpoint.
    """
    return read_checkpoint(path, "WFM-1 checkpoint", KIND, legacy=read_legacy_checkpoint)


def resume_file(path: str | Path, field: str = "resume") -> Path:
    """``path`` if it can be a checkpoint to resume from: checked before the trainer
    builds anything, so a FIFO or a folder is refused at once instead of hanging.

    Raises:
        FileNotFoundError: naming ``field`` if nothing is at ``path``.
        UnreadableFileError: (a ``ValueError``) naming ``field`` for anything but a
            regular file.
    """
    return existing_regular_file(path, field)


def newest_checkpoint(folder: str | Path) -> Path | None:
    """The newest complete checkpoint of the run in ``folder`` (module docstring), or
    None if there is none; one that cannot be read is logged as a warning and skipped.

    The step files' steps are in their names; ``wfm1_latest.pt`` and
    ``wfm1_warm_start.pt`` are read for theirs. At equal steps ``wfm1_latest.pt`` wins.
    """
    folder = Path(folder)
    candidates: list[tuple[Path, int]] = []
    for name in (LATEST, WARM_START):
        path = folder / name
        if not (path.exists() or path.is_symlink()):
            continue
        try:
            candidates.append((path, int(load_checkpoint(path).counters["total_steps"])))
        except (OSError, ValueError) as error:
            logger.warning("skipping WFM-1 checkpoint %s: %s", path, error)
    candidates += numbered_files(folder, STEP_PREFIX, STEP_SUFFIX, "WFM-1 checkpoint")
    # Newest first; sorting is stable, so at equal steps the file listed first wins.
    for path, _ in sorted(candidates, key=lambda item: item[1], reverse=True):
        if path.name in (LATEST, WARM_START):
            return path  # already read above
        try:
            load_checkpoint(path)
        except (OSError, ValueError) as error:
            logger.warning("skipping WFM-1 checkpoint %s: %s", path, error)
            continue
        return path
    return None


def read_legacy_checkpoint(data: Any, source: str) -> TrainingCheckpoint:
    """A WFM-1 checkpoint without ``checkpoint_format`` (the version-1 layout of the module
    docstring), as a :class:`~models.weights.TrainingCheckpoint`.

    Raises:
        ValueError: naming ``source`` if a key of that layout is missing or the counters
            are not ``[total_steps, updates, episodes]``.
    """
    check_legacy_keys(data, source, "WFM-1", _LEGACY_REQUIRED)
    counters = data["counters"]
    if not isinstance(counters, (list, tuple)) or len(counters) != 3:
        raise ValueError(f"{source} has counters={counters!r}: expected [total_steps, "
                         "updates, episodes]")
    total_steps, updates, episodes = (int(value) for value in counters)
    return TrainingCheckpoint(
        kind=KIND, kwargs=data["config"], weights=data["state_dict"],
        optimizer=data["optimizer"],
        counters={"total_steps": total_steps, "episodes": episodes, "updates": updates,
                  "best_validation": float(data.get("best_validation", -1.0))},
        rng={"numpy": data["numpy_rng"], "torch": data["torch_rng"]}, extras={})


__all__ = ["BEST", "FINAL", "KIND", "LATEST", "STEP_PREFIX", "STEP_SUFFIX", "WARM_START",
           "load_checkpoint", "newest_checkpoint", "read_legacy_checkpoint", "resume_file",
           "save_checkpoint"]
