"""How well does the combined-arms doctrine use its arms? Its plans on the ``combined_arms``
scenario, against scripted L5 and against the doctrine's own plan.

Blue is the combined-arms doctrine (:class:`~envs.commanders.arms_doctrine.CombinedArmsDoctrine`)
playing an :class:`~envs.commanders.arms_doctrine.ArmsPlan`; Red is scripted L5 or the
doctrine with its own plan. The battles are those of ``benchmarks.learning``'s
``mappo_arms`` stack (two battalions, a cavalry regiment and a battery a side on
1.5 x 1 km of procedural ground, 800 steps), split by seed as that benchmark splits them.

The table prints the named plans (:data:`~envs.commanders.arms_doctrine.ARMS_PLANS`).
``--search N`` first searches the plans on the validation battles: ``N`` drawn at random
from :data:`SEARCH_SPACE`, then one pass changing one field at a time from the best,
keeping a change that wins more against L5; it prints the best plan found (the searched
plan of the doctrine module was found so, with a wider family whose other options did
not help: ``docs/performance.md``).

Usage::

    python -m benchmarks.arms_plans [--battles 400] [--split test] [--search 0]
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from benchmarks import argument_parser
from benchmarks.learning import ARMS_FIELD, SPLIT_SEEDS
from envs.commanders.arms_doctrine import ARMS_PLANS, ArmsPlan
from envs.play.commanders import CombinedArmsRed
from training.common.play import share
from training.mappo.battles import play_team_battles
from training.mappo.config import read_order_of_battle

OPPONENTS = ("scripted_l5", "doctrine")
"""Red's commanders: scripted L5, or the combined-arms doctrine playing its own plan."""
SEARCH_SPACE = {"volley_range": (60.0, 75.0, 90.0, 110.0), "fire_discipline": (False, True),
                "step_tolerance": (None, 10.0, 20.0, 40.0),
                "column_beyond": (300.0, 450.0, 600.0, 800.0),
                "charge_within": (150.0, 250.0, 350.0, 450.0),
                "unlimber_within": (400.0, 550.0, 600.0), "gun_target": ("nearest", "cavalry")}
"""The values ``--search`` tries for each field of :class:`ArmsPlan`."""
N_UNITS = 4
"""Units a side on ``combined_arms``."""


def play_plan(plan: ArmsPlan, opponent: str, n_battles: int, seed: int) -> np.ndarray:
    """(n_battles,) int8 outcomes from Blue's side (1 won, 0 drawn, -1 lost) of the
    doctrine playing ``plan`` against ``opponent`` (of :data:`OPPONENTS`), battle ``i``
    seeded ``seed + i``."""
    red = 5 if opponent == "scripted_l5" else CombinedArmsRed()
    return play_team_battles(CombinedArmsRed(plan), red, n_blue=N_UNITS, n_red=N_UNITS,
                             n_episodes=n_battles, seed=seed, env_kwargs=ARMS_FIELD,
                             order_of_battle=read_order_of_battle("combined_arms"))


def search(n_random: int, n_battles: int, rng: np.random.Generator) -> tuple[ArmsPlan, float]:
    """The plan that wins most against L5 on the validation battles: ``n_random`` drawn
    from :data:`SEARCH_SPACE`, then one pass changing one field at a time."""
    seed = SPLIT_SEEDS["validation"]

    def won(plan: ArmsPlan) -> float:
        return float(np.mean(play_plan(plan, "scripted_l5", n_battles, seed) == 1))

    best, best_won = ArmsPlan(), won(ArmsPlan())
    for _ in range(n_random):
        plan = ArmsPlan(**{k: v[rng.integers(len(v))] for k, v in SEARCH_SPACE.items()})
        if (score := won(plan)) > best_won:
            best, best_won = plan, score
    for field, values in SEARCH_SPACE.items():
        for value in values:
            plan = dataclasses.replace(best, **{field: value})
            if plan != best and (score := won(plan)) > best_won:
                best, best_won = plan, score
    return best, best_won


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--battles", type=int, default=400, help="battles per cell (>= 1)")
    parser.add_argument("--split", choices=sorted(SPLIT_SEEDS), default="test")
    parser.add_argument("--search", type=int, default=0,
                        help="plans drawn at random before the table (0: no search)")
    parser.add_argument("--seed", type=int, default=0, help="the search's draws")
    args = parser.parse_args(argv)
    if args.battles < 1:
        parser.error(f"--battles={args.battles} is invalid: expected at least 1")
    if args.search < 0:
        parser.error(f"--search={args.search} is invalid: expected 0 or more")
    start = time.perf_counter()
    plans = dict(ARMS_PLANS)
    if args.search:
        found, won = search(args.search, args.battles, np.random.default_rng(args.seed))
        print(f"best plan of the search ({args.search} drawn, then one field at a time; "
              f"validation battles, {won:.1%} won against L5): {found}\n")
        plans["found by this search"] = found
    seed = SPLIT_SEEDS[args.split]
    print(f"## The combined-arms doctrine's plans on `combined_arms` ({args.split} split, "
          f"{args.battles} battles a cell, won/drawn/lost %)\n")
    print("| plan | " + " | ".join(OPPONENTS) + " |")
    print("|---|" + "---|" * len(OPPONENTS))
    for name, plan in plans.items():
        cells = [share(play_plan(plan, opponent, args.battles, seed)) for opponent in OPPONENTS]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nwall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
