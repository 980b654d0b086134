"""How the historical benchmark scores predictions of battles' outcomes: its declared
split of the battles into training and held-out ones, the smoothing that turns counts of
simulated outcomes into probabilities, and the winner match, Brier score and log-loss
of any set of predictions.

**The split.** A battle is in the training split when a hash of its id (SHA-256 of
``SPLIT_KEY + ":" + id``, its first 64 bits read as a fraction of 2**64) falls below
:data:`TRAIN_SHARE`; otherwise it is held out. The split of a battle depends on its id
only: not on the file's order, on how many battles the file holds, or on any result, so
battles added later fall to either side without moving the others. Every choice made by
looking at results (:mod:`benchmarks.historical`: the doctrine's attack rule; the
baselines' fitted probabilities) is made on the training battles only.

**Outcomes** are indexed in :data:`OUTCOMES` order: Blue won, Red won, drawn. A
prediction of one battle is a hard winner and a probability for each outcome (a row
summing to 1).

**Scores** over a set of battles:

* winner match: the share whose predicted winner is history's (an indecisive battle
  is a miss for a rule that always names a winner);
* Brier score: the mean over battles of ``sum_k (p_k - o_k)^2`` over the three
  outcomes, ``o`` the one-hot historical outcome (Brier's original multi-category
  score: 0 is perfect, 2 the worst, 2/3 for a uniform guess);
* log-loss: the mean of ``-ln p`` of the historical outcome (natural log; ln 3 = 1.10
  for a uniform guess).

Simulated outcomes become probabilities by :func:`smoothed_probabilities`: ``(k + 0.5) /
(n + 1.5)`` for an outcome seen in ``k`` of ``n`` simulated battles (half a battle
added to each of the three outcomes, Jeffreys' prior), so no outcome has probability 0
and the log-loss stays finite.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from data.historical import check_historical_outcome
from envs.scenario import Scenario
from envs.scenario_battle import NO_WINNER

OUTCOMES = (0, 1, NO_WINNER)
"""The outcomes a probability row covers, in order: Blue won, Red won, drawn."""
TRAIN_SHARE = 2 / 3
"""Expected share of battles in the training split."""
SPLIT_KEY = "historical-benchmark-split-1"
"""Salt of the hash that splits the battles (a new key draws a new split)."""
PRIOR_COUNT = 0.5
"""Simulated battles added to each outcome's count before it becomes a probability."""


