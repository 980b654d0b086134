"""The scripted combined-arms doctrine: how a competent commander of the period used
each arm, as orders for every unit of a batch of battles.

Infantry marches in column while the enemy is far, deploys into line to fight, closes to
volley range and fires there, and forms square against horse; cavalry rides at the
nearest enemy that is not a square and charges; artillery moves up limbered, unlimbers
and fires on the nearest enemy in range, and limbers up to follow an advance. Who
attacks follows one of :data:`ATTACK_RULES` (:func:`attacking_sides`); a side that does
not attack holds its ground and fights whoever comes within :data:`DEFEND_REACH`. The
doctrine reads only what both sides could see on the field, and is the same for both.
An :class:`ArmsPlan` varies how the arms are used (:data:`ARMS_PLANS`). The distances,
the rules and the plans are described in ``docs/simulation.md`` ("The combined-arms
doctrine").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.sim import constants as C
from envs.sim.config import BattleConfig
from envs.sim.engine import Geometry
from envs.sim.state import BattleState

F32 = np.float32

COLUMN_BEYOND = 450.0
"""Infantry farther than this from the nearest enemy marches in column."""
VOLLEY_RANGE = 90.0
"""Infantry halts and fires with the nearest enemy this close (the disciplined volley)."""
SQUARE_WITHIN = 250.0
"""Infantry forms square when enemy cavalry in the fight comes this close."""
UNSQUARE_BEYOND = 400.0
"""...and deploys back into line once no enemy cavalry is this close."""
CHARGE_WITHIN = 250.0
"""Cavalry charges its target from this distance."""
CAVALRY_SHY = 200.0
"""Cavalry with no target but squares keeps this far from them."""
UNLIMBER_WITHIN = 550.0
"""Limbered guns unlimber once the nearest enemy is this close."""
LIMBER_BEYOND = 700.0
"""Guns in battery limber up when no enemy is this close and their side attacks."""
ATTACK_RATIO = 0.9
"""A side attacks when its fighting power is at least the enemy's times this."""
HIGH_GROUND_MARGIN = 0.1
"""A side holds the higher ground when its units stand this much higher on average (in
relative elevation) than the enemy's."""
HIGH_GROUND_ATTACK_RATIO = 1.5
"""A side on the higher ground gives it up to attack only when this much stronger."""
DEFEND_REACH = 250.0
"""A defending unit moves to fight an enemy only within this distance."""
ATTACK_RULES = ("power", "high_ground", "high_ground_forced", "always", "never")
"""The rules a doctrine may follow for who attacks (:func:`attacking_sides`)."""
DEFAULT_ATTACK_RULE = "high_ground_forced"
"""The rule a doctrine follows unless told otherwise."""


GUN_TARGETS = ("nearest", "cavalry")
"""What guns in battery turn on: the nearest enemy, or the nearest enemy cavalry within
the guns' range (the nearest enemy when there is none)."""


