"""The state of a batch of battles: a small dataclass of arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = np.float32

UNIT_FIELDS = ("x", "y", "theta", "strength", "morale", "readiness", "routed", "destroyed")
"""Per-unit arrays, each of shape (B, U), that deployment writes."""
ORDER_OF_BATTLE_FIELDS = ("team", "arm", "quality")
"""Per-unit (U,) arrays that every battle of a batch shares: side, arm and quality."""
MODE_FIELDS = ("formation", "drill")
"""Per-unit int16 arrays, each of shape (B, U): the formation code and the steps left of
a change of formation."""


@dataclass(frozen=True, eq=False)
class BattleState:
    """Everything that changes in ``B`` battles of ``U`` battalions each.

    Per-unit arrays are (B, U): position ``x, y`` in metres, heading ``theta`` in
    [0, 2*pi) (0 faces east, counter-clockwise positive), ``strength`` and
    ``morale`` in [0, 1], ``readiness`` (the share of muskets loaded) in [0, 1],
    and the flags ``routed`` and ``destroyed``. Per-battle arrays are (B,):
    ``step`` and the episode random ``key``. ``elevation`` (relative, 0..1) and
    ``cover`` are (B, rows, cols) maps; ``elevation_patches`` (B, rows, cols, 4)
    caches the elevation's bilinear coefficients
    (:func:`envs.sim.terrain.elevation_patches`), written with it at deployment.
    ``team`` (U,) says which side each unit fights for: 0 is Blue, 1 is Red; ``arm``
    (U,) its arm (:data:`~envs.sim.constants.ARM_NAMES`: 0 infantry, 1 cavalry, 2
    artillery) and ``quality`` (U,) its training and leadership (1 average: fire and
    melee are multiplied by it, morale losses divided). ``formation`` (B, U) is each
    unit's formation code (:data:`~envs.sim.constants.FORMATION_NAMES`) and ``drill``
    (B, U) the steps left of a change of formation under way (both int16). ``going``
    (B, rows, cols) scales the speed over each cell: 1 on open ground, 0 on impassable
    water.

    Per-unit arrays are stored with the battle axis contiguous (Fortran order):
    the simulator's work is across battles, and NumPy broadcasts and reduces over
    the short unit axis many times faster in this layout.

    :func:`envs.sim.engine.step` returns a new state and never writes into the
    old one, except for the terrain maps, which only change when a battle is
    (re)deployed.
    """

    x: np.ndarray
    y: np.ndarray
    theta: np.ndarray
    strength: np.ndarray
    morale: np.ndarray
    readiness: np.ndarray
    routed: np.ndarray
    destroyed: np.ndarray
    step: np.ndarray
    key: np.ndarray
    elevation: np.ndarray
    cover: np.ndarray
    elevation_patches: np.ndarray
    team: np.ndarray
    formation: np.ndarray
    drill: np.ndarray
    going: np.ndarray
    arm: np.ndarray
    quality: np.ndarray

    @classmethod
    def empty(cls, batch: int, team: np.ndarray, rows: int, cols: int,
              arm: np.ndarray | None = None,
              quality: np.ndarray | None = None) -> BattleState:
        """Zeroed state for ``batch`` battles (all infantry of quality 1 unless ``arm`` and
        ``quality`` are given, in line, on ground of going 1); deploy battles into it
        before stepping."""
        team = np.asarray(team, dtype=np.int8)
        arm = np.zeros(len(team), np.int8) if arm is None else np.asarray(arm, dtype=np.int8)
        quality = np.ones(len(team), F32) if quality is None else np.asarray(quality, F32)
        shape = (batch, len(team))

        def zeros(dtype: type) -> np.ndarray:
            return np.zeros(shape, dtype, order="F")

        return cls(
            x=zeros(F32), y=zeros(F32), theta=zeros(F32), strength=zeros(F32),
            morale=zeros(F32), readiness=zeros(F32), routed=zeros(bool),
            destroyed=zeros(bool), step=np.zeros(batch, np.int32),
            key=np.zeros(batch, np.uint64), elevation=np.zeros((batch, rows, cols), F32),
            cover=np.zeros((batch, rows, cols), F32),
            elevation_patches=np.zeros((batch, rows, cols, 4), F32), team=team,
            formation=zeros(np.int16), drill=zeros(np.int16),
            going=np.ones((batch, rows, cols), F32), arm=arm, quality=quality,
        )

    @property
    def batch_size(self) -> int:
        return self.x.shape[0]

    @property
    def n_units(self) -> int:
        return self.x.shape[1]

    @property
    def grid_shape(self) -> tuple[int, int]:
        return self.elevation.shape[1], self.elevation.shape[2]

    @property
    def active(self) -> np.ndarray:
        """(B, U) units still in the fight: neither routed nor destroyed."""
        return ~(self.routed | self.destroyed)

    def team_defeated(self) -> np.ndarray:
        """(B, 2): whether every unit of Blue (column 0) / Red (column 1) is out."""
        active = self.active
        return np.stack([~active[:, self.team == t].any(axis=1) for t in (0, 1)], axis=1)

    def select(self, battles: np.ndarray | slice) -> BattleState:
        """A copy of the battles ``battles`` as a smaller batch."""
        units = {name: np.asfortranarray(getattr(self, name)[battles])
                 for name in UNIT_FIELDS + MODE_FIELDS}
        battle = {name: getattr(self, name)[battles].copy() for name in
                  ("step", "key", "elevation", "cover", "elevation_patches", "going")}
        return BattleState(**units, **battle, team=self.team, arm=self.arm,
                           quality=self.quality)
