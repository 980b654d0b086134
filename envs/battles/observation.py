"""Observations of the 1v1 battalion duel, for both sides of a whole batch at once.

Features 0-16 follow the reference layout (REFERENCE §A.5); features 17-24 add what a
commander needs to use this simulator's fire and flank model: how loaded each side's
muskets are, where the enemy lies relative to one's own front (and oneself relative to
the enemy's), and the hit chance a volley would have right now, each way
(:data:`OBSERVATION_FEATURES`). Red's observation is mirrored into its own frame, as if
it had deployed in the west facing east, and its orders are read in that frame
(:data:`ROTATE_SIGN`), so one policy can command either side. ``docs/simulation.md``
("Observation of the 1v1 duel") says why each feature is there.
"""

from __future__ import annotations

import numpy as np

from envs.sim import kernels
from envs.sim.config import BattleConfig
from envs.sim.engine import Geometry, pair_major, unit_major
from envs.sim.jit import kernel
from envs.sim.kernels import (
    K_COS_FIRE_ARC,
    K_HIT_EXPONENT,
    K_INV_DIAGONAL,
    K_INV_HEIGHT,
    K_INV_MAX_STEPS,
    K_INV_WIDTH,
    hit_chance_for,
    unit_interval,
)
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

MIRROR_SIGN = np.array([-1.0 if name in MIRROR_NEGATED or name == "own_x" else 1.0
                        for name in OBSERVATION_FEATURES], F32)
"""Per-feature sign of Red's mirrored observation (``own_x`` then gains 1)."""
_OWN_X = OBSERVATION_FEATURES.index("own_x")


@kernel()
def duel_observe(lo, hi, x, y, heading_cos, heading_sin, strength, morale, readiness, step,
                 after, elevation, cover, dx, dy, dist, facing_cos, facing_sin, los, k, mirror,
                 out):
    """Write both sides' observations of duels ``lo`` to ``hi - 1`` into ``out[:, b]`` (2,
    B, OBS_DIM), from their unit-major state and geometry (unit 0 Blue, unit 1 Red) after
    ``step[b] + after`` steps; Red's mirrored (``mirror`` is the per-feature sign).
    Battles are the inner loop, so the arithmetic vectorises across them."""
    assert lo >= 0  # battle indices lo + c load contiguously (see envs.sim.jit)
    one, zero = F32(1), F32(0)
    exponent = k[K_HIT_EXPONENT]
    for s in range(2):
        o = 1 - s
        for c in range(hi - lo):
            b = lo + c
            d = dist[s, o, b]
            inv = one / max(d, F32(1e-3))
            relative_cos = unit_interval(facing_cos[s, o, b])
            enemy_relative_cos = unit_interval(facing_cos[o, s, b])
            sight = one if los[s, o, b] else zero
            # The hit chance a volley would have now: in range, inside the arc, in sight.
            hits = (hit_chance_for(d, k, exponent)
                    * (one if relative_cos > k[K_COS_FIRE_ARC] else zero) * sight)
            enemy_hits = (hit_chance_for(dist[o, s, b], k, exponent)
                          * (one if enemy_relative_cos > k[K_COS_FIRE_ARC] else zero)
                          * (one if los[o, s, b] else zero))
            features = (
                x[s, b] * k[K_INV_WIDTH], y[s, b] * k[K_INV_HEIGHT], heading_cos[s, b],
                heading_sin[s, b], strength[s, b], morale[s, b], min(d * k[K_INV_DIAGONAL], one),
                unit_interval(dx[s, o, b] * inv), unit_interval(dy[s, o, b] * inv),
                strength[o, b], morale[o, b], min(F32(step[b] + after) * k[K_INV_MAX_STEPS], one),
                elevation[s, b], cover[s, b], elevation[o, b], cover[o, b], sight,
                readiness[s, b], readiness[o, b], relative_cos,
                unit_interval(facing_sin[s, o, b]), enemy_relative_cos,
                unit_interval(facing_sin[o, s, b]), hits, enemy_hits)
            if s == 0:
                for f in range(OBS_DIM):
                    out[0, b, f] = features[f]
            else:
                for f in range(OBS_DIM):
                    out[1, b, f] = features[f] * mirror[f]
                out[1, b, _OWN_X] += one


@kernel()
def duel_observe_kernel(x, y, heading_cos, heading_sin, strength, morale, readiness, step,
                        elevation, cover, dx, dy, dist, facing_cos, facing_sin, los, k, mirror,
                        out):
    """:func:`duel_observe` for every battle."""
    # np.intp(0), not 0: see "Literal arguments" in envs.sim.jit.
    zero = np.intp(0)
    duel_observe(zero, x.shape[1], x, y, heading_cos, heading_sin, strength, morale,
                 readiness, step, zero, elevation, cover, dx, dy, dist, facing_cos, facing_sin,
                 los, k, mirror, out)


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
    rows, cols = state.grid_shape
    out = np.empty((2, state.batch_size, OBS_DIM), F32)
    duel_observe_kernel(
        *(unit_major(a) for a in (state.x, state.y, geometry.heading_cos,
                                  geometry.heading_sin, state.strength, state.morale,
                                  state.readiness)), state.step,
        unit_major(geometry.elevation), unit_major(geometry.cover),
        *(pair_major(a) for a in (geometry.dx, geometry.dy, geometry.dist, geometry.facing_cos,
                                  geometry.facing_sin, geometry.los)),
        kernels.constants(config, rows, cols), MIRROR_SIGN, out)
    return out
