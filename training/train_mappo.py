"""MAPPO for N-vs-M battalion battles, top to bottom.

Blue's battalions share one actor (or one each) that sees only its own fog-of-war
observation, and a centralised critic that also reads the whole battle; Red is scripted,
or with self-play a frozen snapshot of Blue. The rollout steps ``n_envs`` battles as one
NumPy batch; the update is clipped PPO over every Blue battalion's samples. One network
serves every team size, so a curriculum promotion swaps the battles (1v1 -> 2v1 -> 2v2)
and training goes on with the same weights. A run writes ``mappo_policy.pt`` every
``checkpoint_freq`` env-steps and ``mappo_policy_final.pt`` at the end, from which a
killed run resumes (``resume.auto=true``). ``docs/mappo.md`` has the
guide. In Python, and from the command line (Hydra, ``configs/experiment_mappo_2v2.yaml``)::

    result = train_mappo(total_timesteps=1_000_000, enable_wandb=False)
    python training/train_mappo.py training.total_timesteps=500000 self_play.enabled=true
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.mappo_policy import MAPPOPolicy
from training.common.on_policy import TrainerHook
from training.common.tracking import log_artifact, start_wandb
from training.elo import TeamEloRegistry
from training.mappo.checkpoints import (
    CHECKPOINT_NAME,
    FINAL_CHECKPOINT_NAME,
    load_checkpoint,
    policy_from_checkpoint,
    resolve_resume,
    save_checkpoint,
)
from training.mappo.config import MAPPOConfig, check_mappo_field_names
from training.mappo.hooks import (
    CheckpointHook,
    CurriculumHook,
    MetricsLogHook,
    ProgressHook,
    ScriptEvaluationHook,
    SelfPlayHook,
)
from training.mappo.rollout import Rollout, TrainingBattles, collect
from training.mappo.trainer import MAPPOTrainer
from training.mappo.update import advantages_and_returns, update

logger = logging.getLogger(__name__)


@dataclass
class MAPPOResult:
    """What a run produced.

    Attributes:
        policy: the trained policy (eval mode).
        total_steps: env-steps trained, including those of a resumed run.
        episodes: battles finished in training.
        history: one dict of metrics per update (the values logged).
        final_checkpoint: path of ``mappo_policy_final.pt``.
        transfer: the ``{"loaded", "skipped"}`` report of a v1 warm start, or None.
    """

    policy: MAPPOPolicy
    total_steps: int
    episodes: int
    history: list[dict[str, Any]] = field(default_factory=list)
    final_checkpoint: Path | None = None
    transfer: dict[str, list[str]] | None = None


def train_mappo(config: MAPPOConfig | None = None, *, resume: str | Path | None = None,
                extra_hooks: list[TrainerHook] | None = None, **overrides: Any) -> MAPPOResult:
    """Train Blue with MAPPO; see the module docstring.

    Builds a :class:`~training.mappo.trainer.MAPPOTrainer` and runs it with the
    hooks the config asks for (curriculum, self-play, evaluation, logging,
    checkpoints, progress), then ``extra_hooks``.

    Args:
        config: the settings (defaults when None).
        resume: a checkpoint of an earlier run to continue (its step counter,
            optimiser, curriculum and random generators go on).
        extra_hooks: more :class:`~training.common.on_policy.TrainerHook`\\ s, run after the
            built-in ones at every update.
        **overrides: MAPPOConfig fields to change.

    Returns:
        A :class:`MAPPOResult`.

    Raises:
        ValueError: for an unknown or invalid setting (named), or a budget below
            one rollout.
        FileNotFoundError: if ``resume`` or ``v1_checkpoint`` does not exist.
    """
    config = _resolve_config(config, overrides)
    trainer = MAPPOTrainer(config, resume=resume)
    registry = TeamEloRegistry(config.elo_registry_path)
    run, owns_run = (start_wandb(project=config.wandb_project, entity=config.wandb_entity,
                                 tags=config.wandb_tags, config=config.to_dict(),
                                 log_dir=config.log_dir)
                     if config.enable_wandb else (None, False))
    hooks: list[TrainerHook] = []
    if config.curriculum:
        hooks.append(CurriculumHook(run))
    if config.enable_self_play:
        hooks.append(SelfPlayHook(registry))
    hooks += [ScriptEvaluationHook(registry), MetricsLogHook(run), CheckpointHook(),
              ProgressHook(), *(extra_hooks or [])]
    trainer.learn(hooks)
    if run is not None:
        log_artifact(run, "mappo_policy_final", trainer.final_checkpoint, owns_run)
    return MAPPOResult(trainer.policy, trainer.total_steps, trainer.episodes, trainer.history,
                       trainer.final_checkpoint, trainer.transfer)


def _resolve_config(config: MAPPOConfig | None, overrides: dict[str, Any]) -> MAPPOConfig:
    if config is not None and not isinstance(config, MAPPOConfig):
        raise TypeError(f"config={config!r} is invalid: expected a MAPPOConfig or None")
    check_mappo_field_names(overrides)
    return (config or MAPPOConfig()).replace(**overrides) if overrides else (
        config or MAPPOConfig())


# --- command line ------------------------------------------------------------------

def main() -> None:
    """Hydra entry point: ``python training/train_mappo.py key=value ...``."""
    from training.mappo.config import CONFIG_FILE

    CONFIG_FILE.run(_run_command_line)


def _run_command_line(config: MAPPOConfig, resume_options: dict[str, Any]) -> None:
    resume = resolve_resume(resume_options, config)
    if resume is not None:
        print(f"Resuming from {resume}")
    result = train_mappo(config, resume=resume)
    last = next((h for h in reversed(result.history) if "eval/win_rate" in h), None)
    print(f"Trained for {result.total_steps} env-steps ({result.episodes} battles); "
          f"final checkpoint {result.final_checkpoint}")
    if last is not None:
        print(f"Last evaluation vs scripted L{config.red_level}: "
              f"won {last['eval/win_rate']:.0%}, drawn {last['eval/draw_rate']:.0%}")


if __name__ == "__main__":
    main()


__all__ = ["CHECKPOINT_NAME", "FINAL_CHECKPOINT_NAME", "MAPPOConfig", "TrainerHook",
           "MAPPOResult", "MAPPOTrainer", "Rollout", "TrainingBattles",
           "advantages_and_returns", "collect", "load_checkpoint", "policy_from_checkpoint",
           "resolve_resume", "save_checkpoint", "train_mappo", "update"]
