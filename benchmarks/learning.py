"""Do the learners beat their teachers? Train a stack on N seeds, fight unseen battles.

Each run trains one stack (below) with one seed, evaluates the commander right
after its warm start and at every tenth of the budget against its curve opponents
(scripted L5 and the disciplined doctrine, the teacher), and at the end fights
``--episodes`` battles against each of its final opponents. Prints won/drawn/lost
per opponent for each seed, the mean and the minimum over seeds, the learning curve
(mean and minimum win rate at each evaluation) and the training minutes (wall time,
the evaluations' own time left out).

Stacks:

- ``train``: the default ``train()`` (imitation of the doctrine, then PPO; 1M env-steps).
- ``quick_start_minimal``: the seed's first quick-start form,
  ``train(total_timesteps=500_000, n_envs=4)``.
- ``quick_start_config``: the seed's second form, ``TrainingConfig(total_timesteps=1_000_000,
  n_envs=8, curriculum_level=3, enable_self_play=True)``.
- ``scratch``: PPO from scratch, no imitation (``warm_start_doctrine=None``), firing only
  volleys (``policy_orders: volleys``) with scripted fire ramped in over the first 60 % of
  the budget (``scripted_fire_ramp: 0.6``), paying 0.8 for each full volley
  (``reward_fire_cost: 0.8``: a volley pays only within about 90 m), against scripted L5
  twice as often as the doctrine or L1; 5M env-steps. ``--set policy_orders=choices --set
  scripted_fire_ramp=0 --set reward_fire_cost=0 --set 'training_opponents=[scripted_l5,
  doctrine, scripted_l1]'`` gives the default config without imitation.
- ``mappo_2v2``: the default ``train_mappo()`` (imitation of the doctrine by every
  battalion, then MAPPO; 2v2 battles, 2M env-steps).
- ``mappo_arms``: MAPPO on the ``combined_arms`` scenario (two battalions, a cavalry
  regiment and a battery a side, 4v4): the actors see the arms and order formations,
  imitate the combined-arms doctrine playing the plan searched on that field
  (``warm_start_arms_plan: searched``), train with smaller steps (learning rate 1e-4,
  ``target_kl`` 0.02), and fight scripted L1-L5 (which use their arms) and the
  combined-arms doctrine with its own plan (``doctrine_team`` in its tables); 1M
  env-steps (the curves were flat from the imitation on, five seeds each way).

The duel stacks fight duels (:func:`training.ppo.evaluation.play_duels`): every
scripted level, random orders and the doctrine at the end. The team stack fights
2v2 battles as one batch (:func:`training.mappo.battles.play_team_matches`):
scripted L1-L5 and the doctrine commanding each of Red's battalions
(``doctrine_team``) at the end, L5 and ``doctrine_team`` on the curve.

The battles are split by seed: ``--split test`` (the default, what the docs report)
uses seeds 100000 onwards, ``--split validation`` seeds 300000 onwards, for choosing
settings without looking at the test battles; training battles use neither range.
``--set key=value`` overrides a field of the stack's config, a
:class:`~training.ppo.config.TrainingConfig` (duel stacks) or a
:class:`~training.mappo.config.MAPPOConfig` (the team stacks) (repeatable; values are
parsed as YAML), ``--jobs`` trains that many seeds at once (one process each, one
torch thread each).

Usage::

    python -m benchmarks.learning --stack train --seeds 5 [--jobs 2] [--out DIR]
    python -m benchmarks.learning --stack mappo_2v2 --seeds 5 --set n_envs=64
    python -m benchmarks.learning --quick        # a smoke run: 2 seeds, 60k env-steps
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from benchmarks import argument_parser, run_jobs
from training.planners import ARMS_FIELD
from training.ppo.opponents import NAMED_OPPONENTS

SPLIT_SEEDS = {"test": 100_000, "validation": 300_000}
"""First battle seed of each evaluation split (the docs report ``test``)."""
CURVE_OPPONENTS = ("scripted_l5", "doctrine")
"""The duel stacks' curve opponents."""
FINAL_OPPONENTS = NAMED_OPPONENTS
"""The duel stacks' final opponents."""
TEAM_CURVE_OPPONENTS = ("scripted_l5", "doctrine_team")
"""The team stack's curve opponents: scripted L5, the doctrine commanding Red's battalions."""
TEAM_FINAL_OPPONENTS = (*(f"scripted_l{level}" for level in range(1, 6)), "doctrine_team")
"""The team stack's final opponents."""
CURVE_POINTS = 10


