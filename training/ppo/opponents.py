"""Opponents by name: ``scripted_l1`` .. ``scripted_l5``, ``random``, ``doctrine`` (the
disciplined doctrine the default run imitates), ``doctrine_<metres>`` (the same doctrine
halting and firing at another range, e.g. ``doctrine_70``), or a checkpoint path."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from envs.battles.battalion_batch import RedPolicy
from envs.commanders.doctrine import DisciplinedCommander
from envs.sim.constants import (
    ACTION_DIM,
    ACTION_HIGH,
    ACTION_LOW,
    NUM_CURRICULUM_LEVELS,
    SCRIPTED_LEVELS,
)
from envs.sim.validation import check_path, short_repr
from models.weights import checkpoint_path

SCRIPTED_OPPONENTS = tuple(f"scripted_l{level}" for level in SCRIPTED_LEVELS)
NAMED_OPPONENTS = (*SCRIPTED_OPPONENTS, "random", "doctrine")
_DOCTRINE_AT = re.compile(r"doctrine_([1-9][0-9]*)")


def doctrine_hold_range(name: object) -> float | None:
    """The hold range in metres a ``doctrine_<metres>`` name gives (``doctrine``: the
    doctrine's own 60), or None for any other opponent."""
    if name == "doctrine":
        return DisciplinedCommander().hold_range
    match = _DOCTRINE_AT.fullmatch(name) if isinstance(name, str) else None
    return float(match.group(1)) if match else None


def is_named_opponent(name: object) -> bool:
    """Whether ``name`` is one of :data:`NAMED_OPPONENTS` or a ``doctrine_<metres>``."""
    return name in NAMED_OPPONENTS or doctrine_hold_range(name) is not None


class RandomPolicy:
    """Uniformly random ``[move, rotate, fire]`` orders, reproducible from ``seed``."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def predict(self, observation: np.ndarray,
                deterministic: bool = False) -> tuple[np.ndarray, None]:
        obs = np.asarray(observation)
        shape = (ACTION_DIM,) if obs.ndim == 1 else (obs.shape[0], ACTION_DIM)
        actions = self.rng.uniform(ACTION_LOW, ACTION_HIGH, size=shape).astype(np.float32)
        return actions, None


@dataclass(frozen=True)
class Opponent:
    """How Red is commanded: a scripted level, or a policy (with its level unused)."""

    name: str
    curriculum_level: int
    policy: RedPolicy | None


def resolve_opponent(opponent: str | RedPolicy, *, seed: int | None = None,
                     device: str = "cpu", map_diagonal: float | None = None) -> Opponent:
    """Turn an opponent name (or policy) into Red's commander.

    Args:
        opponent: ``scripted_l1`` .. ``scripted_l5``, ``random``, ``doctrine``,
            ``doctrine_<metres>`` (the doctrine halting at that range), the path of an
            SB3 ``.zip`` checkpoint (the suffix may be omitted), or any object
            with ``predict(obs, deterministic)`` (a loaded model, a snapshot).
        seed: seed of the ``random`` opponent.
        device: torch device for a checkpoint opponent.
        map_diagonal: the battles' map diagonal in metres, which the ``doctrine``
            reads its distances by; None: the default map's.

    Raises:
        ValueError: for a name that is neither a known opponent nor an existing file.
    """
    check_opponent(opponent)
    if not isinstance(opponent, (str, Path)):
        return Opponent(type(opponent).__name__, NUM_CURRICULUM_LEVELS, opponent)
    if opponent in SCRIPTED_OPPONENTS:
        return Opponent(opponent, int(opponent.removeprefix("scripted_l")), None)
    if opponent == "random":
        return Opponent(opponent, NUM_CURRICULUM_LEVELS, RandomPolicy(seed))
    hold_range = doctrine_hold_range(opponent)
    if hold_range is not None:
        doctrine = DisciplinedCommander(hold_range) if map_diagonal is None else \
            DisciplinedCommander(hold_range, map_diagonal=map_diagonal)
        return Opponent(opponent, NUM_CURRICULUM_LEVELS, doctrine)
    path = checkpoint_path(opponent)
    if path is None:
        raise ValueError(f"opponent={opponent!r} is invalid: expected one of "
                         f"{', '.join(NAMED_OPPONENTS)} or the path of an SB3 .zip checkpoint")
    from training.ppo.checkpoints import load_ppo

    return Opponent(str(path), NUM_CURRICULUM_LEVELS, load_ppo(path, device=device))


def check_opponent(opponent: object, name: str = "opponent") -> None:
    """Raise ``ValueError`` naming ``name`` unless ``opponent`` is an object with
    ``predict`` or a name or path (a checkpoint's existence is not checked here)."""
    if isinstance(opponent, (str, Path)):
        if not is_named_opponent(opponent):
            check_path(name, opponent)
    elif not callable(getattr(opponent, "predict", None)):
        raise ValueError(f"{name}={short_repr(opponent)} is invalid: expected a name, a "
                         "checkpoint path or an object with predict()")
