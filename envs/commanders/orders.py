"""Orders a battalion can follow: a posture and an objective point, in its observation.

A higher echelon commands a battalion by an *order*: one of the six postures of
:class:`~envs.options.MacroAction` and the point on the map that posture aims at, worked
out from where the battalion and its nearest enemy stand when the order is given
(:func:`objectives`). The order-conditioned battalion policy reads its order as
:data:`ORDER_DIM` numbers after its usual observation (:func:`order_features`);
:class:`OrderFollower` is the scripted battalion that follows orders.
:class:`OrderedBattalionBatch` is the battles phase 1 of the HRL curriculum trains in:
random orders every ``period`` steps, seen in the observations and paid by an order term
beside the team reward (:class:`OrderRewards`); an order is *met* when the battalion is
within :data:`HOLD_RADIUS` of its objective as its period ends. ``docs/echelons.md``
("Orders") gives each posture's objective and the order features.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.battles.multi_battalion_batch import BLUE, MultiBattalionBatch, TeamStep
from envs.battles.multi_observation import ROTATE_SIGN
from envs.battles.observation import OBS_DIM as DUEL_OBS_DIM
from envs.battles.observation import OBSERVATION_FEATURES
from envs.commanders.doctrine import DisciplinedCommander
from envs.options import FIRE_AT_HIT_CHANCE, MacroAction
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.constants import MAX_TURN_RATE
from envs.sim.validation import check_in_range, check_int, check_number, check_positive

F32 = np.float32
N_POSTURES = len(MacroAction)
ORDER_DIM = N_POSTURES + 3
"""Numbers an order adds to a battalion's observation."""
ORDER_FEATURES = tuple(f"order_{p.name.lower()}" for p in MacroAction) + (
    "objective_distance", "objective_bearing_cos", "objective_bearing_sin")
ENGAGE_DISTANCE = 60.0
"""An advance aims this many metres short of the enemy: the disciplined doctrine's volley
range (:class:`~envs.commanders.doctrine.DisciplinedCommander`), where it beats the scripted
commanders."""
FLANK_OFFSET = 150.0
"""A flank march aims this many metres to the side of the enemy."""
WITHDRAW_DISTANCE = 100.0
"""A withdrawal aims this many metres back from the enemy."""
HOLD_RADIUS = 40.0
"""Within this many metres of its objective a battalion holds it."""
ARRIVED = 10.0
"""Within this many metres of its objective the scripted follower halts."""
ORDER_DISTANCE_SCALE = 500.0
"""Objective distances are seen over this many metres (clipped at 1)."""
PROGRESS_SCALE = 100.0
"""Progress towards the objective is rewarded per this many metres."""
_ENEMY_SIN = OBSERVATION_FEATURES.index("enemy_relative_bearing_sin")
_ENEMY_COS = OBSERVATION_FEATURES.index("enemy_relative_bearing_cos")
_OWN_HIT = OBSERVATION_FEATURES.index("own_hit_chance")


@dataclass(frozen=True)
class OrderRewards:
    """The order term of a battalion's reward, added to its team reward each step.

    Attributes:
        progress: reward per :data:`PROGRESS_SCALE` metres gained towards the objective
            (negative when moving away).
        hold: reward each step the battalion ends within :data:`HOLD_RADIUS` of it.
    """

    progress: float = 2.0
    hold: float = 0.05

    def __post_init__(self) -> None:
        check_number("progress", self.progress)
        check_number("hold", self.hold)


