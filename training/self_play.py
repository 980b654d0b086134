"""Self-play: a pool of frozen past selves as opponents.

* :class:`OpponentPool` keeps the latest ``max_size`` snapshots of a learner as
  SB3 ``.zip`` files (``snapshot_v{version:06d}.zip``), written atomically.
* :class:`SelfPlayCallback` snapshots the learner every ``snapshot_freq`` steps
  and re-deals Red in the training battles: most battles face pool members
  (several different ones at once, each queried once per step for all its
  battles), and a share keeps facing the config's scripted opponents so the
  learner does not forget how to beat simple doctrines.
* :class:`WinRateVsPoolCallback` and :func:`evaluate_vs_pool` measure the
  learner against pool members, with the training battles' settings. Each
  snapshot enters the Elo registry at the learner's rating when it was taken,
  so progress against past selves is a number on the same scale as the
  scripted baselines.
* :class:`TeamOpponentPool` is the multi-agent counterpart: frozen MAPPO teams
  (``team_snapshot_v{version:06d}.pt``) for the Red side of N-vs-M battles.

Typical use is ``train(enable_self_play=True)``; directly::

    pool = OpponentPool("checkpoints/pool", max_size=10)
    model.learn(1_000_000, callback=[SelfPlayCallback(pool, 50_000),
                                     WinRateVsPoolCallback(pool, 50_000)])
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback

from envs.sim.validation import check_in_range, check_int
from models.mappo_policy import MAPPOPolicy, load_policy, save_policy
from storage.files import UnreadableFileError, check_archive, clean_stale_temporaries
from training.artifacts import CheckpointManifest
from training.elo import EloRegistry
from training.evaluate import run_episodes_with_model
from training.ppo.callbacks import EveryNSteps, publish
from training.ppo.checkpoints import load_ppo, save_ppo

logger = logging.getLogger(__name__)

SNAPSHOT_PATTERN = re.compile(r"^snapshot_v(\d{6,})\.zip$")
TEAM_SNAPSHOT_PATTERN = re.compile(r"^team_snapshot_v(\d{6,})\.pt$")

__all__ = ["OpponentPool", "SelfPlayCallback", "SnapshotPool", "TeamOpponentPool",
           "WinRateVsPoolCallback",
           "evaluate_team_vs_pool", "evaluate_vs_pool", "nash_exploitability_proxy",
           "pool_opponent_win_rates", "self_play_callbacks"]


def snapshot_name(version: int) -> str:
    return f"snapshot_v{version:06d}"


class SnapshotPool:
    """A folder of versioned snapshots: the newest ``max_size`` form the pool, and the
    oldest is evicted (its file deleted) when a new one comes in.

    Subclasses say how a snapshot is named (:attr:`pattern`, :meth:`file_name`),
    written and read. On construction an existing folder is reloaded in version
    order; a file there that is not a snapshot is reported (logged) and left
    alone, and a kept snapshot that is not a readable archive raises
    ``ValueError`` naming it (both formats are zip archives). Reloading never
    deletes anything: snapshots beyond ``max_size`` stay on disk, outside the
    pool. Only :meth:`add` evicts, and only snapshots that are in the pool.

    Args:
        pool_dir: folder of the snapshots (created).
        max_size: snapshots kept (>= 1).

    Attributes:
        pool_dir: the folder.
        max_size: the capacity.
    """

    pattern: re.Pattern
    kind = "pool"

    def __init__(self, pool_dir: str | Path, max_size: int = 10) -> None:
        self.pool_dir = Path(pool_dir)
        self.max_size = check_int("max_size", max_size, minimum=1)
        self.pool_dir.mkdir(parents=True, exist_ok=True)
        clean_stale_temporaries(self.pool_dir)
        self._paths: list[Path] = self._scan()

    @classmethod
    def file_name(cls, version: int) -> str:
        raise NotImplementedError

    @classmethod
    def version_of(cls, path: str | Path) -> int:
        """The version in a snapshot's file name."""
        match = cls.pattern.match(Path(path).name)
        if match is None:
            raise ValueError(f"{path} is not named like a {cls.kind} snapshot "
                             f"({cls.file_name(1)})")
        return int(match.group(1))

    def _scan(self) -> list[Path]:
        snapshots, foreign = [], []
        for path in self.pool_dir.iterdir():
            if self.pattern.match(path.name):
                self._check_member(path)
                snapshots.append(path)
            elif path.is_file() and not path.name.startswith("."):
                foreign.append(path.name)
        if foreign:
            logger.warning("%s %s holds files that are not snapshots (left alone): %s",
                           self.kind, self.pool_dir, ", ".join(sorted(foreign)))
        snapshots.sort(key=self.version_of)
        kept, excess = snapshots[-self.max_size:], snapshots[:-self.max_size]
        for path in kept:
            # Both formats are zip archives: a cheap check that catches truncated,
            # foreign and oversized files without loading every snapshot.
            try:
                check_archive(path, f"{self.kind} snapshot")
            except UnreadableFileError as error:
                raise UnreadableFileError(f"{error}: remove or restore it before using the "
                                          "pool") from None
        if excess:
            logger.warning("%s %s holds %d snapshots; using the newest %d (older files are "
                           "left on disk)", self.kind, self.pool_dir, len(snapshots),
                           self.max_size)
        return kept

    def _check_member(self, path: Path) -> None:
        """Refuse a snapshot that is not a regular file of the pool's own folder: a
        symlink out of it (to another file, a device or a FIFO) or a special file."""
        try:
            target, info = path.resolve(), os.stat(path)
        except OSError as error:
            raise UnreadableFileError(f"{self.kind} snapshot {path} cannot be read: "
                                      f"{error.strerror}") from None
        if target.parent != self.pool_dir.resolve():
            raise UnreadableFileError(f"{self.kind} snapshot {path} links to {target}, outside "
                                      f"{self.pool_dir}: refusing to read it")
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFileError(f"{self.kind} snapshot {path} is not a regular file: "
                                      "refusing to read it")

    @property
    def size(self) -> int:
        """Number of snapshots in the pool."""
        return len(self._paths)

    @property
    def snapshot_paths(self) -> list[Path]:
        """Snapshot paths, oldest first (a copy)."""
        return list(self._paths)

    @property
    def latest_version(self) -> int:
        """Highest snapshot version in the pool (0 when empty)."""
        return self.version_of(self._paths[-1]) if self._paths else 0

    def _add(self, version: int, write) -> Path:
        """Write snapshot ``version`` with ``write(path) -> path``, then evict the oldest
        beyond ``max_size``. Written first: if the process dies in between, the folder
        has one snapshot too many (the next reload leaves it out), never one too few."""
        version = check_int("version", version, minimum=1)
        if self._paths and version <= self.latest_version:
            raise ValueError(f"version={version} is invalid: expected a version above "
                             f"{self.latest_version}, the newest in {self.pool_dir}")
        path = write(self.pool_dir / self.file_name(version))
        while len(self._paths) >= self.max_size:
            oldest = self._paths.pop(0)
            self._forget(oldest)
            oldest.unlink(missing_ok=True)
            logger.info("evicted %s from the %s", oldest.name, self.kind)
        self._paths.append(path)
        return path

    def _forget(self, path: Path) -> None:
        """Drop anything kept in memory for an evicted snapshot."""

    def _member(self, path: str | Path) -> Path:
        path = Path(path)
        if path not in self._paths:
            raise KeyError(f"{path} is not in the {self.kind} {self.pool_dir}")
        self._check_member(path)  # it may have been replaced since the scan
        return path

    def _pick(self, rng: np.random.Generator | None) -> Path | None:
        if not self._paths:
            return None
        rng = rng if rng is not None else np.random.default_rng()
        return self._paths[int(rng.integers(len(self._paths)))]


