"""A league role: a learner that meets the league's members, one rollout at a time.

:class:`LeagueRole` drives a :class:`~training.common.learner.Learner` (a
:class:`~training.mappo.trainer.MAPPOTrainer`, or an
:class:`~training.league.echelon_learner.EchelonLearner`). Each rollout::

    self.deal(self.choose_opponents())          # asked of the matchmaker, over every pool
    rollout = trainer.collect_rollout()         # only the learner's side is recorded
    metrics = trainer.learn_from(rollout)       # GAE and the PPO epochs
    self.record_training_games(rollout)         # outcomes -> the shared match log
    for hook in self.hooks: hook.on_update_end(self, metrics)

Snapshots, evaluation, checkpoints, the run log and the status file are hooks
(:mod:`training.league.role_hooks`); whom the learner meets is
:class:`~training.league.opponents.LeagueOpponents` (``docs/league.md``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from storage.files import FolderLock
from training.common.learner import Learner, missing_members
from training.common.run_log import RunLog
from training.elo import TeamEloRegistry
from training.league.agent_pool import AgentPool
from training.league.layout import (
    ELO_FILE,
    HISTORY_FILE,
    MATCHES_FILE,
    POOL_FILE,
    SNAPSHOT_FOLDER,
)
from training.league.match_database import MatchDatabase
from training.league.matchmaker import LeagueMatchmaker
from training.league.opponents import PAYOFF_DECAY, LeagueOpponents
from training.league.pfsp import make_pfsp_weight_fn
from training.league.records import AgentRecord, AgentType
from training.league.role_config import LeagueFiles, RoleSettings, claim_role_folder
from training.league.role_hooks import RoleHook, add_snapshot, evaluate, role_hooks
from training.mappo.trainer import MAPPOTrainer

logger = logging.getLogger(__name__)


class LeagueRole(LeagueOpponents):
    """One role of the league, training a learner (module docstring).

    Args:
        trainer: the learner, a :class:`~training.common.learner.Learner`; its members
            are its snapshots (policy files, or the echelon commanders' SB3 archives).
        files: the league's files the role uses.
        settings: how the role trains.
        run: a W&B run to log to, or None.
        folder_lock: the claim on the role's folder (its pool manifest's), already held
            (:func:`claim_role_folder`); None: the role claims it first thing.

    Raises:
        TypeError: if ``trainer`` is not a :class:`~training.common.learner.Learner`.
        ValueError: for a ``folder_lock`` of another folder or not held.
        storage.files.FolderInUseError: if another process (or another role of this
            one) owns the role's folder, naming its pid; nothing was written.
    """

    agent_type: ClassVar[AgentType] = AgentType.MAIN_AGENT

    def __init__(self, trainer: Learner, files: LeagueFiles, settings: RoleSettings, *,
                 run: Any = None, folder_lock: FolderLock | None = None) -> None:
        if not isinstance(trainer, Learner):
            raise TypeError(f"trainer={trainer!r} is invalid: expected a Learner (a "
                            "MAPPOTrainer or an EchelonLearner); it lacks "
                            f"{', '.join(missing_members(trainer))}")
        folder = files.pool.manifest_path.parent
        if folder_lock is None:
            folder_lock = claim_role_folder(folder)
        elif not isinstance(folder_lock, FolderLock) or not folder_lock.held or \
                folder_lock.folder.resolve() != folder.resolve():
            raise ValueError(f"folder_lock={folder_lock!r} is invalid: expected the held "
                             f"claim on the role's folder {folder} (claim_role_folder)")
        self.folder_lock = folder_lock
        """The claim on :attr:`role_dir`, held until the role ends (:meth:`close`)."""
        try:
            self.trainer, self.settings = trainer, settings
            self.pool, self.matches = files.pool, files.matches
            self.matchmaker, self.elo = files.matchmaker, files.elo
            own = folder / MATCHES_FILE
            self.own_matches = None if own.resolve() == \
                Path(files.matches.db_path).resolve() else MatchDatabase(own)
            """The learner's own matches in its folder, or None when the league's log is
            that file."""
            self.agent_id = settings.agent_id
            self.snapshot_dir = Path(settings.snapshot_dir)
            self.checkpoint_dir = Path(settings.checkpoint_dir or trainer.config.checkpoint_dir)
            self.league_pools = [AgentPool(path) for path in settings.league_pools]
            self.matchmaker.set_weight_function(make_pfsp_weight_fn(settings.pfsp_temperature))
            self.rng = trainer.rng
            self.version = self.reset_count = 0
            self.last_snapshot_step = -1
            self.nash: dict[str, float] | None = None
            self.members: list[AgentRecord] = []
            self.dealt: dict[int, str] = {}
            self.policies: dict[str, Any] = {}
            self.last_metrics: dict[str, Any] = {}
            self.run_log = RunLog(self.log_folder, run=run,
                                  history_file=self.role_dir / HISTORY_FILE)
            """TensorBoard in :attr:`log_folder`, the W&B run, ``history.jsonl``, the
            pictures."""
            self.hooks: list[RoleHook] = role_hooks()
            self.initial_state = copy.deepcopy(trainer.policy.state_dict())
            self.warm_started = trainer.total_steps > 0 or trainer.warm_started
            for hook in self.hooks:
                hook.on_start(self)
        except BaseException:
            folder_lock.release()  # nothing of the role is left to own it
            raise

    @classmethod
    def from_config(cls, config: Any, *, resume: str | Path | None = None,
                    run: Any = None, folder_lock: FolderLock | None = None) -> LeagueRole:
        """The role a config describes, its files opened; ``resume`` is a checkpoint to
        continue. The role's folder is claimed before the learner is built, so a second
        copy is refused before it writes anything (``folder_lock``: that claim, held).

        Raises:
            storage.files.FolderInUseError: if another process owns the folder.
        """
        if folder_lock is None:
            folder_lock = claim_role_folder(Path(config.pool_manifest).parent)
        try:
            trainer = MAPPOTrainer(config, resume=resume)
            pool = AgentPool(config.pool_manifest, config.pool_max_size)
            matches = MatchDatabase(config.match_db_path)
            matchmaker = LeagueMatchmaker(pool, matches,
                                          unknown_win_rate=config.unknown_win_rate)
            return cls(trainer, pool, matches, matchmaker,
                       TeamEloRegistry(config.elo_registry_path),
                       agent_id=config.agent_id, snapshot_dir=config.snapshot_dir,
                       snapshot_freq=config.snapshot_freq, eval_freq=config.eval_freq,
                       n_eval_episodes=config.n_eval_episodes, log_interval=config.log_interval,
                       checkpoint_dir=config.checkpoint_dir,
                       checkpoint_freq=config.checkpoint_freq, run=run,
                       folder_lock=folder_lock, **cls.role_kwargs(config))
        except BaseException:
            folder_lock.release()
            raise

    @classmethod
    def in_league(cls, trainer: Learner, league_dir: str | Path, *, agent_id: str | None = None,
                  **kwargs: Any) -> LeagueRole:
        """This role training ``trainer`` in the league folder ``league_dir``
        (:mod:`training.league.layout`): its pool, snapshots and checkpoints in
        ``<league_dir>/<role>/``, the match log and the Elo file shared at the top.
        ``agent_id`` defaults to ``<role>_001``; ``kwargs`` are the role's other
        arguments (``league_pools``, ``matchmaking``, the frequencies...)."""
        role, league_dir = cls.agent_type.value, Path(league_dir)
        pool = AgentPool(league_dir / role / POOL_FILE)
        matches = MatchDatabase(league_dir / MATCHES_FILE)
        return cls(trainer, pool, matches, LeagueMatchmaker(pool, matches),
                   TeamEloRegistry(league_dir / ELO_FILE), agent_id=agent_id or f"{role}_001",
                   snapshot_dir=league_dir / role / SNAPSHOT_FOLDER,
                   checkpoint_dir=league_dir / role, **kwargs)

    @classmethod
    def role_kwargs(cls, config: Any) -> dict[str, Any]:
        """The keyword arguments of this role's constructor that its config gives."""
        return dict(league_pools=config.league_pools(), matchmaking=config.matchmaking,
                    pfsp_temperature=config.pfsp_temperature,
                    opponents_per_rollout=config.opponents_per_rollout,
                    scripted_share=config.scripted_share)

    # --- the loop ------------------------------------------------------------------------

    def learn(self, stop: Callable[[], bool] | None = None) -> LeagueRole:
        """Rollouts and updates until the trainer's ``total_timesteps``; then
        :meth:`finish`. ``stop`` is asked before every rollout (the command line's
        answers whether a SIGINT or SIGTERM came); once it says True the role writes its
        resumable checkpoint and its status ``stopped``, and returns unfinished
        (:attr:`done` False); ``resume.auto=true`` continues it."""
        self.own_folder()
        while not self.done:
            if stop is not None and stop():
                self._end("stopped")
                logger.info("%s stopped at step %d (checkpoint written)", self.agent_id,
                            self.trainer.total_steps)
                return self
            self.train_step()
        return self.finish()

    @property
    def done(self) -> bool:
        """Whether the trainer's ``total_timesteps`` is trained (whole rollouts: the last
        may pass it)."""
        return self.trainer.total_steps >= self.trainer.config.total_timesteps

    def train_step(self) -> dict[str, Any]:
        """One rollout against the league and one update; returns its metrics."""
        self.own_folder()
        self.deal(self.choose_opponents())
        rollout = self.trainer.collect_rollout()
        metrics = self.trainer.learn_from(rollout)
        self.record_training_games(rollout)
        for hook in self.hooks:
            hook.on_update_end(self, metrics)
        return metrics

    def finish(self) -> LeagueRole:
        """The final snapshot (unless one was taken at this step), the checkpoints (the
        resumable one too, so that ``resume.auto`` finds the role finished), the
        pictures and the status ``done``."""
        self._end("done")
        return self

    def _end(self, state: str) -> None:
        self.own_folder()
        for hook in self.hooks:
            hook.on_end(self, state)
        self.close()

    def own_folder(self) -> None:
        """Claim :attr:`role_dir` again if the role gave it up (:meth:`close`) and is
        used again; nothing while it holds the claim.

        Raises:
            storage.files.FolderInUseError: if another process owns it meanwhile.
        """
        self.folder_lock.acquire()

    def close(self) -> None:
        """Give up the claim on :attr:`role_dir` (the role's end does): another process
        may train this role's folder from now on."""
        self.folder_lock.release()

    # --- snapshots, evaluation, resets ------------------------------------------------------

    @property
    def metric_prefix(self) -> str:
        return self.agent_type.value

    def snapshot(self, extra_metadata: dict[str, Any] | None = None) -> AgentRecord:
        """Add the learner's current weights to the role's pool as the next version."""
        self.own_folder()
        self.version += 1
        return add_snapshot(self, self.version, extra_metadata)

    def snapshot_metadata(self) -> dict[str, Any]:
        """Extra metadata of this role's snapshots (the exploiters' reset count)."""
        return {}

    def evaluation_opponents(self) -> list[str]:
        """Member ids evaluated against: those dealt in the last rollout."""
        return sorted({name for name in self.dealt.values() if name != self.agent_id})

    def evaluate(self) -> dict[str, Any]:
        """Evaluation matches, Elo, Nash and diversity
        (:func:`training.league.role_hooks.evaluate`)."""
        return evaluate(self)

    def after_evaluation(self, evaluation: dict[str, Any]) -> dict[str, Any]:
        """What the role does after an evaluation whose metrics are ``evaluation`` (the
        exploiters reset); its own metrics."""
        return {}

    def reset_weights(self) -> None:
        """Back to the run's initial weights if it started from trained ones (a warm
        start), else fresh orthogonal weights on every linear layer (gain 1, zero
        bias); Adam's state cleared either way."""
        policy = self.trainer.policy
        if self.warm_started:
            policy.load_state_dict(self.initial_state)
        else:
            for module in policy.modules():
                if isinstance(module, torch.nn.Linear):
                    torch.nn.init.orthogonal_(module.weight, gain=1.0)
                    torch.nn.init.zeros_(module.bias)
        self.trainer.optimizer.state.clear()
        self.trainer.optimizer.zero_grad(set_to_none=True)
        self.reset_count += 1

    # --- folders and persistence ---------------------------------------------------------

    @property
    def role_dir(self) -> Path:
        """The role's folder in the league directory (its pool manifest's)."""
        return self.pool.manifest_path.parent

    @property
    def log_folder(self) -> Path:
        """The folder of the role's TensorBoard files (and pictures)."""
        return Path(self.trainer.config.log_dir) / self.agent_id

    def state_dict(self) -> dict[str, Any]:
        """The role's counters and reset state, kept in its checkpoints."""
        return {"version": self.version, "reset_count": self.reset_count,
                "warm_started": self.warm_started}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.version = int(state["version"])
        self.reset_count = int(state["reset_count"])
        self.warm_started = bool(state["warm_started"])

    def save(self, path: Path) -> Path:
        """A resumable checkpoint of the learner and of the role, written atomically."""
        return self.trainer.save(path, extra={"league_role": self.state_dict()})


def train_in_turns(roles: Sequence[LeagueRole]) -> list[LeagueRole]:
    """Train league roles in one process: each rollout goes to the role furthest behind
    its budget (the smallest share of its ``total_timesteps`` done), until none has a
    rollout left; then every role finishes (:meth:`LeagueRole.finish`).

    Args:
        roles: the roles, on one league directory (they share its files as separate
            processes would), each holding the claim on its own folder until it finishes.

    Returns:
        ``roles``, trained, as a list.

    Raises:
        ValueError: if ``roles`` is empty.
    """
    roles = list(roles)
    if not roles:
        raise ValueError("roles=[] is invalid: expected at least one LeagueRole")

    def done_share(role: LeagueRole) -> float:
        return role.trainer.total_steps / role.trainer.config.total_timesteps

    while not all(role.done for role in roles):
        min((role for role in roles if not role.done), key=done_share).train_step()
    for role in roles:
        role.finish()
    return roles


__all__ = ["LeagueFiles", "LeagueRole", "PAYOFF_DECAY", "RoleSettings", "claim_role_folder",
           "train_in_turns"]
