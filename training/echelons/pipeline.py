"""The chain of command in one command: battalion, then brigade, then division.

:func:`run_hrl` trains the three echelons of the HRL curriculum in order, each over the
frozen policies of the ones below, with the settings of ``configs/hrl/``
(:func:`~training.echelons.curriculum.load_phase_config`): order-following battalions
(MAPPO, :func:`~training.train_mappo.train_mappo` with ``order_period``), then a
brigadier (:func:`~training.echelons.brigade.train_brigade`), then a division commander
(:func:`~training.echelons.division.train_division`), each frozen and registered as its
echelon. After each phase :func:`evaluate_phase` plays the commander against the
scripted level of the phase's Elo opponent, and an
:class:`~training.echelons.curriculum.HRLCurriculumScheduler` rates it and says whether
the phase met its promotion criteria; the next phase trains over the policy either way,
unless ``stop_unless_promoted``. ``docs/echelons.md`` has the guide. Command line::

    python -m training.echelons.pipeline --root checkpoints/hrl [--phases 2 3]
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from envs.echelons.division_batch import DIVISION_COMMANDS
from envs.options import MacroAction
from storage.files import atomic_write_text
from training.echelons.brigade import brigade_battles, train_brigade
from training.echelons.config import BrigadeConfig, DivisionConfig
from training.echelons.curriculum import (
    PHASE_LABELS,
    HRLCurriculumScheduler,
    HRLPhase,
    load_phase_config,
)
from training.echelons.division import division_battles, load_frozen_brigade_policy, train_division
from training.echelons.order_following import play_ordered_battles
from training.echelons.trainer import (
    evaluate_commander,
    load_commander,
    load_frozen_battalion_policy,
)
from training.elo import TeamEloRegistry, performance_rating
from training.mappo.config import MAPPOConfig
from training.policy_registry import Echelon, PolicyRegistry
from training.train_mappo import train_mappo

logger = logging.getLogger(__name__)

PHASE_FOLDERS = {phase: f"phase{int(phase)}_{label}" for phase, label in PHASE_LABELS.items()}
"""Each phase's folder under the run's root."""
FINAL_FILES = {HRLPhase.PHASE_1_BATTALION: "mappo_policy_final.pt",
               HRLPhase.PHASE_2_BRIGADE: "ppo_brigade_final.zip",
               HRLPhase.PHASE_3_DIVISION: "ppo_division_final.zip"}
"""Each phase's final policy file in its folder."""
ECHELONS = {HRLPhase.PHASE_1_BATTALION: Echelon.BATTALION,
            HRLPhase.PHASE_2_BRIGADE: Echelon.BRIGADE,
            HRLPhase.PHASE_3_DIVISION: Echelon.DIVISION}
EVALUATION_SEED = 20_000
"""Seed of the first evaluation battle of every phase (never a training seed range)."""


@dataclass
class PhaseReport:
    """One phase of :func:`run_hrl`: its policy, its evaluation and its promotion."""

    phase: int
    echelon: str
    policy_file: str
    env_steps: int
    """Battalion steps of one battle the phase trained for (its own budget)."""
    evaluation: dict[str, float]
    elo: float | None
    criteria_met: bool
    """Window full, win rate and Elo at the phase file's thresholds (what promotes)."""
    status: dict[str, Any] = field(default_factory=dict)


def opponent_level(opponent: str) -> int:
    """The scripted level an Elo baseline such as ``scripted_l3`` names.

    Raises:
        ValueError: for a baseline that is not a scripted level.
    """
    if not opponent.startswith(("scripted_l", "scripted_team_l")):
        raise ValueError(f"elo_opponent={opponent!r} is invalid for the HRL pipeline: expected "
                         "a scripted level (scripted_l1 .. scripted_l5)")
    return int(opponent[-1])


