"""The compiled fog of war, observations and global states of :mod:`envs.battles.multi_observation`
compute what the retired NumPy implementation computed
(``tests/envs_kernels/reference_team_observation.py``), battle by battle, through whole
stretches of battle under fog, with battalions out of the fight, distance ties, teams
bigger than the slots, deployments (every report revealed) and restarts of a few
battles. (One thread or many give the same bits: ``tests/sim/test_kernels.py``.)"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from envs.battles import multi_observation as mo
from envs.battles.multi_observation import (
    ENEMY_SLOTS,
    OBSERVATION_FEATURES,
    FogReports,
    battalion_observations,
    global_states,
    observe,
    sightings,
)
from envs.sim import engine
from envs.sim.config import BattleConfig
from envs.sim.constants import TERRAIN_COLS, TERRAIN_ROWS
from envs.sim.deploy import deploy
from envs.sim.state import BattleState
from tests.envs_kernels import reference_team_observation as reference

F32 = np.float32
TEAM_SIZES = ((1, 1), (2, 2), (3, 2), (4, 4), (6, 6), (8, 8))
N_BATTLES = 64
"""Battles per team size (384 in all)."""
N_STEPS = 60
CONFIG = BattleConfig(map_width=500.0, map_height=400.0)
"""A small, oblong map: the armies meet within the steps played (fire, losses, routs), and
the map's width and height are not interchangeable."""
RADIUS = 220.0
"""Short enough that most battalions start out of the enemy's sight."""

HIT_FEATURES = np.array([name.endswith("hit_chance") for name in OBSERVATION_FEATURES])
HIT_TOLERANCE = 1e-7
"""The hit chance is a float32 power (``(1 - d / range) ** exponent``): NumPy computes
the default exponent 2 as a square, Numba calls ``powf``, which is off by one unit in
the last place (6e-8 below 1) now and then (about 700 of the 25 million numbers the
team-size test compares). Every other feature is the same float32 operation in the
same order, and must be equal."""
REPORT_FIELDS = ("values", "in_fight", "seen_step")


def assert_observations_match(observations: np.ndarray, expected: np.ndarray) -> None:
    """Equal as numbers: the NumPy code left -0.0 in some empty slots (a negative belief
    times an absent slot's 0), where the kernels write 0.0."""
    assert observations.shape == expected.shape and observations.dtype == np.float32
    np.testing.assert_array_equal(observations[..., ~HIT_FEATURES], expected[..., ~HIT_FEATURES])
    np.testing.assert_allclose(observations[..., HIT_FEATURES], expected[..., HIT_FEATURES],
                               rtol=0, atol=HIT_TOLERANCE)


def assert_reports_match(reports: FogReports, expected: FogReports) -> None:
    for name in REPORT_FIELDS:
        np.testing.assert_array_equal(getattr(reports, name), getattr(expected, name), name)


def copy_reports(reports: FogReports) -> FogReports:
    return FogReports(*(getattr(reports, name).copy() for name in REPORT_FIELDS))


def new_battles(n_blue: int, n_red: int, n_battles: int, seed: int,
                config: BattleConfig = CONFIG) -> BattleState:
    team = np.array([0] * n_blue + [1] * n_red, np.int8)
    state = BattleState.empty(n_battles, team, TERRAIN_ROWS, TERRAIN_COLS)
    keys = np.arange(n_battles, dtype=np.uint64) + np.uint64(1000 * seed)
    deploy(state, np.arange(n_battles), keys, config)
    return state


def advance_orders(rng: np.random.Generator, state: BattleState) -> np.ndarray:
    """Random orders, mostly forward (the armies deploy facing each other), firing."""
    orders = rng.uniform(-1, 1, (state.batch_size, state.n_units, 3)).astype(F32)
    orders[..., 0] = orders[..., 0] * F32(0.5) + F32(0.5)
    orders[..., 1] *= F32(0.3)
    orders[..., 2] = np.abs(orders[..., 2])
    return orders