@dataclass(frozen=True)
class ArmsPlan:
    """How a :class:`CombinedArmsDoctrine` uses its arms; the defaults are the doctrine as
    ``docs/simulation.md`` describes it.

    Attributes:
        volley_range: infantry halts and fires with the nearest enemy this close (m).
        fire_discipline: infantry fires only once halted within ``volley_range``
            (otherwise it opens fire from 1.2 times it, on the march).
        step_tolerance: infantry closing on the enemy halts while it is more than this
            many metres nearer its enemy than another closing battalion of its side is to
            that one's (marching in step); None: each closes on its own.
        column_beyond: infantry farther than this from the nearest enemy marches in column.
        unsquare_beyond: infantry in square deploys back into line once no enemy cavalry
            is this close (at least :data:`SQUARE_WITHIN`, where it forms square).
        charge_within: cavalry charges its target from this distance.
        unlimber_within: limbered guns unlimber once the nearest enemy is this close.
        gun_target: one of :data:`GUN_TARGETS`.

    Raises:
        ValueError: for a distance that is not positive, an ``unsquare_beyond`` below
            :data:`SQUARE_WITHIN` or an unknown ``gun_target``.
    """

    volley_range: float = VOLLEY_RANGE
    fire_discipline: bool = False
    step_tolerance: float | None = None
    column_beyond: float = COLUMN_BEYOND
    unsquare_beyond: float = UNSQUARE_BEYOND
    charge_within: float = CHARGE_WITHIN
    unlimber_within: float = UNLIMBER_WITHIN
    gun_target: str = "nearest"

    def __post_init__(self) -> None:
        for name in ("volley_range", "column_beyond", "unsquare_beyond", "charge_within",
                     "unlimber_within", "step_tolerance"):
            value = getattr(self, name)
            if name == "step_tolerance" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"ArmsPlan {name}={value!r} is invalid: expected a positive "
                                 "number of metres" + (" or None" if name == "step_tolerance"
                                                       else ""))
        if self.unsquare_beyond < SQUARE_WITHIN:
            raise ValueError(f"ArmsPlan unsquare_beyond={self.unsquare_beyond!r} is invalid: "
                             f"expected at least SQUARE_WITHIN ({SQUARE_WITHIN:g} m), where "
                             "infantry forms square")
        if self.gun_target not in GUN_TARGETS:
            raise ValueError(f"ArmsPlan gun_target={self.gun_target!r} is invalid: expected "
                             f"one of {', '.join(GUN_TARGETS)}")


SEARCHED_PLAN = ArmsPlan(volley_range=75.0, fire_discipline=True, step_tolerance=20.0,
                         column_beyond=600.0, charge_within=350.0, unlimber_within=600.0,
                         gun_target="cavalry")
"""The plan that won most against scripted L5 on the ``combined_arms`` scenario, found by a
random then a coordinate search on validation battles (``docs/performance.md``); on other
fields it wins less than the default plan against the default doctrine."""


LINE_PLAN = ArmsPlan(fire_discipline=True, column_beyond=1000.0, unsquare_beyond=260.0)
"""The plan that won most against the doctrine's own on WFM-1's training battles of roughly
even sides (validation scenarios, never held-out ones; ``docs/performance.md``): fire
only once halted within volley range, march in line (no field of those battles puts
the enemy beyond 1,000 m), and leave the square as soon as the enemy horse is 260 m off
instead of 400 m, so that horse hovering near a square does not pin it."""


ARMS_PLANS = {"standard": ArmsPlan(), "searched": SEARCHED_PLAN, "line": LINE_PLAN}
"""The plans a trainer can name (``warm_start_arms_plan``)."""


def check_arms_plan(plan: ArmsPlan | None) -> ArmsPlan:
    """``plan``, or the doctrine's own plan for None.

    Raises:
        TypeError: for anything else than an :class:`ArmsPlan` or None.
    """
    if plan is None:
        return ArmsPlan()
    if not isinstance(plan, ArmsPlan):
        raise TypeError(f"plan={plan!r} is invalid: expected an ArmsPlan or None")
    return plan


def _steer(bearing: np.ndarray, theta: np.ndarray, turn_rate: float) -> np.ndarray:
    """The rotate order that turns from ``theta`` towards ``bearing`` by the shortest arc."""
    error = (bearing - theta + np.pi) % (2 * np.pi) - np.pi
    return np.clip(error / turn_rate, -1.0, 1.0)


