"""The training battles: opponents dealt episode by episode, whatever n_envs is."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from envs.vec_env import BattalionVecEnv
from training.ppo.battles import OpponentRotation, make_training_env
from training.ppo.config import TrainingConfig


def current_opponents(env: OpponentRotation) -> list[str]:
    levels = env.venv.get_attr("curriculum_level")
    policies = env.venv.get_attr("red_policy")
    return ["random" if p is env.random else f"scripted_l{level}" if p is None else "other"
            for level, p in zip(levels, policies, strict=True)]


def play(env: OpponentRotation, steps: int) -> Counter:
    """Opponents met by the episodes that started during ``steps`` steps."""
    met = Counter(current_opponents(env))
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(steps):
        actions = rng.uniform([-1, -1, 0], [1, 1, 1], (env.num_envs, 3)).astype(np.float32)
        _, _, dones, _ = env.step(actions)
        now = current_opponents(env)
        met.update(now[i] for i in np.flatnonzero(dones))
    return met


def test_fewer_battles_than_entries_still_meet_every_entry_in_turn():
    names = ["scripted_l1", "scripted_l2", "scripted_l3", "scripted_l4", "scripted_l5",
             "scripted_l4", "scripted_l5", "scripted_l5", "random"]  # 9 entries, L4 x2, L5 x3
    env = OpponentRotation(BattalionVecEnv(4, max_steps=20), names, seed=0)
    met = play(env, 20 * 36)  # 4 battles x 36 episodes of 20 steps: 4 turns of the list
    assert set(met) == set(names)  # L5 and random too, with only 4 battles
    episodes = sum(met.values())
    for name, weight in Counter(names).items():
        assert abs(met[name] - episodes * weight / len(names)) <= 4, (name, met)


def test_many_battles_meet_the_entries_in_turn_by_weight():
    names = ["scripted_l1", "scripted_l5", "scripted_l5", "random"]
    env = OpponentRotation(BattalionVecEnv(64, max_steps=30), names, seed=0)
    assert Counter(current_opponents(env)) == {"scripted_l1": 16, "scripted_l5": 32,
                                               "random": 16}
    met = play(env, 30 * 5)  # 5 episodes of every battle
    episodes = sum(met.values())
    for name, weight in Counter(names).items():
        assert abs(met[name] - episodes * weight / len(names)) <= 1, (name, met)


def test_a_battle_given_a_policy_leaves_the_rotation_and_none_brings_it_back():
    env = OpponentRotation(BattalionVecEnv(2, max_steps=10), ["scripted_l1", "scripted_l2"])
    stranger = env.random.__class__(1)
    env.env_method("set_red_policy", stranger, indices=[0])
    play(env, 30)
    assert env.venv.get_attr("red_policy", indices=[0]) == [stranger]
    env.env_method("set_red_policy", None, indices=[0])
    assert env.venv.get_attr("red_policy", indices=[0]) == [stranger]  # until its episode ends
    play(env, 10)
    assert current_opponents(env)[0] in ("scripted_l1", "scripted_l2")


def test_training_env_deals_the_configured_opponents():
    env = make_training_env(TrainingConfig(n_envs=3, training_opponents=["random"]))
    assert isinstance(env.venv, OpponentRotation)
    assert current_opponents(env.venv) == ["random"] * 3
    plain = make_training_env(TrainingConfig(n_envs=3, training_opponents=[],
                                             curriculum_level=2))
    assert plain.venv.get_attr("curriculum_level") == [2, 2, 2]


def test_pool_members_take_their_share_of_the_episodes_in_turn():
    names = ["scripted_l1", "scripted_l5", "random"]
    env = OpponentRotation(BattalionVecEnv(8, max_steps=20), names, seed=0)
    members = [env.random.__class__(1), env.random.__class__(2)]
    env.set_members(members, 0.25)
    met = Counter()
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(20 * 40):  # 8 battles x 40 episodes
        actions = rng.uniform([-1, -1, 0], [1, 1, 1], (8, 3)).astype(np.float32)
        _, _, dones, _ = env.step(actions)
        policies = env.venv.get_attr("red_policy")
        met.update("member" if policies[i] in members else "listed"
                   for i in np.flatnonzero(dones))
    episodes = sum(met.values())
    assert abs(met["member"] - episodes / 4) <= 1, met
    # At the end some battle is commanded by a member.
    assert {id(p) for p in env.venv.get_attr("red_policy")} & {id(m) for m in members}
    with pytest.raises(ValueError, match="share"):
        env.set_members(members, 1.5)


def test_a_doctrine_at_another_range_halts_there():
    from envs.commanders.doctrine import DisciplinedCommander
    from training.ppo.opponents import doctrine_hold_range, resolve_opponent

    assert doctrine_hold_range("doctrine") == DisciplinedCommander().hold_range
    assert doctrine_hold_range("doctrine_70") == 70.0
    assert doctrine_hold_range("doctrine_07") is None and doctrine_hold_range("l5") is None
    assert resolve_opponent("doctrine_45", map_diagonal=1000.0).policy.hold_range == 45.0
    config = TrainingConfig(training_opponents=["scripted_l5", "doctrine_70"])
    assert config.training_opponents == ["scripted_l5", "doctrine_70"]
    with pytest.raises(ValueError, match=r"training_opponents\[1\]='doctrine_'"):
        TrainingConfig(training_opponents=["doctrine", "doctrine_"])