class OpponentPool(SnapshotPool):
    """Fixed-size pool of frozen PPO snapshots, oldest evicted first.

    Args:
        pool_dir: folder of the ``snapshot_v{version:06d}.zip`` files (created).
        max_size: snapshots kept (>= 1).

    An existing folder is reloaded: its snapshots, in version order, the newest
    ``max_size`` of them in the pool. A file there that is not a snapshot is
    reported (logged) and left alone; a snapshot that is not a readable archive
    raises ``ValueError`` naming it. Nothing is deleted except by eviction.

    Attributes:
        pool_dir: the folder.
        max_size: the capacity.
    """

    pattern = SNAPSHOT_PATTERN

    def __init__(self, pool_dir: str | Path, max_size: int = 10) -> None:
        super().__init__(pool_dir, max_size)
        self._loaded: OrderedDict[Path, PPO] = OrderedDict()

    @classmethod
    def file_name(cls, version: int) -> str:
        return snapshot_name(version) + ".zip"

    def add(self, model: PPO, version: int) -> Path:
        """Save ``model`` as snapshot ``version`` and add it, evicting the oldest if full.

        Raises:
            ValueError: if ``version`` is not above every version in the pool.
        """
        return self._add(version, lambda path: save_ppo(model, path))

    def _forget(self, path: Path) -> None:
        self._loaded.pop(path, None)

    def load(self, path: Path) -> PPO:
        """The model of snapshot ``path`` (loaded once, then kept while in the pool)."""
        path = self._member(path)
        model = self._loaded.get(path)
        if model is None:
            model = load_ppo(path, device="cpu")
            self._loaded[path] = model
        return model

    def sample(self, rng: np.random.Generator | None = None) -> PPO | None:
        """A uniformly chosen snapshot, loaded; None if the pool is empty."""
        path = self._pick(rng)
        return None if path is None else self.load(path)

    def sample_latest(self) -> PPO | None:
        """The newest snapshot, loaded; None if the pool is empty."""
        return self.load(self._paths[-1]) if self._paths else None

    def name_of(self, model: PPO) -> str | None:
        """The snapshot name (``snapshot_v000003``) of a model this pool loaded."""
        for path, loaded in self._loaded.items():
            if loaded is model:
                return path.stem
        return None


