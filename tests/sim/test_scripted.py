"""Scripted Red at each curriculum level behaves as documented."""

from __future__ import annotations

import numpy as np
import pytest

from envs.sim import constants as C
from envs.sim import engine
from envs.sim.constants import (
    SCRIPTED_ARMS_INTENSITY,
    SCRIPTED_FIRE_INTENSITY,
    SCRIPTED_HALT_FRACTION,
)
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


# --- arms (levels 4 and 5) --------------------------------------------------------------

INF, CAV, GUN = C.INFANTRY, C.CAVALRY, C.ARTILLERY
KEEP = C.KEEP_FORMATION


def arms_orders(level: int, units, team, arm, formation, commanded=0):
    """The orders and formation order of unit ``commanded`` at ``level``."""
    state = place(units, team, arm=arm, formation=formation)
    geometry = engine.sense(state, DEFAULT)
    formations = np.empty((1, 1), np.int8)
    orders = scripted_actions(state, geometry, np.array([commanded]), np.array([level]),
                              DEFAULT, formations)
    return orders[0, 0], int(formations[0, 0])


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_an_infantry_battle_in_line_gets_no_formation_order_at_any_level(level):
    state = place([(300, 500, 0), (700, 500, 180), (300, 600, 0), (500, 600, 180)],
                  [0, 1, 0, 1])
    formations = np.zeros((1, 4), np.int8)
    scripted_actions(state, engine.sense(state, DEFAULT), np.arange(4), np.array([level]),
                     DEFAULT, formations)
    assert (formations == KEEP).all()


@pytest.mark.parametrize("level,deploys", [(2, False), (3, True), (4, True), (5, True)])
def test_infantry_in_column_deploys_into_line_near_the_enemy_from_level_3(level, deploys):
    near = [(300, 500, 0), (300 + C.SCRIPTED_DEPLOY_WITHIN - 10, 500, 180)]
    _, form = arms_orders(level, near, [0, 1], [INF, INF], [C.COLUMN, C.LINE])
    assert form == (C.LINE if deploys else KEEP)
    far = [(300, 500, 0), (300 + C.SCRIPTED_DEPLOY_WITHIN + 10, 500, 180)]
    assert arms_orders(level, far, [0, 1], [INF, INF], [C.COLUMN, C.LINE])[1] == KEEP


def test_level_5_infantry_forms_square_against_near_cavalry_and_level_4_does_not():
    units = [(300, 500, 0), (300 + C.SCRIPTED_SQUARE_WITHIN - 10, 500, 180)]
    (move, _, _), form = arms_orders(5, units, [0, 1], [INF, CAV], [C.LINE, C.LINE])
    assert form == C.SQUARE and move == 0
    assert arms_orders(4, units, [0, 1], [INF, CAV], [C.LINE, C.LINE])[1] == KEEP


def test_a_level_5_column_in_deploying_range_of_horse_forms_square_not_line():
    # A change of formation cannot be countermanded, so a column that began deploying
    # into line with horse about would meet the charge in its drill.
    units = [(300, 500, 0), (300 + C.SCRIPTED_DEPLOY_WITHIN - 10, 500, 180)]
    assert arms_orders(5, units, [0, 1], [INF, CAV], [C.COLUMN, C.LINE])[1] == C.SQUARE
    assert arms_orders(4, units, [0, 1], [INF, CAV], [C.COLUMN, C.LINE])[1] == C.LINE


def test_a_level_5_square_keeps_until_the_cavalry_is_far_then_deploys():
    between = (C.SCRIPTED_SQUARE_WITHIN + C.SCRIPTED_UNSQUARE_BEYOND) / 2
    units = [(300, 500, 0), (300 + between, 500, 180)]
    (move, _, _), form = arms_orders(5, units, [0, 1], [INF, CAV], [C.SQUARE, C.LINE])
    assert form == KEEP and move == 0
    units = [(300, 500, 0), (300 + C.SCRIPTED_UNSQUARE_BEYOND + 10, 500, 180)]
    assert arms_orders(5, units, [0, 1], [INF, CAV], [C.SQUARE, C.LINE])[1] == C.LINE


def test_level_5_infantry_closes_with_a_battery_instead_of_halting():
    halt = SCRIPTED_HALT_FRACTION * DEFAULT.fire_range
    units = [(300, 500, 0), (300 + halt - 20, 500, 180)]
    assert arms_orders(5, units, [0, 1], [INF, GUN], [C.LINE, C.LINE])[0][0] == 1
    assert arms_orders(4, units, [0, 1], [INF, GUN], [C.LINE, C.LINE])[0][0] == 0


