"""Historical battles: field engagements of 1792-1815 as scenarios (``battles.json``, in the
scenario format of ``docs/scenarios.md`` with each battle's history beside it), read by
:func:`load_battles` (:func:`envs.scenario.load_scenarios` and a check of each battle's
``historical_outcome``, :func:`check_historical_outcome`) and fought by
:mod:`benchmarks.historical`. The French side is always Blue; about half the battles are
French defeats (``winner: "red"``) or draws (null).

A unit's ``strength`` is the men (sabres, guns) engaged divided by the entry's
``scale.men_per_unit`` (``sabres_per_squadron_unit``, ``guns_per_battery``). Its
``quality`` comes from one reputation rule, by army and year, never from the battle's
result (``docs/scenarios.md``, "Historical battles", gives the classes).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from envs.scenario import Scenario, ScenarioError, load_scenarios, short_repr

BATTLES_JSON = Path(__file__).resolve().parent / "battles.json"
"""The battle database."""

HISTORICAL_WINNERS = ("blue", "red", None)
"""What a battle's ``historical_outcome.winner`` may be: a side, or null (indecisive)."""
MAX_DURATION_HOURS = 24 * 7
"""Longest battle the database may record (the longest of the period lasted three days)."""


def _share(outcome: dict[str, Any], key: str, where: str) -> float:
    value = outcome.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or not 0 <= value <= 1:
        raise ScenarioError(f"{where}.historical_outcome.{key}={short_repr(value)} is invalid: "
                            "expected a finite share of the side's strength in [0, 1]")
    return float(value)


def check_historical_outcome(scenario: Scenario, where: str | None = None) -> dict[str, Any]:
    """The ``historical_outcome`` of a battle entry, checked: ``winner`` one of
    :data:`HISTORICAL_WINNERS`, ``blue_casualties`` and ``red_casualties`` finite shares
    in [0, 1], ``duration_hours`` finite in (0, :data:`MAX_DURATION_HOURS`].

    Args:
        scenario: a battle read from the database.
        where: how errors name the battle (by default its id).

    Raises:
        ScenarioError: naming the battle, the field, the value and what is allowed.
    """
    where = scenario.id if where is None else where
    outcome = scenario.extra.get("historical_outcome")
    if not isinstance(outcome, dict):
        raise ScenarioError(f"{where}.historical_outcome={short_repr(outcome)} is invalid: "
                            "expected a mapping with winner, blue_casualties, red_casualties "
                            "and duration_hours")
    winner = outcome.get("winner", ...)
    if winner not in HISTORICAL_WINNERS or isinstance(winner, bool):
        raise ScenarioError(f"{where}.historical_outcome.winner={short_repr(winner)} is "
                            "invalid: expected 'blue', 'red' or null (indecisive)")
    _share(outcome, "blue_casualties", where)
    _share(outcome, "red_casualties", where)
    hours = outcome.get("duration_hours")
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) \
            or not math.isfinite(hours) or not 0 < hours <= MAX_DURATION_HOURS:
        raise ScenarioError(f"{where}.historical_outcome.duration_hours={short_repr(hours)} is "
                            f"invalid: expected a finite number of hours in (0, "
                            f"{MAX_DURATION_HOURS}]")
    return outcome


def load_battles(path: str | Path = BATTLES_JSON) -> list[Scenario]:
    """Every battle of a database such as :data:`BATTLES_JSON`, each scenario checked
    (:func:`envs.scenario.load_scenarios`) and its history too
    (:func:`check_historical_outcome`).

    Raises:
        FileNotFoundError: if there is no such file.
        ScenarioError: naming the file, the entry and the field, for anything invalid.
    """
    battles = load_scenarios(path)
    for n, battle in enumerate(battles):
        check_historical_outcome(battle, f"{path}[{n}] ({battle.id})")
    return battles


__all__ = ["BATTLES_JSON", "HISTORICAL_WINNERS", "MAX_DURATION_HOURS",
           "check_historical_outcome", "load_battles"]
