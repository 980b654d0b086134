"""A short self-play run: does the pool grow, does the learner beat its past selves,
and does it still beat the scripted doctrines at the end?

Trains with ``enable_self_play=True`` (default config otherwise, so the first
300k steps are the warm start and self-play runs after it). Every
``--report-every`` steps it records the pool size, the learner's win rate over
50 battles against the newest snapshot, and the Elo ratings of the learner and
of the newest snapshot (snapshots enter the registry at the learner's rating
when they are taken). At the end it plays 100 battles against each scripted
level and random orders, beside a control run with the same budget and seed
but no self-play (fine-tuning after the warm start first dips against L4/L5,
then climbs; the control separates that from forgetting). Last, the control
fights a copy of itself, both deterministic, 200 battles: a fair duel
(Red sees and orders in its own mirrored frame) is won about as often as lost.

Usage::

    python -m benchmarks.self_play [--total-timesteps 1200000] [--report-every 100000]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from stable_baselines3.common.callbacks import BaseCallback

from benchmarks import argument_parser
from training.elo import EloRegistry
from training.evaluate import EvaluationResult, play_duels, run_episodes_with_model
from training.ppo.battles import env_kwargs_for
from training.ppo.config import TrainingConfig
from training.ppo.opponents import NAMED_OPPONENTS
from training.self_play import OpponentPool, evaluate_vs_pool
from training.train import train


class Reporter(BaseCallback):
    """Records the self-play state every ``every`` steps."""

    def __init__(self, config: TrainingConfig, every: int) -> None:
        super().__init__()
        self.config, self.every, self.rows = config, every, []
        self._next = every

    def _init_callback(self) -> None:
        self._next = self.model.num_timesteps + self.every

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next:
            self._next += self.every
            self.report()
        return True

    def report(self) -> None:
        pool = OpponentPool(self.config.self_play_pool_dir, self.config.self_play_pool_max_size)
        registry = EloRegistry(self.config.elo_registry_path)
        latest = pool.sample_latest()
        win_rate = (evaluate_vs_pool(self.model, latest, 50, seed=7,
                                     env_kwargs=env_kwargs_for(self.config))
                    if latest is not None else float("nan"))
        learners = [n for n in registry.all_ratings() if not n.startswith("snapshot_")]
        learner = registry.get_rating(learners[0]) if learners else float("nan")
        newest = (registry.get_rating(pool.snapshot_paths[-1].stem) if pool.size
                  else float("nan"))
        vs_l5 = run_episodes_with_model(self.model, "scripted_l5", 50, seed=100_000)
        self.rows.append((self.num_timesteps, pool.size, win_rate, learner, newest,
                          vs_l5.win_rate))


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--total-timesteps", type=int, default=1_200_000)
    parser.add_argument("--report-every", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="self_play_"))
    config = TrainingConfig(
        total_timesteps=args.total_timesteps, enable_self_play=True, enable_wandb=False,
        progress_bar=False, verbose=0, self_play_snapshot_freq=args.report_every,
        self_play_eval_freq=args.report_every, checkpoint_dir=str(out / "checkpoints"),
        manifest_path=str(out / "checkpoints" / "manifest.jsonl"),
        self_play_pool_dir=str(out / "pool"), elo_registry_path=str(out / "elo.json"),
        log_dir=str(out / "logs"))
    reporter = Reporter(config, args.report_every)
    start = time.perf_counter()
    model = train(config, extra_callbacks=[reporter])
    minutes = (time.perf_counter() - start) / 60

    print(f"# Self-play: {model.num_timesteps:,} env-steps in {minutes:.1f} min "
          f"(scripted share {config.self_play_scripted_share:.0%})")
    print()
    print("| step | pool size | win rate vs newest snapshot | learner Elo | newest snapshot "
          "Elo | win rate vs scripted_l5 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for step, size, win_rate, learner, newest, l5 in reporter.rows:
        print(f"| {step:,} | {size} | {win_rate:.0%} | {learner:.0f} | {newest:.0f} | "
              f"{l5:.0%} |")
    control = train(config.replace(enable_self_play=False,
                                   checkpoint_dir=str(out / "control"),
                                   manifest_path=str(out / "control" / "manifest.jsonl")))
    print()
    print("| opponent | self-play: won / drawn / lost | control without self-play |")
    print("|---|---:|---:|")
    for opponent in NAMED_OPPONENTS:
        cells = []
        for trained in (model, control):
            r = run_episodes_with_model(trained, opponent, 100, seed=100_000)
            cells.append(f"{r.win_rate:.0%} / {r.draw_rate:.0%} / {r.loss_rate:.0%}")
        print(f"| {opponent} | {cells[0]} | {cells[1]} |")
    mirror = EvaluationResult.from_outcomes(play_duels(
        control, control, 200, True, seed=100_000, env_kwargs=env_kwargs_for(config),
        red_deterministic=True))
    print()
    print(f"The control against a copy of itself (200 battles, both deterministic), from "
          f"Blue's side: {mirror.win_rate:.1%} won / {mirror.draw_rate:.1%} drawn / "
          f"{mirror.loss_rate:.1%} lost.")


if __name__ == "__main__":
    main()
