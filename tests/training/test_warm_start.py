"""Warm start: the policy imitates the doctrine before PPO."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from envs.commanders.doctrine import DisciplinedCommander
from tests.training.conftest import record_teachers, tiny_config
from training import train
from training.common.imitation import make_doctrine
from training.ppo.battles import make_training_env
from training.ppo.config import TrainingConfig
from training.ppo.warm_start import (
    Demonstrations,
    behaviour_clone,
    collect_demonstrations,
    imitate,
)
from training.train import _new_model


@pytest.mark.parametrize("orders", ["gaussian", "choices"])
def test_cloned_policy_gives_the_doctrines_orders(orders):
    config = TrainingConfig(n_envs=16, n_steps=64, batch_size=512, enable_wandb=False,
                            warm_start_doctrine=None, policy_orders=orders)
    env = make_training_env(config)
    model = _new_model(config, env)
    teacher = DisciplinedCommander()
    held_out = collect_demonstrations(env, teacher, 4000, config.gamma)
    before = np.abs(model.predict(held_out.observations, deterministic=True)[0]
                    - held_out.actions).mean()
    used = imitate(model, env, make_doctrine("disciplined", 1000, 1000), 30_000, epochs=10)
    cloned = model.predict(held_out.observations, deterministic=True)[0]
    after = np.abs(cloned - held_out.actions).mean()
    assert used == 30_000 - 30_000 % 16
    assert after < 0.5 * before
    if orders == "choices":  # the march and the fire are the doctrine's own, not near them
        assert np.mean(cloned[:, [0, 2]] == held_out.actions[:, [0, 2]]) > 0.9


@pytest.mark.parametrize("margin", [0.0, 0.25])
def test_orders_at_a_bound_are_fitted_margin_past_it(margin):
    # Full march and hold fire sit at bounds of the order space, the wheel inside them.
    config = TrainingConfig(n_envs=2, enable_wandb=False, warm_start_doctrine=None, seed=0,
                            policy_orders="gaussian")
    model = _new_model(config, make_training_env(config))
    rng = np.random.default_rng(0)
    observations = rng.uniform(0, 1, (2048, model.observation_space.shape[0]))
    orders = np.tile(np.float32([1.0, 0.3, 0.0]), (2048, 1))
    behaviour_clone(model, Demonstrations(observations.astype(np.float32), orders,
                                          np.zeros(2048, np.float32)),
                    epochs=30, learning_rate=3e-3, margin=margin)
    obs = torch.as_tensor(observations[:256], dtype=torch.float32)
    mean = model.policy.get_distribution(obs).distribution.mean.detach().numpy()
    np.testing.assert_allclose(mean.mean(axis=0), [1 + margin, 0.3, -margin], atol=0.03)


def test_returns_are_discounted_within_episodes():
    config = TrainingConfig(n_envs=4, n_steps=64, batch_size=256, max_steps=40,
                            enable_wandb=False, training_opponents=["scripted_l1"])
    demos = collect_demonstrations(make_training_env(config), DisciplinedCommander(), 400,
                                   config.gamma)
    assert len(demos.observations) == len(demos.actions) == len(demos.returns) > 0
    assert np.isfinite(demos.returns).all()


def test_train_counts_demonstration_steps_in_the_budget(tmp_path):
    model = train(total_timesteps=1024, **tiny_config(
        tmp_path, warm_start_doctrine="disciplined", warm_start_steps=512,
        warm_start_max_share=0.5))
    assert model.num_timesteps == 1024


def test_the_imitated_doctrine_halts_at_warm_start_hold_range(tmp_path, monkeypatch):
    # The package exports the function train, which hides the module's name.
    teachers = record_teachers(monkeypatch, importlib.import_module("training.train"))
    train(total_timesteps=1024, **tiny_config(
        tmp_path, warm_start_doctrine="disciplined", warm_start_steps=512,
        warm_start_max_share=0.5, warm_start_hold_range=80))
    assert [teacher.hold_range for teacher in teachers] == [80.0]
    assert make_doctrine("disciplined", 1000, 1000).hold_range == 60.0  # the doctrine's own
    with pytest.raises(ValueError, match="warm_start_hold_range"):
        TrainingConfig(warm_start_hold_range=0)


def test_the_imitated_doctrine_falls_back_uphill_when_told(tmp_path, monkeypatch):
    # The package exports the function train, which hides the module's name.
    teachers = record_teachers(monkeypatch, importlib.import_module("training.train"))
    for fall_back in (True, False):
        train(total_timesteps=1024, **tiny_config(
            tmp_path / str(fall_back), warm_start_doctrine="disciplined",
            warm_start_steps=512, warm_start_max_share=0.5,
            warm_start_fall_back_uphill=fall_back))
    assert [teacher.fall_back_uphill for teacher in teachers] == [True, False]
    assert not make_doctrine("disciplined", 1000, 1000).fall_back_uphill  # the doctrine's own
    with pytest.raises(ValueError, match="warm_start_fall_back_uphill"):
        TrainingConfig(warm_start_fall_back_uphill="sometimes")


def test_unknown_doctrine_is_rejected():
    with pytest.raises(ValueError, match="warm_start_doctrine"):
        TrainingConfig(warm_start_doctrine="napoleon")
    with pytest.raises(ValueError, match="warm_start_doctrine='in_step'.*team doctrine"):
        TrainingConfig(warm_start_doctrine="in_step")  # it reads where the allies stand
    with pytest.raises(ValueError, match="doctrine"):
        make_doctrine("napoleon", 1000, 1000)


def test_only_the_disciplined_doctrine_closes_on_a_spent_enemy():
    assert make_doctrine("disciplined", 1000, 1000, spent_hold_range=60.0).spent_hold_range == 60.0
    assert make_doctrine("in_step", 1000, 1000).spent_hold_range is None
    with pytest.raises(ValueError, match="spent_hold_range=60.0 is invalid for doctrine='in_step'"):
        make_doctrine("in_step", 1000, 1000, spent_hold_range=60.0)


def test_team_cloning_without_a_finished_battle_warns_and_leaves_the_policy(caplog):
    import torch

    from envs.battles.multi_observation import CRITIC_STATE_DIM, OBS_DIM
    from models.mappo_policy import MAPPOPolicy
    from training.mappo.warm_start import TeamDemonstrations, clone_team

    policy = MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=2)
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    empty = TeamDemonstrations(np.zeros((0, OBS_DIM), np.float32),
                               np.zeros((0, CRITIC_STATE_DIM), np.float32),
                               np.zeros((0, 3), np.float32), np.zeros(0, np.float32),
                               np.zeros(0, np.int64))
    with caplog.at_level("WARNING"):
        losses = clone_team(policy, empty)
    assert all(np.isnan(v) for v in losses.values())
    assert "no battle ended" in caplog.text
    assert all(torch.equal(before[k], v) for k, v in policy.state_dict().items())
