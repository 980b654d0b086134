"""Orders a battalion follows (envs.commanders.orders) and MAPPO training on them."""

from __future__ import annotations

import numpy as np
import pytest

from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.battles.multi_observation import OBS_DIM, STATE_DIM
from envs.commanders.orders import (
    ENGAGE_DISTANCE,
    FLANK_OFFSET,
    HOLD_RADIUS,
    ORDER_DIM,
    ORDER_FEATURES,
    WITHDRAW_DISTANCE,
    OrderedBattalionBatch,
    OrderRewards,
    objectives,
    order_features,
)
from envs.options import MacroAction
from envs.sim.config import BattleConfig

TEAM = np.array([0, 1], np.int8)
W = H = 1000.0


def one_pair(blue=(300.0, 500.0), red=(700.0, 500.0)):
    x = np.array([[blue[0], red[0]]])
    y = np.array([[blue[1], red[1]]])
    return x, y, np.ones((1, 2), bool)


def test_objectives_follow_the_table():
    x, y, active = one_pair()
    goal = {p: objectives(np.full((1, 2), p), x, y, active, TEAM, W, H)[0, 0]
            for p in MacroAction}
    np.testing.assert_allclose(goal[MacroAction.ADVANCE_SECTOR], [700 - ENGAGE_DISTANCE, 500])
    np.testing.assert_allclose(goal[MacroAction.DEFEND_POSITION], [300, 500])
    np.testing.assert_allclose(goal[MacroAction.CONCENTRATE_FIRE], [300, 500])
    # Facing east, Blue's left is north (+y).
    np.testing.assert_allclose(goal[MacroAction.FLANK_LEFT], [700, 500 + FLANK_OFFSET])
    np.testing.assert_allclose(goal[MacroAction.FLANK_RIGHT], [700, 500 - FLANK_OFFSET])
    np.testing.assert_allclose(goal[MacroAction.WITHDRAW], [300 - WITHDRAW_DISTANCE, 500])


def test_objectives_stay_on_the_map_and_hold_without_an_enemy():
    x, y, active = one_pair(blue=(100.0, 500.0))
    goal = objectives(np.full((1, 2), MacroAction.WITHDRAW), x, y, active, TEAM, W, H)
    assert goal[0, 0, 0] == 0.0
    active[0, 1] = False
    goal = objectives(np.full((1, 2), MacroAction.ADVANCE_SECTOR), x, y, active, TEAM, W, H)
    np.testing.assert_allclose(goal[0, 0], [100, 500])


def test_each_side_reads_its_order_in_its_own_frame():
    # The same battle seen from the other chair: mirrored east-west, sides swapped.
    # Each side's own frame makes the two readings of every order identical.
    x, y, active = np.array([[200.0, 650.0]]), np.array([[300.0, 420.0]]), np.ones((1, 2), bool)
    theta = np.array([[0.3, 2.5]])
    mx, mtheta = W - x[:, ::-1], np.pi - theta[:, ::-1]
    my = y[:, ::-1]
    for posture in MacroAction:
        p = np.full((1, 2), posture)
        seen = order_features(p, objectives(p, x, y, active, TEAM, W, H), x, y, theta, TEAM)
        mirrored = order_features(p, objectives(p, mx, my, active, TEAM, W, H), mx, my, mtheta,
                                  TEAM)
        np.testing.assert_allclose(seen[0, 0], mirrored[0, 1], atol=1e-5, err_msg=posture.name)
        np.testing.assert_allclose(seen[0, 1], mirrored[0, 0], atol=1e-5, err_msg=posture.name)


def test_order_features_read_posture_distance_and_bearing():
    x, y, _ = one_pair()
    theta = np.zeros((1, 2))
    posture = np.array([[MacroAction.FLANK_LEFT, MacroAction.WITHDRAW]])
    goal = np.array([[[300.0, 600.0], [700.0, 500.0]]])  # Blue's: 100 m to its left
    features = order_features(posture, goal, x, y, theta, TEAM)
    assert features.shape == (1, 2, ORDER_DIM) == (1, 2, len(ORDER_FEATURES))
    blue = dict(zip(ORDER_FEATURES, features[0, 0], strict=True))
    assert blue["order_flank_left"] == 1 and sum(features[0, 0, :len(MacroAction)]) == 1
    assert blue["objective_distance"] == pytest.approx(0.2)
    assert blue["objective_bearing_cos"] == pytest.approx(0, abs=1e-6)
    assert blue["objective_bearing_sin"] == pytest.approx(1)
    red = dict(zip(ORDER_FEATURES, features[0, 1], strict=True))
    assert red["objective_distance"] == 0 and red["objective_bearing_cos"] == 1


