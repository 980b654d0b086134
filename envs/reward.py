"""Shaped rewards of a batch of battles: one function for the duel and the team battles.

The reward is a weighted sum of ten components, the fields of :class:`RewardWeights`
(:data:`COMPONENTS`); ``info`` carries each component under ``reward/<name>`` and
their sum under ``reward/total``, so a training run can see which part of the
shaping drives its behaviour.

:func:`side_rewards` computes the components of each side from one step of the
simulator; a side's reward is shared by its battalions in the fight:

* damage dealt, as a fraction of the enemy side's starting strength, and damage
  taken, as a fraction of one's own side's;
* the win bonus or loss penalty when the battle is decided, and the time penalty;
* survival: the side's mean strength; routs: the fraction of each side that routed
  this step (a rout is paid once, on the step it happens);
* approach: the mean distance by which the side's battalions closed on their
  nearest enemy in the fight, of the map diagonal (potential-based shaping);
* fire cost: the mean volley of the side's battalions that acted.

The 1v1 duel (:class:`~envs.battalion_batch.BattalionBatch`) is the case of one
battalion a side, and its reward is Blue's; the team battles
(:class:`~envs.multi_battalion_batch.MultiBattalionBatch`) reward both sides. With
one battalion a side the team reward is therefore the duel's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from envs.sim.engine import Geometry, StepEvents, team_layout
from envs.sim.state import BattleState
from envs.sim.validation import check_number

F32 = np.float32
BLUE, RED = 0, 1


@dataclass(frozen=True)
class RewardWeights:
    """Weight of each reward component; the field names are the component names.

    Attributes:
        delta_enemy_strength: per unit of strength Blue removes from Red.
        delta_own_strength: per unit of strength Blue loses (counted negative).
        survival_bonus: per step, times Blue's remaining strength.
        win_bonus: once, when Blue wins.
        loss_penalty: once, when Blue loses (a negative number penalises).
        time_penalty: every step (a negative number urges a decision).
        enemy_routed_bonus: when Red routs.
        own_routing_penalty: when Blue routs (counted as given).
        approach: per map diagonal of distance Blue closes on Red (negative when
            opening it). This is potential-based shaping on the distance, so it
            guides a learner across empty ground without changing which policy
            is best; 0 (off) by default.
        fire_cost: per volley Blue fires (readiness spent; a full volley is 1),
            counted negative: powder and shot are not free, so a volley pays
            only where it is likely to hit. 0 (off) by default.

    Raises:
        ValueError: if a weight is not a finite number (the message names it).
    """

    delta_enemy_strength: float = 5.0
    delta_own_strength: float = 5.0
    survival_bonus: float = 0.0
    win_bonus: float = 10.0
    loss_penalty: float = -10.0
    time_penalty: float = -0.01
    enemy_routed_bonus: float = 0.0
    own_routing_penalty: float = 0.0
    approach: float = 0.0
    fire_cost: float = 0.0

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            check_number(field.name, getattr(self, field.name))

    def as_array(self) -> np.ndarray:
        """The weights as a float32 vector in :data:`COMPONENTS` order."""
        return np.array([getattr(self, name) for name in COMPONENTS], dtype=np.float32)


COMPONENTS = tuple(field.name for field in dataclasses.fields(RewardWeights))
"""Reward component names (the fields of :class:`RewardWeights`), in the order of
:attr:`RewardComponents.values` rows."""

INFO_KEYS = tuple(f"reward/{name}" for name in COMPONENTS) + ("reward/total",)
"""The ``info`` keys of a step's reward: one per component, then the total."""


@dataclass(frozen=True, eq=False)
class RewardComponents:
    """Weighted reward components of a batch of steps.

    Attributes:
        values: (10, N) float32 for N steps, one row per :data:`COMPONENTS` entry (rows
            are contiguous, so per-component and total sums over a batch are cheap).
        total: (N,) float32 reward, the sum of the ten components.
    """

    values: np.ndarray
    total: np.ndarray

    def __getattr__(self, name: str) -> np.ndarray:
        if name in COMPONENTS:
            return self.values[COMPONENTS.index(name)]
        raise AttributeError(name)

    def as_dict(self, index: int = 0) -> dict[str, float]:
        """``reward/<component>`` and ``reward/total`` of battle ``index`` as floats."""
        return dict(zip(INFO_KEYS, [*self.values[:, index].tolist(), float(self.total[index])],
                        strict=True))


def compute_reward(
    *,
    dmg_b2r: np.ndarray | float,
    dmg_r2b: np.ndarray | float,
    blue_strength: np.ndarray | float,
    blue_won: np.ndarray | bool,
    blue_lost: np.ndarray | bool,
    weights: RewardWeights,
    enemy_routed: np.ndarray | bool = False,
    own_routing: np.ndarray | bool = False,
    closed_distance: np.ndarray | float = 0.0,
    volley: np.ndarray | float = 0.0,
) -> RewardComponents:
    """Reward components of Blue from its features (scalars count as a batch of one).

    The environments compute the features from the simulator with
    :func:`side_rewards`; this weighs features given by hand the same way.

    Args:
        dmg_b2r: strength Blue removed from Red this step (after cover).
        dmg_r2b: strength Red removed from Blue this step.
        blue_strength: Blue's strength after the step.
        blue_won: whether the step ended the battle in Blue's favour.
        blue_lost: whether it ended the battle against Blue.
        weights: component weights.
        enemy_routed: whether Red routed this step.
        own_routing: whether Blue routed this step.
        closed_distance: distance between the two closed this step, as a
            fraction of the map diagonal (negative when it opened).
        volley: readiness Blue spent firing this step (a full volley is 1).

    Returns:
        The weighted components and their total.
    """
    features = np.stack(np.broadcast_arrays(*(np.atleast_1d(np.asarray(f, F32)) for f in (
        dmg_b2r, -np.asarray(dmg_r2b, F32), blue_strength, blue_won, blue_lost, 1.0,
        enemy_routed, own_routing, closed_distance, -np.asarray(volley, F32)))), axis=0)
    return _weigh(features, weights.as_array())


