"""Is the battle model tactical? Scripted doctrines against each scripted opponent.

Prints W/D/L over the same battles (seeds 0..n-1) for Blue commanded by the
hand-written disciplined commander, by scripted L5 itself (the mirror match),
and by random orders. A model where the mirror draws and discipline wins is
one where command, not luck, decides battles.

With ``--arms``, the combined-arms table instead: one unit against one (and small
mixed forces against each other) on open ground, each played out
(:func:`envs.scenario_battle.play_scenario`) by a fixed drill or the combined-arms
doctrine, so that what each arm does to each other shows: cavalry charging foot in
line, in column and in square, guns against a standing line and against a charge.

Usage::

    python -m benchmarks.model_balance [--episodes 500] [--arms]
"""

from __future__ import annotations

import numpy as np

from benchmarks import argument_parser
from envs.commanders.arms_doctrine import CombinedArmsDoctrine
from envs.commanders.doctrine import DisciplinedCommander, ScriptedCommander
from envs.scenario import scenario_from_dict
from envs.scenario_battle import NO_WINNER, play_scenario
from envs.sim import constants as C
from training.evaluate import run_episodes_with_model
from training.ppo.opponents import NAMED_OPPONENTS, RandomPolicy

FIELD = {"width_m": 1500, "height_m": 1000, "max_steps": 1500}


class Drill:
    """Every unit of a side turns to the nearest enemy and keeps its formation;
    ``advance`` marches on it, ``fire`` fires (or charges) within ``fire_within``."""

    def __init__(self, advance: bool, fire_within: float) -> None:
        self.advance, self.fire_within = advance, fire_within

    def orders(self, state, geometry):
        enemy = (state.team[:, None] != state.team[None, :])[None] & state.active[:, None]
        dist = np.where(enemy, geometry.dist, np.inf)
        nearest = np.argmin(dist, axis=2)
        near = np.take_along_axis(dist, nearest[..., None], axis=2)[..., 0]
        bearing = np.take_along_axis(np.arctan2(geometry.dy, geometry.dx), nearest[..., None],
                                     axis=2)[..., 0]
        error = (bearing - state.theta + np.pi) % (2 * np.pi) - np.pi
        actions = np.zeros((*state.x.shape, C.ACTION_DIM), np.float32)
        actions[..., 0] = float(self.advance)
        actions[..., 1] = np.clip(error / 0.1, -1, 1)
        actions[..., 2] = near <= self.fire_within
        return actions, np.full(state.x.shape, C.KEEP_FORMATION, np.int8)


HOLD = Drill(advance=False, fire_within=np.inf)
CHARGE = Drill(advance=True, fire_within=250.0)


def _unit(arm: str, x: float, y: float, formation: str | None = None) -> dict:
    unit = {"type": arm, "x": x, "y": y}
    if formation:
        unit["formation"] = formation
    return unit


ARMS_ROWS = [
    ("cavalry charging", CHARGE, [_unit("cavalry", 400, 500)],
     "infantry in line, standing and firing", HOLD, [_unit("infantry", 800, 500, "line")]),
    ("cavalry charging", CHARGE, [_unit("cavalry", 400, 500)],
     "infantry in column, standing and firing", HOLD, [_unit("infantry", 800, 500, "column")]),
    ("cavalry charging", CHARGE, [_unit("cavalry", 400, 500)],
     "infantry in square, standing and firing", HOLD, [_unit("infantry", 800, 500, "square")]),
    ("a battery firing", HOLD, [_unit("artillery", 400, 500)],
     "infantry in line, standing and firing", HOLD, [_unit("infantry", 900, 500, "line")]),
    ("a battery firing", HOLD, [_unit("artillery", 400, 500)],
     "infantry in square, standing", HOLD, [_unit("infantry", 900, 500, "square")]),
    ("cavalry charging", CHARGE, [_unit("cavalry", 400, 500)],
     "a battery firing", HOLD, [_unit("artillery", 900, 500)]),
    ("infantry, doctrine", None, [_unit("infantry", 400, 500, "column")],
     "infantry, doctrine", None, [_unit("infantry", 1100, 500, "column")]),
    ("2 infantry + cavalry + battery, doctrine", None,
     [_unit("infantry", 400, 400, "column"), _unit("infantry", 400, 600, "column"),
      _unit("cavalry", 300, 800), _unit("artillery", 450, 500)],
     "4 infantry, doctrine", None,
     [_unit("infantry", 1100, y, "column") for y in (250, 420, 580, 750)]),
    ("4 infantry, doctrine", None,
     [_unit("infantry", 400, y, "column") for y in (250, 420, 580, 750)],
     "4 infantry, doctrine", None,
     [_unit("infantry", 1100, y, "column") for y in (250, 420, 580, 750)]),
]
"""(Blue, its commander, its units, Red, its commander, its units); None is the
combined-arms doctrine."""


def arms_table(battles: int) -> None:
    """Print the combined-arms balance table over ``battles`` seeds per row."""
    print(f"# Combined arms: {battles} battles per row on open ground (seeds 0..{battles - 1}), "
          "Blue won / drawn / Red won")
    print()
    print("| Blue | Red | Blue won | drawn | Red won | mean steps |")
    print("|---|---|---:|---:|---:|---:|")
    for n, (blue_name, blue, blue_units, red_name, red, red_units) in enumerate(ARMS_ROWS):
        scenario = scenario_from_dict({"id": f"balance_{n}", "field": FIELD, "terrain": "flat",
                                       "units": {"blue": blue_units, "red": red_units}})
        doctrine = CombinedArmsDoctrine(scenario.config())
        outcome = play_scenario(scenario, battles, 0, blue=blue or doctrine,
                                red=red or doctrine)
        shares = [np.mean(outcome.winner == w) for w in (0, NO_WINNER, 1)]
        print(f"| {blue_name} | {red_name} | {shares[0]:.0%} | {shares[1]:.0%} | "
              f"{shares[2]:.0%} | {outcome.steps.mean():.0f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--arms", action="store_true", help="the combined-arms table instead")
    args = parser.parse_args(argv)
    if args.arms:
        arms_table(args.episodes)
        return
    blues = {"DisciplinedCommander": DisciplinedCommander(),
             "ScriptedCommander(L5)": ScriptedCommander(5),
             "random orders": RandomPolicy(seed=0)}
    print(f"# W/D/L over {args.episodes} battles per row (seeds 0..{args.episodes - 1})")
    print()
    print("| Blue | Red | won | drawn | lost |")
    print("|---|---|---:|---:|---:|")
    for name, blue in blues.items():
        for opponent in NAMED_OPPONENTS:
            r = run_episodes_with_model(blue, opponent, args.episodes, seed=0)
            print(f"| {name} | {opponent} | {r.win_rate:.1%} | {r.draw_rate:.1%} | "
                  f"{r.loss_rate:.1%} |")


if __name__ == "__main__":
    main()