def version_of(path: Path) -> int:
    """The version in a PPO snapshot's file name."""
    return OpponentPool.version_of(path)


class _ActingAs:
    """A policy answering every ``predict`` with a fixed ``deterministic`` flag."""

    def __init__(self, policy: Any, deterministic: bool) -> None:
        self.policy, self.deterministic = policy, deterministic

    def predict(self, observation: np.ndarray, deterministic: bool = False):
        return self.policy.predict(observation, deterministic=self.deterministic)


def evaluate_vs_pool(model: Any, opponent: Any, n_episodes: int = 20,
                     deterministic: bool = True, seed: int | None = None,
                     env_kwargs: dict | None = None) -> float:
    """Blue's win rate with ``model`` against ``opponent`` commanding Red.

    Both sides act in the same mode (``deterministic``), so a policy against a
    copy of itself is an even match. The battles run as one batch with the
    given BattalionEnv settings (pass the training run's, e.g.
    :func:`training.battles.env_kwargs_for`); episode ``i`` uses ``seed + i``.
    A win is Red routed or destroyed while Blue is neither.

    Raises:
        ValueError: if ``n_episodes < 1``.
    """
    return _play_pool(model, opponent, n_episodes, deterministic, seed,
                      env_kwargs).win_rate


def _play_pool(model, opponent, n_episodes, deterministic, seed, env_kwargs):
    return run_episodes_with_model(model, _ActingAs(opponent, deterministic), n_episodes,
                                   deterministic, seed, env_kwargs=env_kwargs)


