"""Shaped rewards of a batch of battles: one function for the duel and the team battles.

The reward is a weighted sum of ten components, the fields of :class:`RewardWeights`
(:data:`COMPONENTS`: damage dealt and taken, win, loss, time, survival, routs each way,
approach and fire cost); ``info`` carries each component under ``reward/<name>`` and
their sum under ``reward/total``, so a training run can see which part of the shaping
drives its behaviour. :func:`side_reward` (compiled) computes the components of each
side from one step of a battle; a side's reward is shared by its battalions in the
fight. The 1v1 duel (:class:`~envs.battles.battalion_batch.BattalionBatch`) is the case
of one battalion a side, and its reward is Blue's; the team battles
(:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`) reward both sides.
``docs/simulation.md`` ("Reward") defines each component.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from envs.sim.jit import kernel
from envs.sim.kernels import K_INV_DIAGONAL
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
    :func:`side_reward`; this weighs features given by hand the same way.

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


# Rows of side_reward's working block, one value per battle: per side the battalions
# that acted and those still in the fight, then one side's sums and nearest enemies.
(_ACTED_BLUE, _IN_BLUE, _ACTED_RED, _IN_RED, _DEALT, _TAKEN, _STRENGTH, _ROUTED,
 _ENEMY_ROUTED, _CLOSED, _VOLLEY, _NEAR0, _NEAR) = range(13)
_SUMS = 13


@kernel()
def side_reward(lo, hi, team, sides, weights, k, routed0, destroyed0, routed, destroyed,
                strength, dist0, dist, dealt, taken, volley, values, total):
    """The reward components of each side in ``sides`` for steps ``lo`` to ``hi - 1`` of
    a batch, written into columns ``s * B + b`` of ``values`` (10, S * B) and ``total``
    (S * B).

    Unit-major inputs: the flags before (``routed0``, ``destroyed0``) and after the step,
    the strength after, the distances before (``dist0``) and after, and the step's
    damage dealt and taken and volleys. A side's per-battalion sums run over its
    battalions in order, as a matrix product with the membership rows would. Battles
    are the inner loop, so the sums vectorise across them.
    """
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    n = team.shape[0]
    batch = dealt.shape[1]
    width = hi - lo
    zero, one = F32(0), F32(1)
    inf = F32(np.inf)
    sums = np.zeros((_SUMS, width), F32)
    size_blue = size_red = zero
    for u in range(n):
        if team[u] == 0:
            size_blue += one
        else:
            size_red += one
    # Battalions a side that acted, and whether any is still in the fight (as 1 or 0).
    for u in range(n):
        acted_row, in_row = (_ACTED_BLUE, _IN_BLUE) if team[u] == 0 else (_ACTED_RED, _IN_RED)
        for c in range(hi - lo):
            b = lo + c
            acted = not (routed0[u, b] | destroyed0[u, b])
            fighting = not (routed[u, b] | destroyed[u, b])
            sums[acted_row, c] += one if acted else zero
            sums[in_row, c] = one if fighting else sums[in_row, c]
    for column in range(sides.shape[0]):
        side = sides[column]
        for row in range(_DEALT, _SUMS):
            for c in range(width):
                sums[row, c] = zero
        for u in range(n):
            if team[u] != side:
                for c in range(hi - lo):
                    b = lo + c
                    newly_routed = routed[u, b] & (not routed0[u, b])
                    sums[_ENEMY_ROUTED, c] += one if newly_routed else zero
                continue
            for c in range(hi - lo):
                b = lo + c
                sums[_DEALT, c] += dealt[u, b]
                sums[_TAKEN, c] += taken[u, b]
                sums[_STRENGTH, c] += strength[u, b]
                newly_routed = routed[u, b] & (not routed0[u, b])
                sums[_ROUTED, c] += one if newly_routed else zero
                sums[_VOLLEY, c] += volley[u, b]
                sums[_NEAR0, c] = inf
                sums[_NEAR, c] = inf
            # Approach: how much nearer it got to the nearest enemy that was in the fight.
            for j in range(n):
                if team[j] == team[u]:
                    continue
                for c in range(hi - lo):
                    b = lo + c
                    enemy_in = not (routed0[j, b] | destroyed0[j, b])
                    sums[_NEAR0, c] = min(sums[_NEAR0, c], dist0[u, j, b]) if enemy_in \
                        else sums[_NEAR0, c]
                    sums[_NEAR, c] = min(sums[_NEAR, c], dist[u, j, b]) if enemy_in \
                        else sums[_NEAR, c]
            for c in range(hi - lo):
                b = lo + c
                counts = (not (routed0[u, b] | destroyed0[u, b])) & (sums[_NEAR0, c] < inf)
                sums[_CLOSED, c] = sums[_CLOSED, c] + (sums[_NEAR0, c] - sums[_NEAR, c]) \
                    if counts else sums[_CLOSED, c]
        own_size, other_size = (size_blue, size_red) if side == 0 else (size_red, size_blue)
        own_acted, own_row, other_row = ((_ACTED_BLUE, _IN_BLUE, _IN_RED) if side == 0
                                         else (_ACTED_RED, _IN_RED, _IN_BLUE))
        for c in range(hi - lo):
            b = lo + c
            acted_count = max(sums[own_acted, c], one)
            own_in = sums[own_row, c] > zero
            other_in = sums[other_row, c] > zero
            won = own_in & (not other_in)
            lost = other_in & (not own_in)
            features = (sums[_DEALT, c] / other_size, -(sums[_TAKEN, c] / own_size),
                        sums[_STRENGTH, c] / own_size, one if won else zero,
                        one if lost else zero, one, sums[_ENEMY_ROUTED, c] / other_size,
                        sums[_ROUTED, c] / own_size,
                        sums[_CLOSED, c] / acted_count * k[K_INV_DIAGONAL],
                        -(sums[_VOLLEY, c] / acted_count))
            col = column * batch + b
            value_sum = zero
            for row in range(len(features)):
                value = features[row] * weights[row]
                values[row, col] = value
                value_sum += value
            total[col] = value_sum


__all__ = ["COMPONENTS", "INFO_KEYS", "RewardComponents", "RewardWeights", "compute_reward",
           "side_reward"]
