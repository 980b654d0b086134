"""BattalionEnv: the Gymnasium contract, determinism, Red control and bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from envs.battalion_env import BattalionEnv  # also registers wargames/Battalion-v0
from envs.battles.battalion_batch import BattalionBatch
from envs.battles.observation import OBS_DIM, OBSERVATION_FEATURES, duel_observations
from envs.reward import INFO_KEYS, RewardWeights
from envs.sim import engine
from envs.sim.config import BattleConfig
from envs.sim.constants import ACTION_DIM, ACTION_HIGH, ACTION_LOW
from envs.sim.terrain import TerrainMap

ADVANCE_AND_FIRE = np.array([1.0, 0.0, 1.0], np.float32)


def play(env: BattalionEnv, seed: int, actions: np.ndarray):
    observations = [env.reset(seed=seed)[0]]
    rewards = []
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    return np.array(observations), np.array(rewards)


def test_passes_gymnasium_check_env_through_the_registry():
    env = gym.make("wargames/Battalion-v0", render_mode="rgb_array")
    check_env(env.unwrapped, skip_render_check=False)


def test_spaces_and_observation_layout():
    env = BattalionEnv()
    assert env.observation_space.shape == (OBS_DIM,) == (len(OBSERVATION_FEATURES),)
    assert env.action_space.shape == (ACTION_DIM,) == (3,)
    assert env.action_space.low.tolist() == [-1, -1, 0]
    assert env.action_space.high.tolist() == [1, 1, 1]
    obs, info = env.reset(seed=0)
    assert info == {} and env.observation_space.contains(obs)
    assert obs[OBSERVATION_FEATURES.index("own_readiness")] == 1.0


def test_same_seed_same_trajectory_bit_for_bit():
    actions = np.random.default_rng(5).uniform(ACTION_LOW, ACTION_HIGH, (300, ACTION_DIM)).astype(
        np.float32)
    first = play(BattalionEnv(), 42, actions)
    second = play(BattalionEnv(), 42, actions)
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])
    other = play(BattalionEnv(), 43, actions)
    assert not np.array_equal(first[0][0], other[0][0])


def test_resets_without_seed_continue_the_seeded_sequence():
    a, b = BattalionEnv(), BattalionEnv()
    a.reset(seed=9)
    b.reset(seed=9)
    assert np.array_equal(a.reset()[0], b.reset()[0])


def test_info_carries_damage_status_and_reward_components():
    env = BattalionEnv()
    env.reset(seed=1)
    _, reward, _, _, info = env.step(ADVANCE_AND_FIRE)
    for key in ("blue_damage_dealt", "red_damage_dealt", "blue_routed", "red_routed",
                "step_count", *INFO_KEYS):
        assert key in info
    assert info["step_count"] == 1
    assert reward == pytest.approx(info["reward/total"])
    components = sum(info[key] for key in INFO_KEYS[:-1])
    assert components == pytest.approx(info["reward/total"], abs=1e-6)


def test_episode_ends_when_a_side_breaks_or_time_runs_out():
    env = BattalionEnv(max_steps=30, curriculum_level=1)
    env.reset(seed=0)
    for _ in range(29):
        assert env.step(np.zeros(3, np.float32))[3] is False
    _, _, terminated, truncated, info = env.step(np.zeros(3, np.float32))
    assert truncated and not terminated and info["step_count"] == 30


def test_rgb_array_render_shows_the_battlefield():
    env = BattalionEnv(render_mode="rgb_array")
    env.reset(seed=3)
    image = env.render()
    assert image.shape == (496, 480, 3) and image.dtype == np.uint8
    assert image.std() > 5  # terrain and units, not a blank canvas
    assert BattalionEnv().render() is None


class RecordingPolicy:
    """Moves Red forward and records what it was shown."""

    def __init__(self):
        self.seen = []

    def predict(self, observation, deterministic=False):
        self.seen.append(np.array(observation))
        return np.array([1.0, 0.0, 0.0], np.float32), None


def test_red_policy_gets_reds_observation_and_commands_red():
    policy = RecordingPolicy()
    env = BattalionEnv(red_policy=policy, randomize_terrain=False)
    env.reset(seed=4)
    red_before = env._get_red_obs()
    x_before = env.battle_state.x[0, 1]
    env.step(np.zeros(3, np.float32))
    assert np.array_equal(policy.seen[0], red_before)
    assert policy.seen[0].shape == (OBS_DIM,)
    assert env.battle_state.x[0, 1] != x_before  # Red marched
    env.set_red_policy(None)
    assert env.red_policy is None


def test_red_observation_mirrors_blues():
    env = BattalionEnv()
    blue, _ = env.reset(seed=2)
    red = env._get_red_obs()
    f = OBSERVATION_FEATURES.index
    assert red[f("own_strength")] == blue[f("enemy_strength")]
    assert red[f("enemy_distance")] == blue[f("enemy_distance")]
    # Red's view is mirrored into its own frame: as if it had deployed in the west.
    assert red[f("own_x")] == pytest.approx(1 - env.battle_state.x[0, 1] / env.map_width)
    assert red[f("own_heading_cos")] > 0.9 and blue[f("own_heading_cos")] > 0.9


class Scripted:
    """A Red policy that plays a given list of orders, one a step."""

    def __init__(self, orders):
        self.orders = iter(orders)

    def predict(self, observation, deterministic=False):
        return next(self.orders), None


def test_each_side_sees_the_duel_in_its_own_frame():
    """Swap the sides of a duel and mirror it: Red's view becomes Blue's, and the same
    orders (each in its own side's frame) play the same battle."""
    config = BattleConfig()
    rng = np.random.default_rng(3)
    x = rng.uniform(300, 700, 2).astype(np.float32)
    y = rng.uniform(300, 700, 2).astype(np.float32)
    theta = rng.uniform(0, 2 * np.pi, 2).astype(np.float32)
    orders = rng.uniform(-1, 1, (40, 2, 3)).astype(np.float32)
    orders[..., 2] = 0  # hold fire: nothing random happens
    battles = []
    for mirror, red_orders in ((False, orders[:, 1]), (True, orders[:, 0])):
        b = BattalionBatch(1, config=config, terrain=None, randomize_terrain=False,
                           curriculum_level=1, reward_weights=None)
        b.reset(np.array([0]), [0], np.zeros(1, np.int64))
        b.set_red_policy(Scripted(red_orders))
        swap = [1, 0] if mirror else [0, 1]
        b.state.x[0] = config.map_width - x[swap] if mirror else x
        b.state.y[0] = y[swap]
        b.state.theta[0] = np.mod(np.pi - theta[swap], 2 * np.pi) if mirror else theta
        b.geometry = engine.sense(b.state, config)
        b._views = duel_observations(b.state, b.geometry, config)
        battles.append(b)
    original, mirrored = battles
    for step in range(len(orders)):
        np.testing.assert_allclose(mirrored.blue_observation(), original.red_observation(),
                                   atol=2e-4)
        np.testing.assert_allclose(mirrored.red_observation(), original.blue_observation(),
                                   atol=2e-4)
        original.step(orders[step, :1])
        mirrored.step(orders[step, 1:])
    assert not np.allclose(original.state.theta, theta)  # the orders did turn them


def test_finite_actions_outside_the_box_are_clipped():
    wild = np.array([7.0, -3.0, 2.0], np.float32)
    clipped = np.array([1.0, -1.0, 1.0], np.float32)
    first = play(BattalionEnv(), 8, np.tile(wild, (50, 1)))
    second = play(BattalionEnv(), 8, np.tile(clipped, (50, 1)))
    assert np.array_equal(first[0], second[0])


@pytest.mark.parametrize("action, message", [
    (np.array([np.nan, 0, 0]), "non-finite"),
    (np.array([0, np.inf, 0]), "non-finite"),
    (np.zeros(4), "shape"),
    (np.zeros((1, 3)), "shape"),
    ("advance", "action"),
])
def test_bad_actions_raise_naming_the_problem(action, message):
    env = BattalionEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=message):
        env.step(action)


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        BattalionEnv().step(np.zeros(3, np.float32))


