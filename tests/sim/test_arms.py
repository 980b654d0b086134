"""Combined arms in the core: frontage, melee and charges, formations and their drill,
artillery, impassable ground, quality; and the old model as the special case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.sim import engine
from envs.sim.config import BattleConfig
from envs.sim.constants import (
    ARTILLERY,
    CAVALRY,
    COLUMN,
    INFANTRY,
    KEEP_FORMATION,
    LIMBERED,
    LINE,
    SQUARE,
)
from envs.sim.terrain import TerrainMap
from tests.sim.scenario import DEFAULT, FIRE_ONLY, actions, place

BLUE_RED = [0, 1]
HOLD = (0.0, 0.0, 0.0)
VOLLEY = (0.0, 0.0, 1.0)


def steer(state, i, j):
    """Rotate orders turning unit i of every battle towards unit j."""
    want = np.arctan2(state.y[:, j] - state.y[:, i], state.x[:, j] - state.x[:, i])
    error = (want - state.theta[:, i] + np.pi) % (2 * np.pi) - np.pi
    return np.clip(error / DEFAULT.max_turn_rate, -1, 1)


def fight(arms, formations, blue, red, gap=400.0, steps=600, batch=8):
    """Blue unit 0 against Red unit 1, ``gap`` metres apart on open ground, each driven by
    a function ``(rotate, distance) -> (move, rotate, fire)``; returns the final state."""
    state = place([(300, 500, 0), (300 + gap, 500, 180)], BLUE_RED, batch=batch, arm=arms,
                  formation=formations)
    state.y[:, 0] += np.linspace(-20, 20, batch)  # battles differ
    for _ in range(steps):
        orders = np.zeros((batch, 2, 3), np.float32)
        distance = np.hypot(state.x[:, 1] - state.x[:, 0], state.y[:, 1] - state.y[:, 0])
        orders[:, 0] = np.stack(blue(steer(state, 0, 1), distance), axis=1)
        orders[:, 1] = np.stack(red(steer(state, 1, 0), distance), axis=1)
        state, _ = engine.step(state, orders, DEFAULT)
        if (~state.active).any(axis=1).all():
            break
    return state


def charge(rotate, distance):
    return np.ones_like(distance), rotate, (distance < 250).astype(np.float32)


def stand_and_fire(rotate, distance):
    return np.zeros_like(distance), rotate, np.ones_like(distance)


def blue_wins(state):
    return float(np.mean(state.active[:, 0] & ~state.active[:, 1]))


class TestTheOldModelIsTheSpecialCase:
    def test_infantry_in_line_without_frontage_or_melee_is_the_fire_model(self):
        # Every new factor is 1 or 0 for infantry in line on going 1: with melee and
        # frontage off, two units a metre apart stay so and fire, without melee (the
        # golden battles, tests/sim/test_golden.py, hold the whole model to the old one).
        state = place([(500, 500, 0), (501, 500, 180)], BLUE_RED)
        new, events = engine.step(state, actions(VOLLEY, HOLD), FIRE_ONLY)
        assert (new.x[0, 0], new.x[0, 1]) == (500, 501)
        assert events.damage_dealt[0, 0] == pytest.approx(FIRE_ONLY.volley_damage, rel=1e-2)
        assert events.damage_dealt[0, 1] == 0


class TestFrontage:
    def test_units_never_stand_inside_each_other(self):
        state = place([(500, 500, 0), (510, 500, 0), (490, 505, 0)], [0, 0, 0], batch=2)
        new, _ = engine.step(state, actions(HOLD, HOLD, HOLD, batch=2), DEFAULT)
        for i, j in ((0, 1), (0, 2), (1, 2)):
            gap = np.hypot(new.x[:, i] - new.x[:, j], new.y[:, i] - new.y[:, j])
            # one pass of pushes in index order: within a few metres of the full frontage
            assert (gap > 0.8 * 2 * DEFAULT.arm_radius[INFANTRY]).all(), (i, j, gap)

    def test_marching_into_an_enemy_stops_at_contact(self):
        state = place([(400, 500, 0), (520, 500, 180)], BLUE_RED)
        for _ in range(60):
            state, _ = engine.step(state, actions((1, 0, 0), HOLD), FIRE_ONLY.replace(
                arm_radius=DEFAULT.arm_radius))
        contact = 2 * DEFAULT.arm_radius[INFANTRY]
        assert state.x[0, 1] - state.x[0, 0] == pytest.approx(contact, abs=0.5)


class TestMelee:
    def test_enemies_in_contact_fight_and_those_apart_do_not(self):
        contact = 2 * DEFAULT.arm_radius[INFANTRY]
        touching = place([(500, 500, 0), (500 + contact, 500, 180)], BLUE_RED)
        apart = place([(500, 500, 0), (500 + contact + 20, 500, 180)], BLUE_RED)
        assert engine.step(touching, actions(HOLD, HOLD), DEFAULT)[1].damage_taken[0, 1] \
            == pytest.approx(DEFAULT.melee_damage)
        assert engine.step(apart, actions(HOLD, HOLD), DEFAULT)[1].damage_taken[0, 1] == 0

    def test_a_charge_multiplies_cavalry_and_a_square_blunts_it(self):
        contact = DEFAULT.arm_radius[CAVALRY] + DEFAULT.arm_radius[INFANTRY]
        units = [(500, 500, 0), (500 + contact, 500, 180)]

        def blow(formation, fire):
            state = place(units, BLUE_RED, arm=[CAVALRY, INFANTRY], formation=[LINE, formation])
            return engine.step(state, actions((0, 0, fire), HOLD), FIRE_ONLY.replace(
                arm_radius=DEFAULT.arm_radius, melee_damage=DEFAULT.melee_damage))[1] \
                .damage_taken[0, 1]

        walk, line, square = blow(LINE, 0.0), blow(LINE, 1.0), blow(SQUARE, 1.0)
        assert walk == pytest.approx(DEFAULT.melee_damage * DEFAULT.arm_melee[CAVALRY])
        assert line == pytest.approx(walk * DEFAULT.charge_impact)
        assert square == pytest.approx(line * DEFAULT.arm_cavalry_defence[INFANTRY][SQUARE])


class TestArmsMatter:
    """The balance the issue asks for, in miniature (benchmarks/model_balance.py has the
    full table)."""

    def test_cavalry_beats_infantry_in_line_and_loses_to_a_square(self):
        line = fight([CAVALRY, INFANTRY], [LINE, LINE], charge, stand_and_fire)
        square = fight([CAVALRY, INFANTRY], [LINE, SQUARE], charge, stand_and_fire)
        assert blue_wins(line) >= 0.75
        assert blue_wins(square) <= 0.25

    def test_artillery_wins_at_range_against_a_static_line(self):
        state = fight([ARTILLERY, INFANTRY], [LINE, LINE], stand_and_fire, stand_and_fire,
                      gap=500.0, steps=800)
        assert blue_wins(state) >= 0.75
        assert (state.strength[:, 0] == 1).all()  # muskets do not reach 500 m

    def test_muskets_do_not_reach_where_guns_do(self):
        gap = 400.0
        guns = place([(300, 500, 0), (300 + gap, 500, 180)], BLUE_RED, arm=[ARTILLERY, INFANTRY])
        foot = place([(300, 500, 0), (300 + gap, 500, 180)], BLUE_RED)
        assert engine.step(guns, actions(VOLLEY, HOLD), DEFAULT)[1].damage_dealt[0, 0] > 0
        assert engine.step(foot, actions(VOLLEY, HOLD), DEFAULT)[1].damage_dealt[0, 0] == 0

    def test_artillery_hits_a_square_harder_than_a_line(self):
        def hit(formation):
            state = place([(300, 500, 0), (700, 500, 180)], BLUE_RED, arm=[ARTILLERY, INFANTRY],
                          formation=[LINE, formation])
            return engine.step(state, actions(VOLLEY, HOLD), DEFAULT)[1].damage_taken[0, 1]

        assert hit(SQUARE) == pytest.approx(hit(LINE) * DEFAULT.arm_exposure[INFANTRY][SQUARE])


class TestFormations:
    def test_a_change_takes_the_arms_drill_and_the_unit_stands_meanwhile(self):
        state = place([(300, 500, 0), (900, 500, 180)], BLUE_RED)
        order = np.array([[COLUMN, KEEP_FORMATION]])
        march = actions((1, 0, 0), HOLD)
        state, _ = engine.step(state, march, DEFAULT, formations=order)
        assert state.formation[0, 0] == COLUMN
        assert state.drill[0, 0] == DEFAULT.arm_drill_steps[INFANTRY]
        x = state.x[0, 0]
        assert x == 300  # the order's step is the drill's first
        for _ in range(DEFAULT.arm_drill_steps[INFANTRY] - 1):
            state, _ = engine.step(state, march, DEFAULT)
        assert state.x[0, 0] == x and state.drill[0, 0] == 1  # stood through the drill
        state, _ = engine.step(state, march, DEFAULT)
        assert state.x[0, 0] - x == pytest.approx(
            DEFAULT.step_length * DEFAULT.arm_speed[INFANTRY][COLUMN], rel=1e-5)

    def test_orders_an_arm_cannot_take_are_ignored(self):
        state = place([(300, 500, 0), (900, 500, 180)], BLUE_RED, arm=[CAVALRY, ARTILLERY])
        new, _ = engine.step(state, actions(HOLD, HOLD), DEFAULT,
                             formations=np.array([[SQUARE, SQUARE]]))
        assert (new.formation == LINE).all() and (new.drill == 0).all()

    def test_limbered_guns_move_and_cannot_fire_unlimbered_guns_fire_and_barely_move(self):
        units = [(300, 500, 0), (700, 500, 180)]
        limbered = place(units, BLUE_RED, arm=[ARTILLERY, INFANTRY], formation=[LIMBERED, LINE])
        battery = place(units, BLUE_RED, arm=[ARTILLERY, INFANTRY])
        go_and_fire = actions((1, 0, 1), HOLD)
        moved, events = engine.step(limbered, go_and_fire, DEFAULT)
        assert events.damage_dealt[0, 0] == 0
        assert moved.x[0, 0] - 300 == pytest.approx(
            DEFAULT.step_length * DEFAULT.arm_speed[ARTILLERY][LIMBERED], rel=1e-5)
        moved, events = engine.step(battery, go_and_fire, DEFAULT)
        assert events.damage_dealt[0, 0] > 0
        assert moved.x[0, 0] - 300 < 0.1 * DEFAULT.step_length

    def test_a_square_fires_all_round(self):
        behind = [(500, 500, 0), (440, 500, 0)]  # the enemy 60 m behind its back
        line = place(behind, BLUE_RED)
        square = place(behind, BLUE_RED, formation=[SQUARE, LINE])
        assert engine.step(line, actions(VOLLEY, HOLD), FIRE_ONLY)[1].damage_dealt[0, 0] == 0
        assert engine.step(square, actions(VOLLEY, HOLD), FIRE_ONLY)[1].damage_dealt[0, 0] > 0

    def test_formation_orders_are_checked(self):
        state = place([(300, 500, 0), (900, 500, 180)], BLUE_RED)
        with pytest.raises(ValueError, match="formations"):
            engine.step(state, actions(HOLD, HOLD), DEFAULT, formations=np.array([[7, 0]]))
        with pytest.raises(ValueError, match="formations"):
            engine.step(state, actions(HOLD, HOLD), DEFAULT, formations=np.array([0, 0]))


class TestGoing:
    def test_impassable_water_is_never_entered_and_slow_going_slows(self):
        going = np.ones((20, 20), np.float32)
        going[:, 10] = 0.0  # a river from x = 500 m to 550 m
        going[:, 5] = 0.5
        river = TerrainMap(np.zeros((20, 20), np.float32), np.zeros((20, 20), np.float32),
                           going=going)
        state = place([(480, 500, 0), (900, 900, 180)], BLUE_RED, terrain=river)
        for _ in range(20):
            state, _ = engine.step(state, actions((1, 0, 0), HOLD), DEFAULT)
        assert state.x[0, 0] < 500
        slow = place([(260, 500, 0), (900, 900, 180)], BLUE_RED, terrain=river)
        moved = engine.step(slow, actions((1, 0, 0), HOLD), DEFAULT)[0].x[0, 0] - 260
        assert moved == pytest.approx(0.5 * DEFAULT.step_length, rel=1e-5)

    def test_going_is_checked(self):
        with pytest.raises(ValueError, match="going"):
            TerrainMap(np.zeros((2, 2)), np.zeros((2, 2)), going=np.full((2, 2), -1.0))


def test_quality_multiplies_fire_and_divides_morale_losses():
    units = [(500, 500, 0), (560, 500, 180)]
    plain = engine.step(place(units, BLUE_RED), actions(VOLLEY, HOLD), FIRE_ONLY)
    better = engine.step(place(units, BLUE_RED, quality=[1.5, 2.0]), actions(VOLLEY, HOLD),
                         FIRE_ONLY)
    assert better[1].damage_dealt[0, 0] == pytest.approx(1.5 * plain[1].damage_dealt[0, 0])
    lost_plain = 1 - plain[0].morale[0, 1]
    lost_better = 1 - better[0].morale[0, 1]
    # 1.5x the damage, half the morale per damage (the shock term grows with the square)
    assert lost_better < lost_plain


@pytest.mark.parametrize("name, value", [
    ("arm_speed", ((1, 1, 1),)), ("arm_radius", (1, 2)), ("arm_drill_steps", (1.5, 1, 1)),
    ("arm_melee", (-1, 1, 1)), ("charge_impact", 0.5)])
def test_arm_settings_are_checked(name, value):
    with pytest.raises(ValueError, match=name):
        BattleConfig(**{name: value})


def test_arm_tables_from_yaml_lists_become_tuples():
    config = BattleConfig(arm_radius=[10, 10, 10],
                          arm_speed=[[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]])
    assert config.arm_radius == (10.0, 10.0, 10.0)
    assert hash(config) == hash(BattleConfig(arm_radius=(10, 10, 10),
                                             arm_speed=((1,) * 4,) * 3))
    assert math.isfinite(config.f32.max_speed)
