"""How many battles can any simple plan win? A ceiling for the learners' targets.

The disciplined doctrine (:class:`~envs.commanders.doctrine.DisciplinedCommander`) is
one plan: face the enemy, march to ``hold_range``, halt and fire. This benchmark plays a
family of such plans against an opponent on the same battles: every halt range, and
five ways to behave while a crest hides the enemy (march on as the doctrine does, halt
there, or wheel half a radian to either side to find a sight line at longer range, while
it is within musket range; or fall back while the hidden enemy stands higher). For each
opponent it prints how each plan did and the **per-battle best of the family**: a
battle counts as won if any plan won it. That oracle knows the
outcome before it chooses, so it is an optimistic ceiling for a commander that reads
the battle from its observation and picks one of these plans.

``--team`` plays 2v2 battles instead, every Blue battalion following the same plan,
against scripted L5 commanding Red and against the doctrine commanding each of Red's
battalions (``doctrine_team``): the family MAPPO's imitation is drawn from. It adds three
columns outside the family at each halt: the doctrine marching in step
(:class:`~envs.commanders.doctrine.InStepCommander`: a battalion waits while it leads its
laggard ally), the same marching on instead of waiting once the enemy sees it within
:data:`~envs.commanders.doctrine.EXPOSED_RANGE`, and marching in step with the team's fire
concentrated (:class:`~envs.commanders.doctrine.ConcentratingCommander`), and the
per-battle best with those plans counted too.

Usage::

    python -m benchmarks.plan_ceiling [--battles 400] [--split test] [--team]
        [--hold-ranges 50 60 ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.learning import SPLIT_SEEDS
from envs.battles.observation import OBSERVATION_FEATURES
from envs.commanders.doctrine import (
    EXPOSED_RANGE,
    ConcentratingCommander,
    DisciplinedCommander,
    InStepCommander,
)
from envs.sim.constants import FIRE_RANGE
from training.common.play import share
from training.mappo.battles import DOCTRINE_TEAM, play_team_battles
from training.ppo.evaluation import play_duels

HOLD_RANGES = (50, 60, 70, 80, 90, 110, 130)
"""Halt ranges of the family, metres."""
WHEN_HIDDEN = ("march on", "halt", "wheel left", "wheel right", "fall back uphill")
"""What a plan does while a crest hides the enemy within musket range (``fall back
uphill``: march on, but fall back from a hidden enemy that stands higher, at any range:
:class:`~envs.commanders.doctrine.DisciplinedCommander`'s ``fall_back_uphill``)."""
WHEEL = 0.5
"""Radians off the enemy that a wheeling plan marches at while the enemy is hidden."""
_DISTANCE, _SIGHT, _SIN, _COS = (OBSERVATION_FEATURES.index(name) for name in (
    "enemy_distance", "line_of_sight", "enemy_relative_bearing_sin",
    "enemy_relative_bearing_cos"))


class Plan(DisciplinedCommander):
    """The doctrine with a halt range and a way to behave while the enemy is hidden."""

    def __init__(self, hold_range: float, when_hidden: str) -> None:
        super().__init__(hold_range=hold_range,
                         fall_back_uphill=when_hidden == "fall back uphill")
        self.when_hidden = when_hidden

    def predict(self, observation: np.ndarray, deterministic: bool = True):
        orders = np.atleast_2d(super().predict(observation)[0]).copy()
        obs = np.atleast_2d(observation)
        distance = obs[:, _DISTANCE] * self.map_diagonal
        hidden = (obs[:, _SIGHT] < 0.5) & (distance < FIRE_RANGE)
        if self.when_hidden == "halt":
            orders[hidden, 0] = 0.0
        elif self.when_hidden.startswith("wheel"):
            off_front = np.arctan2(obs[:, _SIN],
                                   obs[:, _COS])
            error = off_front - (WHEEL if self.when_hidden == "wheel left" else -WHEEL)
            orders[hidden, 1] = np.clip(error / self.max_turn_rate, -1, 1)[hidden]
            orders[hidden, 0] = (np.abs(error) < 0.3)[hidden]
        return orders, None


TEAM_PLANS = {
    "in step (outside the family)": lambda hold: InStepCommander(hold_range=hold),
    "in step, on under fire (outside)": lambda hold: InStepCommander(
        hold_range=hold, exposed_range=EXPOSED_RANGE),
    "in step, fire concentrated (outside)": lambda hold: ConcentratingCommander(
        hold_range=hold)}
"""The 2v2 plans outside the family, by column title, each made for a halt range."""

TEAM_OPPONENTS = {"scripted_l5": 5, "doctrine_team": DOCTRINE_TEAM}
"""The 2v2 opponents, by name: Red commanded by scripted L5 or by the doctrine."""


def play_plan(plan: DisciplinedCommander, opponent: str, battles: int, seed: int,
              team: bool) -> np.ndarray:
    """Outcomes of ``battles`` battles of ``plan`` against ``opponent``: duels, or 2v2
    battles with ``plan`` commanding each Blue battalion (``team``)."""
    if team:
        return play_team_battles(plan, TEAM_OPPONENTS[opponent], n_episodes=battles,
                                 seed=seed)
    return play_duels(plan, opponent, battles, True, seed)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.plan_ceiling",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--battles", type=int, default=400)
    parser.add_argument("--split", choices=sorted(SPLIT_SEEDS), default="test")
    parser.add_argument("--team", action="store_true",
                        help="2v2 battles against " + " and ".join(TEAM_OPPONENTS))
    parser.add_argument("--hold-ranges", type=float, nargs="+", default=list(HOLD_RANGES),
                        help="halt ranges, metres (default: %(default)s)")
    parser.add_argument("--opponents", nargs="+",
                        help="duel opponents (default: scripted_l5 doctrine)")
    args = parser.parse_args()
    if args.team and args.opponents:
        parser.error("--opponents is for duels; --team plays " + " and ".join(TEAM_OPPONENTS))
    opponents = list(TEAM_OPPONENTS) if args.team else args.opponents or ["scripted_l5",
                                                                          "doctrine"]
    start = time.perf_counter()
    seed = SPLIT_SEEDS[args.split]
    kind = "2v2 battles" if args.team else "duels"
    for opponent in opponents:
        print(f"\n## against {opponent}: won/drawn/lost %, {args.battles} {kind} "
              f"({args.split} split)\n")
        columns = [*WHEN_HIDDEN, *(list(TEAM_PLANS) if args.team else [])]
        print("| halt at | " + " | ".join(columns) + " |")
        print("|---:|" + "---|" * len(columns))
        best = np.full(args.battles, -1, np.int8)
        best_team = best.copy()
        for hold_range in args.hold_ranges:
            cells = []
            for when_hidden in WHEN_HIDDEN:
                outcomes = play_plan(Plan(hold_range, when_hidden), opponent, args.battles,
                                     seed, args.team)
                best = np.maximum(best, outcomes)
                cells.append(share(outcomes))
            for make in (TEAM_PLANS.values() if args.team else ()):
                outcomes = play_plan(make(hold_range), opponent, args.battles, seed, True)
                best_team = np.maximum(best_team, outcomes)
                cells.append(share(outcomes))
            print(f"| {hold_range:g} m | " + " | ".join(cells) + " |")
        print(f"\nper-battle best of the {len(args.hold_ranges) * len(WHEN_HIDDEN)} plans: "
              f"{share(best)}")
        if args.team:
            print(f"with the {len(args.hold_ranges) * len(TEAM_PLANS)} plans outside the family "
                  f"too: {share(np.maximum(best, best_team))}")
    print(f"\nwall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
