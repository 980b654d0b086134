"""A league role: a learner that meets the league's members, one rollout at a time.

:class:`LeagueRole` drives a learner (:class:`~training.common.learner.Learner`, the
protocol of what it calls): a :class:`~training.mappo.trainer.MAPPOTrainer`
(battalion commanders), or an :class:`~training.league.echelon_learner.EchelonLearner`
(brigade or division commanders, whose members command Red's echelon). It reads top to
bottom, once per rollout::

    opponents = self.choose_opponents()        # asked of the matchmaker, over every pool
    self.deal(opponents)                        # who commands Red in which battle
    rollout = trainer.collect_rollout()         # only the learner's side is recorded
    metrics = trainer.learn_from(rollout)       # GAE and the PPO epochs
    self.record_training_games(rollout)         # outcomes -> the shared match log
    snapshot / evaluate (Elo, Nash, diversity, reset) / checkpoint / log

The three roles (:mod:`training.league.train_main_agent`,
:mod:`~training.league.train_exploiter`, :mod:`~training.league.train_league_exploiter`)
differ in their type, their metric names and what they do after an evaluation
(:meth:`LeagueRole.after_evaluation`: the exploiters' resets).

The league is the union of every role's pool (the role writes its own and reads
the others'), one match log and one Elo file shared by all, with the scripted
anchors ``scripted_team_l5`` and ``doctrine_team`` at fixed ratings. Every file
is shared safely between processes (:mod:`storage.files`), and a role killed at
any moment resumes from its checkpoint with its counters, reset state and
generators (:meth:`LeagueRole.state_dict`).

A role folder has one owner: a role claims its folder (:func:`claim_role_folder`,
an OS-level lock on :data:`~training.league.layout.ROLE_LOCK_FILE` that dies with its
process) before it writes anything there, and keeps the claim until it finishes or
stops; a second copy of the role is refused at once, naming the owner's pid. And a
snapshot file is never rewritten once the pool records it
(:meth:`~training.league.agent_pool.AgentPool.check_new_snapshot`).
"""

from __future__ import annotations

import copy
import gc
import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from storage.files import FolderInUseError, FolderLock, atomic_write_text, clean_stale_temporaries
from training.common.learner import Learner, missing_members
from training.common.run_log import RunLog
from training.common.schedule import EveryNSteps
from training.elo import TEAM_BASELINE_RATINGS, TeamEloRegistry
from training.league.agent_pool import AgentPool
from training.league.diversity import TrajectoryBatch, diversity_score, embed_trajectory
from training.league.layout import (
    ELO_FILE,
    HISTORY_FILE,
    MATCHES_FILE,
    POOL_FILE,
    ROLE_LOCK_FILE,
    SNAPSHOT_FOLDER,
    STATUS_FILE,
)
from training.league.match_database import MatchDatabase
from training.league.matchmaker import LeagueMatchmaker
from training.league.matchmaking import MATCHMAKING, SELF, nash_weights
from training.league.nash import nash_entropy
from training.league.pfsp import make_pfsp_weight_fn
from training.league.records import AgentRecord, AgentType
from training.mappo.battles import WIN, score
from training.mappo.trainer import MAPPOTrainer

logger = logging.getLogger(__name__)

PAYOFF_DECAY = 0.99
"""Weight of a match record relative to the next newer one of the same pair, as the
published league's payoff table decays its counts: old results fade."""


