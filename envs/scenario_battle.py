"""Play a scenario to its end: many battles of one order of battle at once.

:func:`play_scenario` deploys a :class:`~envs.scenario.Scenario` into a batch of
battles (each battle a seed: the units stand where the scenario puts them, give or take
:data:`DEPLOYMENT_JITTER`, and the routs are drawn from the battle's own key), lets a
commander for each side give orders every step (by default the scripted combined-arms
doctrine, :class:`~envs.commanders.arms_doctrine.CombinedArmsDoctrine`) and stops each
battle when a side is beaten by the scenario's break rule (:func:`judge`: losses reaching
``break_fraction``, or the smaller losses by :data:`TIMEOUT_MARGIN` at ``max_steps``).
Casualties are reported as historians count them, with :data:`ROUTED_LOSS` of the
strength of routed units. ``docs/scenarios.md`` ("How a played scenario ends") has the
rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from envs.battles.multi_battalion_batch import bytes_per_battle
from envs.commanders.arms_doctrine import CombinedArmsDoctrine
from envs.rendering.replay import Replay, ReplayRecorder
from envs.scenario import Scenario
from envs.sim import engine
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.deploy import Placement, place
from envs.sim.engine import Geometry
from envs.sim.state import BattleState
from envs.sim.validation import (
    check_bool,
    check_count_fits,
    check_int,
    check_seed,
    short_repr,
)

F32 = np.float32

DEPLOYMENT_JITTER = 20.0
"""Standard deviation in metres of each unit's deployment around its scenario position,
so that the battles of a batch differ by more than their routs."""
TIMEOUT_MARGIN = 0.1
"""At the time limit, a side wins if its losses are this much (of its strength) below
the enemy's."""
ROUTED_LOSS = 0.5
"""Share of a routed unit's remaining men counted among the casualties (taken prisoner
or lost as stragglers in the retreat)."""
STEP_SECONDS = 4.0
"""Real time a step stands for when a battle's length is compared with history: a unit
covers at most 5 m a step, and formed infantry marched about 75 m a minute."""
NO_WINNER = -1


class Commander(Protocol):
    """Gives every unit's orders: ``(actions (B, U, 3), formations (B, U))``, as
    :func:`envs.sim.engine.step` takes them (only the commander's own side's rows are
    used)."""

    def orders(self, state: BattleState, geometry: Geometry) -> tuple[np.ndarray, np.ndarray]:
        ...


@dataclass(frozen=True)
class ScenarioOutcome:
    """How the battles of one scenario ended (one entry per battle of the batch)."""

    winner: np.ndarray
    """(B,) 0 Blue, 1 Red, -1 a draw."""
    steps: np.ndarray
    """(B,) the step each battle ended at."""
    losses: np.ndarray
    """(B, 2) each side's losses (the break rule's measure) as a share of its strength."""
    casualties: np.ndarray
    """(B, 2) each side's casualties as a share of its strength (module docstring)."""
    replay: Replay | None = None
    """Battle 0, step by step to its end, when recorded."""


