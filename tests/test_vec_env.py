"""BattalionVecEnv: SB3 contract, equality with single envs, batched Red policies."""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecMonitor

from envs.battalion_env import BattalionEnv
from envs.battles.observation import OBS_DIM, OBSERVATION_FEATURES
from envs.sim.constants import ACTION_DIM, ACTION_HIGH, ACTION_LOW
from envs.vec_env import BattalionVecEnv

N, T = 5, 900


def random_actions(steps: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(
        ACTION_LOW, ACTION_HIGH, size=(steps, n, ACTION_DIM)).astype(np.float32)


def test_equals_n_single_envs_bit_for_bit_across_episode_boundaries():
    actions = random_actions(T, N)
    vec = BattalionVecEnv(N)
    vec.seed(100)
    observations, rewards, dones, terminal = [vec.reset()], [], [], []
    for t in range(T):
        obs, reward, done, infos = vec.step(actions[t])
        observations.append(obs)
        rewards.append(reward)
        dones.append(done)
        terminal.append({i: infos[i]["terminal_observation"] for i in np.nonzero(done)[0]})
    boundaries = 0
    for i in range(N):
        env = BattalionEnv()
        obs, _ = env.reset(seed=100 + i)
        assert np.array_equal(obs, observations[0][i])
        for t in range(T):
            obs, reward, terminated, truncated, _ = env.step(actions[t, i])
            assert np.float32(reward) == rewards[t][i]
            assert (terminated or truncated) == dones[t][i]
            if terminated or truncated:
                boundaries += 1
                assert np.array_equal(obs, terminal[t][i])
                obs, _ = env.reset()
            assert np.array_equal(obs, observations[t + 1][i])
    assert boundaries >= N  # the comparison crossed episode ends


def test_time_limit_is_reported_as_truncation():
    vec = BattalionVecEnv(3, max_steps=10, curriculum_level=1)
    vec.seed(0)
    vec.reset()
    for _ in range(9):
        vec.step(np.zeros((3, 3), np.float32))
    _, _, done, infos = vec.step(np.zeros((3, 3), np.float32))
    assert done.all()
    assert all(info["TimeLimit.truncated"] for info in infos)
    assert infos[0]["terminal_observation"].shape == (OBS_DIM,)


def test_infos_behave_as_a_list_of_dicts_and_expose_arrays():
    vec = BattalionVecEnv(4)
    vec.seed(1)
    vec.reset()
    _, rewards, _, infos = vec.step(random_actions(1, 4)[0])
    assert len(infos) == 4 and len(infos[1:3]) == 2 and infos[-1] is infos[3]
    assert [info["reward/total"] for info in infos] == pytest.approx(rewards.tolist())
    assert np.array_equal(infos.arrays["reward/total"], rewards)
    with pytest.raises(IndexError):
        infos[4]
    # Each dict holds every array's entry as the Python number of its kind.
    for key, column in infos.arrays.items():
        kind = {"f": float, "b": bool, "i": int}[column.dtype.kind]
        assert [info[key] for info in infos] == column.tolist()
        assert all(type(info[key]) is kind for info in infos), key


class CountingPolicy:
    """Deterministic Red: marches and fires; counts its predict calls."""

    def __init__(self, march: float):
        self.march = march
        self.calls = []

    def predict(self, observation, deterministic=False):
        self.calls.append(observation.shape)
        n = observation.shape[0]
        return np.tile(np.array([self.march, 0.0, 1.0], np.float32), (n, 1)), None


def test_each_red_policy_is_asked_once_per_step_for_all_its_battles():
    vec = BattalionVecEnv(6)
    fast, slow = CountingPolicy(1.0), CountingPolicy(-1.0)
    vec.env_method("set_red_policy", fast, indices=[0, 2, 4])
    vec.env_method("set_red_policy", slow, indices=[1])
    vec.seed(3)
    vec.reset()
    x_before = vec.battle_state.x[:, 1].copy()
    vec.step(np.zeros((6, 3), np.float32))
    assert fast.calls == [(3, OBS_DIM)] and slow.calls == [(1, OBS_DIM)]
    moved = vec.battle_state.x[:, 1] - x_before
    assert vec.get_attr("red_policy") == [fast, slow, fast, None, fast, None]
    # Red marching forward (west) moves left; stepping back moves right.
    assert (moved[[0, 2, 4]] < 0).all() and moved[1] > 0


def test_vec_env_with_a_policy_equals_single_envs_with_it():
    actions = random_actions(200, 3, seed=4)
    vec = BattalionVecEnv(3, red_policy=CountingPolicy(1.0))
    vec.seed(50)
    observations = [vec.reset()]
    for t in range(200):
        observations.append(vec.step(actions[t])[0])

    class Single(CountingPolicy):
        def predict(self, observation, deterministic=False):
            return np.array([1.0, 0.0, 1.0], np.float32), None

    for i in range(3):
        env = BattalionEnv(red_policy=Single(1.0))
        obs, _ = env.reset(seed=50 + i)
        for t in range(200):
            obs, _, terminated, truncated, _ = env.step(actions[t, i])
            if terminated or truncated:
                obs, _ = env.reset()
            assert np.array_equal(obs, observations[t + 1][i])


def test_curriculum_level_can_differ_per_battle():
    vec = BattalionVecEnv(4, curriculum_level=5)
    vec.env_method("set_curriculum_level", 1, indices=[0, 1])
    assert vec.get_attr("curriculum_level") == [1, 1, 5, 5]
    vec.set_attr("curriculum_level", 3, indices=[3])
    assert vec.get_attr("curriculum_level", indices=[3]) == [3]
    with pytest.raises(ValueError, match="level"):
        vec.env_method("set_curriculum_level", 9)


def test_scripted_fire_scale_silences_red_or_lets_it_fire():
    strength = OBSERVATION_FEATURES.index("own_strength")
    hold = np.zeros((8, ACTION_DIM), np.float32)  # Blue stands and holds its fire
    left = {}
    for scale in (0.0, 1.0):
        vec = BattalionVecEnv(8, curriculum_level=5, max_steps=300)
        vec.set_attr("scripted_fire_scale", scale)
        assert vec.get_attr("scripted_fire_scale") == [scale] * 8
        vec.seed(0)
        vec.reset()
        for _ in range(150):  # L5 marches to 160 m and, at full fire, opens fire
            observation = vec.step(hold)[0]
        left[scale] = observation[:, strength]
    np.testing.assert_array_equal(left[0.0], 1.0)
    assert (left[1.0] < 1.0).sum() >= 4  # (a hill between them hides some)
    vec = BattalionVecEnv(2)
    with pytest.raises(ValueError, match="scale=1.5 is invalid"):
        vec.set_attr("scripted_fire_scale", 1.5)
    with pytest.raises(ValueError, match="indices=\\[0\\] is invalid for scripted_fire_scale"):
        vec.set_attr("scripted_fire_scale", 0.5, indices=[0])


def test_bad_input_is_rejected_with_clear_messages():
    vec = BattalionVecEnv(2)
    vec.reset()
    with pytest.raises(ValueError, match="shape"):
        vec.step(np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="non-finite"):
        vec.step(np.array([[0, 0, 0], [np.nan, 0, 0]], np.float32))
    with pytest.raises(AttributeError, match="set_red_policy"):
        vec.env_method("teleport")
    with pytest.raises(TypeError, match="policy"):
        vec.env_method("set_red_policy", "not a policy")
    with pytest.raises(ValueError, match="n_envs"):
        BattalionVecEnv(0)
    with pytest.raises(RuntimeError, match="reset"):
        BattalionVecEnv(2).step(np.zeros((2, 3), np.float32))


def test_stable_baselines3_ppo_trains_on_it():
    vec = VecMonitor(BattalionVecEnv(4, max_steps=60))
    vec.seed(0)
    model = PPO("MlpPolicy", vec, n_steps=64, batch_size=128, n_epochs=1, seed=0,
                device="cpu")
    model.learn(total_timesteps=512)
    # SB3 counts num_envs steps per env step: 2 rollouts of 4 envs x 64 steps, exactly.
    assert model.num_timesteps == 512
    assert len(model.ep_info_buffer) > 0  # episodes finished and were counted


# --- silent acceptance ---------------------------------------------------------------------

def test_a_batch_that_cannot_fit_in_memory_is_refused_with_the_memory_it_needs():
    with pytest.raises(ValueError, match=r"n_envs=1000000000000 is invalid: .* would need "
                                         r"about [\d,.]+ GiB of memory, more than the"):
        BattalionVecEnv(10**12)


def test_string_booleans_and_string_actions_are_refused():
    with pytest.raises(ValueError, match="randomize_terrain='no' is invalid"):
        BattalionVecEnv(2, randomize_terrain="no")
    env = BattalionVecEnv(2, max_steps=5)
    env.reset()
    with pytest.raises(ValueError, match="actions=.* dtype <U1"):
        env.step(np.full((2, 3), "1"))


@pytest.mark.parametrize("seed", [-1, 2**63 - 1, "a", 1.5])
def test_seeds_must_leave_every_battle_a_valid_seed(seed):
    env = BattalionVecEnv(2, max_steps=5)
    with pytest.raises(ValueError, match=r"seed=.* expected None or an integer in \[0, 2\*\*63"):
        env.seed(seed)
    assert env.seed(2**63 - 2) == [2**63 - 2, 2**63 - 1]


def test_reset_options_are_checked():
    env = BattalionVecEnv(2, max_steps=5)
    with pytest.raises(ValueError, match="options key 'foo' is invalid"):
        env.set_options({"foo": 1})
    with pytest.raises(ValueError, match=r"options\[1\] key 'foo' is invalid"):
        env.set_options([{}, {"foo": 1}])
    with pytest.raises(ValueError, match="a list of 2 dicts"):
        env.set_options([{}])
    env.set_options(None)
    env.set_options([{}, {}])
