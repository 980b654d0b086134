"""Train a PPO commander on :class:`~envs.battalion_env.BattalionEnv` battles.

Programmatic use::

    from training import train, TrainingConfig
    model = train(total_timesteps=500_000, n_envs=4, enable_wandb=False)
    model = train(TrainingConfig(total_timesteps=1_000_000, curriculum_level=3))

Command line (Hydra; ``configs/default.yaml``, override any key)::

    python training/train.py training.learning_rate=1e-4 env.curriculum_level=3
    python training/train.py resume.auto=true          # continue the newest checkpoint

Checkpoints, the manifest, the logs and a run's resume are described in
``docs/training.md``.
"""


from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule
from stable_baselines3.common.vec_env import VecMonitor

from models.battalion_policy import BattalionMlpPolicy
from models.weights import checkpoint_path
from storage.files import clean_stale_temporaries, numbered_files
from training.artifacts import (
    CheckpointManifest,
    checkpoint_best_filename,
    checkpoint_final_stem,
    checkpoint_name_prefix,
    config_hash,
    parse_step_from_checkpoint_name,
)
from training.common.device import resolve_device
from training.common.imitation import make_doctrine
from training.common.on_policy import steps_to_learn
from training.common.tracking import log_artifact, start_wandb
from training.elo import EloRegistry
from training.plots import plot_run
from training.ppo.battles import env_kwargs_for, make_eval_env, make_training_env
from training.ppo.callbacks import (
    EloEvalCallback,
    ManifestCheckpointCallback,
    ManifestEvalCallback,
    OutcomeCallback,
    RewardBreakdownCallback,
    ScriptedFireRamp,
    WandbCallback,
)
from training.ppo.checkpoints import load_ppo, save_ppo
from training.ppo.config import (
    CONFIG_FILE,
    TrainingConfig,
    check_field_names,
)
from training.ppo.guided import GuidedPPO
from training.ppo.warm_start import fit_on_own_play, imitate

logger = logging.getLogger(__name__)

__all__ = ["EloEvalCallback", "ManifestCheckpointCallback", "ManifestEvalCallback",
           "RewardBreakdownCallback", "TrainingConfig", "WandbCallback", "env_kwargs_for",
           "make_training_env", "train"]


