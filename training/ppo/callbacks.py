"""Stable-Baselines3 callbacks of a v1 training run.

Every frequency is in environment steps and fires when the step count crosses a
multiple of it, so it works whatever the number of parallel battles (SB3's
own callbacks count calls, which forces frequencies to be multiples of
``n_envs``). Metrics go to the SB3 logger (TensorBoard, stdout) and, when a W&B
run is active, to W&B under the same names.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback, EvalCallback

from envs.reward import COMPONENTS
from envs.sim.validation import check_in_range, check_int
from storage.files import atomic_write_bytes
from training.artifacts import CheckpointManifest
from training.common.schedule import EveryNSteps
from training.elo import EloRegistry
from training.ppo.checkpoints import save_ppo
from training.ppo.evaluation import duel_outcomes, run_episodes_with_model

logger = logging.getLogger(__name__)


def _wandb_run():
    """The active W&B run, or None (also when wandb is not installed)."""
    try:
        import wandb
    except ImportError:
        return None
    return wandb.run


def publish(callback: BaseCallback, metrics: dict[str, float]) -> None:
    """Record ``metrics`` in the SB3 logger and, with an active W&B run, in W&B
    (with ``time/total_timesteps``)."""
    for key, value in metrics.items():
        callback.logger.record(key, value)
    run = _wandb_run()
    if run is not None:
        run.log({**metrics, "time/total_timesteps": callback.num_timesteps},
                step=callback.num_timesteps)


class WandbCallback(BaseCallback):
    """Logs SB3 training metrics to an active W&B run.

    Every ``log_freq`` environment steps it logs ``rollout/ep_rew_mean``,
    ``rollout/ep_len_mean`` and ``time/total_timesteps``; at the end of each
    rollout it logs the values the SB3 logger holds (``train/...`` losses and
    the like) under their own names, without adding a prefix.

    Args:
        log_freq: how often, in environment steps, to log rollout statistics.
        verbose: verbosity level (0 = silent, 1 = info).
    """

    def __init__(self, log_freq: int = 1000, verbose: int = 0) -> None:
        super().__init__(verbose)
        self._due = EveryNSteps(log_freq)

    def _init_callback(self) -> None:
        self._due.start(self.model.num_timesteps)

    def _on_step(self) -> bool:
        run = _wandb_run()
        if run is not None and self._due(self.num_timesteps):
            episodes = list(self.model.ep_info_buffer or [])
            metrics: dict[str, float] = {"time/total_timesteps": self.num_timesteps}
            if episodes:
                metrics["rollout/ep_rew_mean"] = float(np.mean([e["r"] for e in episodes]))
                metrics["rollout/ep_len_mean"] = float(np.mean([e["l"] for e in episodes]))
            run.log(metrics, step=self.num_timesteps)
        return True

    def _on_rollout_end(self) -> None:
        run = _wandb_run()
        values = dict(self.logger.name_to_value)
        if run is not None and values:
            run.log({k: float(v) for k, v in values.items()
                     if isinstance(v, (int, float, np.floating, np.integer))},
                    step=self.num_timesteps)


class RewardBreakdownCallback(BaseCallback):
    """Logs the per-episode mean of each reward component.

    Sums the ``reward/<component>`` entries of every battle's ``info`` into
    per-episode totals and, every ``log_freq`` steps, logs the mean over the
    episodes finished since the last log as ``reward_breakdown/<component>``
    (and ``reward_breakdown/total``), with ``time/total_timesteps``. Episodes
    still unlogged at the end of training are flushed then.

    Args:
        log_freq: how often, in environment steps, to log.
        verbose: verbosity level.
    """

    KEYS = (*COMPONENTS, "total")

    def __init__(self, log_freq: int = 1000, verbose: int = 0) -> None:
        super().__init__(verbose)
        self._due = EveryNSteps(log_freq)
        self._info_keys = tuple(f"reward/{key}" for key in self.KEYS)  # read every step
        self._running: np.ndarray | None = None
        self._finished: list[np.ndarray] = []

    def _init_callback(self) -> None:
        self._due.start(self.model.num_timesteps)

    def _on_step(self) -> bool:
        infos, dones = self.locals["infos"], np.asarray(self.locals["dones"])
        step = np.array([[info.get(key, 0.0) for key in self._info_keys] for info in infos],
                        dtype=np.float64)
        if self._running is None:
            self._running = np.zeros_like(step)
        self._running += step
        for i in np.nonzero(dones)[0]:
            self._finished.append(self._running[i].copy())
            self._running[i] = 0.0
        if self._due(self.num_timesteps):
            self._flush()
        return True

    def _on_training_end(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if not self._finished:
            return
        means = np.mean(self._finished, axis=0)
        self._finished.clear()
        publish(self, {f"reward_breakdown/{key}": float(v)
                       for key, v in zip(self.KEYS, means, strict=True)})


_OUT_KEYS = ("blue_routed", "blue_destroyed", "red_routed", "red_destroyed")


class OutcomeCallback(BaseCallback):
    """Logs how the training battles ended, once per rollout.

    At the end of each rollout it records the shares of the battles finished during
    it that Blue won, drew (the step limit) and lost, as ``rollout/win_rate``,
    ``rollout/draw_rate`` and ``rollout/loss_rate``: a learner that settles for
    draws shows here long before its evaluations. A rollout in which no battle ended
    records nothing.
    """

    def __init__(self, verbose: int = 0) -> None:
        super().__init__(verbose)
        self._counts = np.zeros(3, np.int64)  # won, drawn, lost

    def _on_step(self) -> bool:
        ended = np.flatnonzero(self.locals["dones"])
        if len(ended):
            infos = self.locals["infos"]
            last = {key: np.array([infos[i][key] for i in ended], bool) for key in _OUT_KEYS}
            self._counts += np.bincount(1 - duel_outcomes(last), minlength=3)
        return True

    def _on_rollout_end(self) -> None:
        total = int(self._counts.sum())
        if total:
            won, drawn, lost = self._counts / total
            publish(self, {"rollout/win_rate": float(won), "rollout/draw_rate": float(drawn),
                           "rollout/loss_rate": float(lost)})
        self._counts[:] = 0


def ramped_fire_scale(progress: float, reload_rate: float) -> float:
    """Scripted Red's fire scale (:meth:`~envs.battles.battalion_batch.BattalionBatch.
    set_scripted_fire_scale`) at ``progress`` (0 to 1 and beyond) through a ramp.

    Over the first two thirds of the ramp the scale rises from 0 to ``reload_rate``, where
    a level firing at full intensity (L5) keeps up its sustained fire: its fire grows from
    none to all it can load. Over the last third it rises to 1, and only L5's opening
    volley grows with it. Past the ramp it is 1.
    """
    if progress >= 1.0:
        return 1.0
    if progress < 2.0 / 3.0:
        return reload_rate * progress * 1.5
    return reload_rate + (1.0 - reload_rate) * (progress - 2.0 / 3.0) * 3.0


class ScriptedFireRamp(BaseCallback):
    """Ramps scripted Red's infantry fire in the training battles from none to full over
    the first ``share`` of a ``total_timesteps`` budget (:func:`ramped_fire_scale`), and
    records it as ``train/scripted_fire_scale``.

    Against an enemy that does not yet shoot back, a commander learns to march in and
    volley at close range, the plan that beats the enemy once it does; met at full fire
    from the start, PPO from scratch settles on trading shots out of reach
    (``docs/training.md``, "From scratch: volleys"). Only the training battles are ramped:
    the evaluation battles are always fought at full fire. The scale is set before each
    rollout from the run's env-step count, so a resumed run picks the ramp up where it
    stood.

    Args:
        share: the share of the budget the ramp takes (in (0, 1]).
        total_timesteps: the run's budget in env-steps (>= 1).
    """

    def __init__(self, share: float, total_timesteps: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.steps = check_in_range("share", share, 0.0, 1.0, low_open=True) \
            * check_int("total_timesteps", total_timesteps, minimum=1)
        self.reload_rate = 0.0

    def _on_training_start(self) -> None:
        self.reload_rate = self.training_env.get_attr("config", [0])[0].reload_rate

    def _on_rollout_start(self) -> None:
        scale = ramped_fire_scale(self.num_timesteps / self.steps, self.reload_rate)
        self.training_env.set_attr("scripted_fire_scale", scale)
        self.logger.record("train/scripted_fire_scale", scale)

    def _on_step(self) -> bool:
        return True


class EloEvalCallback(BaseCallback):
    """Evaluate the current policy against fixed opponents and track its Elo.

    Every ``eval_freq`` environment steps it plays ``n_eval_episodes`` battles
    (deterministically, as one batch) against each opponent, updates the
    :class:`~training.elo.EloRegistry`, saves it if it has a file, and logs
    ``elo/rating_vs_{opp}``, ``elo/win_rate_vs_{opp}`` and ``elo/delta_vs_{opp}``.

    Args:
        opponents: opponent names, e.g. ``["scripted_l3", "scripted_l5"]``.
        n_eval_episodes: battles per opponent per evaluation.
        registry: the Elo registry to update.
        agent_name: this run's name in the registry.
        eval_freq: how often, in environment steps, to evaluate.
        env_kwargs: BattalionEnv settings for the battles (the training env's).
        seed: base seed of the evaluation battles (the same battles each time).
        verbose: verbosity level.
    """

    def __init__(self, opponents: list[str], n_eval_episodes: int, registry: EloRegistry,
                 agent_name: str, eval_freq: int, env_kwargs: dict | None = None,
                 seed: int | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        from training.ppo.opponents import resolve_opponent

        for opponent in opponents:
            resolve_opponent(opponent)  # fail at construction on a bad name
        self.opponents = list(opponents)
        self.n_eval_episodes = check_int("n_eval_episodes", n_eval_episodes, minimum=1)
        self.registry = registry
        self.agent_name = agent_name
        self.env_kwargs = dict(env_kwargs or {})
        self.seed = 0 if seed is None else seed
        self._due = EveryNSteps(eval_freq)

    def _init_callback(self) -> None:
        self._due.start(self.model.num_timesteps)

    def _on_step(self) -> bool:
        if self._due(self.num_timesteps):
            self.evaluate()
        return True

    def evaluate(self) -> dict[str, float]:
        metrics: dict[str, float] = {}
        for opponent in self.opponents:
            result = run_episodes_with_model(self.model, opponent, self.n_eval_episodes,
                                             deterministic=True, seed=self.seed,
                                             env_kwargs=self.env_kwargs)
            delta = self.registry.update(self.agent_name, opponent, result.score,
                                         n_games=result.n_episodes)
            metrics[f"elo/rating_vs_{opponent}"] = self.registry.get_rating(self.agent_name)
            metrics[f"elo/win_rate_vs_{opponent}"] = result.win_rate
            metrics[f"elo/delta_vs_{opponent}"] = delta
        if self.registry.can_save:
            self.registry.save()
        publish(self, metrics)
        if self.verbose:
            logger.info("Elo of %s: %.1f", self.agent_name,
                        self.registry.get_rating(self.agent_name))
        return metrics


class _ManifestRows:
    """What the manifest callbacks share: the manifest, the fields of the rows they
    register in it, and a clock of environment steps started at the model's count (a
    resumed run keeps its rhythm). Put before the SB3 callback among the bases."""

    def _keep_rows(self, every: int, manifest: CheckpointManifest | None, seed: int,
                   curriculum_level: int, run_id: str | None, config_hash: str) -> None:
        """Keep the manifest and its rows' fields, and act every ``every`` env-steps.

        Args:
            every: environment steps between two actions of the callback.
            manifest: the manifest to register files in, or None.
            seed: recorded in manifest rows.
            curriculum_level: recorded in manifest rows.
            run_id: recorded in manifest rows.
            config_hash: recorded in manifest rows.
        """
        self.manifest = manifest
        self.row = dict(seed=seed, curriculum_level=curriculum_level, run_id=run_id,
                        config_hash=config_hash)
        self._due = EveryNSteps(every)

    def _init_callback(self) -> None:
        super()._init_callback()
        self._due.start(self.model.num_timesteps)


class ManifestCheckpointCallback(_ManifestRows, CheckpointCallback):
    """Periodic checkpoints, written atomically and indexed in the manifest.

    Saves ``{save_path}/{name_prefix}_{num_timesteps}_steps.zip`` every
    ``save_freq`` environment steps (not calls), then appends a ``periodic``
    row to ``manifest``. A run killed at any moment leaves only complete
    checkpoints behind.

    Args:
        save_freq: environment steps between checkpoints.
        save_path: folder of the checkpoints.
        name_prefix: file-name prefix (see :mod:`training.artifacts`).
        manifest: the manifest to register checkpoints in, or None.
        seed: recorded in manifest rows.
        curriculum_level: recorded in manifest rows.
        run_id: recorded in manifest rows.
        config_hash: recorded in manifest rows.
        verbose: verbosity level.
    """

    def __init__(self, save_freq: int, save_path: str, name_prefix: str = "rl_model",
                 manifest: CheckpointManifest | None = None, *, seed: int = 0,
                 curriculum_level: int = 5, run_id: str | None = None,
                 config_hash: str = "", verbose: int = 0) -> None:
        super().__init__(save_freq, save_path, name_prefix, verbose=verbose)
        self._keep_rows(save_freq, manifest, seed, curriculum_level, run_id, config_hash)

    def _on_step(self) -> bool:
        if self._due(self.num_timesteps):
            self.save_now()
        return True

    def save_now(self) -> Path:
        path = save_ppo(self.model, Path(self.save_path)
                        / f"{self.name_prefix}_{self.num_timesteps}_steps.zip")
        if self.manifest is not None:
            self.manifest.register(path, artifact_type="periodic", step=self.num_timesteps,
                                   **self.row)
        if self.verbose:
            logger.info("saved checkpoint %s", path)
        return path


class ManifestEvalCallback(_ManifestRows, EvalCallback):
    """SB3 evaluation that keeps the best model, atomically and in the manifest.

    Every ``eval_freq`` environment steps it runs SB3's evaluation on
    ``eval_env``; when the mean reward improves it writes ``best_model.zip``
    into ``best_model_save_path`` and, with ``best_filename`` set, a copy under
    that name, registering them as ``best_alias`` and ``best``.

    Args:
        eval_env: the evaluation VecEnv.
        eval_freq: environment steps between evaluations.
        n_eval_episodes: as for SB3's EvalCallback.
        deterministic: as for SB3's EvalCallback.
        log_path: as for SB3's EvalCallback.
        verbose: as for SB3's EvalCallback.
        best_model_save_path: folder of the best model (None: do not keep it).
        best_filename: name of the versioned copy of the best model, or None.
        manifest: the manifest to register the best models in, or None.
        seed: recorded in manifest rows.
        curriculum_level: recorded in manifest rows.
        run_id: recorded in manifest rows.
        config_hash: recorded in manifest rows.
    """

    def __init__(self, eval_env, *, eval_freq: int, n_eval_episodes: int = 20,
                 deterministic: bool = True, log_path: str | None = None,
                 best_model_save_path: str | None = None, best_filename: str | None = None,
                 manifest: CheckpointManifest | None = None, seed: int = 0,
                 curriculum_level: int = 5, run_id: str | None = None,
                 config_hash: str = "", verbose: int = 0) -> None:
        # SB3 counts calls; this counts steps, so SB3's own trigger is disabled.
        super().__init__(eval_env, n_eval_episodes=n_eval_episodes, eval_freq=1,
                         log_path=log_path, best_model_save_path=None,
                         deterministic=deterministic, verbose=verbose, warn=False)
        self.best_dir = Path(best_model_save_path) if best_model_save_path else None
        self.best_filename = best_filename
        self._keep_rows(eval_freq, manifest, seed, curriculum_level, run_id, config_hash)

    def _on_step(self) -> bool:
        if not self._due(self.num_timesteps):
            return True
        best_before = self.best_mean_reward
        keep_going = super()._on_step()
        if self.best_mean_reward > best_before and self.best_dir is not None:
            self._keep_best()
        return keep_going

    def _keep_best(self) -> None:
        alias = save_ppo(self.model, self.best_dir / "best_model.zip")
        saved: list[tuple[Path, str]] = [(alias, "best_alias")]
        if self.best_filename and self.best_filename != alias.name:
            versioned = self.best_dir / self.best_filename
            atomic_write_bytes(versioned, alias.read_bytes())
            saved.append((versioned, "best"))
        if self.manifest is not None:
            for path, kind in saved:
                self.manifest.register(path, artifact_type=kind, step=self.num_timesteps,
                                       **self.row)


__all__ = ["EloEvalCallback", "ManifestCheckpointCallback", "ManifestEvalCallback",
           "RewardBreakdownCallback", "ScriptedFireRamp", "WandbCallback", "ramped_fire_scale"]