def test_level_5_cavalry_rides_at_the_nearest_enemy_that_is_not_a_square():
    # Cavalry at the origin facing east; a square 150 m east, a line 200 m north.
    units = [(300, 500, 0), (450, 500, 180), (300, 700, 180)]
    (move, turn, fire), _ = arms_orders(5, units, [0, 1, 1], [CAV, INF, INF],
                                        [C.LINE, C.SQUARE, C.LINE])
    assert move == 1 and turn == 1.0 and fire == 1.0  # wheels left (north), charges
    # Levels 2 to 4 charge the nearest, square or not, at their arms' intensity.
    for level in (2, 3, 4):
        (move, turn, fire), _ = arms_orders(level, units, [0, 1, 1], [CAV, INF, INF],
                                            [C.LINE, C.SQUARE, C.LINE])
        assert move == 1 and turn == pytest.approx(0, abs=1e-5)
        assert fire == SCRIPTED_ARMS_INTENSITY[level - 1] > 0


def test_level_5_cavalry_backs_away_from_squares_when_there_is_nothing_else():
    units = [(300, 500, 0), (300 + C.SCRIPTED_CAVALRY_SHY - 10, 500, 180)]
    (move, _, fire), _ = arms_orders(5, units, [0, 1], [CAV, INF], [C.LINE, C.SQUARE])
    assert move == -1 and fire == 0


def test_cavalry_charges_only_within_charge_range_and_never_halts():
    units = [(300, 500, 0), (300 + C.SCRIPTED_CHARGE_WITHIN + 10, 500, 180)]
    (move, _, fire), _ = arms_orders(5, units, [0, 1], [CAV, INF], [C.LINE, C.LINE])
    assert move == 1 and fire == 0
    units = [(300, 500, 0), (340, 500, 180)]  # inside the infantry's 160 m halt
    (move, _, fire), _ = arms_orders(5, units, [0, 1], [CAV, INF], [C.LINE, C.LINE])
    assert move == 1 and fire == 1


@pytest.mark.parametrize("level", [4, 5])
def test_guns_march_limbered_unlimber_in_range_then_stand_and_fire(level):
    unlimber = C.SCRIPTED_UNLIMBER_FRACTION * DEFAULT.artillery_fire_range
    far = [(100, 500, 0), (100 + unlimber + 20, 500, 180)]
    (move, _, fire), form = arms_orders(level, far, [0, 1], [GUN, INF], [C.LIMBERED, C.LINE])
    assert (move, fire, form) == (1, 0, KEEP)
    near = [(100, 500, 0), (100 + unlimber - 20, 500, 180)]
    (move, _, fire), form = arms_orders(level, near, [0, 1], [GUN, INF], [C.LIMBERED, C.LINE])
    assert (move, fire, form) == (0, 0, C.LINE)
    (move, _, fire), form = arms_orders(level, near, [0, 1], [GUN, INF], [C.LINE, C.LINE])
    assert (move, fire, form) == (0, SCRIPTED_ARMS_INTENSITY[level - 1], KEEP)


def test_level_5_guns_limber_up_to_follow_when_no_enemy_is_in_range():
    units = [(100, 500, 0), (100 + DEFAULT.artillery_fire_range + 20, 500, 180)]
    assert arms_orders(5, units, [0, 1], [GUN, INF], [C.LINE, C.LINE])[1] == C.LIMBERED
    assert arms_orders(4, units, [0, 1], [GUN, INF], [C.LINE, C.LINE])[1] == KEEP


@pytest.mark.parametrize("level,blind_horse", [(1, True), (2, False), (3, False)])
def test_level_1_is_arm_blind_and_levels_2_and_3_use_only_their_horse(level, blind_horse):
    units = [(300, 500, 0), (400, 500, 180), (300, 700, 0)]
    state = place(units, [0, 1, 0], arm=[CAV, CAV, GUN], formation=[C.LINE, C.LINE, C.LIMBERED])
    geometry = engine.sense(state, DEFAULT)
    formations = np.empty((1, 2), np.int8)
    armed = scripted_actions(state, geometry, np.array([0, 2]), np.array([level]), DEFAULT,
                             formations)
    blind = scripted_actions(place(units, [0, 1, 0]), geometry, np.array([0, 2]),
                             np.array([level]), DEFAULT)
    assert (formations == KEEP).all()
    assert np.array_equal(armed[:, 1], blind[:, 1])  # the guns: as the level's infantry
    assert np.array_equal(armed[:, 0], blind[:, 0]) == blind_horse
    if not blind_horse:  # the horse rides at the enemy 100 m off and charges
        assert armed[0, 0, 0] == 1 and armed[0, 0, 2] == SCRIPTED_ARMS_INTENSITY[level - 1]


def test_formation_orders_must_be_a_writable_int8_array_of_the_units():
    state = place([(300, 500, 0), (700, 500, 180)], [0, 1])
    geometry = engine.sense(state, DEFAULT)
    for bad in (np.empty((1, 2), np.int8), np.empty((1, 1), np.int16), [[0]]):
        with pytest.raises(ValueError, match="formations"):
            scripted_actions(state, geometry, RED, np.array([5]), DEFAULT, bad)
