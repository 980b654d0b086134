"""Time to competence: how long a default stack trains before its commander first wins.

For each stack and seed, trains two recipes in one run, the shipped defaults
(``defaults``) and the settings they replaced (``previous``, the defaults' fields
set to their former values), and evaluates each commander right after its warm start
and at every twentieth of the budget against its curve opponents (scripted L5 and
the doctrine) on held-out battles. A recipe is competent at the first evaluation
that wins at least ``--target`` of its battles against L5 (the stack's default
target: 90 % for the duel and the 2v2 team; for combined arms, the win rate of the
searched plan it imitates, 54 %). Prints, per recipe, each seed's training time to
competence (wall time, the evaluations' own time left out) and env-steps, the mean,
minimum and maximum over seeds, the ratio of the defaults' mean time to the previous
recipe's, the final won/drawn/lost against every final opponent (``--episodes``
battles, mean and minimum over seeds), the whole run's training time and the curve.
With ``--previous-until-competent`` the previous recipe's runs end at their first
competent evaluation: their time to competence is all they are run for, and they have
no final battles.

The seeds of both recipes run interleaved (``--jobs`` at once), so that the
machine's load weighs on both alike: compare the ratios, not the minutes, across
machines and days. Battles come from ``benchmarks.learning``'s splits (``--split
test`` by default); the stacks and their runners are ``benchmarks.learning``'s.

Usage::

    python -m benchmarks.time_to_competence --stack train --seeds 5 [--jobs 2]
    python -m benchmarks.time_to_competence --stack mappo_2v2 --seeds 5 --recipes defaults
    python -m benchmarks.time_to_competence --quick    # a smoke run: 1 seed, 40k env-steps
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import argument_parser, run_jobs
from benchmarks.learning import (
    STACKS,
    add_run_arguments,
    check_counts,
    set_pairs,
    train_and_fight,
)

MARKS = 20
"""Evaluations over the budget (every 5 %), after the one right after the warm start."""
TARGETS = {"train": 0.90, "mappo_2v2": 0.90, "mappo_arms": 0.54}
"""Share of battles against scripted L5 at which a stack's commander is competent (the
combined-arms stack: its teacher's, the searched plan's, on the test split)."""
PREVIOUS = {
    "train": {"warm_start_epochs": 40},
}
"""The settings each stack's current defaults replaced, at their former values (a stack
whose defaults replaced none has no previous recipe)."""
RECIPES = ("defaults", "previous")


@dataclass
class RecipeRun:
    """One seed of one recipe: its curve (with training seconds), final battles, budget."""

    recipe: str
    seed: int
    env_steps: int = 0
    minutes: float = 0.0
    curve: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, list[int]] = field(default_factory=dict)

    def competence(self, target: float) -> dict[str, Any] | None:
        """The first curve point winning ``target`` against scripted L5, or None."""
        return next((p for p in self.curve if p["scripted_l5"] >= target), None)


def recipe_overrides(stack: str, recipe: str) -> dict[str, Any]:
    """The config fields ``recipe`` sets on ``stack``'s settings (none for the defaults)."""
    return dict(PREVIOUS[stack]) if recipe == "previous" else {}


def run_recipe(stack: str, recipe: str, seed: int, total: int, overrides: dict[str, Any],
               episodes: int, curve_episodes: int, split: str, out: str,
               until: float | None = None) -> RecipeRun:
    """Train ``stack`` under ``recipe`` with ``seed``; evaluate along the way and at the
    end, or, with ``until``, end at the first evaluation winning ``until`` against L5."""
    run = RecipeRun(recipe, seed)
    stop = None if until is None else (lambda point: point["scripted_l5"] >= until)
    train_and_fight(stack, seed, total, {**recipe_overrides(stack, recipe), **overrides},
                    episodes, curve_episodes, split, Path(out) / f"{stack}_{recipe}_seed{seed}",
                    run, marks=MARKS, stop=stop)
    return run


def _run_star(args: tuple) -> RecipeRun:
    return run_recipe(*args)