@pytest.mark.parametrize("kwargs, field", [
    (dict(map_width=-1.0), "map_width"),
    (dict(map_height=0.0), "map_height"),
    (dict(max_steps=0), "max_steps"),
    (dict(max_steps=-5), "max_steps"),
    (dict(curriculum_level=0), "curriculum_level"),
    (dict(curriculum_level=6), "curriculum_level"),
    (dict(hill_speed_factor=0.0), "hill_speed_factor"),
    (dict(hill_speed_factor=1.5), "hill_speed_factor"),
    (dict(render_mode="human"), "render_mode"),
])
def test_invalid_constructor_values_raise_naming_the_argument(kwargs, field):
    with pytest.raises(ValueError, match=field):
        BattalionEnv(**kwargs)


@pytest.mark.parametrize("kwargs, field", [
    (dict(red_policy=object()), "red_policy"),
    (dict(terrain="hills"), "terrain"),
    (dict(reward_weights={"win_bonus": 1}), "reward_weights"),
])
def test_wrong_types_raise_naming_the_argument(kwargs, field):
    with pytest.raises(TypeError, match=field):
        BattalionEnv(**kwargs)


def test_fixed_terrain_is_used_every_battle():
    terrain = TerrainMap.generate_random(seed=77)
    env = BattalionEnv(terrain=terrain, randomize_terrain=True)
    assert env.randomize_terrain is False
    env.reset(seed=0)
    assert np.array_equal(env.battle_state.elevation[0], terrain.relative_elevation())
    with pytest.raises(ValueError, match="terrain"):
        BattalionEnv(terrain=terrain, map_width=2000.0)


