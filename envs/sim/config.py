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
MAX_DRILL_STEPS = 10_000
"""Longest change of formation, in steps (the drill counter is int16)."""


def _per_arm(name: str, value: object) -> tuple[float, ...]:
    """``value`` as one non-negative number per arm (:data:`~envs.sim.constants.ARM_NAMES`).

    Raises:
        ValueError: naming ``name``, for any other shape or value.
    """
    if not isinstance(value, (tuple, list)) or len(value) != len(C.ARM_NAMES):
        raise ValueError(f"{name}={value!r} is invalid: expected {len(C.ARM_NAMES)} numbers, "
                         f"one per arm {C.ARM_NAMES}")
    return tuple(check_non_negative(f"{name}[{arm}]", v)
                 for arm, v in zip(C.ARM_NAMES, value, strict=True))


def _arm_table(name: str, value: object) -> tuple[tuple[float, ...], ...]:
    """``value`` as a table of non-negative numbers, a row per arm and a column per
    formation (:data:`~envs.sim.constants.FORMATION_NAMES`).

    Raises:
        ValueError: naming ``name``, for any other shape or value.
    """
    shape = f"{len(C.ARM_NAMES)} rows (arms {C.ARM_NAMES}) of {len(C.FORMATION_NAMES)} " \
        f"numbers (formations {C.FORMATION_NAMES})"
    if not isinstance(value, (tuple, list)) or len(value) != len(C.ARM_NAMES) or any(
            not isinstance(row, (tuple, list)) or len(row) != len(C.FORMATION_NAMES)
            for row in value):
        raise ValueError(f"{name}={value!r} is invalid: expected {shape}")
    return tuple(tuple(check_non_negative(f"{name}[{arm}][{formation}]", v)
                       for formation, v in zip(C.FORMATION_NAMES, row, strict=True))
                 for arm, row in zip(C.ARM_NAMES, value, strict=True))


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
    arm_speed: tuple = C.ARM_SPEED
    arm_firepower: tuple = C.ARM_FIREPOWER
    arm_exposure: tuple = C.ARM_EXPOSURE
    arm_cavalry_defence: tuple = C.ARM_CAVALRY_DEFENCE
    arm_melee: tuple = C.ARM_MELEE
    arm_radius: tuple = C.ARM_RADIUS
    arm_drill_steps: tuple = C.ARM_DRILL_STEPS
    arm_morale: tuple = C.ARM_MORALE
    artillery_fire_range: float = C.ARTILLERY_FIRE_RANGE
    artillery_volley_damage: float = C.ARTILLERY_VOLLEY_DAMAGE
    artillery_reload_rate: float = C.ARTILLERY_RELOAD_RATE
    artillery_fire_arc: float = C.ARTILLERY_FIRE_ARC
    artillery_hit_exponent: float = C.ARTILLERY_HIT_EXPONENT
    melee_damage: float = C.MELEE_DAMAGE
    charge_impact: float = C.CHARGE_IMPACT
    charge_speed: float = C.CHARGE_SPEED
    disorder_melee: float = C.DISORDER_MELEE
    melee_morale_extra: float = C.MELEE_MORALE_EXTRA
    melee_reach: float = C.MELEE_REACH

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
                     "flank_morale_extra", "rear_morale_extra", "volley_shock", "eye_height",
                     "melee_damage", "melee_morale_extra", "melee_reach"):
            check_non_negative(name, getattr(self, name))
        for name in ("artillery_fire_range", "artillery_volley_damage", "artillery_hit_exponent"):
            check_positive(name, getattr(self, name))
        check_in_range("artillery_reload_rate", self.artillery_reload_rate, 0.0, 1.0)
        check_in_range("artillery_fire_arc", self.artillery_fire_arc, 0.0, math.pi, low_open=True)
        for name in ("charge_impact", "charge_speed", "disorder_melee"):
            check_in_range(name, getattr(self, name), 1.0, 100.0)
        for name in ("arm_speed", "arm_firepower", "arm_exposure", "arm_cavalry_defence"):
            object.__setattr__(self, name, _arm_table(name, getattr(self, name)))
        for name in ("arm_melee", "arm_radius", "arm_morale"):
            object.__setattr__(self, name, _per_arm(name, getattr(self, name)))
        _per_arm("arm_drill_steps", self.arm_drill_steps)
        object.__setattr__(self, "arm_drill_steps", tuple(
            check_int(f"arm_drill_steps[{arm}]", steps, minimum=0, maximum=MAX_DRILL_STEPS)
            for arm, steps in zip(C.ARM_NAMES, self.arm_drill_steps, strict=True)))

    def __hash__(self) -> int:
        # The step looks its constants up by config (lru_caches keyed by it) every step:
        # hashing some fifty fields, tables included, each time would cost microseconds.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self)))
            object.__setattr__(self, "_hash", cached)
        return cached

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
                  if f.name not in ("max_steps", "los_samples")
                  and not isinstance(getattr(self, f.name), tuple)}
        values.update(
            step_length=np.float32(self.step_length),
            inv_fire_range=np.float32(1 / self.fire_range),
            cos_fire_arc=np.float32(math.cos(self.fire_arc)),
            cos_front=np.float32(math.cos(self.front_half_angle)),
            cos_rear=np.float32(math.cos(self.rear_half_angle)),
        )
        return SimpleNamespace(**values)

    def melee_distance(self, arm: np.ndarray) -> np.ndarray:
        """(U, U) float32: the distance between centres within which two units of arms
        ``arm`` (U,) touch in melee, their two radii plus ``melee_reach`` (the rule the
        step's kernel applies, for NumPy code that reads a battle afterwards)."""
        radius = np.asarray(self.arm_radius, np.float32)[np.asarray(arm, np.intp)]
        return radius[:, None] + radius[None, :] + np.float32(self.melee_reach)

    def replace(self, **changes: object) -> BattleConfig:
        """Return a copy with ``changes`` applied (and validated)."""
        return dataclasses.replace(self, **changes)
