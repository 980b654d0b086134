"""Which teacher for the generalist? The combined-arms doctrine playing each named plan
(:data:`~envs.commanders.arms_doctrine.ARMS_PLANS`; with ``--teachers``, the plans named,
each perhaps under an attack rule: ``line+always``), and with ``--lookahead`` the
lookahead teacher choosing among candidates (:mod:`training.wfm1.lookahead`), commands
Blue against the doctrine playing its own, on WFM-1's battles.

Two kinds of battles:

* **even training battles** (the validation splits the plans were chosen on): training
  scenarios (:func:`~training.wfm1.scenarios.sample_training_scenario`) whose sides both
  field at least :data:`MIN_SIDE` units and where Red fields :data:`RED_SHARE` times
  Blue's, drawn from each seed of :data:`SPLITS`;
* **held out**: the seed's twenty scenarios, each battle seeded as the WFM-1 benchmark
  seeds it (never used to choose a plan).

With held-out battles and more than one teacher it also prints how far the teachers reach
together there (:func:`family_reach`): a specialist told which teacher wins most in each
scenario (what a per-scenario fine-tune choosing among them could reach at best), and an
oracle told, battle by battle, which teacher wins it.

Usage::

    python -m benchmarks.wfm1_teachers [--scenarios 24] [--battles 16] [--held-out 50]
        [--teachers standard searched line line+always]
        [--lookahead line line+always line+never standard [--every 25] [--horizon 75]]
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import argument_parser
from benchmarks.wfm1 import EVAL_SEED
from envs.commanders.arms_doctrine import ARMS_PLANS, ArmsPlan
from training.common.play import share
from training.wfm1.battles import ScenarioBattles, play_out
from training.wfm1.lookahead import Lookahead, candidate
from training.wfm1.scenarios import HELD_OUT_SCENARIOS, WFMScenario, sample_training_scenario

SPLITS = (5, 6)
"""Seeds of the even training battles' two validation splits."""
MIN_SIDE = 4
"""Fewest units a side fields in an even training battle."""
RED_SHARE = (0.67, 1.5)
"""Least and most of Red's units in an even training battle, in Blue's."""
MAX_STEPS = 500
"""Steps after which a battle is a draw (WFM-1's default)."""


def even_scenarios(seed: int, n: int) -> list[WFMScenario]:
    """The first ``n`` even training scenarios drawn from ``seed``."""
    rng, scenarios = np.random.default_rng(seed), []
    while len(scenarios) < n:
        scenario = sample_training_scenario(rng)
        if (min(scenario.n_blue, scenario.n_red) >= MIN_SIDE
                and RED_SHARE[0] <= scenario.n_red / scenario.n_blue <= RED_SHARE[1]):
            scenarios.append(scenario)
    return scenarios


def play_teacher(teacher: ArmsPlan | str | Lookahead, scenarios: list[WFMScenario],
                 n_battles: int, seed: int) -> np.ndarray:
    """(n_scenarios * n_battles,) outcomes (1 won, 0 drawn, -1 lost) of Blue's
    ``teacher`` (the doctrine playing a plan, or a candidate's name, or a lookahead)
    against the doctrine,
    battle ``i`` of scenario ``k`` seeded ``seed + k * n_battles + i``."""
    kind = "lookahead" if isinstance(teacher, Lookahead) else "blue_plan"
    return play_out(ScenarioBattles(scenarios, n_battles, MAX_STEPS, seed=seed,
                                    **{kind: teacher}), None)


def family_reach(outcomes: np.ndarray) -> tuple[float, float]:
    """Won shares of the teachers' (teachers, scenarios, battles) held-out ``outcomes``
    taken together: each scenario played by the teacher that won most of its battles
    (mean over scenarios), and each battle won if any teacher won it. Both choose with
    the outcomes known, so they are ceilings, not commanders."""
    won = outcomes == 1
    return float(won.mean(axis=2).max(axis=0).mean()), float(won.any(axis=0).mean())


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--scenarios", type=int, default=24,
                        help="even training scenarios of each validation split (>= 1)")
    parser.add_argument("--battles", type=int, default=16,
                        help="battles of each of them (>= 1)")
    parser.add_argument("--held-out", type=int, default=50,
                        help="battles of each held-out scenario (0: none)")
    parser.add_argument("--teachers", nargs="+", default=list(ARMS_PLANS), metavar="TEACHER",
                        help="the plans that command Blue, each perhaps with +RULE "
                             "(default: every plan of ARMS_PLANS)")
    parser.add_argument("--lookahead", nargs="+", default=None, metavar="CANDIDATE",
                        help="add the lookahead teacher choosing among these candidates "
                             "(plans, perhaps with +RULE)")
    parser.add_argument("--every", type=int, default=25,
                        help="the lookahead's steps between searches")
    parser.add_argument("--horizon", type=int, default=75,
                        help="the lookahead's steps played ahead")
    args = parser.parse_args(argv)
    for name in args.teachers:
        try:
            candidate(name)
        except ValueError as error:
            parser.error(f"--teachers: {error}")
    teachers: dict[str, str | Lookahead] = {name: name for name in args.teachers}
    if args.lookahead is not None:
        try:
            lookahead = Lookahead(tuple(args.lookahead), args.every, args.horizon)
        except ValueError as error:
            parser.error(f"--lookahead/--every/--horizon: {error}")
        teachers[f"lookahead ({', '.join(lookahead.plans)}; every {lookahead.every}, "
                 f"horizon {lookahead.horizon})"] = lookahead
    for name in ("scenarios", "battles"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} is invalid: expected at least 1")
    if args.held_out < 0:
        parser.error(f"--held-out={args.held_out} is invalid: expected 0 or more")
    start = time.perf_counter()
    splits = {seed: even_scenarios(seed, args.scenarios) for seed in SPLITS}
    columns = [f"even, split {seed}" for seed in SPLITS] + (
        ["held out (mean of 20)"] if args.held_out else [])
    print(f"## Teachers against the combined-arms doctrine on WFM-1's battles (won/drawn/lost %; "
          f"{args.scenarios} x {args.battles} even battles a split, {args.held_out} a "
          "held-out scenario)\n")
    print("| Blue's teacher | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    held_out = []
    for name, teacher in teachers.items():
        cells = [share(play_teacher(teacher, scenarios, args.battles, seed * 100_000))
                 for seed, scenarios in splits.items()]
        if args.held_out:
            held_out.append([play_teacher(teacher, [scenario], args.held_out, EVAL_SEED)
                             for scenario in HELD_OUT_SCENARIOS])
            # Every scenario plays as many battles: the pooled shares are the means of 20.
            cells.append(share(np.concatenate(held_out[-1])))
        print(f"| {name} | " + " | ".join(cells) + " |")
    if len(held_out) > 1:
        specialist, oracle = family_reach(np.array(held_out))
        print(f"\nHeld out, the {len(held_out)} teachers together: {specialist:.1%} won by the "
              f"teacher that wins most in each scenario, {oracle:.1%} of the battles won by "
              "at least one of them (both chosen knowing the outcomes).")
    print(f"\nwall time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
