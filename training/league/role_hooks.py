"""The extras of a league role's loop, as hooks: snapshots, evaluation, checkpoints, the
run log with its pictures, and the status file.

:class:`~training.league.role.LeagueRole` calls each hook in the order of
:func:`role_hooks` after every update (each sees the metrics of those before it), and
once when the role ends (``done``, or ``stopped`` by a signal).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from storage.files import atomic_write_text, clean_stale_temporaries
from training.common.schedule import EveryNSteps
from training.elo import TEAM_BASELINE_RATINGS
from training.league.diversity import diversity_score
from training.league.layout import STATUS_FILE
from training.league.matchmaking import nash_weights
from training.league.nash import nash_entropy
from training.league.records import AgentRecord
from training.mappo.battles import WIN, score

logger = logging.getLogger(__name__)


class RoleHook:
    """Something a league role calls around its loop; override what you need."""

    def on_start(self, role: Any) -> None:
        """Once the role is built (resumed or new), before its first rollout."""

    def on_update_end(self, role: Any, metrics: dict[str, Any]) -> None:
        """After each rollout and update; add to ``metrics`` to have them logged."""

    def on_end(self, role: Any, state: str) -> None:
        """When the role ends: ``state`` is ``done`` (its budget trained) or ``stopped``."""


class ResumeHook(RoleHook):
    """First as the role starts: its state from its checkpoint and its folder, so that
    what a run killed at any moment left behind is recognised and finished."""

    def on_start(self, role: Any) -> None:
        resumed = (role.trainer.resumed_extra or {}).get("league_role")
        if resumed is not None:
            role.load_state_dict(resumed)
        # A run killed mid-write leaves temporaries where the trainer does not clean (it
        # cleans its checkpoint folder): the snapshots' folder and the shared files'.
        for folder in {role.snapshot_dir, role.role_dir, role.matches.db_path.parent,
                       Path(role.elo.path).parent}:
            clean_stale_temporaries(folder)
        role.refresh()
        own = [r for r in role.pool.list() if r.metadata.get("parent_agent_id") == role.agent_id]
        # Snapshots taken after the checkpoint survive the crash: never reuse a version.
        role.version = max([role.version, *(r.version for r in own)])
        role.last_snapshot_step = max([-1, *(r.metadata.get("step", -1) for r in own)])
        # A kill between a snapshot's pool entry and its Elo rating: rate it now.
        ratings = role.elo.all_ratings()
        unrated = [r.agent_id for r in own if r.agent_id not in ratings]
        for agent_id in unrated:
            role.elo.set_rating(agent_id, role.elo.get_rating(role.agent_id))
        if unrated:
            role.elo.save()
        initial = f"{role.agent_id}_v{0:06d}"
        if initial in role.pool:
            if role.warm_started:
                role.initial_state = role.trainer.snapshot_weights(
                    role.pool.resolve_snapshot(initial))
        else:
            add_snapshot(role, 0, None)  # the initial weights, a member from the start
            role.refresh()


class SnapshotHook(RoleHook):
    """Adds the learner to the role's pool every ``snapshot_freq`` steps, and once more
    when the role finishes unless it just did."""

    def on_start(self, role: Any) -> None:
        self.due = EveryNSteps(role.settings.snapshot_freq, role.trainer.total_steps)

    def on_update_end(self, role: Any, metrics: dict[str, Any]) -> None:
        if self.due(role.trainer.total_steps):
            role.snapshot()
        metrics["league/pool_size"] = len(role.members)
        metrics[f"{role.metric_prefix}/snapshot_version"] = role.version

    def on_end(self, role: Any, state: str) -> None:
        if state == "done" and role.last_snapshot_step != role.trainer.total_steps:
            role.snapshot()


class EvaluationHook(RoleHook):
    """Every ``eval_freq`` steps: :func:`evaluate`, the role's own
    :meth:`~training.league.role.LeagueRole.after_evaluation`, and a row of the role's
    history (:func:`record_history`)."""

    def on_start(self, role: Any) -> None:
        self.due = EveryNSteps(role.settings.eval_freq, role.trainer.total_steps)

    def on_update_end(self, role: Any, metrics: dict[str, Any]) -> None:
        if self.due(role.trainer.total_steps):
            evaluation = role.evaluate()
            metrics.update(evaluation)
            metrics.update(role.after_evaluation(evaluation))
            record_history(role, metrics)


class CheckpointHook(RoleHook):
    """The resumable checkpoint every ``checkpoint_freq`` steps and when the role ends;
    the final one when it is done."""

    def on_start(self, role: Any) -> None:
        self.due = EveryNSteps(role.settings.checkpoint_freq, role.trainer.total_steps)

    def on_update_end(self, role: Any, metrics: dict[str, Any]) -> None:
        if self.due(role.trainer.total_steps):
            role.save(role.checkpoint_dir / role.trainer.CHECKPOINT_NAME)

    def on_end(self, role: Any, state: str) -> None:
        trainer = role.trainer
        role.save(role.checkpoint_dir / trainer.CHECKPOINT_NAME)
        if state == "done":
            trainer.final_checkpoint = role.save(role.checkpoint_dir /
                                                 trainer.FINAL_CHECKPOINT_NAME)


class RunLogHook(RoleHook):
    """Every update's numbers to the role's run log, a log line every ``log_interval``
    steps; when the role ends, the log closed and the pictures drawn
    (:func:`write_pictures`)."""

    def on_start(self, role: Any) -> None:
        self.due = EveryNSteps(role.settings.log_interval, role.trainer.total_steps)

    def on_update_end(self, role: Any, metrics: dict[str, Any]) -> None:
        step = role.trainer.total_steps
        role.run_log.log(metrics, step)
        if self.due(step):
            logger.info("%s step %d: win rate %.2f, Elo %.0f, pool %d, resets %d",
                        role.agent_id, step, metrics.get("rollout/win_rate", float("nan")),
                        role.elo.get_rating(role.agent_id), len(role.members),
                        role.reset_count)

    def on_end(self, role: Any, state: str) -> None:
        role.run_log.close()
        role.trainer.close()
        write_pictures(role)


class StatusHook(RoleHook):
    """:data:`~training.league.layout.STATUS_FILE`: ``training`` from the start and after
    every update, then ``done`` or ``stopped`` (:func:`write_status`)."""

    def on_start(self, role: Any) -> None:
        write_status(role, "training")

    def on_update_end(self, role: Any, metrics: dict[str, Any]) -> None:
        role.last_metrics = metrics
        write_status(role, "training")

    def on_end(self, role: Any, state: str) -> None:
        write_status(role, state)


def role_hooks() -> list[RoleHook]:
    """A role's hooks, in the order it calls them."""
    return [ResumeHook(), SnapshotHook(), EvaluationHook(), CheckpointHook(), RunLogHook(),
            StatusHook()]