def train(config: TrainingConfig | None = None, *,
          extra_callbacks: list[BaseCallback] | None = None,
          resume: str | Path | None = None, **override_kwargs: Any) -> PPO:
    """Train a PPO policy on :class:`~envs.battalion_env.BattalionEnv`.

    Args:
        config: the run's settings; None means :class:`TrainingConfig` defaults.
        extra_callbacks: more SB3 callbacks to run alongside the built-in ones.
        resume: a checkpoint (``.zip`` optional) to continue from: the step
            counter goes on from the checkpoint's.
        **override_kwargs: TrainingConfig fields to override.

    Training runs whole rollouts (``n_steps * n_envs`` steps) until
    ``total_timesteps`` is trained, warm-start demonstrations included, with at least
    one PPO update after a warm start: ``num_timesteps >= total_timesteps``, as
    Stable-Baselines3's ``learn`` gives (the log says when the last rollout passes it).

    Returns:
        The trained model. Periodic, best and final checkpoints and the manifest
        are written under ``config.checkpoint_dir``.

    Raises:
        ValueError: if a setting is invalid, an override is not a field (the
            message lists the valid fields), or ``device`` names a CUDA device this
            machine lacks.
        FileNotFoundError: if ``resume`` does not exist.
    """
    config = _resolve_config(config, override_kwargs)
    resume_path = None
    if resume is not None:
        resume_path = checkpoint_path(resume)
        if resume_path is None:
            raise FileNotFoundError(f"resume={str(resume)!r}: no such checkpoint (also tried "
                                    f"{resume}.zip)")
    device = resolve_device(config.device, field="device")  # before any work: a clear error
    torch.set_num_threads(config.torch_threads)
    digest = config_hash(config)
    manifest = CheckpointManifest(config.manifest_path) if config.write_manifest else None
    _tidy_after_a_crash(config, manifest)
    if resume_path is not None and manifest is not None:
        _report_config_change(manifest, resume_path, digest, config)

    run, owns_run = _start_wandb(config, digest)
    run_id = getattr(run, "id", None)
    env = make_training_env(config)
    if resume_path is None:
        model = _new_model(config, env)
        if model.teacher is not None:
            # The doctrine GuidedPPO pulls toward is the one imitated; demonstration steps
            # count towards the budget.
            model.num_timesteps = imitate(
                model, env, model.teacher, config.warm_start_budget(config.total_timesteps),
                epochs=config.warm_start_epochs, learning_rate=config.warm_start_learning_rate,
                margin=config.warm_start_order_margin, seed=config.seed)
        elif config.policy_normalize_observations:
            # Those steps count towards the budget too.
            model.num_timesteps = fit_on_own_play(model, env, config.rollout_n_steps()
                                                  * config.n_envs)
    else:
        model = load_ppo(resume_path, env=env, device=device,
                         custom_objects=_resumed_settings(config), algorithm=GuidedPPO)
        model.teacher = _teacher(config)
        # Fresh but reproducible battles after a resume.
        model.set_random_seed(config.seed + model.num_timesteps)
        logger.info("resuming %s at step %d", resume_path, model.num_timesteps)

    names = dict(seed=config.seed, curriculum_level=config.curriculum_level,
                 enable_v2=config.enable_naming_v2)
    rows = dict(seed=config.seed, curriculum_level=config.curriculum_level, run_id=run_id,
                config_hash=digest)
    checkpoint_dir = Path(config.checkpoint_dir)
    callbacks = _callbacks(config, manifest, names, rows, run, checkpoint_dir)
    callbacks += list(extra_callbacks or [])

    remaining = steps_to_learn(config.total_timesteps, model.num_timesteps,
                               config.rollout_n_steps() * config.n_envs,
                               after_warm_start=resume_path is None)
    if remaining:
        model.learn(total_timesteps=remaining, callback=CallbackList(callbacks),
                    reset_num_timesteps=model.num_timesteps == 0,
                    progress_bar=config.progress_bar, tb_log_name="ppo_battalion")
        # SB3 writes a rollout's numbers at the start of the next: the last update's
        # losses and the last evaluations are still pending.
        model.logger.dump(model.num_timesteps)
    final = _finish(model, config, manifest, names, rows, checkpoint_dir)
    if remaining:  # learning curves, Elo and losses beside the TensorBoard files
        plot_run(model.logger.get_dir())
    if run is not None:
        _finish_wandb(run, final, owns_run)
    return model


def _resumed_settings(config: TrainingConfig) -> dict[str, Any]:
    """What a resumed run takes from the user's config, never from the checkpoint: the
    PPO settings, the rollout and minibatch sizes (so the budget holds) and where logs go."""
    n_steps = config.rollout_n_steps()
    return {
        "teacher_coef": config.teacher_coef, "teacher_decay_steps": config.teacher_decay_steps,
        "lr_schedule": FloatSchedule(ConstantSchedule(config.learning_rate)),
        "learning_rate": config.learning_rate,
        "clip_range": FloatSchedule(ConstantSchedule(config.clip_range)),
        "n_steps": n_steps, "batch_size": config.minibatch_size(n_steps * config.n_envs),
        "n_epochs": config.n_epochs, "gamma": config.gamma, "gae_lambda": config.gae_lambda,
        "ent_coef": config.ent_coef, "vf_coef": config.vf_coef,
        "max_grad_norm": config.max_grad_norm, "target_kl": config.target_kl,
        "tensorboard_log": config.log_dir,
        "verbose": config.verbose,
    }


def _tidy_after_a_crash(config: TrainingConfig, manifest: CheckpointManifest | None) -> None:
    """Remove temporary files of killed writers, and list in the manifest the periodic
    checkpoints a killed run wrote but did not get to register."""
    checkpoint_dir = Path(config.checkpoint_dir)
    for folder in {checkpoint_dir, checkpoint_dir / "best", Path(config.self_play_pool_dir),
                   Path(config.manifest_path).parent, Path(config.elo_registry_path).parent}:
        clean_stale_temporaries(folder)
    log_dir = Path(config.log_dir)  # each earlier run's pictures lie in a folder of their own
    for folder in (log_dir.iterdir() if log_dir.is_dir() else ()):
        if folder.is_dir():
            clean_stale_temporaries(folder)
    if manifest is not None:
        prefix = checkpoint_name_prefix(seed=config.seed, curriculum_level=config.curriculum_level,
                                        enable_v2=config.enable_naming_v2)
        for path, step in periodic_checkpoints(checkpoint_dir, prefix):
            manifest.register(path, artifact_type="periodic", step=step, seed=config.seed,
                              curriculum_level=config.curriculum_level, run_id=None,
                              config_hash=config_hash(config))