def rout(state: BattleState, share: float, rng: np.random.Generator) -> BattleState:
    """``state`` with a random ``share`` of the battalions routed (out of the fight)."""
    routed = np.asfortranarray(state.routed | (rng.random(state.routed.shape) < share))
    return dataclasses.replace(state, routed=routed)


def reference_deployment(state, geometry, config=CONFIG, radius=RADIUS):
    """The reports, observations and global states the NumPy code gave at deployment."""
    reports = FogReports.empty(state.n_units, state.batch_size)
    reference.refresh(reports, state, geometry, np.ones((2, state.n_units, state.batch_size),
                                                        bool))
    return (reports, *reference_step(state, geometry, reports, config, radius))


def reference_step(state, geometry, reports, config=CONFIG, radius=RADIUS):
    sees = reference.sightings(state, geometry, radius)
    reference.refresh(reports, state, geometry, sees)
    return (sees, reference.battalion_observations(state, geometry, reports, sees, config),
            reference.global_states(state, geometry, config))


@pytest.mark.parametrize("sizes", TEAM_SIZES, ids=lambda s: f"{s[0]}v{s[1]}")
def test_the_kernels_give_the_reference_observations_through_battles(sizes):
    rng = np.random.default_rng(sizes[0] * 10 + sizes[1])
    state = new_battles(*sizes, N_BATTLES, seed=sum(sizes))
    geometry = engine.sense(state, CONFIG)
    expected_reports, sees, expected_obs, expected_state = reference_deployment(state, geometry)
    fused = FogReports.empty(state.n_units, state.batch_size)  # observe(): one kernel
    obs, states = observe(state, geometry, fused, RADIUS, CONFIG, reveal_all=True)
    assert_reports_match(fused, expected_reports)
    assert_observations_match(obs, expected_obs)
    np.testing.assert_array_equal(states, expected_state)
    separate = copy_reports(fused)  # the public functions one by one

    seen = {"hidden enemy": 0, "stale report": 0, "out of the fight": 0,
            "believed in the fight but out": 0, "enemy left out of the slots": 0}
    enemy = state.team[:, None] != state.team[None, :]
    for t in range(N_STEPS):
        if t == N_STEPS // 3:
            state = rout(state, 0.2, rng)
        state, events = engine.step(state, advance_orders(rng, state), CONFIG, geometry)
        geometry = events.geometry
        sees, expected_obs, expected_state = reference_step(state, geometry, expected_reports)

        obs, states = observe(state, geometry, fused, RADIUS, CONFIG)
        assert_reports_match(fused, expected_reports)
        assert_observations_match(obs, expected_obs)
        np.testing.assert_array_equal(states, expected_state)

        np.testing.assert_array_equal(sightings(state, geometry, RADIUS), sees)
        separate.refresh(state, geometry, sees)
        assert_reports_match(separate, expected_reports)
        assert_observations_match(
            battalion_observations(state, geometry, separate, sees, CONFIG), expected_obs)
        np.testing.assert_array_equal(global_states(state, geometry, CONFIG), expected_state)

        # What these battles put the kernels through.
        believed = expected_reports.in_fight[state.team]  # (i, j, B) as i's side believes
        seen["hidden enemy"] += np.count_nonzero(~sees[state.team] & enemy[:, :, None])
        seen["stale report"] += np.count_nonzero(expected_reports.seen_step < state.step)
        seen["out of the fight"] += np.count_nonzero(~state.active)
        seen["believed in the fight but out"] += np.count_nonzero(
            believed & ~state.active.T[None] & enemy[:, :, None])
        seen["enemy left out of the slots"] += np.count_nonzero(
            (believed & enemy[:, :, None]).sum(axis=1) > ENEMY_SLOTS + 1)
    assert seen["hidden enemy"] and seen["stale report"] and seen["out of the fight"], seen
    assert seen["believed in the fight but out"], seen
    assert (seen["enemy left out of the slots"] > 0) == (max(sizes) > ENEMY_SLOTS + 1), seen
    assert np.count_nonzero(obs[..., HIT_FEATURES]), "no battalion could hit another"
    assert events.damage_dealt.any()


