"""The compiled fog of war, observations and global states of :mod:`envs.battles.multi_observation`
compute what the NumPy reference computes
(``tests/envs_kernels/reference_team_observation.py``), battle by battle, through whole
stretches of battle under fog, with battalions out of the fight, distance ties, teams
bigger than the slots, deployments (every report revealed), restarts of a few
battles, and orders of battle of every arm changing formation (the arms blocks, after
the arm-blind entries). (One thread or many give the same bits: ``tests/sim/test_kernels.py``.)"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from envs.battles import multi_observation as mo
from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.battles.multi_observation import (
    ENEMY_SLOTS,
    OBS_DIM,
    OBSERVATION_FEATURES_WITH_ARMS,
    STATE_DIM,
    FogReports,
    battalion_observations,
    global_states,
    observe,
    sightings,
)
from envs.sim import engine
from envs.sim.config import BattleConfig
from envs.sim.constants import (
    ARM_FORMATIONS,
    ARM_NAMES,
    KEEP_FORMATION,
    TERRAIN_COLS,
    TERRAIN_ROWS,
)
from envs.sim.deploy import deploy
from envs.sim.kernels import PARALLEL_MIN_BATTLES
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

HIT_FEATURES = np.array([name.endswith("hit_chance") for name in OBSERVATION_FEATURES_WITH_ARMS])
HIT_TOLERANCE = 1e-7
"""The hit chance is a float32 power (``(1 - d / range) ** exponent``): NumPy computes
the default exponent 2 as a square, Numba calls ``powf``, which is off by one unit in
the last place (6e-8 below 1) now and then (about 700 of the 25 million numbers the
team-size test compares). Every other feature is the same float32 operation in the
same order, and must be equal."""
REPORT_FIELDS = ("values", "in_fight", "seen_step")


def assert_observations_match(observations: np.ndarray, expected: np.ndarray) -> None:
    """Equal as numbers: the NumPy code left -0.0 in some empty slots (a negative belief
    times an absent slot's 0), where the kernels write 0.0. Either may be the leading
    entries of the observations only (the arm-blind ones)."""
    assert observations.shape == expected.shape and observations.dtype == np.float32
    hit = HIT_FEATURES[:observations.shape[-1]]
    np.testing.assert_array_equal(observations[..., ~hit], expected[..., ~hit])
    np.testing.assert_allclose(observations[..., hit], expected[..., hit], rtol=0,
                               atol=HIT_TOLERANCE)


def assert_arm_blind_then_all_match(obs, states, expected_obs, expected_state) -> None:
    """The arm-blind entries (those ahead of the arms blocks) first, then everything."""
    assert_observations_match(obs[..., :OBS_DIM], expected_obs[..., :OBS_DIM])
    np.testing.assert_array_equal(states[..., :STATE_DIM],
                                  expected_state[..., :STATE_DIM])
    assert_observations_match(obs, expected_obs)
    np.testing.assert_array_equal(states, expected_state)


def assert_reports_match(reports: FogReports, expected: FogReports) -> None:
    for name in REPORT_FIELDS:
        np.testing.assert_array_equal(getattr(reports, name), getattr(expected, name), name)


def copy_reports(reports: FogReports) -> FogReports:
    return FogReports(*(getattr(reports, name).copy() for name in REPORT_FIELDS))


QUALITIES = (1.0, 0.75, 1.5, 2.5, 0.5)
"""Units' qualities in turn: above and below a line battalion's, and one past the
scale's cap (2.5 reads 1)."""


def new_battles(n_blue: int, n_red: int, n_battles: int, seed: int,
                config: BattleConfig = CONFIG) -> BattleState:
    """Battles of every arm (each side's units infantry, cavalry and artillery in turn,
    Red's starting one further on) of several qualities, deployed in several formations."""
    team = np.array([0] * n_blue + [1] * n_red, np.int8)
    rank = np.concatenate([np.arange(n_blue), np.arange(n_red) + 1])
    arm = (rank % len(ARM_NAMES)).astype(np.int8)
    quality = np.array([QUALITIES[u % len(QUALITIES)] for u in range(len(team))], F32)
    formations = np.array([ARM_FORMATIONS[a][u % len(ARM_FORMATIONS[a])]
                           for u, a in enumerate(arm)], np.int16)
    state = BattleState.empty(n_battles, team, TERRAIN_ROWS, TERRAIN_COLS, arm=arm,
                              quality=quality)
    keys = np.arange(n_battles, dtype=np.uint64) + np.uint64(1000 * seed)
    deploy(state, np.arange(n_battles), keys, config, formations=formations)
    return state


def advance_orders(rng: np.random.Generator, state: BattleState) -> np.ndarray:
    """Random orders, mostly forward (the armies deploy facing each other), firing."""
    orders = rng.uniform(-1, 1, (state.batch_size, state.n_units, 3)).astype(F32)
    orders[..., 0] = orders[..., 0] * F32(0.5) + F32(0.5)
    orders[..., 1] *= F32(0.3)
    orders[..., 2] = np.abs(orders[..., 2])
    return orders


def formation_orders(rng: np.random.Generator, state: BattleState) -> np.ndarray:
    """(B, U): now and then a random formation (those an arm cannot take are ignored),
    else keep the formation."""
    codes = rng.integers(0, 4, state.x.shape)
    return np.where(rng.random(state.x.shape) < 0.05, codes, KEEP_FORMATION).astype(np.int8)


def arms_seen(obs: np.ndarray, counts: dict[str, int]) -> None:
    """Count what ``obs``' arms blocks show of the focus enemy: its formation (in sight)
    or not (out of sight), and in disorder; and battalions in disorder themselves."""
    at = OBSERVATION_FEATURES_WITH_ARMS.index("focus_arm_infantry")
    focus = obs[..., at:at + len(mo.ARMS_FEATURES)]
    named = {name: focus[..., i] for i, name in enumerate(mo.ARMS_FEATURES)}
    known = focus[..., :len(ARM_NAMES)].sum(axis=-1) == 1
    formed = focus[..., len(ARM_NAMES):len(ARM_NAMES) + 4].sum(axis=-1) == 1
    counts["focus formation shown"] += np.count_nonzero(known & formed)
    counts["focus formation hidden"] += np.count_nonzero(known & ~formed)
    counts["focus in disorder"] += np.count_nonzero(named["disorder"] > 0)
    counts["own disorder"] += np.count_nonzero(
        obs[..., OBSERVATION_FEATURES_WITH_ARMS.index("own_disorder")] > 0)


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
    obs, states = observe(state, geometry, fused, RADIUS, CONFIG, reveal_all=True, arms=True)
    assert_reports_match(fused, expected_reports)
    assert_arm_blind_then_all_match(obs, states, expected_obs, expected_state)
    separate = copy_reports(fused)  # the public functions one by one

    seen = {"hidden enemy": 0, "stale report": 0, "out of the fight": 0,
            "believed in the fight but out": 0, "enemy left out of the slots": 0,
            "focus formation shown": 0, "focus formation hidden": 0, "focus in disorder": 0,
            "own disorder": 0}
    enemy = state.team[:, None] != state.team[None, :]
    for t in range(N_STEPS):
        if t == N_STEPS // 3:
            state = rout(state, 0.2, rng)
        state, events = engine.step(state, advance_orders(rng, state), CONFIG, geometry,
                                    formations=formation_orders(rng, state))
        geometry = events.geometry
        sees, expected_obs, expected_state = reference_step(state, geometry, expected_reports)

        obs, states = observe(state, geometry, fused, RADIUS, CONFIG, arms=True)
        assert_reports_match(fused, expected_reports)
        assert_arm_blind_then_all_match(obs, states, expected_obs, expected_state)
        arms_seen(obs, seen)

        np.testing.assert_array_equal(sightings(state, geometry, RADIUS), sees)
        separate.refresh(state, geometry, sees)
        assert_reports_match(separate, expected_reports)
        assert_observations_match(battalion_observations(state, geometry, separate, sees,
                                                         CONFIG, arms=True), expected_obs)
        np.testing.assert_array_equal(global_states(state, geometry, CONFIG, arms=True),
                                      expected_state)
        # Battles of one arm: the leading entries, the same bits, and no arms blocks.
        narrow_obs, narrow_states = observe(state, geometry, copy_reports(fused), RADIUS, CONFIG)
        assert narrow_obs.shape[-1] == OBS_DIM and narrow_states.shape[-1] == STATE_DIM
        np.testing.assert_array_equal(narrow_obs, obs[..., :OBS_DIM])
        np.testing.assert_array_equal(narrow_states, states[..., :STATE_DIM])
        np.testing.assert_array_equal(
            battalion_observations(state, geometry, separate, sees, CONFIG), obs[..., :OBS_DIM])
        np.testing.assert_array_equal(global_states(state, geometry, CONFIG),
                                      states[..., :STATE_DIM])

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
    assert seen["focus formation shown"] and seen["focus formation hidden"], seen
    assert seen["focus in disorder"] and seen["own disorder"], seen
    assert seen["believed in the fight but out"], seen
    assert (seen["enemy left out of the slots"] > 0) == (max(sizes) > ENEMY_SLOTS + 1), seen
    assert np.count_nonzero(obs[..., HIT_FEATURES]), "no battalion could hit another"
    assert events.damage_dealt.any()


def _slot_values(observations, unit, name, slots):
    return [observations[0, unit, OBSERVATION_FEATURES_WITH_ARMS.index(name.format(s))]
            for s in slots]


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
    obs, states = observe(state, geometry, reports, 1e4, config, reveal_all=True, arms=True)
    assert_reports_match(reports, expected_reports)
    assert_observations_match(obs, expected_obs)
    np.testing.assert_array_equal(states, expected_state)
    # Battalion 0's focus is enemy 3, then 4 and 5; its allies 1 then 2.
    assert obs[0, 0, OBSERVATION_FEATURES_WITH_ARMS.index("enemy_strength")] == F32(0.8)
    assert _slot_values(obs, 0, "enemy_{}_strength", (0, 1)) == [F32(0.7), F32(0.6)]
    assert _slot_values(obs, 0, "ally_{}_strength", (0, 1)) == [F32(0.95), F32(0.9)]


def test_deployment_reveals_every_report_but_not_what_is_in_sight():
    state = new_battles(3, 3, 32, seed=7)
    geometry = engine.sense(state, CONFIG)
    radius = 1.0  # nobody sees an enemy
    expected_reports, sees, expected_obs, expected_state = reference_deployment(
        state, geometry, radius=radius)
    reports = FogReports.empty(state.n_units, state.batch_size)
    obs, states = observe(state, geometry, reports, radius, CONFIG, reveal_all=True, arms=True)
    assert_reports_match(reports, expected_reports)
    assert_observations_match(obs, expected_obs)
    np.testing.assert_array_equal(states, expected_state)
    assert reports.in_fight.all() and not reports.seen_step.any()
    np.testing.assert_array_equal(reports.values[0, 0], state.x.T)  # Blue knows Red's x
    assert not obs[..., OBSERVATION_FEATURES_WITH_ARMS.index("focus_visible")].any()
    # a focus reported
    assert obs[..., OBSERVATION_FEATURES_WITH_ARMS.index("enemy_distance")].all()
    # Without reveal_all, nothing of the enemy is reported.
    fogged = FogReports.empty(state.n_units, state.batch_size)
    observe(state, geometry, fogged, radius, CONFIG, arms=True)
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
    observe(state, geometry, reports, RADIUS, CONFIG, reveal_all=True, arms=True)
    for t in range(steps):
        if t == steps // 2:
            state = rout(state, 0.2, rng)
        state, events = engine.step(state, advance_orders(rng, state), CONFIG, geometry)
        geometry = events.geometry
        observe(state, geometry, reports, RADIUS, CONFIG, arms=True)
    return state, geometry, reports


def test_a_restart_observes_only_the_restarted_battles():
    """The restart path: some battles deployed afresh in place, then observed alone with
    every report revealed (as MultiBattalionBatch restarts them)."""
    state, geometry, reports = _played(2, 3, 40, seed=11, steps=30)
    k = mo.observation_constants(CONFIG, RADIUS, *state.grid_shape)
    obs, states = observe(state, geometry, copy_reports(reports), RADIUS, CONFIG, arms=True)
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
    obs, states = observe(state, geometry, copy_reports(reports), RADIUS, CONFIG, arms=True)
    assert_observations_match(obs, expected_obs)
    np.testing.assert_array_equal(states, expected_state)

    moved = copy_reports(reports)
    battle = np.flatnonzero(moved.in_fight[0, 2])[0]  # Blue believes Red's 2 in the fight
    moved.values[0, 0, 2, battle] += F32(1)  # Blue's report of its x
    obs = battalion_observations(state, geometry, moved, sees, CONFIG, arms=True)
    with pytest.raises(AssertionError):
        assert_observations_match(obs, expected_obs)

    turned = dataclasses.replace(geometry, heading_cos=geometry.heading_cos.copy())
    turned.heading_cos[4, 0] = -turned.heading_cos[4, 0]
    obs, states = observe(state, turned, copy_reports(reports), RADIUS, CONFIG, arms=True)
    with pytest.raises(AssertionError):
        assert_observations_match(obs, expected_obs)
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(states, expected_state)

    # A battalion's drill steps left changed: its arms block no longer matches, and the
    # arm-blind entries, which read nothing of the arms, stay as they were.
    drilled = dataclasses.replace(state, drill=state.drill.copy(order="F"))
    drilled.drill[0, 1] += 1  # Blue's cavalry
    obs, states = observe(drilled, geometry, copy_reports(reports), RADIUS, CONFIG, arms=True)
    with pytest.raises(AssertionError):
        assert_observations_match(obs, expected_obs)
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(states, expected_state)
    assert_observations_match(obs[..., :OBS_DIM], expected_obs[..., :OBS_DIM])
    np.testing.assert_array_equal(states[..., :STATE_DIM],
                                  expected_state[..., :STATE_DIM])


def test_the_arm_blind_entries_read_nothing_of_the_arms():
    """The same battles observed as an all-infantry army of quality 1 in line: the
    arm-blind entries are the same bits, the arms blocks differ."""
    state, geometry, reports = _played(3, 3, 32, seed=5, steps=20)
    obs, states = observe(state, geometry, copy_reports(reports), RADIUS, CONFIG, arms=True)
    plain = dataclasses.replace(
        state, arm=np.zeros_like(state.arm), quality=np.ones_like(state.quality),
        formation=np.zeros_like(state.formation), drill=np.zeros_like(state.drill))
    plain_obs, plain_states = observe(plain, geometry, copy_reports(reports), RADIUS, CONFIG,
                                      arms=True)
    np.testing.assert_array_equal(plain_obs[..., :OBS_DIM], obs[..., :OBS_DIM])
    np.testing.assert_array_equal(plain_states[..., :STATE_DIM],
                                  states[..., :STATE_DIM])
    assert (plain_obs[..., OBS_DIM:] != obs[..., OBS_DIM:]).any()
    assert (plain_states[..., STATE_DIM:] != states[..., STATE_DIM:]).any()


COMBINED_ARMS = {"blue": ["infantry", {"type": "cavalry", "quality": 1.5},
                          {"type": "artillery", "formation": "limbered", "quality": 2.5}],
                 "red": [{"type": "infantry", "formation": "column", "quality": 0.75},
                         "artillery", "cavalry"]}
"""Every arm a side, in several formations and qualities."""


@pytest.mark.parametrize("n_battles", [16, PARALLEL_MIN_BATTLES], ids=["serial", "parallel"])
def test_the_team_step_of_every_arm_gives_the_reference(n_battles):
    """The fused team step (one thread and many) and the deployment of a
    :class:`MultiBattalionBatch` of every arm, changing formation under scripted L5
    orders: the arm-blind entries and the arms blocks are the reference's."""
    battles = MultiBattalionBatch(n_battles, 3, 3, config=CONFIG, terrain=None,
                                  randomize_terrain=True, visibility_radius=RADIUS,
                                  reward_weights=None, order_of_battle=COMBINED_ARMS)
    battles.reset(np.arange(n_battles), list(range(n_battles)), np.zeros(n_battles, np.int64))
    expected_reports, _, expected_obs, expected_state = reference_deployment(
        battles.state, battles.geometry)
    assert_reports_match(battles.reports, expected_reports)
    assert_arm_blind_then_all_match(battles.observation, battles.global_state, expected_obs,
                                    expected_state)
    rng = np.random.default_rng(n_battles)
    formations = np.empty((n_battles, 6), np.int8)
    seen = dict.fromkeys(("focus formation shown", "focus formation hidden",
                          "focus in disorder", "own disorder"), 0)
    for _ in range(N_STEPS):
        orders = battles.scripted_actions(np.arange(6), 5, formations)
        orders[..., :2] = np.clip(orders[..., :2] + rng.uniform(-0.3, 0.3, (n_battles, 6, 2)),
                                  -1, 1)
        result = battles.step(orders, formations)
        _, expected_obs, expected_state = reference_step(battles.state, battles.geometry,
                                                         expected_reports)
        assert_reports_match(battles.reports, expected_reports)
        assert_arm_blind_then_all_match(result.observation, result.global_state, expected_obs,
                                        expected_state)
        arms_seen(result.observation, seen)
    assert all(seen.values()), seen
    assert (battles.state.arm == [0, 1, 2, 0, 2, 1]).all()
