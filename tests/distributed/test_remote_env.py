"""MultiBattalionBatchEnv and its Ray actor, RemoteMultiBattalionEnv (REFERENCE §I.7)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from envs.battles.multi_observation import OBS_DIM, STATE_DIM
from envs.multi_battalion_env import MultiBattalionEnv
from envs.remote_multi_battalion_env import (
    EPISODE_KEYS,
    MultiBattalionBatchEnv,
    random_orders,
)
from tests.distributed.helpers import FAST, same, small_policy
from tests.fresh import run_python
from training.mappo.battles import PolicyCommander

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SEEDS = list(range(20, 28))


# --- in-process ---------------------------------------------------------------------------

def test_reset_and_step_are_batched_pettingzoo() -> None:
    env = MultiBattalionBatchEnv(n_battles=3, **FAST)
    assert env.get_agents() == []
    assert env.get_possible_agents() == ["blue_0", "blue_1", "red_0", "red_1"]
    assert (env.get_n_blue(), env.get_n_red()) == (2, 2)
    assert env.observation_space("red_1").shape == (OBS_DIM,)
    assert env.action_space("blue_0").shape == (3,)
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})
    observations, infos = env.reset(seed=5)
    assert set(observations) == set(infos) == set(env.possible_agents)
    assert all(obs.shape == (3, OBS_DIM) for obs in observations.values())
    assert env.state().shape == (3, STATE_DIM)
    assert env.get_agents() == env.possible_agents

    # Battle i is seed 5 + i: the PettingZoo env of that seed sees the same.
    single = MultiBattalionEnv(**FAST)
    for i in range(3):
        alone, _ = single.reset(seed=5 + i)
        assert all((alone[a] == observations[a][i]).all() for a in alone)

    order = np.array([[1.0, 0.2, 1.0]] * 3, np.float32)
    out = env.step({"blue_0": order, "red_0": order})
    assert len(out) == 5
    obs, rewards, terminated, truncated, info = out
    for agent in env.possible_agents:
        assert obs[agent].shape == (3, OBS_DIM)
        assert rewards[agent].shape == terminated[agent].shape == truncated[agent].shape == (3,)
        assert terminated[agent].dtype == bool
        assert set(info[agent]) == {"acted", "damage_dealt", "damage_taken", "routed",
                                    "destroyed", "step_count"}
        assert (info[agent]["step_count"] == 1).all()
    # The same orders in the PettingZoo env give the same first step.
    single.reset(seed=6)
    alone = single.step({"blue_0": order[0], "red_0": order[0]})
    for agent in env.possible_agents:
        assert (alone[0][agent] == obs[agent][1]).all()
        assert np.float32(alone[1][agent]) == rewards[agent][1]


def test_a_finished_battle_stays_finished_until_reset() -> None:
    env = MultiBattalionBatchEnv(n_battles=2, **dict(FAST, max_steps=3))
    env.reset(seed=0)
    for _ in range(3):
        _, _, _, truncated, _ = env.step({})
    assert all(truncated[a].all() for a in env.possible_agents)
    assert env.get_agents() == []
    last = env.step({})
    obs, rewards, terminated, truncated, info = last
    assert not any(truncated[a].any() or terminated[a].any() or rewards[a].any()
                   or info[a]["acted"].any() for a in env.possible_agents)
    again = env.step({})[0]
    assert all((again[a] == obs[a]).all() for a in env.possible_agents)
    env.reset(seed=0)
    assert env.get_agents() == env.possible_agents


def test_bad_input_is_refused_with_its_name() -> None:
    env = MultiBattalionBatchEnv(n_battles=2, **FAST)
    env.reset(seed=1)
    with pytest.raises(ValueError, match="actions"):
        env.step([[0, 0, 0]])
    with pytest.raises(ValueError, match="no such agent"):
        env.step({"green_0": np.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        env.step({"blue_0": np.zeros(3)})
    with pytest.raises(ValueError, match="non-finite"):
        env.step({"blue_0": np.full((2, 3), np.nan)})
    with pytest.raises(ValueError, match="agent="):
        env.observation_space("nobody")
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match="options"):
        env.reset(options={"typo": 1})
    with pytest.raises(ValueError, match="n_blue"):
        MultiBattalionBatchEnv(n_blue=7)
    with pytest.raises(ValueError, match="n_battles"):
        MultiBattalionBatchEnv(n_battles=0)
    with pytest.raises(ValueError, match="render_mode"):
        MultiBattalionBatchEnv(render_mode="rgb_array")
    for seeds, pattern in (([], "at least one"), ([-1], r"seeds\[0\]"), ("12", "seeds="),
                           ([1, None], r"seeds\[1\]"), ([1.5], r"seeds\[0\]")):
        with pytest.raises(ValueError, match=pattern):
            env.run_episodes(seeds)
    with pytest.raises(ValueError, match="blue"):
        env.run_episodes([0], blue=0)
    with pytest.raises(ValueError, match="red"):
        env.run_episodes([0], red=6)
    with pytest.raises(TypeError, match="PolicyCommander"):
        env.run_episodes([0], blue=small_policy())
    with pytest.raises(TypeError, match="red="):
        env.run_episodes([0], red="scripted_l5")
    with pytest.raises(ValueError, match="max_steps"):
        env.run_episodes([0], max_steps=0)
    with pytest.raises(ValueError, match=r"shape \(1, 1, 3\): expected \(1, 2, 3\)"):
        env.run_episodes([0], blue=lambda battles, units: np.zeros((1, 1, 3)))
    with pytest.raises(TypeError, match="policy_fn"):
        env.run_episode(policy_fn=3)
    with pytest.raises(ValueError, match="policy_fn returned"):
        env.run_episode(policy_fn=lambda obs: None, seed=0)
    with pytest.raises(ValueError, match="no such agent"):
        env.run_episode(policy_fn=lambda obs: {"blue_9": [0, 0, 0]}, seed=0)


def test_run_episode_returns_the_seeds_dict() -> None:
    env = MultiBattalionBatchEnv(**FAST)
    calls = []

    def policy_fn(observations):
        calls.append(sorted(observations))
        return {agent: [1.0, 0.0, 1.0] for agent in observations}

    episode = env.run_episode(policy_fn, seed=3)
    assert tuple(episode) == EPISODE_KEYS
    assert isinstance(episode["steps"], int) and 1 <= episode["steps"] <= FAST["max_steps"]
    assert len(episode["observations"]) == len(calls) == episode["steps"]
    assert [sorted(obs) for obs in episode["observations"]] == calls
    assert calls[0] == sorted(env.possible_agents)
    assert set(episode["agent_rewards"]) == set(env.possible_agents)
    assert episode["total_reward"] == pytest.approx(sum(episode["agent_rewards"].values()))
    assert isinstance(episode["blue_won"], bool)
    capped = env.run_episode(policy_fn, seed=3, max_steps=5)
    assert capped["steps"] == 5 and len(capped["observations"]) == 5
    # Random orders without a policy_fn: those of run_episodes, battle for battle.
    alone = env.run_episode(seed=11)
    assert same(alone, env.run_episodes([11], record_observations=True)[0])
    assert not same(alone, env.run_episode(seed=12))
    assert env.run_episode()["steps"] >= 1  # a fresh seed


def test_run_episodes_match_the_pettingzoo_env_step_by_step() -> None:
    """steps, rewards and blue_won are what a PettingZoo loop over MultiBattalionEnv
    gives for the same battles and orders (Blue scripted level 5, Red random)."""
    env = MultiBattalionBatchEnv(**FAST)
    episodes = env.run_episodes(SEEDS, blue=5, record_observations=True)
    assert any(e["blue_won"] for e in episodes) and not all(e["blue_won"] for e in episodes)
    single = MultiBattalionEnv(**FAST)
    for seed, episode in zip(SEEDS, episodes, strict=True):
        obs, _ = single.reset(seed=seed)
        rewards = dict.fromkeys(single.possible_agents, 0.0)
        steps = 0
        while single.agents:
            # The orders of a step are given on the observations of the agents in it.
            assert same({a: obs[a] for a in single.agents}, episode["observations"][steps])
            battle = SimpleNamespace(state=single.battle_state, n_battles=1, n_units=4)
            drawn = random_orders(battle)[0]
            actions = {a: drawn[i] for i, a in enumerate(single.possible_agents)
                       if a in single.agents and a.startswith("red")}
            actions.update(single.scripted_actions(5, [a for a in single.agents
                                                        if a.startswith("blue")]))
            obs, step_rewards, _, _, _ = single.step(actions)
            for agent, reward in step_rewards.items():
                rewards[agent] += reward
            steps += 1
        active = single.battle_state.active[0]
        assert episode["steps"] == steps
        assert episode["agent_rewards"] == rewards
        assert episode["blue_won"] == bool(active[:2].any() and not active[2:].any())


def test_a_battle_plays_the_same_in_any_batch() -> None:
    env = MultiBattalionBatchEnv(**FAST)
    policy = PolicyCommander(small_policy(1))
    for blue, red in ((None, None), (policy, 5), (3, policy)):
        together = env.run_episodes(SEEDS, blue, red)
        apart = [env.run_episodes([seed], blue, red)[0] for seed in SEEDS[:3]]
        assert same(together[:3], apart)
        assert same(env.run_episodes(SEEDS[::-1], blue, red), together[::-1])


def test_remote_class_is_made_on_first_use_and_needs_ray() -> None:
    code = (
        "import sys\n"
        "import envs.remote_multi_battalion_env as m\n"
        "assert 'ray' not in sys.modules\n"
        "sys.modules['ray'] = None  # as if Ray were not installed\n"
        "try:\n"
        "    m.RemoteMultiBattalionEnv\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    assert 'pip install -e ".[distributed]"' in run_python(["-c", code], timeout=120)


# --- on Ray -------------------------------------------------------------------------------

def test_the_actor_has_the_api(ray_cluster) -> None:
    ray = ray_cluster
    from envs.remote_multi_battalion_env import RemoteMultiBattalionEnv

    actor = RemoteMultiBattalionEnv.remote(n_battles=2, **FAST)
    local = MultiBattalionBatchEnv(n_battles=2, **FAST)
    try:
        assert ray.get(actor.get_agents.remote()) == []
        assert ray.get(actor.get_possible_agents.remote()) == local.possible_agents
        assert ray.get(actor.get_n_blue.remote()) == 2
        assert ray.get(actor.get_n_red.remote()) == 2
        assert ray.get(actor.observation_space.remote("blue_0")) == local.observation_space(
            "blue_0")
        assert ray.get(actor.action_space.remote("red_1")) == local.action_space("red_1")
        assert same(ray.get(actor.reset.remote(seed=9)), local.reset(seed=9))
        assert same(ray.get(actor.state.remote()), local.state())
        orders = {"blue_1": np.array([[1.0, -0.5, 1.0], [0.5, 0.5, 0.0]], np.float32)}
        for _ in range(3):
            assert same(ray.get(actor.step.remote(orders)), local.step(orders))
        assert ray.get(actor.get_agents.remote()) == local.get_agents()
        assert same(ray.get(actor.run_episode.remote(seed=4)), local.run_episode(seed=4))
        with pytest.raises(ray.exceptions.RayTaskError, match="no such agent"):
            ray.get(actor.step.remote({"nobody": orders["blue_1"]}))
        ray.get(actor.close.remote())
    finally:
        ray.kill(actor)


def test_run_episodes_through_ray_is_bit_for_bit_the_same(ray_cluster) -> None:
    ray = ray_cluster
    from training.league.distributed_runner import make_remote_envs

    with pytest.raises(ValueError, match="the Ray cluster has 4 CPUs"):
        make_remote_envs(5, **FAST)  # they would wait forever for CPUs
    envs = make_remote_envs(2, num_cpus_per_env=1.0, **FAST)
    local = MultiBattalionBatchEnv(**FAST)
    blue, red = PolicyCommander(small_policy(2)), PolicyCommander(small_policy(3), True)
    seeds = SEEDS[:4]  # two a worker; the batch's own rules are checked in-process above
    try:
        for sides in ((None, None), (5, None), (blue, red)):
            here = local.run_episodes(seeds, *sides, record_observations=True)
            there = ray.get(envs[0].run_episodes.remote(seeds, *sides,
                                                        record_observations=True))
            assert same(there, here)
            # Split over two workers: each episode is the same.
            halves = ray.get([envs[0].run_episodes.remote(seeds[0::2], *sides),
                              envs[1].run_episodes.remote(seeds[1::2], *sides)])
            plain = local.run_episodes(seeds, *sides)
            assert same(halves[0], plain[0::2]) and same(halves[1], plain[1::2])
    finally:
        for env in envs:
            ray.kill(env)