def in_training_split(battle_id: str, key: str = SPLIT_KEY,
                      train_share: float = TRAIN_SHARE) -> bool:
    """Whether the battle ``battle_id`` is in the training split (module docstring).

    Raises:
        TypeError: for an id or key that is not a string.
        ValueError: for a ``train_share`` outside [0, 1].
    """
    if not isinstance(battle_id, str) or not isinstance(key, str):
        raise TypeError(f"battle_id={battle_id!r} and key={key!r}: expected strings")
    if not 0 <= train_share <= 1:
        raise ValueError(f"train_share={train_share!r} is invalid: expected a share in [0, 1]")
    digest = hashlib.sha256(f"{key}:{battle_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < train_share


def historical_winner(scenario: Scenario) -> int:
    """History's winner of a battle entry: 0 Blue, 1 Red, -1 indecisive.

    Raises:
        envs.scenario.ScenarioError: if the entry's ``historical_outcome`` is invalid
            (:func:`data.historical.check_historical_outcome`).
    """
    winner = check_historical_outcome(scenario)["winner"]
    return {"blue": 0, "red": 1, None: NO_WINNER}[winner]


def outcome_index(winner: int) -> int:
    """The column of ``winner`` (0 Blue, 1 Red, -1 a draw) in a probability row.

    Raises:
        ValueError: for any other value.
    """
    if winner not in OUTCOMES:
        raise ValueError(f"winner={winner!r} is invalid: expected 0 (Blue), 1 (Red) or "
                         f"{NO_WINNER} (a draw)")
    return OUTCOMES.index(winner)


def smoothed_probabilities(counts: Sequence[float]) -> np.ndarray:
    """Probabilities of the three outcomes from how often each happened:
    ``(counts + 0.5) / (sum + 1.5)`` (:data:`PRIOR_COUNT`).

    Raises:
        ValueError: unless ``counts`` is three finite counts >= 0.
    """
    counts = np.asarray(counts, float)
    if counts.shape != (3,) or not np.isfinite(counts).all() or (counts < 0).any():
        raise ValueError(f"counts={counts.tolist()} is invalid: expected three counts >= 0 "
                         "(Blue won, Red won, drawn)")
    return (counts + PRIOR_COUNT) / (counts.sum() + 3 * PRIOR_COUNT)


def _check(probabilities: np.ndarray, outcomes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probabilities, float).reshape(-1, 3)
    columns = np.array([outcome_index(int(w)) for w in outcomes], int)
    if len(columns) != len(p):
        raise ValueError(f"{len(p)} probability rows for {len(columns)} outcomes: expected "
                         "one row per battle")
    if not np.isfinite(p).all() or (p < 0).any() or not np.allclose(p.sum(axis=1), 1.0):
        raise ValueError("probabilities are invalid: expected rows of three finite "
                         "probabilities summing to 1")
    return p, columns


def brier_score(probabilities: np.ndarray, outcomes: Sequence[int]) -> float:
    """Mean over battles of ``sum_k (p_k - o_k)^2`` (module docstring); NaN for none.

    Args:
        probabilities: (N, 3) rows in :data:`OUTCOMES` order.
        outcomes: N historical winners (0, 1 or -1).

    Raises:
        ValueError: for rows that are not probabilities, or counts that differ.
    """
    p, columns = _check(probabilities, outcomes)
    if not len(p):
        return float("nan")
    truth = np.zeros_like(p)
    truth[np.arange(len(p)), columns] = 1.0
    return float(((p - truth) ** 2).sum(axis=1).mean())


def log_loss(probabilities: np.ndarray, outcomes: Sequence[int]) -> float:
    """Mean over battles of ``-ln p`` of the historical outcome; NaN for none (a
    probability of 0 for what happened gives infinity).

    Raises:
        ValueError: as :func:`brier_score`.
    """
    p, columns = _check(probabilities, outcomes)
    if not len(p):
        return float("nan")
    with np.errstate(divide="ignore"):
        return float(-np.log(p[np.arange(len(p)), columns]).mean())


@dataclass(frozen=True)
class Scores:
    """A predictor's scores over a set of battles (module docstring)."""

    n: int
    """Battles scored."""
    winner_match: float
    brier: float
    log_loss: float

    @property
    def winner_match_stderr(self) -> float:
        """Binomial standard error of the winner match, ``sqrt(m (1 - m) / n)``."""
        if self.n == 0:
            return float("nan")
        return math.sqrt(self.winner_match * (1 - self.winner_match) / self.n)

    @classmethod
    def of(cls, winners: Sequence[int | None], probabilities: np.ndarray,
           outcomes: Sequence[int]) -> Scores:
        """Score predicted ``winners`` (None: no prediction, a miss) and
        ``probabilities`` (N, 3) against the historical ``outcomes``.

        Raises:
            ValueError: as :func:`brier_score`, or for a count of winners that differs.
        """
        if len(winners) != len(outcomes):
            raise ValueError(f"{len(winners)} predicted winners for {len(outcomes)} "
                             "outcomes: expected one per battle")
        hits = [w is not None and w == o for w, o in zip(winners, outcomes, strict=True)]
        return cls(n=len(outcomes),
                   winner_match=float(np.mean(hits)) if hits else float("nan"),
                   brier=brier_score(probabilities, outcomes),
                   log_loss=log_loss(probabilities, outcomes))


__all__ = ["OUTCOMES", "PRIOR_COUNT", "SPLIT_KEY", "Scores", "TRAIN_SHARE", "brier_score",
           "historical_winner", "in_training_split", "log_loss", "outcome_index",
           "smoothed_probabilities"]