@dataclass
class RunResult:
    """One seed's run: its curve, its final battles and its wall time."""

    seed: int
    env_steps: int
    minutes: float
    curve: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, list[int]] = field(default_factory=dict)


class StopTraining(Exception):
    """A curve point that ends its run (:class:`Curve`'s ``stop``), raised through the
    trainer's loop."""


class Curve:
    """A run's learning curve: an evaluation right after the warm start (or at the
    start, without one) and at every ``n``-th of the budget, the first mark evaluated
    at least one rollout after the warm start's evaluation. Each point also holds the
    run's training seconds so far (``seconds``: wall time since :meth:`begin`, the
    evaluations' own time left out).

    Args:
        total_timesteps: the run's budget.
        evaluate: the win rate against each curve opponent of a model.
        points: the list the points are appended to
            (``{"env_steps", "kind", "seconds", <opponent>: win rate}``).
        n: marks over the budget.
        stop: whether a point ends the run (:class:`StopTraining` is raised after it is
            appended); None: none does.
    """

    def __init__(self, total_timesteps: int, evaluate: Callable[[Any], dict[str, float]],
                 points: list[dict[str, Any]], n: int = CURVE_POINTS,
                 stop: Callable[[dict[str, Any]], bool] | None = None) -> None:
        self.marks = [round(total_timesteps * k / n) for k in range(1, n + 1)]
        self.evaluate, self.points, self.stop = evaluate, points, stop
        self.next = 0
        self.begin()

    def begin(self) -> None:
        """Start the training clock (the run's start)."""
        self.started, self.evaluating = time.perf_counter(), 0.0

    def training_seconds(self) -> float:
        """Wall time since :meth:`begin`, the evaluations' time left out."""
        return time.perf_counter() - self.started - self.evaluating

    def start(self, model: Any, steps: int, rollout: int) -> None:
        """Before the first rollout, ``steps`` env-steps in (the warm start's)."""
        while self.next < len(self.marks) and self.marks[self.next] < steps + rollout:
            self.next += 1
        self._point(model, steps, "warm start" if steps else "start")

    def update(self, model: Any, steps: int) -> None:
        """After ``steps`` env-steps: a point if a tenth of the budget was passed."""
        if self.next < len(self.marks) and steps >= self.marks[self.next]:
            while self.next < len(self.marks) and self.marks[self.next] <= steps:
                self.next += 1
            self._point(model, steps, "curve")

    def end(self, model: Any, steps: int) -> None:
        """After training: a last point unless the last one was at ``steps``."""
        if not self.points or self.points[-1]["env_steps"] != steps:
            self._point(model, steps, "end")

    def _point(self, model: Any, steps: int, kind: str) -> None:
        seconds, start = self.training_seconds(), time.perf_counter()
        point = {"env_steps": int(steps), "kind": kind, "seconds": seconds,
                 **self.evaluate(model)}
        self.points.append(point)
        self.evaluating += time.perf_counter() - start
        if self.stop is not None and self.stop(point):
            raise StopTraining(point)


def _run_files(folder: Path) -> dict[str, Any]:
    """The settings that keep a run's files in ``folder`` and its output quiet."""
    return {"enable_wandb": False, "progress_bar": False, "verbose": 0,
            "checkpoint_dir": str(folder / "checkpoints"),
            "self_play_pool_dir": str(folder / "checkpoints" / "pool"),
            "elo_registry_path": str(folder / "checkpoints" / "elo.json"),
            "log_dir": str(folder / "logs")}


