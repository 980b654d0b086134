"""Start battles: draw the ground and set the two armies out on it."""

from __future__ import annotations

import math

import numpy as np

from envs.sim import constants as C
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.state import BattleState
from envs.sim.terrain import TerrainMap, elevation_patches, generate_terrain

F32 = np.float32


def terrain_grid_shape(terrain: TerrainMap | None, randomize_terrain: bool) -> tuple[int, int]:
    """Grid shape a batch needs for this terrain choice."""
    if terrain is not None:
        return terrain.shape
    if randomize_terrain:
        return C.TERRAIN_ROWS, C.TERRAIN_COLS
    return 1, 1


def deploy(
    state: BattleState,
    battles: np.ndarray,
    keys: np.ndarray,
    config: BattleConfig,
    *,
    terrain: TerrainMap | None = None,
    randomize_terrain: bool = True,
) -> None:
    """(Re)start the battles ``battles`` of ``state`` in place, with episode keys ``keys``.

    Ground: the fixed ``terrain`` if given, else a procedural map drawn from each
    battle's key if ``randomize_terrain``, else open level ground. Blue deploys in
    the western band of the map facing east and Red in the eastern band facing
    west, each heading within ``DEPLOY_HEADING_SPREAD`` of straight ahead, at full
    strength and morale with muskets loaded. Everything drawn depends on the key
    only.
    """
    keys = np.asarray(keys, dtype=np.uint64)
    rows, cols = state.grid_shape
    if terrain is not None:
        elevation, cover = terrain.relative_elevation()[None], terrain.cover[None]
    elif randomize_terrain:
        elevation, cover = generate_terrain(keys, rows, cols)
    else:
        elevation = cover = np.zeros((1, rows, cols), F32)
    state.elevation[battles] = elevation
    state.cover[battles] = cover
    state.elevation_patches[battles] = elevation_patches(elevation)

    n_units = state.n_units
    is_red = (state.team == 1)[None, :]
    u = rnd.uniform(keys, rnd.STREAM_SPAWN, 0, 3 * n_units).reshape(len(keys), n_units, 3)
    blue_lo, blue_hi = C.BLUE_DEPLOY_X
    red_lo, red_hi = C.RED_DEPLOY_X
    x_frac = np.where(is_red, red_lo + (red_hi - red_lo) * u[..., 0],
                      blue_lo + (blue_hi - blue_lo) * u[..., 0])
    y_lo, y_hi = C.DEPLOY_Y
    spread = C.DEPLOY_HEADING_SPREAD
    heading = (u[..., 2] * 2 - 1) * F32(spread) + np.where(is_red, F32(math.pi), F32(0))

    state.x[battles] = x_frac * F32(config.map_width)
    state.y[battles] = (y_lo + (y_hi - y_lo) * u[..., 1]) * F32(config.map_height)
    state.theta[battles] = np.mod(heading, F32(2 * math.pi))
    state.strength[battles] = 1
    state.morale[battles] = 1
    state.readiness[battles] = 1
    state.routed[battles] = False
    state.destroyed[battles] = False
    state.step[battles] = 0
    state.key[battles] = keys