def _slot_values(observations, unit, name, slots):
    return [observations[0, unit, OBSERVATION_FEATURES.index(name.format(s))] for s in slots]


def test_enemies_and_allies_at_equal_distances_keep_their_index_order():
    """Ties in (reported) distance are broken by battalion index, as NumPy's stable sort
    does: three enemies and two allies, each set at one distance from battalion 0."""
    config = BattleConfig()
    team = np.array([0, 0, 0, 1, 1, 1], np.int8)
    state = BattleState.empty(1, team, 1, 1)
    deploy(state, np.arange(1), np.array([3], np.uint64), config, randomize_terrain=False)
    # Battalion 0 at the centre; allies 100 m west and east; enemies 200 m north, south
    # and north again (3 and 5 on one spot).
    state.x[0] = [500, 400, 600, 500, 500, 500]
    state.y[0] = [500, 500, 500, 700, 300, 700]
    state.theta[0] = [0.3, 0.0, 0.0, np.pi, np.pi, np.pi]
    state.strength[0] = [1.0, 0.95, 0.9, 0.8, 0.7, 0.6]
    geometry = engine.sense(state, config)
    expected_reports, _, expected_obs, expected_state = reference_deployment(
        state, geometry, config, radius=1e4)
    reports = FogReports.empty(6, 1)
    obs, states = observe(state, geometry, reports, 1e4, config, reveal_all=True)
    assert_reports_match(reports, expected_reports)
    assert_observations_match(obs, expected_obs)
    np.testing.assert_array_equal(states, expected_state)
    # Battalion 0's focus is enemy 3, then 4 and 5; its allies 1 then 2.
    assert obs[0, 0, OBSERVATION_FEATURES.index("enemy_strength")] == F32(0.8)
    assert _slot_values(obs, 0, "enemy_{}_strength", (0, 1)) == [F32(0.7), F32(0.6)]
    assert _slot_values(obs, 0, "ally_{}_strength", (0, 1)) == [F32(0.95), F32(0.9)]


def test_deployment_reveals_every_report_but_not_what_is_in_sight():
    state = new_battles(3, 3, 32, seed=7)
    geometry = engine.sense(state, CONFIG)
    radius = 1.0  # nobody sees an enemy
    expected_reports, sees, expected_obs, expected_state = reference_deployment(
        state, geometry, radius=radius)
    reports = FogReports.empty(state.n_units, state.batch_size)
    obs, states = observe(state, geometry, reports, radius, CONFIG, reveal_all=True)
    assert_reports_match(reports, expected_reports)
    assert_observations_match(obs, expected_obs)
    np.testing.assert_array_equal(states, expected_state)
    assert reports.in_fight.all() and not reports.seen_step.any()
    np.testing.assert_array_equal(reports.values[0, 0], state.x.T)  # Blue knows Red's x
    assert not obs[..., OBSERVATION_FEATURES.index("focus_visible")].any()
    assert obs[..., OBSERVATION_FEATURES.index("enemy_distance")].all()  # a focus reported
    # Without reveal_all, nothing of the enemy is reported.
    fogged = FogReports.empty(state.n_units, state.batch_size)
    observe(state, geometry, fogged, radius, CONFIG)
    assert not fogged.in_fight[0, 3:].any() and not fogged.in_fight[1, :3].any()


def _kernel_arguments(state, geometry, reports):
    """observe_battles' arguments from ``x`` up to ``reveal_all``."""
    return (*mo._unit_arrays(state, geometry), engine.pair_major(geometry.dist),
            engine.pair_major(geometry.los), reports.values, reports.in_fight,
            reports.seen_step)