def ordered(n=4, period=7, **kwargs):
    battles = MultiBattalionBatch(n, 2, 2, config=BattleConfig(max_steps=60), terrain=None,
                                  randomize_terrain=True, visibility_radius=600.0,
                                  reward_weights=None)
    batch = OrderedBattalionBatch(battles, period, **kwargs)
    batch.reset(np.arange(n), list(range(n)), np.zeros(n, np.int64))
    return batch


def test_ordered_battles_see_orders_and_earn_the_order_term():
    batch = ordered(rewards=OrderRewards(progress=2.0, hold=0.5))
    assert batch.observation.shape == (4, 4, OBS_DIM + ORDER_DIM)
    assert batch.critic_state.shape == (4, 4, OBS_DIM + ORDER_DIM + STATE_DIM)
    np.testing.assert_array_equal(batch.observation[..., :OBS_DIM], batch.battles.observation)
    before = batch.distance()
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (4, 4, 3)).astype(np.float32)
    # The same step without orders gives the team reward alone.
    twin = ordered()
    plain = twin.battles.step(actions)
    result = batch.step(actions)
    after = batch.distance()
    term = 2.0 * (before - after) / 100.0 + 0.5 * (after <= HOLD_RADIUS)
    np.testing.assert_allclose(result.reward, plain.reward + np.where(plain.acted, term, 0),
                               atol=1e-5)
    assert result.observation.shape == (4, 4, OBS_DIM + ORDER_DIM)
    np.testing.assert_array_equal(result.winner, plain.winner)  # the rest is the step's


def test_orders_change_every_period_and_are_scored():
    batch = ordered(period=5)
    first = batch.posture.copy(), batch.objective.copy()
    actions = np.zeros((4, 4, 3), np.float32)
    for _ in range(4):
        batch.step(actions)
    np.testing.assert_array_equal(batch.posture, first[0])
    assert batch.take_order_counts() == (0, 0)
    batch.step(actions)
    assert not np.array_equal(batch.objective, first[1])
    issued, met = batch.take_order_counts()
    blue = batch.team == 0
    assert issued == int(batch.state.active[:, blue].sum()) and 0 <= met <= issued
    # Standing still meets the orders to stand (and those whose objective is on the spot).
    stand = np.isin(first[0], [MacroAction.DEFEND_POSITION, MacroAction.CONCENTRATE_FIRE])
    assert met >= int((stand & batch.state.active)[:, blue].sum())
    assert batch.take_order_counts() == (0, 0)


def test_orders_are_the_same_in_any_split():
    whole, parted = ordered(n=6), ordered(n=6)
    parts = parted.split([2, 4])
    actions = np.random.default_rng(1).uniform(-1, 1, (6, 4, 3)).astype(np.float32)
    for _ in range(15):
        whole.step(actions)
        for part, rows in zip(parts, (slice(0, 2), slice(2, 6)), strict=True):
            part.step(actions[rows])
    parted.join(parts)
    np.testing.assert_array_equal(whole.posture, parted.posture)
    np.testing.assert_allclose(whole.objective, parted.objective)
    assert whole.take_order_counts() == parted.take_order_counts()


