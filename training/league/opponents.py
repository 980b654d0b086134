"""Whom a league role's learner meets, and what the league learns of each meeting.

:class:`LeagueOpponents` is the part of :class:`~training.league.role.LeagueRole` that
reads the league's pools, asks the matchmaker for each rollout's opponents, deals them
to the learner's battles and records every finished battle as a match.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from training.league.diversity import TrajectoryBatch, embed_trajectory
from training.league.matchmaking import SELF
from training.league.records import AgentRecord

PAYOFF_DECAY = 0.99
"""Weight of a match record relative to the next newer one of the same pair, as the
published league's payoff table decays its counts: old results fade."""

POLICY_CACHE_SIZE = 64
"""Members' frozen policies a role keeps loaded (snapshot files never change)."""


class LeagueOpponents:
    """The league as one role's learner sees it. The role provides ``trainer``, ``pool``
    and ``league_pools``, ``matches`` and ``own_matches``, ``matchmaker``, ``settings``,
    ``agent_id``, ``agent_type`` and ``rng``, and starts ``members``, ``dealt`` (id of a
    dealt policy -> its member's id) and ``policies`` (the loaded members) empty."""

    members: list[AgentRecord]
    dealt: dict[int, str]
    policies: dict[str, Any]

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
        records) over every pool's members; empty while the league has nobody this role
        may meet."""
        self.refresh()
        self.matches.refresh()
        return self.matchmaker.league_opponents(
            self.settings.matchmaking, self.agent_type, self.agent_id, self.members,
            self.win_rate, self.rng, self.settings.opponents_per_rollout)

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
        self.trainer.deal(policies, self.settings.scripted_share if policies else 1.0)

    def load(self, record: AgentRecord) -> Any:
        """A member's frozen policy (cached: snapshot files never change)."""
        cache = self.policies
        if record.agent_id not in cache:
            pools = (self.pool, *self.league_pools)
            owner = next((p for p in pools if record in p), self.pool)
            root = Path(os.path.commonpath([str(p.manifest_path.resolve().parent)
                                            for p in pools]))
            cache[record.agent_id] = self.trainer.load_snapshot(
                owner.resolve_snapshot(record, root=root))
            if len(cache) > POLICY_CACHE_SIZE:
                cache.pop(next(iter(cache)))
        return cache[record.agent_id]

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

    def record_training_games(self, rollout: Any) -> None:
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
        learner's side): in the league's match log, which the league reads (win rates,
        Nash, the report), then in the role's own copy (``own_matches``)."""
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


__all__ = ["LeagueOpponents", "PAYOFF_DECAY", "POLICY_CACHE_SIZE"]
