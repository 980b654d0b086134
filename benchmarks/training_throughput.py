"""Whole-training throughput, and where the time goes: the duel's PPO run (as
``learn_v1.py`` trains it, warm start included) and MAPPO on 2v2 battles (as
``mappo_2v2.py`` does, without the warm start, so all of it is rollouts and updates),
shortened.

Each run is timed as it is, then run again under ``cProfile``
to split its time into what the simulator costs (env steps, resets and scripted
commanders), the rollouts around it (network inference, buffers) and the
learner's update. The split is by cumulative time of the functions named in
:data:`DUEL_PARTS` / :data:`TEAM_PARTS`, as shares of the profiled run (the
profiler slows Python-heavy parts more than NumPy, Numba and torch ones; whatever
is not in a part is logging, evaluation and checkpoints).

Usage::

    python -m benchmarks.training_throughput [--duel-steps 600000] [--team-steps 300000]
"""

from __future__ import annotations

import cProfile
import pstats
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import argument_parser
from training.mappo.config import MAPPOConfig
from training.ppo.config import TrainingConfig
from training.train import train
from training.train_mappo import train_mappo

DUEL_PARTS = {
    "simulator (BattalionVecEnv.step_wait)": ("vec_env.py", "step_wait"),
    "rollouts (SB3 collect_rollouts, simulator included)": ("on_policy_algorithm.py",
                                                            "collect_rollouts"),
    "PPO update (SB3 PPO.train)": ("stable_baselines3/ppo/ppo.py", "train"),
    "warm start (imitating the doctrine, its battles included)": ("warm_start.py",
                                                                  "warm_start"),
}
TEAM_PARTS = {
    "simulator (MultiBattalionBatch: steps, scripted Red, restarts)": (
        "multi_battalion_batch.py", None),
    "rollouts (collect, simulator included)": ("mappo/rollout.py", "collect"),
    "MAPPO update": ("mappo/update.py", "update"),
    "warm start (imitating the doctrine, its battles included)": ("mappo/warm_start.py",
                                                                  None),
}


def _cumulative(stats: pstats.Stats, file_suffix: str, function: str | None) -> float:
    """Seconds spent inside functions of ``file_suffix`` (named ``function``, or any
    entered from outside the file when None), counted once."""
    total = 0.0
    for (filename, _, name), (_, _, _, cumulative, callers) in stats.stats.items():
        if not filename.endswith(file_suffix) or (function is not None and name != function):
            continue
        if function is None and all(caller[0].endswith(file_suffix) for caller in callers):
            continue  # called from inside the file: already counted by its caller
        total += cumulative
    return total


def timed(run) -> tuple[float, object]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def report(title: str, steps: int, seconds: float, make_run,
           parts: dict[str, tuple[str, str | None]]) -> None:
    """Print the run's throughput, then profile it again and print the split."""
    print(f"\n## {title}\n")
    print(f"{steps:,} env-steps in {seconds:.1f} s: **{steps / seconds:,.0f} env-steps/s**\n")
    profile = cProfile.Profile()
    profiled_seconds, _ = timed(lambda: profile.runcall(make_run()))
    stats = pstats.Stats(profile)
    print(f"Profile of the same run ({profiled_seconds:.1f} s under cProfile):\n")
    print("| part | share of the profiled run |")
    print("|---|---:|")
    for label, (suffix, function) in parts.items():
        print(f"| {label} | {_cumulative(stats, suffix, function) / profiled_seconds:.0%} |")


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--duel-steps", type=int, default=600_000)
    parser.add_argument("--team-steps", type=int, default=300_000)
    args = parser.parse_args(argv)
    out = Path(tempfile.mkdtemp(prefix="training_throughput_"))

    def duel():
        steps = args.duel_steps
        folder = Path(tempfile.mkdtemp(dir=out))
        return lambda: train(TrainingConfig(
            total_timesteps=steps, enable_wandb=False, progress_bar=False, verbose=0,
            checkpoint_dir=str(folder / "ck"), manifest_path=str(folder / "ck" / "m.jsonl"),
            log_dir=str(folder / "logs")))

    seconds, model = timed(duel())
    report("Duel: PPO with the default config (learn_v1.py's run)", model.num_timesteps,
           seconds, duel, DUEL_PARTS)

    def team():
        steps = args.team_steps
        folder = Path(tempfile.mkdtemp(dir=out))
        return lambda: train_mappo(MAPPOConfig(
            total_timesteps=steps, n_envs=256, eval_freq=10**9, checkpoint_freq=10**9,
            checkpoint_dir=str(folder / "ck"), log_dir=str(folder / "logs"),
            elo_registry_path=str(folder / "elo.json"), enable_wandb=False, progress_bar=False,
            warm_start_doctrine=None))

    seconds, result = timed(team())
    report("MAPPO 2v2, 256 battles, rollouts and updates only (no warm start)",
           result.total_steps, seconds, team, TEAM_PARTS)
    fps = np.mean([h["time/fps"] for h in result.history])
    rollout = np.mean([h["time/rollout_fps"] for h in result.history])
    print(f"\nMAPPO's own counters: {fps:,.0f} env-steps/s per update end to end, rollouts "
          f"alone {rollout:,.0f}.")

if __name__ == "__main__":
    main()
