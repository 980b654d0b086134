"""What every curriculum that promotes on a win rate keeps: the recent episodes' results
and the log of its promotions.

The team curriculum (:mod:`training.curriculum_scheduler`: stages 1v1, 2v1, 2v2) and
the hierarchical one (:mod:`training.echelons.curriculum`: battalion, brigade, division)
both judge the current level on a window of its latest episodes, clear the window when
they promote, and log each promotion with the episode and the step it came at; both
save and restore that state to resume a run. This module is that part, once.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from envs.sim.validation import check_bool, check_int, short_repr

logger = logging.getLogger(__name__)


class EpisodeWindow:
    """Whether each of the last ``size`` episodes of the current level was won, how many
    episodes the level has had and how many the run has.

    Args:
        size: episodes in the window (>= 1).

    Raises:
        ValueError: for a size below 1.
    """

    def __init__(self, size: int) -> None:
        self.size = check_int("win_rate_window", size, minimum=1)
        self._wins: deque[bool] = deque(maxlen=self.size)
        self.level_episodes = 0
        self.total_episodes = 0

    def __len__(self) -> int:
        return len(self._wins)

    @property
    def full(self) -> bool:
        return len(self._wins) == self.size

    def record(self, win: bool) -> None:
        """Record one finished episode.

        Raises:
            ValueError: if ``win`` is not a bool.
        """
        self._wins.append(check_bool("win", win))
        self.level_episodes += 1
        self.total_episodes += 1

    def record_many(self, wins: Iterable[bool]) -> None:
        """Record several finished episodes in order (all checked before any is recorded).

        Raises:
            TypeError: if ``wins`` is not an iterable.
            ValueError: if one of them is not a bool (the message names its index).
        """
        if isinstance(wins, (str, bytes)) or not isinstance(wins, Iterable):
            raise TypeError(f"wins={short_repr(wins)} is invalid: expected an iterable of "
                            "bools")
        for win in [check_bool(f"wins[{i}]", win) for i, win in enumerate(wins)]:
            self.record(win)

    def win_rate(self) -> float:
        """Win rate over the window (0.0 before the level's first episode)."""
        return sum(self._wins) / len(self._wins) if self._wins else 0.0

    def next_level(self) -> None:
        """Start a new level: an empty window."""
        self._wins.clear()
        self.level_episodes = 0

    def results(self) -> list[bool]:
        """The window's results, oldest first."""
        return list(self._wins)

    def restore(self, state: dict[str, Any], level_key: str | None = None) -> None:
        """Take the window and counts of a saved state (``window``, ``total_episodes``, and
        ``level_key`` if given), checked before anything changes; a saved window longer
        than this one keeps its newest episodes.

        Raises:
            TypeError, ValueError: for a malformed entry (the message names it).
        """
        window = state["window"]
        if not isinstance(window, list):
            raise TypeError(f"state['window']={short_repr(window)} is invalid: expected a "
                            "list of bools")
        window = [check_bool(f"state['window'][{i}]", win) for i, win in enumerate(window)]
        total = check_int("state['total_episodes']", state["total_episodes"],
                          minimum=len(window))
        level = len(window) if level_key is None else check_int(
            f"state[{level_key!r}]", state[level_key], minimum=len(window), maximum=total)
        self._wins = deque(window, maxlen=self.size)
        self.total_episodes, self.level_episodes = total, level


class PromotionLog:
    """Each promotion: the level reached (under ``key``), the run's episodes then, and the
    step it was logged at (None until :meth:`stamp`)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._entries: list[dict[str, Any]] = []

    @property
    def entries(self) -> list[dict[str, Any]]:
        """A copy of the log, oldest first."""
        return [dict(entry) for entry in self._entries]

    def add(self, level: int, total_episodes: int) -> None:
        self._entries.append({self.key: int(level), "total_episodes": total_episodes,
                              "total_steps": None})

    def stamp(self, level: int, total_steps: int) -> None:
        """Give the latest promotion, if it reached ``level`` and has no step yet, its step."""
        if self._entries and self._entries[-1][self.key] == int(level) \
                and self._entries[-1]["total_steps"] is None:
            self._entries[-1]["total_steps"] = total_steps

    def checked(self, promotions: Any, check_level: Callable[[str, Any], int], first: int,
                current: int, total_episodes: int) -> list[dict[str, Any]]:
        """A saved log, checked: every entry reached a level after ``first`` and no later
        than ``current``, at most ``total_episodes`` episodes in.

        Raises:
            TypeError, ValueError: for a malformed entry (the message names it).
        """
        if not isinstance(promotions, list):
            raise TypeError(f"state['promotions']={short_repr(promotions)} is invalid: "
                            "expected a list")
        checked = []
        for i, entry in enumerate(promotions):
            name = f"state['promotions'][{i}]"
            if not isinstance(entry, dict) or set(entry) != {self.key, "total_episodes",
                                                             "total_steps"}:
                raise ValueError(f"{name}={short_repr(entry)} is invalid: expected a dict "
                                 f"with keys {self.key}, total_episodes, total_steps")
            level = check_level(f"{name}[{self.key!r}]", entry[self.key])
            if level > current or level == first:
                raise ValueError(f"{name}[{self.key!r}]={int(level)} is invalid: expected a "
                                 f"level in {first + 1}..{int(current)} (the saved one)")
            steps = entry["total_steps"]
            checked.append({
                self.key: int(level),
                "total_episodes": check_int(f"{name}['total_episodes']", entry["total_episodes"],
                                            minimum=0, maximum=total_episodes),
                "total_steps": None if steps is None else check_int(
                    f"{name}['total_steps']", steps, minimum=0)})
        return checked

    def restore(self, entries: list[dict[str, Any]]) -> None:
        """Take a log :meth:`checked` returned."""
        self._entries = [dict(entry) for entry in entries]


def check_wandb_run(wandb_run: Any) -> Any:
    """``wandb_run`` if it is None or has a ``log`` method.

    Raises:
        TypeError: otherwise.
    """
    if wandb_run is not None and not callable(getattr(wandb_run, "log", None)):
        raise TypeError(f"wandb_run={short_repr(wandb_run)} is invalid: expected a W&B run (an "
                        "object with a log method) or None")
    return wandb_run


class WindowedPromotion:
    """The methods a scheduler with an :class:`EpisodeWindow` (``_window``) and a
    :class:`PromotionLog` (``_promotions``) offers: recording episodes, the window's win
    rate, the promotion log, and logging a promotion.

    A subclass names its levels (:attr:`LEVEL_NOUN`, ``"stage"`` or ``"phase"``), its
    metrics' prefix (:attr:`METRIC_PREFIX`), and gives :meth:`current_level` and
    :meth:`wandb_metrics`.
    """

    LEVEL_NOUN = "level"
    METRIC_PREFIX = "curriculum"
    _window: EpisodeWindow
    _promotions: PromotionLog

    def current_level(self) -> tuple[int, str]:
        """The current level's number and label."""
        raise NotImplementedError

    def wandb_metrics(self) -> dict[str, Any]:
        """The ``<METRIC_PREFIX>/*`` metrics of the current state."""
        raise NotImplementedError

    @property
    def total_episodes(self) -> int:
        """Episodes recorded since the scheduler started, across all levels."""
        return self._window.total_episodes

    @property
    def promotions(self) -> list[dict[str, Any]]:
        """Past promotions, oldest first: ``{"to_<level>", "total_episodes",
        "total_steps"}``.

        ``total_steps`` is filled in by :meth:`log_promotion_event` (None before).
        """
        return self._promotions.entries

    def record_episode(self, win: bool) -> None:
        """Record one finished episode: whether the learner won.

        Raises:
            ValueError: if ``win`` is not a bool.
        """
        self._window.record(win)

    def record_episodes(self, wins: Iterable[bool]) -> None:
        """Record several finished episodes in order (all checked before any is recorded).

        Raises:
            TypeError: if ``wins`` is not an iterable.
            ValueError: if one of them is not a bool (the message names its index).
        """
        self._window.record_many(wins)

    def win_rate(self) -> float:
        """Win rate over the window (0.0 when no episode has been recorded at this level)."""
        return self._window.win_rate()

    def log_promotion_event(self, total_steps: int, wandb_run: Any = None) -> None:
        """Log that training reached its current level at ``total_steps``.

        Always logs an info line; with a W&B run, also logs :meth:`wandb_metrics` plus
        ``<METRIC_PREFIX>/promotion_step`` at that step. The step is recorded in the
        latest :attr:`promotions` entry.

        Raises:
            ValueError: if ``total_steps`` is not an integer >= 0.
            TypeError: if ``wandb_run`` has no ``log`` method.
        """
        total_steps = check_int("total_steps", total_steps, minimum=0)
        check_wandb_run(wandb_run)
        level, label = self.current_level()
        self._promotions.stamp(level, total_steps)
        # Logged under the scheduler's own module, where its users look.
        logging.getLogger(type(self).__module__).info(
            "%s: promoted to %s %d (%s) at step %d after %d episodes",
            self.METRIC_PREFIX.replace("_", " "), self.LEVEL_NOUN, level, label, total_steps,
            self._window.total_episodes)
        if wandb_run is not None:
            wandb_run.log({**self.wandb_metrics(),
                           f"{self.METRIC_PREFIX}/promotion_step": total_steps},
                          step=total_steps)


__all__ = ["EpisodeWindow", "PromotionLog", "WindowedPromotion", "check_wandb_run"]
