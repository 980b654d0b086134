"""A person's orders to Blue's battalions, and how a battalion carries them out each step.

A person gives a battalion *standing orders* (:class:`StandingOrders`), which it follows
until told otherwise: **move** to a point (it wheels towards it, marches once it faces
within :data:`ON_LINE` of the way and halts within :data:`ARRIVED` of the point);
**face** a heading once it stands; **fire** at will or hold fire; and **formation**, one
its arm can take (:data:`~envs.sim.constants.ARM_FORMATIONS`).
:meth:`StandingOrders.actions` turns the orders into the engine's ``[move, rotate, fire]``
orders (Blue's own frame is the map's) and :meth:`StandingOrders.formations` into its
formation orders. ``docs/play.md`` ("Giving orders") describes them in full.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from envs.sim import constants as C
from envs.sim.config import BattleConfig
from envs.sim.state import BattleState

F32 = np.float32

ARRIVED = 2.0
"""A battalion within this many metres of the point it was sent to stands on it."""
ON_LINE = 0.5
"""A battalion marches only when it faces within this many radians of its way (it wheels
on the spot first, as a formed battalion did)."""


class StandingOrders:
    """The standing orders of every unit of one battle (only Blue's are used).

    Args:
        n_units: units of the battle.

    Attributes:
        goal: (U, 2) the point each unit marches to, NaN for none.
        facing: (U,) the heading each unit turns to once it stands, NaN for none.
        fire: (U,) fire at will (True, the default) or hold fire.
        formation: (U,) the formation ordered, :data:`~envs.sim.constants.KEEP_FORMATION`
            for none.
    """

    def __init__(self, n_units: int) -> None:
        self.goal = np.full((n_units, 2), np.nan)
        self.facing = np.full(n_units, np.nan)
        self.fire = np.ones(n_units, bool)
        self.formation = np.full(n_units, C.KEEP_FORMATION, np.int8)

    def of(self, unit: int) -> dict[str, Any]:
        """``unit``'s orders as JSON values: ``move`` [x, y] or None, ``face`` radians or
        None, ``fire`` bool, ``formation`` a formation's name or None."""
        goal = self.goal[unit]
        formation = int(self.formation[unit])
        return {"move": None if np.isnan(goal[0]) else [float(goal[0]), float(goal[1])],
                "face": None if np.isnan(self.facing[unit]) else float(self.facing[unit]),
                "fire": bool(self.fire[unit]),
                "formation": None if formation == C.KEEP_FORMATION
                else C.FORMATION_NAMES[formation]}

    def actions(self, state: BattleState, units: np.ndarray, config: BattleConfig) -> np.ndarray:
        """(len(units), 3) ``[move, rotate, fire]`` orders of ``units`` in battle 0 of
        ``state`` now (module docstring)."""
        x, y, theta = state.x[0, units], state.y[0, units], state.theta[0, units]
        goal, facing = self.goal[units], self.facing[units]
        dx, dy = goal[:, 0] - x, goal[:, 1] - y
        distance = np.hypot(dx, dy)
        marching = ~np.isnan(distance) & (np.nan_to_num(distance, nan=0.0) > ARRIVED)
        heading = np.where(marching, np.arctan2(dy, dx), np.where(np.isnan(facing), theta, facing))
        error = (heading - theta + math.pi) % (2 * math.pi) - math.pi
        rotate = np.clip(error / config.max_turn_rate, -1.0, 1.0)
        # A full stride at the unit's pace on open ground (cavalry ordered to fire charges
        # at charge_speed); the last one is shortened to land on the point.
        arm, formation = state.arm[units].astype(np.intp), state.formation[0, units]
        pace = np.asarray(config.arm_speed, F32)[arm, formation]
        charging = self.fire[units] & (arm == C.CAVALRY)
        stride = config.max_speed * config.dt * pace * np.where(charging, config.charge_speed, 1)
        fraction = np.where(stride > 0, np.nan_to_num(distance) / np.maximum(stride, 1e-9), 1.0)
        move = np.where(marching & (np.abs(error) < ON_LINE), np.clip(fraction, 0.0, 1.0), 0.0)
        return np.stack([move, rotate, self.fire[units]], axis=1).astype(F32)

    def formations(self, state: BattleState, units: np.ndarray) -> np.ndarray:
        """(len(units),) formation orders of ``units`` in battle 0 of ``state``: the one
        ordered until the unit stands in it, then keep."""
        ordered = self.formation[units]
        done = ordered == state.formation[0, units]
        return np.where(done, C.KEEP_FORMATION, ordered).astype(np.int8)


__all__ = ["ARRIVED", "ON_LINE", "StandingOrders"]
