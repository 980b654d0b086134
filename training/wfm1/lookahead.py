"""Blue's teacher that looks ahead: the combined-arms doctrine choosing its plan by search.

Every :attr:`Lookahead.every` steps, for each battle, the teacher plays each of its
candidate plans (:attr:`Lookahead.plans`: the doctrine playing an
:class:`~envs.commanders.arms_doctrine.ArmsPlan` under an attack rule) for
:attr:`Lookahead.horizon` steps on a copy of the battles, Red commanded as it is, and
then follows in that battle the plan whose Blue reward over those steps (or until the
battle ended) was the highest. This module holds the search's settings and the teacher
that follows its choice; the battles play the copies
(:meth:`training.wfm1.battles.ScenarioBattles.look_ahead`). It is a teacher for training
only (the copies cost ``len(plans) * horizon / every`` steps a step): the generalist
imitates its orders (:mod:`training.wfm1.warm_start`), as in expert iteration (Anthony,
Tian and Barber, 2017). ``docs/wfm1.md`` ("Training") says what the search foresees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.commanders.arms_doctrine import ARMS_PLANS, ATTACK_RULES, CombinedArmsDoctrine
from envs.sim.validation import check_int

CANDIDATE_SEPARATOR = "+"
"""Between a candidate's plan and its attack rule: ``"line+power"``."""


@dataclass(frozen=True)
class Lookahead:
    """How Blue's teacher searches (module docstring).

    Attributes:
        plans: the candidates, each a name of :data:`~envs.commanders.arms_doctrine.
            ARMS_PLANS`, or such a name and an attack rule of :data:`~envs.commanders.
            arms_doctrine.ATTACK_RULES` joined by ``+`` (``"line+power"``; without one,
            the doctrine's own rule). The first is every battle's plan until the first
            search.
        every: steps between two searches.
        horizon: steps each candidate is played ahead.

    Raises:
        ValueError: naming the field, for fewer than two candidates, an unknown plan or
            rule, a repeated candidate, or a step count below 1.
    """

    plans: tuple[str, ...]
    every: int = 25
    horizon: int = 75

    def __post_init__(self) -> None:
        plans = self.plans
        if isinstance(plans, str) or not all(isinstance(p, str) for p in plans):
            raise ValueError(f"plans={plans!r} is invalid: expected a sequence of candidate "
                             "names")
        object.__setattr__(self, "plans", tuple(plans))
        if len(self.plans) < 2:
            raise ValueError(f"plans={list(self.plans)!r} is invalid: expected at least two "
                             "candidates to choose between")
        if len(set(self.plans)) != len(self.plans):
            raise ValueError(f"plans={list(self.plans)!r} is invalid: a candidate is repeated")
        for name in self.plans:
            candidate(name)
        check_int("every", self.every, minimum=1)
        check_int("horizon", self.horizon, minimum=1)


def candidate(name: str) -> tuple[str, str | None]:
    """A candidate's plan name and attack rule (None: the doctrine's own).

    Raises:
        ValueError: naming the candidate, for an unknown plan or rule.
    """
    plan, _, rule = name.partition(CANDIDATE_SEPARATOR)
    if plan not in ARMS_PLANS:
        raise ValueError(f"plans entry {name!r} is invalid: its plan {plan!r} is not one of "
                         f"{', '.join(ARMS_PLANS)}")
    if rule and rule not in ATTACK_RULES:
        raise ValueError(f"plans entry {name!r} is invalid: its attack rule {rule!r} is not "
                         f"one of {', '.join(ATTACK_RULES)}")
    return plan, rule or None


def candidate_doctrine(name: str, config) -> CombinedArmsDoctrine:
    """The doctrine a candidate names, for battles of ``config``."""
    plan, rule = candidate(name)
    if rule is None:
        return CombinedArmsDoctrine(config, plan=ARMS_PLANS[plan])
    return CombinedArmsDoctrine(config, rule, ARMS_PLANS[plan])


class PlanChoice:
    """One scenario's Blue teacher under a lookahead: each of its battles follows the
    candidate chosen for it.

    Args:
        doctrines: the candidates' doctrines for the scenario's battles.
        choice: ``(battles,)`` the chosen candidate of each battle (a view the search
            writes into).
    """

    def __init__(self, doctrines: list[CombinedArmsDoctrine], choice: np.ndarray) -> None:
        self.doctrines, self.choice = doctrines, choice

    def orders(self, state, geometry) -> tuple[np.ndarray, np.ndarray]:
        """The orders of each battle's chosen candidate (every candidate's are computed;
        the doctrine is a small share of a step)."""
        orders, formations = self.doctrines[0].orders(state, geometry)
        for k in range(1, len(self.doctrines)):
            rows = self.choice == k
            if rows.any():
                other, other_formations = self.doctrines[k].orders(state, geometry)
                orders[rows], formations[rows] = other[rows], other_formations[rows]
        return orders, formations


__all__ = ["CANDIDATE_SEPARATOR", "Lookahead", "PlanChoice", "candidate",
           "candidate_doctrine"]