def phase_settings(phase: HRLPhase, root: Path, lower: dict[HRLPhase, Path],
                   overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The trainer settings of ``phase`` from its file, its folder under ``root``, the
    frozen policies below it (``lower``) and ``overrides`` (field names)."""
    config = load_phase_config(phase)
    env, training = config["env"], config["training"]
    folder = str(root / PHASE_FOLDERS[phase])
    settings = {**{k: env[k] for k in ("map_width", "map_height", "max_steps",
                                       "visibility_radius")},
                **{k: training[k] for k in ("total_timesteps", "n_steps", "n_epochs",
                                            "batch_size")},
                "checkpoint_dir": folder, "log_dir": str(root / "logs" / PHASE_FOLDERS[phase])}
    for section, keys in ((env, ("red_level", "order_period", "order_attack_share",
                                 "temporal_ratio", "n_blue", "n_red")),
                          (training, ("n_envs", "warm_start_hold_range"))):
        settings.update({key: section[key] for key in keys if key in section})
    if phase == HRLPhase.PHASE_1_BATTALION:
        # The battalions learn their orders against the phase's scripted Red alone.
        settings.update(elo_registry_path=str(root / "phase1_team_elo.json"),
                        self_play_pool_dir=str(Path(folder) / "pool"), doctrine_share=0.0)
    if HRLPhase.PHASE_1_BATTALION in lower and phase > HRLPhase.PHASE_1_BATTALION:
        settings["battalion_policy"] = str(lower[HRLPhase.PHASE_1_BATTALION])
    if phase == HRLPhase.PHASE_3_DIVISION and HRLPhase.PHASE_2_BRIGADE in lower:
        settings["brigade_policy"] = str(lower[HRLPhase.PHASE_2_BRIGADE])
    settings.update(overrides or {})
    return settings


def battle_steps_per_step(phase: HRLPhase, settings: dict[str, Any]) -> int:
    """Battle steps one training step of ``phase`` plays: one for the battalions, the
    command tempo for the brigade and the division."""
    if phase == HRLPhase.PHASE_1_BATTALION:
        return 1
    config = BrigadeConfig if phase == HRLPhase.PHASE_2_BRIGADE else DivisionConfig
    return config(**settings).temporal_ratio


def _train(phase: HRLPhase, settings: dict[str, Any]) -> Path:
    if phase == HRLPhase.PHASE_1_BATTALION:
        return Path(train_mappo(**settings).final_checkpoint)
    if phase == HRLPhase.PHASE_2_BRIGADE:
        return train_brigade(**settings).final_checkpoint
    return train_division(**settings).final_checkpoint


def evaluate_phase(phase: HRLPhase, policy_file: Path, settings: dict[str, Any],
                   n_battles: int, red_level: int) -> np.ndarray:
    """(n_battles,) outcomes (1 won, 0 drawn, -1 lost) of the phase's trained commander
    against scripted ``red_level``, battle ``i`` seeded ``EVALUATION_SEED + i``."""
    if phase == HRLPhase.PHASE_1_BATTALION:
        config = MAPPOConfig(**settings)
        policy = load_frozen_battalion_policy(policy_file, n_agents=config.n_blue)
        env_kwargs = {k: settings[k] for k in ("map_width", "map_height", "max_steps",
                                               "visibility_radius")}
        # Attack orders renewed at the brigadier's tempo, as phase 2 gives them.
        return play_ordered_battles(policy, n_battles=n_battles, seed=EVALUATION_SEED,
                                    red_level=red_level, n_blue=config.n_blue,
                                    n_red=config.n_red, period=BrigadeConfig().temporal_ratio,
                                    postures=(MacroAction.ADVANCE_SECTOR,),
                                    env_kwargs=env_kwargs).outcomes
    if phase == HRLPhase.PHASE_2_BRIGADE:
        config = BrigadeConfig(**{**settings, "red_level": red_level})
        battalion = None if config.battalion_policy is None else \
            load_frozen_battalion_policy(config.battalion_policy)
        model = load_frozen_brigade_policy(policy_file)
        return evaluate_commander(model, brigade_battles(config, n_battles, battalion),
                                  n_battles, EVALUATION_SEED)
    config = DivisionConfig(**{**settings, "red_level": red_level})
    brigade = None if config.brigade_policy is None else load_frozen_brigade_policy(
        config.brigade_policy)
    battalion = None if config.battalion_policy is None else load_frozen_battalion_policy(
        config.battalion_policy)
    batch = division_battles(config, n_battles, brigade, battalion)
    model = load_commander(policy_file, batch.obs_dim, config.n_brigades,
                           len(DIVISION_COMMANDS))
    return evaluate_commander(model, batch, n_battles, EVALUATION_SEED)


def run_hrl(root: str | Path = "checkpoints/hrl", *, phases: tuple[int, ...] = (1, 2, 3),
            overrides: dict[int, dict[str, Any]] | None = None, version: str = "1",
            stop_unless_promoted: bool = False) -> list[PhaseReport]:
    """Train ``phases`` of the chain of command in order (module docstring).

    Args:
        root: the run's folder (phase folders, the policy registry, the Elo file,
            ``hrl_summary.json``).
        phases: which phases to run; a phase after 1 not run here uses the final file
            already in its folder.
        overrides: per phase number, trainer settings to change (field names).
        version: the version the policies are registered under (replacing an entry of
            the same echelon and version).
        stop_unless_promoted: stop after a phase that did not earn its promotion.

    Returns:
        One report per phase run.

    Raises:
        ValueError: for an unknown phase, or a setting out of range (named).
        FileNotFoundError: for a phase's lower-echelon file that is not there.
    """
    root = Path(root)
    wanted = sorted({HRLPhase(p) for p in phases})
    registry = PolicyRegistry(root / "policy_registry.json")
    elo = TeamEloRegistry(root / "hrl_elo.json")
    lower: dict[HRLPhase, Path] = {}
    reports: list[PhaseReport] = []
    for phase in HRLPhase:
        final = root / PHASE_FOLDERS[phase] / FINAL_FILES[phase]
        if phase not in wanted:
            if phase < max(wanted):
                if not final.is_file():
                    raise FileNotFoundError(f"phase {int(phase)} is not run, but its policy "
                                            f"{final} that phase {int(max(wanted))} needs is "
                                            "not there")
                lower[phase] = final
            continue
        settings = phase_settings(phase, root, lower, (overrides or {}).get(int(phase)))
        logger.info("HRL phase %d (%s): training", int(phase), PHASE_LABELS[phase])
        final = _train(phase, settings)
        lower[phase] = final
        scheduler = HRLCurriculumScheduler.for_phase(phase)
        curriculum = load_phase_config(phase)["curriculum"]
        n = curriculum["win_rate_window"]
        outcomes = evaluate_phase(phase, final, settings, n,
                                  opponent_level(curriculum["elo_opponent"]))
        scheduler.record_episodes((outcomes == 1).tolist())
        # The commander's Elo is the rating its score implies against the opponent (a
        # performance rating): one K-factor update from the default 1000 could never
        # move it by more than 40 points, whatever the result.
        opponent = curriculum["elo_opponent"]
        score = float(np.mean(outcomes == 1) + 0.5 * np.mean(outcomes == 0))
        rating = performance_rating(score, elo.baselines[opponent], n)
        scheduler.set_elo(rating)
        elo.set_rating(f"hrl_{ECHELONS[phase].value}", rating)
        elo.save()
        status = scheduler.promotion_status()
        # The last phase has no next one to promote to: its criteria are what counts.
        met = all(c["holds"] for k, c in status["conditions"].items()
                  if k != "not_final_phase")
        registry.register(ECHELONS[phase], version, final, overwrite=True)
        registry.save()
        evaluation = {"won": float(np.mean(outcomes == 1)), "drawn": float(np.mean(outcomes == 0)),
                      "lost": float(np.mean(outcomes == -1)),
                      "opponent_level": float(opponent_level(curriculum["elo_opponent"]))}
        steps = int(settings["total_timesteps"]) * battle_steps_per_step(phase, settings)
        reports.append(PhaseReport(int(phase), ECHELONS[phase].value, str(final), steps,
                                   evaluation, rating, met, status))
        logger.info("HRL phase %d: %s, Elo %.0f, criteria %s", int(phase), evaluation, rating,
                    "met" if met else "not met")
        if not met and stop_unless_promoted:
            break
    atomic_write_text(root / "hrl_summary.json",
                      json.dumps([asdict(r) for r in reports], indent=2, default=str))
    return reports


def main(argv: list[str] | None = None) -> None:
    """``python -m training.echelons.pipeline [--root DIR] [--phases 1 2 3] [--strict]``."""
    parser = argparse.ArgumentParser(description="Train the chain of command: battalion, "
                                     "brigade, division (configs/hrl/).")
    parser.add_argument("--root", default="checkpoints/hrl")
    parser.add_argument("--phases", type=int, nargs="+", default=[1, 2, 3], choices=[1, 2, 3])
    parser.add_argument("--version", default="1")
    parser.add_argument("--strict", action="store_true",
                        help="stop after a phase that did not meet its promotion criteria")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for report in run_hrl(args.root, phases=tuple(args.phases), version=args.version,
                          stop_unless_promoted=args.strict):
        print(f"phase {report.phase} ({report.echelon}): {report.policy_file}; against "
              f"scripted L{int(report.evaluation['opponent_level'])} won "
              f"{report.evaluation['won']:.0%}, drawn {report.evaluation['drawn']:.0%}, lost "
              f"{report.evaluation['lost']:.0%}; Elo {report.elo:.0f}; "
              f"promotion criteria {'met' if report.criteria_met else 'not met'}")


__all__ = ["ECHELONS", "FINAL_FILES", "PHASE_FOLDERS", "PhaseReport", "evaluate_phase",
           "battle_steps_per_step", "opponent_level", "phase_settings", "run_hrl"]

if __name__ == "__main__":
    main()
