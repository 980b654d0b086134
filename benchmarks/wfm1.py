"""WFM-1's benchmark: the generalist on the seed's 20 held-out scenarios, zero-shot, after
adapter fine-tuning, and beside specialists.

:class:`WFM1Benchmark` plays a trained WFM-1 (a :class:`~models.wfm1.WFM1Policy`
checkpoint) against the combined-arms doctrine on each held-out scenario
(:data:`training.wfm1.scenarios.HELD_OUT_SCENARIOS`, never drawn in training) in three
conditions, ``n_eval_episodes`` battles each (battle ``i`` seeded ``9000 + i``, the
seed's), every unit on its policy's mean (a policy with a formation head orders its
units' formations too, its likeliest choice; otherwise they follow the combined-arms
drill, as in training; a policy with ``echelon_tokens`` reads Blue's brigade and division
tokens too, and its fine-tuning and specialists are trained with them):

- ``zero_shot``: the generalist as it is, told the scenario by its card;
- ``finetuned``: after PPO on the scenario for ``finetune_steps`` battle steps training
  the card adapter only, the base frozen (the seed's fine-tuning, with a real
  objective: the reference's cloned its own outputs, a zero loss);
- ``specialist``: a commander of the same architecture trained from scratch on that
  scenario alone for ``specialist_train_steps`` battle steps with the generalist's
  recipe (its first half imitating the doctrine, the rest PPO: multi-agent PPO with
  one shared actor for every unit and a critic over the whole battle, as MAPPO), or one
  given to :meth:`WFM1Benchmark.run`; with neither (the seed's default, 0 steps), the
  scripted baseline: the combined-arms doctrine commanding Blue (the reference's
  stand-in advanced and never fired). Trained specialists are kept in
  ``specialist_dir`` when it is set and taken from there by later runs;
- ``doctrine``: beside trained or given specialists, the combined-arms doctrine
  commanding Blue as a reference (it is the specialist otherwise).

Outcomes are won, drawn or lost; **a win rate counts draws in its denominator** (the
reference dropped them, so a commander that drew every battle but one scored 100 %).
Criteria (the seed's): mean zero-shot win rate >= 0.55; fine-tune recovery, the mean
fine-tuned win rate over the mean specialist win rate, >= 0.80.

Usage (``training.wfm1_benchmark``, the path the seeds document, hands this module's names on;
``python -m benchmarks.wfm1`` runs the same command line)::

    python -m training.wfm1_benchmark --policy checkpoints/wfm1/wfm1_best.pt
        [--episodes 50] [--finetune-steps 10000] [--specialist-steps 0]
        [--specialist-dir DIR] [--train-config RUN/.hydra/config.yaml]
        [--scenarios 20] [--report docs/wfm1_benchmark.md]

``--train-config`` gives the fine-tuning and the specialists the generalist's training
settings (a file laid out as ``configs/wfm1_train.yaml``, e.g. the one Hydra keeps
in the training run's folder); without it they take the defaults.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from envs.sim.validation import check_in_range, check_int
from models.wfm1 import WFM1Policy
from storage.files import MAX_JSON_BYTES, atomic_write_text, loads_yaml, read_regular_file
from training.plots import draw_wfm1_benchmark, write_png
from training.wfm1.battles import ScenarioBattles, play_out
from training.wfm1.checkpoints import load_checkpoint
from training.wfm1.config import WFM1TrainConfig
from training.wfm1.scenarios import HELD_OUT_SCENARIOS, WFMScenario
from training.wfm1.trainer import WFM1Trainer

logger = logging.getLogger(__name__)

EVAL_SEED = 9000
"""Battle ``i`` of every condition is seeded ``EVAL_SEED + i`` (the seed's choice)."""
CONDITIONS = ("zero_shot", "finetuned", "specialist", "doctrine")
"""The seed's three conditions, and ``doctrine``: the combined-arms doctrine commanding
Blue, a reference measured beside trained or given specialists."""
LABELS = {"zero_shot": "zero-shot", "finetuned": "fine-tuned", "specialist": "specialist",
          "doctrine": "doctrine (reference)"}


@dataclass(frozen=True)
class WFM1BenchmarkConfig:
    """The benchmark's settings (the seed's names and defaults).

    Attributes:
        n_eval_episodes: battles per scenario and condition.
        n_scenarios: held-out scenarios evaluated (the first ones, at most 20).
        finetune_steps: battle steps of adapter-only PPO for ``finetuned`` (0: skipped).
        max_steps_per_episode: steps after which a battle is a draw.
        specialist_train_steps: battle steps each specialist trains on its scenario alone;
            0: the scripted baseline instead, the combined-arms doctrine commanding Blue
            (the reference's stand-in advanced and never fired).
        zero_shot_win_rate_threshold: the zero-shot criterion.
        finetune_recovery_fraction: the fine-tuning criterion.
        finetune_battles: battles a fine-tuning or specialist rollout plays at once.
        seed: seed of the fine-tuning and specialist runs.
        specialist_dir: folder keeping trained specialists as
            ``<scenario>_<specialist_train_steps>_steps.pt``; one found there (of the
            generalist's size) is used instead of training it again. None: not kept.
        report_path: where :meth:`WFM1BenchmarkSummary.write_markdown` writes by default.

    Raises:
        ValueError: naming the field, for a value out of range.
    """

    n_eval_episodes: int = 50
    n_scenarios: int = 20
    finetune_steps: int = 10_000
    max_steps_per_episode: int = 500
    specialist_train_steps: int = 0
    zero_shot_win_rate_threshold: float = 0.55
    finetune_recovery_fraction: float = 0.80
    finetune_battles: int = 16
    seed: int = 0
    specialist_dir: str | None = None
    report_path: str = "docs/wfm1_benchmark.md"

    def __post_init__(self) -> None:
        check_int("n_eval_episodes", self.n_eval_episodes, minimum=1)
        check_int("n_scenarios", self.n_scenarios, minimum=1, maximum=len(HELD_OUT_SCENARIOS))
        check_int("finetune_steps", self.finetune_steps, minimum=0)
        check_int("max_steps_per_episode", self.max_steps_per_episode, minimum=1)
        check_int("specialist_train_steps", self.specialist_train_steps, minimum=0)
        check_in_range("zero_shot_win_rate_threshold", self.zero_shot_win_rate_threshold,
                       0.0, 1.0)
        check_in_range("finetune_recovery_fraction", self.finetune_recovery_fraction, 0.0, 1.0)
        check_int("finetune_battles", self.finetune_battles, minimum=1)
        check_int("seed", self.seed, minimum=0)
        if self.specialist_dir is not None and not isinstance(self.specialist_dir, str):
            raise ValueError(f"specialist_dir={self.specialist_dir!r} is invalid: expected a "
                             "folder path (str) or None")


@dataclass(frozen=True)
class WFM1BenchmarkResult:
    """One condition on one scenario."""

    scenario: str
    condition: str
    wins: int
    draws: int
    losses: int
    train_steps: int = 0

    @classmethod
    def of(cls, scenario: str, condition: str, outcomes: np.ndarray,
           train_steps: int = 0) -> WFM1BenchmarkResult:
        return cls(scenario, condition, int(np.sum(outcomes == 1)), int(np.sum(outcomes == 0)),
                   int(np.sum(outcomes == -1)), train_steps)

    @property
    def n_episodes(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def win_rate(self) -> float:
        """Wins over all battles, draws included."""
        return self.wins / self.n_episodes if self.n_episodes else 0.0

    @property
    def draw_rate(self) -> float:
        return self.draws / self.n_episodes if self.n_episodes else 0.0

    @property
    def loss_rate(self) -> float:
        return self.losses / self.n_episodes if self.n_episodes else 0.0


@dataclass
class WFM1BenchmarkSummary:
    """Every (scenario, condition) result, their means and the criteria.

    Attributes:
        results: all individual results.
        config: the benchmark's settings.
        wall_clock_s: how long the run took.
        training: how the evaluated policy was trained (for the report).
        specialist: what the specialists were.
    """

    results: list[WFM1BenchmarkResult] = field(default_factory=list)
    config: WFM1BenchmarkConfig = field(default_factory=WFM1BenchmarkConfig)
    wall_clock_s: float = 0.0
    training: str = ""
    specialist: str = ""

    def _mean(self, condition: str) -> float:
        rates = [r.win_rate for r in self.results if r.condition == condition]
        return float(np.mean(rates)) if rates else 0.0

    @property
    def mean_zero_shot_win_rate(self) -> float:
        return self._mean("zero_shot")

    @property
    def mean_finetuned_win_rate(self) -> float:
        return self._mean("finetuned")

    @property
    def mean_specialist_win_rate(self) -> float:
        return self._mean("specialist")

    @property
    def mean_doctrine_win_rate(self) -> float:
        """The doctrine commanding Blue (the specialist's row when no specialist was
        trained or given)."""
        doctrine = [r for r in self.results if r.condition == "doctrine"]
        return self._mean("doctrine" if doctrine else "specialist")

    @property
    def finetune_recovery(self) -> float:
        """The mean fine-tuned win rate over the mean specialist's; 0 without specialists."""
        specialist = self.mean_specialist_win_rate
        return self.mean_finetuned_win_rate / specialist if specialist >= 1e-6 else 0.0

    @property
    def meets_zero_shot_criterion(self) -> bool:
        return self.mean_zero_shot_win_rate >= self.config.zero_shot_win_rate_threshold

    @property
    def meets_finetune_criterion(self) -> bool:
        return self.finetune_recovery >= self.config.finetune_recovery_fraction

    def to_markdown(self) -> str:
        """The report: every scenario and condition, the means, the criteria."""
        c = self.config
        lines = ["# WFM-1 benchmark", "",
                 f"{c.n_eval_episodes} battles per scenario and condition against the "
                 f"combined-arms doctrine (battle i seeded {EVAL_SEED} + i), every unit on its "
                 "policy's mean; the held-out scenarios are never drawn in training. Cells: "
                 "won / drawn / lost; a win rate counts draws in its denominator.", ""]
        if self.training:
            lines += [f"Generalist: {self.training}", ""]
        lines += [f"Fine-tuned: {c.finetune_steps:,} battle steps of PPO on the card adapter "
                  "only, the base frozen.", f"Specialists: {self.specialist}", ""]
        measured = {k: any(r.condition == k for r in self.results) for k in CONDITIONS}
        columns = [k for k in CONDITIONS if k != "doctrine" or measured[k]]
        lines += ["| scenario | " + " | ".join(LABELS[k] for k in columns) + " |",
                  "|---" * (len(columns) + 1) + "|"]
        table: dict[str, dict[str, WFM1BenchmarkResult]] = {}
        for r in self.results:
            table.setdefault(r.scenario, {})[r.condition] = r
        for name, row in table.items():
            cells = [f"{r.win_rate:.0%} / {r.draw_rate:.0%} / {r.loss_rate:.0%}"
                     if (r := row.get(k)) else "-" for k in columns]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        means = [f"**{self._mean(k):.1%}**" if measured[k] else "-" for k in columns]
        lines += ["| **mean win rate** | " + " | ".join(means) + " |", "",
                  f"- Zero-shot: {self.mean_zero_shot_win_rate:.1%} (target >= "
                  f"{c.zero_shot_win_rate_threshold:.0%}): "
                  f"{'met' if self.meets_zero_shot_criterion else 'not met'}.",
                  f"- Fine-tune recovery: {self.finetune_recovery:.1%} of the specialists' "
                  f"(target >= {c.finetune_recovery_fraction:.0%}): "
                  f"{'met' if self.meets_finetune_criterion else 'not met'}."
                  if measured["finetuned"] and measured["specialist"] else
                  "- Fine-tune recovery: not measured (no fine-tuned results).",
                  *([f"- The specialists won less than the doctrine commanding Blue "
                     f"({self.mean_specialist_win_rate:.1%} < "
                     f"{self.mean_doctrine_win_rate:.1%}): a recovery against them says "
                     "little."]
                    if measured["doctrine"] and measured["specialist"]
                    and self.mean_specialist_win_rate < self.mean_doctrine_win_rate else []),
                  *([f"- Fine-tuned over the doctrine commanding Blue: "
                     f"{self.mean_finetuned_win_rate / self.mean_doctrine_win_rate:.1%}."]
                    if measured["doctrine"] and measured["finetuned"]
                    and self.mean_doctrine_win_rate >= 1e-6 else []),
                  f"- Wall-clock of the benchmark: {self.wall_clock_s / 60:.1f} min."]
        return "\n".join(lines) + "\n"

    def write_plot(self, path: str | Path | None = None) -> Path:
        """Draw every scenario's won, drawn and lost shares per condition to a PNG,
        atomically (default: beside ``report_path``, ``docs/wfm1_benchmark.png``)."""
        target = Path(path if path is not None
                      else Path(self.config.report_path).with_suffix(".png"))
        names = list(dict.fromkeys(r.scenario for r in self.results))
        measured = [k for k in CONDITIONS if any(r.condition == k for r in self.results)]
        shares = np.full((len(names), len(measured), 3), np.nan)
        for r in self.results:
            if r.condition in measured:
                shares[names.index(r.scenario), measured.index(r.condition)] = (
                    r.win_rate, r.draw_rate, r.loss_rate)
        return write_png(target, draw_wfm1_benchmark(names, measured, shares))

    def write_markdown(self, path: str | Path | None = None) -> Path:
        """Write :meth:`to_markdown` to ``path`` (default: the config's ``report_path``,
        ``docs/wfm1_benchmark.md``), atomically."""
        target = Path(path if path is not None else self.config.report_path)
        atomic_write_text(target, self.to_markdown())
        return target


def play_scenario(policy: WFM1Policy | None, scenario: WFMScenario, n_episodes: int,
                  max_steps: int, seed: int = EVAL_SEED) -> np.ndarray:
    """(n_episodes,) outcomes (1 won, 0 drawn, -1 lost) of one battle each of seeds
    ``seed .. seed + n_episodes - 1``, every Blue unit on ``policy``'s mean (None: Blue
    under the combined-arms doctrine)."""
    return play_out(ScenarioBattles([scenario], n_episodes, max_steps, seed=seed), policy)


class WFM1Benchmark:
    """Zero-shot, fine-tuned, specialist (and doctrine) evaluations of WFM-1 (module
    docstring).

    Args:
        config: the benchmark's settings.
        train_config: PPO's settings for the fine-tuning and the specialists (their
            budgets, battle counts and the policy's size are set from ``config`` and the
            evaluated policy).
    """

    def __init__(self, config: WFM1BenchmarkConfig,
                 train_config: WFM1TrainConfig | None = None) -> None:
        if not isinstance(config, WFM1BenchmarkConfig):
            raise TypeError(f"config={config!r} is invalid: expected a WFM1BenchmarkConfig")
        self.config = config
        self.train_config = train_config or WFM1TrainConfig()

    def run(self, wfm1_policy: Any = None,
            specialist_policies: dict[str, Any] | None = None) -> WFM1BenchmarkSummary:
        """Run every evaluation and return the summary.

        Args:
            wfm1_policy: the trained generalist: a :class:`~models.wfm1.WFM1Policy` or the
                path of its checkpoint; None: a freshly initialised one (a baseline).
            specialist_policies: scenario name -> a pre-trained specialist (a policy or a
                checkpoint path), used instead of training one or the scripted baseline.

        Raises:
            FileNotFoundError, ValueError: for a checkpoint that cannot be read (named).
        """
        c = self.config
        policy = _policy(wfm1_policy) if wfm1_policy is not None else WFM1Policy(
            **self.train_config.model_kwargs())
        specialists = {name: _policy(p) for name, p in (specialist_policies or {}).items()}
        started = time.perf_counter()
        summary = WFM1BenchmarkSummary(config=c, specialist=(
            f"{c.specialist_train_steps:,} battle steps each on its scenario alone, from "
            "scratch with the generalist's architecture and training settings (up to half "
            "imitating the doctrine, the rest multi-agent PPO)"
            if c.specialist_train_steps else
            "the combined-arms doctrine commanding Blue (scripted baseline)") + (
            f"; given for {', '.join(sorted(specialists))}" if specialists else ""))
        for scenario in HELD_OUT_SCENARIOS[:c.n_scenarios]:
            rows = self.evaluate_scenario(policy, scenario, specialists.get(scenario.name))
            summary.results.extend(rows)
            logger.info("%s: %s", scenario.name, ", ".join(
                f"{r.condition} {r.win_rate:.0%}/{r.draw_rate:.0%}/{r.loss_rate:.0%}"
                for r in rows))
        summary.wall_clock_s = time.perf_counter() - started
        return summary

    def evaluate_scenario(self, policy: WFM1Policy, scenario: WFMScenario,
                          specialist: WFM1Policy | None = None) -> list[WFM1BenchmarkResult]:
        """The conditions on one scenario (the doctrine's reference beside a trained or
        given specialist)."""
        c = self.config

        def result(condition: str, commander: WFM1Policy | None,
                   steps: int = 0) -> WFM1BenchmarkResult:
            outcomes = play_scenario(commander, scenario, c.n_eval_episodes,
                                     c.max_steps_per_episode)
            return WFM1BenchmarkResult.of(scenario.name, condition, outcomes, steps)

        rows = [result("zero_shot", policy)]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            if c.finetune_steps:
                tuner = WFM1Trainer(self._trainer_config(c.finetune_steps, policy, folder / "ft"),
                                    scenarios=[scenario], init_policy=policy,
                                    adapter_only=True).learn()
                rows.append(result("finetuned", tuner.policy, tuner.total_steps))
            if specialist is not None:
                rows.append(result("specialist", specialist))
            elif c.specialist_train_steps:
                rows.append(result("specialist", *self.specialist(scenario, policy, folder)))
        # The doctrine commanding Blue: the specialist when none was trained or given,
        # else a reference beside it.
        scripted = specialist is None and not c.specialist_train_steps
        rows.append(result("specialist" if scripted else "doctrine", None))
        return rows

    def specialist(self, scenario: WFMScenario, like: WFM1Policy,
                   scratch: Path) -> tuple[WFM1Policy, int]:
        """The specialist of ``scenario``: taken from ``specialist_dir`` if it holds one of
        ``like``'s size, else trained (and kept there); returns it and its battle steps."""
        c = self.config
        kept = (Path(c.specialist_dir) / f"{scenario.name}_{c.specialist_train_steps}_steps.pt"
                if c.specialist_dir else None)
        if kept is not None and kept.is_file():
            saved = load_checkpoint(kept)  # the trainer's checkpoint, of any layout
            if saved.kwargs == like.kwargs:
                logger.info("specialist of %s from %s", scenario.name, kept)
                return (WFM1Policy.load_checkpoint(kept),
                        int(saved.counters["total_steps"]))
            logger.warning("%s holds a policy built with %s, not the generalist's %s: "
                           "training the specialist again", kept, saved.kwargs, like.kwargs)
        config = self._trainer_config(c.specialist_train_steps, like, scratch / "sp")
        config = config.replace(warm_start_steps=min(config.warm_start_steps,
                                                     c.specialist_train_steps // 2))
        trainer = WFM1Trainer(config, scenarios=[scenario]).learn()
        if kept is not None:
            trainer.save(kept)
        return trainer.policy, trainer.total_steps

    def _trainer_config(self, steps: int, policy: WFM1Policy, folder: Path) -> WFM1TrainConfig:
        c, kwargs = self.config, policy.kwargs
        n_steps = max(1, min(self.train_config.rollout_n_steps(), steps // c.finetune_battles))
        rollout = n_steps * c.finetune_battles
        return self.train_config.replace(
            total_timesteps=max(steps, rollout), n_envs=c.finetune_battles, n_steps=n_steps,
            batch_size=min(self.train_config.batch_size or rollout, rollout),
            scenarios_per_rollout=1, max_steps=c.max_steps_per_episode,
            checkpoint_dir=str(folder), log_dir=str(folder / "logs"), enable_wandb=False,
            verbose=0, seed=c.seed, validate_every_updates=0,
            enable_self_play=False,  # trained against the doctrine it is measured against
            # A setting left at its default is absent from the policy's kwargs: its own.
            **{k: kwargs[k] if k in kwargs else getattr(policy, k)
               for k in self.train_config.model_kwargs()})


def _policy(value: Any) -> WFM1Policy:
    """A policy, or the one a checkpoint path holds."""
    return value if isinstance(value, WFM1Policy) else WFM1Policy.load_checkpoint(value)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.wfm1_benchmark",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--policy", help="the generalist's checkpoint (default: untrained)")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--finetune-steps", type=int, default=10_000)
    parser.add_argument("--specialist-steps", type=int, default=0,
                        help="0: the combined-arms doctrine as the specialist")
    parser.add_argument("--specialist-dir", help="keep trained specialists here, and reuse them")
    parser.add_argument("--train-config", help="the training settings of the fine-tuning "
                        "and the specialists (YAML laid out as configs/wfm1_train.yaml)")
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--report", help="write the markdown report here")
    parser.add_argument("--training", default="", help="a line on how the policy was trained")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(1)
    config = WFM1BenchmarkConfig(n_eval_episodes=args.episodes,
                                 finetune_steps=args.finetune_steps,
                                 specialist_train_steps=args.specialist_steps,
                                 n_scenarios=args.scenarios,
                                 specialist_dir=args.specialist_dir)
    train_config = None
    if args.train_config:
        source = f"--train-config {args.train_config}"  # bounded, depth-limited, named
        nested = loads_yaml(read_regular_file(Path(args.train_config), MAX_JSON_BYTES, source),
                            source)
        if not isinstance(nested, dict):
            raise ValueError(f"--train-config {args.train_config}: expected a YAML mapping "
                             "laid out as configs/wfm1_train.yaml, got "
                             f"{type(nested).__name__}")
        train_config = WFM1TrainConfig.from_nested(nested)
    summary = WFM1Benchmark(config, train_config).run(args.policy)
    summary.training = args.training or (f"`{args.policy}`" if args.policy else "untrained")
    print(summary.to_markdown())
    if args.report:
        print(f"wrote {summary.write_markdown(args.report)} and "
              f"{summary.write_plot(Path(args.report).with_suffix('.png'))}")


__all__ = ["CONDITIONS", "EVAL_SEED", "WFM1Benchmark", "WFM1BenchmarkConfig",
           "WFM1BenchmarkResult", "WFM1BenchmarkSummary", "main", "play_scenario"]

if __name__ == "__main__":
    main()
