"""Does a commander trained on procedural ground fight as well on real ground?

:class:`TransferBenchmark` takes a trained 1v1 commander (an SB3 model) and plays it
against scripted Red (level 5 by default) in three conditions, each
``n_eval_episodes`` battles of :class:`~envs.battalion_env.BattalionEnv` on a
``window_m`` square map:

* ``procedural_baseline``: a procedural map (``TerrainMap.generate_random`` of
  ``procedural_seed``, with the config's hills and woods), the kind of ground it
  trained on;
* ``zero_shot_gis``: the heart of the real battlefield
  (:data:`~data.gis.sectors.SITE_WINDOWS`, :func:`~data.gis.sectors.site_terrain`: a
  ``window_m`` sector of the site from ``data/gis/sites``, with its ridges, villages,
  woods, impassable rivers and slow streams), unchanged policy;
* ``finetuned_gis``: the same ground after PPO fine-tuning on it for
  ``finetune_steps`` steps (the steps really used are reported).

The window is the default map's size, so units deploy as in training and meet: no
battle is drawn because the armies never come within range (the reference design's
transfer benchmark put them kilometres apart on a 10 km map, so every episode was a
draw and its criteria passed vacuously).

Criteria (the seed's): zero-shot drop (procedural win rate minus zero-shot win rate)
below 20 points; fine-tuned drop below 5 points with at most 500k fine-tuning steps.
A condition in which most battles are drawn is not decisive and fails both.

Usage (``training.transfer_benchmark``, the path the seeds document, hands this module's names on;
``python -m benchmarks.transfer`` runs the same command line)::

    python -m training.transfer_benchmark --policy model.zip [--site all] [--episodes 50]
        [--finetune-steps 500000]
    python -m training.transfer_benchmark --train-steps 1000000 [--site all]
    python -m training.transfer_benchmark --seeds 5 --seed 0 [--jobs 2]

Without ``--policy`` a commander is first trained with :func:`training.train.train`'s
default configuration for ``--train-steps`` steps; its budget is in the report. Each
site's report ``docs/transfer_benchmark_<site>.md`` gets its picture beside it
(``.png``: won, drawn and lost shares of the three conditions). ``--seeds N`` trains N
commanders (seeds ``--seed`` onwards, ``--jobs`` at a time) and prints one table over
them (:func:`render_seeds_markdown`: each seed's conditions and criteria, per site the
mean and min won and the seeds meeting both criteria) instead of the reports.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import run_jobs
from data.gis.sectors import SITE_WINDOWS, site_terrain
from data.gis.terrain_importer import BATTLE_SITES
from envs.sim.constants import NUM_CURRICULUM_LEVELS
from envs.sim.terrain import TerrainMap
from envs.sim.validation import check_choice, check_int, check_positive
from envs.vec_env import BattalionVecEnv
from storage.files import atomic_write_text
from training.common.play import play
from training.evaluate import DuelSettings
from training.plots import draw_transfer_benchmark, write_png

logger = logging.getLogger(__name__)

_ROOT = Path(__file__).resolve().parent.parent
CONDITIONS = ("procedural_baseline", "zero_shot_gis", "finetuned_gis")
ZERO_SHOT_MAX_DROP = 0.20
FINETUNE_MAX_DROP = 0.05
FINETUNE_MAX_STEPS = 500_000
FINETUNE_N_ENVS = 16
"""Battles fine-tuning collects from at once."""
DECISIVE_SHARE = 0.5
"""A condition whose battles are drawn more often than this is not decisive."""
EVAL_SEED = 42 ^ 0xDEAD
"""Battle ``i`` of every condition is seeded ``EVAL_SEED + i`` (the seed's choice)."""


@dataclass(frozen=True)
class TransferEvalConfig:
    """Settings of one site's transfer benchmark (seed names and defaults, plus the
    window, the opponent and the fine-tuning batch).

    Raises:
        ValueError: naming the field, for an unknown site or a value out of range.
    """

    site: str = "waterloo"
    n_eval_episodes: int = 50
    max_steps_per_episode: int = 500
    finetune_steps: int = 500_000
    rows: int = 40
    cols: int = 40
    procedural_seed: int = 42
    n_procedural_hills: int = 4
    n_procedural_forests: int = 3
    window_m: float = 1000.0
    opponent: str = "scripted_l5"

    def __post_init__(self) -> None:
        check_choice("site", self.site, tuple(BATTLE_SITES))
        check_int("n_eval_episodes", self.n_eval_episodes, minimum=1, maximum=100_000)
        check_int("max_steps_per_episode", self.max_steps_per_episode, minimum=1)
        check_int("finetune_steps", self.finetune_steps, minimum=0)
        check_int("rows", self.rows, minimum=2, maximum=1000)
        check_int("cols", self.cols, minimum=2, maximum=1000)
        check_int("procedural_seed", self.procedural_seed, minimum=0)
        check_int("n_procedural_hills", self.n_procedural_hills, minimum=0)
        check_int("n_procedural_forests", self.n_procedural_forests, minimum=0)
        check_positive("window_m", self.window_m)


@dataclass(frozen=True)
class TransferResult:
    """One condition's battles."""

    condition: str
    win_rate: float
    mean_steps: float
    std_steps: float
    n_episodes: int
    elapsed_seconds: float
    finetune_steps_used: int = 0
    draw_rate: float = 0.0
    loss_rate: float = 0.0

    @property
    def decisive(self) -> bool:
        """At most half the battles were drawn."""
        return self.draw_rate <= DECISIVE_SHARE


@dataclass(frozen=True)
class TransferSummary:
    """The three conditions of one site and the criteria.

    Attributes:
        config: the :class:`TransferEvalConfig` the benchmark ran with.
        procedural: the battles on procedural ground (the training distribution).
        zero_shot: the battles on the site's ground, the policy unchanged.
        finetuned: the battles on the site's ground after fine-tuning on it.
        policy: what commanded Blue (a file, a class name or a description).
        notes: further lines for the report, by heading.
        site: the GIS battle site that was evaluated (the config's, a property).
    """

    config: TransferEvalConfig
    procedural: TransferResult
    zero_shot: TransferResult
    finetuned: TransferResult
    policy: str = ""
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def site(self) -> str:
        """The GIS battle site that was evaluated (a key of
        :data:`~data.gis.terrain_importer.BATTLE_SITES`)."""
        return self.config.site

    @property
    def zero_shot_drop(self) -> float:
        """Win-rate drop from procedural to zero-shot (positive = drop)."""
        return self.procedural.win_rate - self.zero_shot.win_rate

    @property
    def finetuned_drop(self) -> float:
        """Win-rate drop from procedural to fine-tuned (positive = drop)."""
        return self.procedural.win_rate - self.finetuned.win_rate

    @property
    def decisive(self) -> bool:
        return all(r.decisive for r in (self.procedural, self.zero_shot, self.finetuned))

    @property
    def meets_zero_shot_criterion(self) -> bool:
        """Zero-shot drop < 20 points, in decisive battles."""
        return self.decisive and self.zero_shot_drop < ZERO_SHOT_MAX_DROP

    @property
    def meets_finetune_criterion(self) -> bool:
        """Fine-tuned drop < 5 points with at most 500k fine-tuning steps, in decisive
        battles."""
        return (self.decisive and self.finetuned_drop < FINETUNE_MAX_DROP
                and 0 < self.finetuned.finetune_steps_used <= FINETUNE_MAX_STEPS)

    @property
    def all_criteria_met(self) -> bool:
        return self.meets_zero_shot_criterion and self.meets_finetune_criterion


def procedural_terrain(config: TransferEvalConfig) -> TerrainMap:
    """The baseline's procedural map."""
    return TerrainMap.generate_random(config.procedural_seed, config.window_m,
                                      config.window_m, config.rows, config.cols,
                                      config.n_procedural_hills, config.n_procedural_forests)


class TransferBenchmark:
    """Evaluate a trained commander on procedural ground and on a real site, before and
    after fine-tuning on it (module docstring).

    Args:
        config: the site and the settings.
    """

    def __init__(self, config: TransferEvalConfig) -> None:
        self.config = config
        if not isinstance(self.config, TransferEvalConfig):
            raise TypeError(f"config={config!r} is invalid: expected a TransferEvalConfig")

    def _env_kwargs(self, terrain: TerrainMap) -> dict[str, Any]:
        c = self.config
        return {"map_width": c.window_m, "map_height": c.window_m,
                "max_steps": c.max_steps_per_episode, "terrain": terrain,
                "randomize_terrain": False}

    def evaluate(self, model: Any, terrain: TerrainMap, condition: str,
                 finetune_steps_used: int = 0) -> TransferResult:
        """``n_eval_episodes`` deterministic battles of ``model`` on ``terrain``."""
        c = self.config
        start = time.perf_counter()
        lengths = np.zeros(c.n_eval_episodes, np.int64)
        outcomes = play(model, c.opponent, c.n_eval_episodes, EVAL_SEED,
                        DuelSettings(self._env_kwargs(terrain), True), lengths)
        return TransferResult(
            condition=condition, win_rate=float(np.mean(outcomes > 0)),
            mean_steps=float(lengths.mean()), std_steps=float(lengths.std()),
            n_episodes=c.n_eval_episodes, elapsed_seconds=time.perf_counter() - start,
            finetune_steps_used=finetune_steps_used, draw_rate=float(np.mean(outcomes == 0)),
            loss_rate=float(np.mean(outcomes < 0)))

    def finetune(self, model: Any, terrain: TerrainMap) -> tuple[Any, int]:
        """A copy of ``model`` trained ``finetune_steps`` more steps with PPO on
        ``terrain`` against the opponent; returns it and the steps it really took."""
        c = self.config
        if c.finetune_steps == 0:
            return model, 0
        level = int(c.opponent.rsplit("_l", 1)[1]) if c.opponent.startswith("scripted_l") \
            else NUM_CURRICULUM_LEVELS
        env = BattalionVecEnv(FINETUNE_N_ENVS, curriculum_level=level,
                              **self._env_kwargs(terrain))
        env.seed(c.procedural_seed)
        from training.ppo.checkpoints import copy_model

        tuned = copy_model(model, env=env, device="cpu")  # a copy: the model is not changed
        # PPO learns in whole rollouts: as many as fit in the budget (at least one), so
        # that the steps used never exceed it.
        rollout = tuned.n_steps * tuned.n_envs
        before = tuned.num_timesteps
        tuned.learn(max(rollout, c.finetune_steps // rollout * rollout),
                    reset_num_timesteps=False)
        return tuned, int(tuned.num_timesteps - before)

    def run(self, policy: Any = None, gis_data_dir: str | Path | None = None) -> TransferSummary:
        """Run the three conditions.

        Args:
            policy: an SB3 model, or the path of one saved with ``save`` (a ``.zip``);
                None plays the disciplined doctrine
                (:class:`envs.commanders.doctrine.DisciplinedCommander`),
                which cannot be fine-tuned (its fine-tuned condition is its zero-shot one,
                with no steps used, so the fine-tuning criterion fails).
            gis_data_dir: where ``<site>.tif`` and ``<site>.osm`` are (default
                ``data/gis/sites``).

        Raises:
            FileNotFoundError: for a missing policy or site file.
        """
        name, model = _load_policy(policy)
        procedural = self.evaluate(model, procedural_terrain(self.config),
                                   "procedural_baseline")
        c = self.config
        site = site_terrain(c.site, rows=c.rows, cols=c.cols, window_m=c.window_m,
                            gis_data_dir=gis_data_dir)
        zero_shot = self.evaluate(model, site, "zero_shot_gis")
        if hasattr(model, "learn"):
            start = time.perf_counter()
            tuned, used = self.finetune(model, site)
            finetuned = dataclasses.replace(  # its time includes the fine-tuning
                self.evaluate(tuned, site, "finetuned_gis", used),
                elapsed_seconds=time.perf_counter() - start)
            notes = {}
        else:
            finetuned = TransferResult("finetuned_gis", zero_shot.win_rate, zero_shot.mean_steps,
                                       zero_shot.std_steps, zero_shot.n_episodes, 0.0, 0,
                                       zero_shot.draw_rate, zero_shot.loss_rate)
            notes = {}
        return TransferSummary(self.config, procedural, zero_shot, finetuned, name, notes)

    def write_markdown(self, summary: TransferSummary, path: str | Path | None = None) -> Path:
        """Write ``summary`` to ``path`` (default ``docs/transfer_benchmark_<site>.md``)."""
        target = Path(path) if path is not None else \
            _ROOT / "docs" / f"transfer_benchmark_{summary.site}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, render_markdown(summary))
        return target

    def write_plot(self, summary: TransferSummary, path: str | Path | None = None) -> Path:
        """Draw ``summary``'s won, drawn and lost shares per condition to a PNG, atomically
        (default ``docs/transfer_benchmark_<site>.png``, beside the report)."""
        target = Path(path) if path is not None else \
            _ROOT / "docs" / f"transfer_benchmark_{summary.site}.png"
        results = (summary.procedural, summary.zero_shot, summary.finetuned)
        return write_png(target, draw_transfer_benchmark(
            summary.site, [r.condition for r in results], [r.win_rate for r in results],
            [r.draw_rate for r in results], [r.loss_rate for r in results],
            summary.finetuned.finetune_steps_used))


def _load_policy(policy: Any) -> tuple[str, Any]:
    if policy is None:
        from envs.commanders.doctrine import DisciplinedCommander

        return "DisciplinedCommander (scripted)", DisciplinedCommander()
    if isinstance(policy, (str, Path)):
        path = Path(policy)
        if not path.exists():
            raise FileNotFoundError(f"policy file {path} does not exist")
        # Through the safe loader: a shared archive's pickles are never unpickled.
        from training.ppo.checkpoints import load_ppo

        return str(path), load_ppo(path, device="cpu")
    if not callable(getattr(policy, "predict", None)):
        raise TypeError(f"policy={policy!r} is invalid: expected None, a path or a model with "
                        "predict")
    return type(policy).__name__, policy


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def render_markdown(summary: TransferSummary) -> str:
    c = summary.config
    x, y = SITE_WINDOWS[c.site]
    lines = [
        f"# Transfer benchmark: {c.site}",
        "",
        f"Policy: `{summary.policy}`, against `{c.opponent}`, {c.n_eval_episodes} "
        f"deterministic battles per condition (seeds {EVAL_SEED} onwards), "
        f"{c.window_m:.0f} m square maps of {c.rows} x {c.cols} cells, at most "
        f"{c.max_steps_per_episode} steps. The site's sector starts {x:.0f} m east and "
        f"{y:.0f} m north of its south-west corner (`data/gis/sites/{c.site}.*`); the "
        f"procedural baseline is `TerrainMap.generate_random({c.procedural_seed})` with "
        f"{c.n_procedural_hills} hills and {c.n_procedural_forests} woods. Written by "
        "`python -m training.transfer_benchmark`.",
        "",
        "| condition | won | drawn | lost | mean steps (std) | fine-tuning steps | seconds "
        "(fine-tuning included) |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for r in (summary.procedural, summary.zero_shot, summary.finetuned):
        lines.append(f"| {r.condition} | {r.win_rate:.0%} | {r.draw_rate:.0%} | "
                     f"{r.loss_rate:.0%} | {r.mean_steps:.0f} ({r.std_steps:.0f}) | "
                     f"{r.finetune_steps_used:,} | {r.elapsed_seconds:.0f} |")
    lines += [
        "",
        "| criterion | value | verdict |",
        "|---|---:|---|",
        f"| zero-shot drop < {ZERO_SHOT_MAX_DROP:.0%} | {summary.zero_shot_drop:+.0%} | "
        f"{_verdict(summary.meets_zero_shot_criterion)} |",
        f"| fine-tuned drop < {FINETUNE_MAX_DROP:.0%} within {FINETUNE_MAX_STEPS:,} steps | "
        f"{summary.finetuned_drop:+.0%} after {summary.finetuned.finetune_steps_used:,} | "
        f"{_verdict(summary.meets_finetune_criterion)} |",
        f"| every condition decisive (draws <= {DECISIVE_SHARE:.0%}) | "
        f"{'yes' if summary.decisive else 'no'} | {_verdict(summary.decisive)} |",
    ]
    for key, value in summary.notes.items():
        lines += ["", f"{key}: {value}"]
    lines.append("")
    return "\n".join(lines)


def train_commander(steps: int, seed: int, folder: Path) -> tuple[Any, str]:
    """A commander trained by :func:`training.train.train`'s default configuration for
    ``steps`` steps with ``seed``, its files in ``folder``; the model and a line saying
    how it was trained."""
    from training.ppo.config import TrainingConfig
    from training.train import train

    start = time.perf_counter()
    model = train(TrainingConfig(
        total_timesteps=steps, seed=seed, enable_wandb=False, progress_bar=False, verbose=0,
        checkpoint_dir=str(folder / "checkpoints"), log_dir=str(folder / "logs"),
        manifest_path=str(folder / "manifest.jsonl"), self_play_pool_dir=str(folder / "pool"),
        elo_registry_path=str(folder / "elo.json")))
    return model, (f"trained for this report: `train(TrainingConfig(total_timesteps="
                   f"{steps:,}, seed={seed}))`, {model.num_timesteps:,} steps in "
                   f"{(time.perf_counter() - start) / 60:.1f} min")


def run_seed(seed: int, steps: int, sites: list[str], episodes: int,
             finetune_steps: int) -> list[TransferSummary]:
    """Train one commander with ``seed`` and run every site's benchmark on it (one process
    of ``--seeds``: one torch thread, its files in a scratch folder that is removed)."""
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as scratch:
        model, trained = train_commander(steps, seed, Path(scratch))
        return [dataclasses.replace(
            summary, policy="PPO (default TrainingConfig)",
            notes={**summary.notes, "Policy": trained})
            for summary in (TransferBenchmark(TransferEvalConfig(
                site=site, n_eval_episodes=episodes, finetune_steps=finetune_steps)).run(model)
                for site in sites)]


def _run_seed_star(args: tuple) -> list[TransferSummary]:
    return run_seed(*args)


def render_seeds_markdown(runs: dict[int, list[TransferSummary]]) -> str:
    """Every site's three conditions for each seed's commander (won / drawn / lost, %),
    the criteria each met, and per site the mean and min won over the seeds and the seeds
    meeting both criteria."""
    seeds = sorted(runs)
    first = runs[seeds[0]][0]
    lines = [f"Transfer: {len(seeds)} commanders (`train()`'s default, seeds "
             f"{seeds[0]}-{seeds[-1]}), against `{first.config.opponent}`, "
             f"{first.config.n_eval_episodes} battles per condition; won / drawn / lost (%); "
             "criteria: zero-shot, fine-tuned.", "",
             "| site | seed | procedural | zero-shot | fine-tuned | criteria |",
             "|---|---:|---|---|---|---|"]

    def wdl(result: TransferResult) -> str:
        return (f"{100 * result.win_rate:.0f} / {100 * result.draw_rate:.0f} / "
                f"{100 * result.loss_rate:.0f}")

    for k, site in enumerate(s.site for s in runs[seeds[0]]):
        summaries = [runs[seed][k] for seed in seeds]
        for seed, summary in zip(seeds, summaries, strict=True):
            lines.append(
                f"| {site} | {seed} | {wdl(summary.procedural)} | {wdl(summary.zero_shot)} | "
                f"{wdl(summary.finetuned)} | {_verdict(summary.meets_zero_shot_criterion)}, "
                f"{_verdict(summary.meets_finetune_criterion)} |")
        won = np.array([[s.procedural.win_rate, s.zero_shot.win_rate, s.finetuned.win_rate]
                        for s in summaries])
        met = sum(s.all_criteria_met for s in summaries)
        lines.append(f"| {site} | mean / min won | "
                     + " | ".join(f"{100 * won[:, j].mean():.0f} / {100 * won[:, j].min():.0f}"
                                  for j in range(3))
                     + f" | both met on {met} of {len(seeds)} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.transfer_benchmark",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", help="a trained SB3 model (.zip); else one is trained")
    parser.add_argument("--train-steps", type=int, default=1_000_000,
                        help="steps of the commander trained when --policy is not given")
    parser.add_argument("--site", default="all", help="a site of BATTLE_SITES, or all")
    parser.add_argument("--episodes", type=int, default=50, help="battles per condition")
    parser.add_argument("--finetune-steps", type=int, default=FINETUNE_MAX_STEPS)
    parser.add_argument("--seed", type=int, default=42,
                        help="training seed (no --policy); the first of --seeds")
    parser.add_argument("--seeds", type=int, default=1,
                        help="commanders trained, seeds --seed onwards: more than one prints "
                        "a table over them instead of writing each site's report")
    parser.add_argument("--jobs", type=int, default=1, help="commanders trained at once")
    args = parser.parse_args(argv)
    if args.site != "all":
        check_choice("--site", args.site, tuple(BATTLE_SITES))
    for name, value in (("--seeds", args.seeds), ("--jobs", args.jobs),
                        ("--episodes", args.episodes), ("--train-steps", args.train_steps)):
        if value < 1:
            raise SystemExit(f"{name}={value} is invalid: expected a positive integer")
    if args.seeds > 1 and args.policy is not None:
        raise SystemExit("--seeds trains its commanders: it cannot be given with --policy")
    sites = list(BATTLE_SITES) if args.site == "all" else [args.site]
    if args.seeds > 1:
        tasks = [(seed, args.train_steps, sites, args.episodes, args.finetune_steps)
                 for seed in range(args.seed, args.seed + args.seeds)]
        results = run_jobs(_run_seed_star, tasks, args.jobs)
        print(render_seeds_markdown({task[0]: result
                                     for task, result in zip(tasks, results, strict=True)}))
        return
    policy, trained = args.policy, ""
    with tempfile.TemporaryDirectory() as scratch:
        if policy is None:
            policy, trained = train_commander(args.train_steps, args.seed, Path(scratch))
            print(trained)
        for site in sites:
            benchmark = TransferBenchmark(TransferEvalConfig(
                site=site, n_eval_episodes=args.episodes, finetune_steps=args.finetune_steps))
            summary = benchmark.run(policy)
            if trained:
                summary = dataclasses.replace(summary, policy="PPO (default TrainingConfig)",
                                              notes={**summary.notes, "Policy": trained})
            path = benchmark.write_markdown(summary)
            picture = benchmark.write_plot(summary, path.with_suffix(".png"))
            print(f"{site}: procedural {summary.procedural.win_rate:.0%}, zero-shot "
                  f"{summary.zero_shot.win_rate:.0%}, fine-tuned "
                  f"{summary.finetuned.win_rate:.0%} after "
                  f"{summary.finetuned.finetune_steps_used:,} steps; {path}, {picture}")


if __name__ == "__main__":
    main()
