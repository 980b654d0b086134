"""Curriculum for multi-agent training: 1v1, then 2v1, then 2v2.

:class:`CurriculumScheduler` tracks Blue's recent win rate and promotes the team to the
next scenario once it wins often enough over a full window of episodes; its state
round-trips through :meth:`CurriculumScheduler.state_dict`, so a resumed run continues
the curriculum. :func:`load_scenario` reads a scenario file of ``configs/scenarios/``
(``1v1`` .. ``6v6``; each stage's is :data:`STAGE_SCENARIOS`), and
:func:`load_v1_weights_into_mappo` seeds a MAPPO team with a trained v1 commander::

    scheduler = CurriculumScheduler(promote_threshold=0.7, win_rate_window=50)
    env = MultiBattalionEnv(**scheduler.env_kwargs())
    scheduler.record_episodes(episode_wins)
    if scheduler.should_promote():
        scheduler.promote()
        scheduler.log_promotion_event(total_steps, wandb_run)
"""

from __future__ import annotations

import re
from enum import IntEnum
from pathlib import Path
from typing import Any

from envs.scenario import SCENARIO_KEYS, OrderOfBattle, ScenarioError, load_scenario_file
from envs.sim.validation import (
    check_in_range,
)
from models.v1_transfer import load_v1_weights_into_mappo  # noqa: F401  (documented here)
from training.common.promotion import EpisodeWindow, PromotionLog, WindowedPromotion

__all__ = ["STAGE_ENV_KWARGS", "STAGE_LABELS", "STAGE_SCENARIOS", "SCENARIO_DIR", "SCENARIO_KEYS",
           "CurriculumScheduler", "CurriculumStage", "available_scenarios",
           "load_scenario", "load_v1_weights_into_mappo"]


class CurriculumStage(IntEnum):
    """The stages of the multi-agent curriculum, in order."""

    STAGE_1V1 = 0
    STAGE_2V1 = 1
    STAGE_2V2 = 2


STAGE_LABELS: dict[CurriculumStage, str] = {
    CurriculumStage.STAGE_1V1: "1v1",
    CurriculumStage.STAGE_2V1: "2v1",
    CurriculumStage.STAGE_2V2: "2v2",
}
"""Short name of each stage; also the name of the scenario file it takes its team sizes from."""

# ---------------------------------------------------------------------------- scenarios

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "configs" / "scenarios"
"""Folder of the scenario files (``<name>.yaml``)."""


SCENARIO_ENV_KEYS = ("n_blue", "n_red", "map_width", "map_height", "max_steps",
                     "randomize_terrain", "hill_speed_factor", "visibility_radius")
"""The MultiBattalionEnv arguments :func:`load_scenario` always returns (plus
``order_of_battle`` when a scenario fields more than infantry of quality 1 in line)."""

_SCENARIO_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def available_scenarios() -> list[str]:
    """Names of the scenario files in :data:`SCENARIO_DIR`, sorted."""
    return sorted(path.stem for path in SCENARIO_DIR.glob("*.yaml"))


def load_scenario(name: str) -> dict[str, Any]:
    """The MultiBattalionEnv arguments of scenario ``name`` (e.g. ``"2v2"``), checked.

    A scenario file is in the scenario format (``docs/scenarios.md``,
    :mod:`envs.scenario`) and deploys at random (the envs place the battalions in their
    bands); its ground is ``procedural`` or ``flat``.

    Args:
        name: the scenario's file name without ``.yaml``.

    Returns:
        A new dict of constructor arguments (sizes as floats, counts as ints).

    Raises:
        TypeError: if ``name`` is not a string.
        FileNotFoundError: if there is no such scenario (the message lists the
            available ones).
        ValueError: for a malformed file, an unknown key or an invalid value;
            the message names the file.
    """
    if not isinstance(name, str):
        raise TypeError(f"name={name!r} is invalid: expected a scenario name such as '2v2'")
    if not _SCENARIO_NAME.match(name):
        raise ValueError(f"name={name!r} is invalid: expected a scenario file name such as "
                         f"'2v2' (no folders), one of {available_scenarios()}")
    path = SCENARIO_DIR / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"scenario {name!r} does not exist ({path}): available "
                                f"scenarios are {available_scenarios()}")
    scenario = load_scenario_file(path)
    if scenario.extra:
        raise ScenarioError(f"scenario file {path} has unknown keys {sorted(scenario.extra)}: "
                            f"allowed keys are {sorted(SCENARIO_KEYS)}")
    if not scenario.random_deployment or scenario.terrain == "features":
        raise ScenarioError(f"scenario file {path}: a training scenario deploys at random "
                            "(deployment: random) on procedural or flat ground")
    config = scenario.config()
    kwargs: dict[str, Any] = {
        "n_blue": scenario.n_blue, "n_red": scenario.n_red, "map_width": config.map_width,
        "map_height": config.map_height, "max_steps": config.max_steps,
        "randomize_terrain": scenario.terrain == "procedural",
        "hill_speed_factor": config.hill_speed_factor,
        "visibility_radius": scenario.visibility_radius}
    order = OrderOfBattle.of(scenario)
    if any(order.arm) or any(order.formation) or any(q != 1.0 for q in order.quality):
        kwargs["order_of_battle"] = order
    return kwargs