class DuelRunner:
    """Duel stacks: :func:`training.train.train` on a
    :class:`~training.ppo.config.TrainingConfig`, battles of
    :func:`training.ppo.evaluation.play_duels`."""

    curve_opponents = CURVE_OPPONENTS
    final_opponents = FINAL_OPPONENTS

    def check_settings(self, values: dict[str, Any]) -> None:
        """Raise ``ValueError`` naming any key that is not a TrainingConfig field."""
        from training.ppo.config import check_field_names

        check_field_names(values)

    def config(self, settings: dict[str, Any], folder: Path,
               overrides: dict[str, Any]) -> Any:
        """The run's TrainingConfig: ``settings``, its files in ``folder``, ``overrides``."""
        from training.ppo.config import TrainingConfig

        return TrainingConfig(**{
            **settings, **_run_files(folder),
            "manifest_path": str(folder / "checkpoints" / "manifest.jsonl"), **overrides})

    def train(self, config: Any, curve: Curve) -> tuple[Any, int]:
        """Train, feeding ``curve``; the model and the env-steps trained."""
        from stable_baselines3.common.callbacks import BaseCallback

        from training.train import train

        class Points(BaseCallback):
            """The curve's points, at the callback's training start and steps."""

            def _on_training_start(self) -> None:
                curve.start(self.model, self.model.num_timesteps,
                            self.model.n_steps * self.model.n_envs)

            def _on_step(self) -> bool:
                curve.update(self.model, self.model.num_timesteps)
                return True

        model = train(config, extra_callbacks=[Points()])
        return model, int(model.num_timesteps)

    def fight(self, config: Any, model: Any, opponents: tuple[str, ...], episodes: int,
              first_seed: int) -> dict[str, list[int]]:
        """Won/drawn/lost of ``model`` against each opponent, deterministic orders, the
        battles of opponent ``k`` seeded from ``first_seed + 1000 * k``."""
        from training.ppo.battles import env_kwargs_for
        from training.ppo.evaluation import play_duels

        env_kwargs = {k: v for k, v in env_kwargs_for(config).items()
                      if k in ("map_width", "map_height", "max_steps", "randomize_terrain",
                               "hill_speed_factor")}
        results = {}
        for k, name in enumerate(opponents):
            outcomes = play_duels(model, name, episodes, True, first_seed + 1000 * k,
                                  env_kwargs=env_kwargs)
            results[name] = _won_drawn_lost(outcomes)
        return results


class TeamRunner:
    """The team stack: :func:`training.train_mappo.train_mappo` on a
    :class:`~training.mappo.config.MAPPOConfig`, the config's team battles (2v2 by
    default) of :func:`training.mappo.battles.play_team_matches`."""

    curve_opponents = TEAM_CURVE_OPPONENTS
    final_opponents = TEAM_FINAL_OPPONENTS

    def check_settings(self, values: dict[str, Any]) -> None:
        """Raise ``ValueError`` naming any key that is not a MAPPOConfig field."""
        from training.mappo.config import check_mappo_field_names

        check_mappo_field_names(values)

    def config(self, settings: dict[str, Any], folder: Path,
               overrides: dict[str, Any]) -> Any:
        """The run's MAPPOConfig: ``settings``, its files in ``folder``, ``overrides``."""
        from training.mappo.config import MAPPOConfig

        return MAPPOConfig(**{**settings, **_run_files(folder), **overrides})

    def train(self, config: Any, curve: Curve) -> tuple[Any, int]:
        """Train, feeding ``curve`` through a MAPPO hook; the policy and the env-steps
        trained (imitation included)."""
        from training.common.on_policy import TrainerHook
        from training.train_mappo import train_mappo

        class Points(TrainerHook):
            """The curve's points: after the warm start, then after each update."""

            def on_training_start(self, trainer: Any, metrics: dict[str, Any]) -> None:
                curve.start(trainer.policy, trainer.total_steps, trainer.rollout_steps)

            def on_update_end(self, trainer: Any, metrics: dict[str, Any]) -> None:
                curve.update(trainer.policy, trainer.total_steps)

        result = train_mappo(config, extra_hooks=[Points()])
        return result.policy, int(result.total_steps)

    def fight(self, config: Any, policy: Any, opponents: tuple[str, ...], episodes: int,
              first_seed: int) -> dict[str, list[int]]:
        """Won/drawn/lost of ``policy`` (Blue, deterministic orders) against each
        opponent, every match in one batch, battle ``i`` of each seeded ``first_seed + i``."""
        from envs.play.commanders import CombinedArmsRed
        from training.mappo.battles import DOCTRINE_TEAM, play_team_matches

        # With an order of battle "the doctrine" is the combined-arms doctrine.
        doctrine = DOCTRINE_TEAM if config.order_of_battle is None else CombinedArmsRed()
        commanders = {**{f"scripted_l{level}": level for level in range(1, 6)},
                      "doctrine_team": doctrine}
        outcomes = play_team_matches(
            policy, {name: commanders[name] for name in opponents}, n_blue=config.n_blue,
            n_red=config.n_red, n_episodes=episodes, deterministic=True, seed=first_seed,
            env_kwargs=config.field_kwargs(), order_of_battle=config.forces())
        return {name: _won_drawn_lost(outcomes[name]) for name in opponents}


def _won_drawn_lost(outcomes: np.ndarray) -> list[int]:
    return [int((outcomes > 0).sum()), int((outcomes == 0).sum()), int((outcomes < 0).sum())]


DUEL = DuelRunner()
TEAM = TeamRunner()


