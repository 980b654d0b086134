"""Do the learners beat their teachers? Train a stack on N seeds, fight unseen battles.

Each run trains one stack (below) with one seed, evaluates the commander right
after its warm start and at every tenth of the budget against scripted L5 and the
disciplined doctrine (the teacher), and at the end fights ``--episodes`` battles
against every scripted level, random orders and the doctrine. Prints won/drawn/lost
per opponent for each seed, the mean and the minimum over seeds, the learning curve
(mean and minimum win rate at each evaluation) and the wall time.

Stacks:

- ``train``: the default ``train()`` (imitation of the doctrine, then PPO; 1M env-steps).
- ``quick_start_minimal``: the seed's first quick-start form,
  ``train(total_timesteps=500_000, n_envs=4)``.
- ``quick_start_config``: the seed's second form, ``TrainingConfig(total_timesteps=1_000_000,
  n_envs=8, curriculum_level=3, enable_self_play=True)``.
- ``scratch``: the default config without imitation (``warm_start_doctrine=None``).

The battles are split by seed: ``--split test`` (the default, what the docs report)
uses seeds 100000 onwards, ``--split validation`` seeds 300000 onwards, for choosing
settings without looking at the test battles; training battles use neither range.
``--set key=value`` overrides a :class:`~training.ppo.config.TrainingConfig` field
(repeatable; values are parsed as YAML), ``--jobs`` trains that many seeds at once
(one process each, one torch thread each).

Usage::

    python -m benchmarks.learning --stack train --seeds 5 [--jobs 2] [--out DIR]
    python -m benchmarks.learning --quick        # a smoke run: 2 seeds, 60k env-steps
"""

from __future__ import annotations

import json
import multiprocessing
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from benchmarks import argument_parser
from training.ppo.opponents import NAMED_OPPONENTS

SPLIT_SEEDS = {"test": 100_000, "validation": 300_000}
"""First battle seed of each evaluation split (the docs report ``test``)."""
CURVE_OPPONENTS = ("scripted_l5", "doctrine")
FINAL_OPPONENTS = NAMED_OPPONENTS
CURVE_POINTS = 10


@dataclass(frozen=True)
class Stack:
    """A training call to benchmark: its settings, and the budget it asks for."""

    settings: dict[str, Any]
    total_timesteps: int


STACKS = {
    "train": Stack({}, 1_000_000),
    "quick_start_minimal": Stack({"n_envs": 4}, 500_000),
    "quick_start_config": Stack({"n_envs": 8, "curriculum_level": 3, "enable_self_play": True},
                                1_000_000),
    "scratch": Stack({"warm_start_doctrine": None}, 1_000_000),
}


@dataclass
class RunResult:
    """One seed's run: its curve, its final battles and its wall time."""

    seed: int
    env_steps: int
    minutes: float
    curve: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, list[int]] = field(default_factory=dict)


def _fight(model: Any, opponents: tuple[str, ...], episodes: int, first_seed: int,
           env_kwargs: dict[str, Any]) -> dict[str, list[int]]:
    """Won/drawn/lost of ``model`` against each opponent, deterministic orders."""
    from training.ppo.evaluation import play_duels

    results = {}
    for k, name in enumerate(opponents):
        outcomes = play_duels(model, name, episodes, True, first_seed + 1000 * k,
                              env_kwargs=env_kwargs)
        results[name] = [int((outcomes > 0).sum()), int((outcomes == 0).sum()),
                         int((outcomes < 0).sum())]
    return results


