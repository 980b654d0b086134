"""Brigade and division commanders trained with SB3 PPO over frozen lower echelons:
runs, files, evaluations, the chain of frozen policies, the config files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from envs.battles.multi_observation import OBS_DIM, STATE_DIM
from envs.commanders.orders import ORDER_DIM
from envs.echelons.division_batch import ALLOWED
from models.mappo_files import save_policy
from models.mappo_policy import MAPPOPolicy
from training.echelons.brigade import brigade_battles, train_brigade
from training.echelons.config import BrigadeConfig, DivisionConfig
from training.echelons.division import load_frozen_brigade_policy, train_division
from training.echelons.trainer import evaluate_commander
from training.utils.freeze_policy import assert_frozen

TINY = dict(n_envs=4, n_steps=8, batch_size=16, n_epochs=1, total_timesteps=64,
            eval_freq=32, n_eval_episodes=4, checkpoint_freq=32, max_steps=60,
            enable_wandb=False, progress_bar=False, verbose=0)


def battalion_file(tmp_path):
    torch.manual_seed(0)
    policy = MAPPOPolicy(OBS_DIM + ORDER_DIM, 3, OBS_DIM + ORDER_DIM + STATE_DIM, n_agents=2)
    return str(save_policy(policy, tmp_path / "battalion.pt"))


def test_a_brigade_run_writes_its_files_and_evaluates(tmp_path):
    result = train_brigade(checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "logs"),
                           battalion_policy=battalion_file(tmp_path), **TINY)
    assert result.final_checkpoint == tmp_path / "ck" / "ppo_brigade_final.zip"
    assert result.final_checkpoint.is_file()
    assert (tmp_path / "ck" / "ppo_brigade_32_steps.zip").is_file()
    steps = [s for s, _ in result.evaluations]
    assert steps[0] >= 32 and len(steps) >= 2
    metrics = result.evaluations[-1][1]
    assert sum(metrics[f"brigade/{k}_rate"] for k in ("win", "draw", "loss")) == pytest.approx(1)
    frozen = load_frozen_brigade_policy(result.final_checkpoint)
    assert_frozen(frozen.policy)
    # The same battles, the same deterministic commands: the same outcomes.
    config = BrigadeConfig(**{k: v for k, v in TINY.items()})
    first = evaluate_commander(frozen, brigade_battles(config, 4), 4, seed=3)
    again = evaluate_commander(frozen, brigade_battles(config, 4), 4, seed=3)
    np.testing.assert_array_equal(first, again)


def test_a_division_run_commands_frozen_brigadiers_within_their_commands(tmp_path):
    brigade = train_brigade(checkpoint_dir=str(tmp_path / "b"), log_dir=str(tmp_path / "lb"),
                            **TINY)
    result = train_division(checkpoint_dir=str(tmp_path / "d"), log_dir=str(tmp_path / "ld"),
                            brigade_policy=str(brigade.final_checkpoint),
                            battalion_policy=battalion_file(tmp_path), **TINY)
    assert (tmp_path / "d" / "ppo_division_final.zip").is_file()
    assert "division/win_rate" in result.evaluations[-1][1]
    # The frozen brigadier's drills always lie within the command he was given.
    from training.echelons.division import division_battles

    config = DivisionConfig(**TINY)
    battles = division_battles(config, 3, load_frozen_brigade_policy(brigade.final_checkpoint))
    battles.reset(np.arange(3), [0, 1, 2], np.zeros(3, np.int64))
    for command in range(6):
        commands = np.full((3, 2), command)
        drills = battles.drills(commands)
        assert ALLOWED[command][drills].all()


def test_a_battalion_policy_of_the_wrong_shape_is_refused(tmp_path):
    policy = MAPPOPolicy(OBS_DIM, 3, OBS_DIM + STATE_DIM, n_agents=2)
    path = save_policy(policy, tmp_path / "plain.pt")
    with pytest.raises(ValueError, match="obs_dim"):
        train_brigade(battalion_policy=str(path), checkpoint_dir=str(tmp_path / "ck"),
                      log_dir=str(tmp_path / "logs"), **TINY)
