"""Coordination metrics (envs.metrics.coordination) on hand-placed battles with known answers."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.metrics import coordination
from envs.metrics.coordination import (
    METRICS,
    CoordinationTally,
    compute_all,
    fire_concentration,
    flanking_ratio,
    mutual_support_score,
)
from envs.sim import engine
from envs.sim.constants import CAVALRY, INFANTRY, SQUARE
from tests.sim.scenario import DEFAULT, FIRE_ONLY, actions, place

ROOT = Path(__file__).resolve().parents[1]
NAN = float("nan")


def events_of(state, volley=None, target=None, config=DEFAULT):
    """A step's events for ``state`` as it stands: its geometry, and the given volleys and
    targets (B, U) (nobody fired by default)."""
    shape = state.x.shape
    return engine.StepEvents(
        engine.sense(state, config),
        np.zeros(shape, np.float32) if volley is None else np.asarray(volley, np.float32),
        np.full(shape, -1, np.int32) if target is None else np.asarray(target, np.int32),
        np.zeros(shape, np.float32), np.zeros(shape, np.float32))


def assert_values(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-6, equal_nan=True)


class TestFireConcentration:
    # Blue 0, 1, 2 against Red 3, 4: one battle per case, all in one batch.
    UNITS = [(100, 300, 0), (100, 500, 0), (100, 700, 0), (900, 400, 180), (900, 600, 180)]
    TEAM = [0, 0, 0, 1, 1]

    def test_cases_in_one_batch(self):
        state = place(self.UNITS, self.TEAM, batch=5)
        fired = np.array([[1, 1, 0, 0, 0],    # two volleys at Red 3: concentrated
                          [1, 1, 0, 0, 0],    # one at Red 3, one at Red 4: split
                          [1, 0, 0, 0, 0],    # a single volley: undefined
                          [1, 1, 1, 0, 0],    # two of three at Red 3
                          [0, 0, 0, 1, 1]])   # only Red fired: undefined for Blue
        target = np.array([[3, 3, -1, -1, -1],
                           [3, 4, -1, -1, -1],
                           [4, -1, -1, -1, -1],
                           [3, 4, 3, -1, -1],
                           [-1, -1, -1, 0, 1]])
        events = events_of(state, 0.5 * fired, target)
        assert_values(fire_concentration(state, events, DEFAULT), [1, 0.5, NAN, 2 / 3, NAN])
        # Red's view of the last battle: its two volleys went to two battalions.
        assert_values(fire_concentration(state, events, DEFAULT, RED), [NAN] * 4 + [0.5])

    def test_a_unit_that_aimed_but_held_its_fire_does_not_count(self):
        state = place(self.UNITS, self.TEAM)
        events = events_of(state, [[0.5, 0.0, 0.5, 0, 0]], [[3, 4, 4, -1, -1]])
        assert_values(fire_concentration(state, events, DEFAULT), [0.5])


class TestFlanking:
    def test_fire_into_the_rear_and_the_flank_counts_and_into_the_front_does_not(self):
        # Red 2 faces east. Blue 0 stands 100 m behind it facing it (its rear), Blue 1
        # 100 m in front facing it (frontal); in the second battle Blue 1 stands 100 m
        # south of it, facing north (its right flank).
        state = place([(400, 500, 0), (600, 500, 180), (500, 500, 0)], [0, 0, 1], batch=2)
        state.x[1, 1], state.y[1, 1], state.theta[1, 1] = 500, 400, math.pi / 2
        assert_values(flanking_ratio(state, events_of(state), DEFAULT), [0.5, 1.0])

    def test_a_square_has_no_flank(self):
        state = place([(400, 500, 0), (500, 400, 90), (500, 500, 0)], [0, 0, 1],
                      formation=[0, 0, SQUARE])
        assert_values(flanking_ratio(state, events_of(state), DEFAULT), [0.0])

    def test_nobody_engaged_is_undefined(self):
        # Out of range, and (second battle) in range but facing away.
        state = place([(100, 500, 0), (900, 500, 180)], [0, 1], batch=2)
        state.x[1, 0], state.theta[1, 0] = 800, math.pi
        assert_values(flanking_ratio(state, events_of(state), DEFAULT), [NAN, NAN])

    def test_a_charge_into_the_flank_counts_though_cavalry_does_not_fire(self):
        # Blue cavalry touching Red's right flank (40 m: the two radii), facing it.
        state = place([(500, 460, 90), (500, 500, 0)], [0, 1], arm=[CAVALRY, INFANTRY])
        assert_values(flanking_ratio(state, events_of(state), DEFAULT), [1.0])
        state.y[:, 0] = 400  # 100 m away: neither fire nor contact
        assert_values(flanking_ratio(state, events_of(state), DEFAULT), [NAN])

    def test_units_out_of_the_fight_take_no_part(self):
        state = place([(400, 500, 0), (600, 500, 180), (500, 500, 0)], [0, 0, 1])
        state.routed[0, 1] = True  # the frontal one
        assert_values(flanking_ratio(state, events_of(state), DEFAULT), [1.0])
        state.destroyed[0, 2] = True
        assert_values(flanking_ratio(state, events_of(state), DEFAULT), [NAN])

    def test_what_it_calls_a_flank_the_engine_punishes_as_one(self):
        # The same volley at the same range, into the front and into the flank.
        front = place([(600, 500, 180), (500, 500, 0)], [0, 1])
        flank = place([(500, 600, 270), (500, 500, 0)], [0, 1])
        taken = []
        for state, expected in ((front, 0.0), (flank, 1.0)):
            after, events = engine.step(state, actions((0, 0, 1), (0, 0, 0)), FIRE_ONLY)
            assert_values(flanking_ratio(after, events, FIRE_ONLY, in_fight=state.active),
                          [expected])
            taken.append(events.damage_taken[0, 1])
        assert taken[1] == pytest.approx(FIRE_ONLY.flank_damage_multiplier * taken[0], rel=1e-5)


class TestMutualSupport:
    def test_shares_of_neighbours_within_the_radius(self):
        # Blue 0 and 1 100 m apart, Blue 2 far away: shares 1/2, 1/2, 0.
        state = place([(100, 100, 0), (100, 200, 0), (100, 900, 0), (900, 500, 180)],
                      [0, 0, 0, 1], batch=3)
        state.y[1, 2] = 300            # 100 m steps: all within 300 m, 0 and 2 not within 150
        state.destroyed[2, 2] = True   # the straggler is gone: two left, together
        assert_values(mutual_support_score(state, events_of(state), DEFAULT),
                      [1 / 3, 1.0, 1.0])
        assert_values(mutual_support_score(state, events_of(state), DEFAULT,
                                           support_radius=150.0), [1 / 3, 2 / 3, 1.0])

    def test_a_lone_battalion_is_undefined(self):
        state = place([(100, 100, 0), (900, 500, 180)], [0, 1])
        assert_values(mutual_support_score(state, events_of(state), DEFAULT), [NAN])

    @pytest.mark.parametrize("radius", [0.0, -5.0, NAN, "300", True])
    def test_bad_radius(self, radius):
        state = place([(100, 100, 0), (900, 500, 180)], [0, 1])
        with pytest.raises(ValueError, match="support_radius"):
            mutual_support_score(state, events_of(state), DEFAULT, support_radius=radius)


def test_side_per_battle_and_bad_sides():
    state = place([(100, 100, 0), (100, 200, 0), (900, 500, 180)], [0, 0, 1], batch=2)
    values = compute_all(state, events_of(state), DEFAULT, np.array([BLUE, RED]))
    assert_values(values["coordination/mutual_support_score"], [1.0, NAN])
    for side in (2, -1, np.array([0, 1, 0]), np.zeros((2, 1))):
        with pytest.raises(ValueError, match="side"):
            compute_all(state, events_of(state), DEFAULT, side)
    for in_fight in (np.ones((2, 2), bool), np.ones((2, 3))):
        with pytest.raises(ValueError, match="in_fight"):
            compute_all(state, events_of(state), DEFAULT, in_fight=in_fight)


def test_tally_means_over_defined_samples_and_joins_parts_exactly():
    tally = CoordinationTally.empty(3)
    step = {"coordination/fire_concentration": np.array([1.0, NAN, 0.5]),
            "coordination/flanking_ratio": np.array([NAN, NAN, NAN]),
            "coordination/mutual_support_score": np.array([0.25, 0.75, NAN])}
    tally.add(step)
    tally.add({**step, "coordination/fire_concentration": np.array([NAN, 1.0, NAN])})
    assert tally.means() == {"coordination/fire_concentration": pytest.approx(2.5 / 3),
                             "coordination/flanking_ratio": 0.0,
                             "coordination/mutual_support_score": pytest.approx(0.5)}
    parts = [CoordinationTally(tally.sums[:, :1].copy(), tally.counts[:, :1].copy()),
             CoordinationTally(tally.sums[:, 1:].copy(), tally.counts[:, 1:].copy())]
    assert CoordinationTally.join(parts).means() == tally.means()


def test_real_battles_give_values_in_range():
    batch = MultiBattalionBatch(64, 3, 3, config=DEFAULT, terrain=None, randomize_terrain=True,
                                visibility_radius=600.0, reward_weights=None)
    batch.reset(np.arange(64), list(range(64)), np.zeros(64, np.int64))
    tally = CoordinationTally.empty(64)
    for _ in range(60):
        result = batch.step(batch.scripted_actions(np.arange(6), 5))
        values = compute_all(batch.state, batch.last_events, batch.config,
                             in_fight=result.acted)
        for name, value in values.items():
            defined = value[~np.isnan(value)]
            assert ((defined >= 0) & (defined <= 1)).all(), name
        concentration = values["coordination/fire_concentration"]
        # At worst three volleys at three battalions.
        assert (concentration[~np.isnan(concentration)] >= 1 / 3).all()
        tally.add(values)
        batch.next_episode(np.flatnonzero(result.battle_over))
    assert all(0 <= value <= 1 for value in tally.means().values())
    assert tally.counts.sum(axis=1).min() > 0  # scripted L5 closes and fires


def test_the_reference_lists_exactly_the_metrics_the_module_exports():
    doc = (ROOT / "docs" / "metrics_reference.md").read_text()
    section = doc.split("## Coordination", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^### `coordination/(\w+)`", section, flags=re.MULTILINE)
    assert listed == list(METRICS)
    assert set(coordination.__all__) >= {"compute_all", *METRICS}


def test_the_pettingzoo_env_reports_blues_metrics_as_plain_numbers():
    from envs import MultiBattalionEnv

    env = MultiBattalionEnv(n_blue=3, n_red=2)
    env.reset(seed=0)
    metrics = env.get_coordination_metrics()
    assert list(metrics) == [f"coordination/{name}" for name in METRICS]
    assert metrics["coordination/fire_concentration"] == 0.0  # nobody fired yet
    assert 0 <= metrics["coordination/mutual_support_score"] <= 1
    for _ in range(5):
        env.step({agent: np.array([1.0, 0.0, 1.0], np.float32) for agent in env.agents})
    assert all(isinstance(v, float) and 0 <= v <= 1
               for v in env.get_coordination_metrics(support_radius=1e4).values())
    assert env.get_coordination_metrics(support_radius=1e4)[
        "coordination/mutual_support_score"] == 1.0
    with pytest.raises(ValueError, match="support_radius"):
        env.get_coordination_metrics(support_radius=-1.0)