def evaluate(role: Any) -> dict[str, Any]:
    """Matches of ``role``'s learner against the dealt members and the anchors, both
    sides acting on their policy's mean (a sampling opponent is a weaker one): match
    records, Elo (both sides move), Nash and diversity; the ``eval/``, ``matchup/``,
    ``elo/`` and ``league/`` metrics."""
    trainer, step = role.trainer, role.trainer.total_steps
    metrics: dict[str, Any] = {"eval/step": step}
    before = role.elo.get_rating(role.agent_id)
    members = {r.agent_id: r for r in role.members}
    opponents = {name: role.load(members[name]) for name in role.evaluation_opponents()}
    opponents.update(trainer.anchors())
    # All matches at once: on the Ray workers when the run is distributed.
    played = trainer.play_matches(opponents, role.settings.n_eval_episodes,
                                  trainer.config.seed + step, opponent_deterministic=True)
    for name, outcomes in played.items():
        result = score(outcomes)
        role.record_match(name, result, {"step": step, "games": len(outcomes),
                                         "kind": "evaluation"})
        role.elo.update_pair(role.agent_id, name, result, n_games=len(outcomes))
        metrics[f"matchup/win_rate/{name}"] = float((outcomes == WIN).mean())
        metrics[f"matchup/mean_win_rate/{name}"] = role.win_rate(name)
    role.elo.save()
    rating = role.elo.get_rating(role.agent_id)
    metrics[f"elo/{role.agent_type.value}"] = rating
    metrics["elo/delta"] = rating - before
    role.nash = nash_weights(role.members, role.matches.win_rate)
    # The whole league's distribution: the ``nash`` rule draws from every pool, and
    # select_opponent renormalises over its own pool's candidates anyway.
    role.matchmaker.set_nash_weights(role.nash or None)
    metrics["league/nash_entropy"] = nash_entropy(list(role.nash.values())) \
        if role.nash else 0.0
    embeddings = [r.metadata["embedding"] for r in role.members if "embedding" in r.metadata]
    metrics["league/diversity_score"] = diversity_score(
        np.array([*embeddings, role.behaviour()])) if embeddings else 0.0
    return metrics


