"""Who a league role plays next: the three matchmaking rules, in one place.

Every rule (:data:`MATCHMAKING`, :func:`choose`) picks opponents for one role from the
league's members (the records of every role's pool), given the role's win rate against
each of them (:class:`Matchup`): ``pfsp`` (the reference API's rules, PFSP with a
temperature for the main agent and the league exploiter, the newest main-agent snapshot
for the main exploiter), ``nash`` (draws from the Nash distribution of the league's
payoff matrix over the members the role may meet, :func:`nash_weights`; the ``pfsp`` rule
while there is none) and ``alphastar`` (the published rules, REFERENCE §M). The draws
are :data:`SELF` (the learner's own current weights) or records. A role asks for them
through its :class:`~training.league.matchmaker.LeagueMatchmaker`, whose PFSP weighting
and Nash weights the rules use; every PFSP draw is
:func:`~training.league.pfsp.pfsp_choice`. ``docs/league_training_guide.md``
("Matchmaking") gives each rule in full.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from training.league.nash import build_payoff_matrix, compute_nash_distribution
from training.league.pfsp import WeightFn, make_pfsp_weight_fn, pfsp_choice
from training.league.records import AgentRecord, AgentType

MATCHMAKING = ("pfsp", "nash", "alphastar")
"""The matchmaking rules a role can use."""
SELF = "self"
"""A draw meaning: the learner's own current weights (AlphaStar's self-play)."""

# The published rules' constants (REFERENCE §M).
MAIN_PFSP_SHARE = 0.5
MAIN_VERIFICATION_SHARE = 0.15
EXPLOITER_LOSS_LINE = 0.3
"""Verification: the main agent meets main exploiters it beats less often than this."""
FORGETTING_LINE = 0.7
"""Verification: the main agent meets past selves it beats less often than this."""
SELF_PLAY_LINE = 0.3
"""The main agent plays itself while it wins more than this against itself."""
MAIN_EXPLOITER_LINE = 0.1
"""The main exploiter plays the main agent while it wins more than this against it."""


@dataclass
class Matchup:
    """What a rule needs to choose: the role, the members it can see, its win rates.

    Attributes:
        role: the focal role.
        focal_id: the live learner's id (its lineage's ``parent_agent_id``).
        members: every record of the league, oldest first.
        win_rate: the learner's win rate against a member id, or against
            :data:`SELF`; 0.5 when nothing is known.
        rng: the role's generator.
        pfsp_weighting: the ``pfsp`` rule's weighting (the role's matchmaker's:
            :func:`~training.league.pfsp.make_pfsp_weight_fn` of its temperature).
        nash: member id -> Nash weight, for the ``nash`` rule (None: not yet known).
    """

    role: AgentType
    focal_id: str
    members: Sequence[AgentRecord]
    win_rate: Callable[[str], float]
    rng: np.random.Generator
    pfsp_weighting: WeightFn = field(default_factory=make_pfsp_weight_fn)
    nash: Mapping[str, float] | None = None

    def eligible(self) -> list[AgentRecord]:
        """The members this role may meet: not its own live record; a main exploiter
        only main agents; a league exploiter nothing of its own lineage."""
        out = [r for r in self.members if r.agent_id != self.focal_id]
        if self.role is AgentType.MAIN_EXPLOITER:
            out = [r for r in out if r.agent_type is AgentType.MAIN_AGENT]
        elif self.role is AgentType.LEAGUE_EXPLOITER:
            out = [r for r in out if r.metadata.get("parent_agent_id") != self.focal_id]
        return out

    def pfsp(self, records: Sequence[AgentRecord],
             weighting: str | Callable[[float], float]) -> AgentRecord | None:
        """One of ``records`` drawn by PFSP with ``weighting`` (None if empty)."""
        if not records:
            return None
        index = pfsp_choice([self.win_rate(r.agent_id) for r in records], weighting, self.rng)
        return records[index]


def choose(rule: str, matchup: Matchup) -> AgentRecord | str | None:
    """One opponent for ``matchup``'s role under ``rule``: a record, :data:`SELF`, or
    None when the league holds nobody the role may meet yet.

    Raises:
        ValueError: for a rule not in :data:`MATCHMAKING`.
    """
    if rule == "pfsp":
        return _pfsp(matchup)
    if rule == "nash":
        return _nash(matchup)
    if rule == "alphastar":
        return _alphastar(matchup)
    raise ValueError(f"matchmaking={rule!r} is invalid: expected one of {', '.join(MATCHMAKING)}")


def _pfsp(m: Matchup) -> AgentRecord | None:
    candidates = m.eligible()
    if m.role is AgentType.MAIN_EXPLOITER:
        return candidates[-1] if candidates else None
    return m.pfsp(candidates, m.pfsp_weighting)


def _nash(m: Matchup) -> AgentRecord | None:
    candidates = m.eligible()
    if not candidates:
        return None
    weights = np.array([max(m.nash.get(r.agent_id, 0.0), 0.0) if m.nash else 0.0
                        for r in candidates])
    if weights.sum() <= 1e-12:  # before the first solution, or all mass elsewhere
        return _pfsp(m)
    return candidates[int(m.rng.choice(len(candidates), p=weights / weights.sum()))]


def _alphastar(m: Matchup) -> AgentRecord | str | None:
    candidates = m.eligible()
    mains = [r for r in candidates if r.agent_type is AgentType.MAIN_AGENT]
    if m.role is AgentType.MAIN_AGENT:
        draw = m.rng.random()
        if draw < MAIN_PFSP_SHARE:
            return m.pfsp(candidates, "squared") or SELF
        if draw < MAIN_PFSP_SHARE + MAIN_VERIFICATION_SHARE:
            verification = _verification(m, candidates)
            if verification is not None:
                return verification
        if m.win_rate(SELF) > SELF_PLAY_LINE or not mains:
            return SELF
        return m.pfsp(mains, "variance")
    if m.role is AgentType.MAIN_EXPLOITER:
        if not mains:
            return None
        if m.win_rate(mains[-1].agent_id) > MAIN_EXPLOITER_LINE:
            return mains[-1]
        return m.pfsp(mains, "variance")
    return m.pfsp(candidates, "linear_capped")


def _verification(m: Matchup, candidates: Sequence[AgentRecord]) -> AgentRecord | None:
    """Main exploiters the main agent loses to, else past selves it is forgetting."""
    exploiters = [r for r in candidates if r.agent_type is AgentType.MAIN_EXPLOITER]
    if exploiters and min(m.win_rate(r.agent_id) for r in exploiters) < EXPLOITER_LOSS_LINE:
        return m.pfsp(exploiters, "squared")
    own = [r for r in candidates if r.metadata.get("parent_agent_id") == m.focal_id]
    rates = [m.win_rate(r.agent_id) for r in own]
    own = own[:monotonic_prefix_length(rates)]
    if own and min(m.win_rate(r.agent_id) for r in own) < FORGETTING_LINE:
        return m.pfsp(own, "squared")
    return None


def monotonic_prefix_length(win_rates: Sequence[float]) -> int:
    """How many of a lineage's snapshots (oldest first) the forgetting check keeps.

    Win rates that fall steadily towards the newest snapshots are what learning
    looks like (newer selves are harder), not forgetting: that trailing run is
    dropped, up to and excluding the last snapshot beaten less than its successor.
    """
    for i in range(len(win_rates) - 1, 0, -1):
        if win_rates[i - 1] < win_rates[i]:
            return i + 1
    return 0


def nash_weights(members: Sequence[AgentRecord],
                 win_rate: Callable[[str, str], float | None]) -> dict[str, float]:
    """The Nash distribution of the league's payoff matrix, as weights on its members.

    The players are the members and the live learners whose snapshots they are
    (``metadata.parent_agent_id``): the match records are mostly a live learner
    against a member. A live learner's weight goes to its newest snapshot, the
    member that plays as it does now.

    Args:
        members: the league's records, oldest first.
        win_rate: ``win_rate(a, b)`` from the match records, or None when unknown.

    Returns:
        member id -> weight (summing to 1), empty for an empty league.
    """
    ids = [r.agent_id for r in members]
    if not ids:
        return {}
    newest = {r.metadata["parent_agent_id"]: r.agent_id for r in members
              if isinstance(r.metadata.get("parent_agent_id"), str)}
    live = sorted(set(newest) - set(ids))
    players = ids + live
    payoff = build_payoff_matrix(players, win_rate_fn=win_rate)
    weights = dict(zip(players, compute_nash_distribution(payoff).tolist(), strict=True))
    for learner in live:
        weights[newest[learner]] += weights.pop(learner)
    return weights


__all__ = ["MATCHMAKING", "Matchup", "SELF", "choose", "make_pfsp_weight_fn",
           "monotonic_prefix_length", "nash_weights"]
