"""Curriculum for hierarchical training: battalion, then brigade, then division commanders.

:class:`HRLCurriculumScheduler` tracks the recent win rate of the echelon being trained
and, optionally, its Elo rating (:meth:`HRLCurriculumScheduler.update_elo`, the ratings
of :mod:`training.elo`), and promotes training to the next echelon (:class:`HRLPhase`)
once both are high enough over a full window of episodes; its state round-trips through
:meth:`HRLCurriculumScheduler.state_dict`. :func:`load_phase_config` reads a phase's
settings from ``configs/hrl/`` (:data:`PHASE_CONFIG_FILES`), and
:meth:`HRLCurriculumScheduler.for_phase` builds a scheduler with a phase's thresholds::

    scheduler = HRLCurriculumScheduler.for_phase(HRLPhase.PHASE_1_BATTALION)
    scheduler.record_episodes(episode_wins)
    scheduler.update_elo(registry, "hrl_battalion", "scripted_l3", eval_win_rate)
    if scheduler.should_promote():
        scheduler.promote()
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from pathlib import Path
from typing import Any

from envs.battles.multi_observation import MAX_TEAM_SIZE
from envs.sim.validation import (
    check_in_range,
    check_int,
    check_map_size,
    check_number,
    check_positive,
    check_scripted_level,
    short_repr,
)
from storage.files import MAX_JSON_BYTES, loads_yaml, read_regular_file
from training.common.promotion import (
    EpisodeWindow,
    PromotionLog,
    WindowedPromotion,
    check_level,
)
from training.elo import EloRegistry, TeamEloRegistry

__all__ = ["HRL_CONFIG_DIR", "PHASE_CONFIG_FILES", "PHASE_LABELS", "HRLCurriculumScheduler",
           "HRLPhase", "load_phase_config"]


class HRLPhase(IntEnum):
    """The phases of the hierarchical curriculum, in order: the echelon being trained."""

    PHASE_1_BATTALION = 1
    PHASE_2_BRIGADE = 2
    PHASE_3_DIVISION = 3


PHASE_LABELS: dict[HRLPhase, str] = {
    HRLPhase.PHASE_1_BATTALION: "battalion",
    HRLPhase.PHASE_2_BRIGADE: "brigade",
    HRLPhase.PHASE_3_DIVISION: "division",
}
"""Short name of each phase: the echelon it trains, and part of its config file's name."""

_FINAL_PHASE = max(HRLPhase)


def _check_phase(name: str, value: Any) -> HRLPhase:
    return check_level(name, value, HRLPhase, "an HRLPhase")


def _check_elo(name: str, value: Any) -> float | None:
    """None or a finite rating."""
    if value is None:
        return None
    try:
        return check_number(name, value)
    except ValueError:
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected None (null) or a "
                         "finite number") from None


# ---------------------------------------------------------------------------- phase configs

HRL_CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs" / "hrl"
"""Folder of the phase config files."""

PHASE_CONFIG_FILES: dict[HRLPhase, str] = {
    phase: f"phase{int(phase)}_{label}.yaml" for phase, label in PHASE_LABELS.items()}
"""File name (in :data:`HRL_CONFIG_DIR`) of each phase's settings."""

_ELO_OPPONENTS = TeamEloRegistry.baselines


def _check_opponent(name: str, value: Any) -> str:
    if not isinstance(value, str) or value not in _ELO_OPPONENTS:
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected a fixed Elo "
                         f"baseline, one of {sorted(_ELO_OPPONENTS)}")
    return value


def _count(name: str, value: Any) -> int:
    return check_int(name, value, minimum=1)


def _team_size(name: str, value: Any) -> int:
    return check_int(name, value, minimum=1, maximum=MAX_TEAM_SIZE)


