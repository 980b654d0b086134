"""Start battles: draw the ground and set the two armies out on it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from envs.sim import constants as C
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.engine import writable_major
from envs.sim.jit import kernel
from envs.sim.state import UNIT_FIELDS, BattleState
from envs.sim.terrain import TerrainMap, elevation_patches, generate_into
from envs.sim.vector_math import wrap_angle

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
    formations: np.ndarray | int = C.LINE,
) -> None:
    """(Re)start the battles ``battles`` of ``state`` in place, with episode keys ``keys``.

    Ground: the fixed ``terrain`` if given, else a procedural map drawn from each
    battle's key if ``randomize_terrain``, else open level ground. Blue deploys in
    the western band of the map facing east and Red in the eastern band facing
    west, each heading within ``DEPLOY_HEADING_SPREAD`` of straight ahead, at full
    strength and morale with muskets loaded, in ``formations`` (one code per unit, or
    one for all: line by default). Everything drawn depends on the key only.
    """
    keys = np.asarray(keys, dtype=np.uint64)
    battles = np.asarray(battles, dtype=np.intp)
    rows, cols = state.grid_shape
    if terrain is None and randomize_terrain:
        generate_into(keys, battles, C.NUM_HILLS, C.NUM_FORESTS, state.elevation, state.cover,
                      state.elevation_patches)
    else:
        if terrain is not None:
            elevation, cover = terrain.relative_elevation()[None], terrain.cover[None]
        else:
            elevation = cover = np.zeros((1, rows, cols), F32)
        state.elevation[battles] = elevation
        state.cover[battles] = cover
        state.elevation_patches[battles] = elevation_patches(elevation)
    state.going[battles] = F32(1) if terrain is None else terrain.going[None]
    state.formation[battles] = formations
    state.drill[battles] = 0
    _spawn(keys, battles, np.ascontiguousarray(state.team, dtype=np.int8),
           *(writable_major(getattr(state, name)) for name in UNIT_FIELDS), state.step, state.key,
           _spawn_constants(config.map_width, config.map_height))


@lru_cache(maxsize=16)
def _spawn_constants(width: float, height: float) -> np.ndarray:
    """The deployment bands and spread as float32 (low, span) pairs, then pi, 2 pi and
    the map's size: what :func:`_spawn` scales its draws by."""
    (blue_lo, blue_hi), (red_lo, red_hi), (y_lo, y_hi) = (C.BLUE_DEPLOY_X, C.RED_DEPLOY_X,
                                                          C.DEPLOY_Y)
    return np.array([blue_lo, blue_hi - blue_lo, red_lo, red_hi - red_lo, y_lo, y_hi - y_lo,
                     C.DEPLOY_HEADING_SPREAD, math.pi, 2 * math.pi, width, height], F32)


_SPAWN_OFFSET = rnd.stream_offset(rnd.STREAM_SPAWN)


@kernel()
def _spawn(keys, battles, team, x, y, theta, strength, morale, readiness, routed, destroyed,
           step, key, k):
    """Set out the battalions of rows ``battles`` (unit-major arrays written in place):
    unit ``i`` of the battle with key ``keys[n]`` takes lanes ``3i`` to ``3i + 2`` of the
    spawn stream (x in its side's band, y, heading within the spread of straight ahead),
    fresh, loaded and in the fight."""
    for n in range(keys.shape[0]):
        b = battles[n]
        for i in range(team.shape[0]):
            red = team[i] == 1
            u0 = rnd.uniform_draw(keys[n], 0, 3 * i, _SPAWN_OFFSET)
            u1 = rnd.uniform_draw(keys[n], 0, 3 * i + 1, _SPAWN_OFFSET)
            u2 = rnd.uniform_draw(keys[n], 0, 3 * i + 2, _SPAWN_OFFSET)
            x_frac = k[2] + k[3] * u0 if red else k[0] + k[1] * u0
            heading = (u2 * F32(2) - F32(1)) * k[6] + (k[7] if red else F32(0))
            x[i, b] = x_frac * k[9]
            y[i, b] = (k[4] + k[5] * u1) * k[10]
            theta[i, b] = wrap_angle(heading, k[8])
            strength[i, b] = F32(1)
            morale[i, b] = F32(1)
            readiness[i, b] = F32(1)
            routed[i, b] = False
            destroyed[i, b] = False
        step[b] = 0
        key[b] = keys[n]


@dataclass(frozen=True)
class Placement:
    """Where an order of battle stands its units at the start of a battle: per unit (U,) or
    per battle and unit (n, U) positions in metres, headings in radians, strengths in
    (0, 1] and formation codes. Nothing here is checked: an order of battle is validated
    where it is read (:mod:`envs.scenario`)."""

    x: np.ndarray
    y: np.ndarray
    theta: np.ndarray
    strength: np.ndarray
    formation: np.ndarray

    def check(self, n_battles: int, n_units: int) -> None:
        """Raise ``ValueError`` unless every array fits ``n_battles`` battles of ``n_units``
        units ((U,) or (n_battles, U)), naming the field and its shape."""
        for name in ("x", "y", "theta", "strength", "formation"):
            shape = np.shape(getattr(self, name))
            if shape not in ((n_units,), (n_battles, n_units)):
                raise ValueError(f"placement.{name} has shape {shape}: expected ({n_units},) "
                                 f"or ({n_battles}, {n_units})")

    def stand(self, state: BattleState, battles: np.ndarray) -> None:
        """Put the units of rows ``battles`` of ``state`` where this placement says, in
        place (morale, readiness, the ground and the clock are left as they are)."""
        state.x[battles] = self.x
        state.y[battles] = self.y
        state.theta[battles] = np.mod(self.theta, 2 * np.pi)
        state.strength[battles] = self.strength
        state.formation[battles] = self.formation
        state.drill[battles] = 0


def place(
    state: BattleState,
    battles: np.ndarray,
    keys: np.ndarray,
    placement: Placement,
    *,
    terrain: TerrainMap | None = None,
) -> None:
    """(Re)start the battles ``battles`` of ``state`` in place with the units where
    ``placement`` puts them, at full morale with muskets loaded, on ``terrain`` (open
    level ground if None); episode keys ``keys``. Nothing is drawn."""
    battles = np.asarray(battles, dtype=np.intp)
    if terrain is None:
        state.elevation[battles] = 0
        state.cover[battles] = 0
        state.going[battles] = 1
        state.elevation_patches[battles] = 0
    else:
        elevation = terrain.relative_elevation()[None]
        state.elevation[battles] = elevation
        state.cover[battles] = terrain.cover[None]
        state.going[battles] = terrain.going[None]
        state.elevation_patches[battles] = elevation_patches(elevation)
    placement.stand(state, battles)
    state.morale[battles] = 1
    state.readiness[battles] = 1
    state.routed[battles] = False
    state.destroyed[battles] = False
    state.step[battles] = 0
    state.key[battles] = np.asarray(keys, dtype=np.uint64)