def add_snapshot(role: Any, version: int, extra: dict[str, Any] | None) -> AgentRecord:
    """``role``'s learner as version ``version`` of its pool (its file written
    atomically, never over a member's), rated at the learner's Elo."""
    trainer, agent_id = role.trainer, role.agent_id
    name = f"{role.agent_type.value}_{agent_id}_v{version:06d}{trainer.SNAPSHOT_SUFFIX}"
    # A member's file never changes: refused before a byte is written.
    role.pool.check_new_snapshot((role.snapshot_dir / name).resolve(),
                                 f"{agent_id}_v{version:06d}")
    path = trainer.save_snapshot(role.snapshot_dir / name, version)
    metadata = {"parent_agent_id": agent_id, "step": trainer.total_steps,
                **role.snapshot_metadata(), **(extra or {})}
    embedding = role.behaviour()
    if embedding is not None:
        metadata["embedding"] = [round(float(v), 6) for v in embedding]
    record = role.pool.add(os.path.relpath(path.resolve(), role.role_dir.resolve()),
                           role.agent_type, agent_id=f"{agent_id}_v{version:06d}",
                           version=version, metadata=metadata, force=True)
    # A snapshot enters the table at its learner's rating, then plays for itself.
    role.elo.set_rating(record.agent_id, role.elo.get_rating(agent_id))
    role.elo.save()
    role.last_snapshot_step = trainer.total_steps
    return record


def record_history(role: Any, metrics: dict[str, Any]) -> None:
    """One evaluation in the role's ``history.jsonl``: the step, every Elo rating of the
    league (the anchors' are fixed), the Nash distribution and ``metrics``' numbers (the
    league report's source, :mod:`training.league.report`)."""
    role.run_log.append_history({
        "time": time.time(), "agent_id": role.agent_id, "role": role.agent_type.value,
        "step": role.trainer.total_steps, "elo": role.elo.all_ratings(),
        "nash": role.nash or {}, "metrics": finite_numbers(metrics)})


def write_pictures(role: Any) -> list[Path]:
    """The role's pictures from its TensorBoard files, beside them
    (:func:`training.plots.write_run_plots`) and, when the role lies in a league
    directory (its folder beside the match log), the league's report
    (:func:`training.league.report.write_league_report`). A picture that fails is logged
    and does not fail the role; returns the paths written."""
    anchors = {name: TEAM_BASELINE_RATINGS[name] for name in role.trainer.anchors()
               if name in TEAM_BASELINE_RATINGS}
    written = role.run_log.draw_plots(anchors)
    league_dir = role.role_dir.parent
    if role.matches.db_path.parent.resolve() == league_dir.resolve():
        from training.league.report import write_league_report

        try:
            written.append(write_league_report(league_dir))
        except Exception:
            logger.exception("could not write the league report of %s; `python -m "
                             "training.league.report %s` writes it later", league_dir,
                             league_dir)
    return written


def write_status(role: Any, state: str) -> None:
    """Replace the role's status file (atomically) with where it stands: ``state``
    (``training``, ``stopped`` or ``done``), its process, step, budget, Elo and last
    metrics."""
    trainer = role.trainer
    atomic_write_text(role.role_dir / STATUS_FILE, json.dumps({
        "state": state, "pid": os.getpid(), "time": time.time(),
        "agent_id": role.agent_id, "role": role.agent_type.value,
        "step": trainer.total_steps, "total_timesteps": trainer.config.total_timesteps,
        "elo": role.elo.get_rating(role.agent_id), "pool_size": len(role.members),
        "reset_count": role.reset_count, "metrics": finite_numbers(role.last_metrics)},
        sort_keys=True) + "\n")


def finite_numbers(metrics: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of ``metrics``, as plain floats (JSON's)."""
    return {key: float(value) for key, value in metrics.items()
            if isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            and math.isfinite(value)}


__all__ = ["CheckpointHook", "EvaluationHook", "ResumeHook", "RoleHook", "RunLogHook",
           "SnapshotHook",
           "StatusHook", "add_snapshot", "evaluate", "finite_numbers", "record_history",
           "role_hooks", "write_pictures", "write_status"]
