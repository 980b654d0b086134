"""What a league role drives: the :class:`Learner` protocol.

A :class:`~training.league.role.LeagueRole` trains one learner against the league's
members, one rollout at a time: a :class:`~training.mappo.trainer.MAPPOTrainer`
(battalion commanders) or an :class:`~training.league.echelon_learner.EchelonLearner`
(brigade or division commanders). The protocol lists exactly what the role calls, in
this order each rollout: ``deal``, ``collect_rollout``, ``learn_from``,
``opponent_battles``, then ``save_snapshot``, ``play_matches`` and ``save`` when due.
``isinstance(obj, Learner)`` checks that every member is present.
"""


from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import torch


@runtime_checkable
class LearnerRollout(Protocol):
    """What a role reads of a rollout: every battle that ended in it, in the order they
    ended."""

    scores: list[float]
    """The learner's score in each: 1 won, 0.5 drawn, 0 lost."""
    episode_battles: list[int]
    """The index of the battle (of the learner's ``config.n_envs``) it was fought in."""


@runtime_checkable
class Learner(Protocol):
    """A learner a league role can drive (module docstring).

    Attributes:
        config: the run's settings; the role reads ``total_timesteps`` (its budget in
            the learner's steps), ``n_envs`` (training battles), ``seed`` (the base seed
            of evaluation matches), ``checkpoint_dir`` and ``log_dir``.
        rng: the run's NumPy generator; the role draws its opponents and resets from
            it, so that one generator (checkpointed by :meth:`save`) orders every draw.
        total_steps: steps trained so far (``learn_from`` adds ``rollout_steps``).
        rollout_steps: steps one rollout adds (every battle's steps together).
        policy: the module the role snapshots and resets.
        optimizer: the policy's optimiser (a reset clears its state).
        resumed_extra: the ``extra`` values of the checkpoint resumed, or None.
        final_checkpoint: the path of the final checkpoint, set by the role when it
            finishes (None before).
        CHECKPOINT_NAME, FINAL_CHECKPOINT_NAME: file names of the resumable and the
            final checkpoint in the role's folder.
        SNAPSHOT_SUFFIX: the suffix of a snapshot file (``.pt``, ``.zip``).
    """

    CHECKPOINT_NAME: ClassVar[str]
    FINAL_CHECKPOINT_NAME: ClassVar[str]
    SNAPSHOT_SUFFIX: ClassVar[str]

    config: Any
    rng: np.random.Generator
    total_steps: int
    rollout_steps: int
    policy: torch.nn.Module
    optimizer: torch.optim.Optimizer
    resumed_extra: dict[str, Any] | None
    final_checkpoint: Path | None

    @property
    def warm_started(self) -> bool:
        """Whether the run started from trained weights (a reset then goes back to them
        rather than to fresh ones)."""
        ...

    @property
    def scripted_opponent_id(self) -> str:
        """The league id of the scripted Red in the battles nobody is dealt."""
        ...

    # --- a rollout and an update ---------------------------------------------------------

    def deal(self, opponents: Sequence[Any], scripted_share: float) -> None:
        """Let ``opponents`` (frozen policies, as :meth:`load_snapshot` and
        :meth:`frozen_copy` give them) command Red in equal shares of the training
        battles not kept scripted (``scripted_share`` of them, in [0, 1])."""
        ...

    def opponent_battles(self) -> Sequence[tuple[Any, np.ndarray]]:
        """``(opponent, battle indices)`` of the last :meth:`deal`."""
        ...

    def collect_rollout(self) -> LearnerRollout:
        """One rollout of every training battle, the learner sampling from its policy.

        A learner whose library collects and updates in one call (the
        EchelonLearner: SB3's ``learn``) runs the update here too; the role calls
        :meth:`learn_from` right after, with nothing between the two."""
        ...

    def learn_from(self, rollout: Any) -> dict[str, Any]:
        """The PPO update on ``rollout`` (the one just collected), or its report when
        :meth:`collect_rollout` ran it; advances ``total_steps`` by ``rollout_steps``;
        returns the update's metrics."""
        ...

    def behaviour_trajectory(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Battle 0's actions and positions over the last rollout (the behaviour
        embedding's trajectory), or None before the first rollout."""
        ...

    # --- matches -------------------------------------------------------------------------

    def anchors(self) -> dict[str, Any]:
        """The league's fixed members (scripted L5, the doctrine) as opponents, by id."""
        ...

    def play_matches(self, opponents: dict[str, Any], n_episodes: int, seed: int, *,
                     opponent_deterministic: bool = False) -> dict[str, np.ndarray]:
        """Each opponent's outcomes (the learner's side: 1 won, 0 drawn, -1 lost) of
        ``n_episodes`` battles against the learner acting on its policy's mean, battle
        ``i`` seeded ``seed + i``."""
        ...

    # --- snapshots and checkpoints ---------------------------------------------------------

    def save_snapshot(self, path: Path, version: int) -> Path:
        """The policy's current weights as a snapshot file at ``path`` (atomically);
        returns the path."""
        ...

    def load_snapshot(self, path: str | Path) -> Any:
        """A snapshot file's frozen policy, as :meth:`deal` and :meth:`play_matches`
        take it."""
        ...

    def snapshot_weights(self, path: str | Path) -> dict[str, torch.Tensor]:
        """A snapshot file's policy weights (a reset's target)."""
        ...

    def frozen_copy(self) -> Any:
        """The learner's current weights as a frozen policy (self-play)."""
        ...

    def save(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        """A resumable checkpoint at ``path`` (atomically) holding the driver's
        ``extra`` plain values (read back as ``resumed_extra``); returns the path."""
        ...

    def close(self) -> None:
        """Release what the learner started (workers, environments)."""
        ...


LEARNER_MEMBERS: tuple[str, ...] = tuple(sorted({
    *Learner.__annotations__,
    *(name for name, value in vars(Learner).items()
      if not name.startswith("_") and (callable(value) or isinstance(value, property)))}))
"""The names :class:`Learner` declares (its attributes, properties and methods)."""


def missing_members(obj: Any) -> list[str]:
    """The :data:`LEARNER_MEMBERS` that ``obj`` lacks (empty for a learner)."""
    return [name for name in LEARNER_MEMBERS if not hasattr(obj, name)]


__all__ = ["LEARNER_MEMBERS", "Learner", "LearnerRollout", "missing_members"]
