"""MAPPO training checkpoints: everything a killed run needs to go on, and nothing that runs.

A checkpoint is the project's one training checkpoint (:class:`models.weights.TrainingCheckpoint`,
``kind`` ``"mappo"``): the policy's constructor arguments and weights, the optimiser,
the counters (``total_steps``, ``episodes``, ``self_play_version``, ``ppo_steps``), the random
generators (``numpy``: the run's generator, ``torch``: the global one, ``minibatch``:
the minibatch generator) and the extras (``config``, ``curriculum``, ``driver``:
what a driver of the trainer such as a league role keeps with it, and
``formation_reference``: the weights a ``formation_pull`` pulls toward, or None), as
tensors and plain values, so it loads with ``weights_only=True``. It is written
atomically: a kill leaves the previous checkpoint or the new one, never half of either.
A file without ``checkpoint_format`` (``numpy_rng``, ``torch_rng``, ``minibatch_rng``,
``config``, ``curriculum``, ``self_play_version`` and ``extra`` as top-level keys beside
``kwargs``, the weights and the counters) loads through :func:`read_legacy_checkpoint`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.mappo_files import policy_from_kwargs
from models.mappo_policy import MAPPOPolicy
from models.weights import (
    TrainingCheckpoint,
    check_legacy_keys,
    read_checkpoint,
    write_checkpoint,
)
from storage.files import existing_regular_file

CHECKPOINT_NAME = "mappo_policy.pt"
"""The periodic checkpoint of a run, replaced every ``checkpoint_freq`` env-steps."""
FINAL_CHECKPOINT_NAME = "mappo_policy_final.pt"
"""The checkpoint written when a run ends."""
KIND = "mappo"
"""The ``kind`` of MAPPO's training checkpoints."""

_LEGACY_REQUIRED = frozenset({"kwargs", "policy_state_dict", "optimizer_state_dict",
                              "total_steps", "episodes", "numpy_rng", "torch_rng",
                              "minibatch_rng"})


def save_checkpoint(path: Path, policy: MAPPOPolicy, optimizer: torch.optim.Optimizer,
                    total_steps: int, episodes: int, config: Any,
                    scheduler: Any, rng: np.random.Generator,
                    generator: torch.Generator, self_play_version: int,
                    extra: dict[str, Any] | None = None, *, ppo_steps: int = 0,
                    formation_reference: MAPPOPolicy | None = None) -> Path:
    """Write a resumable checkpoint atomically (only tensors and plain values).

    Args:
        path: where to write it.
        policy, optimizer: the learner and its Adam state.
        total_steps, episodes: the run's counters.
        config: the run's :class:`~training.mappo.config.MAPPOConfig` (stored as a dict).
        scheduler: the :class:`~training.curriculum_scheduler.CurriculumScheduler`, or None.
        rng, generator: the run's NumPy generator and the minibatch generator (the
            global torch generator is saved too).
        self_play_version: the last snapshot version added to the pool.
        extra: plain values a driver of the trainer keeps with it (a league role's
            counters and reset state), or None.
        ppo_steps: the env-steps of MAPPO updates so far (the critic warm-up's clock).
        formation_reference: the policy the run's ``formation_pull`` pulls toward, or None.

    Returns:
        ``path``.
    """
    return write_checkpoint(path, TrainingCheckpoint(
        kind=KIND, kwargs=policy.kwargs, weights=policy.state_dict(),
        optimizer=optimizer.state_dict(),
        counters={"total_steps": int(total_steps), "episodes": int(episodes),
                  "self_play_version": int(self_play_version), "ppo_steps": int(ppo_steps)},
        rng={"numpy": rng.bit_generator.state, "torch": torch.get_rng_state(),
             "minibatch": generator.get_state()},
        extras={"config": config.to_dict(),
                "curriculum": None if scheduler is None else scheduler.state_dict(),
                "driver": extra,
                "formation_reference": None if formation_reference is None
                else formation_reference.state_dict()}))


def load_checkpoint(path: str | Path) -> TrainingCheckpoint:
    """Read a checkpoint written by :func:`save_checkpoint`, or one without
    ``checkpoint_format`` (:func:`read_legacy_checkpoint`); never unpickles code.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if it is not a MAPPO training checkpoint.
    """
    return read_checkpoint(path, "MAPPO checkpoint", KIND, legacy=read_legacy_checkpoint)


def read_legacy_checkpoint(data: Any, source: str) -> TrainingCheckpoint:
    """A MAPPO checkpoint without ``checkpoint_format`` (the version-1 layout of the module
    docstring), as a :class:`~models.weights.TrainingCheckpoint`.

    Raises:
        ValueError: naming ``source`` if a key of that layout is missing.
    """
    check_legacy_keys(data, source, "MAPPO", _LEGACY_REQUIRED)
    return TrainingCheckpoint(
        kind=KIND, kwargs=data["kwargs"], weights=data["policy_state_dict"],
        optimizer=data["optimizer_state_dict"],
        counters={"total_steps": data["total_steps"], "episodes": data["episodes"],
                  "self_play_version": data.get("self_play_version", 0)},
        rng={"numpy": data["numpy_rng"], "torch": data["torch_rng"],
             "minibatch": data["minibatch_rng"]},
        extras={"config": data.get("config"), "curriculum": data.get("curriculum"),
                "driver": data.get("extra")})


def policy_from_checkpoint(path: str | Path) -> MAPPOPolicy:
    """The policy of a MAPPO training checkpoint, in eval mode."""
    checkpoint = load_checkpoint(path)
    return policy_from_kwargs(checkpoint.kwargs, checkpoint.weights,
                              f"MAPPO checkpoint {path}").eval()


def resolve_resume(resume: dict[str, Any], config: Any) -> Path | None:
    """The checkpoint a CLI run continues from: ``resume.checkpoint`` if set (it must
    be a regular file), else with ``resume.auto`` the ``mappo_policy.pt`` of
    ``config.checkpoint_dir`` if present (the one checkpoint MAPPO rewrites, atomically,
    so it is the newest complete one).

    Raises:
        FileNotFoundError: if ``resume.checkpoint`` names no file.
        UnreadableFileError: (a ``ValueError``) if it names a folder, a FIFO or a device.
    """
    explicit = resume.get("checkpoint")
    if explicit:
        return existing_regular_file(explicit, "resume.checkpoint")
    if resume.get("auto"):
        path = Path(config.checkpoint_dir) / CHECKPOINT_NAME
        return path if path.is_file() else None
    return None


__all__ = ["CHECKPOINT_NAME", "FINAL_CHECKPOINT_NAME", "KIND", "load_checkpoint",
           "policy_from_checkpoint", "read_legacy_checkpoint", "resolve_resume",
           "save_checkpoint"]
