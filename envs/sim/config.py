"""The parameters of one battle model: map, clock, movement, fire and morale."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property
from types import SimpleNamespace

import numpy as np

from envs.sim import constants as C
from envs.sim.validation import (
    check_in_range,
    check_int,
    check_map_size,
    check_non_negative,
    check_positive,
)

MAX_LOS_SAMPLES = 1024
"""Most points a sight line may be sampled at (each costs a terrain lookup per unit pair)."""


@dataclass(frozen=True)
class BattleConfig:
    """Every tunable number of the battle model.

    The defaults are the module constants of :mod:`envs.sim.constants`, each
    documented in ``docs/simulation.md``. A config is immutable and shared by all
    battles of a batch.

    Map sides must lie in :data:`~envs.sim.constants.MAP_SIZE_RANGE`, ``max_steps`` in
    1 to :data:`~envs.sim.constants.MAX_STEPS_LIMIT` and ``los_samples`` in
    1 to :data:`MAX_LOS_SAMPLES`.

    Raises:
        ValueError: if any field is out of its allowed range; the message names it.
    """

    map_width: float = C.MAP_WIDTH
    map_height: float = C.MAP_HEIGHT
    max_steps: int = C.MAX_STEPS
    dt: float = C.DT
    max_speed: float = C.MAX_SPEED
    backward_speed_fraction: float = C.BACKWARD_SPEED_FRACTION
    max_turn_rate: float = C.MAX_TURN_RATE
    hill_speed_factor: float = C.HILL_SPEED_FACTOR
    forest_speed_penalty: float = C.FOREST_SPEED_PENALTY
    fire_range: float = C.FIRE_RANGE
    hit_falloff_exponent: float = C.HIT_FALLOFF_EXPONENT
    fire_arc: float = C.FIRE_ARC
    volley_damage: float = C.VOLLEY_DAMAGE
    reload_rate: float = C.RELOAD_RATE
    moving_fire_penalty: float = C.MOVING_FIRE_PENALTY
    turning_fire_penalty: float = C.TURNING_FIRE_PENALTY
    flank_damage_multiplier: float = C.FLANK_DAMAGE_MULTIPLIER
    rear_damage_multiplier: float = C.REAR_DAMAGE_MULTIPLIER
    front_half_angle: float = C.FRONT_HALF_ANGLE
    rear_half_angle: float = C.REAR_HALF_ANGLE
    cover_protection: float = C.COVER_PROTECTION
    height_advantage: float = C.HEIGHT_ADVANTAGE
    eye_height: float = C.EYE_HEIGHT
    los_samples: int = C.LOS_SAMPLES
    morale_per_damage: float = C.MORALE_PER_DAMAGE
    flank_morale_extra: float = C.FLANK_MORALE_EXTRA
    rear_morale_extra: float = C.REAR_MORALE_EXTRA
    volley_shock: float = C.VOLLEY_SHOCK
    morale_recovery: float = C.MORALE_RECOVERY
    rout_threshold: float = C.ROUT_THRESHOLD
    destroyed_threshold: float = C.DESTROYED_THRESHOLD

    def __post_init__(self) -> None:
        check_map_size("map_width", self.map_width)
        check_map_size("map_height", self.map_height)
        for name in ("dt", "max_speed", "fire_range", "volley_damage", "reload_rate",
                     "hit_falloff_exponent"):
            check_positive(name, getattr(self, name))
        check_int("max_steps", self.max_steps, minimum=1, maximum=C.MAX_STEPS_LIMIT)
        check_int("los_samples", self.los_samples, minimum=1, maximum=MAX_LOS_SAMPLES)
        # Half a turn a step at most: wheeling further is wheeling the other way, and the
        # step keeps headings in [0, 2*pi) by one subtraction or addition of 2*pi.
        check_in_range("max_turn_rate", self.max_turn_rate, 0.0, math.pi, low_open=True)
        check_in_range("hill_speed_factor", self.hill_speed_factor, 0.0, 1.0, low_open=True)
        check_in_range("fire_arc", self.fire_arc, 0.0, math.pi, low_open=True)
        check_in_range("front_half_angle", self.front_half_angle, 0.0, math.pi)
        check_in_range("rear_half_angle", self.rear_half_angle, self.front_half_angle, math.pi)
        for name in ("backward_speed_fraction", "forest_speed_penalty", "moving_fire_penalty",
                     "turning_fire_penalty", "cover_protection", "height_advantage",
                     "rout_threshold", "destroyed_threshold", "reload_rate",
                     "morale_recovery"):
            check_in_range(name, getattr(self, name), 0.0, 1.0)
        for name in ("flank_damage_multiplier", "rear_damage_multiplier", "morale_per_damage",
                     "flank_morale_extra", "rear_morale_extra", "volley_shock", "eye_height"):
            check_non_negative(name, getattr(self, name))

    @property
    def diagonal(self) -> float:
        """Length of the map diagonal, used to normalise distances."""
        return math.hypot(self.map_width, self.map_height)

    @property
    def step_length(self) -> float:
        """Metres covered in one step at full speed on open, level ground."""
        return self.max_speed * self.dt

    @cached_property
    def f32(self) -> SimpleNamespace:
        """The numeric fields as float32 scalars, plus the cosines of the angle
        thresholds, computed once so the hot loop does not convert them each step."""
        values = {f.name: np.float32(getattr(self, f.name)) for f in dataclasses.fields(self)
                  if f.name not in ("max_steps", "los_samples")}
        values.update(
            step_length=np.float32(self.step_length),
            inv_fire_range=np.float32(1 / self.fire_range),
            cos_fire_arc=np.float32(math.cos(self.fire_arc)),
            cos_front=np.float32(math.cos(self.front_half_angle)),
            cos_rear=np.float32(math.cos(self.rear_half_angle)),
        )
        return SimpleNamespace(**values)

    def replace(self, **changes: object) -> BattleConfig:
        """Return a copy with ``changes`` applied (and validated)."""
        return dataclasses.replace(self, **changes)