# Every key of a phase file: section -> key -> (check, required). The check gets the
# key's full name (file and key) for its message and returns the value to keep.
_PHASE_SCHEMA: dict[str, dict[str, tuple[Callable[[str, Any], Any], bool]]] = {
    "curriculum": {
        "win_rate_threshold": (
            lambda n, v: check_in_range(n, v, 0.0, 1.0, low_open=True), True),
        "win_rate_window": (_count, True),
        "elo_threshold": (_check_elo, True),
        "elo_opponent": (_check_opponent, True),
    },
    "env": {
        "map_width": (check_map_size, True),
        "map_height": (check_map_size, True),
        "max_steps": (_count, True),
        "visibility_radius": (check_positive, True),
        "temporal_ratio": (_count, False),
        "red_level": (check_scripted_level, False),
        "order_period": (_count, False),
        "order_attack_share": (lambda n, v: check_in_range(n, v, 0.0, 1.0), False),
        "n_blue": (_team_size, False),
        "n_red": (_team_size, False),
    },
    "training": {
        "total_timesteps": (_count, True),
        "n_steps": (_count, True),
        "n_epochs": (_count, True),
        "batch_size": (_count, True),
        "n_envs": (_count, False),
        "warm_start_hold_range": (check_positive, False),
    },
}


_SIZES_WHY = ("the battles the battalions learn in; the brigade's and the division's sizes "
              "are their configs' (BrigadeConfig, DivisionConfig)")
_PHASE_1_ONLY = {
    ("training", "warm_start_hold_range"): "the battalions' imitated order follower; the "
    "echelons above imitate no halt",
    ("env", "n_blue"): _SIZES_WHY,
    ("env", "n_red"): _SIZES_WHY,
}
"""The keys only phase 1's file may set, and why."""


def load_phase_config(phase: HRLPhase | int) -> dict[str, Any]:
    """The settings of ``phase`` from its file in :data:`HRL_CONFIG_DIR`, checked.

    A phase file has three sections: ``curriculum`` (``win_rate_threshold``,
    ``win_rate_window``, ``elo_threshold`` (null: no Elo condition), ``elo_opponent``),
    ``env`` (``map_width``, ``map_height``, ``max_steps``, ``visibility_radius``, and
    optionally ``temporal_ratio``: lower-echelon steps per command of the trained
    echelon, ``red_level``: scripted Red's level in training, ``order_period``: steps
    each random order lasts in phase 1, ``order_attack_share``: the share of them that
    are attacks, and in phase 1 ``n_blue`` and ``n_red``: the battalions a side in the
    battles it learns in) and ``training`` (``total_timesteps``,
    ``n_steps``, ``n_epochs``, ``batch_size``, and optionally ``n_envs`` and, in phase 1,
    ``warm_start_hold_range``: where the imitated order follower's attacks halt).

    Args:
        phase: the phase (an :class:`HRLPhase` or its number).

    Returns:
        A new dict ``{section: {key: value}}`` with the file's keys (sizes and
        thresholds as floats, counts as ints).

    Raises:
        ValueError: for an invalid ``phase``, or a file that cannot be parsed, has an
            unknown or missing key, or a value of the wrong type or out of range; the
            message names the file and the key.
        FileNotFoundError: if the phase's file is missing.
    """
    phase = _check_phase("phase", phase)
    path = HRL_CONFIG_DIR / PHASE_CONFIG_FILES[phase]
    if not path.is_file():
        raise FileNotFoundError(f"HRL phase config {path} for phase {int(phase)} "
                                f"({PHASE_LABELS[phase]}) does not exist")
    # Bounded and depth-limited like every YAML file we read (a ValueError naming it).
    data = loads_yaml(read_regular_file(path, MAX_JSON_BYTES, f"HRL phase config {path}"),
                      f"HRL phase config {path}")
    if not isinstance(data, dict):
        raise ValueError(f"HRL phase config {path} is invalid: expected a mapping with the "
                         f"sections {list(_PHASE_SCHEMA)}, got {short_repr(data)}")
    config: dict[str, Any] = {}
    for section in data:
        if section not in _PHASE_SCHEMA:
            raise ValueError(f"HRL phase config {path}: key {short_repr(section)} is unknown: "
                             f"expected the sections {list(_PHASE_SCHEMA)}")
    for section, keys in _PHASE_SCHEMA.items():
        if section not in data:
            raise ValueError(f"HRL phase config {path}: section {section!r} is missing")
        values = data[section]
        if not isinstance(values, dict):
            raise ValueError(f"HRL phase config {path}: {section}={short_repr(values)} is "
                             f"invalid: expected a mapping with the keys {list(keys)}")
        for key in values:
            if key not in keys:
                raise ValueError(f"HRL phase config {path}: key {section}.{key} is unknown: "
                                 f"allowed keys of {section} are {list(keys)}")
        checked = {}
        for key, (check, required) in keys.items():
            if key not in values:
                if required:
                    raise ValueError(f"HRL phase config {path}: key {section}.{key} is "
                                     "missing")
                continue
            checked[key] = check(f"HRL phase config {path}: {section}.{key}", values[key])
        config[section] = checked
    for (section, key), why in _PHASE_1_ONLY.items():
        if key in config[section] and phase != HRLPhase.PHASE_1_BATTALION:
            raise ValueError(f"HRL phase config {path}: key {section}.{key} is for phase 1 "
                             f"only ({why})")
    return config


