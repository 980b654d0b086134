"""Play batches of battles between two commanders and score them: the one evaluation loop.

Every evaluation, a duel against a scripted level, a team against a pool snapshot,
a learner against its past selves, is :func:`play`: ``n`` battles run at once as
one batch, every battle is stepped until all are over, and the first end of each
decides its outcome from Blue's side (:data:`WIN`, :data:`DRAW` or :data:`LOSS`).
The kind of battle and how each side gives its orders belong to the ``settings``:
:class:`training.evaluate.DuelSettings` for 1v1 duels,
:class:`training.mappo.battles.TeamSettings` for N-vs-M battles. :func:`score`
turns outcomes into Elo's score.

:func:`play` trusts its arguments; the checked front doors are
:func:`training.evaluate.play_duels` and :func:`training.mappo.battles.play_team_battles`
(and the documented functions built on them).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from envs.battles.multi_battalion_batch import BLUE, RED

WIN, DRAW, LOSS = 1, 0, -1


class Battles(Protocol):
    """A batch of battles played in lock step, seen from Blue's side."""

    def step(self) -> np.ndarray:
        """Both sides give their orders and every battle advances one step.

        Returns:
            (n,) bool: the battles that are over after this step (one that was
            over already may stay over or restart: only its first end counts).
        """
        ...

    def outcomes(self) -> np.ndarray:
        """(n,) int8 outcomes from Blue's side of the battles that ended on the last step
        (:data:`WIN`, :data:`DRAW` or :data:`LOSS`; other entries mean nothing)."""
        ...


class Settings(Protocol):
    """A kind of battle and how its commanders give their orders."""

    def battles(self, blue: Any, red: Any, n: int,
                seed: int) -> AbstractContextManager[Battles]:
        """``n`` battles of ``blue`` against ``red``, battle ``i`` seeded ``seed + i``,
        open while the context lasts."""
        ...


def play(blue: Any, red: Any, n: int, seed: int, settings: Settings,
         lengths: np.ndarray | None = None) -> np.ndarray:
    """Play ``n`` battles at once between ``blue`` and ``red``.

    Args:
        blue: Blue's commander, of a kind ``settings`` knows (a model with
            ``predict`` for duels, a MAPPO policy for team battles).
        red: Red's commander, likewise (an opponent name or policy for duels, a
            scripted level or a MAPPO policy for team battles).
        n: battles (>= 1), played as one batch.
        seed: base seed (>= 0); battle ``i`` is episode 0 of seed ``seed + i``.
        settings: the kind of battle and how both sides act.
        lengths: if given, an (n,) integer array filled with each battle's length in
            steps.

    Returns:
        (n,) int8 outcomes from Blue's side: :data:`WIN`, :data:`DRAW` or :data:`LOSS`.
    """
    outcomes = np.full(n, DRAW, np.int8)
    finished = np.zeros(n, bool)
    steps = 0
    with settings.battles(blue, red, n, seed) as battles:
        while not finished.all():
            ended = battles.step() & ~finished
            steps += 1
            if ended.any():  # outcomes are read only when needed: they may cost a copy
                outcomes[ended] = battles.outcomes()[ended]
                finished |= ended
                if lengths is not None:
                    lengths[ended] = steps
    return outcomes


def score(outcomes: np.ndarray) -> float:
    """Elo score of a set of outcomes: (wins + draws / 2) / n."""
    return float(((outcomes == WIN) + 0.5 * (outcomes == DRAW)).mean())


def team_outcomes(winner: np.ndarray) -> np.ndarray:
    """(n,) int8 outcomes from Blue's side of N-vs-M battles' ``winner`` codes
    (:class:`~envs.battles.multi_battalion_batch.TeamStep`: Blue, Red, or no winner)."""
    return np.where(winner == BLUE, WIN, np.where(winner == RED, LOSS, DRAW)).astype(np.int8)


def share(outcomes: np.ndarray) -> str:
    """``won/drawn/lost`` in percent, as the benchmarks' tables print them."""
    return "/".join(f"{100 * np.mean(outcomes == k):.1f}" for k in (WIN, DRAW, LOSS))


__all__ = ["DRAW", "LOSS", "WIN", "Battles", "Settings", "play", "score", "share",
           "team_outcomes"]
