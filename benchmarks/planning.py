"""Does planning with the simulator beat the commander it starts from? A stack's planner
and its prior against scripted L5, the doctrine team and each other.

For each seed ``s`` of ``--seeds``, the planner (its generator seeded ``s``) and its prior
(:mod:`training.planners`) each play ``--battles`` battles of the split, battle ``i``
seeded ``first + s * battles + i``, against scripted L5 and the stack's doctrine team;
then the planner plays its prior head to head, once as Blue and once as Red on the same
battles. Each cell prints won/drawn/lost in percent, mean and min over seeds of the won
share; the head-to-head counts the planner's wins over both sides. The planner's pool of
enemies leaves out the opponent it is scored against (``enemy model`` column). Every row
also prints the search's cost per decision and the wall time.

Usage::

    python -m benchmarks.planning [--stack team] [--seeds 5] [--battles 200]
        [--split test] [--every 25 --futures 4 --horizon 500] [--quick] [--out FILE.json]
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import argument_parser
from benchmarks.learning import SPLIT_SEEDS
from envs.planning.planner import PlanningCommander, Search
from envs.play.commanders import ScriptedRed
from storage.files import atomic_write_text
from training.common.play import WIN, share
from training.mappo.battles import play_team_battles
from training.mappo.config import read_order_of_battle
from training.planners import STACKS, PlannerStack, make_planner


@dataclass
class Row:
    """One row of the table: a commander against an opponent, over the seeds."""

    label: str
    enemy_model: str
    outcomes: list[np.ndarray] = field(default_factory=list)
    ms_per_decision: float = 0.0
    steps_per_decision: float = 0.0
    seconds: float = 0.0

    def won(self) -> np.ndarray:
        return np.array([np.mean(o == WIN) for o in self.outcomes])

    def line(self) -> str:
        won = 100 * self.won()
        cost = (f"{self.ms_per_decision:.0f} ms, {self.steps_per_decision:,.0f} steps"
                if self.steps_per_decision else "-")
        return (f"| {self.label} | {share(np.concatenate(self.outcomes))} | {won.mean():.1f} | "
                f"{won.min():.1f} | {self.enemy_model} | {cost} | {self.seconds:.0f} |")


def play(stack: PlannerStack, blue, red, n: int, seed: int) -> np.ndarray:
    """(n,) outcomes from Blue's side, battle ``i`` seeded ``seed + i``."""
    oob = None if stack.order_of_battle is None else read_order_of_battle(stack.order_of_battle)
    return play_team_battles(blue, red, n_blue=stack.n_blue, n_red=stack.n_red, n_episodes=n,
                             seed=seed, env_kwargs=stack.env_kwargs, order_of_battle=oob)


def pool_names(planner: PlanningCommander) -> str:
    return ", ".join(enemy.name for enemy in planner.enemy)


def run(stack: PlannerStack, seeds: int, battles: int, split: str,
        search: Search) -> list[Row]:
    """Every row of the table, each over ``seeds`` seeds."""
    d = stack.diagonal
    prior = stack.prior(d)
    opponents = {"scripted_l5": ScriptedRed(5), stack.doctrine(d).name: stack.doctrine(d)}
    rows: dict[str, Row] = {}

    def add(key: str, label: str, enemy_model: str, outcomes: np.ndarray, seconds: float,
            planner: PlanningCommander | None = None) -> None:
        row = rows.setdefault(key, Row(label, enemy_model))
        row.outcomes.append(outcomes)
        row.seconds += seconds
        if planner is not None:
            n = len(row.outcomes)
            row.ms_per_decision += (planner.cost.ms_per_decision - row.ms_per_decision) / n
            row.steps_per_decision += (planner.cost.steps_per_decision
                                       - row.steps_per_decision) / n

    for s in range(seeds):
        first = SPLIT_SEEDS[split] + s * battles
        for name, opponent in opponents.items():
            start = time.perf_counter()
            add(f"prior/{name}", f"prior ({prior.name}) vs {name}", "-",
                play(stack, prior, opponent, battles, first), time.perf_counter() - start)
            planner = make_planner(stack.name, search=search, seed=s, scored_against=(name,))
            start = time.perf_counter()
            add(f"planner/{name}", f"planner vs {name}", pool_names(planner),
                play(stack, planner, opponent, battles, first), time.perf_counter() - start,
                planner)
        planner = make_planner(stack.name, search=search, seed=s, scored_against=(prior.name,))
        start = time.perf_counter()
        as_blue = play(stack, planner, prior, battles, first)
        as_red = -play(stack, prior, planner, battles, first)  # from the planner's side
        add("h2h", f"planner vs prior ({prior.name}), sides swapped", pool_names(planner),
            np.concatenate([as_blue, as_red]).astype(np.int8), time.perf_counter() - start,
            planner)
    return list(rows.values())


def table(stack: PlannerStack, rows: list[Row], seeds: int, battles: int, split: str,
          search: Search) -> str:
    head = (f"stack {stack.name}, split {split}, {seeds} seeds x {battles} battles, "
            f"K={search.every} M={search.futures} H={search.horizon}, "
            f"{1 + len(stack.candidates(stack.diagonal))} candidates")
    lines = [head, "",
             "| commander vs opponent | won/drawn/lost % | won mean | won min | enemy model "
             "(pool) | search per decision | wall s |",
             "|---|---|---:|---:|---|---|---:|"]
    return "\n".join([*lines, *(row.line() for row in rows)])


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name if __spec__ else "benchmarks.planning")
    parser.add_argument("--stack", choices=sorted(STACKS), default="team")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--battles", type=int, default=200)
    parser.add_argument("--split", choices=sorted(SPLIT_SEEDS), default="test")
    parser.add_argument("--every", type=int)
    parser.add_argument("--futures", type=int)
    parser.add_argument("--horizon", type=int)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 seed, 8 battles, a short search")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    stack = STACKS[args.stack]
    base = Search(every=8, futures=2, horizon=40) if args.quick else stack.search
    search = Search(every=args.every or base.every, futures=args.futures or base.futures,
                    horizon=args.horizon or base.horizon)
    seeds, battles = (1, 8) if args.quick else (args.seeds, args.battles)
    rows = run(stack, seeds, battles, args.split, search)
    print(table(stack, rows, seeds, battles, args.split, search), flush=True)
    if args.out is not None:
        atomic_write_text(args.out, json.dumps({
            "stack": stack.name, "split": args.split, "seeds": seeds, "battles": battles,
            "search": dataclasses.asdict(search),
            "rows": [{"label": r.label, "enemy_model": r.enemy_model,
                      "won": r.won().tolist(), "won_drawn_lost": share(np.concatenate(
                          r.outcomes)), "ms_per_decision": r.ms_per_decision,
                      "steps_per_decision": r.steps_per_decision, "seconds": r.seconds}
                     for r in rows]}, indent=2) + "\n")


if __name__ == "__main__":
    main()

__all__ = ["Row", "main", "run", "table"]