class LeagueRole:
    """One role of the league, training a learner (module docstring).

    Args:
        trainer: the learner, a :class:`~training.common.learner.Learner`: a
            :class:`~training.mappo.trainer.MAPPOTrainer` or an
            :class:`~training.league.echelon_learner.EchelonLearner` (built from the
            role's config; resumed if a checkpoint exists). Its members are its
            snapshots: policy files, or the echelon commanders' SB3 archives.
        agent_pool: the role's own pool: its snapshots go here.
        match_database: the league's match log (shared by the roles). The role also
            appends its learner's matches to its own folder's :data:`MATCHES_FILE`
            (:attr:`own_matches`) unless that is the same file.
        matchmaker: the seeds' matchmaker over the role's pool: the role sets its
            weight function (PFSP with ``pfsp_temperature``) and its Nash weights, and
            asks it for the opponents of every rollout
            (:meth:`~training.league.matchmaker.LeagueMatchmaker.league_opponents`).
        elo_registry: the league's team Elo registry (shared by the roles).
        agent_id: the live learner's id (snapshots are ``{agent_id}_v{version:06d}``).
        snapshot_dir: folder of the snapshot files.
        snapshot_freq, eval_freq, checkpoint_freq: env-steps between snapshots,
            evaluations and checkpoints.
        n_eval_episodes: battles per evaluation match, played as one batch.
        log_interval: env-steps between training log lines.
        checkpoint_dir: folder of the role's checkpoints (the trainer's
            ``checkpoint_dir`` when None).
        league_pools: the other roles' pool manifests, read before every rollout.
        matchmaking: ``pfsp``, ``nash`` or ``alphastar``
            (:mod:`training.league.matchmaking`).
        pfsp_temperature: the ``pfsp`` rule's temperature.
        opponents_per_rollout: opponents drawn per rollout, each commanding Red in an
            equal share of the battles not kept scripted.
        scripted_share: share of the training battles against scripted Red.
        run: a W&B run to log to, or None.
        folder_lock: the claim on the role's folder (its pool manifest's), already
            held (:func:`claim_role_folder`, taken by :meth:`from_config` before the
            learner is built); None: the role claims it first thing.

    Raises:
        TypeError: if ``trainer`` is not a :class:`~training.common.learner.Learner`.
        ValueError: for an unknown ``matchmaking`` or a bad frequency, or a
            ``folder_lock`` of another folder or not held.
        storage.files.FolderInUseError: if another process (or another role of this
            one) owns the role's folder, naming its pid; nothing was written.
    """

    agent_type: ClassVar[AgentType] = AgentType.MAIN_AGENT

    def __init__(self, trainer: Learner, agent_pool: AgentPool,
                 match_database: MatchDatabase, matchmaker: LeagueMatchmaker,
                 elo_registry: TeamEloRegistry, agent_id: str, snapshot_dir: str | Path,
                 snapshot_freq: int = 100_000, eval_freq: int = 50_000,
                 n_eval_episodes: int = 20, log_interval: int = 2_000,
                 checkpoint_dir: str | Path | None = None, checkpoint_freq: int = 100_000, *,
                 league_pools: Sequence[str | Path] = (), matchmaking: str = "pfsp",
                 pfsp_temperature: float = 1.0, opponents_per_rollout: int = 4,
                 scripted_share: float = 0.0, run: Any = None,
                 folder_lock: FolderLock | None = None) -> None:
        if not isinstance(trainer, Learner):
            raise TypeError(f"trainer={trainer!r} is invalid: expected a Learner (a "
                            "MAPPOTrainer or an EchelonLearner); it lacks "
                            f"{', '.join(missing_members(trainer))}")
        if matchmaking not in MATCHMAKING:
            raise ValueError(f"matchmaking={matchmaking!r} is invalid: expected one of "
                             f"{', '.join(MATCHMAKING)}")
        folder = agent_pool.manifest_path.parent
        if folder_lock is None:
            folder_lock = claim_role_folder(folder)
        elif not isinstance(folder_lock, FolderLock) or not folder_lock.held or \
                folder_lock.folder.resolve() != folder.resolve():
            raise ValueError(f"folder_lock={folder_lock!r} is invalid: expected the held "
                             f"claim on the role's folder {folder} (claim_role_folder)")
        self.folder_lock = folder_lock
        """The claim on :attr:`role_dir`, held until the role finishes or stops
        (:meth:`close`)."""
        try:
            self.trainer, self.pool, self.matches = trainer, agent_pool, match_database
            own = agent_pool.manifest_path.parent / MATCHES_FILE
            self.own_matches = None if own.resolve() == \
                Path(match_database.db_path).resolve() else MatchDatabase(own)
            """The learner's own matches, in its folder (where the league tutorial reads the
            main agent's: ``checkpoints/league/main_agent/matches.jsonl``), or None when
            the league's log is that file."""
            self.matchmaker, self.elo = matchmaker, elo_registry
            self.agent_id = agent_id
            self.snapshot_dir = Path(snapshot_dir)
            self.checkpoint_dir = Path(checkpoint_dir or trainer.config.checkpoint_dir)
            self.snapshot_freq, self.eval_freq = snapshot_freq, eval_freq
            self.checkpoint_freq, self.log_interval = checkpoint_freq, log_interval
            self.n_eval_episodes = n_eval_episodes
            self.league_pools = [AgentPool(path) for path in league_pools]
            self.matchmaking = matchmaking
            self.opponents_per_rollout = opponents_per_rollout
            self.scripted_share = scripted_share
            self.run = run
            matchmaker.set_weight_function(make_pfsp_weight_fn(pfsp_temperature))
            self.rng = trainer.rng
            self.version = 0
            self.reset_count = 0
            self.nash: dict[str, float] | None = None
            self.members: list[AgentRecord] = []
            self.dealt: dict[int, str] = {}  # id(policy) -> opponent id, for the last deal
            self.last_metrics: dict[str, Any] = {}
            self.run_log = RunLog(self.log_folder, run=run,
                                  history_file=self.role_dir / HISTORY_FILE)
            """TensorBoard in :attr:`log_folder`, the W&B run, ``history.jsonl``, the
            pictures."""
            self._policies: dict[str, Any] = {}
            self._initial_state = copy.deepcopy(trainer.policy.state_dict())
            self._warm_started = trainer.total_steps > 0 or trainer.warm_started
            self._start()
        except BaseException:
            folder_lock.release()  # nothing of the role is left to own it
            raise

    @classmethod
    def from_config(cls, config: Any, *, resume: str | Path | None = None,
                    run: Any = None, folder_lock: FolderLock | None = None) -> LeagueRole:
        """The role a config describes, its files opened; ``resume`` is a checkpoint to
        continue (:func:`~training.mappo.checkpoints.resolve_resume` finds it).

        The role's folder (``config.pool_manifest``'s) is claimed before the learner is
        built (``folder_lock``, if given, is that claim, held), so a second copy is
        refused before it writes anything.

        Raises:
            storage.files.FolderInUseError: if another process owns the folder, naming
                its pid.
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
        """This role training ``trainer`` (a learner built in Python: an
        :class:`~training.league.echelon_learner.EchelonLearner`, or a MAPPOTrainer) in
        the league folder ``league_dir`` (:mod:`training.league.layout`): its pool,
        snapshots and checkpoints in ``<league_dir>/<role>/``, the match log and the Elo
        file shared at the top. ``agent_id`` defaults to ``<role>_001``; ``kwargs`` are
        the role's other arguments (``league_pools``: the other roles' pool manifests,
        ``matchmaking``, the frequencies...). The role claims ``<league_dir>/<role>/``
        before it writes there (:func:`claim_role_folder`); another process training
        that folder is refused (:class:`storage.files.FolderInUseError`)."""
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
        :meth:`finish`.

        ``stop`` is asked before every rollout (the command line's answers whether a
        SIGINT or SIGTERM came, :func:`training.league.launch.run_role`). Once it says
        True the role writes its resumable checkpoint (the learner's ``CHECKPOINT_NAME``)
        and its status
        ``stopped``, and returns unfinished (:attr:`done` False); ``resume.auto=true``
        continues it.
        """
        self.own_folder()
        while not self.done:
            if stop is not None and stop():
                self.save(self.checkpoint_dir / self.trainer.CHECKPOINT_NAME)
                self.run_log.close()
                self.trainer.close()
                self.write_pictures()
                self.write_status("stopped")
                self.close()
                logger.info("%s stopped at step %d (checkpoint written)", self.agent_id,
                            self.trainer.total_steps)
                return self
            self.train_step()
        return self.finish()

    @property
    def done(self) -> bool:
        """Whether the trainer's ``total_timesteps`` is trained (whole rollouts: the last
        may pass it)."""
        trainer = self.trainer
        return trainer.total_steps >= trainer.config.total_timesteps

    def finish(self) -> LeagueRole:
        """The final snapshot (unless one was taken at this step), the checkpoints
        (the resumable one too, so that ``resume.auto`` finds the role finished), the
        pictures (:meth:`write_pictures`) and the status file saying so."""
        self.own_folder()
        trainer = self.trainer
        if self._last_snapshot_step != trainer.total_steps:
            self.snapshot()
        self.save(self.checkpoint_dir / trainer.CHECKPOINT_NAME)
        trainer.final_checkpoint = self.save(self.checkpoint_dir / trainer.FINAL_CHECKPOINT_NAME)
        self.run_log.close()
        self.trainer.close()
        self.write_pictures()
        self.write_status("done")
        self.close()
        return self

    def own_folder(self) -> None:
        """Claim :attr:`role_dir` again if the role gave it up (:meth:`close`) and is
        used again; nothing while it holds the claim.

        Raises:
            storage.files.FolderInUseError: if another process owns it meanwhile.
        """
        self.folder_lock.acquire()

    def close(self) -> None:
        """Give up the claim on :attr:`role_dir` (:meth:`finish` and a stop do): another
        process may train this role's folder from now on. The claim dies with the
        process anyway; a later :meth:`learn`, :meth:`train_step`, :meth:`snapshot` or
        :meth:`finish` claims it again."""
        self.folder_lock.release()

    def train_step(self) -> dict[str, Any]:
        """One rollout against the league and one update; returns its metrics."""
        self.own_folder()
        trainer = self.trainer
        self.deal(self.choose_opponents())
        rollout = trainer.collect_rollout()
        metrics = trainer.learn_from(rollout)
        self.record_training_games(rollout)
        step = trainer.total_steps
        if self.snapshot_due(step):
            self.snapshot()
        metrics["league/pool_size"] = len(self.members)
        metrics[f"{self.metric_prefix}/snapshot_version"] = self.version
        if self.evaluation_due(step):
            evaluation = self.evaluate()
            metrics.update(evaluation)
            metrics.update(self.after_evaluation(evaluation))
            self.record_history(metrics)
        if self.checkpoint_due(step):
            self.save(self.checkpoint_dir / trainer.CHECKPOINT_NAME)
        self._log(metrics, step)
        self.last_metrics = metrics
        self.write_status("training")
        return metrics

    # --- who the learner meets ---------------------------------------------------------------

    def refresh(self) -> list[AgentRecord]:
        """Re-read every pool: the league's members, oldest first, each id once."""
        seen: dict[str, AgentRecord] = {}
        for pool in (self.pool, *self.league_pools):
            pool.reload()
            for record in pool.list():
                seen.setdefault(record.agent_id, record)
        self.members = sorted(seen.values(), key=lambda r: r.created_at)
        return self.members

    def choose_opponents(self) -> list[AgentRecord | str]:
        """``opponents_per_rollout`` draws of the matchmaking rule (:data:`SELF` or
        records), asked of the role's matchmaker
        (:meth:`~training.league.matchmaker.LeagueMatchmaker.league_opponents`) over
        every pool's members; empty while the league has nobody this role may meet."""
        self.refresh()
        self.matches.refresh()
        return self.matchmaker.league_opponents(
            self.matchmaking, self.agent_type, self.agent_id, self.members, self.win_rate,
            self.rng, self.opponents_per_rollout)

    def deal(self, opponents: Sequence[AgentRecord | str]) -> None:
        """Let ``opponents`` command Red in equal shares of the battles that are not kept
        scripted (all battles scripted when there are none)."""
        policies, self.dealt = [], {}
        for opponent in opponents:
            if opponent == SELF:
                policy, name = self.trainer.frozen_copy(), self.agent_id
            else:
                policy, name = self.load(opponent), opponent.agent_id
            policies.append(policy)
            self.dealt[id(policy)] = name
        self.trainer.deal(policies, self.scripted_share if policies else 1.0)

    def load(self, record: AgentRecord) -> Any:
        """A member's frozen policy (cached: snapshot files never change)."""
        if record.agent_id not in self._policies:
            owner = next((p for p in (self.pool, *self.league_pools) if record in p), self.pool)
            root = _common_folder([self.pool.manifest_path, *(p.manifest_path
                                                              for p in self.league_pools)])
            self._policies[record.agent_id] = self.trainer.load_snapshot(
                owner.resolve_snapshot(record, root=root))
            if len(self._policies) > 64:  # a long league: keep the cache bounded
                self._policies.pop(next(iter(self._policies)))
        return self._policies[record.agent_id]

    def win_rate(self, opponent_id: str) -> float:
        """The learner's recent win rate against ``opponent_id``: its match records'
        mean score, each weighted :data:`PAYOFF_DECAY` per newer record; 0.5 unknown."""
        if opponent_id == SELF:
            opponent_id = self.agent_id
        results = self.matches.results_for(self.agent_id, opponent_id)
        if not results:
            return 0.5
        weights = PAYOFF_DECAY ** np.arange(len(results) - 1, -1, -1)
        games = np.array([r.metadata.get("games", 1) for r in results], float)
        outcomes = np.array([r.outcome for r in results])
        return float(np.sum(weights * games * outcomes) / np.sum(weights * games))

    def opponent_of_battles(self) -> np.ndarray:
        """(n_envs,) the id of who commands Red in each training battle."""
        trainer = self.trainer
        names = np.full(trainer.config.n_envs, trainer.scripted_opponent_id, dtype=object)
        for policy, index in trainer.opponent_battles():
            names[index] = self.dealt[id(policy)]
        return names

    # --- what the league learns from a rollout --------------------------------------------

    def record_training_games(self, rollout) -> None:
        """Each opponent's finished battles of the rollout, as one match record."""
        if not rollout.scores:
            return
        names = self.opponent_of_battles()[np.asarray(rollout.episode_battles)]
        scores = np.asarray(rollout.scores)
        for name in np.unique(names):
            mine = scores[names == name]
            self.record_match(str(name), float(mine.mean()), {
                "step": self.trainer.total_steps, "games": len(mine), "kind": "training"})

    def record_match(self, opponent_id: str, outcome: float, metadata: dict[str, Any]) -> None:
        """One match of the learner against ``opponent_id`` (its mean score, from the
        learner's side): in the league's match log, then in the role's own
        (:attr:`own_matches`). The league's log is the one the league reads (win
        rates, Nash, the report); the role's is a copy for a reader of one role."""
        self.matches.record(self.agent_id, opponent_id, outcome, metadata=metadata)
        if self.own_matches is not None:
            self.own_matches.record(self.agent_id, opponent_id, outcome, metadata=metadata)

    def behaviour(self) -> np.ndarray | None:
        """The learner's behaviour embedding, from battle 0 of the last rollout (its
        first battalion's orders and position; a commander's commands and his
        battalions' mean position), None before the first."""
        trajectory = self.trainer.behaviour_trajectory()
        if trajectory is None:
            return None
        actions, positions = trajectory
        return embed_trajectory(TrajectoryBatch(actions, positions, self.agent_id))

    # --- snapshots, evaluation, resets ------------------------------------------------------

    @property
    def metric_prefix(self) -> str:
        return self.agent_type.value

    def snapshot(self, extra_metadata: dict[str, Any] | None = None) -> AgentRecord:
        """Add the learner's current weights to the role's pool as the next version."""
        self.own_folder()
        self.version += 1
        return self._add_snapshot(self.version, extra_metadata)

    def _add_snapshot(self, version: int, extra: dict[str, Any] | None) -> AgentRecord:
        name = f"{self.agent_type.value}_{self.agent_id}_v{version:06d}" \
            f"{self.trainer.SNAPSHOT_SUFFIX}"
        # A member's file never changes: refused before a byte is written.
        self.pool.check_new_snapshot((self.snapshot_dir / name).resolve(),
                                     f"{self.agent_id}_v{version:06d}")
        path = self.trainer.save_snapshot(self.snapshot_dir / name, version)
        metadata = {"parent_agent_id": self.agent_id, "step": self.trainer.total_steps,
                    **self.snapshot_metadata(), **(extra or {})}
        embedding = self.behaviour()
        if embedding is not None:
            metadata["embedding"] = [round(float(v), 6) for v in embedding]
        record = self.pool.add(_relative(path, self.pool.manifest_path.parent),
                               self.agent_type, agent_id=f"{self.agent_id}_v{version:06d}",
                               version=version, metadata=metadata, force=True)
        # A snapshot enters the table at its learner's rating, then plays for itself.
        self.elo.set_rating(record.agent_id, self.elo.get_rating(self.agent_id))
        self.elo.save()
        self._last_snapshot_step = self.trainer.total_steps
        return record

    def snapshot_metadata(self) -> dict[str, Any]:
        """Extra metadata of this role's snapshots (the exploiters' reset count)."""
        return {}

    def evaluation_opponents(self) -> list[str]:
        """Member ids evaluated against: those dealt in the last rollout."""
        return sorted({name for name in self.dealt.values() if name != self.agent_id})

    def evaluate(self) -> dict[str, Any]:
        """Matches against the dealt members and the anchors, both sides acting on their
        policy's mean (a fair game: a sampling opponent is a weaker one): match records,
        Elo (both sides move), Nash and diversity."""
        trainer, step = self.trainer, self.trainer.total_steps
        metrics: dict[str, Any] = {"eval/step": step}
        before = self.elo.get_rating(self.agent_id)
        members = {r.agent_id: r for r in self.members}
        opponents = {name: self.load(members[name]) for name in self.evaluation_opponents()}
        opponents.update(trainer.anchors())
        # All matches at once: on the Ray workers when the run is distributed.
        played = trainer.play_matches(opponents, self.n_eval_episodes, trainer.config.seed + step,
                                      opponent_deterministic=True)
        for name, outcomes in played.items():
            result = score(outcomes)
            self.record_match(name, result, {
                "step": step, "games": len(outcomes), "kind": "evaluation"})
            self.elo.update_pair(self.agent_id, name, result, n_games=len(outcomes))
            metrics[f"matchup/win_rate/{name}"] = float((outcomes == WIN).mean())
            metrics[f"matchup/mean_win_rate/{name}"] = self.win_rate(name)
        self.elo.save()
        rating = self.elo.get_rating(self.agent_id)
        metrics[f"elo/{self.agent_type.value}"] = rating
        metrics["elo/delta"] = rating - before
        self.nash = nash_weights(self.members, self.matches.win_rate)
        # The whole league's distribution: the ``nash`` rule draws from every pool, and
        # select_opponent renormalises over its own pool's candidates anyway.
        self.matchmaker.set_nash_weights(self.nash or None)
        metrics["league/nash_entropy"] = nash_entropy(list(self.nash.values())) \
            if self.nash else 0.0
        embeddings = [r.metadata["embedding"] for r in self.members if "embedding" in
                      r.metadata]
        metrics["league/diversity_score"] = diversity_score(
            np.array([*embeddings, self.behaviour()])) if embeddings else 0.0
        return metrics

    def after_evaluation(self, evaluation: dict[str, Any]) -> dict[str, Any]:
        """What the role does after an evaluation whose metrics are ``evaluation`` (the
        exploiters reset); its own metrics."""
        return {}

    def reset_weights(self) -> None:
        """Back to the run's initial weights if it started from trained ones (a warm
        start), else fresh orthogonal weights on every linear layer (gain 1, zero
        bias); Adam's state cleared either way."""
        policy = self.trainer.policy
        if self._warm_started:
            policy.load_state_dict(self._initial_state)
        else:
            for module in policy.modules():
                if isinstance(module, torch.nn.Linear):
                    torch.nn.init.orthogonal_(module.weight, gain=1.0)
                    torch.nn.init.zeros_(module.bias)
        self.trainer.optimizer.state.clear()
        self.trainer.optimizer.zero_grad(set_to_none=True)
        self.reset_count += 1

    # --- what people and the launcher read ------------------------------------------------

    @property
    def role_dir(self) -> Path:
        """The role's folder in the league directory (its pool manifest's)."""
        return self.pool.manifest_path.parent

    def record_history(self, metrics: dict[str, Any]) -> None:
        """Append one evaluation to :data:`HISTORY_FILE`: the step, every Elo rating of
        the league (the anchors' are fixed), the Nash distribution and ``metrics``'
        numbers (the report's source, :mod:`training.league.report`), through the run
        log (:meth:`~training.common.run_log.RunLog.append_history`)."""
        self.run_log.append_history({
            "time": time.time(), "agent_id": self.agent_id, "role": self.agent_type.value,
            "step": self.trainer.total_steps, "elo": self.elo.all_ratings(),
            "nash": self.nash or {}, "metrics": _numbers(metrics)})

    @property
    def log_folder(self) -> Path:
        """The folder of the role's TensorBoard files (and pictures)."""
        return Path(self.trainer.config.log_dir) / self.agent_id

    def write_pictures(self) -> list[Path]:
        """The role's pictures from its TensorBoard files, beside them (learning curves
        with the win rate against each opponent, Elo with the anchors, coordination,
        losses: :func:`training.plots.write_run_plots`) and, when the role lies in a
        league directory (its folder beside the match log), the league's report
        (:func:`training.league.report.write_league_report`: Elo, payoff, Nash,
        diversity). A picture that fails is logged and does not fail the role.

        Returns:
            The paths written.
        """
        anchors = {name: TEAM_BASELINE_RATINGS[name] for name in self.trainer.anchors()
                   if name in TEAM_BASELINE_RATINGS}
        written = self.run_log.draw_plots(anchors)
        league_dir = self.role_dir.parent
        if self.matches.db_path.parent.resolve() == league_dir.resolve():
            from training.league.report import write_league_report

            try:
                written.append(write_league_report(league_dir))
            except Exception:
                logger.exception("could not write the league report of %s; `python -m "
                                 "training.league.report %s` writes it later", league_dir,
                                 league_dir)
        return written

    def write_status(self, state: str) -> None:
        """Replace :data:`STATUS_FILE` (atomically) with where the role stands: ``state``
        (``training``, ``stopped`` or ``done``), its process, step, budget, Elo and last metrics."""
        trainer = self.trainer
        atomic_write_text(self.role_dir / STATUS_FILE, json.dumps({
            "state": state, "pid": os.getpid(), "time": time.time(),
            "agent_id": self.agent_id, "role": self.agent_type.value,
            "step": trainer.total_steps, "total_timesteps": trainer.config.total_timesteps,
            "elo": self.elo.get_rating(self.agent_id), "pool_size": len(self.members),
            "reset_count": self.reset_count, "metrics": _numbers(self.last_metrics)},
            sort_keys=True) + "\n")

    # --- persistence ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The role's counters and reset state, kept in its checkpoints."""
        return {"version": self.version, "reset_count": self.reset_count,
                "warm_started": self._warm_started}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.version = int(state["version"])
        self.reset_count = int(state["reset_count"])
        self._warm_started = bool(state["warm_started"])

    def save(self, path: Path) -> Path:
        """A resumable checkpoint of the learner and of the role, written atomically."""
        return self.trainer.save(path, extra={"league_role": self.state_dict()})

    def _start(self) -> None:
        trainer = self.trainer
        resumed = (trainer.resumed_extra or {}).get("league_role")
        if resumed is not None:
            self.load_state_dict(resumed)
        # A run killed mid-write leaves temporaries where the trainer does not clean (it
        # cleans its checkpoint folder): the snapshots' folder and the shared files'.
        for folder in {self.snapshot_dir, self.role_dir, self.matches.db_path.parent,
                       Path(self.elo.path).parent}:
            clean_stale_temporaries(folder)
        self.refresh()
        own = [r for r in self.pool.list() if r.metadata.get("parent_agent_id") == self.agent_id]
        # Snapshots taken after the checkpoint survive the crash: never reuse a version.
        self.version = max([self.version, *(r.version for r in own)])
        self._last_snapshot_step = max([-1, *(r.metadata.get("step", -1) for r in own)])
        # A kill between a snapshot's pool entry and its Elo rating: rate it now.
        ratings = self.elo.all_ratings()
        unrated = [r.agent_id for r in own if r.agent_id not in ratings]
        for agent_id in unrated:
            self.elo.set_rating(agent_id, self.elo.get_rating(self.agent_id))
        if unrated:
            self.elo.save()
        initial = f"{self.agent_id}_v{0:06d}"
        if initial in self.pool:
            if self._warm_started:
                self._initial_state = self.trainer.snapshot_weights(
                    self.pool.resolve_snapshot(initial))
        else:
            self._add_snapshot(0, None)  # the initial weights, a member from the start
            self.refresh()
        start = trainer.total_steps
        self.snapshot_due = EveryNSteps(self.snapshot_freq, start)
        self.evaluation_due = EveryNSteps(self.eval_freq, start)
        self.checkpoint_due = EveryNSteps(self.checkpoint_freq, start)
        self._log_due = EveryNSteps(self.log_interval, start)
        self.write_status("training")

    def _log(self, metrics: dict[str, Any], step: int) -> None:
        self.run_log.log(metrics, step)
        if self._log_due(step):
            logger.info("%s step %d: win rate %.2f, Elo %.0f, pool %d, resets %d", self.agent_id,
                        step, metrics.get("rollout/win_rate", float("nan")),
                        self.elo.get_rating(self.agent_id), len(self.members), self.reset_count)


