"""The battlefield: the ground a battle is fought on, its clock and how far units see.

One :class:`Battlefield` value carries the map's size, the step limit, the ground
(a fixed :class:`~envs.sim.terrain.TerrainMap`, procedural hills and woods drawn at
every reset, or open level ground), how much the highest ground slows a unit and how
far a battalion sees. It is checked once, when it is made, and every env and batch
takes it (``battlefield=``). The envs' loose keyword arguments (``map_width``,
``max_steps``, ``randomize_terrain``, ...) are a route into it
(:meth:`Battlefield.from_kwargs`), and :meth:`Battlefield.battle_config` gives the
battle model the simulator steps.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.sim.config import BattleConfig
from envs.sim.constants import (
    HILL_SPEED_FACTOR,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
    MAX_STEPS_LIMIT,
    VISIBILITY_RADIUS,
)
from envs.sim.terrain import TerrainMap
from envs.sim.validation import (
    check_bool,
    check_in_range,
    check_int,
    check_map_size,
    check_positive,
    short_repr,
)

__all__ = ["Battlefield", "CONFIG_FIELDS", "FIELDS"]


@dataclass(frozen=True)
class Battlefield:
    """Where and for how long a battle is fought, and how far its units see.

    Args:
        map_width: the field's width in metres, in
            :data:`~envs.sim.constants.MAP_SIZE_RANGE` (10 m to 100 km).
        map_height: the field's height in metres, in the same range.
        max_steps: steps before the battle is called a draw, 1 to
            :data:`~envs.sim.constants.MAX_STEPS_LIMIT`.
        hill_speed_factor: speed on the highest ground, as a fraction of speed on the
            lowest, in (0, 1].
        terrain: a fixed :class:`~envs.sim.terrain.TerrainMap` of the map's size, or
            None; when given, ``randomize_terrain`` is ignored.
        randomize_terrain: ``True`` to draw new procedural hills and woods at every
            reset, ``False`` for open, level ground.
        visibility_radius: how far a battalion sees in the N-vs-M battles, in metres
            (> 0): enemies beyond it, or behind a crest, are known only from their last
            report (:mod:`envs.battles.multi_observation`). The 1v1 duel has no fog of war and
            takes only the default.

    Values are kept as given (as :class:`~envs.sim.config.BattleConfig` keeps them),
    so a battle built from a battlefield is the battle built from the same numbers.

    Raises:
        ValueError: for a value out of its range, naming the field, the value and
            what is allowed; a terrain whose size is not the map's.
        TypeError: for a ``terrain`` that is not a TerrainMap.
    """

    map_width: float = MAP_WIDTH
    map_height: float = MAP_HEIGHT
    max_steps: int = MAX_STEPS
    hill_speed_factor: float = HILL_SPEED_FACTOR
    terrain: TerrainMap | None = None
    randomize_terrain: bool = True
    visibility_radius: float = VISIBILITY_RADIUS

    def __post_init__(self) -> None:
        check_map_size("map_width", self.map_width)
        check_map_size("map_height", self.map_height)
        check_int("max_steps", self.max_steps, minimum=1, maximum=MAX_STEPS_LIMIT)
        check_in_range("hill_speed_factor", self.hill_speed_factor, 0.0, 1.0, low_open=True)
        if self.terrain is not None:
            if not isinstance(self.terrain, TerrainMap):
                raise TypeError(f"terrain={short_repr(self.terrain)} is invalid: expected a "
                                "TerrainMap or None")
            if (self.terrain.width, self.terrain.height) != (self.map_width, self.map_height):
                raise ValueError(
                    f"terrain covers {self.terrain.width} x {self.terrain.height} m but the "
                    f"map is {self.map_width} x {self.map_height} m: expected the same size")
        object.__setattr__(self, "randomize_terrain",
                           check_bool("randomize_terrain", self.randomize_terrain))
        check_positive("visibility_radius", self.visibility_radius)

    @classmethod
    def from_kwargs(cls, battlefield: Battlefield | None = None, /,
                    **settings: Any) -> Battlefield:
        """The battlefield of an env's keyword arguments.

        A setting that is None was not given. Without ``battlefield`` the given
        settings build a new one (the rest at their defaults); with it, a given setting
        must agree with it (it adds nothing, and contradicting it is an error, so the
        battlefield is never silently changed).

        Args:
            battlefield: the battlefield, or None to build one from ``settings``.
            **settings: fields of :class:`Battlefield` (:data:`FIELDS`), None when not
                given.

        Returns:
            The battlefield.

        Raises:
            ValueError: for an unknown setting, a value out of range (named), or a
                setting that contradicts ``battlefield``.
            TypeError: for a ``battlefield`` that is not a Battlefield.
        """
        unknown = sorted(set(settings) - set(FIELDS))
        if unknown:
            raise ValueError(f"battlefield setting {unknown[0]!r} is invalid: expected some "
                             f"of {list(FIELDS)}")
        given = {name: value for name, value in settings.items() if value is not None}
        if battlefield is None:
            return cls(**given)
        if not isinstance(battlefield, Battlefield):
            raise TypeError(f"battlefield={short_repr(battlefield)} is invalid: expected a "
                            "Battlefield or None")
        for name, value in given.items():
            battlefield.check_agrees(name, value, name)
        return battlefield

    def check_agrees(self, name: str, value: Any, label: str) -> None:
        """Raise ``ValueError`` naming ``label`` unless ``value`` is this battlefield's
        ``name`` (a terrain must be the same map object)."""
        mine = getattr(self, name)
        if name == "terrain":
            same = value is mine
        elif name == "randomize_terrain":
            same = isinstance(value, (bool, np.bool_)) and bool(value) == mine
        else:  # a number; a bool or an array is never a map size, a step count or a radius
            same = isinstance(value, numbers.Real) and not isinstance(
                value, (bool, np.bool_)) and value == mine
        if not same:
            raise ValueError(f"{label}={short_repr(value)} contradicts battlefield.{name}="
                             f"{short_repr(mine)}: give it once, in the battlefield or as "
                             "the keyword")

    @classmethod
    def for_batch(cls, battlefield: Battlefield | None, config: BattleConfig | None,
                  **settings: Any) -> tuple[Battlefield, BattleConfig]:
        """The battlefield and battle model of a batch, from a battlefield, or from a
        battle model and the ground settings (the batches' older arguments), or both.

        ``config`` may carry more of the battle model than the battlefield (fire,
        morale, ...); it is used as given, and its map, clock and hill speed are the
        battlefield's. With both, they must agree.

        Args:
            battlefield: the battlefield, or None.
            config: the battle model, or None for the battlefield's
                (:meth:`battle_config`).
            **settings: ``terrain``, ``randomize_terrain``, ``visibility_radius`` (None
                when not given), as for :meth:`from_kwargs`.

        Returns:
            ``(battlefield, config)``.

        Raises:
            ValueError: for a value out of range, or a setting or a config field that
                contradicts ``battlefield``.
            TypeError: for a ``config`` that is not a BattleConfig.
        """
        if config is None:
            battlefield = cls.from_kwargs(battlefield, **settings)
            return battlefield, battlefield.battle_config()
        if not isinstance(config, BattleConfig):
            raise TypeError(f"config={short_repr(config)} is invalid: expected a BattleConfig "
                            "or None")
        model = {name: getattr(config, name) for name in CONFIG_FIELDS}
        if battlefield is None:
            return cls.from_kwargs(None, **model, **settings), config
        battlefield = cls.from_kwargs(battlefield, **settings)
        for name, value in model.items():
            battlefield.check_agrees(name, value, f"config.{name}")
        return battlefield, config

    def battle_config(self) -> BattleConfig:
        """The battle model on this battlefield: the map, clock and hill speed given here,
        every other parameter at its default."""
        return BattleConfig(**{name: getattr(self, name) for name in CONFIG_FIELDS})

    def replace(self, **changes: Any) -> Battlefield:
        """Return a copy with ``changes`` applied (and checked)."""
        return dataclasses.replace(self, **changes)

    @property
    def procedural(self) -> bool:
        """Whether every reset draws new procedural ground (no fixed terrain given and
        ``randomize_terrain``)."""
        return self.randomize_terrain and self.terrain is None


FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Battlefield))
"""The settings of a battlefield, in order: the keyword arguments that route into it."""

CONFIG_FIELDS: tuple[str, ...] = ("map_width", "map_height", "max_steps", "hill_speed_factor")
"""The battlefield's fields that are also :class:`~envs.sim.config.BattleConfig`'s."""
