"""MAPPO training checkpoints: everything a killed run needs to go on, and nothing that runs.

A checkpoint holds the policy's constructor arguments and weights, the
optimiser, the step and episode counters, the config, the curriculum, the
self-play version and every random generator, as tensors and plain values, so
it loads with ``weights_only=True``. It is written atomically: a kill leaves the
previous checkpoint or the new one, never half of either.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.mappo_files import policy_from_kwargs
from models.mappo_policy import MAPPOPolicy
from models.weights import load_weights
from storage.files import atomic_write_bytes

CHECKPOINT_NAME = "mappo_policy.pt"
"""The periodic checkpoint of a run, replaced every ``checkpoint_freq`` env-steps."""
FINAL_CHECKPOINT_NAME = "mappo_policy_final.pt"
"""The checkpoint written when a run ends."""

_REQUIRED = frozenset({"kwargs", "policy_state_dict", "optimizer_state_dict", "total_steps",
                       "episodes", "numpy_rng", "torch_rng", "minibatch_rng"})


def save_checkpoint(path: Path, policy: MAPPOPolicy, optimizer: torch.optim.Optimizer,
                    total_steps: int, episodes: int, config: Any,
                    scheduler: Any, rng: np.random.Generator,
                    generator: torch.Generator, self_play_version: int,
                    extra: dict[str, Any] | None = None) -> Path:
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

    Returns:
        ``path``.
    """
    buffer = io.BytesIO()
    torch.save({
        "kwargs": policy.kwargs,
        "policy_state_dict": policy.state_dict(),
        "optimizer_state_dict": optimizer.state_dict(),
        "total_steps": int(total_steps),
        "episodes": int(episodes),
        "config": config.to_dict(),
        "curriculum": None if scheduler is None else scheduler.state_dict(),
        "numpy_rng": rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "minibatch_rng": generator.get_state(),
        "self_play_version": int(self_play_version),
        "extra": extra,
    }, buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (never unpickles code).

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if it is not a MAPPO training checkpoint.
    """
    path = Path(path)
    data = load_weights(path, "MAPPO checkpoint")
    missing = _REQUIRED - set(data if isinstance(data, dict) else ())
    if missing:
        raise ValueError(f"{path} is not a MAPPO training checkpoint: missing {sorted(missing)}")
    return data


def policy_from_checkpoint(path: str | Path) -> MAPPOPolicy:
    """The policy of a MAPPO training checkpoint, in eval mode."""
    data = load_checkpoint(path)
    return policy_from_kwargs(data["kwargs"], data["policy_state_dict"],
                              f"MAPPO checkpoint {path}").eval()


def resolve_resume(resume: dict[str, Any], config: Any) -> Path | None:
    """The checkpoint a CLI run continues from: ``resume.checkpoint`` if set (it must
    exist), else with ``resume.auto`` the ``mappo_policy.pt`` of ``config.checkpoint_dir``
    if present.

    Raises:
        FileNotFoundError: if ``resume.checkpoint`` names no file.
    """
    explicit = resume.get("checkpoint")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise FileNotFoundError(f"resume.checkpoint={explicit!r}: no such checkpoint")
        return path
    if resume.get("auto"):
        path = Path(config.checkpoint_dir) / CHECKPOINT_NAME
        return path if path.is_file() else None
    return None


__all__ = ["CHECKPOINT_NAME", "FINAL_CHECKPOINT_NAME", "load_checkpoint",
           "policy_from_checkpoint", "resolve_resume", "save_checkpoint"]
