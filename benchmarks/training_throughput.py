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

Last, **the update's arithmetic**: one default PPO update of each (the duel's on the
rollout its run ended with, MAPPO's on a fresh rollout), its floating-point operations
counted by torch's ``FlopCounterMode`` (matrix products, forward and backward), its time
(best of three), and this machine's matrix-product rate at the updates' shapes (one
torch thread, as the trainers run). Their quotient is the least time the update's
arithmetic can take, and so the most env-steps/s a whole loop with that update can
reach, whatever the rest costs.

``--previous`` runs the duel with the settings its defaults replaced
(``benchmarks.time_to_competence.PREVIOUS``), for the profile before and after;
``--duel-only`` stops after the duel's profile.

Usage::

    python -m benchmarks.training_throughput [--duel-steps 600000] [--team-steps 300000]
        [--previous] [--duel-only]
"""

from __future__ import annotations

import cProfile
import pstats
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks import argument_parser
from benchmarks.time_to_competence import PREVIOUS
from training.mappo.config import MAPPOConfig
from training.mappo.trainer import MAPPOTrainer
from training.ppo.config import TrainingConfig
from training.train import train
from training.train_mappo import train_mappo

DUEL_PARTS = {
    "simulator (BattalionVecEnv.step_wait)": ("envs/vec_env.py", "step_wait"),
    "rollouts (SB3 collect_rollouts, simulator included)": (
        "stable_baselines3/common/on_policy_algorithm.py", "collect_rollouts"),
    "PPO update (GuidedPPO.train)": ("training/ppo/guided.py", "train"),
    "warm start (imitating the doctrine, its battles included)": ("training/ppo/warm_start.py",
                                                                  "imitate"),
}
TEAM_PARTS = {
    "simulator (MultiBattalionBatch: steps, scripted Red, restarts)": (
        "envs/battles/multi_battalion_batch.py", None),
    "rollouts (collect, simulator included)": ("training/mappo/rollout.py", "collect"),
    "MAPPO update": ("training/mappo/update.py", "update"),
    "warm start (imitating the doctrine, its battles included)": (
        "training/mappo/warm_start.py", None),
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


GEMM_SHAPES = ((2048, 128, 128), (4096, 128, 128), (4096, 237, 128))
"""(rows, inputs, outputs) of the updates' largest matrix products: a minibatch through
a 128-wide layer (the duel's minibatches are 2,048 samples, MAPPO's 4,096; MAPPO's critic
reads 237 numbers)."""


def gemm_rate(seconds: float = 0.5) -> float:
    """This machine's best matrix-product rate (FLOP/s) over :data:`GEMM_SHAPES`, on the
    torch threads set."""
    best = 0.0
    for rows, inputs, outputs in GEMM_SHAPES:
        a, b = torch.randn(rows, inputs), torch.randn(inputs, outputs)
        a @ b
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            a @ b
            count += 1
        best = max(best, 2 * rows * inputs * outputs * count / (time.perf_counter() - start))
    return best


def update_arithmetic(update, rollout_steps: int, rate: float) -> tuple[float, float, float]:
    """``(flops, seconds, bound)`` of one call of ``update``: its counted FLOPs, its best
    time of three, and the env-steps/s that its arithmetic alone allows at ``rate``
    FLOP/s for a rollout of ``rollout_steps``."""
    with FlopCounterMode(display=False) as counter:
        update()
    flops = float(counter.get_total_flops())
    seconds = min(timed(update)[0] for _ in range(3))
    return flops, seconds, rollout_steps * rate / flops


def arithmetic_table(duel_model, team_config: MAPPOConfig) -> None:
    """Print :func:`update_arithmetic` of the duel's update and MAPPO's."""
    team = MAPPOTrainer(team_config)  # sets the torch threads its update runs on
    rate = gemm_rate()  # ... which the matrix products are then timed on
    rollout = team.collect_rollout()
    rows = {"duel PPO update (GuidedPPO.train)":
            (duel_model.train, duel_model.n_steps * duel_model.n_envs),
            "MAPPO 2v2 update": (lambda: team.learn_from(rollout), team.rollout_steps)}
    print(f"\n## The update's arithmetic (matrix products at {rate / 1e9:.0f} GFLOP/s, "
          f"{torch.get_num_threads()} torch thread(s))\n")
    print("| update | GFLOP per update | seconds | GFLOP/s reached | env-steps/s at most "
          "(the update alone, at that rate) |")
    print("|---|---:|---:|---:|---:|")
    for label, (update, steps) in rows.items():
        flops, seconds, bound = update_arithmetic(update, steps, rate)
        print(f"| {label} | {flops / 1e9:.1f} | {seconds:.3f} | {flops / seconds / 1e9:.0f} "
              f"| {bound:,.0f} |")
    team.close()


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--duel-steps", type=int, default=600_000)
    parser.add_argument("--team-steps", type=int, default=300_000)
    parser.add_argument("--previous", action="store_true",
                        help="the duel with the settings its defaults replaced")
    parser.add_argument("--duel-only", action="store_true", help="the duel's profile alone")
    args = parser.parse_args(argv)
    duel_settings = PREVIOUS["train"] if args.previous else {}
    out = Path(tempfile.mkdtemp(prefix="training_throughput_"))

    def duel():
        steps = args.duel_steps
        folder = Path(tempfile.mkdtemp(dir=out))
        return lambda: train(TrainingConfig(
            total_timesteps=steps, enable_wandb=False, progress_bar=False, verbose=0,
            checkpoint_dir=str(folder / "ck"), manifest_path=str(folder / "ck" / "m.jsonl"),
            log_dir=str(folder / "logs"), **duel_settings))

    seconds, model = timed(duel())
    recipe = f" and {duel_settings}" if duel_settings else ""
    report(f"Duel: PPO with the default config{recipe} (learn_v1.py's run)",
           model.num_timesteps, seconds, duel, DUEL_PARTS)
    if args.duel_only:
        return

    def team_config() -> MAPPOConfig:
        folder = Path(tempfile.mkdtemp(dir=out))
        return MAPPOConfig(
            total_timesteps=args.team_steps, n_envs=256, eval_freq=10**9,
            checkpoint_freq=10**9, checkpoint_dir=str(folder / "ck"),
            log_dir=str(folder / "logs"), elo_registry_path=str(folder / "elo.json"),
            enable_wandb=False, progress_bar=False, warm_start_doctrine=None)

    def team():
        config = team_config()
        return lambda: train_mappo(config)

    seconds, result = timed(team())
    report("MAPPO 2v2, 256 battles, rollouts and updates only (no warm start)",
           result.total_steps, seconds, team, TEAM_PARTS)
    fps = np.mean([h["time/fps"] for h in result.history])
    rollout = np.mean([h["time/rollout_fps"] for h in result.history])
    print(f"\nMAPPO's own counters: {fps:,.0f} env-steps/s per update end to end, rollouts "
          f"alone {rollout:,.0f}.")
    arithmetic_table(model, team_config())


if __name__ == "__main__":
    main()