class SelfPlayCallback(BaseCallback):
    """Snapshots the learner into the pool and deals pool members to the training battles.

    Every ``snapshot_freq`` environment steps: the learner is saved as the next
    snapshot (and registered in ``manifest``); then each training battle gets a
    Red commander: a share ``scripted_share`` of battles, chosen at random, keep
    the opponent they started with (scripted or random), and the rest are split
    among up to ``opponents_per_swap`` pool members sampled uniformly. Every
    member commands all its battles through one batched ``predict`` per step.

    Args:
        pool: the opponent pool.
        snapshot_freq: environment steps between snapshots.
        vec_env: the training env (default: the model's).
        verbose: verbosity level.
        manifest: manifest for ``self_play_snapshot`` rows, or None.
        seed, curriculum_level, run_id, config_hash: manifest row fields; ``seed``
            also seeds the dealing of opponents.
        scripted_share: share of battles that keep their original opponent, in [0, 1].
        opponents_per_swap: different pool members dealt at each swap (>= 1).
        registry, agent_name: when given, each snapshot enters this Elo registry
            at the learner's current rating, named like its file.
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
        """Assign Red commanders to the training battles; returns member -> battles."""
        n = self._battles.num_envs
        order = self.rng.permutation(n)
        n_kept = int(round(self.scripted_share * n))
        kept, dealt = order[:n_kept], order[n_kept:]
        for i in kept:
            self._battles.env_method("set_red_policy", self._original[i], indices=[int(i)])
        assignment: dict[str, list[int]] = {}
        if self.pool.size and len(dealt):
            n_members = min(self.opponents_per_swap, self.pool.size)
            chosen = self.rng.choice(self.pool.size, size=n_members, replace=False)
            paths = self.pool.snapshot_paths
            for k, path_index in enumerate(chosen):
                battles = [int(i) for i in dealt[k::n_members]]
                member = self.pool.load(paths[int(path_index)])
                self._battles.env_method("set_red_policy", member, indices=battles)
                assignment[paths[int(path_index)].stem] = battles
        return assignment


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
        registry, agent_name: Elo registry and the learner's name in it.
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
        result = _play_pool(self.model, opponent, self.n_eval_episodes, self.deterministic,
                            self.seed, self.env_kwargs)
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
    """The self-play callbacks of a :class:`~training.config.TrainingConfig` run."""
    from training.ppo.battles import env_kwargs_for

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


# ---------------------------------------------------------------------------- MAPPO teams


def team_snapshot_name(version: int) -> str:
    """File name of team snapshot ``version`` (``team_snapshot_v000003.pt``)."""
    return f"team_snapshot_v{version:06d}.pt"


def team_version_of(path: Path) -> int:
    """The version in a team snapshot's file name."""
    return TeamOpponentPool.version_of(path)


class TeamOpponentPool(SnapshotPool):
    """Fixed-size pool of frozen MAPPO team snapshots, oldest evicted first.

    Each snapshot is a :func:`models.mappo_policy.save_policy` file
    ``team_snapshot_v{version:06d}.pt`` holding ``{"kwargs", "state_dict"}``,
    written atomically; loading reads tensors and plain values only
    (``weights_only=True``) and rebuilds ``MAPPOPolicy(**kwargs)``.

    An existing folder is reloaded: its snapshots in version order, the newest
    ``max_size`` kept. Unlike :class:`OpponentPool`, which leaves older files on
    disk, the snapshots beyond ``max_size`` are evicted (their files deleted),
    as the reference design does, so the folder holds what the pool holds; the
    deletions are logged. A file there that is not a team snapshot is reported
    (logged) and left alone. A kept snapshot that is not a readable torch file
    raises ``ValueError`` naming it (before anything is deleted); one that is
    readable but not a MAPPO policy raises when it is loaded.

    Every load returns a fresh policy in eval mode, so a caller may move or
    modify it without affecting the pool.

    Args:
        pool_dir: folder of the snapshots (created).
        max_size: snapshots kept (>= 1).

    Raises:
        ValueError: for ``max_size < 1`` or a corrupt snapshot.

    Attributes:
        pool_dir: the folder.
        max_size: the capacity.
    """

    pattern = TEAM_SNAPSHOT_PATTERN
    kind = "team pool"

    @classmethod
    def file_name(cls, version: int) -> str:
        return team_snapshot_name(version)

    def add(self, policy: MAPPOPolicy, version: int) -> Path:
        """Save ``policy`` as snapshot ``version``, then evict the oldest beyond ``max_size``.

        Args:
            policy: the team policy to freeze.
            version: its version, above every version in the pool.

        Returns:
            The snapshot's path.

        Raises:
            TypeError: if ``policy`` is not a MAPPOPolicy.
            ValueError: if ``version`` is not an integer above every version in the pool.
        """
        if not isinstance(policy, MAPPOPolicy):
            raise TypeError(f"policy={type(policy).__name__} is invalid: expected a "
                            "MAPPOPolicy")
        return self._add(version, lambda path: save_policy(policy, path, version=version))

    def load(self, path: str | Path, device: str | None = None) -> MAPPOPolicy:
        """The policy of snapshot ``path`` (a fresh copy, in eval mode).

        Raises:
            KeyError: if ``path`` is not in the pool.
            FileNotFoundError: if its file has disappeared.
            ValueError: if the file is not a readable MAPPO policy (the message names it).
        """
        return load_policy(self._member(path), device=device)

    def sample(self, rng: np.random.Generator | None = None,
               device: str | None = None) -> MAPPOPolicy | None:
        """A uniformly chosen snapshot, loaded; None if the pool is empty.

        Raises:
            ValueError: if the chosen snapshot is corrupt (the message names it).
        """
        path = self._pick(rng)
        return None if path is None else self.load(path, device=device)

    def sample_latest(self, device: str | None = None) -> MAPPOPolicy | None:
        """The newest snapshot, loaded; None if the pool is empty."""
        return self.load(self._paths[-1], device=device) if self._paths else None