def attacking_sides(state: BattleState, elevation: np.ndarray,
                    rule: str = DEFAULT_ATTACK_RULE) -> np.ndarray:
    """(B, 2): whether Blue (column 0) and Red attack under the attack ``rule`` (one of
    :data:`ATTACK_RULES`, ``docs/simulation.md``): a side attacks when its fighting power is
    at least :data:`ATTACK_RATIO` of the enemy's; under the high-ground rules,
    :data:`HIGH_GROUND_ATTACK_RATIO` of it when it holds the higher ground (its units'
    mean relative elevation, ``elevation`` (B, U), above the enemy's by
    :data:`HIGH_GROUND_MARGIN`); under ``"high_ground_forced"``, when neither would,
    the stronger side attacks.

    Raises:
        ValueError: for a rule not in :data:`ATTACK_RULES`.
    """
    if rule not in ATTACK_RULES:
        raise ValueError(f"attack rule {rule!r} is invalid: expected one of "
                         f"{', '.join(ATTACK_RULES)}")
    if rule in ("always", "never"):
        return np.full((len(state.active), 2), rule == "always")
    active = state.active
    power = state.strength * state.quality[None] * active
    sides = np.stack([power[:, state.team == t].sum(axis=1) for t in (0, 1)], axis=1)
    if rule == "power":
        return sides >= ATTACK_RATIO * sides[:, ::-1]
    height = np.stack([(elevation * active)[:, state.team == t].sum(axis=1)
                       / np.maximum(active[:, state.team == t].sum(axis=1), 1)
                       for t in (0, 1)], axis=1)
    above = height - height[:, ::-1] > HIGH_GROUND_MARGIN
    ratio = np.where(above, HIGH_GROUND_ATTACK_RATIO, ATTACK_RATIO)
    attack = sides >= ratio * sides[:, ::-1]
    if rule == "high_ground":
        return attack
    # Someone must attack: when both would hold, the stronger side goes forward.
    stronger = sides >= sides[:, ::-1]
    return np.where(attack.any(axis=1, keepdims=True), attack, stronger)


@dataclass(frozen=True)
class _Situation:
    """What the doctrine reads off a batch of battles, for the orders of every arm: per
    battle and unit (B, U), or per pair (B, U, U) where said."""

    state: BattleState
    geometry: Geometry
    turn_rate: float
    """The battle model's ``max_turn_rate``: what a full rotate order turns."""
    enemy: np.ndarray
    """(B, U, U) pairs of units of opposing sides, both in the fight."""
    bearing: np.ndarray
    """(B, U, U) the bearing of each unit from each."""
    nearest: np.ndarray
    """Each unit's nearest enemy in the fight."""
    near_d: np.ndarray
    """The distance to it (inf: none)."""
    any_enemy: np.ndarray
    """Whether an enemy is in the fight."""
    attack: np.ndarray
    """Whether the unit's side attacks (:func:`attacking_sides`)."""
    enemy_cavalry: np.ndarray
    """(B, U, U) pairs of ``enemy`` whose second unit is cavalry."""
    cavalry_d: np.ndarray
    """The distance to the nearest enemy cavalry in the fight (inf: none)."""
    towards: np.ndarray
    """The rotate order towards the nearest enemy."""
    engage: np.ndarray
    """Whether the unit goes for the enemy: its side attacks, or an enemy is within
    :data:`DEFEND_REACH`."""

    @classmethod
    def read(cls, state: BattleState, geometry: Geometry, turn_rate: float,
             attack_rule: str) -> _Situation:
        """The situation of ``state`` seen through ``geometry``, under ``attack_rule``."""
        team, arm = state.team, state.arm
        active = state.active
        enemy = (team[:, None] != team[None, :])[None] & active[:, None, :] & active[:, :, None]
        dist = np.where(enemy, geometry.dist, np.inf)
        bearing = np.arctan2(geometry.dy, geometry.dx)
        nearest = np.argmin(dist, axis=2)
        near_d = np.take_along_axis(dist, nearest[..., None], axis=2)[..., 0]
        any_enemy = np.isfinite(near_d)
        attack = attacking_sides(state, geometry.elevation, attack_rule)[:, team]
        enemy_cavalry = enemy & (arm[None, None, :] == C.CAVALRY)
        cavalry_d = np.where(enemy_cavalry, geometry.dist, np.inf).min(axis=2)
        towards = _steer(np.take_along_axis(bearing, nearest[..., None], axis=2)[..., 0],
                         state.theta, turn_rate)
        engage = any_enemy & (attack | (near_d <= DEFEND_REACH))
        return cls(state, geometry, turn_rate, enemy, bearing, nearest, near_d, any_enemy,
                   attack, enemy_cavalry, cavalry_d, towards, engage)

    def aim(self, target: np.ndarray) -> np.ndarray:
        """The rotate order of each unit towards its ``target`` (B, U) unit."""
        return _steer(np.take_along_axis(self.bearing, target[..., None], axis=2)[..., 0],
                      self.state.theta, self.turn_rate)


