"""A commander that plans with the simulator: it plays its candidate orders ahead on
copies of the battle, as its side believes it, and follows the best.

Every ``every`` steps, in each battle it commands, the planner draws ``futures`` belief
states (:mod:`envs.planning.belief`: the enemies its side does not see put where they
could be), gives each its own dice, and in each plays every candidate commander for
``horizon`` steps against the enemy commander it names; it then follows the candidate
whose side earned the most reward on average over those futures. Every candidate meets
the same futures (the same beliefs and the same dice), so their scores differ by what
they do. ``docs/planning.md`` says what it costs and what it wins.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.planning.belief import belief_states
from envs.planning.opponent import EnemyBelief
from envs.play.commanders import RedCommander
from envs.reward import RewardWeights
from envs.sim import engine
from envs.sim.constants import ACTION_DIM, KEEP_FORMATION, SEED_BOUND
from envs.sim.validation import check_int, check_non_negative, short_repr


@dataclass(frozen=True)
class Search:
    """How a planner searches.

    Attributes:
        every: steps between two searches of a battle (K).
        futures: belief states, each with its own dice, every candidate is played in (M).
        horizon: steps each candidate is played ahead (H), or until the battle ends.
        margin: how much more reward a candidate must promise than the prior (the first
            candidate) to be followed instead (>= 0).
        robust: 0, futures draw their enemy from the posterior and a candidate is judged
            by its mean; k >= 1, the futures are shared among the k likeliest enemies and
            a candidate is judged by its mean against the enemy it does worst against.

    Raises:
        ValueError: naming the field, for a count below 1 or a negative margin.
    """

    every: int = 25
    futures: int = 4
    horizon: int = 100
    margin: float = 0.0
    robust: int = 0

    def __post_init__(self) -> None:
        for name in ("every", "futures", "horizon"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("robust", self.robust, minimum=0, maximum=self.futures)
        check_non_negative("margin", self.margin)


@dataclass
class SearchCost:
    """What the planner's searches have cost so far.

    Attributes:
        decisions: battle decisions taken (one battle searched once).
        battle_steps: steps of imagined battles played.
        seconds: wall time spent searching.
    """

    decisions: int = 0
    battle_steps: int = 0
    seconds: float = 0.0

    @property
    def steps_per_decision(self) -> float:
        return self.battle_steps / max(self.decisions, 1)

    @property
    def ms_per_decision(self) -> float:
        return 1000.0 * self.seconds / max(self.decisions, 1)


@dataclass
class _Memory:
    """Per battle of the batch commanded: the candidate followed and the step it was
    chosen at (-1: none yet)."""

    choice: np.ndarray
    decided: np.ndarray

    @classmethod
    def empty(cls, n: int) -> _Memory:
        return cls(np.full(n, -1, np.intp), np.full(n, -1, np.int64))


@dataclass
class PlanningCommander:
    """Commands some battalions of a batch of battles by planning (module docstring).

    A :class:`~envs.play.commanders.RedCommander`: it commands Blue or Red, in
    evaluations, the league, the benchmarks and ``wargames-play``.

    Args:
        candidates: the commanders it chooses between (>= 2; each a RedCommander); the
            first is followed until the first search.
        enemy: the commander it believes the other side to be inside its futures, or a
            pool of them, each future drawing its enemy from the battle's posterior over
            the pool (:class:`~envs.planning.opponent.EnemyBelief`). Never the opponent
            it is scored against.
        search: K, M and H (:class:`Search`).
        reward_weights: the objective its futures are scored by (the side's reward;
            None: the defaults, win and loss +-10 and damage each way 5).
        seed: seeds the planner's own generator: its belief draws and its futures' dice.
        name: its name in the tables, the replays and the Elo file.

    Raises:
        ValueError, TypeError: naming the argument, for fewer than two candidates or a
            candidate or enemy that is no commander.
    """

    candidates: Sequence[RedCommander]
    enemy: RedCommander | Sequence[RedCommander]
    search: Search = field(default_factory=Search)
    reward_weights: RewardWeights | None = None
    seed: int = 0
    name: str = "planner"
    cost: SearchCost = field(default_factory=SearchCost, init=False)

    def __post_init__(self) -> None:
        self.candidates = list(self.candidates)
        if len(self.candidates) < 2:
            raise ValueError(f"candidates={short_repr(self.candidates)} is invalid: expected "
                             "at least two commanders to choose between")
        self.enemy = [self.enemy] if _is_commander(self.enemy) else list(self.enemy)
        for label, commanders in (("candidates", self.candidates), ("enemy", self.enemy)):
            for i, commander in enumerate(commanders):
                if not _is_commander(commander):
                    raise TypeError(f"{label}[{i}]={short_repr(commander)} is invalid: "
                                    "expected a commander with orders(battles, units)")
        if not self.enemy:
            raise ValueError("enemy=[] is invalid: expected a commander or a non-empty pool")
        if not isinstance(self.search, Search):
            raise TypeError(f"search={short_repr(self.search)} is invalid: expected a Search")
        self.seed = check_int("seed", self.seed, minimum=0)
        self.reward_weights = self.reward_weights or RewardWeights()
        self.rng = np.random.default_rng(self.seed)
        self.enemy_belief = EnemyBelief(self.enemy)
        self._memory: _Memory | None = None
        self.last_future_keys = np.zeros(0, np.uint64)
        """The dice keys of the last search's futures (for the tests that check them)."""

    # --- the commander ------------------------------------------------------------

    def orders(self, battles: MultiBattalionBatch,
               units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(B, len(units), 3) orders of ``units`` (all of one side) in their own frame and
        (B, len(units)) formation orders: each battle's chosen candidate's, given on the
        battles as the side believes them (hidden enemies where last seen)."""
        units = np.asarray(units, dtype=np.intp)
        side = int(battles.team[units[0]])
        memory = self._remember(battles)
        view = believed(battles, side)
        self.enemy_belief.observe(battles, view.state, side)
        step = battles.state.step
        live = _both_sides_fight(battles)
        due = live & ((memory.choice < 0) | (step < memory.decided)
                      | (step - memory.decided >= self.search.every))
        if due.any():
            rows = np.nonzero(due)[0]
            memory.choice[rows] = self.choose(battles, side, rows)
            memory.decided[rows] = step[rows]
        orders = np.zeros((battles.n_battles, len(units), ACTION_DIM), np.float32)
        formations = np.full((battles.n_battles, len(units)), KEEP_FORMATION, np.int8)
        for c in np.unique(memory.choice[live]):
            rows = live & (memory.choice == c)
            given, drill = self.candidates[c].orders(view, units)
            orders[rows] = given[rows]
            if drill is not None:
                formations[rows] = drill[rows]
        self.enemy_belief.remember(battles, view.state, side, units, orders, formations)
        return orders, formations

    # --- the search -----------------------------------------------------------------

    def choose(self, battles: MultiBattalionBatch, side: int, rows: np.ndarray) -> np.ndarray:
        """(len(rows),) the best candidate of each battle ``rows``: the highest mean score
        over the futures (:meth:`scores`; the first of equals), unless it beats the first
        candidate, the prior, by less than ``search.margin``."""
        scores = self.scores(battles, side, rows)
        k = self.search.robust
        if k:  # future m met the battle's (m mod k)-th likeliest enemy
            groups = np.arange(scores.shape[2]) % k
            mean = np.min([scores[..., groups == g].mean(axis=2) for g in range(k)], axis=0)
        else:
            mean = scores.mean(axis=2)
        best = np.argmax(mean, axis=0)
        columns = np.arange(len(rows))
        return np.where(mean[best, columns] - mean[0] > self.search.margin, best, 0)

    def scores(self, battles: MultiBattalionBatch, side: int, rows: np.ndarray) -> np.ndarray:
        """(C, len(rows), M): the side's reward of each candidate in each future of each
        battle ``rows``, summed over ``horizon`` steps or until the battle ended."""
        start = time.perf_counter()
        n, m = len(rows), self.search.futures
        self.enemy_belief.fit(battles.n_battles)
        belief = belief_states(battles, side, np.repeat(rows, m), self.rng)
        belief.key[:] = self.rng.integers(1, SEED_BOUND, size=n * m, dtype=np.uint64)
        self.last_future_keys = belief.key.copy()
        own = np.nonzero(battles.team == side)[0]
        other = np.nonzero(battles.team != side)[0]
        if self.search.robust:
            likeliest = self.enemy_belief.likeliest(rows, self.search.robust)
            pool = likeliest[:, np.arange(m) % self.search.robust].reshape(-1)
        else:
            pool = self.enemy_belief.draw(rows, m, self.rng)
        scores = np.zeros((len(self.candidates), n * m))
        steps = 0
        for c, candidate in enumerate(self.candidates):
            twin = self._twin(battles, n * m)
            twin.start_from(belief)
            columns = side * twin.n_battles + np.arange(twin.n_battles)
            alive = np.ones(n * m, bool)
            for _ in range(self.search.horizon):
                orders, formations = self._orders(twin, candidate, own, other, pool)
                result = twin.step(orders, formations if twin.order_of_battle is not None
                                   else None)
                scores[c] += alive * result.team_reward.total[columns]
                steps += int(alive.sum())
                alive &= ~result.battle_over
                if not alive.any():
                    break
        self.cost.decisions += n
        self.cost.battle_steps += steps
        self.cost.seconds += time.perf_counter() - start
        return scores.reshape(len(self.candidates), n, m)

    def _orders(self, twin: MultiBattalionBatch, candidate: RedCommander, own: np.ndarray,
                other: np.ndarray, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Both sides' orders in a twin: the candidate's for ``own``, each future's enemy's
        for ``other``."""
        orders = np.zeros((twin.n_battles, twin.n_units, ACTION_DIM), np.float32)
        formations = np.full((twin.n_battles, twin.n_units), KEEP_FORMATION, np.int8)
        _put(orders, formations, slice(None), own, candidate.orders(twin, own))
        for k, enemy in enumerate(self.enemy):
            rows = pool == k if len(self.enemy) > 1 else slice(None)
            if len(self.enemy) > 1 and not rows.any():
                continue
            _put(orders, formations, rows, other, enemy.orders(twin, other))
        return orders, formations

    def _twin(self, battles: MultiBattalionBatch, n: int) -> MultiBattalionBatch:
        """An empty batch of ``n`` battles like ``battles``, scored by the planner's
        reward weights."""
        return MultiBattalionBatch(n, battles.n_blue, battles.n_red, config=battles.config,
                                   battlefield=battles.battlefield,
                                   reward_weights=self.reward_weights,
                                   order_of_battle=battles.order_of_battle)

    def _remember(self, battles: MultiBattalionBatch) -> _Memory:
        if self._memory is None or len(self._memory.choice) != battles.n_battles:
            self._memory = _Memory.empty(battles.n_battles)
        return self._memory


def believed(battles: MultiBattalionBatch, side: int) -> MultiBattalionBatch:
    """The battles as ``side`` believes them, to give orders on: a view whose state and
    geometry put each hidden enemy where it was last seen; its observations are the real
    battles' (they show only what each battalion sees) and its keys the real ones (a
    sampling commander draws its orders from them as it would on the real battles)."""
    view = _shallow(battles)
    state = belief_states(battles, side, np.arange(battles.n_battles), None)
    state.key[:] = battles.state.key
    view.state = state
    view.geometry = engine.sense(state, battles.config)
    return view


def _shallow(battles: MultiBattalionBatch) -> MultiBattalionBatch:
    """A batch sharing every array of ``battles`` but its observers (a replay recorder
    watches the real battles, not a view of them)."""
    view = object.__new__(type(battles))
    view.__dict__.update(battles.__dict__)
    view.step_observers = []
    return view


def _put(orders: np.ndarray, formations: np.ndarray, rows, units: np.ndarray,
         given: tuple[np.ndarray, np.ndarray | None]) -> None:
    """Write a commander's ``given`` orders and formations of ``units`` at ``rows``."""
    actions, drill = given
    index = (rows, units) if isinstance(rows, slice) else np.ix_(np.nonzero(rows)[0], units)
    orders[index] = actions[rows]
    if drill is not None:
        formations[index] = drill[rows]


def _both_sides_fight(battles: MultiBattalionBatch) -> np.ndarray:
    """(B,) battles in which both sides still have a battalion in the fight."""
    active = battles.state.active
    return (active[:, battles.team == 0].any(axis=1)
            & active[:, battles.team == 1].any(axis=1))


def _is_commander(value: object) -> bool:
    return callable(getattr(value, "orders", None))