def _weigh(features: np.ndarray, weights: np.ndarray) -> RewardComponents:
    """Components of (10, N) C-contiguous float32 ``features`` in :data:`COMPONENTS` order
    (the costs already negative) under a :meth:`RewardWeights.as_array` vector."""
    values = features * weights[:, None]
    return RewardComponents(values, values.sum(axis=0))


@dataclass(frozen=True, eq=False)
class SideLayout:
    """How the battalions of a batch form the two sides, and whose rewards to compute.

    Build it once per batch with :meth:`of`.

    Attributes:
        members: (2, U) float32, 1 where a battalion fights for the side (row 0 Blue,
            row 1 Red): per-side sums are one matrix product.
        size: (2, 1) float32 battalions a side.
        enemy: (U, U, 1) bool, whether two battalions fight on opposite sides.
        sides: the sides :func:`side_rewards` returns, in order.
    """

    members: np.ndarray
    size: np.ndarray
    enemy: np.ndarray
    sides: tuple[int, ...]

    @classmethod
    def of(cls, team: np.ndarray, sides: tuple[int, ...] = (BLUE, RED)) -> SideLayout:
        """The layout of battalions whose sides are ``team`` (U,), rewarding ``sides``."""
        team = np.asarray(team)
        members = np.stack([team == side for side in (BLUE, RED)]).astype(F32)
        size = np.array([[members[BLUE].sum()], [members[RED].sum()]], F32)
        return cls(members, size, team_layout(tuple(team.tolist()))[2], tuple(sides))


def side_won(defeated: np.ndarray) -> np.ndarray:
    """(2, B) whether Blue (row 0) / Red (row 1) won, from (2, B) whether each side has
    nobody left in the fight (``BattleState.team_defeated().T``): a side wins when the
    other is out and it is not (both out at once is a draw)."""
    return defeated[::-1] & ~defeated


def side_rewards(weights: np.ndarray, layout: SideLayout, before: BattleState,
                 geometry_before: Geometry, after: BattleState, events: StepEvents,
                 inverse_diagonal: np.float32, *,
                 won: np.ndarray | None = None) -> RewardComponents:
    """Reward components of each side of ``layout.sides`` for one step of a batch.

    Args:
        weights: :meth:`RewardWeights.as_array`.
        layout: the sides, from :meth:`SideLayout.of`.
        before: the state at the start of the step.
        geometry_before: :func:`~envs.sim.engine.sense` of ``before``.
        after: the state the step returned.
        events: the events the step returned.
        inverse_diagonal: 1 / the map diagonal, as float32.
        won: (2, B) :func:`side_won` of ``after``, if the caller has it already.

    Returns:
        The components of ``len(layout.sides) * B`` steps, side-major (column
        ``k * B + b`` is side ``layout.sides[k]`` in battle ``b``).
    """
    members, size = layout.members, layout.size
    acted = before.active
    acted_u = acted.T.astype(F32)  # (U, B)
    acted_count = np.maximum(members @ acted_u, F32(1))
    if won is None:
        won = side_won((members @ after.active.T.astype(F32)) == 0)

    # Approach: how much nearer each battalion got to the nearest enemy that was
    # in the fight, averaged over the side's battalions that acted.
    beyond = np.where(layout.enemy & acted.T[None, :, :], F32(0), F32(np.inf))  # (U, U, B)
    near_before = (geometry_before.dist.transpose(1, 2, 0) + beyond).min(axis=1)
    near_after = (events.geometry.dist.transpose(1, 2, 0) + beyond).min(axis=1)
    engaged = np.isfinite(near_before)  # the same targets before and after
    closed = (np.where(engaged, near_before, F32(0))
              - np.where(engaged, near_after, F32(0))) * acted_u

    # Routs are paid once, on the step they happen (the duel ends on its rout).
    newly_routed = (after.routed & ~before.routed).T.astype(F32)
    routed_share = members @ newly_routed / size

    per_side = {  # (2, B) each; costs negative
        "delta_enemy_strength": members @ events.damage_dealt.T / size[::-1],
        "delta_own_strength": -(members @ events.damage_taken.T / size),
        "survival_bonus": members @ after.strength.T / size,
        "win_bonus": won,
        "loss_penalty": won[::-1],
        "time_penalty": 1,
        "enemy_routed_bonus": routed_share[::-1],
        "own_routing_penalty": routed_share,
        "approach": members @ closed / acted_count * inverse_diagonal,
        "fire_cost": -(members @ events.volley.T / acted_count),
    }
    features = np.empty((len(COMPONENTS), 2, after.batch_size), F32)
    for row, name in enumerate(COMPONENTS):
        features[row] = per_side[name]
    if layout.sides != (BLUE, RED):
        features = features[:, list(layout.sides)]
    return _weigh(features.reshape(len(COMPONENTS), -1), weights)


__all__ = ["COMPONENTS", "INFO_KEYS", "RewardComponents", "RewardWeights", "SideLayout",
           "compute_reward", "side_rewards", "side_won"]