def periodic_checkpoints(checkpoint_dir: Path, prefix: str) -> list[tuple[Path, int]]:
    """The complete periodic checkpoints ``{prefix}_{N}_steps.zip`` in a folder, by step.

    Checkpoints are renamed into place whole, so a file with that name is complete;
    one that is not a zip archive (damaged since) is reported and left out.
    """
    # One road with the other trainers' resume (storage.files.numbered_files).
    return numbered_files(checkpoint_dir, f"{prefix}_", "_steps.zip", "PPO checkpoint")


def _resolve_config(config: TrainingConfig | None, overrides: dict[str, Any]) -> TrainingConfig:
    check_field_names(overrides)
    if config is None:
        return TrainingConfig(**overrides)
    if not isinstance(config, TrainingConfig):
        raise TypeError(f"config={config!r} is invalid: expected a TrainingConfig or None")
    return config.replace(**overrides) if overrides else config


def _teacher(config: TrainingConfig):
    """The doctrine the run imitated, which :class:`GuidedPPO` pulls toward (or None)."""
    if config.warm_start_doctrine is None:
        return None
    return make_doctrine(config.warm_start_doctrine, config.map_width, config.map_height,
                         config.warm_start_hold_range,
                         fall_back_uphill=config.warm_start_fall_back_uphill,
                         spent_hold_range=config.warm_start_spent_hold_range)


def _new_model(config: TrainingConfig, env: VecMonitor) -> GuidedPPO:
    n_steps = config.rollout_n_steps()
    return GuidedPPO(
        BattalionMlpPolicy, env, teacher=_teacher(config), teacher_coef=config.teacher_coef,
        teacher_decay_steps=config.teacher_decay_steps,
        learning_rate=config.learning_rate, n_steps=n_steps,
        batch_size=config.minibatch_size(n_steps * config.n_envs), n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda, clip_range=config.clip_range, ent_coef=config.ent_coef,
        vf_coef=config.vf_coef, max_grad_norm=config.max_grad_norm,
        target_kl=config.target_kl, seed=config.seed,
        device=resolve_device(config.device, field="device"), verbose=config.verbose,
        tensorboard_log=config.log_dir,
        policy_kwargs={"net_arch": list(config.policy_hidden_sizes),
                       "log_std_init": config.policy_log_std_init,
                       "normalize_observations": config.policy_normalize_observations,
                       "orders": config.policy_orders})


def _callbacks(config: TrainingConfig, manifest: CheckpointManifest | None,
               names: dict[str, Any], rows: dict[str, Any], run,
               checkpoint_dir: Path) -> list[BaseCallback]:
    callbacks: list[BaseCallback] = [
        ManifestCheckpointCallback(config.checkpoint_freq, str(checkpoint_dir),
                                   checkpoint_name_prefix(**names), manifest, **rows),
        ManifestEvalCallback(
            VecMonitor(make_eval_env(config)), eval_freq=config.eval_freq,
            n_eval_episodes=config.n_eval_episodes, deterministic=config.eval_deterministic,
            best_model_save_path=str(checkpoint_dir / "best"),
            best_filename=checkpoint_best_filename(**names) if config.enable_naming_v2
            else None, manifest=manifest, log_path=str(Path(config.log_dir) / "eval"),
            **rows),
        RewardBreakdownCallback(config.wandb_log_freq),
        OutcomeCallback(),
    ]
    if config.scripted_fire_ramp > 0.0:
        callbacks.append(ScriptedFireRamp(config.scripted_fire_ramp, config.total_timesteps))
    if run is not None:
        callbacks.append(WandbCallback(config.wandb_log_freq))
    if config.elo_opponents:
        agent = rows["run_id"] or f"run_seed{config.seed}"
        callbacks.append(EloEvalCallback(
            config.elo_opponents, config.elo_n_eval_episodes,
            EloRegistry(config.elo_registry_path), agent, config.elo_eval_freq,
            env_kwargs=env_kwargs_for(config), seed=config.seed + 2000))
    if config.enable_self_play:
        from training.self_play import self_play_callbacks

        callbacks += self_play_callbacks(config, manifest, rows)
    return callbacks