# ---------------------------------------------------------------------------- scheduler


class HRLCurriculumScheduler(WindowedPromotion):
    """Promotes hierarchical training battalion -> brigade -> division.

    Promotion needs, at once: a phase before the last, a full window of the last
    ``win_rate_window`` episodes recorded since the last promotion, their win rate
    at least ``win_rate_threshold``, and, unless ``elo_threshold`` is None, an Elo
    rating recorded at this phase (:meth:`set_elo`, :meth:`update_elo`) of at least
    ``elo_threshold``. A promotion clears the window and the Elo, so the new phase
    is judged on its own battles and ratings.

    Args:
        win_rate_threshold: win rate needed to promote, in (0, 1].
        win_rate_window: episodes in the window (>= 1).
        elo_threshold: Elo rating needed to promote, or None for no Elo condition.
        initial_phase: the starting phase.

    Raises:
        ValueError: for an argument out of range (the message names it).
    """

    LEVELS = HRLPhase
    LABELS = PHASE_LABELS
    LEVEL_NOUN = "phase"
    LEVEL_TYPE = "an HRLPhase"
    METRIC_PREFIX = "hrl_curriculum"
    STATE_NAME = "HRL curriculum"
    SETTINGS = ("win_rate_threshold", "win_rate_window", "elo_threshold")

    def __init__(self, win_rate_threshold: float = 0.70, win_rate_window: int = 50,
                 elo_threshold: float | None = 800.0,
                 initial_phase: HRLPhase | int = HRLPhase.PHASE_1_BATTALION) -> None:
        self.win_rate_threshold = check_in_range("win_rate_threshold", win_rate_threshold,
                                                 0.0, 1.0, low_open=True)
        self._window = EpisodeWindow(win_rate_window)
        self.win_rate_window = self._window.size
        self.elo_threshold = _check_elo("elo_threshold", elo_threshold)
        self._level = self._check_level("initial_phase", initial_phase)
        self._elo: float | None = None
        self._promotions = PromotionLog("to_phase")

    @classmethod
    def for_phase(cls, phase: HRLPhase | int) -> HRLCurriculumScheduler:
        """A scheduler starting at ``phase`` with that phase's thresholds
        (:func:`load_phase_config`)."""
        phase = _check_phase("phase", phase)
        settings = load_phase_config(phase)["curriculum"]
        return cls(win_rate_threshold=settings["win_rate_threshold"],
                   win_rate_window=settings["win_rate_window"],
                   elo_threshold=settings["elo_threshold"], initial_phase=phase)

    # --------------------------------------------------------------- properties

    phase = WindowedPromotion.level
    phase_label = WindowedPromotion.level_label
    is_final_phase = WindowedPromotion.is_final_level

    @property
    def phase_episodes(self) -> int:
        """Episodes recorded since the last promotion (or the start)."""
        return self._window.level_episodes

    @property
    def elo(self) -> float | None:
        """The Elo rating recorded at this phase, or None before one is."""
        return self._elo

    # --------------------------------------------------------------- recording

    def set_elo(self, value: float) -> None:
        """Record the agent's current Elo rating (e.g. read from a registry).

        Raises:
            ValueError: if ``value`` is not a finite number.
        """
        self._elo = check_number("value", value)

    def update_elo(self, elo_registry: EloRegistry, agent_name: str, opponent: str,
                   win_rate: float, n_episodes: int = 20) -> float:
        """Rate ``agent_name`` after ``n_episodes`` against ``opponent`` won at ``win_rate``.

        The registry's :meth:`~training.elo.EloRegistry.update` takes the batch as one
        update with outcome ``win_rate`` (draws count as losses here); the agent's new
        rating becomes this scheduler's Elo. The registry is not saved: call its
        :meth:`~training.elo.EloRegistry.save` when it should be.

        Returns:
            The agent's new rating.

        Raises:
            TypeError: if ``elo_registry`` is not an :class:`~training.elo.EloRegistry`.
            ValueError: for ``win_rate`` outside [0, 1], ``n_episodes < 1``, an invalid
                name or a fixed baseline as the agent (nothing is recorded then).
        """
        if not isinstance(elo_registry, EloRegistry):
            raise TypeError(f"elo_registry={short_repr(elo_registry)} is invalid: expected "
                            "an EloRegistry")
        win_rate = check_in_range("win_rate", win_rate, 0.0, 1.0)
        n_episodes = check_int("n_episodes", n_episodes, minimum=1)
        elo_registry.update(agent_name, opponent, outcome=win_rate, n_games=n_episodes)
        self._elo = elo_registry.get_rating(agent_name)
        return self._elo

    # --------------------------------------------------------------- promotion

    def _conditions(self) -> dict[str, dict[str, Any]]:
        window_full = self._window.full
        win_rate = self.win_rate()
        elo_checked = self.elo_threshold is not None
        return {
            "not_final_phase": {"holds": not self.is_final_phase,
                                "phase": int(self._level), "final_phase": int(_FINAL_PHASE)},
            "window_full": {"holds": window_full, "episodes": len(self._window),
                            "needed": self.win_rate_window},
            "win_rate": {"holds": win_rate >= self.win_rate_threshold, "value": win_rate,
                         "threshold": self.win_rate_threshold},
            "elo": {"holds": not elo_checked or (self._elo is not None
                                                 and self._elo >= self.elo_threshold),
                    "value": self._elo, "threshold": self.elo_threshold,
                    "checked": elo_checked},
        }

    def should_promote(self) -> bool:
        """Whether to promote: every condition of :meth:`promotion_status` holds."""
        return all(condition["holds"] for condition in self._conditions().values())

    def promotion_status(self) -> dict[str, Any]:
        """Each promotion condition, its values and whether it holds (for logs).

        Returns:
            ``{"phase", "phase_label", "should_promote", "conditions"}``, where
            ``conditions`` maps ``not_final_phase``, ``window_full``, ``win_rate`` and
            ``elo`` to a dict with ``holds`` and the values compared (the ``elo``
            condition holds when ``checked`` is False: no Elo threshold).
        """
        conditions = self._conditions()
        return {"phase": int(self._level), "phase_label": self.phase_label,
                "should_promote": all(c["holds"] for c in conditions.values()),
                "conditions": conditions}

    def promote(self) -> HRLPhase:
        """Advance one phase and clear the window and the Elo; returns the new phase.

        Raises:
            RuntimeError: at the final phase.
        """
        phase = super().promote()
        self._elo = None
        return phase

    # --------------------------------------------------------------- logging

    def wandb_metrics(self) -> dict[str, Any]:
        """The ``hrl_curriculum/*`` metrics of the current state (``elo`` None before one
        is recorded at this phase)."""
        return {"hrl_curriculum/phase": int(self._level),
                "hrl_curriculum/phase_label": self.phase_label,
                "hrl_curriculum/win_rate": self.win_rate(),
                "hrl_curriculum/elo": self._elo,
                "hrl_curriculum/phase_episodes": self._window.level_episodes,
                "hrl_curriculum/total_episodes": self._window.total_episodes}

    # --------------------------------------------------------------- resume

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's progress as plain values (JSON- and ``weights_only``-safe)."""
        return {"phase": int(self._level), "window": self._window.results(),
                "phase_episodes": self._window.level_episodes,
                "total_episodes": self._window.total_episodes, "elo": self._elo,
                "promotions": self.promotions,
                "win_rate_threshold": self.win_rate_threshold,
                "win_rate_window": self.win_rate_window, "elo_threshold": self.elo_threshold}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the progress saved by :meth:`state_dict` (checked before anything changes).

        The thresholds and window size stay this scheduler's own (a resumed run may
        change them; a difference is logged). If the saved window is longer than this
        scheduler's, its newest episodes are kept.

        Raises:
            TypeError, ValueError: for a malformed state (the message names the field).
        """
        self._check_state_keys(state, {"phase", "window", "phase_episodes", "total_episodes",
                                       "elo", "promotions"})
        progress = self._checked_progress(state, "phase_episodes")
        elo = _check_elo("state['elo']", state["elo"])
        self._restore_progress(state, *progress)
        self._elo = elo
