"""Scripted Red at each curriculum level behaves as documented."""

from __future__ import annotations

import numpy as np
import pytest

from envs.sim import engine
from envs.sim.constants import SCRIPTED_FIRE_INTENSITY, SCRIPTED_HALT_FRACTION
from envs.sim.scripted import scripted_actions
from tests.sim.scenario import DEFAULT, place

RED = np.array([1])


def red_orders(level: int, red_at=(700.0, 500.0, 90.0)) -> np.ndarray:
    """Red's action when Blue stands due west of it."""
    state = place([(300, 500, 0), red_at], [0, 1])
    geometry = engine.sense(state, DEFAULT)
    return scripted_actions(state, geometry, RED, np.array([level]), DEFAULT)[0, 0]


def test_level_1_stands_still_and_holds_fire():
    assert np.array_equal(red_orders(1), [0, 0, 0])


def test_level_2_wheels_toward_the_enemy_by_the_shortest_arc_but_stays_put():
    move, turn, fire = red_orders(2)  # facing north, Blue is west: turn left (CCW)
    assert move == 0 and fire == 0 and turn == 1.0
    move, turn, fire = red_orders(2, red_at=(700, 500, 270))  # facing south: turn right
    assert turn == -1.0


def test_level_3_advances_until_within_halt_distance_and_never_fires():
    move, turn, fire = red_orders(3, red_at=(700, 500, 180))
    assert move == 1 and turn == pytest.approx(0, abs=1e-5) and fire == 0
    halt = SCRIPTED_HALT_FRACTION * DEFAULT.fire_range
    move, _, _ = red_orders(3, red_at=(300 + halt - 1, 500, 180))
    assert move == 0


@pytest.mark.parametrize("level", [4, 5])
def test_levels_4_and_5_fire_at_their_documented_intensity(level):
    _, _, fire = red_orders(level, red_at=(700, 500, 180))
    assert fire == SCRIPTED_FIRE_INTENSITY[level - 1]


def test_a_turn_smaller_than_the_turn_rate_is_exact():
    # Blue 3 degrees off Red's front: Red turns exactly that much, no overshoot.
    move, turn, _ = red_orders(2, red_at=(700, 500, 177))
    assert turn * DEFAULT.max_turn_rate == pytest.approx(np.radians(3), abs=1e-4)


def test_levels_differ_per_battle_in_one_batch():
    state = place([(300, 500, 0), (700, 500, 180)], [0, 1], batch=5)
    geometry = engine.sense(state, DEFAULT)
    orders = scripted_actions(state, geometry, RED, np.arange(1, 6), DEFAULT)[:, 0]
    assert orders[:, 0].tolist() == [0, 0, 1, 1, 1]
    assert orders[:, 2].tolist() == [0, 0, 0, 0.5, 1.0]