def nearest_enemies(x: np.ndarray, y: np.ndarray, active: np.ndarray,
                    team: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's nearest enemy in the fight: its (B, U) index, and (B, U) whether
    there is one. ``x``, ``y``, ``active`` are (B, U); ``team`` (U,)."""
    dist = np.hypot(x[:, :, None] - x[:, None, :], y[:, :, None] - y[:, None, :])
    enemy = (team[:, None] != team[None, :])[None] & active[:, None, :]
    dist = np.where(enemy, dist, np.inf)
    return dist.argmin(axis=2), enemy.any(axis=2)


def objectives(posture: np.ndarray, x: np.ndarray, y: np.ndarray, active: np.ndarray,
               team: np.ndarray, width: float, height: float) -> np.ndarray:
    """(B, U, 2) objective points of (B, U) ``posture`` orders given now (module
    docstring), inside the map; a battalion with no enemy in the fight holds where it
    stands."""
    target, seen = nearest_enemies(x, y, active, team)
    ex = np.take_along_axis(x, target, axis=1)
    ey = np.take_along_axis(y, target, axis=1)
    dx, dy = ex - x, ey - y
    dist = np.maximum(np.hypot(dx, dy), 1e-6)
    ux, uy = dx / dist, dy / dist
    # Left of the line to the enemy, in each side's own frame (Red's is mirrored).
    side = ROTATE_SIGN[team][None, :]
    lx, ly = -uy * side, ux * side
    goal_x, goal_y = x.copy(), y.copy()
    for kind, (gx, gy) in {
        MacroAction.ADVANCE_SECTOR: (ex - ux * ENGAGE_DISTANCE, ey - uy * ENGAGE_DISTANCE),
        MacroAction.FLANK_LEFT: (ex + lx * FLANK_OFFSET, ey + ly * FLANK_OFFSET),
        MacroAction.FLANK_RIGHT: (ex - lx * FLANK_OFFSET, ey - ly * FLANK_OFFSET),
        MacroAction.WITHDRAW: (x - ux * WITHDRAW_DISTANCE, y - uy * WITHDRAW_DISTANCE),
    }.items():
        chosen = (posture == kind) & seen
        goal_x = np.where(chosen, gx, goal_x)
        goal_y = np.where(chosen, gy, goal_y)
    return np.stack([np.clip(goal_x, 0.0, width), np.clip(goal_y, 0.0, height)], axis=-1)


def order_features(posture: np.ndarray, objective: np.ndarray, x: np.ndarray, y: np.ndarray,
                   theta: np.ndarray, team: np.ndarray) -> np.ndarray:
    """(B, U, ORDER_DIM) float32: what each battalion reads of its order (module
    docstring), from the (B, U) posture, the (B, U, 2) objective and the units' (B, U)
    positions and facings."""
    dx, dy = objective[..., 0] - x, objective[..., 1] - y
    dist = np.hypot(dx, dy)
    bearing = np.arctan2(dy, dx) - theta
    here = dist < 1e-6
    out = np.zeros(posture.shape + (ORDER_DIM,), F32)
    np.put_along_axis(out, posture[..., None].astype(np.intp), 1.0, axis=-1)
    out[..., N_POSTURES] = np.minimum(dist / ORDER_DISTANCE_SCALE, 1.0)
    out[..., N_POSTURES + 1] = np.where(here, 1.0, np.cos(bearing))
    out[..., N_POSTURES + 2] = np.where(here, 0.0, np.sin(bearing) * ROTATE_SIGN[team])
    return out


class OrderFollower:
    """A scripted battalion commander that follows its order. On an attack it fights as
    the disciplined doctrine does (:class:`~envs.commanders.doctrine.DisciplinedCommander`: it
    closes on the nearest enemy in silence to ``hold_range`` metres and volleys there);
    on any other order it turns to its objective and marches on it
    without firing, and within :data:`ARRIVED` of it halts, faces the nearest enemy and
    fires once a volley would hit at least :data:`~envs.options.FIRE_AT_HIT_CHANCE`.

    It reads its observation with the order after it (``OBS_DIM + ORDER_DIM`` numbers,
    or the duel's with the order), so it is the order-conditioned policy's scripted
    alternative and the teacher of phase 1's warm start.

    Args:
        map_diagonal: the map's diagonal in metres (the doctrine reads distances
            relative to it).
        max_turn_rate: the battle's turn rate, to wheel without overshooting.
        hold_range: where an attack halts and volleys, in metres: the attack's objective
            (:data:`ENGAGE_DISTANCE`) by default; phase 1 of the HRL curriculum imitates
            it at MAPPO's ``warm_start_hold_range``.

    Raises:
        ValueError: for a ``max_turn_rate`` or ``hold_range`` that is not positive.
    """

    def __init__(self, map_diagonal: float = BattleConfig().diagonal,
                 max_turn_rate: float = MAX_TURN_RATE,
                 hold_range: float = ENGAGE_DISTANCE) -> None:
        self.max_turn_rate = check_positive("max_turn_rate", max_turn_rate)
        self.attack = DisciplinedCommander(hold_range=hold_range,
                                           map_diagonal=map_diagonal,
                                           max_turn_rate=max_turn_rate)

    def predict(self, observation: np.ndarray,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """Orders (n, 3) for (n, D) observations each ending with an order."""
        obs = np.atleast_2d(np.asarray(observation, dtype=np.float32))
        order = obs[:, -ORDER_DIM:]
        distance = order[:, N_POSTURES] * ORDER_DISTANCE_SCALE
        to_goal = np.arctan2(order[:, N_POSTURES + 2], order[:, N_POSTURES + 1])
        to_enemy = np.arctan2(obs[:, _ENEMY_SIN], obs[:, _ENEMY_COS])
        there = distance <= ARRIVED
        march = np.where(np.abs(to_goal) < 0.5, 1.0, 0.2)
        move = np.where(there, 0.0, march)
        rotate = np.clip(np.where(there, to_enemy, to_goal) / self.max_turn_rate, -1, 1)
        # Fire discipline: no volleys on the march; at the objective, a volley once it
        # would tell.
        fire = there & (np.abs(to_enemy) < 0.3) & (obs[:, _OWN_HIT] >= FIRE_AT_HIT_CHANCE)
        orders = np.stack([move, rotate, fire], axis=1).astype(F32)
        attack = order[:, MacroAction.ADVANCE_SECTOR] > 0.5
        if attack.any():
            orders[attack] = self.attack.predict(obs[attack][:, :DUEL_OBS_DIM])[0]
        return orders, None


class OrderedStep:
    """A :class:`~envs.battles.multi_battalion_batch.TeamStep` whose battalions follow orders:
    the reward has the order term, the observation and critic inputs carry the orders;
    every other field is the team step's."""

    def __init__(self, step: TeamStep, reward: np.ndarray, observation: np.ndarray,
                 critic_state: np.ndarray) -> None:
        self._step = step
        self.reward, self.observation, self.critic_state = reward, observation, critic_state

    def __getattr__(self, name: str) -> Any:
        if name == "_step":
            raise AttributeError(name)
        return getattr(self._step, name)


class OrderedBattalionBatch:
    """Battles whose battalions follow random orders (module docstring).

    Everything not written here is the wrapped battles' (``n_blue``, ``state``,
    ``scripted_actions``, ``action_noise``, ...).

    Args:
        battles: the :class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`.
        period: steps an order lasts (>= 1); new orders come at every multiple of it.
        rewards: the order term's weights.
        postures: the postures orders are drawn from (all six by default; evaluations
            give one alone, such as the attack).
        attack_share: the share of orders that are attacks (``advance_sector``) whatever
            ``postures`` says; the rest are drawn evenly from ``postures``.

    Attributes:
        posture: (B, U) each battalion's current posture (a :class:`MacroAction`).
        objective: (B, U, 2) its objective point on the map.
        orders_issued, orders_met: Blue's orders (the learner's, in phase 1) whose period
            ran out with the battalion in the fight, and those of them it met (within
            :data:`HOLD_RADIUS`).
    """

    def __init__(self, battles: MultiBattalionBatch, period: int = 50,
                 rewards: OrderRewards | None = None,
                 postures: tuple[int, ...] = tuple(MacroAction),
                 attack_share: float = 0.0) -> None:
        self.battles = battles
        self.period = check_int("period", period, minimum=1)
        self.rewards = rewards or OrderRewards()
        if not postures or not set(postures) <= set(MacroAction):
            raise ValueError(f"postures={postures!r} is invalid: expected some of "
                             f"{[int(p) for p in MacroAction]} (envs.options.MacroAction)")
        self.postures = np.array(sorted(set(postures)), np.int8)
        self.attack_share = check_in_range("attack_share", attack_share, 0.0, 1.0)
        shape = (battles.n_battles, battles.n_units)
        self.posture = np.zeros(shape, np.int8)
        self.objective = np.zeros(shape + (2,), F32)
        self.orders_issued = self.orders_met = 0

    def __getattr__(self, name: str) -> Any:
        if name == "battles":  # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self.battles, name)

    def take_order_counts(self) -> tuple[int, int]:
        """Orders issued and met since the last call (the counters restart at 0)."""
        counts = self.orders_issued, self.orders_met
        self.orders_issued = self.orders_met = 0
        return counts

    # --- orders -------------------------------------------------------------------------

    def issue(self, battles: np.ndarray) -> None:
        """New random orders for every battalion of ``battles``, drawn from each battle's
        own keyed stream (the same in any batch or split)."""
        if len(battles) == 0:
            return
        state = self.battles.state
        draws = rnd.uniform(state.key[battles], rnd.STREAM_ORDERS, state.step[battles],
                            self.battles.n_units)
        # An attack with probability attack_share, else a posture drawn evenly.
        share, n = self.attack_share, len(self.postures)
        even = np.clip((draws - share) / max(1.0 - share, 1e-12), 0.0, 1.0)
        drawn = self.postures[np.minimum((even * n).astype(np.intp), n - 1)]
        self.posture[battles] = np.where(draws < share, MacroAction.ADVANCE_SECTOR, drawn)
        config = self.battles.config
        self.objective[battles] = objectives(
            self.posture[battles], state.x[battles], state.y[battles], state.active[battles],
            state.team, config.map_width, config.map_height)

    def distance(self) -> np.ndarray:
        """(B, U) each battalion's distance to its objective now."""
        state = self.battles.state
        return np.hypot(self.objective[..., 0] - state.x, self.objective[..., 1] - state.y)

    def features(self) -> np.ndarray:
        state = self.battles.state
        return order_features(self.posture, self.objective, state.x, state.y, state.theta,
                              state.team)

    # --- what the commanders see --------------------------------------------------------

    def _with_orders(self, observation: np.ndarray) -> np.ndarray:
        return np.concatenate([observation, self.features()], axis=-1)

    def _critic(self, observation: np.ndarray, global_state: np.ndarray) -> np.ndarray:
        team_state = global_state[self.battles.team].transpose(1, 0, 2)
        return np.concatenate([observation, team_state], axis=-1)

    @property
    def observation(self) -> np.ndarray:
        """(B, U, OBS_DIM + ORDER_DIM) every battalion's observation and order."""
        return self._with_orders(self.battles.observation)

    @property
    def critic_state(self) -> np.ndarray:
        """(B, U, OBS_DIM + ORDER_DIM + STATE_DIM) centralised-critic inputs."""
        return self._critic(self.observation, self.battles.global_state)

    # --- episodes and steps ---------------------------------------------------------------

    def reset(self, battles: np.ndarray, seeds: list[int | None],
              fresh_seeds: np.ndarray) -> None:
        self.battles.reset(battles, seeds, fresh_seeds)
        self.issue(np.asarray(battles, np.intp))

    def next_episode(self, battles: np.ndarray) -> None:
        self.battles.next_episode(battles)
        self.issue(np.asarray(battles, np.intp))

    def step(self, actions: np.ndarray, formations: np.ndarray | None = None) -> OrderedStep:
        """Step the battles; the reward gains the order term, and orders whose period
        ran out are scored and replaced."""
        before = self.distance()
        result = self.battles.step(actions, formations)
        after = self.distance()
        held = after <= HOLD_RADIUS
        term = self.rewards.progress * (before - after) / PROGRESS_SCALE + self.rewards.hold * held
        reward = result.reward + np.where(result.acted, term, 0.0).astype(F32)
        state = self.battles.state
        due = np.flatnonzero((state.step % self.period == 0) & ~result.battle_over)
        if len(due):
            in_fight = state.active[due] & (self.battles.team == BLUE)
            self.orders_issued += int(in_fight.sum())
            self.orders_met += int((in_fight & held[due]).sum())
            self.issue(due)
        observation = self._with_orders(result.observation)
        return OrderedStep(result, reward, observation,
                           self._critic(observation, result.global_state))

    # --- splitting across workers -------------------------------------------------------

    def split(self, sizes: list[int]) -> list[OrderedBattalionBatch]:
        parts, start = [], 0
        for battles in self.battles.split(sizes):
            part = copy.copy(self)
            rows = slice(start, start + battles.n_battles)
            part.battles, part.posture = battles, self.posture[rows].copy()
            part.objective = self.objective[rows].copy()
            part.orders_issued = part.orders_met = 0
            parts.append(part)
            start += battles.n_battles
        return parts

    def join(self, parts: list[OrderedBattalionBatch]) -> None:
        self.battles.join([part.battles for part in parts])
        self.posture = np.concatenate([part.posture for part in parts])
        self.objective = np.concatenate([part.objective for part in parts])
        self.orders_issued += sum(part.orders_issued for part in parts)
        self.orders_met += sum(part.orders_met for part in parts)


__all__ = ["ENGAGE_DISTANCE", "FLANK_OFFSET", "HOLD_RADIUS", "N_POSTURES", "ORDER_DIM",
           "ORDER_FEATURES", "OrderFollower", "OrderRewards", "OrderedBattalionBatch",
           "OrderedStep", "WITHDRAW_DISTANCE", "nearest_enemies", "objectives", "order_features"]