def claim_role_folder(folder: str | Path) -> FolderLock:
    """The claim on the role folder ``folder`` (:data:`~training.league.layout.ROLE_LOCK_FILE`
    in it, created with the folder if missing), held: one process trains a role folder at
    a time. The OS frees it when the process ends, however it ends.

    A role this process dropped holds its claim until Python's cycle collector frees it
    (a role's objects refer to each other), so when this process is the holder it
    collects once and tries again: a role still in use keeps its claim.

    Raises:
        storage.files.FolderInUseError: if another process, or a role of this one still
            in use, holds it, naming the pid.
    """
    lock = FolderLock(folder, ROLE_LOCK_FILE, "league role folder")
    try:
        return lock.acquire()
    except FolderInUseError as error:
        if error.pid != os.getpid():
            raise
    gc.collect()
    return lock.acquire()


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


def _numbers(metrics: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of ``metrics``, as plain floats (JSON's)."""
    return {key: float(value) for key, value in metrics.items()
            if isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            and math.isfinite(value)}


def _relative(path: Path, folder: Path) -> str:
    """``path`` relative to ``folder`` (so a league folder can be moved)."""
    return os.path.relpath(path.resolve(), folder.resolve())


def _common_folder(paths: Sequence[Path]) -> Path:
    """The deepest folder holding the folders of all ``paths``."""
    return Path(os.path.commonpath([str(Path(p).resolve().parent) for p in paths]))


__all__ = ["LeagueRole", "PAYOFF_DECAY", "claim_role_folder", "train_in_turns"]
