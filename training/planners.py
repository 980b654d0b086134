"""Planning commanders for the team stacks: the candidates each plans with, the prior it
starts from, and the pool of enemies it weighs (:mod:`envs.planning`).

A stack is a kind of battle and its hand-written commanders: ``duel``, one battalion a
side, whose prior is the doctrine the duel's PPO imitates (halting at 70 m, at 60 m from an
enemy that has spent its volley, falling back from a hidden enemy uphill); ``team``, 2v2 infantry
in line on the default map, whose prior is the in-step doctrine the MAPPO team imitates;
``arms``, the ``combined_arms`` scenario's field (two battalions, a cavalry regiment and
a battery a side), whose prior is the searched plan of the combined-arms doctrine.
:func:`make_planner` builds a stack's planner; a learned policy can be its prior.
``docs/planning.md`` says how each was chosen and what it wins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envs.battlefield import Battlefield
from envs.commanders.arms_doctrine import ARMS_PLANS, ATTACK_RULES, SEARCHED_PLAN
from envs.commanders.doctrine import (
    EXPOSED_RANGE,
    ConcentratingCommander,
    DisciplinedCommander,
    InStepCommander,
)
from envs.planning.planner import PlanningCommander, Search
from envs.play.commanders import BatchedRed, CombinedArmsRed, RedCommander, ScriptedRed
from envs.sim.constants import SCRIPTED_LEVELS
from envs.sim.validation import check_choice, short_repr
from training.mappo.battles import PolicyCommander

ARMS_FIELD = {"map_width": 1500.0, "map_height": 1000.0, "max_steps": 800,
              "randomize_terrain": True, "hill_speed_factor": 0.5, "visibility_radius": 600.0}
"""The field of combined arms: the ``arms`` stack's and ``benchmarks.learning``'s
``mappo_arms`` stack's (``benchmarks.arms_plans`` plays its doctrine there)."""


def battalion_commander(commander: Any, name: str) -> RedCommander:
    """A battalion commander with ``predict`` (a doctrine) commanding every battalion of
    a side, as a batch commander named ``name``."""
    return BatchedRed(PolicyCommander(commander, deterministic=True), name)


def _team_doctrine(kind: type, name: str, diagonal: float, **kwargs: Any) -> RedCommander:
    return battalion_commander(kind(map_diagonal=diagonal, **kwargs), name)


@dataclass(frozen=True)
class PlannerStack:
    """A kind of team battle and the commanders a planner of it uses.

    Attributes:
        name: the stack's name.
        n_blue, n_red: battalions a side.
        env_kwargs: the battlefield's settings.
        order_of_battle: the scenario whose units fight (None: infantry in line).
        prior: the prior, the hand-written commander the planner starts from.
        candidates: the other commanders it chooses between, besides the prior.
        pool: the enemies it weighs (:class:`~envs.planning.opponent.EnemyBelief`).
        doctrine: the stack's doctrine team, an opponent of its benchmark.
        search: its default K, M and H.
    """

    name: str
    n_blue: int
    n_red: int
    env_kwargs: dict[str, Any]
    order_of_battle: str | None
    prior: Callable[[float], RedCommander]
    candidates: Callable[[float], list[RedCommander]]
    pool: Callable[[float], list[RedCommander]]
    doctrine: Callable[[float], RedCommander]
    search: Search

    @property
    def diagonal(self) -> float:
        """The map's diagonal, in metres (the doctrines read distances by it)."""
        return Battlefield.from_kwargs(None, **self.env_kwargs).battle_config().diagonal


def _scripted_pool() -> list[RedCommander]:
    return [ScriptedRed(level) for level in SCRIPTED_LEVELS]


POOL_HOLD_RANGES = (50.0, 60.0, 75.0, 90.0, 110.0)
"""The halts, metres, of the doctrines in a team stack's pool of enemies."""


def _doctrine_pool(d: float, doctrine_name: str) -> list[RedCommander]:
    """The disciplined doctrine and the doctrine marching in step at every halt of
    :data:`POOL_HOLD_RANGES` (the one at 60 m named ``doctrine_name``, the in-step one
    at 75 m ``in_step``: the stack's doctrine team and prior)."""
    def label(kind: str, hold: float) -> str:
        if kind == "doctrine" and hold == 60.0:
            return doctrine_name
        return "in_step" if kind == "in_step" and hold == 75.0 else f"{kind}_{hold:.0f}"

    return [_team_doctrine(kind, label(name, hold), d, hold_range=hold)
            for name, kind in (("doctrine", DisciplinedCommander), ("in_step", InStepCommander))
            for hold in POOL_HOLD_RANGES]


