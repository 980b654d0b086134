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
from enum import IntEnum
from typing import Any

import numpy as np

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


def check_level(name: str, value: Any, levels: type[IntEnum], noun: str) -> Any:
    """``value`` as the member of ``levels`` with that number.

    Args:
        name: the argument's name, for the message.
        value: the level's number (an integer, not a bool).
        levels: the curriculum's levels, in order.
        noun: what the message expects, article included (``"an HRLPhase"``).

    Raises:
        ValueError: for anything else.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or int(value) not in {int(level) for level in levels}:
        allowed = ", ".join(f"{int(level)} ({level.name})" for level in levels)
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected {noun}: {allowed}")
    return levels(int(value))


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
    """The methods a scheduler with an :class:`EpisodeWindow` (``_window``), a
    :class:`PromotionLog` (``_promotions``) and a current level (``_level``) offers:
    the level, recording episodes, the window's win rate, promotion, the promotion log,
    logging a promotion, and the checks of a saved state.

    A subclass names its levels (:attr:`LEVELS`, :attr:`LABELS`, :attr:`LEVEL_NOUN`,
    ``"stage"`` or ``"phase"``, :attr:`LEVEL_TYPE`), its metrics' prefix
    (:attr:`METRIC_PREFIX`), and gives :meth:`wandb_metrics`.
    """

    LEVELS: type[IntEnum]
    """The levels, in order."""
    LABELS: dict[Any, str]
    """Each level's short name."""
    LEVEL_NOUN = "level"
    LEVEL_TYPE = "a level"
    """What a message expects where a level is refused, article included."""
    METRIC_PREFIX = "curriculum"
    STATE_NAME = "curriculum"
    """What the messages about a saved state call it."""
    SETTINGS: tuple[str, ...] = ()
    """The settings a saved state records and a resumed scheduler keeps its own of."""
    _level: Any
    _window: EpisodeWindow
    _promotions: PromotionLog

    def _check_level(self, name: str, value: Any) -> Any:
        """``value`` as one of :attr:`LEVELS` (:func:`check_level`)."""
        return check_level(name, value, self.LEVELS, self.LEVEL_TYPE)

    @property
    def level(self) -> Any:
        """The current level."""
        return self._level

    @property
    def level_label(self) -> str:
        """The current level's short name."""
        return self.LABELS[self._level]

    @property
    def is_final_level(self) -> bool:
        """Whether training is at the last level (no further promotion)."""
        return self._level == max(self.LEVELS)

    def current_level(self) -> tuple[int, str]:
        """The current level's number and label."""
        return int(self._level), self.level_label

    def wandb_metrics(self) -> dict[str, Any]:
        """The ``<METRIC_PREFIX>/*`` metrics of the current state."""
        raise NotImplementedError

    def promote(self) -> Any:
        """Advance one level and clear the window; returns the new level.

        Raises:
            RuntimeError: at the final level.
        """
        if self.is_final_level:
            raise RuntimeError(f"cannot promote past the final {self.LEVEL_NOUN} "
                               f"{self.level_label}")
        self._level = self.LEVELS(self._level + 1)
        self._window.next_level()
        self._promotions.add(self._level, self._window.total_episodes)
        return self._level

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

    def _check_state_keys(self, state: Any, required: set[str]) -> None:
        """Raise unless ``state`` is a dict with the keys ``required``, and perhaps some of
        :attr:`SETTINGS`, and no others.

        Args:
            state: a saved state, as :meth:`load_state_dict` receives it.
            required: the keys every saved state has.

        Raises:
            TypeError: if ``state`` is not a dict.
            ValueError: for a missing or an unknown key (the message names them).
        """
        if not isinstance(state, dict):
            raise TypeError(f"state={type(state).__name__} is invalid: expected the dict of "
                            f"{type(self).__name__}.state_dict()")
        missing = sorted(required - set(state))
        unknown = sorted(str(k) for k in set(state) - required - set(self.SETTINGS))
        if missing or unknown:
            raise ValueError(f"{self.STATE_NAME} state is invalid: missing keys {missing}, "
                             f"unknown keys {unknown}; expected {sorted(required)} (and "
                             f"optionally {', '.join(self.SETTINGS)})")

    def _checked_progress(self, state: dict[str, Any], level_key: str | None = None
                          ) -> tuple[Any, EpisodeWindow, list[dict[str, Any]]]:
        """The level, the window and the promotion log of a saved state, checked; nothing
        changes here.

        Args:
            state: a saved state with the keys :meth:`_check_state_keys` checked.
            level_key: the key of the episodes at the saved level, if it keeps them
                (:meth:`EpisodeWindow.restore`).

        Raises:
            TypeError, ValueError: for a malformed entry (the message names it).
        """
        level = self._check_level(f"state[{self.LEVEL_NOUN!r}]", state[self.LEVEL_NOUN])
        window = EpisodeWindow(self._window.size)
        window.restore(state, level_key)
        promotions = self._promotions.checked(state["promotions"], self._check_level,
                                              min(self.LEVELS), level, window.total_episodes)
        return level, window, promotions

    def _restore_progress(self, state: dict[str, Any], level: Any, window: EpisodeWindow,
                          promotions: list[dict[str, Any]]) -> None:
        """Take the progress :meth:`_checked_progress` returned for ``state``, warning of
        the settings it was saved with that differ from this scheduler's
        (:meth:`_warn_of_other_settings`).

        Args:
            state: the saved state.
            level: its level.
            window: its window.
            promotions: its promotion log.
        """
        self._warn_of_other_settings(state)
        self._level = level
        self._window = window
        self._promotions.restore(promotions)

    def _warn_of_other_settings(self, state: dict[str, Any]) -> None:
        """Log a warning for each of :attr:`SETTINGS` that ``state`` was saved with at
        another value than this scheduler's, which it keeps."""
        for key in self.SETTINGS:
            own = getattr(self, key)
            if key in state and state[key] != own:
                # Logged under the scheduler's own module, where its users look.
                logging.getLogger(type(self).__module__).warning(
                    "%s state was saved with %s=%r; continuing with %r", self.STATE_NAME, key,
                    state[key], own)

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


__all__ = ["EpisodeWindow", "PromotionLog", "WindowedPromotion", "check_level",
           "check_wandb_run"]
