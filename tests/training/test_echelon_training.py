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


def brigade_observation(distances_m, strengths, diagonal=1000.0):
    """A brigade observation of len(distances_m) battalions: their strengths, and each
    one's nearest enemy at the given distance (None: no enemy in the fight)."""
    from envs.echelons.brigade_batch import N_SECTORS, NO_THREAT, brigade_obs_dim

    n = len(distances_m)
    obs = np.zeros(brigade_obs_dim(n), np.float32)
    obs[N_SECTORS:N_SECTORS + 2 * n:2] = strengths
    for i, d in enumerate(distances_m):
        block = NO_THREAT.copy() if d is None else np.array([d / diagonal, 1, 0, 1, 1])
        start = N_SECTORS + 2 * n + 5 * i
        obs[start:start + 5] = block
    return obs


def test_the_in_step_brigadier_holds_the_battalions_ahead_of_the_last():
    from envs.echelons.doctrine import InStepBrigadier
    from envs.options import MacroAction

    advance, hold = int(MacroAction.ADVANCE_SECTOR), int(MacroAction.DEFEND_POSITION)
    brigadier = InStepBrigadier(3, map_diagonal=1000.0, step_tolerance=20.0)
    # 150 m and 165 m are within 20 m of the last (180 m); 100 m is not.
    obs = brigade_observation([100.0, 165.0, 180.0], [1, 1, 1])
    assert brigadier.predict(obs)[0].tolist() == [hold, advance, advance]
    # A battalion out of the fight, or without an enemy in it, sets nobody's pace.
    obs = brigade_observation([100.0, 115.0, 400.0], [1, 1, 0])
    assert brigadier.predict(obs)[0].tolist() == [advance, advance, advance]
    obs = brigade_observation([100.0, 115.0, None], [1, 1, 1])
    assert brigadier.predict(obs)[0].tolist() == [advance, advance, advance]
    batch = np.stack([brigade_observation([100.0, 165.0, 180.0], [1, 1, 1])] * 2)
    assert brigadier.predict(batch)[0].shape == (2, 3)
    with pytest.raises(ValueError, match="observed with 18"):
        InStepBrigadier(2, 1000.0).predict(obs)


def test_a_brigade_warm_start_clones_the_in_step_brigadier(tmp_path):
    from envs.echelons.doctrine import InStepBrigadier

    settings = {**TINY, "n_envs": 8, "max_steps": 100, "map_width": 500.0,
                "map_height": 500.0}
    # The whole budget imitates, then the one PPO rollout that follows every warm start
    # (8 battles x 8 commands, one pass): the final policy is the clone, barely moved.
    result = train_brigade(checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "logs"),
                           warm_start_doctrine="in_step", warm_start_steps=4000,
                           warm_start_max_share=1.0, warm_start_epochs=30,
                           warm_start_learning_rate=3e-3,
                           **{**settings, "total_timesteps": 4000})
    assert result.model.num_timesteps == 4000 + 8 * 8 and result.model._n_updates == 1
    # The clone gives the brigadier's drills on battles it was not shown.
    battles = brigade_battles(BrigadeConfig(**settings), 16)
    battles.reset(np.arange(16), [10_000 + i for i in range(16)], np.zeros(16, np.int64))
    teacher = InStepBrigadier(2, float(np.hypot(500.0, 500.0)))
    observations = []
    for _ in range(6):
        obs = battles.observe()
        observations.append(obs)
        battles.step(teacher.predict(obs)[0])
    obs = np.concatenate(observations)
    clone = load_frozen_brigade_policy(result.final_checkpoint).predict(obs, deterministic=True)[0]
    assert np.mean(clone == teacher.predict(obs)[0]) > 0.9


def test_a_brigade_warm_start_counts_in_the_budget(tmp_path):
    result = train_brigade(checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "logs"),
                           warm_start_doctrine="in_step", warm_start_steps=40,
                           **{**TINY, "total_timesteps": 128})
    # 36 steps of imitation (9 rounds of 4 battles), then whole rollouts of 32 until the
    # 128 are trained: three, the last passing them.
    assert result.model.num_timesteps == 36 + 3 * 32
    # Evaluations start after the imitation, one at each multiple of eval_freq passed, and
    # one at the end.
    steps = [s for s, _ in result.evaluations]
    assert steps == [40, 64, 96, 128, 132]


def test_a_brigade_doctrine_must_be_known():
    with pytest.raises(ValueError, match="warm_start_doctrine='disciplined' is invalid"):
        BrigadeConfig(warm_start_doctrine="disciplined")