def _finish(model: PPO, config: TrainingConfig, manifest: CheckpointManifest | None,
            names: dict[str, Any], rows: dict[str, Any], checkpoint_dir: Path) -> Path:
    """Save the final model (and its legacy alias), index, and prune old checkpoints."""
    final = save_ppo(model, checkpoint_dir / (checkpoint_final_stem(**names) + ".zip"))
    saved = [(final, "final")]
    if config.enable_naming_v2 and config.keep_legacy_aliases:
        legacy = checkpoint_final_stem(**{**names, "enable_v2": False}) + ".zip"
        saved.append((save_ppo(model, checkpoint_dir / legacy), "final_alias"))
    if manifest is not None:
        prefix = checkpoint_name_prefix(**names)
        for path in sorted(checkpoint_dir.glob(f"{prefix}_*_steps.zip")):
            manifest.register(path, artifact_type="periodic",
                              step=parse_step_from_checkpoint_name(path), **rows)
        for path, kind in saved:
            manifest.register(path, artifact_type=kind, step=model.num_timesteps, **rows)
        if config.prune_on_run_end and config.keep_periodic > 0:
            manifest.prune_periodic(checkpoint_dir, prefix, config.keep_periodic)
        if config.enable_self_play and config.prune_on_run_end and \
                config.keep_self_play_snapshots > 0:
            manifest.prune_self_play_snapshots(config.self_play_pool_dir,
                                               config.keep_self_play_snapshots)
    logger.info("final model: %s (%d steps)", final, model.num_timesteps)
    return final


def _report_config_change(manifest: CheckpointManifest, path: Path, digest: str,
                          config: TrainingConfig) -> None:
    row = manifest.latest_entry_for_path(path)
    if row is None:
        logger.warning("resuming from %s, which the manifest %s does not list", path,
                       manifest.path)
        return
    changes = [f"{key} {row.get(key)!r} -> {value!r}" for key, value in (
        ("config_hash", digest), ("seed", config.seed),
        ("curriculum_level", config.curriculum_level)) if row.get(key) != value]
    if changes:
        logger.warning("resuming %s with a changed configuration: %s", path, "; ".join(changes))


# --- Weights & Biases --------------------------------------------------------------

def _start_wandb(config: TrainingConfig, digest: str) -> tuple[Any, bool]:
    """Start a W&B run if enabled: (run or None, whether this call started it)."""
    if not config.enable_wandb:
        return None, False
    return start_wandb(project=config.wandb_project, entity=config.wandb_entity,
                       tags=config.wandb_tags, config={**config.to_dict(), "config_hash": digest},
                       log_dir=config.log_dir)


def _finish_wandb(run, final: Path, owns_run: bool) -> None:
    log_artifact(run, "ppo_battalion_final", final, owns_run)


# --- command line ------------------------------------------------------------------

def resolve_resume(resume: dict[str, Any], config: TrainingConfig) -> Path | None:
    """The checkpoint a CLI run continues from (``resume`` section of the config).

    Order: ``resume.checkpoint`` if set (it must exist); else, with
    ``resume.auto``, the newest complete ``{prefix}_*_steps.zip`` in the
    checkpoint folder, whether or not the manifest lists it (a run killed
    between writing a checkpoint and indexing it still resumes from it); else
    None (a fresh run).

    Raises:
        FileNotFoundError: if ``resume.checkpoint`` does not exist.
    """
    explicit = resume.get("checkpoint")
    if explicit:
        found = checkpoint_path(explicit)
        if found is None:
            raise FileNotFoundError(f"resume.checkpoint={explicit!r}: no such checkpoint")
        return found
    if not resume.get("auto"):
        return None
    prefix = checkpoint_name_prefix(seed=config.seed, curriculum_level=config.curriculum_level,
                                    enable_v2=config.enable_naming_v2)
    found = periodic_checkpoints(Path(config.checkpoint_dir), prefix)
    return found[-1][0] if found else None


def main() -> None:
    """Hydra entry point: ``python training/train.py key=value ...``."""
    CONFIG_FILE.run(_run_command_line)


def _run_command_line(config: TrainingConfig, resume_options: dict[str, Any]) -> None:
    resume = resolve_resume(resume_options, config)
    if resume is not None:
        print(f"Resuming from {resume}")
    model = train(config, resume=resume)
    print(f"Trained for {model.num_timesteps} steps; checkpoints in {config.checkpoint_dir}")


if __name__ == "__main__":
    main()
