"""Combat effectiveness values: how much better or worse a nation's army fought than its
strength and quality say, fitted on the historical benchmark's training battles through
the simulation itself (Dupuy's Quantified Judgement Model calls them CEVs and derives
them from the battles too).

**What a value does.** :func:`with_effectiveness` multiplies the quality of every unit of
a side by its nation's value (:func:`benchmarks.historical_baselines.nation` of the side's
``factions`` entry; clipped to the scenario format's bounds on quality), so a value enters
the fire, the melee, the morale and the doctrine's weighing of fighting power alike. A
side without a known nation, and the reference nation, keep their qualities.

**How the values are chosen** (:func:`choose_effectiveness`). The reference nation is
the one on most sides of the training battles (the French here) and keeps 1. Every
training battle is played once for each value of the grid (:data:`EFFECTIVENESS_GRID`),
that value given to every nation but the reference; a nation's value is the one under
which its training battles against the reference match history most often, ties going
to the lower Brier score and then to the value nearest 1 (no change). A nation with fewer
than :data:`MIN_BATTLES` such battles keeps 1, and a battle between two nations that are
not the reference informs neither. Only the training battles are looked at; the
held-out battles are played once, with the chosen values.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from benchmarks.historical_baselines import ArmyFigures, factions, nation, reference_nation
from benchmarks.historical_scoring import Scores
from envs.scenario import Scenario

EFFECTIVENESS_GRID = (0.7, 0.85, 1.0, 1.2, 1.45, 1.75, 2.1)
"""The values a nation's combat effectiveness is chosen among (1: as the data has it)."""
MIN_BATTLES = 5
"""Training battles against the reference nation a nation needs for a fitted value."""
QUALITY_BOUNDS = (0.25, 4.0)
"""The scenario format's bounds on a unit's quality (:mod:`envs.scenario`)."""


def check_grid(grid: Sequence[float]) -> tuple[float, ...]:
    """``grid`` as a tuple of distinct finite values > 0 that includes 1.

    Raises:
        ValueError: naming ``effectiveness_grid`` and the value, otherwise.
    """
    values = tuple(grid)
    if not values or 1.0 not in values or len(set(values)) < len(values) or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            or v <= 0 for v in values):
        raise ValueError(f"effectiveness_grid={list(values)!r} is invalid: expected distinct "
                         "finite numbers > 0 that include 1.0")
    return tuple(float(v) for v in values)


def with_effectiveness(scenario: Scenario, values: Mapping[str, float]) -> Scenario:
    """``scenario`` with every unit's quality multiplied by its side's nation's value in
    ``values`` (nations not in it, and sides of no known nation, keep theirs)."""
    factor = [values.get(nation(name), 1.0) for name in factions(scenario)]
    if factor == [1.0, 1.0]:
        return scenario
    low, high = QUALITY_BOUNDS
    units = tuple(dataclasses.replace(u, quality=min(max(u.quality * factor[u.side], low), high))
                  for u in scenario.units)
    return dataclasses.replace(scenario, units=units)


@dataclass(frozen=True)
class EffectivenessFit:
    """The nations' fitted values and what each grid value scored."""

    reference: str | None
    """The nation that keeps 1 (None: no side names a nation)."""
    values: dict[str, float]
    """Each fitted nation's chosen value (a nation not here keeps 1)."""
    trials: dict[str, dict[float, Scores]]
    """Each nation with enough battles: the scores of its training battles against the
    reference at every grid value."""


def fitted_nations(figures: Sequence[ArmyFigures]) -> tuple[str | None, dict[str, list[int]]]:
    """The reference nation of ``figures`` and, for every other nation with at least
    :data:`MIN_BATTLES` battles against it, the positions of those battles."""
    reference = reference_nation(figures)
    battles: dict[str, list[int]] = {}
    for n, f in enumerate(figures):
        blue, red = f.nations
        if reference in (blue, red) and blue != red:
            other = red if blue == reference else blue
            if other is not None:
                battles.setdefault(other, []).append(n)
    return reference, {k: v for k, v in battles.items() if len(v) >= MIN_BATTLES}


def choose_effectiveness(reference: str | None, battles: Mapping[str, Sequence[int]],
                         grid: Sequence[float],
                         score: Callable[[float, Sequence[int]], Scores]) -> EffectivenessFit:
    """Each nation's value among ``grid`` (module docstring); ``score(value, chosen)`` is
    the scores of the battles ``chosen`` played with ``value``."""
    values, trials = {}, {}
    for name, chosen in battles.items():
        scored = {g: score(g, chosen) for g in grid}
        trials[name] = scored
        values[name] = min(scored, key=lambda g, s=scored: (
            -s[g].winner_match, s[g].brier, abs(math.log(g))))
    return EffectivenessFit(reference, values, trials)


__all__ = ["EFFECTIVENESS_GRID", "MIN_BATTLES", "QUALITY_BOUNDS", "EffectivenessFit",
           "check_grid", "choose_effectiveness", "fitted_nations", "with_effectiveness"]