def run_one(stack: str, seed: int, total_timesteps: int, overrides: dict[str, Any],
            episodes: int, curve_episodes: int, split: str, out: str) -> RunResult:
    """Train ``stack`` with ``seed`` and evaluate it along the way and at the end."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    from training.ppo.battles import env_kwargs_for
    from training.ppo.config import TrainingConfig
    from training.train import train

    torch.set_num_threads(1)
    folder = Path(out) / f"{stack}_seed{seed}"
    config = TrainingConfig(**{
        **STACKS[stack].settings, "total_timesteps": total_timesteps, "seed": seed,
        "enable_wandb": False, "progress_bar": False, "verbose": 0,
        "checkpoint_dir": str(folder / "checkpoints"),
        "manifest_path": str(folder / "checkpoints" / "manifest.jsonl"),
        "self_play_pool_dir": str(folder / "checkpoints" / "pool"),
        "elo_registry_path": str(folder / "checkpoints" / "elo.json"),
        "log_dir": str(folder / "logs"), **overrides})
    env_kwargs = {k: v for k, v in env_kwargs_for(config).items()
                  if k in ("map_width", "map_height", "max_steps", "randomize_terrain",
                           "hill_speed_factor")}
    first_seed = SPLIT_SEEDS[split]
    result = RunResult(seed, 0, 0.0)
    marks = [round(total_timesteps * k / CURVE_POINTS) for k in range(1, CURVE_POINTS + 1)]

    def point(model, kind: str) -> None:
        fought = _fight(model, CURVE_OPPONENTS, curve_episodes, first_seed, env_kwargs)
        result.curve.append({"env_steps": int(model.num_timesteps), "kind": kind,
                             **{name: wdl[0] / curve_episodes for name, wdl in fought.items()}})

    class Curve(BaseCallback):
        """Evaluate after the warm start and at every tenth of the budget."""

        def _on_training_start(self) -> None:
            # The first mark evaluated is at least one rollout after this evaluation.
            rollout = self.model.n_steps * self.model.n_envs
            self._next = 0
            while self._next < len(marks) and \
                    marks[self._next] < self.model.num_timesteps + rollout:
                self._next += 1
            point(self.model, "warm start" if self.model.num_timesteps else "start")

        def _on_step(self) -> bool:
            if self._next < len(marks) and self.model.num_timesteps >= marks[self._next]:
                while self._next < len(marks) and marks[self._next] <= self.model.num_timesteps:
                    self._next += 1
                point(self.model, "curve")
            return True

    start = time.perf_counter()
    model = train(config, extra_callbacks=[Curve()])
    result.minutes = (time.perf_counter() - start) / 60
    result.env_steps = int(model.num_timesteps)
    if not result.curve or result.curve[-1]["env_steps"] != model.num_timesteps:
        point(model, "end")
    result.final = _fight(model, FINAL_OPPONENTS, episodes, first_seed + 500, env_kwargs)
    return result


def _run_star(args: tuple) -> RunResult:
    return run_one(*args)


def summarize(stack: str, results: list[RunResult], episodes: int) -> str:
    """The benchmark's tables (markdown) for one stack's runs."""
    lines = [f"# {stack}: {len(results)} seeds, {results[0].env_steps:,} env-steps each", ""]
    header = "| seed | " + " | ".join(FINAL_OPPONENTS) + " | minutes |"
    lines += [header, "|---" * (len(FINAL_OPPONENTS) + 2) + "|"]
    for r in results:
        cells = ["/".join(map(str, r.final[name])) for name in FINAL_OPPONENTS]
        lines.append(f"| {r.seed} | " + " | ".join(cells) + f" | {r.minutes:.1f} |")
    for label, reduce in (("mean won", np.mean), ("min won", np.min)):
        cells = [f"{reduce([r.final[name][0] for r in results]) / episodes:.0%}"
                 for name in FINAL_OPPONENTS]
        lines.append(f"| {label} | " + " | ".join(cells) + " | |")
    lines += ["", f"won/drawn/lost of {episodes} deterministic battles per opponent", ""]
    lines += ["learning curve: won (mean / min over seeds)", "",
              "| env-steps (mean) | point | " + " | ".join(CURVE_OPPONENTS) + " |",
              "|---:|---|" + "---:|" * len(CURVE_OPPONENTS)]
    for i in range(min(len(r.curve) for r in results)):
        rows = [r.curve[i] for r in results]
        cells = [f"{np.mean([x[n] for x in rows]):.0%} / {np.min([x[n] for x in rows]):.0%}"
                 for n in CURVE_OPPONENTS]
        lines.append(f"| {np.mean([x['env_steps'] for x in rows]):,.0f} | {rows[0]['kind']} | "
                     + " | ".join(cells) + " |")
    drops = [_worst_drop(r) for r in results]
    lines += ["", "largest fall below the warm start's evaluation after the first tenth "
              "(points, scripted_l5): " + ", ".join(f"{d:+.0f}" for d in drops),
              f"wall time: {sum(r.minutes for r in results):.1f} training-minutes in all"]
    return "\n".join(lines)


def _worst_drop(result: RunResult) -> float:
    """How far (in points) L5's win rate falls below the first evaluation, counting only
    evaluations after the first tenth of the budget (0 if it never falls)."""
    if not result.curve:
        return 0.0
    first = result.curve[0]["scripted_l5"]
    later = [p["scripted_l5"] for p in result.curve[2:]]
    return min([0.0] + [100 * (x - first) for x in later])


def _overrides(pairs: list[str]) -> dict[str, Any]:
    from training.ppo.config import check_field_names

    values = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set {pair!r} is invalid: expected key=value")
        values[key] = yaml.safe_load(text)
    try:
        check_field_names(values)
    except ValueError as error:
        raise SystemExit(f"--set: {error}") from None
    return values


def main(argv: list[str] | None = None) -> list[RunResult]:
    """Run the benchmark (arguments as ``--help`` lists them); returns the runs' results."""
    parser = argument_parser(__doc__, __spec__.name if __spec__ else "benchmarks.learning")
    parser.add_argument("--stack", choices=sorted(STACKS), default="train")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--total-timesteps", type=int, default=None,
                        help="the budget (default: the stack's own)")
    parser.add_argument("--episodes", type=int, default=200,
                        help="final battles per opponent")
    parser.add_argument("--curve-episodes", type=int, default=100,
                        help="battles per opponent at each point of the curve")
    parser.add_argument("--split", choices=sorted(SPLIT_SEEDS), default="test")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2 seeds, 60k env-steps, 20 battles")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs' files here")
    args = parser.parse_args(argv)
    overrides = _overrides(args.set)
    total = args.total_timesteps or STACKS[args.stack].total_timesteps
    seeds, episodes, curve_episodes = args.seeds, args.episodes, args.curve_episodes
    if args.quick:
        total, seeds, episodes, curve_episodes = 60_000, 2, 20, 20
        overrides.setdefault("rollout_steps", 4096)
        overrides.setdefault("eval_freq", 30_000)
    for name, value in (("--seeds", seeds), ("--episodes", episodes),
                        ("--curve-episodes", curve_episodes), ("--jobs", args.jobs),
                        ("--total-timesteps", total)):
        if value < 1:
            raise SystemExit(f"{name}={value} is invalid: expected a positive integer")
    out = (args.out or Path(tempfile.mkdtemp(prefix="learning_"))).resolve()
    tasks = [(args.stack, seed, total, overrides, episodes, curve_episodes, args.split,
              str(out)) for seed in range(args.first_seed, args.first_seed + seeds)]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            results = pool.map(_run_star, tasks, chunksize=1)
    else:
        results = [_run_star(task) for task in tasks]
    print(summarize(args.stack, results, episodes))
    if overrides:
        print(f"settings: {overrides}")
    print(f"battles: the {args.split} split; runs' files: {out}")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "stack": args.stack, "split": args.split, "overrides": overrides,
            "runs": [r.__dict__ for r in results]}, indent=1), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
