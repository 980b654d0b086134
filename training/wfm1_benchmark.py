"""WFM-1's benchmark: the generalist on the seed's 20 held-out scenarios, zero-shot, after
adapter fine-tuning, and beside specialists.

:class:`WFM1Benchmark` plays a trained WFM-1 (a :class:`~models.wfm1.WFM1Policy`
checkpoint) against the combined-arms doctrine on each held-out scenario
(:data:`training.wfm1.scenarios.HELD_OUT_SCENARIOS`, never drawn in training) in three
conditions, ``n_eval_episodes`` battles each (battle ``i`` seeded ``9000 + i``, the
seed's), every unit on its policy's mean:

- ``zero_shot``: the generalist as it is, told the scenario by its card;
- ``finetuned``: after PPO on the scenario for ``finetune_steps`` battle steps training
  the card adapter only, the base frozen (the seed's fine-tuning, with a real
  objective: the reference's cloned its own outputs, a zero loss);
- ``specialist``: a commander of the same architecture trained from scratch on that
  scenario alone for ``specialist_train_steps`` battle steps (the reference's
  "specialist" advanced and never fired).

Outcomes are won, drawn or lost; **a win rate counts draws in its denominator** (the
reference dropped them, so a commander that drew every battle but one scored 100 %).
Criteria (the seed's): mean zero-shot win rate >= 0.55; fine-tune recovery, the mean
fine-tuned win rate over the mean specialist win rate, >= 0.80.

Usage::

    python -m training.wfm1_benchmark --policy checkpoints/wfm1/wfm1_final.pt
        [--episodes 50] [--finetune-steps 10000] [--specialist-steps 100000]
        [--scenarios 20] [--report docs/wfm1_benchmark.md]
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
from storage.files import atomic_write_text
from training.wfm1.battles import ScenarioBattles
from training.wfm1.config import WFM1TrainConfig
from training.wfm1.scenarios import HELD_OUT_SCENARIOS, WFMScenario
from training.wfm1.trainer import WFM1Trainer

logger = logging.getLogger(__name__)

EVAL_SEED = 9000
"""Battle ``i`` of every condition is seeded ``EVAL_SEED + i`` (the seed's choice)."""
CONDITIONS = ("zero_shot", "finetuned", "specialist")


@dataclass(frozen=True)
class WFM1BenchmarkConfig:
    """The benchmark's settings (the seed's names and defaults; ``specialist_train_steps``
    is ours: the seed's 0 meant a scripted stand-in).

    Raises:
        ValueError: naming the field, for a value out of range.
    """

    n_eval_episodes: int = 50
    n_scenarios: int = 20
    finetune_steps: int = 10_000
    max_steps_per_episode: int = 500
    specialist_train_steps: int = 100_000
    zero_shot_win_rate_threshold: float = 0.55
    finetune_recovery_fraction: float = 0.80
    finetune_battles: int = 16
    """Battles a fine-tuning or specialist rollout plays at once."""
    seed: int = 0

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


@dataclass
class ConditionResult:
    """One condition on one scenario: won, drawn and lost shares, and training steps."""

    won: float
    drawn: float
    lost: float
    train_steps: int = 0

    @classmethod
    def of(cls, outcomes: np.ndarray, train_steps: int = 0) -> ConditionResult:
        return cls(float(np.mean(outcomes == 1)), float(np.mean(outcomes == 0)),
                   float(np.mean(outcomes == -1)), train_steps)

    @property
    def win_rate(self) -> float:
        """Wins over all battles, draws included."""
        return self.won


@dataclass
class WFM1BenchmarkSummary:
    """Every scenario's conditions, their means and the criteria."""

    config: WFM1BenchmarkConfig
    results: dict[str, dict[str, ConditionResult]] = field(default_factory=dict)
    wall_clock_s: float = 0.0
    policy: str = ""
    training: dict[str, Any] = field(default_factory=dict)

    def mean(self, condition: str) -> float:
        rates = [r[condition].win_rate for r in self.results.values() if condition in r]
        return float(np.mean(rates)) if rates else 0.0

    @property
    def finetune_recovery(self) -> float:
        specialist = self.mean("specialist")
        return self.mean("finetuned") / specialist if specialist >= 1e-6 else 0.0

    @property
    def meets_zero_shot_criterion(self) -> bool:
        return self.mean("zero_shot") >= self.config.zero_shot_win_rate_threshold

    @property
    def meets_finetune_criterion(self) -> bool:
        return self.finetune_recovery >= self.config.finetune_recovery_fraction

    def to_markdown(self) -> str:
        """The report: a table of every scenario and condition, the means, the criteria."""
        c = self.config
        lines = ["# WFM-1 benchmark", "",
                 f"Policy `{self.policy}`, {c.n_eval_episodes} battles per scenario and "
                 f"condition against the combined-arms doctrine (seeds {EVAL_SEED}+), every "
                 "unit on its policy's mean. Cells: won / drawn / lost %; a win rate counts "
                 "draws in its denominator.", ""]
        if self.training:
            lines += ["Training: " + ", ".join(f"{k} {v}" for k, v in self.training.items()),
                      ""]
        lines += [f"Fine-tuning: {c.finetune_steps:,} battle steps of PPO on the card adapter "
                  f"only; specialists: {c.specialist_train_steps:,} battle steps from scratch "
                  "on the scenario alone (same architecture).", "",
                  "| scenario | zero-shot | fine-tuned | specialist |", "|---|---|---|---|"]
        for name, row in self.results.items():
            cells = [f"{r.won:.0%} / {r.drawn:.0%} / {r.lost:.0%}" if (r := row.get(k)) else "-"
                     for k in CONDITIONS]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        means = [f"{self.mean(k):.1%}" for k in CONDITIONS]
        lines += [f"| **mean win rate** | {means[0]} | {means[1]} | {means[2]} |", "",
                  f"- Zero-shot: {self.mean('zero_shot'):.1%} (target "
                  f">= {c.zero_shot_win_rate_threshold:.0%}): "
                  f"{'met' if self.meets_zero_shot_criterion else 'not met'}.",
                  f"- Fine-tune recovery: {self.finetune_recovery:.1%} of the specialists' (target "
                  f">= {c.finetune_recovery_fraction:.0%}): "
                  f"{'met' if self.meets_finetune_criterion else 'not met'}.",
                  f"- Wall-clock: {self.wall_clock_s / 60:.1f} min."]
        return "\n".join(lines) + "\n"


def play_scenario(policy: WFM1Policy, scenario: WFMScenario, n_episodes: int,
                  max_steps: int, seed: int = EVAL_SEED) -> np.ndarray:
    """(n_episodes,) outcomes (1 won, 0 drawn, -1 lost) of one battle each of seeds
    ``seed .. seed + n_episodes - 1``, every Blue unit on ``policy``'s mean."""
    battles = ScenarioBattles([scenario], n_episodes, max_steps, seed=seed)
    cards = torch.from_numpy(battles.cards)
    outcome = np.zeros(n_episodes, np.int8)
    over = np.zeros(n_episodes, bool)
    policy.eval()
    with torch.no_grad():
        while not over.all():
            view = battles.observe()
            actions, _ = policy.act(torch.from_numpy(view.tokens), torch.from_numpy(view.pad_mask),
                                    card_vec=cards, own_mask=torch.from_numpy(view.own_mask),
                                    deterministic=True)
            result = battles.step(actions.numpy())
            ended = result.done & ~over
            outcome[ended & (result.winner == 0)] = 1
            outcome[ended & (result.winner == 1)] = -1
            over |= result.done
    return outcome


class WFM1Benchmark:
    """The benchmark of one trained generalist (module docstring).

    Args:
        policy_path: the generalist's checkpoint (``WFM1Policy.load_checkpoint`` reads it).
        config: the benchmark's settings.
        train_config: PPO's settings for fine-tuning and specialists (their budgets and
            battle counts are set from ``config``).
    """

    def __init__(self, policy_path: str | Path, config: WFM1BenchmarkConfig | None = None,
                 train_config: WFM1TrainConfig | None = None) -> None:
        self.policy_path = Path(policy_path)
        self.config = config or WFM1BenchmarkConfig()
        self.policy = WFM1Policy.load_checkpoint(self.policy_path)
        self.train_config = train_config or WFM1TrainConfig()

    def _trainer_config(self, steps: int, folder: Path) -> WFM1TrainConfig:
        c = self.config
        n_steps = max(1, min(self.train_config.rollout_n_steps(), steps // c.finetune_battles))
        return self.train_config.replace(
            total_timesteps=max(steps, n_steps * c.finetune_battles),
            n_envs=c.finetune_battles, n_steps=n_steps,
            batch_size=min(self.train_config.batch_size or 256, n_steps * c.finetune_battles),
            scenarios_per_rollout=1, max_steps=c.max_steps_per_episode,
            checkpoint_dir=str(folder), log_dir=str(folder / "logs"), enable_wandb=False,
            verbose=0, seed=c.seed, d_model=self.policy.kwargs["d_model"],
            n_heads=self.policy.kwargs["n_heads"],
            n_echelon_layers=self.policy.kwargs["n_echelon_layers"],
            n_cross_layers=self.policy.kwargs["n_cross_layers"])

    def evaluate_scenario(self, scenario: WFMScenario) -> dict[str, ConditionResult]:
        """The three conditions on one scenario."""
        c = self.config
        play = lambda policy: play_scenario(policy, scenario, c.n_eval_episodes,  # noqa: E731
                                            c.max_steps_per_episode)
        row = {"zero_shot": ConditionResult.of(play(self.policy))}
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            if c.finetune_steps:
                tuner = WFM1Trainer(self._trainer_config(c.finetune_steps, folder / "ft"),
                                    scenarios=[scenario], init_policy=self.policy_path,
                                    adapter_only=True).learn()
                row["finetuned"] = ConditionResult.of(play(tuner.policy), tuner.total_steps)
            if c.specialist_train_steps:
                specialist = WFM1Trainer(
                    self._trainer_config(c.specialist_train_steps, folder / "sp"),
                    scenarios=[scenario]).learn()
                row["specialist"] = ConditionResult.of(play(specialist.policy),
                                                       specialist.total_steps)
        return row

    def run(self, training: dict[str, Any] | None = None) -> WFM1BenchmarkSummary:
        """Every held-out scenario (the first ``n_scenarios``)."""
        started = time.perf_counter()
        summary = WFM1BenchmarkSummary(self.config, policy=str(self.policy_path),
                                       training=training or {})
        for scenario in HELD_OUT_SCENARIOS[:self.config.n_scenarios]:
            row = summary.results[scenario.name] = self.evaluate_scenario(scenario)
            logger.info("%s: %s", scenario.name,
                        {k: f"{r.won:.0%}/{r.drawn:.0%}/{r.lost:.0%}" for k, r in row.items()})
        summary.wall_clock_s = time.perf_counter() - started
        return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.wfm1_benchmark",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--policy", required=True, help="the generalist's checkpoint")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--finetune-steps", type=int, default=10_000)
    parser.add_argument("--specialist-steps", type=int, default=100_000)
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--report", help="write the markdown report here")
    parser.add_argument("--training", default="", help="a line on how the policy was trained")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(1)
    config = WFM1BenchmarkConfig(n_eval_episodes=args.episodes,
                                 finetune_steps=args.finetune_steps,
                                 specialist_train_steps=args.specialist_steps,
                                 n_scenarios=args.scenarios)
    summary = WFM1Benchmark(args.policy, config).run(
        {"run": args.training} if args.training else None)
    text = summary.to_markdown()
    print(text)
    if args.report:
        atomic_write_text(args.report, text)
        print(f"wrote {args.report}")


__all__ = ["CONDITIONS", "ConditionResult", "EVAL_SEED", "WFM1Benchmark",
           "WFM1BenchmarkConfig", "WFM1BenchmarkSummary", "main", "play_scenario"]

if __name__ == "__main__":
    main()