def _played(n_blue, n_red, n_battles, seed, steps):
    """Battles after ``steps`` steps with a fifth of the battalions routed on the way,
    their geometry and reports."""
    rng = np.random.default_rng(seed)
    state = new_battles(n_blue, n_red, n_battles, seed)
    geometry = engine.sense(state, CONFIG)
    reports = FogReports.empty(state.n_units, n_battles)
    observe(state, geometry, reports, RADIUS, CONFIG, reveal_all=True)
    for t in range(steps):
        if t == steps // 2:
            state = rout(state, 0.2, rng)
        state, events = engine.step(state, advance_orders(rng, state), CONFIG, geometry)
        geometry = events.geometry
        observe(state, geometry, reports, RADIUS, CONFIG)
    return state, geometry, reports


def test_a_restart_observes_only_the_restarted_battles():
    """The restart path: some battles deployed afresh in place, then observed alone with
    every report revealed (as MultiBattalionBatch restarts them)."""
    state, geometry, reports = _played(2, 3, 40, seed=11, steps=30)
    k = mo.observation_constants(CONFIG, RADIUS, *state.grid_shape)
    obs, states = observe(state, geometry, copy_reports(reports), RADIUS, CONFIG)
    state = state.select(np.arange(state.batch_size))  # writable copies
    battles = np.array([3, 17, 18, 39])
    deploy(state, battles, np.array([5, 6, 7, 8], np.uint64), CONFIG)
    geometry = engine.sense(state, CONFIG)

    # The NumPy code's restart: the restarted battles alone, every report revealed.
    restarted = state.select(battles)
    restarted_geometry = engine.sense(restarted, CONFIG)
    expected_reports = copy_reports(reports)
    everything = np.ones((2, state.n_units, len(battles)), bool)
    reference.refresh(expected_reports, restarted, restarted_geometry, everything, battles)
    part = FogReports(*(getattr(expected_reports, name)[..., battles] for name in REPORT_FIELDS))
    sees = reference.sightings(restarted, restarted_geometry, RADIUS)
    expected_obs, expected_state = obs.copy(), states.copy()
    expected_obs[battles] = reference.battalion_observations(restarted, restarted_geometry, part,
                                                             sees, CONFIG)
    expected_state[:, battles] = reference.global_states(restarted, restarted_geometry, CONFIG)

    public = copy_reports(reports)  # FogReports.refresh of a few battles
    public.refresh(restarted, restarted_geometry, everything, battles)
    assert_reports_match(public, expected_reports)

    seeing = mo.observation_scratch(state.n_units)
    for b in battles:  # as envs.battles.team_step.restart_teams observes them
        mo.observe_battles(b, b + 1, *_kernel_arguments(state, geometry, reports),
                           np.bool_(True), k, obs, states, seeing)
    assert_reports_match(reports, expected_reports)  # the others' reports untouched too
    assert_observations_match(obs, expected_obs)  # the others' rows untouched too
    np.testing.assert_array_equal(states, expected_state)


def test_a_perturbed_input_is_caught():
    """The comparisons above can fail: a report moved by a metre, or a battalion's heading
    turned, and the kernels' results no longer match the reference."""
    state, geometry, reports = _played(2, 2, 16, seed=3, steps=10)
    expected_reports = copy_reports(reports)
    sees, expected_obs, expected_state = reference_step(state, geometry, expected_reports)
    obs, states = observe(state, geometry, copy_reports(reports), RADIUS, CONFIG)
    assert_observations_match(obs, expected_obs)
    np.testing.assert_array_equal(states, expected_state)

    moved = copy_reports(reports)
    battle = np.flatnonzero(moved.in_fight[0, 2])[0]  # Blue believes Red's 2 in the fight
    moved.values[0, 0, 2, battle] += F32(1)  # Blue's report of its x
    obs = battalion_observations(state, geometry, moved, sees, CONFIG)
    with pytest.raises(AssertionError):
        assert_observations_match(obs, expected_obs)

    turned = dataclasses.replace(geometry, heading_cos=geometry.heading_cos.copy())
    turned.heading_cos[4, 0] = -turned.heading_cos[4, 0]
    obs, states = observe(state, turned, copy_reports(reports), RADIUS, CONFIG)
    with pytest.raises(AssertionError):
        assert_observations_match(obs, expected_obs)
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(states, expected_state)
