"""Hand-placed battles for simulator tests."""

from __future__ import annotations

import math

import numpy as np

from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.state import BattleState
from envs.sim.terrain import TerrainMap, elevation_patches


def place(units: list[tuple[float, float, float]], team: list[int], *, batch: int = 1,
          terrain: TerrainMap | None = None, seed: int = 0, arm: list[int] | None = None,
          formation: list[int] | None = None, quality: list[float] | None = None,
          **fields: float) -> BattleState:
    """A batch of identical battles with units at ``(x, y, heading_degrees)`` (infantry in
    line of quality 1 unless ``arm``, ``formation`` and ``quality`` say otherwise).

    Extra keyword arguments set a per-unit field for every unit (e.g. ``morale=0.2``).
    """
    terrain = terrain or TerrainMap.flat()
    rows, cols = terrain.shape
    state = BattleState.empty(batch, np.array(team), rows, cols, arm=arm, quality=quality)
    if formation is not None:
        state.formation[:] = formation
    state.elevation[:] = terrain.relative_elevation()
    state.cover[:] = terrain.cover
    state.going[:] = terrain.going
    state.elevation_patches[:] = elevation_patches(terrain.relative_elevation()[None])
    for u, (x, y, heading) in enumerate(units):
        state.x[:, u] = x
        state.y[:, u] = y
        state.theta[:, u] = math.radians(heading) % (2 * math.pi)
    for name in ("strength", "morale", "readiness"):
        getattr(state, name)[:] = fields.pop(name, 1.0)
    if fields:
        raise TypeError(f"unknown fields {sorted(fields)}")
    state.key[:] = rnd.seed_keys(np.arange(seed, seed + batch))
    return state


def actions(*per_unit: tuple[float, float, float], batch: int = 1) -> np.ndarray:
    """(batch, U, 3) actions, the same in every battle."""
    return np.tile(np.array(per_unit, dtype=np.float32)[None], (batch, 1, 1))


def ridge(height: float = 1.0, along_x: float = 500.0, width_cells: int = 2) -> TerrainMap:
    """Level ground with a north-south ridge centred at ``along_x`` metres."""
    elevation = np.zeros((20, 20), np.float32)
    col = int(along_x / 50)
    elevation[:, col - width_cells // 2: col - width_cells // 2 + width_cells] = height
    return TerrainMap(elevation, np.zeros((20, 20), np.float32))


DEFAULT = BattleConfig()
FIRE_ONLY = BattleConfig(melee_damage=0.0, arm_radius=(0.0, 0.0, 0.0))
"""The model without melee and without frontage (units may stand anywhere, even on each
other): fire alone, for tests that measure it at any range."""
