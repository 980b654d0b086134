"""Elo ratings of trained agents on one shared scale.

The scripted opponents and the random one are fixed baselines (:data:`BASELINE_RATINGS`)
that are never updated, so ratings from different runs are comparable.
:class:`EloRegistry` updates a rating once per batch of games by
``K * (outcome - expected)``, with ``K`` falling as the agent's game count grows:
:meth:`EloRegistry.update` moves the agent's rating only (an opponent that is not itself
being rated), :meth:`EloRegistry.update_pair` both players'. The file (indent 2, sorted
keys) is ``{"game_counts": {name: int}, "ratings": {name: float}}``; several processes
may share it, since :meth:`EloRegistry.save` replays the games recorded since the last
save on the ratings in the file, under its lock, then writes atomically.
``docs/training.md`` ("Elo ratings") gives the rule in full.
"""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path

from envs.sim.validation import check_in_range, check_int
from storage.files import atomic_write_text, hold_lock, read_json_file

DEFAULT_RATING = 1000.0
BASELINE_RATINGS: dict[str, float] = {
    "random": 500.0, "scripted_l1": 600.0, "scripted_l2": 700.0, "scripted_l3": 800.0,
    "scripted_l4": 900.0, "scripted_l5": 1000.0,
}
TEAM_BASELINE_RATINGS: dict[str, float] = {
    "random_team": 500.0, "scripted_team_l1": 600.0, "scripted_team_l2": 700.0,
    "scripted_team_l3": 800.0, "scripted_team_l4": 900.0, "scripted_team_l5": 1000.0,
    # The disciplined doctrine commanding every battalion of a team beats
    # scripted_team_l5 in about 72 % of 2v2 battles (docs/performance.md): ~1150.
    "doctrine_team": 1150.0,
}