@dataclass(frozen=True)
class Stack:
    """A training call to benchmark: its settings, the budget it asks for, and the
    runner that trains it and chooses whom it fights (duel or team)."""

    settings: dict[str, Any]
    total_timesteps: int
    runner: DuelRunner | TeamRunner = DUEL



STACKS = {
    "train": Stack({}, 1_000_000),
    "quick_start_minimal": Stack({"n_envs": 4}, 500_000),
    "quick_start_config": Stack({"n_envs": 8, "curriculum_level": 3, "enable_self_play": True},
                                1_000_000),
    # PPO from scratch: the settings chosen on the validation battles (docs/training.md,
    # "From scratch: volleys").
    "scratch": Stack({"warm_start_doctrine": None, "policy_orders": "volleys",
                      "scripted_fire_ramp": 0.6, "reward_fire_cost": 0.8,
                      "training_opponents": ["scripted_l5", "scripted_l5", "doctrine",
                                             "scripted_l1"]}, 5_000_000),
    "mappo_2v2": Stack({}, 2_000_000, TEAM),
    # configs/scenarios/combined_arms.yaml: two battalions, a cavalry regiment and a
    # limbered battery a side; the teacher and the step size chosen on the validation
    # battles (docs/performance.md, "MAPPO with arms").
    "mappo_arms": Stack({"order_of_battle": "combined_arms", "n_blue": 4, "n_red": 4,
                         **ARMS_FIELD, "warm_start_arms_plan": "searched",
                         "learning_rate": 1e-4, "target_kl": 0.02}, 1_000_000, TEAM),
}


def train_and_fight(stack: str, seed: int, total_timesteps: int, overrides: dict[str, Any],
                    episodes: int, curve_episodes: int, split: str, folder: Path,
                    result: Any, *, marks: int = CURVE_POINTS,
                    stop: Callable[[dict[str, Any]], bool] | None = None) -> None:
    """Train ``stack`` with ``seed`` (its files in ``folder``), evaluating it at ``marks``
    points of the budget and at the end; fills ``result``'s ``curve``, ``env_steps``,
    ``minutes`` (training minutes) and ``final``. A curve point that ``stop`` accepts ends
    the run there, without final battles."""
    import torch

    torch.set_num_threads(1)
    runner = STACKS[stack].runner
    config = runner.config({**STACKS[stack].settings, "total_timesteps": total_timesteps,
                            "seed": seed}, folder, overrides)
    first_seed = SPLIT_SEEDS[split]

    def evaluate(model: Any) -> dict[str, float]:
        fought = runner.fight(config, model, runner.curve_opponents, curve_episodes, first_seed)
        return {name: wdl[0] / curve_episodes for name, wdl in fought.items()}

    curve = Curve(total_timesteps, evaluate, result.curve, n=marks, stop=stop)
    try:
        model, result.env_steps = runner.train(config, curve)
    except StopTraining:
        result.env_steps = result.curve[-1]["env_steps"]
        result.minutes = result.curve[-1]["seconds"] / 60
        return
    curve.end(model, result.env_steps)
    result.minutes = curve.training_seconds() / 60
    result.final = runner.fight(config, model, runner.final_opponents, episodes,
                                first_seed + 500)


def run_one(stack: str, seed: int, total_timesteps: int, overrides: dict[str, Any],
            episodes: int, curve_episodes: int, split: str, out: str) -> RunResult:
    """Train ``stack`` with ``seed`` and evaluate it along the way and at the end."""
    result = RunResult(seed, 0, 0.0)
    train_and_fight(stack, seed, total_timesteps, overrides, episodes, curve_episodes, split,
                    Path(out) / f"{stack}_seed{seed}", result)
    return result


def _run_star(args: tuple) -> RunResult:
    return run_one(*args)


