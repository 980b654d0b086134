"""MAPPO on 2v2 battles against scripted Red: speed, learning, warm start, curriculum.

1. Throughput of 2v2 battles against scripted L5: the PettingZoo env one battle at
   a time, the batched env, the batched rollout with MAPPO choosing Blue's orders,
   and whole training (rollout plus PPO update). The reference design measured
   2,500 2v2 env-steps/s here; the target is 20x that.
2. A v1 commander (trained by ``train()`` with the default config unless
   ``--v1-checkpoint`` is given) seeds a MAPPO policy; warm-started and fresh
   policies fight 200 unseen battles each at 1v1, 2v1 and 2v2 before any MAPPO
   training.
3. MAPPO 2v2 training from the v1 warm start, with the default config (which
   first imitates the disciplined doctrine) and, with ``--fresh``, from scratch;
   the win rate against scripted L5 is measured along the way.
4. A curriculum run 1v1 -> 2v1 -> 2v2 from the warm start, promoting on its own
   at a 70 % rolling win rate over 50 battles.

Usage::

    python -m benchmarks.mappo_2v2 [--v1-checkpoint PATH] [--steps 1500000] [--fresh]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks import argument_parser
from benchmarks.sim_throughput import RED_LEVEL, team_batch_stepper, team_single_stepper
from envs.battles.multi_observation import CRITIC_STATE_DIM, OBS_DIM
from models.mappo_policy import MAPPOPolicy
from training.curriculum_scheduler import load_v1_weights_into_mappo
from training.mappo.battles import WIN, play_team_battles
from training.mappo.config import MAPPOConfig
from training.train_mappo import TrainingBattles, collect, train_mappo

REFERENCE_STEPS_PER_SECOND = 2_500
EVAL_SEED = 500_000
ROLLOUT_LENGTH = 64  # steps per battle in the rollout-rate rows, as the 128-battle default


def measure(step, seconds: float = 2.0) -> float:
    """Calls of ``step`` per second: best of three runs of ``seconds``."""
    best = 0.0
    for _ in range(3):
        step()
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            count += step()
        best = max(best, count / (time.perf_counter() - start))
    return best


def single_env_rate() -> float:
    return measure(team_single_stepper(1))


def batched_env_rate(n_battles: int, n_blue: int = 2, n_red: int = 2) -> float:
    return measure(team_batch_stepper(n_battles, n_blue, n_red))


def rollout_rate(n_battles: int, policy: MAPPOPolicy) -> float:
    config = MAPPOConfig(n_envs=n_battles, n_steps=ROLLOUT_LENGTH, enable_wandb=False)
    battles = TrainingBattles(config, 2, 2, np.random.default_rng(0))

    def step() -> int:
        collect(policy, battles, ROLLOUT_LENGTH, config.gamma)
        return ROLLOUT_LENGTH * n_battles

    return measure(step)


def outcome_row(label: str, outcomes: np.ndarray) -> str:
    won, drawn, lost = ((outcomes == k).mean() for k in (WIN, 0, -1))
    return f"| {label} | {won:.0%} | {drawn:.0%} | {lost:.0%} |"


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--v1-checkpoint", type=Path, default=None)
    parser.add_argument("--steps", type=int, default=1_500_000,
                        help="env-steps of each MAPPO training run")
    parser.add_argument("--fresh", action="store_true",
                        help="also train 2v2 from scratch with the same budget")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs' files here")
    parser.add_argument("--throughput-only", action="store_true",
                        help="measure the speeds and stop")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    out = args.out or Path(tempfile.mkdtemp(prefix="mappo_2v2_"))

    print("# MAPPO 2v2 against scripted L5\n")
    print("## Throughput (2v2 env-steps/s, best of 3 x 2 s)\n")
    torch.manual_seed(0)
    policy = MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=2, log_std_init=-1.0)
    rows = [("MultiBattalionEnv (PettingZoo, one battle)", 1, single_env_rate())]
    rows += [("batched env, Blue orders given", n, batched_env_rate(n)) for n in (64, 256, 1024)]
    rows += [("batched rollout, MAPPO choosing Blue's orders", n, rollout_rate(n, policy))
             for n in (256, 1024, 2048)]
    single = rows[0][2]
    print("| what | battles | env-steps/s | x single | x reference (2,500) |")
    print("|---|---:|---:|---:|---:|")
    for label, n, rate in rows:
        print(f"| {label} | {n} | {rate:,.0f} | {rate / single:.1f} | "
              f"{rate / REFERENCE_STEPS_PER_SECOND:.1f} |")

    print("\n## Scaling: batched env, 1024 battles, Blue orders given\n")
    print("| battle | env-steps/s | battalion-steps/s | x 2v2 |")
    print("|---|---:|---:|---:|")
    scaling = {(nb, nr): batched_env_rate(1024, nb, nr)
               for nb, nr in ((1, 1), (2, 2), (3, 3), (4, 4), (6, 6))}
    for (n_blue, n_red), rate in scaling.items():
        print(f"| {n_blue}v{n_red} | {rate:,.0f} | {rate * (n_blue + n_red):,.0f} | "
              f"{rate / scaling[(2, 2)]:.2f} |")

    if args.throughput_only:
        return
    v1 = args.v1_checkpoint
    if v1 is None:
        from training.train import train

        print("\nTraining a v1 commander with the default config ...", flush=True)
        start = time.perf_counter()
        train(enable_wandb=False, progress_bar=False, verbose=0,
              checkpoint_dir=str(out / "v1"), manifest_path=str(out / "v1" / "manifest.jsonl"),
              log_dir=str(out / "v1_logs"), elo_registry_path=str(out / "v1" / "elo.json"))
        v1 = out / "v1" / "ppo_battalion_s42_c5_final.zip"
        print(f"({(time.perf_counter() - start) / 60:.1f} min)")

    print("\n## Warm start from v1 vs a fresh policy, before MAPPO training\n")
    print("200 unseen battles each against scripted L5 (won / drawn / lost).\n")
    torch.manual_seed(42)
    fresh = MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=2, log_std_init=-1.0)
    warm = MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=2, log_std_init=-1.0)
    report = load_v1_weights_into_mappo(v1, warm)
    print(f"v1 tensors loaded: {len(report['loaded'])}, skipped: {len(report['skipped'])}\n")
    print("| policy, battle | won | drawn | lost |")
    print("|---|---:|---:|---:|")
    for name, candidate in (("fresh", fresh), ("warm-started", warm)):
        for n_blue, n_red in ((1, 1), (2, 1), (2, 2)):
            outcomes = play_team_battles(candidate, RED_LEVEL, n_blue=n_blue, n_red=n_red,
                                         n_episodes=200, seed=EVAL_SEED)
            print(outcome_row(f"{name}, {n_blue}v{n_red}", outcomes))

    runs = [("2v2 from the v1 warm start", dict(v1_checkpoint=str(v1))),
            ("2v2 with the default config (imitating the doctrine first)", {})]
    if args.fresh:
        runs.append(("2v2 from scratch", dict(warm_start_doctrine=None)))
    runs.append(("curriculum 1v1 -> 2v1 -> 2v2 from the v1 warm start",
                 dict(v1_checkpoint=str(v1), curriculum=True)))
    for k, (title, settings) in enumerate(runs):
        folder = out / f"run{k}"
        config = MAPPOConfig(total_timesteps=args.steps, n_envs=256, eval_freq=100_000,
                             n_eval_episodes=200, checkpoint_freq=10**9,
                             checkpoint_dir=str(folder / "ck"), log_dir=str(folder / "logs"),
                             elo_registry_path=str(folder / "elo.json"), enable_wandb=False,
                             progress_bar=False, **settings)
        start = time.perf_counter()
        result = train_mappo(config)
        minutes = (time.perf_counter() - start) / 60
        fps = np.mean([h["time/fps"] for h in result.history])
        rollout_fps = np.mean([h["time/rollout_fps"] for h in result.history])
        print(f"\n## {title}\n")
        print(f"{result.total_steps:,} env-steps in {minutes:.1f} min: training "
              f"{fps:,.0f} env-steps/s end to end (rollouts alone {rollout_fps:,.0f}).\n")
        print("| env-steps | battle | rolling win rate (training) | eval won | drawn | lost |")
        print("|---:|---|---:|---:|---:|---:|")
        for h in result.history:
            if "eval/win_rate" in h or "curriculum/promotion_step" in h:
                battle = f"{h['curriculum/n_blue']}v{h['curriculum/n_red']}"
                rolling = h.get("curriculum/win_rate", h.get("rollout/win_rate", float("nan")))
                if "curriculum/promotion_step" in h:
                    rolling = h["curriculum/promotion_win_rate"]
                    battle += f", promoted to {h['curriculum/stage_label']} after " \
                              f"{h['curriculum/total_episodes']} battles in all"
                evaluation = (f"{h['eval/win_rate']:.0%} | {h['eval/draw_rate']:.0%} | "
                              f"{h['eval/loss_rate']:.0%}" if "eval/win_rate" in h
                              else "- | - | -")
                print(f"| {h['time/total_steps']:,} | {battle} | {rolling:.0%} | {evaluation} |")
        final = play_team_battles(result.policy, RED_LEVEL, n_blue=2, n_red=2, n_episodes=200,
                                  seed=EVAL_SEED)
        print(f"\nFinal, 200 unseen 2v2 battles (won / drawn / lost): "
              f"{outcome_row('', final)[4:]}")


if __name__ == "__main__":
    main()
