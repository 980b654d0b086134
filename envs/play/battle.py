"""A battle a person plays as Blue against a Red commander, one step at a time.

:class:`PlayField` says where the battle is fought and with what forces: procedural
ground (:meth:`PlayField.procedural`), a fixed map such as a battle site's sector
(:meth:`PlayField.on_ground`), or a scenario (:meth:`PlayField.from_scenario`).
:class:`LiveBattle` is a batch of one
:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch` battle: each step Blue's
battalions carry out the person's standing orders (:mod:`envs.play.orders`), Red's
commander (:mod:`envs.play.commanders`) gives Red's, and the step is recorded for a
replay (:mod:`envs.rendering.replay`). Orders come from outside (a browser, through
:mod:`envs.play.server`), so :meth:`LiveBattle.order` checks every field and changes
nothing unless the whole order is valid; a refusal is an :class:`OrderError` carrying the
HTTP status that fits it. ``docs/play.md`` ("The field") says how each battle ends.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.battlefield import Battlefield
from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.play.commanders import RedCommander
from envs.play.orders import StandingOrders
from envs.rendering.replay import Replay, ReplayRecorder
from envs.scenario import OrderOfBattle, Scenario
from envs.scenario_battle import NO_WINNER, judge, scenario_placement, side_losses
from envs.sim import constants as C
from envs.sim.config import BattleConfig
from envs.sim.terrain import TerrainMap
from envs.sim.validation import check_int, check_seed, short_repr

MAX_SIDE = 1000
"""Most battalions a side may field in a played battle (a scenario's limit,
:data:`envs.scenario.MAX_SIDE_UNITS`)."""
ORDER_FIELDS = ("move", "face", "fire", "formation")
"""What an order may change (:mod:`envs.play.orders`)."""
WINNERS = {BLUE: "blue", RED: "red", NO_WINNER: "draw"}


class OrderError(ValueError):
    """An order or clock command refused; ``status`` is the HTTP status that fits it (400
    malformed, 403 not Blue's unit, 404 no such unit, 409 not possible now)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PlayField:
    """Where a played battle is fought and with what forces (module docstring).

    Build it with :meth:`procedural`, :meth:`on_ground` or :meth:`from_scenario`.

    Attributes:
        name: what the field is, for the replay's notes (``procedural``, a site, a
            scenario's id).
        n_blue, n_red: battalions a side.
        battlefield: the map, clock, ground and sight.
        config: the battle model (the battlefield's, or the scenario's ``model``).
        order_of_battle: each unit's arm, formation and quality; None: infantry of
            quality 1 in line.
        scenario: the scenario whose placement and break rule the battle follows, or None.
    """

    name: str
    n_blue: int
    n_red: int
    battlefield: Battlefield
    config: BattleConfig
    order_of_battle: OrderOfBattle | None = None
    scenario: Scenario | None = None

    @classmethod
    def procedural(cls, n_blue: int = 2, n_red: int = 2, *, max_steps: int = C.MAX_STEPS,
                   order_of_battle: Any = None) -> PlayField:
        """Procedural hills and woods on the default map, drawn from the battle's seed.

        Raises:
            ValueError: for a side size outside 1 to :data:`MAX_SIDE`, a ``max_steps``
                out of range or an order of battle of other sizes (each named).
        """
        return cls.on_ground(None, n_blue, n_red, name="procedural", max_steps=max_steps,
                             order_of_battle=order_of_battle)

    @classmethod
    def on_ground(cls, terrain: TerrainMap | None, n_blue: int, n_red: int, *, name: str,
                  max_steps: int = C.MAX_STEPS, order_of_battle: Any = None) -> PlayField:
        """A fixed map (a battle site's sector, :func:`data.gis.sectors.site_terrain`), or
        procedural ground when ``terrain`` is None; the battalions deploy in their sides'
        bands.

        Raises:
            ValueError: for a side size outside 1 to :data:`MAX_SIDE`, a ``max_steps``
                out of range or an order of battle of other sizes (each named).
        """
        n_blue = check_int("n_blue", n_blue, minimum=1, maximum=MAX_SIDE)
        n_red = check_int("n_red", n_red, minimum=1, maximum=MAX_SIDE)
        size = {} if terrain is None else {"map_width": terrain.width,
                                           "map_height": terrain.height}
        battlefield = Battlefield(max_steps=max_steps, terrain=terrain, **size)
        oob = None if order_of_battle is None else OrderOfBattle.of(order_of_battle)
        if oob is not None and (oob.n_blue, oob.n_red) != (n_blue, n_red):
            raise ValueError(f"order_of_battle has {oob.n_blue} Blue and {oob.n_red} Red "
                             f"units: expected n_blue={n_blue} and n_red={n_red}")
        return cls(name, n_blue, n_red, battlefield, battlefield.battle_config(), oob)

    @classmethod
    def from_scenario(cls, scenario: Scenario, *, max_steps: int | None = None) -> PlayField:
        """A scenario's field and forces (a scenario file, :func:`envs.scenario.
        load_scenario_file`, or a historical battle, :func:`data.historical.load_battles`).

        Args:
            scenario: the scenario.
            max_steps: the step limit; None: the scenario's.

        Raises:
            TypeError: for a ``scenario`` that is not a Scenario.
            ValueError: for a ``max_steps`` out of range.
        """
        if not isinstance(scenario, Scenario):
            raise TypeError(f"scenario={short_repr(scenario)} is invalid: expected a Scenario "
                            "(envs.scenario.load_scenario_file reads one)")
        changes = {} if max_steps is None else {"max_steps": max_steps}
        config = scenario.config(**changes)
        battlefield = Battlefield(
            map_width=config.map_width, map_height=config.map_height,
            max_steps=config.max_steps, hill_speed_factor=config.hill_speed_factor,
            terrain=scenario.terrain_map(), randomize_terrain=scenario.terrain == "procedural",
            visibility_radius=scenario.visibility_radius)
        return cls(scenario.id, scenario.n_blue, scenario.n_red, battlefield, config,
                   OrderOfBattle.of(scenario), scenario)


class LiveBattle:
    """One battle, Blue under a person's standing orders, Red under ``red`` (module
    docstring).

    Args:
        field: where and with what forces.
        red: Red's commander.
        seed: the battle's seed (ground, deployment, every random draw).
        notes: JSON values kept in the replay's notes (the player's name...).

    Raises:
        TypeError: for a ``field`` or ``red`` of the wrong kind.
        ValueError: for a seed outside [0, 2**63) or notes JSON cannot hold.
    """

    def __init__(self, field: PlayField, red: RedCommander, *, seed: int = 0,
                 notes: Mapping[str, Any] | None = None) -> None:
        if not isinstance(field, PlayField):
            raise TypeError(f"field={short_repr(field)} is invalid: expected a PlayField")
        if not callable(getattr(red, "orders", None)) or not isinstance(
                getattr(red, "name", None), str):
            raise TypeError(f"red={short_repr(red)} is invalid: expected a commander with a "
                            "name and orders(battles, units) (envs.play.commanders)")
        seed = check_seed("seed", seed)
        if seed is None:
            raise ValueError("seed=None is invalid: expected an integer in [0, 2**63)")
        self.field, self.red, self.seed = field, red, seed
        self.battles = MultiBattalionBatch(
            1, field.n_blue, field.n_red, config=field.config, battlefield=field.battlefield,
            reward_weights=None, order_of_battle=field.order_of_battle)
        scenario = field.scenario
        placement = None if scenario is None or scenario.random_deployment \
            else scenario_placement(scenario, 1, seed)
        self.battles.reset(np.zeros(1, np.intp), [seed], np.zeros(1, np.int64), placement)
        team = self.battles.team
        self.blue_units = np.flatnonzero(team == BLUE)
        self.red_units = np.flatnonzero(team == RED)
        self.orders = StandingOrders(len(team))
        self.initial_strength = self.battles.state.strength[0].copy()
        state, config = self.battles.state, self.battles.config
        self.recorder = ReplayRecorder(state, 0, config.map_width, config.map_height, {
            **dict(notes or {}), "red": red.name, "field": field.name, "seed": seed})
        self.winner: str | None = None
        """``"blue"``, ``"red"`` or ``"draw"`` once the battle is over, else None."""

    # --- the clock ---------------------------------------------------------------------

    @property
    def step_count(self) -> int:
        return int(self.battles.state.step[0])

    @property
    def over(self) -> bool:
        return self.winner is not None

    def step(self) -> None:
        """Advance the battle one step: Blue's battalions carry out their orders, Red's
        commander gives Red's.

        Raises:
            OrderError: (409) if the battle is over.
        """
        if self.over:
            raise OrderError(409, f"the battle is over ({self.winner}): no more steps")
        battles = self.battles
        state, config = battles.state, battles.config
        actions = np.zeros((1, battles.n_units, C.ACTION_DIM), np.float32)
        formations = np.full((1, battles.n_units), C.KEEP_FORMATION, np.int8)
        actions[0, self.blue_units] = self.orders.actions(state, self.blue_units, config)
        formations[0, self.blue_units] = self.orders.formations(state, self.blue_units)
        red_actions, red_formations = self.red.orders(battles, self.red_units)
        actions[:, self.red_units] = red_actions
        if red_formations is not None:
            formations[:, self.red_units] = red_formations
        result = battles.step(actions, formations)
        self.recorder.record(battles.state, battles.last_events)
        over, winner = bool(result.battle_over[0]), int(result.winner[0])
        if self.field.scenario is not None:
            lost, _ = side_losses(battles.state, self.initial_strength)
            ended, verdict = judge(lost, self.field.scenario.break_fraction, over)
            over, winner = bool(ended[0]), int(verdict[0])
        if over:
            self.winner = WINNERS[winner]

    # --- orders --------------------------------------------------------------------------

    def order(self, unit: Any, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Change the standing orders of Blue's ``unit`` (an index of the battle's units,
        Blue's first) by ``changes``, some of :data:`ORDER_FIELDS`:

        * ``move``: ``[x, y]`` in metres on the map, or None to halt where it stands;
        * ``face``: a heading in radians (0 east, anticlockwise), or None for none;
        * ``fire``: True to fire at will, False to hold fire;
        * ``formation``: the name of a formation its arm can take, or None to keep its own.

        Nothing changes unless the whole order is valid.

        Returns:
            The unit's orders now (:meth:`~envs.play.orders.StandingOrders.of`).

        Raises:
            OrderError: naming the field, the value and what is allowed: 400 for a
                malformed order, 404 for no such unit, 403 for a unit of Red's, 409 for a
                unit out of the fight or a battle that is over.
        """
        if not isinstance(changes, Mapping):
            raise OrderError(400, f"order={short_repr(changes)} is invalid: expected an object "
                             f"with some of {list(ORDER_FIELDS)}")
        unknown = sorted(map(str, set(changes) - set(ORDER_FIELDS)))
        if unknown or not changes:
            what = f"order fields {short_repr(unknown)} are" if unknown \
                else "an order of no field is"
            raise OrderError(400, f"{what} invalid: expected one or more of "
                             f"{list(ORDER_FIELDS)}")
        unit = self._blue_unit(unit)
        width, height = self.battles.config.map_width, self.battles.config.map_height
        goal = facing = fire = formation = None
        if "move" in changes:
            goal = self._point("move", changes["move"], width, height)
        if "face" in changes:
            facing = np.nan if changes["face"] is None else math.remainder(
                _finite("face", changes["face"], "a heading in radians or null"), 2 * math.pi)
        if "fire" in changes:
            fire = changes["fire"]
            if not isinstance(fire, bool):
                raise OrderError(400, f"fire={short_repr(fire)} is invalid: expected true (fire "
                                 "at will) or false (hold fire)")
        if "formation" in changes:
            formation = self._formation(unit, changes["formation"])
        if goal is not None:
            self.orders.goal[unit] = goal
        if facing is not None:
            self.orders.facing[unit] = facing
        if fire is not None:
            self.orders.fire[unit] = fire
        if formation is not None:
            self.orders.formation[unit] = formation
        return self.orders.of(unit)

    def _blue_unit(self, unit: Any) -> int:
        if isinstance(unit, bool) or not isinstance(unit, numbers.Integral):
            raise OrderError(400, f"unit={short_repr(unit)} is invalid: expected the integer "
                             "index of one of Blue's battalions")
        unit = int(unit)
        n_units = self.battles.n_units
        if not 0 <= unit < n_units:
            raise OrderError(404, f"unit={unit} is invalid: the battle has units 0 to "
                             f"{n_units - 1}, Blue's {self.blue_units.tolist()}")
        if self.battles.team[unit] != BLUE:
            raise OrderError(403, f"unit={unit} is Red's: expected one of Blue's "
                             f"{self.blue_units.tolist()}")
        if self.over:
            raise OrderError(409, f"the battle is over ({self.winner}): no more orders")
        if not self.battles.state.active[0, unit]:
            raise OrderError(409, f"unit={unit} is out of the fight (routed or destroyed): it "
                             "takes no more orders")
        return unit

    @staticmethod
    def _point(name: str, value: Any, width: float, height: float) -> np.ndarray:
        if value is None:
            return np.full(2, np.nan)
        allowed = f"[x, y] in metres with 0 <= x <= {width:g} and 0 <= y <= {height:g}, or null"
        numbers_ = isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
            for v in value)
        if not numbers_ or not (0 <= value[0] <= width and 0 <= value[1] <= height):
            raise OrderError(400, f"{name}={short_repr(value)} is invalid: expected {allowed}")
        return np.array([float(value[0]), float(value[1])])

    def _formation(self, unit: int, value: Any) -> int:
        if value is None:
            return C.KEEP_FORMATION
        arm = int(self.battles.state.arm[unit])
        allowed = [C.FORMATION_NAMES[f] for f in C.ARM_FORMATIONS[arm]]
        if not isinstance(value, str) or value not in allowed:
            raise OrderError(400, f"formation={short_repr(value)} is invalid for unit {unit}, "
                             f"{C.ARM_NAMES[arm]}: expected one of {allowed} or null")
        return C.FORMATION_NAMES.index(value)

    # --- what the page shows -----------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """The battle now as JSON values: the step, the outcome, every unit, the last
        step's fire, Blue's standing orders and each side's mean strength and morale."""
        state = self.battles.state
        events = self.battles.last_events
        units = []
        for u in range(self.battles.n_units):
            units.append({
                "x": float(state.x[0, u]), "y": float(state.y[0, u]),
                "theta": float(state.theta[0, u]), "strength": float(state.strength[0, u]),
                "morale": float(state.morale[0, u]), "readiness": float(state.readiness[0, u]),
                "routed": bool(state.routed[0, u]), "destroyed": bool(state.destroyed[0, u]),
                "formation": int(state.formation[0, u])})
        fire = [] if events is None else [
            [int(u), int(events.target[0, u]), float(events.volley[0, u])]
            for u in np.flatnonzero((events.volley[0] > 1e-3) & (events.target[0] >= 0))]
        sides = []
        for members in (self.blue_units, self.red_units):
            sides.append({"units": len(members),
                          "strength": float(state.strength[0, members].mean()),
                          "morale": float(state.morale[0, members].mean()),
                          "broken": int((~state.active[0, members]).sum())})
        return {"step": self.step_count, "maxSteps": int(self.battles.config.max_steps),
                "over": self.over, "winner": self.winner, "units": units, "fire": fire,
                "orders": {str(u): self.orders.of(u) for u in self.blue_units.tolist()},
                "sides": sides}

    def replay(self) -> Replay:
        """The battle so far as a replay (the outcome in its notes once it is over)."""
        notes = {"steps": self.step_count}
        if self.winner is not None:
            notes["outcome"] = self.winner
        return self.recorder.finish(**notes)


def _finite(name: str, value: Any, allowed: str) -> float:
    """``value`` as a float, or :class:`OrderError` (400) unless it is a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value):
        raise OrderError(400, f"{name}={short_repr(value)} is invalid: expected {allowed}")
    return float(value)


__all__ = ["MAX_SIDE", "ORDER_FIELDS", "LiveBattle", "OrderError", "PlayField"]