def test_mappo_trains_order_following_battalions(tmp_path):
    from training.train_mappo import policy_from_checkpoint, train_mappo

    result = train_mappo(n_envs=8, n_steps=16, batch_size=128, n_epochs=1, max_steps=60,
                         total_timesteps=256, checkpoint_freq=128, eval_freq=128,
                         n_eval_episodes=4, checkpoint_dir=str(tmp_path / "ck"),
                         log_dir=str(tmp_path / "logs"),
                         elo_registry_path=str(tmp_path / "elo.json"),
                         self_play_pool_dir=str(tmp_path / "pool"), enable_wandb=False,
                         progress_bar=False, warm_start_doctrine=None, order_period=10)
    assert result.policy.kwargs["obs_dim"] == OBS_DIM + ORDER_DIM
    assert result.policy.kwargs["state_dim"] == OBS_DIM + ORDER_DIM + STATE_DIM
    last = result.history[-1]
    assert last["orders/issued"] > 0 and 0 <= last["orders/met_rate"] <= 1
    assert "eval/win_rate" in last  # evaluated in ordered battles too
    restored = policy_from_checkpoint(result.final_checkpoint)
    assert restored.kwargs == result.policy.kwargs


def test_an_attack_share_weighs_the_orders():
    battles = MultiBattalionBatch(200, 2, 2, config=BattleConfig(max_steps=60), terrain=None,
                                  randomize_terrain=True, visibility_radius=600.0,
                                  reward_weights=None)
    batch = OrderedBattalionBatch(battles, 10, attack_share=0.5)
    batch.reset(np.arange(200), list(range(200)), np.zeros(200, np.int64))
    attacks = np.mean(batch.posture == MacroAction.ADVANCE_SECTOR)
    assert 0.5 + 0.5 / 6 - 0.05 < attacks < 0.5 + 0.5 / 6 + 0.05
    assert set(np.unique(batch.posture)) == set(MacroAction)
    only = OrderedBattalionBatch(battles, 10, postures=(MacroAction.WITHDRAW,))
    only.reset(np.arange(200), list(range(200)), np.zeros(200, np.int64))
    assert (only.posture == MacroAction.WITHDRAW).all()
    with pytest.raises(ValueError, match="attack_share"):
        OrderedBattalionBatch(battles, 10, attack_share=1.5)


def test_the_scripted_follower_meets_its_orders():
    from envs.commanders.orders import OrderFollower
    from training.echelons.order_following import play_ordered_battles

    field = dict(map_width=500.0, map_height=500.0, max_steps=200, visibility_radius=400.0)
    follower = OrderFollower(map_diagonal=float(np.hypot(500.0, 500.0)))
    report = play_ordered_battles(follower, n_battles=16, seed=0, red_level=1,
                                  period=100, env_kwargs=field)
    assert report.issued > 0 and report.met_rate > 0.75
    assert report.outcomes.shape == (16,) and sum(report.rates().values()) == pytest.approx(1)
    # Standing still meets only the orders to stand: far fewer.
    class Stand:
        def predict(self, observation, deterministic=True):
            return np.zeros((len(observation), 3), np.float32), None

    idle = play_ordered_battles(Stand(), n_battles=16, seed=0, red_level=1, period=100,
                                env_kwargs=field)
    assert idle.met_rate < report.met_rate - 0.3


def test_the_follower_attacks_to_its_hold_range():
    from envs.battles.observation import OBSERVATION_FEATURES
    from envs.commanders.orders import OrderFollower

    diagonal = float(np.hypot(500.0, 500.0))
    # An attack order, the enemy 80 m dead ahead and in sight.
    obs = np.zeros((1, OBS_DIM + ORDER_DIM), np.float32)
    obs[0, OBSERVATION_FEATURES.index("enemy_distance")] = 80.0 / diagonal
    obs[0, OBSERVATION_FEATURES.index("enemy_relative_bearing_cos")] = 1.0
    obs[0, OBSERVATION_FEATURES.index("line_of_sight")] = 1.0
    obs[0, OBS_DIM + MacroAction.ADVANCE_SECTOR] = 1.0
    close = OrderFollower(map_diagonal=diagonal).predict(obs)[0][0]
    far = OrderFollower(map_diagonal=diagonal, hold_range=100.0).predict(obs)[0][0]
    assert (close[0], close[2]) == (1.0, 0.0)  # at 60 m: marches on in silence
    assert (far[0], far[2]) == (0.0, 1.0)  # at 100 m: halts and volleys
    with pytest.raises(ValueError, match="hold_range"):
        OrderFollower(hold_range=0.0)
