"""Observations of the 1v1 battalion duel, for both sides of a whole batch at once.

Features 0-16 follow the reference layout (REFERENCE §A.5). Features 17-24 add
what a commander needs to use this simulator's fire and flank model: how loaded
each side's muskets are; where the enemy lies relative to one's own front (and
oneself relative to the enemy's front), which the absolute bearing only gives
after trigonometry the policy would have to learn; and the hit chance a volley
would have right now, each way (zero out of range, arc or sight). The last two
matter most: the whole fire range is under a seventh of the normalised
distance, too fine a band for a network to read fire effect from.

**Each side in its own frame.** Red's observation is mirrored across the map's
north-south centre line, so both battalions see the battle as if their side had
deployed in the west, facing east, and a policy's orders are read in the same
frame (:data:`ROTATE_SIGN`: Red's "turn left" turns it right on the real map).
One policy can then command either side: a snapshot of the learner meets it as
Red in the situations it learnt as Blue.
"""

from __future__ import annotations

import numpy as np

from envs.sim.config import BattleConfig
from envs.sim.engine import Geometry, hit_chance
from envs.sim.state import BattleState

F32 = np.float32

OBSERVATION_FEATURES = (
    "own_x", "own_y", "own_heading_cos", "own_heading_sin", "own_strength", "own_morale",
    "enemy_distance", "enemy_bearing_cos", "enemy_bearing_sin",
    "enemy_strength", "enemy_morale", "time_fraction",
    "own_elevation", "own_cover", "enemy_elevation", "enemy_cover", "line_of_sight",
    "own_readiness", "enemy_readiness",
    "enemy_relative_bearing_cos", "enemy_relative_bearing_sin",
    "own_bearing_from_enemy_front_cos", "own_bearing_from_enemy_front_sin",
    "own_hit_chance", "enemy_hit_chance",
)
"""Names of the observation vector's entries, in order. Positions are divided by
the map size and distance by the map diagonal (capped at 1); bearings are given
as cosine and sine; elevation is relative to the map's highest point."""

OBS_DIM = len(OBSERVATION_FEATURES)
_SIGNED = {"own_heading_cos", "own_heading_sin", "enemy_bearing_cos", "enemy_bearing_sin",
           "enemy_relative_bearing_cos", "enemy_relative_bearing_sin",
           "own_bearing_from_enemy_front_cos", "own_bearing_from_enemy_front_sin"}
OBS_LOW = np.array([-1.0 if name in _SIGNED else 0.0 for name in OBSERVATION_FEATURES], F32)
OBS_HIGH = np.ones(OBS_DIM, F32)

MIRROR_NEGATED = frozenset({"own_heading_cos", "enemy_bearing_cos",
                            "enemy_relative_bearing_sin", "own_bearing_from_enemy_front_sin"})
"""Features whose sign mirroring across the north-south centre line flips: headings
theta become pi - theta (cosine negated), angles measured between two directions change
sign (sine negated). ``own_x`` becomes ``1 - own_x``; the rest are unchanged."""
ROTATE_SIGN = np.array([1.0, -1.0], F32)
"""Sign of the rotate order on the real map, by side (Blue, Red): orders are given in
each side's own frame."""

_MIRROR = np.array([[1.0, -1.0 if name in MIRROR_NEGATED or name == "own_x" else 1.0]
                    for name in OBSERVATION_FEATURES], F32)[:, :, None]
_OWN_X = OBSERVATION_FEATURES.index("own_x")
_SIDE = np.array([0, 1])
_OTHER = np.array([1, 0])


def duel_observations(state: BattleState, geometry: Geometry,
                      config: BattleConfig) -> np.ndarray:
    """Observations of both battalions of 1v1 battles.

    Args:
        state: a batch of battles with two units (0 = Blue, 1 = Red).
        geometry: :func:`envs.sim.engine.sense` of ``state``.
        config: the battle model's parameters.

    Returns:
        (2, B, OBS_DIM) float32: ``[0]`` is Blue's view, ``[1]`` Red's, mirrored into
        Red's own frame.
    """
    # Unit-major (2, B): row s is side s's own value, row s reversed is the enemy's.
    def own_and_enemy(battle_major: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        own = battle_major.T
        return own, own[::-1]

    def toward_enemy(pairwise: np.ndarray) -> np.ndarray:
        return pairwise.transpose(1, 2, 0)[_SIDE, _OTHER]

    k = config.f32
    strength, enemy_strength = own_and_enemy(state.strength)
    morale, enemy_morale = own_and_enemy(state.morale)
    readiness, enemy_readiness = own_and_enemy(state.readiness)
    elevation, enemy_elevation = own_and_enemy(geometry.elevation)
    cover, enemy_cover = own_and_enemy(geometry.cover)
    # Rounding can nudge a ratio just past 1; the space's bounds are exact.
    def unit_interval(a: np.ndarray) -> np.ndarray:
        return np.minimum(np.maximum(a, F32(-1)), F32(1))

    dist = toward_enemy(geometry.dist)
    inv = F32(1) / np.maximum(dist, F32(1e-3))
    relative_cos = unit_interval(toward_enemy(geometry.facing_cos))
    relative_sin = unit_interval(toward_enemy(geometry.facing_sin))
    time_fraction = np.minimum(state.step.astype(F32) * F32(1 / config.max_steps), F32(1))
    los = toward_enemy(geometry.los)
    # The hit chance a volley would have now: in range, inside the arc, in sight.
    hits = hit_chance(dist, config) * (relative_cos > k.cos_fire_arc) * los

    features = (
        state.x.T * (F32(1) / k.map_width), state.y.T * (F32(1) / k.map_height),
        geometry.heading_cos.T, geometry.heading_sin.T, strength, morale,
        np.minimum(dist * F32(1 / config.diagonal), F32(1)),
        unit_interval(toward_enemy(geometry.dx) * inv),
        unit_interval(toward_enemy(geometry.dy) * inv),
        enemy_strength, enemy_morale, np.broadcast_to(time_fraction, dist.shape),
        elevation, cover, enemy_elevation, enemy_cover, los,
        readiness, enemy_readiness, relative_cos, relative_sin,
        relative_cos[::-1], relative_sin[::-1], hits, hits[::-1],
    )
    # Stacking along the first axis copies whole contiguous rows; the (2, B, D)
    # result is a transposed view of the (D, 2, B) block.
    block = np.stack(features, axis=0, dtype=F32)
    block *= _MIRROR
    block[_OWN_X, 1] += F32(1)
    return block.transpose(1, 2, 0)
