"""The demo behind ``make demo``: train a commander, test it, watch it fight.

Trains a PPO commander with the default configuration (a few minutes on two
cores), plays 100 battles against each scripted level and random orders,
prints the results, and writes a replay of the trained commander against
scripted level 5 as a GIF and as a page that plays it in the browser.

Usage::

    python -m training.demo [--total-timesteps 1000000] [--episodes 100] [--out demo_run]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from envs.battalion_env import BattalionEnv
from envs.rendering import record_episode, render_gif, save_replay, write_replay_html
from training.evaluate import run_episodes_with_model
from training.ppo.config import TrainingConfig
from training.ppo.opponents import NAMED_OPPONENTS
from training.train import train

EVAL_SEED = 100_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.demo", description=__doc__)
    parser.add_argument("--total-timesteps", type=int, default=TrainingConfig.total_timesteps)
    parser.add_argument("--episodes", type=int, default=100, help="battles per opponent")
    parser.add_argument("--out", type=Path, default=Path("demo_run"), help="output folder")
    args = parser.parse_args(argv)
    console = Console()
    out = args.out
    config = TrainingConfig(
        total_timesteps=args.total_timesteps, enable_wandb=False, verbose=0,
        checkpoint_dir=str(out / "checkpoints"),
        manifest_path=str(out / "checkpoints" / "manifest.jsonl"), log_dir=str(out / "logs"))

    console.print(f"Training a commander for {config.total_timesteps:,} steps "
                  f"({config.n_envs} battles at a time)...")
    start = time.perf_counter()
    model = train(config)
    console.print(f"Trained in {(time.perf_counter() - start) / 60:.1f} min.")

    table = Table(title=f"Trained commander (Blue), {args.episodes} unseen battles per opponent")
    for column in ("opponent", "won", "drawn", "lost", "win rate"):
        table.add_column(column, justify="left" if column == "opponent" else "right")
    for opponent in NAMED_OPPONENTS:
        r = run_episodes_with_model(model, opponent, args.episodes, seed=EVAL_SEED)
        table.add_row(opponent, str(r.wins), str(r.draws), str(r.losses), f"{r.win_rate:.0%}")
    console.print(table)

    replay = record_episode(BattalionEnv(curriculum_level=5), model, seed=EVAL_SEED,
                            metadata={"blue": "trained PPO commander", "red": "scripted_l5"})
    save_replay(replay, out / "replays" / "trained_vs_scripted_l5.npz")
    gif = render_gif(replay, out / "replays" / "trained_vs_scripted_l5.gif")
    outcome = replay.metadata["outcome"]
    console.print(f"Battle vs scripted_l5: {'drawn' if outcome == 'draw' else outcome + ' won'} "
                  f"after {replay.n_steps} steps.")
    console.print(f"Replay GIF: {gif.resolve()}")
    page = write_replay_html(replay, gif.with_suffix(".html"))
    console.print(f"Replay in the browser: {page.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