TEAM = PlannerStack(
    name="team", n_blue=2, n_red=2, env_kwargs={}, order_of_battle=None,
    prior=lambda d: _team_doctrine(InStepCommander, "in_step", d, hold_range=75.0),
    candidates=lambda d: [
        _team_doctrine(InStepCommander, "in_step_60", d, hold_range=60.0),
        _team_doctrine(InStepCommander, "in_step_90", d, hold_range=90.0),
        _team_doctrine(InStepCommander, "in_step_exposed", d, hold_range=75.0,
                       exposed_range=EXPOSED_RANGE),
        _team_doctrine(ConcentratingCommander, "concentrating", d, hold_range=75.0),
        _team_doctrine(InStepCommander, "in_step_fall_back", d, hold_range=75.0,
                       fall_back_uphill=True),
        _team_doctrine(DisciplinedCommander, "doctrine_team", d)],
    pool=lambda d: [*_scripted_pool(), *_doctrine_pool(d, "doctrine_team")],
    doctrine=lambda d: _team_doctrine(DisciplinedCommander, "doctrine_team", d),
    search=Search(every=25, futures=4, horizon=500, margin=10.0))

ARMS = PlannerStack(
    name="arms", n_blue=4, n_red=4, env_kwargs=ARMS_FIELD, order_of_battle="combined_arms",
    prior=lambda d: CombinedArmsRed(SEARCHED_PLAN, name="searched_plan"),
    candidates=lambda d: [CombinedArmsRed(ARMS_PLANS[plan], rule, name=f"{plan}+{rule}")
                          for plan in ARMS_PLANS for rule in ATTACK_RULES
                          if (plan, rule) != ("searched", "high_ground_forced")],
    pool=lambda d: [*_scripted_pool(), CombinedArmsRed(name="combined_arms"),
                    CombinedArmsRed(SEARCHED_PLAN, name="searched_plan")],
    doctrine=lambda d: CombinedArmsRed(name="combined_arms"),
    search=Search(every=50, futures=2, horizon=200))

DUEL = PlannerStack(
    name="duel", n_blue=1, n_red=1, env_kwargs={}, order_of_battle=None,
    prior=lambda d: _team_doctrine(DisciplinedCommander, "duel_teacher", d, hold_range=70.0,
                                   spent_hold_range=60.0, fall_back_uphill=True),
    candidates=lambda d: [
        _team_doctrine(DisciplinedCommander, "doctrine", d),
        _team_doctrine(DisciplinedCommander, "doctrine_90", d, hold_range=90.0,
                       fall_back_uphill=True),
        _team_doctrine(DisciplinedCommander, "doctrine_50", d, hold_range=50.0,
                       fall_back_uphill=True),
        _team_doctrine(DisciplinedCommander, "doctrine_spent_30", d, hold_range=70.0,
                       spent_hold_range=30.0, fall_back_uphill=True)],
    pool=lambda d: [*_scripted_pool(), *(
        _team_doctrine(DisciplinedCommander, "doctrine" if (hold, back) == (60.0, False)
                       else f"doctrine_{hold:.0f}{'_fall_back' if back else ''}", d,
                       hold_range=hold, fall_back_uphill=back)
        for hold in POOL_HOLD_RANGES for back in (False, True))],
    doctrine=lambda d: _team_doctrine(DisciplinedCommander, "doctrine", d),
    search=Search(every=25, futures=4, horizon=500, margin=10.0))

STACKS = {stack.name: stack for stack in (DUEL, TEAM, ARMS)}
"""The stacks a planner is built for, by name."""


def make_planner(stack: str, *, search: Search | None = None, seed: int = 0,
                 prior: Any = None, scored_against: tuple[str, ...] = (),
                 diagonal: float | None = None, name: str = "planner") -> PlanningCommander:
    """A planning commander of ``stack``.

    Args:
        stack: a name of :data:`STACKS`.
        search: K, M and H (None: the stack's).
        seed: the planner's own generator's seed.
        prior: a learned policy (a MAPPO policy) to plan from, added as the first
            candidate before the stack's prior; None: the stack's prior first.
        scored_against: names of the commanders it will be scored against: they are left
            out of its pool of enemies (never modelled as the enemy they are).
        diagonal: the map's diagonal in metres, for the doctrines (None: the stack's map).
        name: its name in the tables, the replays and the Elo file.

    Raises:
        ValueError: for an unknown stack, or a ``scored_against`` that empties the pool.
    """
    check_choice("stack", stack, tuple(STACKS))
    spec = STACKS[stack]
    d = spec.diagonal if diagonal is None else diagonal
    candidates = [spec.prior(d), *spec.candidates(d)]
    if prior is not None:
        candidates.insert(0, BatchedRed(PolicyCommander(prior, deterministic=True), "prior"))
    pool = [enemy for enemy in spec.pool(d) if enemy.name not in set(scored_against)]
    if not pool:
        raise ValueError(f"scored_against={short_repr(scored_against)} is invalid: it leaves "
                         f"no enemy in the {stack} stack's pool")
    return PlanningCommander(candidates, pool, search or spec.search, seed=seed, name=name)


PLAY_SEARCH = Search(every=25, futures=2, horizon=150)
"""The search of a planner commanding Red in ``wargames-play``: one battle, under a second
a decision on two cores."""


__all__ = ["ARMS", "ARMS_FIELD", "DUEL", "PLAY_SEARCH", "STACKS", "TEAM", "PlannerStack",
           "battalion_commander", "make_planner"]
