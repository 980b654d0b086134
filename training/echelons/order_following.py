"""How well order-following battalions follow orders and fight (phase 1 of the HRL
curriculum).

:func:`play_ordered_battles` plays battles once each in which Blue's battalions get
orders (:class:`~envs.commanders.orders.OrderedBattalionBatch`: drawn from ``postures`` every
``period`` steps) and are commanded by an order-conditioned MAPPO policy (acting on its
mean) or a scripted :class:`~envs.commanders.orders.OrderFollower`, against scripted Red. It
reports the orders met (the battalion within :data:`~envs.commanders.orders.HOLD_RADIUS` of its
objective when the order's period ends) and the battles' outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.battles.multi_battalion_batch import BLUE, RED
from envs.commanders.orders import OrderedBattalionBatch
from envs.options import MacroAction
from envs.sim.constants import ACTION_DIM
from envs.sim.validation import check_int, check_scripted_level
from training.mappo.battles import make_team_battles, team_actions


@dataclass(frozen=True)
class OrderReport:
    """Orders issued to Blue and met, and each battle's outcome (1 won, 0 drawn, -1 lost)."""

    issued: int
    met: int
    outcomes: np.ndarray

    @property
    def met_rate(self) -> float:
        return self.met / self.issued if self.issued else 0.0

    def rates(self) -> dict[str, float]:
        """Won, drawn and lost shares (draws in the denominator)."""
        return {"won": float(np.mean(self.outcomes == 1)),
                "drawn": float(np.mean(self.outcomes == 0)),
                "lost": float(np.mean(self.outcomes == -1))}


def play_ordered_battles(commander: Any, *, n_battles: int, seed: int, red_level: int,
                         n_blue: int = 2, n_red: int = 2, period: int = 100,
                         postures: tuple[int, ...] = tuple(MacroAction),
                         env_kwargs: dict[str, Any] | None = None) -> OrderReport:
    """Play ``n_battles`` battles (battle ``i`` seeded ``seed + i``) once each.

    Args:
        commander: Blue's battalions' commander: an order-conditioned MAPPO policy
            (deterministic) or anything with ``predict`` on the observations with their
            orders (:class:`~envs.commanders.orders.OrderFollower`).
        n_battles, seed: how many battles, and the first one's seed.
        red_level: Red's scripted level (1 to 5).
        n_blue, n_red: battalions a side.
        period: steps an order lasts.
        postures: the postures orders are drawn from (all six; or the attack alone).
        env_kwargs: further battle settings (map size, ``max_steps``, visibility).

    Raises:
        ValueError: for a setting out of range (named).
    """
    n_battles = check_int("n_battles", n_battles, minimum=1)
    red_level = check_scripted_level("red_level", red_level)
    plain = make_team_battles(n_battles, n_blue, n_red,
                              {k: v for k, v in (env_kwargs or {}).items()
                               if not k.startswith(("order_", "reward_order_"))})
    battles = OrderedBattalionBatch(plain, period, postures=postures)
    battles.reset(np.arange(n_battles), [seed + i for i in range(n_battles)],
                  np.zeros(n_battles, np.int64))
    blue, red = np.arange(n_blue), np.arange(n_blue, n_blue + n_red)
    orders = np.zeros((n_battles, n_blue + n_red, ACTION_DIM), np.float32)
    outcome = np.zeros(n_battles, np.int8)
    over = np.zeros(n_battles, bool)
    battles.take_order_counts()
    while not over.all():
        orders[:, blue] = team_actions(commander, battles.observation[:, blue], True)
        orders[:, red] = battles.scripted_actions(red, red_level)
        result = battles.step(orders)
        ended = result.battle_over & ~over
        outcome[ended & (result.winner == BLUE)] = 1
        outcome[ended & (result.winner == RED)] = -1
        over |= result.battle_over
    issued, met = battles.take_order_counts()
    return OrderReport(issued, met, outcome)


__all__ = ["OrderReport", "play_ordered_battles"]
