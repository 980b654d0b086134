"""Self-play for the Stable-Baselines3 stack: the callbacks that snapshot the learner
into an :class:`~training.ppo.pool.OpponentPool`, deal pool members to the
training battles as Red, and measure the learner against them.

Documented, and importable, as :mod:`training.self_play`'s; ``train(config)``
adds them with :func:`self_play_callbacks` when ``enable_self_play`` is set.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from envs.sim.validation import check_in_range, check_int
from training.artifacts import CheckpointManifest
from training.common.schedule import EveryNSteps
from training.elo import EloRegistry
from training.ppo.battles import env_kwargs_for, find_rotation
from training.ppo.callbacks import publish
from training.ppo.evaluation import EvaluationResult, play_duels
from training.ppo.pool import OpponentPool

logger = logging.getLogger(__name__)

__all__ = ["SelfPlayCallback", "WinRateVsPoolCallback", "self_play_callbacks"]


class SelfPlayCallback(BaseCallback):
    """Snapshots the learner into the pool and deals pool members to the training battles.

    Every ``snapshot_freq`` environment steps: the learner is saved as the next
    snapshot (and registered in ``manifest``); then up to ``opponents_per_swap``
    pool members, sampled uniformly, are dealt to the training battles (see
    :meth:`deal_opponents`): episode by episode, ``1 - scripted_share`` of the
    episodes, when the battles deal their opponents that way (``train()``'s do),
    else to ``1 - scripted_share`` of the battles. Every member commands all its
    battles through one batched ``predict`` per step.

    Args:
        pool: the opponent pool.
        snapshot_freq: environment steps between snapshots.
        vec_env: the training env (default: the model's).
        verbose: verbosity level.
        manifest: manifest for ``self_play_snapshot`` rows, or None.
        seed: a manifest row field; also seeds the dealing of opponents.
        curriculum_level: a manifest row field.
        run_id: a manifest row field.
        config_hash: a manifest row field.
        scripted_share: share of battles that keep their original opponent, in [0, 1].
        opponents_per_swap: different pool members dealt at each swap (>= 1).
        registry: when given (with ``agent_name``), each snapshot enters this Elo
            registry at the learner's current rating, named like its file.
        agent_name: the learner's name in ``registry``.
    """

    def __init__(self, pool: OpponentPool, snapshot_freq: int = 50_000, vec_env=None,
                 verbose: int = 0, manifest: CheckpointManifest | None = None, seed: int = 0,
                 curriculum_level: int = 5, run_id: str | None = None, config_hash: str = "",
                 scripted_share: float = 0.0, opponents_per_swap: int = 4,
                 registry: EloRegistry | None = None, agent_name: str | None = None) -> None:
        super().__init__(verbose)
        self.pool = pool
        self.vec_env = vec_env
        self.manifest = manifest
        self.row = dict(seed=seed, curriculum_level=curriculum_level, run_id=run_id,
                        config_hash=config_hash)
        self.scripted_share = check_in_range("scripted_share", scripted_share, 0.0, 1.0)
        self.opponents_per_swap = check_int("opponents_per_swap", opponents_per_swap, minimum=1)
        self.registry = registry
        self.agent_name = agent_name
        self.rng = np.random.default_rng(seed)
        self.version = pool.latest_version
        self._due = EveryNSteps(snapshot_freq)
        self._original: list[Any] | None = None
        if registry is not None and agent_name is not None:
            # Here, not at the start of learning: a resumed run with nothing left
            # to learn must repair the ratings too.
            self._rate_unrated_snapshots()

    def _init_callback(self) -> None:
        self._due.start(self.model.num_timesteps)
        if self.vec_env is None:
            self.vec_env = self.model.get_env()
        self._battles = self.vec_env  # through its wrappers, which may deal opponents too
        self._original = self._battles.get_attr("red_policy")

    def _rate_unrated_snapshots(self) -> None:
        """Enter snapshots the registry does not know (a run killed between writing one
        and saving its rating) at the learner's rating, as :meth:`snapshot` would have."""
        rated = self.registry.all_ratings()
        missing = [p.stem for p in self.pool.snapshot_paths if p.stem not in rated]
        for name in missing:
            self.registry.set_rating(name, self.registry.get_rating(self.agent_name))
        if missing and self.registry.can_save:
            self.registry.save()

    def _on_step(self) -> bool:
        if self._due(self.num_timesteps):
            self.snapshot()
            self.deal_opponents()
        return True

    def snapshot(self) -> Path:
        """Save the learner as the next snapshot and register it."""
        self.version += 1
        path = self.pool.add(self.model, self.version)
        if self.manifest is not None:
            self.manifest.register(path, artifact_type="self_play_snapshot",
                                   step=self.num_timesteps, **self.row)
        if self.registry is not None and self.agent_name is not None:
            self.registry.set_rating(path.stem, self.registry.get_rating(self.agent_name))
            if self.registry.can_save:  # with the snapshot, so a crash cannot lose it
                self.registry.save()
        if self.verbose:
            logger.info("self-play snapshot %s at step %d", path.name, self.num_timesteps)
        return path

    def deal_opponents(self) -> dict[str, list[int]]:
        """Deal pool members to the training battles.

        In training battles that deal their opponents episode by episode (an
        :class:`~training.ppo.battles.OpponentRotation`, as ``train()`` builds), the
        members take ``1 - scripted_share`` of the episodes from now on. In other
        vectorised envs a ``scripted_share`` of battles, chosen at random, keep the
        opponent they started with and the rest are split among the members.

        Returns:
            member name -> the battles it commands now (empty with a rotation, where
            members are dealt episode by episode).
        """
        rotation = find_rotation(self._battles)
        if rotation is not None:
            members = [member for _, member in self._sample_members()]
            rotation.set_members(members, 1.0 - self.scripted_share)
            return {}
        n = self._battles.num_envs
        order = self.rng.permutation(n)
        n_kept = int(round(self.scripted_share * n))
        kept, dealt = order[:n_kept], order[n_kept:]
        for i in kept:
            self._battles.env_method("set_red_policy", self._original[i], indices=[int(i)])
        assignment: dict[str, list[int]] = {}
        if self.pool.size and len(dealt):
            members = self._sample_members()
            for k, (name, member) in enumerate(members):
                battles = [int(i) for i in dealt[k::len(members)]]
                self._battles.env_method("set_red_policy", member, indices=battles)
                assignment[name] = battles
        return assignment

    def _sample_members(self) -> list[tuple[str, Any]]:
        """Up to ``opponents_per_swap`` distinct pool members, drawn uniformly, loaded."""
        n_members = min(self.opponents_per_swap, self.pool.size)
        chosen = self.rng.choice(self.pool.size, size=n_members, replace=False)
        paths = self.pool.snapshot_paths
        return [(paths[int(i)].stem, self.pool.load(paths[int(i)])) for i in chosen]


class WinRateVsPoolCallback(BaseCallback):
    """Evaluates the learner against a pool member and logs ``self_play/win_rate_vs_pool``.

    Every ``eval_freq`` environment steps, if the pool is not empty, it plays
    ``n_eval_episodes`` battles against a sampled member (or the latest, with
    ``use_latest``) with the given BattalionEnv settings, logs the win rate to
    the SB3 logger and W&B (with ``time/total_timesteps``), and, with a
    registry, updates the learner's Elo against that member.

    Args:
        pool: the opponent pool.
        eval_freq: environment steps between evaluations.
        n_eval_episodes: battles per evaluation.
        deterministic: whether the learner acts deterministically.
        use_latest: evaluate against the newest snapshot instead of a random one.
        verbose: verbosity level.
        env_kwargs: BattalionEnv settings of the battles (the training run's).
        registry: Elo registry.
        agent_name: the learner's name in ``registry``.
        seed: seed of the member choice and the battles.
    """

    def __init__(self, pool: OpponentPool, eval_freq: int = 50_000, n_eval_episodes: int = 20,
                 deterministic: bool = True, use_latest: bool = False, verbose: int = 0,
                 env_kwargs: dict | None = None, registry: EloRegistry | None = None,
                 agent_name: str | None = None, seed: int = 0) -> None:
        super().__init__(verbose)
        self.pool = pool
        self.n_eval_episodes = check_int("n_eval_episodes", n_eval_episodes, minimum=1)
        self.deterministic = deterministic
        self.use_latest = use_latest
        self.env_kwargs = dict(env_kwargs or {})
        self.registry = registry
        self.agent_name = agent_name
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._due = EveryNSteps(eval_freq)
        self.last_win_rate: float | None = None

    def _init_callback(self) -> None:
        self._due.start(self.model.num_timesteps)

    def _on_step(self) -> bool:
        if self._due(self.num_timesteps) and self.pool.size:
            self.evaluate()
        return True

    def evaluate(self) -> float:
        opponent = self.pool.sample_latest() if self.use_latest else self.pool.sample(self.rng)
        # Both sides in the learner's mode, as evaluate_vs_pool plays them.
        result = EvaluationResult.from_outcomes(play_duels(
            self.model, opponent, self.n_eval_episodes, self.deterministic, self.seed,
            env_kwargs=self.env_kwargs, red_deterministic=self.deterministic))
        self.last_win_rate = result.win_rate
        metrics = {"self_play/win_rate_vs_pool": result.win_rate}
        name = self.pool.name_of(opponent)
        if self.registry is not None and self.agent_name is not None and name is not None:
            self.registry.update(self.agent_name, name, result.score, n_games=result.n_episodes)
            metrics["self_play/elo"] = self.registry.get_rating(self.agent_name)
            if self.registry.can_save:
                self.registry.save()
        publish(self, metrics)
        return result.win_rate


def self_play_callbacks(config, manifest: CheckpointManifest | None,
                        rows: dict[str, Any]) -> list[BaseCallback]:
    """The self-play callbacks of a :class:`~training.ppo.config.TrainingConfig` run."""
    pool = OpponentPool(config.self_play_pool_dir, config.self_play_pool_max_size)
    registry = EloRegistry(config.elo_registry_path)
    agent = rows.get("run_id") or f"run_seed{config.seed}"
    return [
        SelfPlayCallback(pool, config.self_play_snapshot_freq, manifest=manifest,
                         scripted_share=config.self_play_scripted_share, registry=registry,
                         agent_name=agent, **rows),
        WinRateVsPoolCallback(pool, config.self_play_eval_freq,
                              config.self_play_n_eval_episodes,
                              use_latest=config.self_play_use_latest_for_eval,
                              env_kwargs=env_kwargs_for(config), registry=registry,
                              agent_name=agent, seed=config.seed + 3000),
    ]
