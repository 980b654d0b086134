"""Is the battle model tactical? Scripted doctrines against each scripted opponent.

Prints W/D/L over the same battles (seeds 0..n-1) for Blue commanded by the
hand-written disciplined commander, by scripted L5 itself (the mirror match),
and by random orders. A model where the mirror draws and discipline wins is
one where command, not luck, decides battles.

Usage::

    python -m benchmarks.model_balance [--episodes 500]
"""

from __future__ import annotations

from benchmarks import argument_parser
from envs.doctrine import DisciplinedCommander, ScriptedCommander
from training.evaluate import run_episodes_with_model
from training.ppo.opponents import NAMED_OPPONENTS, RandomPolicy


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--episodes", type=int, default=500)
    args = parser.parse_args(argv)
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