def side_losses(state: BattleState, initial: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, 2) losses and casualties of each side, as shares of ``initial`` (U,) strengths."""
    lost = initial[None] - state.strength * state.active
    casualty = initial[None] - state.strength + ROUTED_LOSS * state.strength * state.routed
    total = np.array([initial[state.team == t].sum() for t in (0, 1)])
    per_side = [np.stack([a[:, state.team == t].sum(axis=1) for t in (0, 1)], axis=1) / total
                for a in (lost, casualty)]
    return per_side[0], np.clip(per_side[1], 0.0, 1.0)


def scenario_placement(scenario: Scenario, n_battles: int, seed: int) -> Placement:
    """Where the units of ``n_battles`` battles of ``scenario`` stand at the start: the
    scenario's positions, jittered by :data:`DEPLOYMENT_JITTER` from battle ``b``'s own
    seed ``seed + b`` (so a battle is the same in any batch), never into the water.

    Raises:
        TypeError: for a ``scenario`` that is not a :class:`Scenario`.
        ValueError: for a scenario that deploys at random (it has no positions), or an
            ``n_battles`` or ``seed`` out of range (named).
    """
    _check_batch(scenario, n_battles, seed)
    if scenario.random_deployment:
        raise ValueError(f"scenario {scenario.id!r} deploys at random: play_scenario needs "
                         "placed units")
    terrain = scenario.terrain_map()
    seeds = np.arange(n_battles, dtype=np.uint64) + np.uint64(seed)
    jitter = np.stack([np.random.default_rng(int(s)).normal(0, DEPLOYMENT_JITTER,
                                                              (2, len(scenario.units)))
                       for s in seeds], axis=1)
    x = np.clip(scenario.array("x")[None] + jitter[0], 0, scenario.width)
    y = np.clip(scenario.array("y")[None] + jitter[1], 0, scenario.height)
    if terrain is not None:  # jitter never puts a unit in the water
        wet = terrain.going_at(x, y) <= 0
        x = np.where(wet, scenario.array("x")[None], x)
        y = np.where(wet, scenario.array("y")[None], y)
    return Placement(x=x, y=y, theta=scenario.array("theta"),
                     strength=scenario.array("strength"),
                     formation=scenario.array("formation", np.int16))


def judge(lost: np.ndarray, break_fraction: float,
          at_limit: bool | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which battles are over and who won, by the break rule (module docstring).

    Args:
        lost: (B, 2) each side's losses as a share of its strength (:func:`side_losses`).
        break_fraction: the losses that beat a side.
        at_limit: whether each battle (or all of them) has reached its step limit.

    Returns:
        ``(over, winner)``: (B,) bool, and (B,) int8 0 Blue, 1 Red or :data:`NO_WINNER`
        (a draw, or a battle not over).
    """
    broken = lost >= break_fraction
    decided = broken.any(axis=1)
    margin = lost[:, 1] - lost[:, 0]
    by_break = np.where(broken.all(axis=1), NO_WINNER, np.where(broken[:, 1], 0, 1))
    by_time = np.where(margin >= TIMEOUT_MARGIN, 0,
                       np.where(-margin >= TIMEOUT_MARGIN, 1, NO_WINNER))
    over = decided | at_limit
    winner = np.where(decided, by_break, np.where(over, by_time, NO_WINNER))
    return over, winner.astype(np.int8)


def deploy_scenario(scenario: Scenario, n_battles: int, seed: int) -> BattleState:
    """A batch of ``n_battles`` battles of ``scenario``, battle ``b`` jittered and keyed
    by ``seed + b`` (:func:`scenario_placement`).

    Raises:
        TypeError: for a ``scenario`` that is not a :class:`Scenario`.
        ValueError: for a scenario that deploys at random (it has no positions), or an
            ``n_battles`` or ``seed`` out of range (named).
    """
    placement = scenario_placement(scenario, n_battles, seed)
    terrain = scenario.terrain_map()
    rows, cols = (1, 1) if terrain is None else terrain.shape
    state = BattleState.empty(n_battles, scenario.array("side", np.int8), rows, cols,
                              arm=scenario.array("arm", np.int8),
                              quality=scenario.array("quality"))
    seeds = np.arange(n_battles, dtype=np.uint64) + np.uint64(seed)
    place(state, np.arange(n_battles), rnd.seed_keys(seeds), placement, terrain=terrain)
    return state


