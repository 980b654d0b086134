"""Elo ratings of trained agents on one shared scale.

The scripted opponents and the random one are fixed baselines
(:data:`BASELINE_RATINGS`) that are never updated, so ratings from different
runs are comparable: beating ``scripted_l5`` half the time means about 1000.

Update rule: ``delta = K * (outcome - expected)``, with ``expected = 1 / (1 +
10 ** ((r_opponent - r_agent) / 400))`` and ``outcome`` the mean score of a batch
of games (1 win, 0.5 draw, 0 loss). One update per batch; ``K`` is 40 for an
agent with fewer than 30 games, 20 below 100, then 10, judged by the game
count before the update. Only the agent's rating moves.

File format (indent 2, sorted keys): ``{"game_counts": {name: int}, "ratings":
{name: float}}``. Several processes may share a file: :meth:`EloRegistry.save`
merges under a file lock, keeping other processes' agents and writing its own
updates, atomically.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from envs.files import atomic_write_text, hold_lock
from envs.sim.validation import check_in_range, check_int

DEFAULT_RATING = 1000.0
BASELINE_RATINGS: dict[str, float] = {
    "random": 500.0, "scripted_l1": 600.0, "scripted_l2": 700.0, "scripted_l3": 800.0,
    "scripted_l4": 900.0, "scripted_l5": 1000.0,
}
TEAM_BASELINE_RATINGS: dict[str, float] = {
    "random_team": 500.0, "scripted_team_l1": 600.0, "scripted_team_l2": 700.0,
    "scripted_team_l3": 800.0, "scripted_team_l4": 900.0, "scripted_team_l5": 1000.0,
}


def expected_score(rating_a: float, rating_b: float) -> float:
    """Expected score of a player rated ``rating_a`` against one rated ``rating_b``."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


def k_factor(n_games: int) -> float:
    """K for an agent that has played ``n_games`` games so far."""
    return 40.0 if n_games < 30 else 20.0 if n_games < 100 else 10.0


class EloRegistry:
    """Persistent Elo ratings and game counts.

    Args:
        path: JSON file to load from and save to, or None for an in-memory registry.

    Raises:
        ValueError: if the file exists but is not a valid registry (the message
            names it and what is wrong).
    """

    baselines: dict[str, float] = BASELINE_RATINGS

    def __init__(self, path: str | Path | None = "checkpoints/elo_registry.json") -> None:
        self.path = Path(path) if path is not None else None
        self._ratings: dict[str, float] = {}
        self._game_counts: dict[str, int] = {}
        self._changed: set[str] = set()
        if self.path is not None and self.path.exists():
            self._ratings, self._game_counts = self._read(self.path)

    # --- queries ----------------------------------------------------------------

    @property
    def can_save(self) -> bool:
        """True when the registry has a backing file."""
        return self.path is not None

    def is_baseline(self, name: str) -> bool:
        return name in self.baselines

    def get_rating(self, name: str) -> float:
        """Stored rating, else the baseline's, else :data:`DEFAULT_RATING`."""
        if name in self._ratings:
            return self._ratings[name]
        return self.baselines.get(name, BASELINE_RATINGS.get(name, DEFAULT_RATING))

    def get_game_count(self, name: str) -> int:
        return self._game_counts.get(name, 0)

    def all_ratings(self) -> dict[str, float]:
        """A copy of every stored (non-baseline) rating."""
        return dict(self._ratings)

    # --- updates ----------------------------------------------------------------

    def update(self, agent: str, opponent: str, outcome: float, n_games: int = 1) -> float:
        """Update ``agent`` after ``n_games`` against ``opponent`` with mean score ``outcome``.

        Returns:
            The change in the agent's rating.

        Raises:
            ValueError: if ``outcome`` is outside [0, 1], ``n_games < 1``, or
                ``agent`` is a fixed baseline.
        """
        outcome = check_in_range("outcome", outcome, 0.0, 1.0)
        n_games = check_int("n_games", n_games, minimum=1)
        if not isinstance(agent, str) or not agent:
            raise ValueError(f"agent={agent!r} is invalid: expected a non-empty name")
        if self.is_baseline(agent) or agent in BASELINE_RATINGS:
            raise ValueError(f"agent={agent!r} is a fixed baseline: baselines are never "
                             "updated; rate a trained agent instead")
        rating = self.get_rating(agent)
        delta = k_factor(self.get_game_count(agent)) * (
            outcome - expected_score(rating, self.get_rating(opponent)))
        self._ratings[agent] = rating + delta
        self._game_counts[agent] = self.get_game_count(agent) + n_games
        self._changed.add(agent)
        return delta

    def set_rating(self, name: str, rating: float) -> None:
        """Enter ``name`` at ``rating`` (e.g. a self-play snapshot at its learner's rating).

        Raises:
            ValueError: for a baseline name or a non-finite rating.
        """
        if self.is_baseline(name) or name in BASELINE_RATINGS:
            raise ValueError(f"{name!r} is a fixed baseline: its rating cannot be set")
        rating = float(rating)
        if not math.isfinite(rating):
            raise ValueError(f"rating={rating!r} is invalid: expected a finite number")
        self._ratings[name] = rating
        self._game_counts.setdefault(name, 0)
        self._changed.add(name)

    def save(self) -> Path:
        """Write the registry, merging with what other processes saved meanwhile.

        Raises:
            ValueError: if the registry has no file.
        """
        if self.path is None:
            raise ValueError("this EloRegistry has no file (path=None): nothing to save to")
        with hold_lock(self.path):
            ratings, counts = self._read(self.path) if self.path.exists() else ({}, {})
            for name in self._changed:
                ratings[name] = self._ratings[name]
                counts[name] = self._game_counts[name]
            text = json.dumps({"game_counts": counts, "ratings": ratings}, indent=2,
                              sort_keys=True)
            atomic_write_text(self.path, text + "\n")
        self._ratings, self._game_counts = ratings, counts
        self._changed.clear()
        return self.path

    @staticmethod
    def _read(path: Path) -> tuple[dict[str, float], dict[str, int]]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            ratings = {str(k): float(v) for k, v in data["ratings"].items()}
            counts = {str(k): int(v) for k, v in data["game_counts"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(
                f"Elo registry {path} is not readable ({type(error).__name__}: {error}): "
                "expected {\"game_counts\": {...}, \"ratings\": {...}}; restore it from a "
                "backup or move it aside to start a fresh registry") from error
        if not all(math.isfinite(r) for r in ratings.values()):
            raise ValueError(f"Elo registry {path} holds a non-finite rating")
        return ratings, counts


class TeamEloRegistry(EloRegistry):
    """Elo registry for multi-agent teams: team baselines first, then the single ones.

    Both :data:`TEAM_BASELINE_RATINGS` and :data:`BASELINE_RATINGS` are fixed.
    """

    baselines: dict[str, float] = {**BASELINE_RATINGS, **TEAM_BASELINE_RATINGS}


__all__ = ["BASELINE_RATINGS", "DEFAULT_RATING", "TEAM_BASELINE_RATINGS", "EloRegistry",
           "TeamEloRegistry", "expected_score", "k_factor"]