# --- team evaluation ----------------------------------------------------------------

def evaluate_team_vs_pool(policy: MAPPOPolicy, opponent: MAPPOPolicy, n_blue: int = 2,
                          n_red: int = 2, n_episodes: int = 20, deterministic: bool = True,
                          seed: int | None = None,
                          env_kwargs: dict[str, Any] | None = None) -> float:
    """Blue's win rate when ``policy`` commands Blue and ``opponent`` Red.

    The battles are played as one batch of
    :class:`~envs.multi_battalion_batch.MultiBattalionBatch` (the batched
    :class:`~envs.multi_battalion_env.MultiBattalionEnv`); battle ``i`` is the
    first battle of seed ``seed + i``. Blue battalion ``i`` acts with actor
    ``i mod policy.n_agents``, Red's likewise with the opponent's; the opponent
    samples its actions (a frozen snapshot plays as it trained). A win means
    every Red battalion is out of the fight while a Blue one is still in it.

    Args:
        policy: the Blue :class:`~models.mappo_policy.MAPPOPolicy`.
        opponent: the frozen Red policy.
        n_blue, n_red: team sizes.
        n_episodes: number of battles (>= 1).
        deterministic: Blue acts on its policy's mean.
        seed: base seed (0 when None).
        env_kwargs: further MultiBattalionEnv settings.

    Returns:
        Win rate in [0, 1].

    Raises:
        ValueError: if ``n_episodes < 1``.
    """
    from training.mappo.battles import WIN, play_team_battles

    outcomes = play_team_battles(policy, opponent, n_blue=n_blue, n_red=n_red,
                                 n_episodes=n_episodes, deterministic=deterministic, seed=seed,
                                 env_kwargs=env_kwargs)
    return float((outcomes == WIN).mean())


def nash_exploitability_proxy(policy: MAPPOPolicy, pool: TeamOpponentPool, n_blue: int = 2,
                              n_red: int = 2, n_episodes_per_opponent: int = 10,
                              seed: int | None = None,
                              env_kwargs: dict[str, Any] | None = None) -> float:
    """How far the pool's best member beats ``policy`` compared with the average member.

    For every snapshot ``i`` the opponent's win rate ``owr_i`` is the share of
    battles Red *won* (a draw is nobody's win, unlike the reference, which
    counted draws for the opponent). The proxy is ``max(owr) - mean(owr)``: 0
    when no member does better than the others against the policy, large when one
    has found a weakness.

    Args:
        policy: the Blue policy.
        pool: the team pool; every snapshot in it is played.
        n_blue, n_red: team sizes.
        n_episodes_per_opponent: battles per snapshot (>= 1).
        seed: base seed; every snapshot meets the same battles.
        env_kwargs: further MultiBattalionEnv settings.

    Returns:
        The proxy in [0, 1]; 0.0 for an empty pool.
    """
    rates = pool_opponent_win_rates(policy, pool, n_blue, n_red, n_episodes_per_opponent, seed,
                                    env_kwargs)
    if not rates:
        return 0.0
    return max(rates) - float(np.mean(rates))


def pool_opponent_win_rates(policy: MAPPOPolicy, pool: TeamOpponentPool, n_blue: int = 2,
                            n_red: int = 2, n_episodes_per_opponent: int = 10,
                            seed: int | None = None,
                            env_kwargs: dict[str, Any] | None = None) -> list[float]:
    """Each snapshot's share of battles *won* against ``policy`` (oldest first; draws
    count for nobody). Arguments as for :func:`nash_exploitability_proxy`."""
    from training.mappo.battles import LOSS, play_team_battles

    check_int("n_episodes_per_opponent", n_episodes_per_opponent, minimum=1)
    rates = []
    for path in pool.snapshot_paths:
        outcomes = play_team_battles(policy, pool.load(path), n_blue=n_blue, n_red=n_red,
                                     n_episodes=n_episodes_per_opponent, seed=seed,
                                     env_kwargs=env_kwargs)
        rates.append(float((outcomes == LOSS).mean()))
    return rates