def _check_batch(scenario: Any, n_battles: Any, seed: Any) -> None:
    """A scenario, a batch size that fits in memory and a first seed whose batch of seeds
    stays in [0, 2**63), checked before any battle is built."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario={short_repr(scenario)} is invalid: expected a Scenario "
                        "(envs.scenario.load_scenario_file reads one)")
    n_battles = check_int("n_battles", n_battles, minimum=1)
    # Each battle holds its own ground: elevation, cover, going and four elevation
    # patches, seven float32 a cell (BattleState.empty).
    cells = 28 * scenario.rows * scenario.cols
    check_count_fits("n_battles", n_battles, bytes_per_battle(len(scenario.units)) + cells,
                     f"battles of {len(scenario.units)} units")
    if seed is None:
        raise ValueError("seed=None is invalid: expected an integer in [0, 2**63 - n_battles]")
    check_seed("seed", seed, count=n_battles)


def _check_play_arguments(scenario: Any, n_battles: Any, seed: Any, blue: Any, red: Any,
                          config: Any, record: Any) -> None:
    """:func:`play_scenario`'s arguments, each checked before any battle is built."""
    _check_batch(scenario, n_battles, seed)
    for name, commander in (("blue", blue), ("red", red)):
        if commander is not None and not callable(getattr(commander, "orders", None)):
            raise TypeError(f"{name}={short_repr(commander)} is invalid: expected None or a "
                            "commander with orders(state, geometry)")
    if config is not None and not isinstance(config, BattleConfig):
        raise TypeError(f"config={short_repr(config)} is invalid: expected None or a "
                        "BattleConfig")
    check_bool("record", record)


def play_scenario(scenario: Scenario, n_battles: int = 16, seed: int = 0, *,
                  blue: Commander | None = None, red: Commander | None = None,
                  config: BattleConfig | None = None,
                  record: bool = False) -> ScenarioOutcome:
    """Play ``n_battles`` battles of ``scenario`` to their ends (module docstring).

    Args:
        scenario: a scenario with placed units.
        n_battles: battles in the batch (seeds ``seed`` to ``seed + n_battles - 1``).
        seed: the first battle's seed.
        blue: Blue's commander; the combined-arms doctrine if None.
        red: Red's commander; the combined-arms doctrine if None.
        config: the battle model; the scenario's field with the default model if None.
        record: keep a replay of battle 0 (:mod:`envs.rendering.replay`) to its end.

    Raises:
        TypeError: for a ``scenario``, ``blue``, ``red`` or ``config`` of the wrong kind.
        ValueError: for a scenario that deploys at random, ``n_battles`` < 1 or more
            than fit in memory, a seed outside [0, 2**63 - n_battles] or a ``record``
            other than True or False (each named).
    """
    _check_play_arguments(scenario, n_battles, seed, blue, red, config, record)
    config = scenario.config() if config is None else config
    doctrine = CombinedArmsDoctrine(config)
    blue = doctrine if blue is None else blue
    red = doctrine if red is None else red
    state = deploy_scenario(scenario, n_battles, seed)
    initial = scenario.array("strength")
    geometry = engine.sense(state, config)
    red_rows = state.team == 1
    winner = np.full(n_battles, NO_WINNER, np.int8)
    steps = np.zeros(n_battles, np.int32)
    losses = np.zeros((n_battles, 2))
    casualties = np.zeros((n_battles, 2))
    running = np.ones(n_battles, bool)
    recorder = ReplayRecorder(state, 0, scenario.width, scenario.height,
                              {"scenario": scenario.id, "seed": seed}) if record else None
    for t in range(config.max_steps):
        actions, formations = blue.orders(state, geometry)
        if red is not blue:
            red_actions, red_formations = red.orders(state, geometry)
            actions[:, red_rows] = red_actions[:, red_rows]
            formations[:, red_rows] = red_formations[:, red_rows]
        state, events = engine.step(state, actions, config, geometry, formations)
        geometry = events.geometry
        if recorder is not None and running[0]:
            recorder.record(state, events)
        lost, casualty = side_losses(state, initial)
        over, verdict = judge(lost, scenario.break_fraction, t + 1 == config.max_steps)
        ended = running & over
        winner[ended] = verdict[ended]
        steps[ended], losses[ended], casualties[ended] = t + 1, lost[ended], casualty[ended]
        running &= ~ended
        if not running.any():
            break
    replay = None if recorder is None else recorder.finish(
        winner={0: "blue", 1: "red", NO_WINNER: "draw"}[int(winner[0])], steps=int(steps[0]))
    return ScenarioOutcome(winner, steps, losses, casualties, replay)


__all__ = ["Commander", "DEPLOYMENT_JITTER", "ROUTED_LOSS", "STEP_SECONDS", "ScenarioOutcome",
           "TIMEOUT_MARGIN", "deploy_scenario", "judge", "play_scenario", "scenario_placement",
           "side_losses"]
