"""MultiBattalionEnv (PettingZoo) and its batched form."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from envs.battalion_env import make_spaces
from envs.battles.battalion_batch import BattalionBatch
from envs.battles.entity_tokens import TOKEN, entity_tokens
from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.battles.multi_observation import (
    ARMS_CRITIC_STATE_DIM,
    ARMS_FEATURES,
    ARMS_OBS_DIM,
    ARMS_STATE_DIM,
    CRITIC_STATE_DIM,
    OBS_DIM,
    OBSERVATION_FEATURES_WITH_ARMS,
    STATE_DIM,
    STATE_FEATURES_WITH_ARMS,
)
from envs.battles.observation import OBSERVATION_FEATURES as DUEL_FEATURES
from envs.multi_battalion_env import MultiBattalionEnv
from envs.reward import COMPONENTS, RewardWeights
from envs.sim import engine
from envs.sim.config import BattleConfig
from envs.sim.constants import CAVALRY, COLUMN, KEEP_FORMATION, LIMBERED, LINE


def batch(n_battles, n_blue, n_red, **kwargs):
    settings = dict(config=BattleConfig(), terrain=None, randomize_terrain=True,
                    visibility_radius=600.0, reward_weights=None)
    settings.update(kwargs)
    return MultiBattalionBatch(n_battles, n_blue, n_red, **settings)


@pytest.mark.parametrize("sizes", [(1, 1), (2, 1), (2, 2), (3, 3), (6, 6)])
def test_parallel_api(sizes):
    parallel_api_test(MultiBattalionEnv(*sizes, max_steps=150), num_cycles=200)


def test_spaces_are_shared_and_fit_every_team_size():
    small, large = MultiBattalionEnv(1, 1), MultiBattalionEnv(6, 6)
    assert small.observation_space("blue_0") is small.observation_space("red_0")
    assert small.observation_space("blue_0").shape == large.observation_space("red_5").shape
    assert OBS_DIM == 140 and STATE_DIM == 97 and CRITIC_STATE_DIM == 140 + 97
    assert ARMS_OBS_DIM == len(OBSERVATION_FEATURES_WITH_ARMS) == OBS_DIM + 108 == 248
    assert ARMS_STATE_DIM == len(STATE_FEATURES_WITH_ARMS) == STATE_DIM + 108 == 205
    assert ARMS_CRITIC_STATE_DIM == ARMS_OBS_DIM + ARMS_STATE_DIM
    arms = MultiBattalionEnv(2, 2, order_of_battle={"blue": ["infantry", "cavalry"],
                                                    "red": ["artillery", "infantry"]})
    for env, obs_dim, state_dim in ((large, OBS_DIM, STATE_DIM),
                                    (arms, ARMS_OBS_DIM, ARMS_STATE_DIM)):
        obs, _ = env.reset(seed=1)
        assert all(env.observation_space(a).contains(o) for a, o in obs.items())
        assert env.observation_space("red_0").shape == (obs_dim,)
        assert env.state_space.contains(env.state())
        assert env.state().shape == (state_dim,)
        critic = env.critic_state("red_1")
        assert critic.shape == (obs_dim + state_dim,)
        np.testing.assert_array_equal(critic[:obs_dim], obs["red_1"])
        np.testing.assert_array_equal(critic[obs_dim:], env.team_state("red"))
    assert small.action_space("red_0") == make_spaces()[1]  # the duel's action box
    assert arms.action_space("red_0").shape == (4,)  # and the formation order


def test_with_one_battalion_a_side_every_reward_component_is_the_duels():
    """The duel is the one-battalion case of the team reward, component by component,
    in battles that end by destruction (volleys that take more than is left) too."""
    config = BattleConfig(rout_threshold=0.0, volley_damage=1.0, reload_rate=0.2)
    weights = RewardWeights(**{name: 0.5 + i for i, name in enumerate(COMPONENTS)})
    destroyed = 0
    for result, expected, duel in side_by_side(64, 400, 1, config, weights):
        np.testing.assert_array_equal(result.team_reward.values[:, :64],
                                      expected.reward.values)
        destroyed += duel.state.destroyed.sum()
    assert destroyed > 0


def side_by_side(n, n_steps, seed, config, reward_weights):
    """``n`` 1v1 team battles in sight of each other and ``n`` duels of the same seeds,
    random Blue (``seed``) against scripted L5 Red, stepped together for ``n_steps``
    steps (a finished battle restarts in both); yields each step's team result, duel
    result and the duel batch, before the restarts."""
    multi = batch(n, 1, 1, config=config, visibility_radius=1e9,
                  reward_weights=reward_weights)
    duel = BattalionBatch(n, config=config, terrain=None, randomize_terrain=True,
                          curriculum_level=5, reward_weights=reward_weights)
    for b in (multi, duel):
        b.reset(np.arange(n), list(range(n)), np.zeros(n, np.int64))
    rng = np.random.default_rng(seed)
    for _ in range(n_steps):
        blue = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
        red = multi.scripted_actions(np.array([1]), 5)[:, 0]
        result = multi.step(np.stack([blue, red], axis=1))
        yield result, duel.step(blue), duel
        over = np.flatnonzero(result.battle_over)
        if len(over):
            multi.next_episode(over)
            duel.next_episode(over)


def play(env, seed, n_steps, rng):
    """Random Blue against scripted L5 Red; returns the trajectory as lists."""
    trajectory = []
    obs, _ = env.reset(seed=seed)
    trajectory.append(("reset", obs))
    for _ in range(n_steps):
        if not env.agents:
            obs, _ = env.reset()
            trajectory.append(("reset", obs))
        actions = {a: rng.uniform(-1, 1, 3).astype(np.float32) for a in env.agents
                   if a.startswith("blue")}
        actions.update(env.scripted_actions(5))
        trajectory.append(env.step(actions)[:4])
    return trajectory


def test_batch_equals_parallel_env_for_the_same_seeds():
    seeds, n_steps = [3, 11, 12], 140
    envs = [MultiBattalionEnv(2, 2, max_steps=50) for _ in seeds]
    expected = [play(env, seed, n_steps, np.random.default_rng(seed))
                for env, seed in zip(envs, seeds, strict=True)]

    config = BattleConfig(max_steps=50)
    b = batch(len(seeds), 2, 2, config=config)
    b.reset(np.arange(len(seeds)), seeds, np.zeros(len(seeds), np.int64))
    rngs = [np.random.default_rng(seed) for seed in seeds]
    names = envs[0].possible_agents
    position = [1] * len(seeds)
    for i in range(len(seeds)):
        kind, obs = expected[i][0]
        for agent, o in obs.items():
            np.testing.assert_array_equal(b.observation[i, names.index(agent)], o)
    for _ in range(n_steps):
        actions = np.zeros((len(seeds), 4, 3), np.float32)
        in_fight = b.in_fight
        for i, rng in enumerate(rngs):
            for unit in (0, 1):
                if in_fight[i, unit]:
                    actions[i, unit] = rng.uniform(-1, 1, 3).astype(np.float32)
        actions[:, 2:] = b.scripted_actions(np.array([2, 3]), 5)
        result = b.step(actions)
        for i in range(len(seeds)):
            obs, rewards, terminated, truncated = expected[i][position[i]]
            position[i] += 1
            assert sorted(obs) == sorted(names[u] for u in np.flatnonzero(result.acted[i]))
            for agent in obs:
                u = names.index(agent)
                np.testing.assert_array_equal(result.observation[i, u], obs[agent])
                assert rewards[agent] == pytest.approx(float(result.reward[i, u]), abs=0)
                assert terminated[agent] == result.terminated[i, u]
                assert truncated[agent] == result.truncated[i, u]
            if result.battle_over[i]:
                kind, obs = expected[i][position[i]]
                assert kind == "reset"
                position[i] += 1
        over = np.flatnonzero(result.battle_over)
        if len(over):
            b.next_episode(over)
            for i in over:
                _, obs = expected[i][position[i] - 1]
                for agent, o in obs.items():
                    np.testing.assert_array_equal(b.observation[i, names.index(agent)], o)
    assert all(p == len(t) for p, t in zip(position, expected, strict=True))


def test_one_against_one_in_sight_is_the_duel():
    compared = 0
    for result, expected, _ in side_by_side(32, 300, 0, BattleConfig(), None):
        np.testing.assert_array_equal(result.reward[:, 0][result.acted[:, 0]],
                                      expected.reward.total[result.acted[:, 0]])
        # The enemy in sight: its report is live, so the views agree exactly.
        in_sight = ~result.battle_over & (expected.observation[:, 16] == 1)
        np.testing.assert_array_equal(result.observation[in_sight, 0, :25],
                                      expected.observation[in_sight])
        compared += in_sight.sum()
    assert compared > 1000


def test_an_enemy_out_of_sight_is_remembered_where_it_was_last_seen():
    b = batch(1, 1, 1, randomize_terrain=False, visibility_radius=100.0)
    b.reset(np.array([0]), [4], np.zeros(1, np.int64))
    state = b.state
    state.x[0] = (100.0, 900.0)
    state.y[0] = (500.0, 500.0)
    state.theta[0] = (0.0, np.pi)
    b.geometry = engine.sense(state, b.config)
    b.reports.refresh(state, b.geometry, np.ones((2, 2, 1), bool))
    names = list(OBSERVATION_FEATURES_WITH_ARMS)
    red_report_x = 900.0 / 1000.0
    for _ in range(20):  # Red marches away from Blue; Blue stands
        result = b.step(np.array([[[0, 0, 0], [-1, 0, 0]]], np.float32))
    blue = result.observation[0, 0]
    assert blue[names.index("focus_visible")] == 0
    assert blue[names.index("focus_report_age")] == pytest.approx(20 / 500)
    # The reported distance is to where Red was, not where it is.
    assert blue[names.index("enemy_distance")] * b.config.diagonal == pytest.approx(
        (red_report_x * 1000.0 - 100.0), abs=1e-3)
    assert b.state.x[0, 1] > 900.0
    # The global state is fog-free.
    enemy_x = b.global_state[0, 0, STATE_FEATURES_WITH_ARMS.index("enemy_0_x")] * 1000.0
    assert enemy_x == pytest.approx(b.state.x[0, 1], abs=1e-2)


def test_fire_is_split_among_targets():
    """One Blue battalion with two Red ones in reach hits only the nearer."""
    b = batch(1, 1, 2, randomize_terrain=False)
    b.reset(np.array([0]), [0], np.zeros(1, np.int64))
    state = b.state
    state.x[0] = (400.0, 500.0, 520.0)
    state.y[0] = (500.0, 500.0, 510.0)
    state.theta[0] = (0.0, np.pi, np.pi)
    b.geometry = engine.sense(state, b.config)
    result = b.step(np.array([[[0, 0, 1], [0, 0, 0], [0, 0, 0]]], np.float32))
    assert result.damage_taken[0, 1] > 0
    assert result.damage_taken[0, 2] == 0
    assert b.last_events.target[0, 0] == 1


def test_agents_leave_when_out_of_the_fight_and_teams_share_rewards():
    env = MultiBattalionEnv(2, 2, max_steps=500)
    rng = np.random.default_rng(0)
    left_early = 0
    for seed in range(6):
        env.reset(seed=seed)
        gone: set[str] = set()
        while env.agents:
            actions = {a: np.array([1.0, rng.uniform(-0.2, 0.2), 1.0], np.float32)
                       for a in env.agents if a.startswith("blue")}
            actions.update(env.scripted_actions(5))
            obs, rewards, terminated, truncated, infos = env.step(actions)
            assert not gone & set(obs)
            for side in ("blue", "red"):
                side_rewards = {r for a, r in rewards.items() if a.startswith(side)}
                assert len(side_rewards) <= 1
            for agent, done in terminated.items():
                if done and env.agents:  # left while the battle goes on
                    assert infos[agent]["routed"] or infos[agent]["destroyed"]
                    left_early += 1
            gone |= {a for a in obs if terminated[a] or truncated[a]}
            assert set(env.agents) == set(env.possible_agents) - gone
    assert left_early > 0


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="n_blue"):
        MultiBattalionEnv(0, 2)
    with pytest.raises(ValueError, match="n_red"):
        MultiBattalionEnv(2, 7)
    with pytest.raises(ValueError, match="visibility_radius"):
        MultiBattalionEnv(visibility_radius=0.0)
    with pytest.raises(ValueError, match="render_mode"):
        MultiBattalionEnv(render_mode="human")
    env = MultiBattalionEnv(2, 2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="green_0"):
        env.step({"green_0": np.zeros(3)})
    with pytest.raises(ValueError, match="non-finite"):
        env.step({"blue_0": np.array([0.0, np.nan, 0.0])})
    with pytest.raises(ValueError, match="shape"):
        env.step({"blue_0": np.zeros(4)})
    with pytest.raises(ValueError, match="team"):
        env.team_state("green")


def test_render_draws_every_battalion():
    env = MultiBattalionEnv(3, 2, render_mode="rgb_array")
    env.reset(seed=2)
    frame = env.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 0


def test_batch_checks_orders_and_units():
    b = batch(2, 2, 1)
    b.reset(np.arange(2), [0, 1], np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="shape"):
        b.step(np.zeros((2, 2, 3), np.float32))
    bad = np.zeros((2, 3, 3), np.float32)
    bad[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        b.step(bad)
    with pytest.raises(ValueError, match="units"):
        b.scripted_actions(np.array([-1]), 5)
    with pytest.raises(ValueError, match="level"):
        b.scripted_actions(np.array([2]), 6)
    # One level a battle is fine; a level that is not a whole number, or a wrong count, is not.
    per_battle = b.scripted_actions(np.array([2]), np.array([1, 5]))
    np.testing.assert_array_equal(per_battle[0], b.scripted_actions(np.array([2]), 1)[0])
    np.testing.assert_array_equal(per_battle[1], b.scripted_actions(np.array([2]), 5)[1])
    for level in (2.5, True, np.array([1, 2, 3])):
        with pytest.raises(ValueError, match="level"):
            b.scripted_actions(np.array([2]), level)


def test_a_rout_is_rewarded_once():
    weights = RewardWeights(**{**{name: 0.0 for name in COMPONENTS}, "enemy_routed_bonus": 1.0})
    b = batch(16, 1, 2, reward_weights=weights)
    b.reset(np.arange(16), list(range(16)), np.zeros(16, np.int64))
    totals = np.zeros(16)
    finished = np.zeros(16, bool)
    doctrine = np.array([0])
    while not finished.all():
        orders = np.zeros((16, 3, 3), np.float32)
        orders[:, 0] = b.scripted_actions(doctrine, 5)[:, 0]
        orders[:, 1:] = b.scripted_actions(np.array([1, 2]), 3)  # Red advances, never fires
        result = b.step(orders)
        totals += np.where(finished, 0, result.team_reward.total[:16])
        finished |= result.battle_over
    routed = b.state.routed[:, 1:].sum(axis=1)
    np.testing.assert_allclose(totals, routed / 2, atol=1e-6)
    assert routed.any()


SWAPPED_ARMS = ({"blue": ["infantry", "cavalry"], "red": ["infantry", "artillery"]},
                {"blue": ["infantry", "artillery"], "red": ["infantry", "cavalry"]})
"""An order of battle of several arms, and the same with the sides swapped."""


@pytest.mark.parametrize("arms", [False, True], ids=["infantry", "every_arm"])
def test_each_side_sees_the_battle_in_its_own_frame(arms):
    """Swap the sides of a battle and mirror it: Red's view becomes Blue's, and the
    same orders (each in its own frame) play the same battle. With several arms
    changing formation, the arms blocks (unsigned) are the same numbers for either
    side."""
    config = BattleConfig()
    original, mirrored = (batch(1, 2, 2, randomize_terrain=False,
                                order_of_battle=oob if arms else None)
                          for oob in SWAPPED_ARMS)
    for b in (original, mirrored):
        b.reset(np.array([0]), [7], np.zeros(1, np.int64))
    rng = np.random.default_rng(0)
    x = rng.uniform(100, 900, 4).astype(np.float32)
    y = rng.uniform(100, 900, 4).astype(np.float32)
    theta = rng.uniform(0, 2 * np.pi, 4).astype(np.float32)
    swap = np.array([2, 3, 0, 1])  # mirrored unit k is original unit swap[k]
    original.state.x[0], original.state.y[0], original.state.theta[0] = x, y, theta
    mirrored.state.x[0] = config.map_width - x[swap]
    mirrored.state.y[0] = y[swap]
    mirrored.state.theta[0] = np.mod(np.pi - theta[swap], 2 * np.pi)
    for b in (original, mirrored):
        b.geometry = engine.sense(b.state, b.config)
        b.reports.refresh(b.state, b.geometry, np.ones((2, 4, 1), bool))
        b._observe(b.state, b.geometry, b.reports)
    # The cavalry forms column and the guns limber at once, then change no more.
    formations = np.array([[KEEP_FORMATION, COLUMN, KEEP_FORMATION, LIMBERED]], np.int8)
    disordered = 0
    for _ in range(30):
        np.testing.assert_allclose(mirrored.observation[0], original.observation[0, swap],
                                   atol=2e-4)
        np.testing.assert_allclose(mirrored.global_state[:, 0], original.global_state[::-1, 0],
                                   atol=2e-4)
        np.testing.assert_array_equal(mirrored.observation[0, :, OBS_DIM:],
                                      original.observation[0, swap, OBS_DIM:])
        np.testing.assert_array_equal(mirrored.global_state[:, 0, STATE_DIM:],
                                      original.global_state[::-1, 0, STATE_DIM:])
        if arms:
            disorder = OBSERVATION_FEATURES_WITH_ARMS.index("own_disorder")
            disordered += original.observation[0, 1, disorder] > 0
        else:  # infantry in line: no arms blocks
            assert original.observation.shape[-1] == OBS_DIM
        orders = rng.uniform(-1, 1, (1, 4, 3)).astype(np.float32)
        orders[..., 2] = 0  # hold fire: nothing random happens
        original.step(orders, formations)
        mirrored.step(orders[:, swap], formations[:, swap])
        formations[:] = KEEP_FORMATION
    if arms:  # both changed formation, the cavalry in disorder for its drill steps
        assert original.state.formation[0].tolist() == [LINE, COLUMN, LINE, LIMBERED]
        assert disordered == config.arm_drill_steps[CAVALRY]


def test_observations_say_which_allies_engage_an_enemy():
    b = batch(1, 2, 1, randomize_terrain=False)
    b.reset(np.array([0]), [0], np.zeros(1, np.int64))
    state = b.state
    state.x[0] = (300.0, 450.0, 550.0)  # blue_0 out of range, blue_1 at 100 m
    state.y[0] = (500.0, 500.0, 500.0)
    state.theta[0] = (0.0, 0.0, np.pi)
    b.geometry = engine.sense(state, b.config)
    b._observe(state, b.geometry, b.reports)
    names = list(OBSERVATION_FEATURES_WITH_ARMS)
    blue_0, blue_1 = b.observation[0, 0], b.observation[0, 1]
    assert blue_0[names.index("own_hit_chance")] == 0
    assert blue_1[names.index("own_hit_chance")] == pytest.approx(0.25)  # (1 - 100/200)^2
    assert blue_0[names.index("focus_allies_hit_chance")] == pytest.approx(0.25)
    assert blue_1[names.index("focus_allies_hit_chance")] == 0


def _arms(row, at):
    """The :data:`ARMS_FEATURES` block of an observation or state ``row`` starting at
    feature ``at`` (a name)."""
    names = OBSERVATION_FEATURES_WITH_ARMS if len(row) == ARMS_OBS_DIM \
        else STATE_FEATURES_WITH_ARMS
    start = names.index(at)
    return row[start:start + len(ARMS_FEATURES)]


def test_a_cavalry_battalion_is_cavalry_to_all_and_shows_its_formation_to_enemies_in_sight():
    """Blue's cavalry, changing into column, as itself, its ally and the enemy see it: the
    same numbers as its entity token (arm, formation, quality over the scale, disorder
    over its drill steps); the enemy knows its arm and quality always, its formation and
    disorder only while it is in sight (battle 0), not once it is out of sight (battle 1)."""
    b = batch(2, 2, 2, randomize_terrain=False, visibility_radius=300.0, order_of_battle={
        "blue": ["infantry", {"type": "cavalry", "quality": 1.5}],
        "red": ["infantry", "artillery"]})
    b.reset(np.arange(2), [0, 1], np.zeros(2, np.int64))
    state = b.state
    state.x[:] = (300.0, 300.0, 500.0, 500.0)
    state.y[:] = (500.0, 600.0, 500.0, 600.0)
    state.x[1, 1], state.y[1, 1] = 100.0, 950.0  # battle 1: 530 m from Red, out of sight
    state.theta[:] = (0.0, 0.0, np.pi, np.pi)
    b.geometry = engine.sense(state, b.config)
    b.reports.refresh(state, b.geometry, np.ones((2, 4, 2), bool))  # known where it stands
    b._observe(state, b.geometry, b.reports)
    still = np.zeros((2, 4, 3), np.float32)  # stand, hold fire
    b.step(still, np.array([[KEEP_FORMATION, COLUMN, KEEP_FORMATION, KEEP_FORMATION]] * 2))
    b.step(still)
    obs, global_state = b.observation, b.global_state
    drill_steps = b.config.arm_drill_steps[CAVALRY]
    assert b.state.drill[:, 1].tolist() == [drill_steps - 1] * 2

    cavalry = np.zeros(len(ARMS_FEATURES), np.float32)
    cavalry[[ARMS_FEATURES.index(name) for name in ("arm_cavalry", "formation_column")]] = 1
    cavalry[ARMS_FEATURES.index("quality")] = 0.75
    cavalry[ARMS_FEATURES.index("disorder")] = np.float32(drill_steps - 1) / drill_steps
    unseen = cavalry.copy()
    unseen[[ARMS_FEATURES.index(name) for name in ("formation_column", "disorder")]] = 0
    token = [TOKEN[name] for name in ARMS_FEATURES]
    blue, red = entity_tokens(b, 0), entity_tokens(b, 1)
    for battle in (0, 1):
        own = obs[battle, 1]
        np.testing.assert_array_equal(_arms(own, "own_arm_infantry"), cavalry)
        np.testing.assert_array_equal(_arms(obs[battle, 0], "ally_0_arm_infantry"), cavalry)
        np.testing.assert_array_equal(_arms(global_state[0, battle], "own_1_arm_infantry"),
                                      cavalry)
        np.testing.assert_array_equal(_arms(global_state[1, battle], "enemy_1_arm_infantry"),
                                      cavalry)  # the global state is fog-free
        row = list(blue.unit[battle]).index(1)
        np.testing.assert_array_equal(blue.tokens[battle, row, token], cavalry)
        row = list(red.unit[battle]).index(1)
        np.testing.assert_array_equal(red.tokens[battle, row, token],
                                      cavalry if battle == 0 else unseen)
    # In battle 0 it is the nearest enemy of Red's guns (their focus) and Red's infantry's
    # second; in battle 1 Red remembers it where it vanished, its second enemy.
    names = list(OBSERVATION_FEATURES_WITH_ARMS)
    assert obs[0, 3, names.index("focus_visible")] == 1
    np.testing.assert_array_equal(_arms(obs[0, 3], "focus_arm_infantry"), cavalry)
    assert obs[0, 2, names.index("enemy_0_visible")] == 1
    np.testing.assert_array_equal(_arms(obs[0, 2], "enemy_0_arm_infantry"), cavalry)
    for red_unit in (2, 3):
        assert obs[1, red_unit, names.index("enemy_0_visible")] == 0
        np.testing.assert_array_equal(_arms(obs[1, red_unit], "enemy_0_arm_infantry"), unseen)
    # Blue sees Red's guns in line, quality 1, formed.
    guns = _arms(obs[0, 1], "focus_arm_infantry")
    assert guns.tolist() == [0, 0, 1, 1, 0, 0, 0, 0.5, 0]


# --- silent acceptance ---------------------------------------------------------------------

@pytest.mark.parametrize("actions", [None, [("blue_0", [0, 0, 0])], "blue_0"])
def test_step_needs_a_dict_of_actions(actions):
    env = MultiBattalionEnv(1, 1, max_steps=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="actions=.* is invalid: expected a dict"):
        env.step(actions)


def test_an_unknown_agent_key_is_named_as_an_actions_key():
    env = MultiBattalionEnv(1, 1, max_steps=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions\[1\] is invalid"):
        env.step({1: np.zeros(3)})
    with pytest.raises(ValueError, match=r"actions\['blue_0'\]=.* dtype complex128"):
        env.step({"blue_0": np.zeros(3, complex)})


@pytest.mark.parametrize("seed", [-1, 2**63, 2**64, 0.5, "0"])
def test_reset_seeds_raise_naming_seed(seed):
    with pytest.raises(ValueError, match=r"seed=.* expected None or an integer in \[0, 2\*\*63\)"):
        MultiBattalionEnv(1, 1, max_steps=5).reset(seed=seed)


def test_reset_options_other_than_pettingzoos_probe_are_refused():
    env = MultiBattalionEnv(1, 1, max_steps=5)
    with pytest.raises(ValueError, match="options key 'seed' is invalid"):
        env.reset(options={"seed": 3})
    env.reset(seed=0, options={"options": 1})  # what parallel_api_test passes


def test_string_booleans_are_refused():
    with pytest.raises(ValueError, match="randomize_terrain='false' is invalid"):
        MultiBattalionEnv(randomize_terrain="false")
    with pytest.raises(ValueError, match="randomize_terrain='false' is invalid"):
        batch(1, 1, 1, randomize_terrain="false")


def test_a_1v1_battle_gives_both_sides_the_duels_observation():
    """The first 25 features are the duel's, for Blue and for Red (both mirrored the same
    way), which is what lets a duel policy seed a team policy."""
    team = batch(4, 1, 1)
    duel = BattalionBatch(4, config=BattleConfig(), terrain=None, randomize_terrain=True,
                          curriculum_level=1, reward_weights=None)
    for b in (team, duel):
        b.reset(np.arange(4), [11, 12, 13, 14], np.zeros(4, np.int64))
    np.testing.assert_array_equal(team.state.x, duel.state.x)
    views = np.stack([duel.blue_observation(), duel.red_observation()], axis=1)
    np.testing.assert_allclose(team.observation[:, :, :len(DUEL_FEATURES)], views, atol=1e-6)


@pytest.mark.parametrize("read", ["never", "before", "batch"])
def test_a_steps_observations_stay_what_it_produced_through_restarts(read):
    """Restarts write into the step's arrays in place only while nobody holds them: a
    result read after two restarts (in place, rows saved) or before them (copies), and
    the batch's own arrays read before a restart, all show what the step produced."""
    b = batch(16, 2, 2)
    b.reset(np.arange(16), list(range(16)), np.zeros(16, np.int64))
    orders = np.random.default_rng(0).uniform(-1, 1, (16, 4, 3)).astype(np.float32)
    result = b.step(orders)
    held = {}
    if read == "before":
        held["observation"], held["global_state"] = result.observation, result.global_state
    elif read == "batch":
        held["observation"], held["global_state"] = b.observation, b.global_state
    produced = {name: array.copy() for name, array in held.items()}
    kept = {name: getattr(b, "_" + name).copy() for name in ("observation", "global_state")}
    b.next_episode(np.array([1, 4]))
    b.next_episode(np.array([4, 9]))  # a battle restarted twice: the step's rows still win
    for name, array in held.items():
        np.testing.assert_array_equal(array, produced[name])
    for name in ("observation", "global_state"):
        np.testing.assert_array_equal(getattr(result, name), kept[name])
    critic = result.critic_state
    np.testing.assert_array_equal(critic[:, :, :OBS_DIM], kept["observation"])
    # The batch's current arrays show the restarted battles, the rest as stepped.
    current = b.observation
    assert not np.array_equal(current[[1, 4, 9]], kept["observation"][[1, 4, 9]])
    np.testing.assert_array_equal(np.delete(current, [1, 4, 9], axis=0),
                                  np.delete(kept["observation"], [1, 4, 9], axis=0))
