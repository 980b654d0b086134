"""Is the scripted ladder graded? Each level against the levels below it, on a scenario.

Both sides are scripted (:mod:`envs.sim.scripted`), each at its level, on the battles
of a scenario file of ``configs/scenarios/`` (``combined_arms`` by default: two
battalions in column, a cavalry regiment and a limbered battery a side, on procedural
ground). Levels 2 to 5 use their arms (level 2 its horse, level 3 its horse and
deployment into line, levels 4 and 5 everything: guns, and level 5 squares), so their
formation orders go to the step with their other orders. A battle is decided as the
N-vs-M battles decide it (:mod:`envs.battles.multi_battalion_batch`); at the step
limit it is a draw. The table gives each pairing's won/drawn/lost share from the side
of the higher level, which plays Blue in half of the battles and Red in the other half
(the two deployment bands differ).

Usage::

    python -m benchmarks.scripted_ladder [--scenario combined_arms] [--battles 200]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.battlefield import FIELDS as BATTLEFIELD_FIELDS
from envs.battlefield import Battlefield
from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.sim.constants import KEEP_FORMATION, SCRIPTED_LEVELS
from training.common.play import play, share, team_outcomes
from training.curriculum_scheduler import load_scenario


@dataclass(frozen=True)
class ScriptedSides:
    """Battles of a scenario in which both sides are scripted levels (``blue`` and
    ``red`` of :meth:`battles` are levels 1..5)."""

    scenario: dict[str, Any]

    @contextmanager
    def battles(self, blue: int, red: int, n: int, seed: int) -> Iterator[_Battles]:
        yield _Battles(self.scenario, blue, red, n, seed)


class _Battles:
    """The :class:`~training.common.play.Battles` of :class:`ScriptedSides`."""

    def __init__(self, scenario: dict[str, Any], blue: int, red: int, n: int,
                 seed: int) -> None:
        field = {k: v for k, v in scenario.items() if k in BATTLEFIELD_FIELDS}
        battlefield = Battlefield.from_kwargs(None, **field)
        self.batch = MultiBattalionBatch(
            n, scenario["n_blue"], scenario["n_red"], battlefield=battlefield,
            config=battlefield.battle_config(), reward_weights=None,
            order_of_battle=scenario.get("order_of_battle"))
        self.batch.reset(np.arange(n), [seed + i for i in range(n)], np.zeros(n, np.int64))
        self.levels = (blue, red)
        self.sides = (np.flatnonzero(self.batch.team == BLUE),
                      np.flatnonzero(self.batch.team == RED))
        self.actions = np.zeros((n, self.batch.n_units, 3), np.float32)
        self.formations = np.full((n, self.batch.n_units), KEEP_FORMATION, np.int8)
        self.winner = np.full(n, -1, np.int8)

    def step(self) -> np.ndarray:
        for units, level in zip(self.sides, self.levels, strict=True):
            formations = np.empty((self.batch.n_battles, len(units)), np.int8)
            self.actions[:, units] = self.batch.scripted_actions(units, level, formations)
            self.formations[:, units] = formations
        result = self.batch.step(self.actions, self.formations)
        self.winner = result.winner
        return result.battle_over

    def outcomes(self) -> np.ndarray:
        return team_outcomes(self.winner)


def pairing(settings: ScriptedSides, higher: int, lower: int, battles: int,
            seed: int) -> np.ndarray:
    """Outcomes from ``higher``'s side: half the battles with it as Blue, half as Red."""
    half = battles // 2
    as_blue = play(higher, lower, half, seed, settings)
    as_red = play(lower, higher, battles - half, seed + half, settings)
    return np.concatenate([as_blue, -as_red])


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scripted_ladder",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", default="combined_arms",
                        help="a scenario file of configs/scenarios (without .yaml)")
    parser.add_argument("--battles", type=int, default=200,
                        help="battles per pairing (at least 2)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.battles < 2:
        parser.error(f"--battles={args.battles} is invalid: expected at least 2")
    settings = ScriptedSides(load_scenario(args.scenario))
    start = time.perf_counter()
    levels = list(SCRIPTED_LEVELS)
    print(f"## Scripted levels on `{args.scenario}`: the row's level against the column's, "
          f"won/drawn/lost % of {args.battles} battles (half as Blue, half as Red)\n")
    print("| level | " + " | ".join(f"L{low}" for low in levels[:-1]) + " |")
    print("|---|" + "---|" * (len(levels) - 1))
    for high in levels[1:]:
        cells = [share(pairing(settings, high, low, args.battles, args.seed))
                 if low < high else "" for low in levels[:-1]]
        print(f"| L{high} | " + " | ".join(cells) + " |")
    print(f"\nwall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
