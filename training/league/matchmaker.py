"""Opponent selection for league training: PFSP by default, Nash weights on demand.

:class:`LeagueMatchmaker` picks opponents among the eligible ones (AlphaStar's roles: a
main agent and a league exploiter may face every type, a main exploiter only main
agents, the focal agent never itself). With Nash weights set
(:meth:`LeagueMatchmaker.set_nash_weights`, :func:`make_nash_weight_fn`) an opponent's
weight is its Nash probability (0 if absent); otherwise PFSP weighs it by the focal
agent's win rate against it, with a named weighting (``"squared"`` by default) or a
callable, an opponent never played counting as ``unknown_win_rate``. Negative weights
count as 0, and weights summing to less than 1e-10 give a uniform choice. The league's
roles ask the same object for the opponents of every rollout
(:meth:`LeagueMatchmaker.league_opponents`: the rules of
:mod:`training.league.matchmaking`). ``docs/league.md`` ("PFSP weightings") has the
details.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from training.league.agent_pool import AgentPool, AgentRecord, AgentType
from training.league.match_database import MatchDatabase
from training.league.matchmaking import MATCHMAKING, Matchup, choose
from training.league.pfsp import (
    DEFAULT_PFSP_WEIGHTING,
    PFSP_WEIGHTINGS,
    UNIFORM_FALLBACK_THRESHOLD,
    WeightFn,
    get_pfsp_weighting,
    pfsp_choice,
    pfsp_probabilities,
)

logger = logging.getLogger(__name__)

# PFSP_WEIGHTINGS is re-exported so that the weightings are found next to the matchmaker.
__all__ = [
    "ELIGIBLE_OPPONENT_TYPES",
    "PFSP_WEIGHTINGS",
    "LeagueMatchmaker",
    "make_nash_weight_fn",
]

#: Opponent types each focal agent type may be matched against.
ELIGIBLE_OPPONENT_TYPES: Mapping[AgentType, tuple[AgentType, ...]] = {
    AgentType.MAIN_AGENT: tuple(AgentType),
    AgentType.MAIN_EXPLOITER: (AgentType.MAIN_AGENT,),
    AgentType.LEAGUE_EXPLOITER: tuple(AgentType),
}


def _check_nash_weights(weights: Mapping[str, float]) -> dict[str, float]:
    if not isinstance(weights, Mapping):
        raise TypeError(
            f"nash weights {weights!r} have type {type(weights).__name__}: expected a dict "
            "{agent_id: probability}"
        )
    checked: dict[str, float] = {}
    for agent_id, value in weights.items():
        if not isinstance(agent_id, str):
            raise TypeError(f"nash weights key {agent_id!r} is not an agent id string")
        if isinstance(value, (bool, str)) or not hasattr(value, "__float__"):
            raise TypeError(f"nash weight for {agent_id!r} is {value!r}: expected a number >= 0")
        number = float(value)
        if not math.isfinite(number) or number < 0.0:
            raise ValueError(
                f"nash weight for {agent_id!r} is {number}: expected a finite number >= 0"
            )
        checked[agent_id] = number
    return checked


def make_nash_weight_fn(weights: Mapping[str, float]) -> Callable[[str], float]:
    """Return ``f(agent_id) -> weight`` for a Nash distribution (0 for absent ids).

    Args:
        weights: ``{agent_id: probability}``, values finite and >= 0.

    Raises:
        ValueError, TypeError: If a weight is negative, not finite or not a number.
    """
    table = _check_nash_weights(weights)

    def nash_weight(agent_id: str) -> float:
        return table.get(agent_id, 0.0)

    return nash_weight


class LeagueMatchmaker:
    """Chooses opponents for a focal agent from an :class:`AgentPool`.

    Args:
        agent_pool: The pool to draw opponents from.
        match_database: Source of the focal agent's win rates.
        unknown_win_rate: Win rate assumed against an opponent never played,
            in [0, 1].
        pfsp_weight_fn: PFSP weighting name (``"squared"``, ``"variance"``,
            ``"linear"``, ``"linear_capped"``), a callable
            ``f(win_rate) -> weight``, or None for ``"squared"``.

    Raises:
        TypeError: If the pool lacks ``get``/``list`` or the database lacks
            ``win_rates_for``.
        ValueError: If ``unknown_win_rate`` is outside [0, 1] or the weighting
            name is unknown.
    """

    make_nash_weight_fn = staticmethod(make_nash_weight_fn)

    def __init__(
        self,
        agent_pool: AgentPool,
        match_database: MatchDatabase,
        unknown_win_rate: float = 0.5,
        pfsp_weight_fn: str | WeightFn | None = None,
    ) -> None:
        # Duck-typed, so that a trainer may pass a view over several pools.
        for name, obj, needed, kind in (
            ("agent_pool", agent_pool, ("get", "list"), "an AgentPool"),
            ("match_database", match_database, ("win_rates_for",), "a MatchDatabase"),
        ):
            missing = [m for m in needed if not callable(getattr(obj, m, None))]
            if missing:
                raise TypeError(
                    f"{name} has type {type(obj).__name__} without {', '.join(missing)}(): "
                    f"expected {kind}"
                )
        if isinstance(unknown_win_rate, bool) or not isinstance(unknown_win_rate, (int, float)):
            raise TypeError(f"unknown_win_rate={unknown_win_rate!r} is not a number in [0, 1]")
        if not 0.0 <= float(unknown_win_rate) <= 1.0:
            raise ValueError(f"unknown_win_rate={unknown_win_rate!r} is invalid: expected [0, 1]")
        self.agent_pool = agent_pool
        self.match_database = match_database
        self.unknown_win_rate = float(unknown_win_rate)
        self._weighting: str | WeightFn = DEFAULT_PFSP_WEIGHTING
        self._weight_fn: WeightFn = get_pfsp_weighting(None)
        self._nash: dict[str, float] | None = None
        self.set_weight_function(pfsp_weight_fn)

    # ------------------------------------------------------------ weighting

    @property
    def weight_function(self) -> WeightFn:
        """The PFSP weighting callable in use."""
        return self._weight_fn

    @property
    def weighting_name(self) -> str | None:
        """Name of the PFSP weighting in use, or None for a custom callable."""
        return self._weighting if isinstance(self._weighting, str) else None

    @property
    def nash_weights(self) -> dict[str, float] | None:
        """The Nash weights in use (a copy), or None when PFSP is active."""
        return None if self._nash is None else dict(self._nash)

    def set_weight_function(self, fn: str | WeightFn | None) -> None:
        """Choose the PFSP weighting.

        Args:
            fn: A name from ``PFSP_WEIGHTINGS`` (``"squared"``, ``"variance"``,
                ``"linear"``, ``"linear_capped"``), a callable
                ``f(win_rate) -> weight``, or None to revert to the default
                ``"squared"`` (hard-first).

        Raises:
            ValueError: If the name is unknown.
            TypeError: If ``fn`` is neither a name, a callable nor None.
        """
        self._weight_fn = get_pfsp_weighting(fn)
        self._weighting = DEFAULT_PFSP_WEIGHTING if fn is None else fn
        logger.debug("matchmaker PFSP weighting set to %r", self._weighting)

    def set_nash_weights(self, weights: Mapping[str, float] | None) -> None:
        """Sample by Nash probabilities instead of PFSP, or revert with None.

        Args:
            weights: ``{agent_id: probability}`` (values finite and >= 0;
                renormalised over the eligible opponents, absent ids weigh
                0), or None to return to PFSP.

        Raises:
            ValueError, TypeError: If a weight is negative, not finite or not a number.
        """
        self._nash = None if weights is None else _check_nash_weights(weights)

    # ------------------------------------------------------------ selection

    def _eligible(
        self, focal_agent_id: str, candidate_types: Iterable[AgentType | str] | None
    ) -> list[AgentRecord]:
        focal = self.agent_pool.get(focal_agent_id)  # KeyError names the pool
        if candidate_types is None:
            allowed = set(ELIGIBLE_OPPONENT_TYPES[focal.agent_type])
        else:
            if isinstance(candidate_types, (str, AgentType)):
                candidate_types = [candidate_types]
            allowed = {AgentType.from_str(t) for t in candidate_types}
        return [
            r
            for r in self.agent_pool.list()
            if r.agent_id != focal.agent_id and r.agent_type in allowed
        ]

    def _nash_probabilities(
        self, focal_agent_id: str, candidates: list[AgentRecord]
    ) -> np.ndarray:
        """The Nash weights of ``candidates``, normalised (uniform when they sum to
        almost nothing)."""
        assert self._nash is not None
        weights = np.array([self._nash.get(r.agent_id, 0.0) for r in candidates],
                           dtype=np.float64)
        total = float(weights.sum())
        if total < UNIFORM_FALLBACK_THRESHOLD:
            logger.debug(
                "Nash weights of %s's opponents sum to %.3g; sampling uniformly",
                focal_agent_id, total,
            )
            return np.full(len(candidates), 1.0 / len(candidates))
        return weights / total

    def _win_rates(self, focal_agent_id: str, candidates: list[AgentRecord]) -> list[float]:
        """The focal agent's win rate against each candidate (``unknown_win_rate`` for
        those never played)."""
        rates = self.match_database.win_rates_for(focal_agent_id)
        return [rates.get(r.agent_id, self.unknown_win_rate) for r in candidates]

    def _probabilities(
        self, focal_agent_id: str, candidates: list[AgentRecord]
    ) -> np.ndarray:
        if not candidates:
            return np.zeros(0)
        if self._nash is not None:
            return self._nash_probabilities(focal_agent_id, candidates)
        return pfsp_probabilities(self._win_rates(focal_agent_id, candidates),
                                  self._weight_fn, labels=[r.agent_id for r in candidates])

    def opponent_probabilities(
        self,
        focal_agent_id: str,
        *,
        candidate_types: Iterable[AgentType | str] | None = None,
    ) -> dict[str, float]:
        """Return the probability of drawing each eligible opponent.

        Args:
            focal_agent_id: The agent that will play; must be in the pool.
            candidate_types: Override the eligible opponent types.

        Returns:
            ``{agent_id: probability}`` in pool order (empty if no opponent
            is eligible). If the eligible opponents' weights sum to less
            than 1e-10, the probabilities are uniform.

        Raises:
            KeyError: If the focal agent is not in the pool.
            ValueError: If a candidate type is unknown or a weight is invalid.
        """
        candidates = self._eligible(focal_agent_id, candidate_types)
        probs = self._probabilities(focal_agent_id, candidates)
        return {r.agent_id: float(p) for r, p in zip(candidates, probs, strict=True)}

    def select_opponent(
        self,
        focal_agent_id: str,
        *,
        candidate_types: Iterable[AgentType | str] | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> AgentRecord | None:
        """Draw an opponent for the focal agent.

        Args:
            focal_agent_id: The agent that will play; must be in the pool.
            candidate_types: Override the eligible opponent types.
            rng: Generator or seed (a fresh unseeded generator when None).

        Returns:
            The opponent's record, or None if no opponent is eligible.

        Raises:
            KeyError: If the focal agent is not in the pool.
        """
        candidates = self._eligible(focal_agent_id, candidate_types)
        if not candidates:
            return None
        if self._nash is None:
            index = pfsp_choice(self._win_rates(focal_agent_id, candidates), self._weight_fn,
                                rng, labels=[r.agent_id for r in candidates])
        else:
            probs = self._nash_probabilities(focal_agent_id, candidates)
            index = int(np.random.default_rng(rng).choice(len(candidates), p=probs))
        return candidates[index]

    # ------------------------------------------------------------ the league's roles

    def league_opponents(
        self,
        rule: str,
        focal_type: AgentType,
        focal_agent_id: str,
        members: Sequence[AgentRecord],
        win_rate: Callable[[str], float],
        rng: np.random.Generator,
        n: int,
    ) -> list[AgentRecord | str]:
        """The opponents of a league role's next rollout: ``n`` draws of the
        matchmaking ``rule`` (:func:`training.league.matchmaking.choose`), the draws
        that found nobody left out.

        Unlike :meth:`select_opponent`, the candidates are every role's members (the
        role reads every pool), the win rates the role's own (its decayed payoff), and
        a draw may be :data:`~training.league.matchmaking.SELF`. The ``pfsp`` rule
        weighs with :attr:`weight_function`, the ``nash`` rule with
        :attr:`nash_weights` (falling back to ``pfsp`` while there are none).

        Args:
            rule: ``pfsp``, ``nash`` or ``alphastar``.
            focal_type: the role's type (who it may meet).
            focal_agent_id: the live learner's id.
            members: the league's records, oldest first.
            win_rate: the learner's win rate against a member id or ``SELF``.
            rng: the role's generator (every draw comes from it).
            n: draws, an int >= 0.

        Returns:
            Records and ``SELF``, in the order drawn (fewer than ``n`` while the
            league holds nobody the role may meet).

        Raises:
            ValueError: for an unknown ``rule`` or a bad ``n``.
        """
        if rule not in MATCHMAKING:
            raise ValueError(f"rule={rule!r} is invalid: expected one of "
                             f"{', '.join(MATCHMAKING)}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"n={n!r} is invalid: expected an int >= 0")
        matchup = Matchup(AgentType.from_str(focal_type), focal_agent_id, members, win_rate,
                          rng, self._weight_fn, self._nash)
        drawn = [choose(rule, matchup) for _ in range(n)]
        return [d for d in drawn if d is not None]
