"""Who commands Red in a played battle: any commander that gives a side's orders in a
:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`.

A :class:`RedCommander` has a ``name`` (for the replay's notes and the Elo file) and
``orders(battles, units)``: the ``[move, rotate, fire]`` orders of ``units`` in their own
frame (Red's is mirrored, :mod:`envs.battles.multi_observation`) and their formation orders,
or None to keep every formation. This module holds the ones the simulator has itself (the
scripted levels, the combined-arms doctrine) and :class:`BatchedRed`, which takes any
batched commander ``commander(battles, units) -> orders`` (the protocol of
:mod:`envs.remote.batch_env`, e.g. :class:`training.mappo.battles.PolicyCommander`
around a trained policy); the play command line (:mod:`training.play`) loads the trained
ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.battles.observation import ROTATE_SIGN
from envs.commanders.arms_doctrine import (
    ATTACK_RULES,
    DEFAULT_ATTACK_RULE,
    ArmsPlan,
    CombinedArmsDoctrine,
    check_arms_plan,
)
from envs.sim.constants import ACTION_DIM
from envs.sim.validation import check_choice, check_scripted_level, short_repr


class RedCommander(Protocol):
    """Gives the orders of some units of a batch of battles (module docstring)."""

    name: str

    def orders(self, battles: MultiBattalionBatch,
               units: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(B, len(units), 3) orders in the units' own frame, and (B, len(units)) formation
        orders or None."""
        ...


class ScriptedRed:
    """The scripted commander of a curriculum level (1 to 5), who sees the whole field;
    levels 2 to 5 use their arms, formations included (:mod:`envs.sim.scripted`).

    Raises:
        ValueError: for a level outside 1 to 5.
    """

    def __init__(self, level: int) -> None:
        self.level = check_scripted_level("level", level)
        self.name = f"scripted_l{self.level}"

    def orders(self, battles: MultiBattalionBatch,
               units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        formations = np.empty((battles.n_battles, len(units)), np.int8)
        return battles.scripted_actions(units, self.level, formations), formations


class CombinedArmsRed:
    """The combined-arms doctrine (:class:`~envs.commanders.arms_doctrine.CombinedArmsDoctrine`),
    formations included: the commander of the scenarios and historical battles.

    Args:
        plan: how it uses its arms (:class:`~envs.commanders.arms_doctrine.ArmsPlan`; None:
            the doctrine's own).
        attack_rule: who attacks (:data:`~envs.commanders.arms_doctrine.ATTACK_RULES`).
        name: its name in the tables, the replays and the Elo file.

    Raises:
        ValueError: for an unknown attack rule.
    """

    def __init__(self, plan: ArmsPlan | None = None,
                 attack_rule: str = DEFAULT_ATTACK_RULE, name: str = "combined_arms") -> None:
        self.plan = check_arms_plan(plan)
        self.attack_rule = check_choice("attack_rule", attack_rule, ATTACK_RULES)
        self.name = name

    def orders(self, battles: MultiBattalionBatch,
               units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        orders, formations = CombinedArmsDoctrine(battles.config, self.attack_rule,
                                                  self.plan).orders(battles.state,
                                                                    battles.geometry)
        # The doctrine's orders are on the map; the batch takes each side's own frame.
        orders[..., 1] *= ROTATE_SIGN[battles.team]
        return orders[:, units], formations[:, units]


class BatchedRed:
    """A batched commander ``commander(battles, units) -> (B, len(units), 3)`` orders in the
    units' own frame, named ``name``; formations are kept, unless the commander gives a
    fourth number, the formation order (a MAPPO policy with a formation head).

    Raises:
        TypeError: for a ``commander`` that is not callable.
    """

    def __init__(self, commander: Callable[[MultiBattalionBatch, np.ndarray], np.ndarray],
                 name: str) -> None:
        if not callable(commander):
            raise TypeError(f"commander={short_repr(commander)} is invalid: expected a batched "
                            "commander(battles, units)")
        self.commander, self.name = commander, name

    def orders(self, battles: MultiBattalionBatch,
               units: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        given = np.asarray(self.commander(battles, units), np.float32)
        if given.shape[-1] == ACTION_DIM:
            return given, None
        return given[..., :ACTION_DIM], np.rint(given[..., ACTION_DIM]).astype(np.int8)


__all__ = ["BatchedRed", "CombinedArmsRed", "RedCommander", "ScriptedRed"]
