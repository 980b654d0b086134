"""Shaped rewards for the 1v1 battalion duel, computed for a whole batch.

The reward is a weighted sum of eight components; ``info`` carries each
component under ``reward/<name>`` and their sum under ``reward/total``, so a
training run can see which part of the shaping drives its behaviour.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from envs.sim.validation import check_number

COMPONENTS = (
    "delta_enemy_strength",
    "delta_own_strength",
    "survival_bonus",
    "win_bonus",
    "loss_penalty",
    "time_penalty",
    "enemy_routed_bonus",
    "own_routing_penalty",
    "approach",
    "fire_cost",
)
"""Reward component names, in the order of :attr:`RewardComponents.values` rows."""

INFO_KEYS = tuple(f"reward/{name}" for name in COMPONENTS) + ("reward/total",)


@dataclass(frozen=True)
class RewardWeights:
    """Weight of each reward component.

    Attributes:
        delta_enemy_strength: per unit of strength Blue removes from Red.
        delta_own_strength: per unit of strength Blue loses (counted negative).
        survival_bonus: per step, times Blue's remaining strength.
        win_bonus: once, when Blue wins.
        loss_penalty: once, when Blue loses (a negative number penalises).
        time_penalty: every step (a negative number urges a decision).
        enemy_routed_bonus: every step Red is routed.
        own_routing_penalty: every step Blue is routed (counted as given).
        approach: per map diagonal of distance Blue closes on Red (negative when
            opening it). This is potential-based shaping on the distance, so it
            guides a learner across empty ground without changing which policy
            is best; 0 (off) by default.
        fire_cost: per volley Blue fires (readiness spent; a full volley is 1),
            counted negative: powder and shot are not free, so a volley pays
            only where it is likely to hit. 0 (off) by default.
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


@dataclass(frozen=True, eq=False)
class RewardComponents:
    """Weighted reward components of a batch of steps.

    Attributes:
        values: (8, B) float32, one row per :data:`COMPONENTS` entry (rows are
            contiguous, so per-component and total sums over a batch are cheap).
        total: (B,) float32 reward, the sum of the eight components.
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
    """Reward components for a batch of steps (scalars count as a batch of one).

    Args:
        dmg_b2r: strength Blue removed from Red this step (after cover).
        dmg_r2b: strength Red removed from Blue this step.
        blue_strength: Blue's strength after the step.
        blue_won, blue_lost: whether the step ended the battle in Blue's favour / against it.
        weights: component weights.
        enemy_routed, own_routing: whether Red / Blue is routed after the step.
        closed_distance: distance between the two closed this step, as a
            fraction of the map diagonal (negative when it opened).
        volley: readiness Blue spent firing this step (a full volley is 1).
    """
    return reward_from_weight_vector(
        weights.as_array(), dmg_b2r, dmg_r2b, blue_strength, blue_won, blue_lost,
        enemy_routed, own_routing, closed_distance, volley)


def reward_from_weight_vector(weights: np.ndarray, dmg_b2r, dmg_r2b, blue_strength, blue_won,
                              blue_lost, enemy_routed, own_routing, closed_distance,
                              volley) -> RewardComponents:
    """:func:`compute_reward` with the weights already as a vector (the hot path)."""
    features = np.stack(np.broadcast_arrays(*(np.atleast_1d(np.asarray(f, np.float32)) for f in (
        dmg_b2r, -np.asarray(dmg_r2b, np.float32), blue_strength, blue_won, blue_lost, 1.0,
        enemy_routed, own_routing, closed_distance, -np.asarray(volley, np.float32)))),
        axis=0)
    values = features * weights[:, None]
    return RewardComponents(values, values.sum(axis=0))
