"""The demo behind ``make demo``: a commander against every scripted opponent, and a replay.

For now the commander is the hand-written :class:`~envs.doctrine.DisciplinedCommander`;
the training issue replaces it with an agent trained on the spot.

Usage::

    python -m training.demo [--episodes 100] [--out replays]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from envs.battalion_env import BattalionEnv
from envs.doctrine import DisciplinedCommander
from envs.rendering import record_episode, render_gif, save_replay
from training.evaluate import run_episodes_with_model
from training.opponents import NAMED_OPPONENTS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.demo", description=__doc__)
    parser.add_argument("--episodes", type=int, default=100, help="battles per opponent")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("replays"), help="replay folder")
    args = parser.parse_args(argv)
    console = Console()
    commander = DisciplinedCommander()

    table = Table(title=f"DisciplinedCommander (Blue), {args.episodes} battles per opponent")
    for column in ("opponent", "won", "drawn", "lost", "win rate"):
        table.add_column(column, justify="right" if column != "opponent" else "left")
    for opponent in NAMED_OPPONENTS:
        result = run_episodes_with_model(commander, opponent, args.episodes, seed=args.seed)
        table.add_row(opponent, str(result.wins), str(result.draws), str(result.losses),
                      f"{result.win_rate:.0%}")
    console.print(table)

    replay = record_episode(BattalionEnv(curriculum_level=5), commander, seed=args.seed,
                            metadata={"blue": "DisciplinedCommander", "red": "scripted_l5"})
    save_replay(replay, args.out / "demo_vs_scripted_l5.npz")
    gif = render_gif(replay, args.out / "demo_vs_scripted_l5.gif")
    console.print(f"Battle vs scripted_l5 ({replay.metadata['outcome']} won after "
                  f"{replay.n_steps} steps)." if replay.metadata["outcome"] != "draw" else
                  f"Battle vs scripted_l5 drawn after {replay.n_steps} steps.")
    console.print(f"Replay GIF: {gif.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