def summarize(stack: str, results: list[RunResult], episodes: int) -> str:
    """The benchmark's tables (markdown) for one stack's runs, with the columns of the
    stack's final and curve opponents."""
    runner = STACKS[stack].runner
    final, curve = runner.final_opponents, runner.curve_opponents
    lines = [f"# {stack}: {len(results)} seeds, {results[0].env_steps:,} env-steps each", ""]
    header = "| seed | " + " | ".join(final) + " | minutes |"
    lines += [header, "|---" * (len(final) + 2) + "|"]
    for r in results:
        cells = ["/".join(map(str, r.final[name])) for name in final]
        lines.append(f"| {r.seed} | " + " | ".join(cells) + f" | {r.minutes:.1f} |")
    for label, reduce in (("mean won", np.mean), ("min won", np.min)):
        cells = [f"{reduce([r.final[name][0] for r in results]) / episodes:.0%}"
                 for name in final]
        lines.append(f"| {label} | " + " | ".join(cells) + " | |")
    lines += ["", f"won/drawn/lost of {episodes} deterministic battles per opponent", ""]
    lines += ["learning curve: won (mean / min over seeds)", "",
              "| env-steps (mean) | point | " + " | ".join(curve) + " |",
              "|---:|---|" + "---:|" * len(curve)]
    for i in range(min(len(r.curve) for r in results)):
        rows = [r.curve[i] for r in results]
        cells = [f"{np.mean([x[n] for x in rows]):.0%} / {np.min([x[n] for x in rows]):.0%}"
                 for n in curve]
        lines.append(f"| {np.mean([x['env_steps'] for x in rows]):,.0f} | {rows[0]['kind']} | "
                     + " | ".join(cells) + " |")
    drops = [_worst_drop(r, curve[0]) for r in results]
    lines += ["", "largest fall below the warm start's evaluation after the first tenth "
              f"(points, {curve[0]}): " + ", ".join(f"{d:+.0f}" for d in drops),
              f"wall time: {sum(r.minutes for r in results):.1f} training-minutes in all"]
    return "\n".join(lines)


def _worst_drop(result: RunResult, opponent: str) -> float:
    """How far (in points) the win rate against ``opponent`` falls below the first
    evaluation, counting only evaluations after the first tenth of the budget (0 if it
    never falls)."""
    if not result.curve:
        return 0.0
    first = result.curve[0][opponent]
    later = [p[opponent] for p in result.curve[2:]]
    return min([0.0] + [100 * (x - first) for x in later])


def set_pairs(pairs: list[str], runner: DuelRunner | TeamRunner) -> dict[str, Any]:
    """``--set`` pairs as config fields of ``runner``'s stacks (unknown keys named)."""
    values = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set {pair!r} is invalid: expected key=value")
        value = yaml.safe_load(text)
        if isinstance(value, str):  # YAML 1.1 reads 1e-4 as text; Hydra reads a number
            try:
                value = float(value)
            except ValueError:
                pass
        values[key] = value
    try:
        runner.check_settings(values)
    except ValueError as error:
        raise SystemExit(f"--set: {error}") from None
    return values


def add_run_arguments(parser: argparse.ArgumentParser, quick: str) -> None:
    """The arguments of a benchmark that trains a stack on N seeds (``--quick``'s help:
    ``quick``)."""
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--total-timesteps", type=int, default=None,
                        help="the budget (default: the stack's own)")
    parser.add_argument("--episodes", type=int, default=200,
                        help="final battles per opponent")
    parser.add_argument("--curve-episodes", type=int, default=100,
                        help="battles per opponent at each point of the curve")
    parser.add_argument("--split", choices=sorted(SPLIT_SEEDS), default="test")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config field of every run (repeatable)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {quick}")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs' files here")


def check_counts(**counts: int) -> None:
    """Exit naming the first count below 1 (``total_timesteps=0`` reads
    ``--total-timesteps=0``)."""
    for name, value in counts.items():
        if value < 1:
            raise SystemExit(f"--{name.replace('_', '-')}={value} is invalid: expected a "
                             "positive integer")


def main(argv: list[str] | None = None) -> list[RunResult]:
    """Run the benchmark (arguments as ``--help`` lists them); returns the runs' results."""
    parser = argument_parser(__doc__, __spec__.name if __spec__ else "benchmarks.learning")
    parser.add_argument("--stack", choices=sorted(STACKS), default="train")
    add_run_arguments(parser, "2 seeds, 60k env-steps, 20 battles")
    args = parser.parse_args(argv)
    overrides = set_pairs(args.set, STACKS[args.stack].runner)
    total = args.total_timesteps or STACKS[args.stack].total_timesteps
    seeds, episodes, curve_episodes = args.seeds, args.episodes, args.curve_episodes
    if args.quick:
        total, seeds, episodes, curve_episodes = 60_000, 2, 20, 20
        overrides.setdefault("rollout_steps", 4096)
        overrides.setdefault("eval_freq", 30_000)
    check_counts(seeds=seeds, episodes=episodes, curve_episodes=curve_episodes,
                 jobs=args.jobs, total_timesteps=total)
    out = (args.out or Path(tempfile.mkdtemp(prefix="learning_"))).resolve()
    tasks = [(args.stack, seed, total, overrides, episodes, curve_episodes, args.split,
              str(out)) for seed in range(args.first_seed, args.first_seed + seeds)]
    results = run_jobs(_run_star, tasks, args.jobs)
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
