"""Does the default config learn to command? Train, then fight every opponent.

Trains a PPO commander with the default :class:`~training.config.TrainingConfig`
(overridable on the command line), then plays 100 deterministic battles
against each scripted level and random orders (seeds 100000..100099, unseen in
training). Prints W/D/L, env-steps used, wall time and training throughput.

Targets on a 2-core machine: >= 95 % wins against scripted L1-L4 and random,
>= 80 % against scripted L5, within 1,000,000 env-steps and 20 minutes.

Usage::

    python -m benchmarks.learn_v1 [--total-timesteps 1000000] [--seed 42] [--out DIR]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks import argument_parser
from training.evaluate import run_episodes_with_model
from training.ppo.config import TrainingConfig
from training.ppo.opponents import NAMED_OPPONENTS
from training.train import train

EVAL_SEED = 100_000
TARGETS = {**{f"scripted_l{level}": 0.95 for level in range(1, 5)}, "random": 0.95,
           "scripted_l5": 0.80}


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--total-timesteps", type=int, default=TrainingConfig.total_timesteps)
    parser.add_argument("--seed", type=int, default=TrainingConfig.seed)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None, help="keep the run's files here")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="learn_v1_"))
    config = TrainingConfig(
        total_timesteps=args.total_timesteps, seed=args.seed, enable_wandb=False,
        progress_bar=False, verbose=0, checkpoint_dir=str(out / "checkpoints"),
        manifest_path=str(out / "checkpoints" / "manifest.jsonl"), log_dir=str(out / "logs"))

    start = time.perf_counter()
    model = train(config)
    train_seconds = time.perf_counter() - start
    rows = []
    for opponent in NAMED_OPPONENTS:
        r = run_episodes_with_model(model, opponent, args.episodes, deterministic=True,
                                    seed=EVAL_SEED)
        rows.append((opponent, r))
    total = time.perf_counter() - start

    print(f"# learn_v1: default config, seed {args.seed}, {model.num_timesteps:,} env-steps")
    print()
    print(f"training: {train_seconds / 60:.1f} min, {model.num_timesteps / train_seconds:,.0f} "
          f"env-steps/s (with periodic evaluation); total with final evaluation "
          f"{total / 60:.1f} min")
    print()
    print("| opponent | won | drawn | lost | target | met |")
    print("|---|---:|---:|---:|---:|:---:|")
    for opponent, r in rows:
        target = TARGETS[opponent]
        print(f"| {opponent} | {r.win_rate:.0%} | {r.draw_rate:.0%} | {r.loss_rate:.0%} | "
              f">= {target:.0%} | {'yes' if r.win_rate >= target else 'no'} |")
    print()
    print(f"checkpoints: {out / 'checkpoints'}")


if __name__ == "__main__":
    main()
