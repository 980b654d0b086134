"""Entity tokens (envs.battles.entity_tokens): one per battalion a side knows of,
fog respected."""

from __future__ import annotations

import numpy as np
import pytest

from envs.battles.entity_tokens import (
    ENTITY_FEATURES,
    ENTITY_TOKEN_DIM,
    QUALITY_SCALE,
    SEED_TOKEN_DIM,
    TOKEN,
    entity_tokens,
)
from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.scenario import OrderOfBattle
from envs.sim.config import BattleConfig
from envs.sim.constants import ACTION_DIM


def battles(n_blue=2, n_red=3, n=4, visibility=400.0, oob=None, seed=0):
    batch = MultiBattalionBatch(n, n_blue, n_red, config=BattleConfig(), terrain=None,
                                randomize_terrain=False, visibility_radius=visibility,
                                reward_weights=None, order_of_battle=oob)
    batch.reset(np.arange(n), [seed + i for i in range(n)], np.zeros(n, np.int64))
    return batch


def test_the_layout_starts_with_the_seeds_sixteen():
    assert ENTITY_TOKEN_DIM == len(ENTITY_FEATURES) == 19 and SEED_TOKEN_DIM == 16
    assert ENTITY_FEATURES[:3] == ("arm_infantry", "arm_cavalry", "arm_artillery")
    assert ENTITY_FEATURES[14:16] == ("team_own", "team_enemy")


def test_own_battalions_come_first_as_they_are():
    batch = battles()
    view = entity_tokens(batch, BLUE)
    state, config = batch.state, batch.config
    assert view.tokens.shape == (4, 5, ENTITY_TOKEN_DIM)
    np.testing.assert_array_equal(view.unit[:, :2], [[0, 1]] * 4)
    np.testing.assert_array_equal(view.own_mask[:, :2], True)
    assert not view.own_mask[:, 2:].any() and not view.pad_mask.any()
    own = view.tokens[:, :2]
    np.testing.assert_allclose(own[..., TOKEN["x"]], state.x[:, :2] / config.map_width,
                               rtol=1e-6)
    np.testing.assert_allclose(own[..., TOKEN["heading_cos"]], np.cos(state.theta[:, :2]),
                               atol=1e-6)
    np.testing.assert_array_equal(own[..., TOKEN["team_own"]], 1.0)
    np.testing.assert_array_equal(own[..., TOKEN["arm_infantry"]], 1.0)
    np.testing.assert_array_equal(own[..., TOKEN["formation_line"]], 1.0)
    np.testing.assert_allclose(own[..., TOKEN["quality"]], 1.0 / QUALITY_SCALE)
    enemies = view.tokens[:, 2:]
    np.testing.assert_array_equal(enemies[..., TOKEN["team_enemy"]], 1.0)


def test_enemies_nearest_first_and_reds_view_mirrored():
    batch = battles()
    red = entity_tokens(batch, RED)
    state, config = batch.state, batch.config
    np.testing.assert_array_equal(red.unit[:, :3], [[2, 3, 4]] * 4)
    np.testing.assert_allclose(red.tokens[:, :3, TOKEN["x"]],
                               (config.map_width - state.x[:, 2:]) / config.map_width, rtol=1e-5)
    np.testing.assert_allclose(red.tokens[:, :3, TOKEN["heading_cos"]],
                               -np.cos(state.theta[:, 2:]), atol=1e-6)
    # Enemies (Blue) sorted by their distance to Red's nearest battalion.
    for b in range(4):
        units = red.unit[b, 3:]
        gaps = [np.hypot(state.x[b, 2:] - state.x[b, u], state.y[b, 2:] - state.y[b, u]).min()
                for u in units]
        assert gaps == sorted(gaps)


def test_an_enemy_out_of_sight_is_where_it_was_last_seen():
    batch = battles(visibility=30.0)  # nobody sees anybody after deployment
    start = batch.state.x.copy(), batch.state.y.copy()
    orders = np.zeros((4, 5, ACTION_DIM), np.float32)
    orders[..., 0] = 1.0  # everybody marches
    for _ in range(10):
        batch.step(orders)
    view = entity_tokens(batch, BLUE)
    config, state = batch.config, batch.state
    enemy = view.unit[0, 2:]
    np.testing.assert_allclose(view.tokens[0, 2:, TOKEN["x"]],
                               start[0][0, enemy] / config.map_width, rtol=1e-6)
    assert not np.allclose(state.x[0, enemy], start[0][0, enemy])  # they did move
    np.testing.assert_allclose(view.tokens[0, 2:, TOKEN["report_age"]], 10 / config.max_steps)
    # Its formation is unknown out of sight; one's own is always known.
    assert (view.tokens[0, 2:, 8:12] == 0).all()
    assert (view.tokens[0, :2, 8:12].sum(axis=-1) == 1).all()
    assert (view.tokens[0, :2, TOKEN["report_age"]] == 0).all()


def test_a_token_budget_keeps_the_own_and_the_nearest_enemies():
    batch = battles()
    full = entity_tokens(batch, BLUE)
    cut = entity_tokens(batch, BLUE, max_tokens=3)
    np.testing.assert_array_equal(cut.unit, full.unit[:, :3])
    np.testing.assert_array_equal(cut.tokens, full.tokens[:, :3])
    roomy = entity_tokens(batch, BLUE, max_tokens=8)
    assert roomy.pad_mask[:, 5:].all() and (roomy.tokens[:, 5:] == 0).all()
    assert (roomy.unit[:, 5:] == -1).all() and not roomy.own_mask[:, 5:].any()
    with pytest.raises(ValueError, match="max_tokens=1"):
        entity_tokens(batch, BLUE, max_tokens=1)
    with pytest.raises(ValueError, match="side=2"):
        entity_tokens(batch, 2)


def test_units_out_of_the_fight_are_no_tokens():
    batch = battles()
    batch.state.routed[0, 0] = True
    view = entity_tokens(batch, BLUE)
    assert view.own_mask[0].sum() == 1 and view.pad_mask[0].sum() == 1
    assert 0 not in view.unit[0]


def test_arms_and_quality_from_the_order_of_battle():
    oob = OrderOfBattle.of({"blue": ["infantry", "cavalry", "artillery"],
                            "red": ["infantry", {"type": "infantry", "quality": 1.5}]})
    batch = battles(3, 2, n=2, oob=oob)
    view = entity_tokens(batch, BLUE)
    arms = view.tokens[0, view.own_mask[0], :3].argmax(axis=1)
    np.testing.assert_array_equal(arms, [0, 1, 2])
    red = entity_tokens(batch, RED)
    np.testing.assert_allclose(red.tokens[0, :2, TOKEN["quality"]], [0.5, 0.75])