class CombinedArmsDoctrine:
    """Orders of the combined-arms doctrine for a batch of battles (module docstring).

    Args:
        config: the battle model (turn rate and ranges are read from it).
        attack_rule: who attacks, one of :data:`ATTACK_RULES`.
        plan: how the arms are used (None: the default :class:`ArmsPlan`).

    Raises:
        ValueError: for an ``attack_rule`` not in :data:`ATTACK_RULES`.
        TypeError: for a ``plan`` that is not an :class:`ArmsPlan`.
    """

    def __init__(self, config: BattleConfig, attack_rule: str = DEFAULT_ATTACK_RULE,
                 plan: ArmsPlan | None = None) -> None:
        if attack_rule not in ATTACK_RULES:
            raise ValueError(f"attack_rule={attack_rule!r} is invalid: expected one of "
                             f"{', '.join(ATTACK_RULES)}")
        self.config, self.attack_rule = config, attack_rule
        self.plan = check_arms_plan(plan)

    def orders(self, state: BattleState, geometry: Geometry) -> tuple[np.ndarray, np.ndarray]:
        """Every unit's orders now.

        Returns:
            ``(actions, formations)``: (B, U, 3) ``[move, rotate, fire]`` and (B, U)
            formation orders (:data:`~envs.sim.constants.KEEP_FORMATION` to keep), as
            :func:`envs.sim.engine.step` takes them.
        """
        seen = _Situation.read(state, geometry, self.config.max_turn_rate, self.attack_rule)
        batch, n = state.x.shape
        actions = np.zeros((batch, n, C.ACTION_DIM), F32)
        formations = np.full((batch, n), C.KEEP_FORMATION, np.int8)
        # Each arm writes its own units' orders, the others' pass through.
        formations = self._infantry(seen, actions, formations)
        formations = self._cavalry(seen, actions, formations)
        formations = self._artillery(seen, actions, formations)
        # A unit does not order the formation it already has (that would be a no-op).
        formations = np.where(formations == state.formation, C.KEEP_FORMATION, formations)
        return actions, formations.astype(np.int8)

    def _infantry(self, seen: _Situation, actions: np.ndarray,
                  formations: np.ndarray) -> np.ndarray:
        """Infantry's orders into ``actions`` (in place) and its formations (returned):
        column while far, line to fight, square against horse; close to volley range and
        fire there."""
        state, plan = seen.state, self.plan
        team, near_d, any_enemy = state.team, seen.near_d, seen.any_enemy
        foot = state.arm[None, :] == C.INFANTRY
        threatened = seen.cavalry_d <= SQUARE_WITHIN
        in_square = state.formation == C.SQUARE
        safe = seen.cavalry_d > plan.unsquare_beyond
        far = near_d > plan.column_beyond
        wanted = np.where(threatened | (in_square & ~safe), C.SQUARE,
                          np.where(far & seen.attack, C.COLUMN, C.LINE))
        formations = np.where(foot, wanted, formations)
        close_in = foot & seen.engage & (near_d > plan.volley_range) & ~in_square
        if plan.step_tolerance is not None:
            # A battalion ahead of another closing battalion of its side waits for it.
            ally = (close_in[:, None, :] & close_in[:, :, None]
                    & (team[:, None] == team[None, :])[None])
            reach = np.where(any_enemy, near_d, 0.0)  # finite wherever close_in holds
            lead = np.where(ally, reach[:, None, :] - reach[:, :, None], -np.inf).max(axis=2)
            close_in &= ~(lead > plan.step_tolerance)
        actions[..., 0] = np.where(close_in, 1.0, actions[..., 0])
        actions[..., 1] = np.where(foot & any_enemy, seen.towards, actions[..., 1])
        opens_fire = plan.volley_range * (1.0 if plan.fire_discipline else 1.2)
        actions[..., 2] = np.where(foot & (near_d <= opens_fire), 1.0, actions[..., 2])
        # Squares fire at anything close, all round.
        actions[..., 2] = np.where(foot & in_square & (near_d <= plan.volley_range), 1.0,
                                   actions[..., 2])
        return formations

    def _cavalry(self, seen: _Situation, actions: np.ndarray,
                 formations: np.ndarray) -> np.ndarray:
        """Cavalry's orders into ``actions`` (in place) and its formations (returned): in
        line, at the nearest enemy that is not a square, charging within reach; shy of
        squares when there is nothing else."""
        state, plan = seen.state, self.plan
        near_d, any_enemy, attack = seen.near_d, seen.any_enemy, seen.attack
        horse = state.arm[None, :] == C.CAVALRY
        square = (state.formation == C.SQUARE)[:, None, :]
        prey = np.where(seen.enemy & ~square, seen.geometry.dist, np.inf)
        target = np.argmin(prey, axis=2)
        prey_d = np.take_along_axis(prey, target[..., None], axis=2)[..., 0]
        has_prey = np.isfinite(prey_d) & (attack | (prey_d <= DEFEND_REACH * 2))
        ride = seen.aim(target)
        shy = ~has_prey & any_enemy & (near_d < CAVALRY_SHY)
        actions[..., 0] = np.where(horse & has_prey, 1.0,
                                   np.where(horse & shy, -1.0, actions[..., 0]))
        actions[..., 1] = np.where(horse & has_prey, ride,
                                   np.where(horse & any_enemy, seen.towards, actions[..., 1]))
        actions[..., 2] = np.where(horse & has_prey & (prey_d <= plan.charge_within), 1.0,
                                   actions[..., 2])
        return np.where(horse, C.LINE, formations)

    def _artillery(self, seen: _Situation, actions: np.ndarray,
                   formations: np.ndarray) -> np.ndarray:
        """Artillery's orders into ``actions`` (in place) and its formations (returned):
        limbered, move up and unlimber within reach; in battery, turn on the target and
        fire in range; limber up to follow an attack with nothing near."""
        state, plan = seen.state, self.plan
        near_d, attack, towards = seen.near_d, seen.attack, seen.towards
        guns = state.arm[None, :] == C.ARTILLERY
        limbered = state.formation == C.LIMBERED
        unlimber = limbered & (near_d <= plan.unlimber_within)
        limber = ~limbered & attack & (near_d > LIMBER_BEYOND)
        formations = np.where(guns, np.where(unlimber, C.LINE,
                                             np.where(limber, C.LIMBERED, C.KEEP_FORMATION)),
                              formations)
        march = limbered & attack & seen.any_enemy & ~unlimber
        actions[..., 0] = np.where(guns & march, 1.0, actions[..., 0])
        in_range = near_d <= self.config.artillery_fire_range
        aim_guns = towards
        if plan.gun_target == "cavalry":
            horse_at = np.argmin(np.where(seen.enemy_cavalry, seen.geometry.dist, np.inf),
                                 axis=2)
            aim_guns = np.where(seen.cavalry_d <= self.config.artillery_fire_range,
                                seen.aim(horse_at), towards)
        actions[..., 1] = np.where(guns & seen.any_enemy, aim_guns, actions[..., 1])
        actions[..., 2] = np.where(guns & ~limbered & in_range, 1.0, actions[..., 2])
        return formations


__all__ = ["ARMS_PLANS", "ATTACK_RATIO", "ATTACK_RULES", "ArmsPlan", "CHARGE_WITHIN",
           "COLUMN_BEYOND", "CombinedArmsDoctrine", "DEFAULT_ATTACK_RULE", "GUN_TARGETS",
           "LINE_PLAN",
           "SEARCHED_PLAN", "SQUARE_WITHIN", "UNLIMBER_WITHIN", "UNSQUARE_BEYOND", "VOLLEY_RANGE",
           "attacking_sides", "check_arms_plan"]
