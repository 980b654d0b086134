"""What one side believes about a batch of N-vs-M battles: the battles as its side can
know them, with every enemy it does not see now drawn from its last report.

A side knows its own battalions, the ground, the clock, and every enemy battalion in
sight now. Of an enemy out of sight it knows the report its side last made
(:class:`~envs.battles.multi_observation.FogReports`: position, heading, strength,
morale, readiness, whether it was in the fight) and how long ago that was. A belief
state replaces each hidden enemy by that report, moved to a point it could have reached
since (uniform over the disc its top speed allows, clipped to the map) and reloaded as
far as it could have; its formation is the order of battle's. Nothing of a hidden
enemy's true state is read.
"""

from __future__ import annotations

import numpy as np

from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.sim.constants import ARTILLERY
from envs.sim.state import BattleState

F32 = np.float32
REPORT = {name: i for i, name in enumerate(("x", "y", "heading_cos", "heading_sin", "strength",
                                            "morale", "readiness"))}
"""Rows of :attr:`~envs.battles.multi_observation.FogReports.values` a belief reads."""


def hidden_enemies(battles: MultiBattalionBatch, side: int) -> np.ndarray:
    """(B, U) the enemy battalions ``side`` does not see now (its own never count)."""
    seen_now = battles.reports.seen_step[side].T == battles.state.step[:, None]
    return (battles.team != side)[None, :] & ~seen_now


def belief_states(battles: MultiBattalionBatch, side: int, rows: np.ndarray,
                  rng: np.random.Generator | None) -> BattleState:
    """The battles ``rows`` (indices into the batch, repeats allowed) as ``side`` believes
    them, one belief state a row.

    Args:
        battles: the real battles (reset, with their fog reports).
        side: the believing side (0 Blue, 1 Red).
        rows: (n,) battle indices; row ``i`` of the result is battle ``rows[i]``.
        rng: draws each hidden enemy's position (a new draw a row); None puts it where it
            was last seen.

    Returns:
        A :class:`~envs.sim.state.BattleState` of ``n`` battles whose random keys are
        zero: a caller that steps it gives it keys of its own.
    """
    rows = np.asarray(rows, dtype=np.intp)
    real = battles.state
    state = real.select(rows)
    hidden = hidden_enemies(battles, side)[rows]  # (n, U)
    if hidden.any():
        _fill_hidden(state, battles, side, rows, hidden, rng)
    state.key[:] = 0
    return state


def _fill_hidden(state: BattleState, battles: MultiBattalionBatch, side: int,
                 rows: np.ndarray, hidden: np.ndarray, rng: np.random.Generator | None) -> None:
    """Overwrite the hidden enemies of ``state`` with their reports (module docstring)."""
    config = battles.config
    battle, unit = np.nonzero(hidden)
    real_battle = rows[battle]
    report = battles.reports.values[:, side, unit, real_battle]  # (9, h)
    elapsed = (state.step[battle] - battles.reports.seen_step[side, unit, real_battle]
               ).astype(F32)
    x, y = report[REPORT["x"]], report[REPORT["y"]]
    if rng is not None:
        arm = battles.state.arm[unit]
        reach = config.step_length * np.max(np.asarray(config.arm_speed, F32), axis=1)[arm]
        radius = reach * elapsed * np.sqrt(rng.random(len(unit)))
        angle = rng.random(len(unit)) * (2 * np.pi)
        x = np.clip(x + radius * np.cos(angle), 0.0, config.map_width)
        y = np.clip(y + radius * np.sin(angle), 0.0, config.map_height)
    reload = np.where(battles.state.arm[unit] == ARTILLERY, config.artillery_reload_rate,
                      config.reload_rate)
    in_fight = battles.reports.in_fight[side, unit, real_battle]
    strength = report[REPORT["strength"]]
    formation = battles.starting_formations[unit]
    for name, value in (
            ("x", x), ("y", y),
            ("theta", np.mod(np.arctan2(report[REPORT["heading_sin"]],
                                        report[REPORT["heading_cos"]]), 2 * np.pi)),
            ("strength", strength), ("morale", report[REPORT["morale"]]),
            ("readiness", np.minimum(1.0, report[REPORT["readiness"]] + reload * elapsed)),
            ("routed", ~in_fight), ("destroyed", ~in_fight & (strength <= 0.0)),
            ("formation", formation), ("drill", 0)):
        array = getattr(state, name)
        array[battle, unit] = np.asarray(value).astype(array.dtype)