def expected_score(rating_a: float, rating_b: float) -> float:
    """Expected score of a player rated ``rating_a`` against one rated ``rating_b``."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


def performance_rating(score: float, opponent_rating: float, n_games: int) -> float:
    """The rating whose expected score against ``opponent_rating`` is ``score`` (the
    mean over ``n_games``, draws counting half): a path-free rating of a measured
    result. A clean sweep is taken as half a game short of one (its rating is
    otherwise infinite).

    Raises:
        ValueError: for ``score`` outside [0, 1] or ``n_games < 1``.
    """
    score = check_in_range("score", score, 0.0, 1.0)
    n_games = check_int("n_games", n_games, minimum=1)
    margin = 0.5 / n_games
    score = min(max(score, margin), 1.0 - margin)
    return opponent_rating + 400.0 * math.log10(score / (1.0 - score))


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
        # What this registry did since its last save, replayed on the file by save().
        self._pending: list[tuple] = []
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
        """The baseline's fixed rating, else the stored one, else :data:`DEFAULT_RATING`."""
        if name in self.baselines:
            return self.baselines[name]
        return self._ratings.get(name, DEFAULT_RATING)

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
        _check_name("agent", agent)
        _check_name("opponent", opponent)
        if self.is_baseline(agent):
            raise ValueError(f"agent={agent!r} is a fixed baseline: baselines are never "
                             "updated; rate a trained agent instead")
        self._pending.append(("update", agent, opponent, outcome, n_games))
        return self._apply_update(self._ratings, self._game_counts, agent, opponent, outcome,
                                  n_games)

    def update_pair(self, agent: str, opponent: str, outcome: float,
                    n_games: int = 1) -> tuple[float, float]:
        """Update both players after ``n_games`` in which ``agent`` scored ``outcome`` on
        average (the opponent ``1 - outcome``); a fixed baseline keeps its rating.

        Returns:
            The changes of the agent's and of the opponent's rating.

        Raises:
            ValueError: if ``outcome`` is outside [0, 1], ``n_games < 1``, a name is
                invalid, or both players are fixed baselines.
        """
        outcome = check_in_range("outcome", outcome, 0.0, 1.0)
        n_games = check_int("n_games", n_games, minimum=1)
        _check_name("agent", agent)
        _check_name("opponent", opponent)
        if self.is_baseline(agent) and self.is_baseline(opponent):
            raise ValueError(f"agent={agent!r} and opponent={opponent!r} are both fixed "
                             "baselines: there is no rating to update")
        self._pending.append(("pair", agent, opponent, outcome, n_games))
        return self._apply_pair(self._ratings, self._game_counts, agent, opponent, outcome,
                                n_games)

    def _apply_pair(self, ratings: dict[str, float], counts: dict[str, int], agent: str,
                    opponent: str, outcome: float, n_games: int) -> tuple[float, float]:
        # Both changes are computed from the ratings before the games.
        before = {name: ratings.get(name, DEFAULT_RATING) for name in (agent, opponent)}
        deltas = []
        for player, other, score in ((agent, opponent, outcome), (opponent, agent, 1 - outcome)):
            if self.is_baseline(player):
                deltas.append(0.0)
                continue
            deltas.append(self._apply_update(ratings, counts, player, other, score, n_games,
                                             before))
        return deltas[0], deltas[1]

    def _apply_update(self, ratings: dict[str, float], counts: dict[str, int], agent: str,
                      opponent: str, outcome: float, n_games: int,
                      before: dict[str, float] | None = None) -> float:
        known = ratings if before is None else before
        rating = known.get(agent, DEFAULT_RATING)
        opponent_rating = self.baselines.get(opponent, known.get(opponent, DEFAULT_RATING))
        delta = k_factor(counts.get(agent, 0)) * (
            outcome - expected_score(rating, opponent_rating))
        ratings[agent] = rating + delta
        counts[agent] = counts.get(agent, 0) + n_games
        return delta

    def set_rating(self, name: str, rating: float) -> None:
        """Enter ``name`` at ``rating`` (e.g. a self-play snapshot at its learner's rating).

        Raises:
            ValueError: for a baseline name or a non-finite rating.
        """
        _check_name("name", name)
        if self.is_baseline(name):
            raise ValueError(f"{name!r} is a fixed baseline: its rating cannot be set")
        if isinstance(rating, bool) or not isinstance(rating, numbers.Real) or \
                not math.isfinite(rating):
            raise ValueError(f"rating={rating!r} is invalid: expected a finite number")
        self._pending.append(("set", name, float(rating)))
        self._ratings[name] = float(rating)
        self._game_counts.setdefault(name, 0)

    def save(self) -> Path:
        """Write the registry, merging with what other processes saved meanwhile.

        Raises:
            ValueError: if the registry has no file.
        """
        if self.path is None:
            raise ValueError("this EloRegistry has no file (path=None): nothing to save to")
        with hold_lock(self.path):
            ratings, counts = self._read(self.path) if self.path.exists() else ({}, {})
            for operation in self._pending:
                if operation[0] == "update":
                    self._apply_update(ratings, counts, *operation[1:])
                elif operation[0] == "pair":
                    self._apply_pair(ratings, counts, *operation[1:])
                else:
                    _, name, rating = operation
                    ratings[name] = rating
                    counts.setdefault(name, 0)
            text = json.dumps({"game_counts": counts, "ratings": ratings}, indent=2,
                              sort_keys=True)
            atomic_write_text(self.path, text + "\n")
        self._ratings, self._game_counts = ratings, counts
        self._pending.clear()
        return self.path

    def _read(self, path: Path) -> tuple[dict[str, float], dict[str, int]]:
        def problem(what: str) -> ValueError:
            return ValueError(
                f"Elo registry {path} is not valid ({what}): expected {{\"game_counts\": "
                "{name: count >= 0}, \"ratings\": {name: finite number}} without the fixed "
                "baselines; restore it from a backup or move it aside to start a fresh registry")

        data = read_json_file(path, "Elo registry")
        if not isinstance(data, dict) or set(data) != {"game_counts", "ratings"} or \
                not all(isinstance(data[k], dict) for k in data):
            raise problem("not an object with game_counts and ratings")
        ratings, counts = data["ratings"], data["game_counts"]
        for name, rating in ratings.items():
            if isinstance(rating, bool) or not isinstance(rating, (int, float)) or \
                    not math.isfinite(rating):
                raise problem(f"rating of {name!r} is {rating!r}")
            if name in self.baselines:
                raise problem(f"it rates the fixed baseline {name!r}")
        for name, count in counts.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise problem(f"game count of {name!r} is {count!r}")
        return {k: float(v) for k, v in ratings.items()}, dict(counts)


def _check_name(field: str, name) -> None:
    if not isinstance(name, str) or not name or not name.isprintable():
        raise ValueError(f"{field}={name!r} is invalid: expected a non-empty name of "
                         "printable characters")


class TeamEloRegistry(EloRegistry):
    """Elo registry for multi-agent teams: team baselines first, then the single ones.

    Both :data:`TEAM_BASELINE_RATINGS` and :data:`BASELINE_RATINGS` are fixed.
    """

    baselines: dict[str, float] = {**BASELINE_RATINGS, **TEAM_BASELINE_RATINGS}


__all__ = ["BASELINE_RATINGS", "DEFAULT_RATING", "TEAM_BASELINE_RATINGS", "EloRegistry",
           "TeamEloRegistry", "expected_score", "k_factor", "performance_rating"]