def summarize(stack: str, runs: list[RecipeRun], target: float, episodes: int) -> str:
    """The benchmark's tables (markdown) for one stack's runs of one or both recipes."""
    runner = STACKS[stack].runner
    recipes = [r for r in RECIPES if any(run.recipe == r for run in runs)]
    by_recipe = {r: [run for run in runs if run.recipe == r] for r in recipes}
    lines = [f"# {stack}: time to {target:.0%} against scripted L5", "",
             "| recipe | seed | minutes to competence | env-steps then | training minutes "
             "| final vs L5 |", "|---|---:|---:|---:|---:|---:|"]
    mean_minutes = {}
    for recipe, group in by_recipe.items():
        reached = []
        for run in group:
            point = run.competence(target)
            cells = (("never", "-") if point is None else
                     (f"{point['seconds'] / 60:.2f}", f"{point['env_steps']:,}"))
            reached.append(None if point is None else point["seconds"] / 60)
            won = (f"{run.final['scripted_l5'][0] / episodes:.1%}" if run.final else
                   "ended when competent")
            lines.append(f"| {recipe} | {run.seed} | {cells[0]} | {cells[1]} | "
                         f"{run.minutes:.2f} | {won} |")
        if all(m is not None for m in reached):
            mean_minutes[recipe] = float(np.mean(reached))
            lines.append(f"| {recipe} | mean / min / max | {np.mean(reached):.2f} / "
                         f"{np.min(reached):.2f} / {np.max(reached):.2f} | | | |")
        else:
            lines.append(f"| {recipe} | {sum(m is None for m in reached)} of {len(group)} "
                         "seeds never competent | | | | |")
    if len(mean_minutes) == 2:
        ratio = mean_minutes["defaults"] / mean_minutes["previous"]
        lines += ["", f"defaults / previous, mean minutes to competence: {ratio:.2f}"]
    final = runner.final_opponents
    lines += ["", f"final battles, won/drawn/lost of {episodes} per opponent "
              "(mean and min won over seeds)", "",
              "| recipe | " + " | ".join(final) + " | training minutes (mean) |",
              "|---" * (len(final) + 2) + "|"]
    for recipe, group in by_recipe.items():
        group = [r for r in group if r.final]
        if not group:
            continue
        cells = [f"{np.mean([r.final[n][0] for r in group]) / episodes:.1%} / "
                 f"{np.min([r.final[n][0] for r in group]) / episodes:.1%}" for n in final]
        lines.append(f"| {recipe} | " + " | ".join(cells)
                     + f" | {np.mean([r.minutes for r in group]):.2f} |")
    curve = runner.curve_opponents
    lines += ["", "curve: won (mean / min over seeds) and training minutes (mean)", "",
              "| recipe | env-steps (mean) | minutes | " + " | ".join(curve) + " |",
              "|---|---:|---:|" + "---:|" * len(curve)]
    for recipe, group in by_recipe.items():
        for i in range(min(len(r.curve) for r in group)):
            rows = [r.curve[i] for r in group]
            cells = [f"{np.mean([x[n] for x in rows]):.0%} / {np.min([x[n] for x in rows]):.0%}"
                     for n in curve]
            lines.append(f"| {recipe} | {np.mean([x['env_steps'] for x in rows]):,.0f} | "
                         f"{np.mean([x['seconds'] for x in rows]) / 60:.2f} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[RecipeRun]:
    """Run the benchmark (arguments as ``--help`` lists them); returns the runs."""
    parser = argument_parser(__doc__, __spec__.name if __spec__ else
                             "benchmarks.time_to_competence")
    parser.add_argument("--stack", choices=sorted(TARGETS), default="train")
    parser.add_argument("--recipes", nargs="+", choices=RECIPES, default=list(RECIPES))
    parser.add_argument("--target", type=float, default=None,
                        help="competence: share won against L5 (default: the stack's)")
    parser.add_argument("--previous-until-competent", action="store_true",
                        help="end the previous recipe's runs when first competent")
    add_run_arguments(parser, "1 seed, 40k env-steps, 20 battles")
    args = parser.parse_args(argv)
    overrides = set_pairs(args.set, STACKS[args.stack].runner)
    total = args.total_timesteps or STACKS[args.stack].total_timesteps
    target = TARGETS[args.stack] if args.target is None else args.target
    seeds, episodes, curve_episodes = args.seeds, args.episodes, args.curve_episodes
    if args.quick:
        total, seeds, episodes, curve_episodes = 40_000, 1, 20, 20
        overrides = {"rollout_steps": 4096, "warm_start_steps": 8192, **overrides}
    check_counts(seeds=seeds, episodes=episodes, curve_episodes=curve_episodes,
                 jobs=args.jobs, total_timesteps=total)
    if not 0.0 < target <= 1.0:
        raise SystemExit(f"--target={target} is invalid: expected a share in (0, 1]")
    out = (args.out or Path(tempfile.mkdtemp(prefix="competence_"))).resolve()
    if "previous" in args.recipes and args.stack not in PREVIOUS:
        raise SystemExit(f"--recipes previous is invalid for --stack {args.stack}: its "
                         "defaults replaced no settings; expected --recipes defaults")
    until = {"defaults": None, "previous": target if args.previous_until_competent else None}
    tasks = [(args.stack, recipe, seed, total, overrides, episodes, curve_episodes,
              args.split, str(out), until[recipe])
             for seed in range(args.first_seed, args.first_seed + seeds)
             for recipe in args.recipes]
    runs = run_jobs(_run_star, tasks, args.jobs)
    print(summarize(args.stack, runs, target, episodes))
    if overrides:
        print(f"settings: {overrides}")
    if "previous" in args.recipes:
        print("previous recipe: " + ", ".join(f"{k}={v}"
                                              for k, v in PREVIOUS[args.stack].items()))
    print(f"battles: the {args.split} split; runs' files: {out}")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "stack": args.stack, "split": args.split, "target": target,
            "overrides": overrides, "previous": PREVIOUS.get(args.stack, {}),
            "runs": [r.__dict__ for r in runs]}, indent=1), encoding="utf-8")
    return runs


__all__ = ["MARKS", "PREVIOUS", "TARGETS", "RecipeRun", "main", "run_recipe", "summarize"]

if __name__ == "__main__":
    main()