def _stage_scenarios() -> dict[CurriculumStage, dict[str, Any]]:
    return {stage: load_scenario(label) for stage, label in STAGE_LABELS.items()}


def _stage_team_sizes(scenarios: dict[CurriculumStage, dict[str, Any]] | None = None
                      ) -> dict[CurriculumStage, dict[str, int]]:
    scenarios = _stage_scenarios() if scenarios is None else scenarios
    return {stage: {"n_blue": kwargs["n_blue"], "n_red": kwargs["n_red"]}
            for stage, kwargs in scenarios.items()}


STAGE_SCENARIOS: dict[CurriculumStage, dict[str, Any]] = _stage_scenarios()
"""Each stage's MultiBattalionEnv arguments (:func:`load_scenario` of the file named like
the stage), read when this module is imported: what :meth:`CurriculumScheduler.env_kwargs`
returns."""

STAGE_ENV_KWARGS: dict[CurriculumStage, dict[str, int]] = _stage_team_sizes(STAGE_SCENARIOS)
"""Team sizes of each stage, from its scenario file (``1v1``: 1 and 1, ``2v1``: 2 and 1,
``2v2``: 2 and 2). The MAPPO trainer takes only these from a stage; the rest of a scenario
(map, steps, terrain, visibility) is left to the run's config, which holds for every
stage."""


# ---------------------------------------------------------------------------- scheduler


class CurriculumScheduler(WindowedPromotion):
    """Promotes a team through 1v1 -> 2v1 -> 2v2 on its recent win rate.

    The win rate is taken over the last ``win_rate_window`` episodes recorded
    since the last promotion. Promotion needs a full window, so a lucky start
    does not promote, and a promotion clears the window, so the new stage is
    judged on its own battles.

    Args:
        promote_threshold: win rate needed to promote, in (0, 1].
        win_rate_window: episodes in the window (>= 1).
        initial_stage: the starting stage.

    Raises:
        ValueError: for an argument out of range (the message names it).
    """

    LEVELS = CurriculumStage
    LABELS = STAGE_LABELS
    LEVEL_NOUN = "stage"
    LEVEL_TYPE = "a CurriculumStage"
    METRIC_PREFIX = "curriculum"
    STATE_NAME = "curriculum"
    SETTINGS = ("promote_threshold", "win_rate_window")

    def __init__(self, promote_threshold: float = 0.70, win_rate_window: int = 50,
                 initial_stage: CurriculumStage | int = CurriculumStage.STAGE_1V1) -> None:
        self.promote_threshold = check_in_range("promote_threshold", promote_threshold, 0.0,
                                                1.0, low_open=True)
        self._window = EpisodeWindow(win_rate_window)
        self.win_rate_window = self._window.size
        self._level = self._check_level("initial_stage", initial_stage)
        self._promotions = PromotionLog("to_stage")

    # --------------------------------------------------------------- properties

    stage = WindowedPromotion.level
    stage_label = WindowedPromotion.level_label
    is_final_stage = WindowedPromotion.is_final_level

    # --------------------------------------------------------------- promotion

    def should_promote(self) -> bool:
        """Whether to promote: not final, the window full, and its win rate >= the threshold."""
        return (not self.is_final_stage and self._window.full
                and self.win_rate() >= self.promote_threshold)

    def env_kwargs(self) -> dict[str, Any]:
        """The current stage's MultiBattalionEnv arguments, as its scenario file under
        ``configs/scenarios/`` holds them (:data:`STAGE_SCENARIOS`; a copy): its team
        sizes (``n_blue``, ``n_red``, as in :data:`STAGE_ENV_KWARGS`) and its map, steps,
        terrain, hill factor and visibility, so ``MultiBattalionEnv(**env_kwargs())`` is
        the stage's battle."""
        return dict(STAGE_SCENARIOS[self._level])

    # --------------------------------------------------------------- logging

    def wandb_metrics(self) -> dict[str, Any]:
        """The ``curriculum/*`` metrics of the current state."""
        return {"curriculum/stage": int(self._level),
                "curriculum/stage_label": self.stage_label,
                "curriculum/win_rate": self.win_rate(),
                "curriculum/total_episodes": self._window.total_episodes}

    # --------------------------------------------------------------- resume

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's progress as plain values (JSON- and ``weights_only``-safe)."""
        return {"stage": int(self._level), "window": self._window.results(),
                "total_episodes": self._window.total_episodes, "promotions": self.promotions,
                "promote_threshold": self.promote_threshold,
                "win_rate_window": self.win_rate_window}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the progress saved by :meth:`state_dict` (checked before anything changes).

        The threshold and window size stay this scheduler's own (a resumed run
        may change them; a difference is logged). If the saved window is longer
        than this scheduler's, its newest episodes are kept.

        Raises:
            TypeError, ValueError: for a malformed state (the message names the field).
        """
        self._check_state_keys(state, {"stage", "window", "total_episodes", "promotions"})
        self._restore_progress(state, *self._checked_progress(state))
