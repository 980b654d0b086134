"""The battle model: manoeuvre, sight, fire, casualties and morale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from envs.sim import engine, kernels
from envs.sim.config import BattleConfig
from envs.sim.terrain import TerrainMap
from tests.sim.scenario import DEFAULT, FIRE_ONLY, actions, place, ridge

BLUE_RED = [0, 1]
HOLD = (0.0, 0.0, 0.0)
VOLLEY = (0.0, 0.0, 1.0)


def fire_once(state, blue=VOLLEY, red=HOLD, config=FIRE_ONLY):
    """One step of fire alone (no melee, no frontage: any range can be measured)."""
    return engine.step(state, actions(blue, red, batch=state.batch_size), config)


class TestManoeuvre:
    def test_full_march_covers_max_speed_times_dt_on_level_ground(self):
        state = place([(100, 500, 0), (900, 500, 180)], BLUE_RED)
        new, _ = engine.step(state, actions((1, 0, 0), HOLD), DEFAULT)
        assert new.x[0, 0] == pytest.approx(100 + DEFAULT.max_speed * DEFAULT.dt)
        assert new.y[0, 0] == pytest.approx(500)

    def test_stepping_back_is_slower_than_advancing(self):
        state = place([(500, 500, 0), (900, 500, 180)], BLUE_RED)
        new, _ = engine.step(state, actions((-1, 0, 0), HOLD), DEFAULT)
        assert 500 - new.x[0, 0] == pytest.approx(DEFAULT.step_length
                                                  * DEFAULT.backward_speed_fraction)

    def test_turn_is_limited_to_max_turn_rate_and_positive_is_counter_clockwise(self):
        state = place([(500, 500, 0), (900, 500, 180)], BLUE_RED)
        new, _ = engine.step(state, actions((0, 5.0, 0), HOLD), DEFAULT)  # clipped to 1
        assert new.theta[0, 0] == pytest.approx(DEFAULT.max_turn_rate)
        new, _ = engine.step(state, actions((0, -1.0, 0), HOLD), DEFAULT)
        assert new.theta[0, 0] == pytest.approx(2 * math.pi - DEFAULT.max_turn_rate, abs=1e-5)

    def test_units_stay_on_the_map(self):
        state = place([(2, 998, 135), (900, 500, 180)], BLUE_RED)
        for _ in range(5):
            state, _ = engine.step(state, actions((1, 0, 0), HOLD), DEFAULT)
        assert state.x[0, 0] == 0 and state.y[0, 0] == DEFAULT.map_height

    def test_high_ground_and_woods_slow_the_march(self):
        hill = TerrainMap(np.full((20, 20), 1.0, np.float32) * np.linspace(0, 1, 20)[None, :],
                          np.zeros((20, 20), np.float32))
        low = place([(10, 500, 0), (900, 900, 180)], BLUE_RED, terrain=hill)
        high = place([(985, 500, 180), (10, 900, 0)], BLUE_RED, terrain=hill)
        moved_low = engine.step(low, actions((1, 0, 0), HOLD), DEFAULT)[0].x[0, 0] - 10
        moved_high = 985 - engine.step(high, actions((1, 0, 0), HOLD), DEFAULT)[0].x[0, 0]
        assert moved_high == pytest.approx(moved_low * DEFAULT.hill_speed_factor, rel=1e-3)
        woods = TerrainMap(np.zeros((20, 20), np.float32), np.ones((20, 20), np.float32))
        in_woods = place([(10, 500, 0), (900, 900, 180)], BLUE_RED, terrain=woods)
        moved_woods = engine.step(in_woods, actions((1, 0, 0), HOLD), DEFAULT)[0].x[0, 0] - 10
        assert moved_woods == pytest.approx(moved_low * (1 - DEFAULT.forest_speed_penalty))


class TestFire:
    def test_damage_falls_with_range_and_stops_beyond_it(self):
        dealt = []
        for gap in (20, 60, 100, 150, 199, 201):
            state = place([(400, 500, 0), (400 + gap, 500, 180)], BLUE_RED)
            _, events = fire_once(state)
            dealt.append(events.damage_dealt[0, 0])
        assert all(a > b for a, b in zip(dealt[:-2], dealt[1:-1], strict=True))
        assert dealt[-1] == 0

    def test_point_blank_volley_matches_the_documented_constant(self):
        state = place([(500, 500, 0), (500.001, 500, 180)], BLUE_RED)
        _, events = fire_once(state)
        assert events.damage_dealt[0, 0] == pytest.approx(DEFAULT.volley_damage, rel=1e-3)
        assert events.damage_taken[0, 1] == events.damage_dealt[0, 0]

    def test_no_fire_outside_the_frontal_arc(self):
        # Red is 60 degrees off Blue's heading: outside the 45-degree half-arc.
        state = place([(500, 500, 60), (600, 500, 180)], BLUE_RED)
        _, events = fire_once(state)
        assert events.damage_dealt[0, 0] == 0 and events.target[0, 0] == -1

    def test_flank_and_rear_fire_multiply_damage(self):
        def dealt(red_heading: float) -> float:
            state = place([(500, 500, 0), (560, 500, red_heading)], BLUE_RED)
            return fire_once(state)[1].damage_dealt[0, 0]

        front, flank, rear = dealt(180), dealt(90), dealt(0)
        assert flank == pytest.approx(front * DEFAULT.flank_damage_multiplier, rel=1e-4)
        assert rear == pytest.approx(front * DEFAULT.rear_damage_multiplier, rel=1e-4)

    def test_cover_absorbs_fire(self):
        woods = TerrainMap(np.zeros((20, 20), np.float32), np.ones((20, 20), np.float32))
        in_open = fire_once(place([(500, 500, 0), (560, 500, 180)], BLUE_RED))[1]
        in_woods = fire_once(place([(500, 500, 0), (560, 500, 180)], BLUE_RED,
                                   terrain=woods))[1]
        assert in_woods.damage_dealt[0, 0] == pytest.approx(
            in_open.damage_dealt[0, 0] * (1 - DEFAULT.cover_protection), rel=1e-4)

    def test_firing_downhill_beats_firing_uphill(self):
        slope = TerrainMap(np.tile(np.linspace(0, 1, 20, dtype=np.float32), (20, 1)),
                           np.zeros((20, 20), np.float32))
        down = fire_once(place([(700, 500, 180), (640, 500, 0)], BLUE_RED, terrain=slope))[1]
        up = fire_once(place([(300, 500, 0), (360, 500, 180)], BLUE_RED, terrain=slope))[1]
        assert down.damage_dealt[0, 0] > up.damage_dealt[0, 0]

    def test_fire_on_the_move_is_ragged(self):
        still = fire_once(place([(500, 500, 0), (560, 500, 180)], BLUE_RED))[1]
        marching = fire_once(place([(500, 500, 0), (560, 500, 180)], BLUE_RED),
                             blue=(1, 0, 1))[1]
        assert marching.damage_dealt[0, 0] < still.damage_dealt[0, 0]

    def test_a_volley_spends_readiness_which_refills_slowly(self):
        state = place([(500, 500, 0), (560, 500, 180)], BLUE_RED)
        state, events = fire_once(state)
        assert events.volley[0, 0] == 1.0
        assert state.readiness[0, 0] == pytest.approx(DEFAULT.reload_rate)
        state, events = fire_once(state)
        assert events.volley[0, 0] == pytest.approx(DEFAULT.reload_rate)

    def test_holding_fire_keeps_the_volley_for_close_range(self):
        # The same total fire intent: one held volley at 40 m hurts far more than
        # continuous fire from 180 m for the same number of steps.
        held = place([(500, 500, 0), (540, 500, 180)], BLUE_RED)
        _, close = fire_once(held)
        distant = place([(500, 500, 0), (680, 500, 180)], BLUE_RED)
        total = 0.0
        for _ in range(20):
            distant, events = fire_once(distant)
            total += events.damage_dealt[0, 0]
        assert close.damage_dealt[0, 0] > 10 * total

    def test_ridge_hides_a_battalion_behind_it(self):
        terrain = ridge(height=1.0, along_x=500)
        hidden = place([(350, 500, 0), (650, 500, 180)], BLUE_RED, terrain=terrain)
        geometry = engine.sense(hidden, DEFAULT)
        assert not geometry.los[0, 0, 1] and not geometry.los[0, 1, 0]
        # From the middle of the flat top the brow still hides the foot of the slope;
        # from the forward edge of the top (the military crest) Blue sees Red.
        top = place([(500, 500, 0), (650, 500, 180)], BLUE_RED, terrain=terrain)
        assert not engine.sense(top, DEFAULT).los[0, 0, 1]
        forward_edge = place([(525, 500, 0), (650, 500, 180)], BLUE_RED, terrain=terrain)
        assert engine.sense(forward_edge, DEFAULT).los[0, 0, 1]
        behind = place([(420, 500, 0), (580, 500, 180)], BLUE_RED, terrain=terrain)
        _, events = fire_once(behind)
        assert events.damage_dealt[0, 0] == 0

    def test_hit_chance_falls_with_the_square_of_range_to_zero_at_fire_range(self):
        k = kernels.constants(DEFAULT, 1, 1)
        hits = [kernels.hit_chance(np.float32(d), k) for d in (0.0, 100.0, 160.0, 200.0, 350.0)]
        np.testing.assert_allclose(hits, [1, 0.25, 0.04, 0, 0], atol=1e-7)
        assert hits[3] == hits[4] == 0  # nothing at fire range or beyond

    def test_nearest_enemy_is_the_target(self):
        state = place([(500, 500, 0), (600, 500, 180), (560, 510, 180)], [0, 1, 1])
        _, events = engine.step(state, actions(VOLLEY, HOLD, HOLD), DEFAULT)
        assert events.target[0, 0] == 2
        assert events.damage_taken[0, 1] == 0 and events.damage_taken[0, 2] > 0


class TestMorale:
    def test_casualties_cost_morale_more_from_the_flank(self):
        def morale_after(red_heading: float) -> float:
            state = place([(500, 500, 0), (560, 500, red_heading)], BLUE_RED)
            return fire_once(state)[0].morale[0, 1]

        assert morale_after(90) < morale_after(180)

    def test_morale_recovers_when_not_under_fire(self):
        state = place([(100, 500, 0), (900, 500, 180)], BLUE_RED, morale=0.5)
        new, _ = engine.step(state, actions(HOLD, HOLD), DEFAULT)
        assert new.morale[0, 0] == pytest.approx(0.5 + DEFAULT.morale_recovery)

    def test_broken_morale_routs_sooner_or_later(self):
        state = place([(100, 500, 0), (900, 500, 180)], BLUE_RED, batch=200,
                      morale=0.05)
        state, _ = engine.step(state, actions(HOLD, HOLD, batch=200), DEFAULT)
        share = state.routed[:, 0].mean()
        # P(rout) = 1 - morale / threshold, with morale after recovery.
        expected = 1 - (0.05 + DEFAULT.morale_recovery) / DEFAULT.rout_threshold
        assert share == pytest.approx(expected, abs=0.1)

    def test_destroyed_below_one_percent(self):
        state = place([(500, 500, 0), (510, 500, 180)], BLUE_RED, strength=0.012)
        new, _ = fire_once(state)
        assert new.destroyed[0, 1] and not new.destroyed[0, 0]

    def test_routed_and_destroyed_units_stop_acting(self):
        state = place([(500, 500, 0), (560, 500, 180)], BLUE_RED)
        state.routed[0, 0] = True
        new, events = engine.step(state, actions((1, 1, 1), HOLD), DEFAULT)
        assert new.x[0, 0] == 500 and new.theta[0, 0] == 0
        assert events.damage_dealt[0, 0] == 0
        # And nobody fires at them.
        state = place([(500, 500, 0), (560, 500, 180)], BLUE_RED)
        state.destroyed[0, 1] = True
        _, events = fire_once(state)
        assert events.damage_dealt[0, 0] == 0


def test_step_does_not_modify_its_input_state():
    state = place([(500, 500, 0), (560, 500, 180)], BLUE_RED)
    before = {name: getattr(state, name).copy() for name in ("x", "strength", "morale")}
    fire_once(state, blue=(1, 1, 1), red=(1, 1, 1))
    for name, value in before.items():
        assert np.array_equal(getattr(state, name), value)


def test_state_stays_float32():
    state = place([(500, 500, 0), (560, 500, 180)], BLUE_RED)
    new, events = fire_once(state, blue=(0.7, 0.3, 1))
    for name in ("x", "y", "theta", "strength", "morale", "readiness"):
        assert getattr(new, name).dtype == np.float32, name
    for name in ("dist", "facing_cos", "elevation", "cover"):
        assert getattr(events.geometry, name).dtype == np.float32, name


def test_config_rejects_invalid_values_naming_the_field():
    with pytest.raises(ValueError, match="hill_speed_factor"):
        BattleConfig(hill_speed_factor=0.0)
    with pytest.raises(ValueError, match="map_width"):
        BattleConfig(map_width=-5)
    with pytest.raises(ValueError, match="max_steps"):
        BattleConfig(max_steps=0)
