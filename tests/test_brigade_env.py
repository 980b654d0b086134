"""The brigade env and its batch: macro steps at a fixed tempo, drills then holding,
initiation sets honoured, Blue's battalions under a frozen order-following policy, Red
scripted or frozen, a battle the same in any batch."""

from __future__ import annotations

import numpy as np
import pytest

from envs.echelons.brigade_env import BrigadeEnv
from envs.options import MacroAction, Option, make_default_options


def play(env, choose, seed=0, limit=200):
    obs, _ = env.reset(seed=seed)
    infos = []
    for _ in range(limit):
        obs, reward, terminated, truncated, info = env.step(choose(obs))
        assert env.observation_space.contains(obs) and np.isfinite(reward)
        infos.append(info)
        if terminated or truncated:
            return infos, terminated, truncated
    raise AssertionError("the battle did not end")


def test_a_macro_step_lasts_the_tempo_and_a_finished_drill_holds():
    env = BrigadeEnv(temporal_ratio=10)
    env.reset(seed=1)
    hold = np.full(2, MacroAction.DEFEND_POSITION)
    _, _, terminated, truncated, info = env.step(hold)
    assert info["primitive_steps"] == 10 and set(info["option_steps"].values()) == {10}
    assert info["option_names"] == {"blue_0": "defend_position", "blue_1": "defend_position"}
    flank = np.full(2, MacroAction.FLANK_LEFT)
    state = env.batch.battles.state
    _, _, _, _, info = env.step(flank)
    assert info["primitive_steps"] == 10
    assert set(info["option_steps"].values()) == {5}  # the flanks' cap is half the ratio
    # After the flank the battalions hold: five more steps do not move them.
    x = env.batch.battles.state.x.copy()
    env.batch.battles.step(np.zeros((1, 4, 3), np.float32))
    np.testing.assert_allclose(env.batch.battles.state.x[0, :2], x[0, :2], atol=1e-4)
    assert state is not env.batch.battles.state


def test_battles_end_with_a_winner_and_advancing_beats_holding_against_a_passive_red():
    infos, terminated, truncated = play(
        BrigadeEnv(red_level=1, max_steps=600),
        lambda obs: np.full(2, MacroAction.ADVANCE_SECTOR))
    assert terminated and infos[-1]["winner"] == "blue"
    infos, terminated, truncated = play(
        BrigadeEnv(red_level=1, max_steps=200),
        lambda obs: np.full(2, MacroAction.DEFEND_POSITION))
    assert truncated and infos[-1]["winner"] == "draw"


def test_a_drill_that_may_not_start_is_replaced_by_holding():
    options = make_default_options(10)
    never = Option("never", lambda o: False, options[0].policy, lambda o, t: False, 10)
    env = BrigadeEnv(options=[never, *options[1:]])
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([0, MacroAction.CONCENTRATE_FIRE]))
    assert info["refused_options"] == ["blue_0"]
    assert info["option_names"] == {"blue_0": "defend_position", "blue_1": "concentrate_fire"}
    alone = BrigadeEnv(options=[never])
    alone.reset(seed=0)
    _, _, _, _, info = alone.step(np.zeros(2, int))
    assert info["option_names"] == {"blue_0": "hold", "blue_1": "hold"}
    assert info["primitive_steps"] == alone.temporal_ratio


def test_red_can_be_a_frozen_policy():
    class Charge:
        calls = 0

        def predict(self, observation, deterministic=False):
            Charge.calls += 1
            return np.tile([1.0, 0.0, 1.0], (len(observation), 1)), None

    env = BrigadeEnv(battalion_policy=Charge())
    env.reset(seed=0)
    env.step(np.zeros(2, int))
    assert Charge.calls > 0


@pytest.mark.parametrize("action", [[0], [0, 6], [0.5, 1], [-1, 0]])
def test_bad_actions_are_refused(action):
    env = BrigadeEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.array(action))


def test_stepping_a_finished_battle_is_refused():
    env = BrigadeEnv(max_steps=5)
    env.reset(seed=0)
    env.step(np.zeros(2, int))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, int))


def test_a_battle_is_the_same_alone_and_in_a_batch():
    from envs.echelons.brigade_env import make_brigade_batch

    batch = make_brigade_batch(3, max_steps=120, red_random=True)
    batch.reset(np.arange(3), [5, 6, 7], np.zeros(3, np.int64))
    alone = BrigadeEnv(max_steps=120, red_random=True)
    obs, _ = alone.reset(seed=6)
    np.testing.assert_array_equal(batch.observe()[1], obs)
    rng = np.random.default_rng(0)
    for _ in range(12):
        action = rng.integers(0, 6, (3, 2))
        result = batch.step(action)
        obs, reward, terminated, truncated, info = alone.step(action[1])
        np.testing.assert_array_equal(result.observation[1], obs)
        assert result.reward[1] == pytest.approx(reward)
        assert (result.terminated[1], result.truncated[1]) == (terminated, truncated)
        if terminated or truncated:
            break
        assert not result.battle_over.any()


def test_blue_battalions_can_follow_a_frozen_order_policy():
    import torch

    from envs.battles.multi_observation import OBS_DIM, STATE_DIM
    from envs.commanders.orders import ORDER_DIM
    from models.mappo_policy import MAPPOPolicy

    torch.manual_seed(0)
    policy = MAPPOPolicy(OBS_DIM + ORDER_DIM, 3, OBS_DIM + ORDER_DIM + STATE_DIM, n_agents=2)
    seen = []
    act = policy.act

    def spy(obs, **kwargs):
        seen.append(obs.clone())
        return act(obs, **kwargs)

    policy.act = spy
    env = BrigadeEnv(blue_policy=policy, max_steps=100)
    env.reset(seed=3)
    _, _, _, _, info = env.step(np.array([MacroAction.ADVANCE_SECTOR, MacroAction.WITHDRAW]))
    assert len(seen) == 10 and seen[0].shape == (2, OBS_DIM + ORDER_DIM)
    orders = seen[0][:, OBS_DIM:OBS_DIM + len(MacroAction)].numpy()
    assert orders[0, MacroAction.ADVANCE_SECTOR] == 1 and orders[1, MacroAction.WITHDRAW] == 1
    with pytest.raises(ValueError, match="blue_policy"):
        BrigadeEnv(blue_policy=policy, options=make_default_options(10)[:3])
