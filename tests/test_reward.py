"""Reward components, weights and their info keys."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from envs.reward import COMPONENTS, INFO_KEYS, RewardWeights, compute_reward


def test_each_component_follows_its_weight():
    weights = RewardWeights(survival_bonus=0.5, enemy_routed_bonus=2.0,
                            own_routing_penalty=-3.0)
    r = compute_reward(dmg_b2r=0.1, dmg_r2b=0.2, blue_strength=0.8, blue_won=True,
                       blue_lost=False, weights=weights, enemy_routed=True, own_routing=False)
    assert r.delta_enemy_strength[0] == pytest.approx(0.5)
    assert r.delta_own_strength[0] == pytest.approx(-1.0)
    assert r.survival_bonus[0] == pytest.approx(0.4)
    assert r.win_bonus[0] == 10.0 and r.loss_penalty[0] == 0.0
    assert r.time_penalty[0] == pytest.approx(-0.01)
    assert r.enemy_routed_bonus[0] == 2.0 and r.own_routing_penalty[0] == 0.0
    assert r.total[0] == pytest.approx(0.5 - 1.0 + 0.4 + 10.0 - 0.01 + 2.0)


def test_batched_components_and_info_dict():
    r = compute_reward(dmg_b2r=np.array([0.0, 0.1]), dmg_r2b=np.array([0.1, 0.0]),
                       blue_strength=np.array([1.0, 1.0]), blue_won=np.array([False, True]),
                       blue_lost=np.array([True, False]), weights=RewardWeights())
    assert r.values.shape == (len(COMPONENTS), 2) == (10, 2)
    info = r.as_dict(1)
    assert list(info) == list(INFO_KEYS)
    assert info["reward/win_bonus"] == 10.0 and info["reward/loss_penalty"] == 0.0
    assert r.as_dict(0)["reward/loss_penalty"] == -10.0


def test_weights_reject_non_numbers_naming_the_field():
    with pytest.raises(ValueError, match="win_bonus"):
        RewardWeights(win_bonus=float("nan"))
    with pytest.raises(ValueError, match="time_penalty"):
        RewardWeights(time_penalty="slow")


def test_component_names_and_defaults_are_the_weights_fields():
    fields = dataclasses.fields(RewardWeights)
    assert COMPONENTS == tuple(field.name for field in fields)
    assert INFO_KEYS == (*(f"reward/{field.name}" for field in fields), "reward/total")
    np.testing.assert_array_equal(RewardWeights().as_array(),
                                  np.array([field.default for field in fields], np.float32))
