"""Who the enemy seems to be: a planner's belief over a pool of enemy commanders, from
what the enemy is seen to do.

After every step, for each battle, each commander of the pool is asked what it would
have ordered the enemy on the battle as the side believed it one step before; one step
of the simulator from there, with the side's own orders as given, predicts where each
enemy battalion would stand, which way it would face and how much of its volley it
would hold. Each enemy battalion in sight both then and now scores every commander by
how far the prediction misses what is seen; the misses add up to a log-likelihood per
battle, and the planner's futures draw their enemy from the posterior. A pool should
span how enemies behave (stand, close in silence, fire as they march); a commander the
planner is scored against is never in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.play.commanders import RedCommander
from envs.sim.constants import ACTION_DIM, KEEP_FORMATION
from envs.sim.state import BattleState

F32 = np.float32


@dataclass(frozen=True)
class Misses:
    """The scale of a prediction's miss that costs one unit of log-likelihood (squared).

    Attributes:
        metres: of position.
        radians: of heading.
        readiness: of the share of the volley held.
    """

    metres: float = 2.0
    radians: float = 0.2
    readiness: float = 0.1


class EnemyBelief:
    """A posterior over ``pool`` per battle (module docstring).

    Args:
        pool: the enemy commanders it weighs (RedCommanders, at least one).
        misses: the scale of a miss (:class:`Misses`).
    """

    def __init__(self, pool: Sequence[RedCommander], misses: Misses = Misses()) -> None:
        self.pool = list(pool)
        self.misses = misses
        self.log_likelihood = np.zeros((0, len(self.pool)))
        self._before: tuple[np.ndarray, BattleState, np.ndarray, np.ndarray] | None = None

    def posterior(self) -> np.ndarray:
        """(B, P) each battle's probability of each pool commander."""
        weights = np.exp(self.log_likelihood - self.log_likelihood.max(axis=1, keepdims=True))
        return weights / weights.sum(axis=1, keepdims=True)

    def draw(self, rows: np.ndarray, futures: int, rng: np.random.Generator) -> np.ndarray:
        """(len(rows) * futures,) a pool index per future of each battle ``rows`` (battle
        major), drawn from its posterior."""
        if len(self.pool) == 1:
            return np.zeros(len(rows) * futures, np.intp)
        cumulative = np.cumsum(self.posterior()[rows], axis=1)
        u = rng.random((len(rows), futures, 1))
        return np.minimum((u > cumulative[:, None, :]).sum(axis=2),
                          len(self.pool) - 1).reshape(-1)

    def fit(self, n_battles: int) -> None:
        """Start afresh (every commander alike) unless the batch has ``n_battles``."""
        if self.log_likelihood.shape[0] != n_battles:
            self.log_likelihood = np.zeros((n_battles, len(self.pool)))
            self._before = None

    def likeliest(self, rows: np.ndarray, k: int) -> np.ndarray:
        """(len(rows), k) the k likeliest pool indices of each battle ``rows``, likeliest
        first (the pool's order among equals; repeated when the pool is smaller)."""
        order = np.argsort(-self.posterior()[rows], axis=1, kind="stable")
        return order[:, np.arange(k) % len(self.pool)]

    def observe(self, battles: MultiBattalionBatch, belief: BattleState, side: int) -> None:
        """Score the pool on what the last step showed.

        Args:
            battles: the real battles, now.
            belief: the battles as ``side`` believes them now (hidden enemies where last
                seen; :func:`envs.planning.belief.belief_states`).
            side: the believing side.
        """
        self.fit(battles.n_battles)
        self.log_likelihood[belief.step == 0] = 0.0
        if self._before is not None and len(self.pool) > 1:
            self._score(battles, belief, side)

    def remember(self, battles: MultiBattalionBatch, belief: BattleState, side: int,
                 units: np.ndarray, orders: np.ndarray, formations: np.ndarray) -> None:
        """Keep this step's belief and the orders the side gave ``units``, to score the
        pool on at the next :meth:`observe`."""
        if len(self.pool) > 1:
            seen = battles.reports.seen_step[side].T == belief.step[:, None]
            self._before = (seen, belief, *self._full_orders(battles, units, orders,
                                                             formations))

    def _full_orders(self, battles, units, orders, formations):
        full = np.zeros((battles.n_battles, battles.n_units, ACTION_DIM), F32)
        drill = np.full((battles.n_battles, battles.n_units), KEEP_FORMATION, np.int8)
        full[:, units] = orders
        drill[:, units] = formations
        return full, drill

    def _score(self, battles: MultiBattalionBatch, now: BattleState, side: int) -> None:
        seen_before, before, orders, drill = self._before
        seen_now = battles.reports.seen_step[side].T == now.step[:, None]
        enemy = battles.team != side
        judged = seen_now & seen_before & enemy[None, :] & (now.step == before.step + 1)[:, None]
        judged &= ~(before.routed | before.destroyed)
        if not judged.any():
            return
        other = np.nonzero(enemy)[0]
        p = len(self.pool)
        twin = MultiBattalionBatch(p * battles.n_battles, battles.n_blue, battles.n_red,
                                   config=battles.config, battlefield=battles.battlefield,
                                   reward_weights=None, order_of_battle=battles.order_of_battle)
        start = before.select(np.tile(np.arange(battles.n_battles), p))
        start.key[:] = np.arange(1, len(start.key) + 1, dtype=np.uint64)
        twin.start_from(start)
        all_orders = np.tile(orders, (p, 1, 1))
        all_drill = np.tile(drill, (p, 1))
        for k, commander in enumerate(self.pool):
            rows = slice(k * battles.n_battles, (k + 1) * battles.n_battles)
            given, formation = commander.orders(twin, other)
            all_orders[rows][:, other] = given[rows]
            if formation is not None:
                all_drill[rows][:, other] = formation[rows]
        twin.step(all_orders, all_drill if twin.order_of_battle is not None else None)
        predicted = twin.state
        m = self.misses
        for k in range(p):
            rows = slice(k * battles.n_battles, (k + 1) * battles.n_battles)
            turn = np.angle(np.exp(1j * (predicted.theta[rows] - now.theta)))
            miss = (((predicted.x[rows] - now.x) ** 2 + (predicted.y[rows] - now.y) ** 2)
                    / m.metres ** 2 + turn ** 2 / m.radians ** 2
                    + (predicted.readiness[rows] - now.readiness) ** 2 / m.readiness ** 2)
            self.log_likelihood[:, k] -= 0.5 * np.where(judged, miss, 0.0).sum(axis=1)