def test_reward_weights_shape_the_reward():
    actions = np.tile(ADVANCE_AND_FIRE, (200, 1))
    _, plain = play(BattalionEnv(), 3, actions)
    _, no_time = play(BattalionEnv(reward_weights=RewardWeights(time_penalty=0.0)), 3,
                      actions)
    assert np.allclose(no_time - plain, 0.01, atol=1e-6)


# --- silent acceptance: each reproducer raises a named ValueError ----------------------

def test_a_string_boolean_is_refused_not_read_by_truthiness():
    with pytest.raises(ValueError, match=r"randomize_terrain='false' is invalid: expected "
                                         r"true or false"):
        BattalionEnv(randomize_terrain="false")


@pytest.mark.parametrize("width", [1e308, 5e-324, 9.0, 100_001.0])
def test_map_sizes_outside_the_documented_range_are_refused(width):
    with pytest.raises(ValueError, match=r"map_width=.* expected a map side in metres in "
                                         r"\[10, 100000\]"):
        BattalionEnv(map_width=width)


def test_max_steps_is_bounded_by_the_step_counter():
    with pytest.raises(ValueError, match="max_steps=10000000000"):
        BattalionEnv(max_steps=10**10)


@pytest.mark.parametrize("action, dtype", [
    (np.array(["1", "0", "0"]), "<U1"),
    (np.array([1 + 1j, 0, 0]), "complex128"),
    (np.array([1.0, 0.0, 0.0], dtype=object), "object"),
    (np.array([True, False, True]), "bool"),
    (["1", "0", "0"], "<U1"),
])
def test_actions_must_be_real_numbers(action, dtype):
    env = BattalionEnv(max_steps=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=f"action=.* dtype {dtype}; expected a real numeric"):
        env.step(action)


def test_an_action_beyond_float32_is_refused():
    env = BattalionEnv(max_steps=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"non-finite value 1e\+300 \(beyond the float32"):
        env.step(np.array([1e300, 0.0, 0.0]))


@pytest.mark.parametrize("seed", [-1, 2**63, 2**64, 1.5, "a", True, np.float64(3.0)])
def test_reset_seeds_outside_the_range_raise_naming_seed(seed):
    env = BattalionEnv(max_steps=5)
    with pytest.raises(ValueError, match=r"seed=.* expected None or an integer in \[0, 2\*\*63\)"):
        env.reset(seed=seed)


def test_the_largest_seed_and_numpy_seeds_work():
    env = BattalionEnv(max_steps=5)
    first = env.reset(seed=2**63 - 1)[0]
    assert np.array_equal(env.reset(seed=np.uint64(2**63 - 1))[0], first)


@pytest.mark.parametrize("options, match", [
    ({"seed": 1}, "options key 'seed' is invalid"),
    ({"curriculum_level": 2}, "options key 'curriculum_level' is invalid"),
    ("fast", "options='fast' is invalid: expected None or a dict"),
])
def test_reset_options_must_be_documented(options, match):
    env = BattalionEnv(max_steps=5)
    with pytest.raises(ValueError, match=match):
        env.reset(options=options)
    env.reset(options={})  # an empty dict is fine (Gymnasium's checker passes one)
