"""GuidedPPO: the SB3 trainer's update from the PPO core, its pull toward the teacher, its
diagnostics; the imitation's share of the budget; the doctrine as a named opponent."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from envs.commanders.doctrine import DisciplinedCommander
from tests.training.conftest import tiny_config
from training import train
from training.ppo.battles import make_training_env
from training.ppo.checkpoints import load_ppo
from training.ppo.config import TrainingConfig
from training.ppo.guided import GuidedPPO
from training.ppo.opponents import NAMED_OPPONENTS, resolve_opponent
from training.ppo.warm_start import collect_demonstrations
from training.train import _new_model

DIAGNOSTICS = ("train/explained_variance", "train/approx_kl", "train/clip_fraction",
               "train/entropy_loss", "train/std", "train/value_loss",
               "train/advantage_std", "train/return_mean", "train/return_std",
               "train/teacher_coef", "rollout/win_rate", "rollout/draw_rate",
               "rollout/loss_rate")


def _distance_to_teacher(model, observations: np.ndarray) -> float:
    orders = model.teacher.predict(observations)[0]  # the doctrine the run imitates
    with torch.no_grad():
        mode = model.policy.get_distribution(torch.as_tensor(observations)).mode().numpy()
    return float(((mode - orders) ** 2).mean())


@pytest.mark.parametrize("coef, orders", [(0.0, "gaussian"), (50.0, "gaussian"),
                                          (50.0, "choices")])
def test_the_teacher_term_pulls_the_policy_toward_the_doctrine(tmp_path, coef, orders):
    # The plain doctrine and opponents, whose orders a few updates can approach: the test
    # is of the pull, not of the default teacher.
    config = TrainingConfig(**tiny_config(tmp_path, n_epochs=4, teacher_coef=coef,
                                          teacher_decay_steps=10**6, learning_rate=1e-3,
                                          warm_start_doctrine="disciplined",
                                          warm_start_fall_back_uphill=False,
                                          training_opponents=["scripted_l5", "doctrine"],
                                          policy_orders=orders))
    env = make_training_env(config)
    model = _new_model(config, env)
    held_out = collect_demonstrations(env, model.teacher, 2000, config.gamma)
    before = _distance_to_teacher(model, held_out.observations)
    model.learn(16 * 256)
    after = _distance_to_teacher(model, held_out.observations)
    if coef:
        assert after < 0.6 * before
        assert model.logger.name_to_value["train/teacher_loss"] > 0
    else:  # plain PPO does not head for the doctrine
        assert after > 0.8 * before
        assert "train/teacher_loss" not in model.logger.name_to_value


def test_every_update_records_the_diagnostics(tmp_path):
    # 256 steps fit the observation statistics; two rollouts of 64 steps a battle then
    # finish battles (max_steps 100), so the rollout's win rates are logged too.
    model = train(total_timesteps=768, **tiny_config(tmp_path))
    assert isinstance(model, GuidedPPO)
    values = model.logger.name_to_value
    # The last update's numbers are dumped at the end of train(); they went to TensorBoard.
    events = list((tmp_path / "logs").rglob("events.out.tfevents*"))
    assert events and not values  # dumped, so the logger is empty again
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set()
    for event in events:
        accumulator = EventAccumulator(str(event))
        accumulator.Reload()
        tags |= set(accumulator.Tags()["scalars"])
    assert set(DIAGNOSTICS) <= tags


def test_the_weight_falls_linearly_to_zero_from_the_first_update(tmp_path):
    config = TrainingConfig(**tiny_config(tmp_path, teacher_coef=2.0, teacher_decay_steps=1000,
                                          warm_start_doctrine="disciplined"))
    model = _new_model(config, make_training_env(config))
    model.num_timesteps = 5000
    assert model.current_teacher_coef() == 2.0  # before the first update: the full weight
    model.teacher_start = 5000  # what the first update at step 5000 records
    model.num_timesteps = 5250
    assert model.current_teacher_coef() == pytest.approx(1.5)
    model.num_timesteps = 7000
    assert model.current_teacher_coef() == 0.0
    without = _new_model(config.replace(warm_start_doctrine=None),
                         make_training_env(config))
    assert without.teacher is None and without.current_teacher_coef() == 0.0


def test_the_teacher_is_not_saved_and_a_resumed_run_gets_it_back(tmp_path):
    model = train(total_timesteps=1024, **tiny_config(
        tmp_path, warm_start_doctrine="disciplined", warm_start_steps=512, teacher_coef=0.5,
        teacher_decay_steps=2000))
    final = tmp_path / "ck" / "ppo_battalion_s42_c5_final.zip"
    loaded = load_ppo(final, algorithm=GuidedPPO)
    assert isinstance(loaded, GuidedPPO) and loaded.teacher is None
    assert loaded.teacher_coef == 0.5 and loaded.teacher_start == model.teacher_start
    resumed = train(total_timesteps=1536, resume=final, **tiny_config(
        tmp_path, warm_start_doctrine="disciplined", teacher_coef=0.5,
        teacher_decay_steps=2000))
    assert isinstance(resumed.teacher, DisciplinedCommander)
    assert resumed.teacher_start == model.teacher_start  # the decay goes on, not restarts
    assert isinstance(load_ppo(final), type(loaded).__mro__[1])  # plain PPO still loads


@pytest.mark.parametrize("kwargs, field", [
    (dict(teacher_coef=-1.0), "teacher_coef"), (dict(teacher_coef=float("nan")), "teacher_coef"),
    (dict(teacher_decay_steps=0), "teacher_decay_steps"),
    (dict(teacher=object()), "teacher"), (dict(clip_range_vf=0.2), "clip_range_vf")])
def test_guided_ppo_names_a_bad_argument(tmp_path, kwargs, field):
    env = make_training_env(TrainingConfig(**tiny_config(tmp_path)))
    with pytest.raises(ValueError, match=field):
        GuidedPPO("MlpPolicy", env, **kwargs)


@pytest.mark.parametrize("field, value", [("teacher_coef", -0.5), ("teacher_decay_steps", 0),
                                          ("warm_start_max_share", 1.5)])
def test_the_new_settings_are_checked_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        TrainingConfig(**{field: value})


def test_a_short_run_caps_the_imitation_and_says_so(tmp_path, caplog):
    config = TrainingConfig(**tiny_config(tmp_path, warm_start_doctrine="disciplined",
                                          warm_start_steps=300_000))
    with caplog.at_level(logging.WARNING):
        assert config.warm_start_budget(2048) == int(0.3 * 2048)
    assert "warm start cut from 300000 to 614" in caplog.text
    caplog.clear()
    assert config.warm_start_budget(10**7) == 300_000 and not caplog.text
    # The run trains with PPO after the capped imitation: its policy moved past it. The
    # imitation's 612 steps (whole rounds of 4 battles), then whole rollouts of 256 until
    # the 2,048 are trained: six, the last passing them.
    model = train(total_timesteps=2048, **tiny_config(
        tmp_path, warm_start_doctrine="disciplined", warm_start_steps=300_000))
    assert model.num_timesteps == 612 + 6 * 256 and model._n_updates > 0


def test_the_doctrine_is_a_named_opponent_in_training_and_evaluation(tmp_path):
    assert "doctrine" in NAMED_OPPONENTS
    opponent = resolve_opponent("doctrine", map_diagonal=500.0)
    assert isinstance(opponent.policy, DisciplinedCommander)
    assert opponent.policy.map_diagonal == 500.0
    config = TrainingConfig(**tiny_config(tmp_path, training_opponents=["doctrine",
                                                                        "scripted_l2"]))
    env = make_training_env(config)
    red = env.get_attr("red_policy")
    assert isinstance(red[0], DisciplinedCommander) and red[1] is None
    assert red[0].map_diagonal == pytest.approx(np.hypot(1000.0, 1000.0))


def test_without_a_teacher_the_update_is_sb3s_own(tmp_path):
    """The core's loss, normalisation and gradient step reproduce ``PPO.train`` (to float
    rounding: the loss's terms are summed in another order)."""
    from stable_baselines3 import PPO

    config = TrainingConfig(**tiny_config(tmp_path, n_epochs=3, ent_coef=0.01))
    models = []
    for algorithm in (GuidedPPO, PPO):
        model = _new_model(config, make_training_env(config))
        if algorithm is PPO:  # the same model and rollout, updated by SB3's PPO.train
            model.__class__ = PPO
        models.append(model)
    models[1].policy.load_state_dict(models[0].policy.state_dict())
    for model in models:
        model.set_random_seed(7)  # the same battles and samples for both
        model.learn(256)
    for (name, a), b in zip(models[0].policy.state_dict().items(),
                            models[1].policy.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-5), name


def test_one_rule_decides_a_duel_in_training_and_in_evaluation():
    from training.ppo.evaluation import duel_outcomes

    info = {"blue_routed": np.array([0, 1, 1, 0], bool), "blue_destroyed": np.zeros(4, bool),
            "red_routed": np.array([1, 0, 1, 0], bool), "red_destroyed": np.zeros(4, bool)}
    assert duel_outcomes(info).tolist() == [1, -1, 0, 0]
