"""Self-play: the opponent pool, swapping Red in the training battles, evaluation."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure

from envs.commanders.doctrine import DisciplinedCommander, ScriptedCommander
from envs.vec_env import BattalionVecEnv
from tests.training.conftest import tiny_config
from training import TrainingConfig, train
from training.artifacts import CheckpointManifest
from training.elo import EloRegistry
from training.self_play import (
    OpponentPool,
    SelfPlayCallback,
    WinRateVsPoolCallback,
    evaluate_vs_pool,
)


def tiny_model(env=None) -> PPO:
    return PPO("MlpPolicy", env or BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu",
               seed=0)


def test_pool_adds_evicts_samples_and_reloads(tmp_path):
    pool = OpponentPool(tmp_path, max_size=3)
    model = tiny_model()
    for version in range(1, 6):
        pool.add(model, version)
    names = [p.name for p in pool.snapshot_paths]
    assert names == ["snapshot_v000003.zip", "snapshot_v000004.zip", "snapshot_v000005.zip"]
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # evicted files deleted
    assert pool.size == 3 and pool.latest_version == 5
    assert pool.name_of(pool.sample_latest()) == "snapshot_v000005"
    with pytest.raises(ValueError, match="version"):
        pool.add(model, 4)
    again = OpponentPool(tmp_path, max_size=3)
    assert again.snapshot_paths == pool.snapshot_paths


def test_sampling_is_reproducible_with_a_seeded_generator(tmp_path):
    pool = OpponentPool(tmp_path, max_size=5)
    for version in range(1, 6):
        pool.add(tiny_model(), version)

    def draws(seed):
        rng = np.random.default_rng(seed)
        return [pool.name_of(pool.sample(rng)) for _ in range(10)]

    assert draws(3) == draws(3)
    assert len(set(draws(3))) > 1
    assert OpponentPool(tmp_path / "empty").sample() is None


def test_foreign_files_are_reported_and_corrupt_snapshots_refused(tmp_path, caplog):
    pool = OpponentPool(tmp_path, max_size=2)
    pool.add(tiny_model(), 1)
    (tmp_path / "notes.txt").write_text("mine")
    with caplog.at_level(logging.WARNING):
        assert OpponentPool(tmp_path).size == 1
    assert "notes.txt" in caplog.text and (tmp_path / "notes.txt").exists()
    (tmp_path / "snapshot_v000002.zip").write_bytes(b"truncated")
    with pytest.raises(ValueError, match="snapshot_v000002.zip"):
        OpponentPool(tmp_path)


def test_shrinking_the_pool_keeps_the_newest_and_deletes_nothing(tmp_path, caplog):
    pool = OpponentPool(tmp_path, max_size=4)
    for version in range(1, 5):
        pool.add(tiny_model(), version)
    with caplog.at_level(logging.WARNING):
        small = OpponentPool(tmp_path, max_size=2)
    assert [p.name for p in small.snapshot_paths] == ["snapshot_v000003.zip",
                                                      "snapshot_v000004.zip"]
    assert len(list(tmp_path.glob("*.zip"))) == 4 and "newest 2" in caplog.text


def test_callback_swaps_red_and_keeps_a_scripted_share(tmp_path):
    # Scripted L1 Red stands still; a pool member moves: Red's behaviour shows who commands.
    vec = BattalionVecEnv(20, curriculum_level=1, randomize_terrain=False)
    vec.seed(0)
    model = tiny_model(vec)
    pool = OpponentPool(tmp_path / "pool")
    manifest = CheckpointManifest(tmp_path / "manifest.jsonl")
    registry = EloRegistry(path=None)
    callback = SelfPlayCallback(pool, snapshot_freq=1, vec_env=vec, manifest=manifest,
                                scripted_share=0.25, seed=1, registry=registry,
                                agent_name="learner")
    callback.init_callback(model)
    callback.snapshot()
    callback.snapshot()
    assignment = callback.deal_opponents()
    policies = vec.get_attr("red_policy")
    scripted = [i for i, p in enumerate(policies) if p is None]
    assert len(scripted) == 5  # 25 % of 20 battles keep their scripted opponent
    assert sorted(sum(assignment.values(), [])) == sorted(set(range(20)) - set(scripted))
    assert len(assignment) == 2  # both pool members are in play

    vec.reset()
    x_before = vec.battle_state.x[:, 1].copy()
    for _ in range(10):
        vec.step(np.zeros((20, 3), np.float32))
    moved = np.abs(vec.battle_state.x[:, 1] - x_before) > 1e-3
    assert not moved[scripted].any()
    assert moved[[i for i in range(20) if i not in scripted]].mean() > 0.8

    rows = [r for r in manifest.rows() if r["type"] == "self_play_snapshot"]
    assert len(rows) == 2
    assert registry.get_rating("snapshot_v000001") == registry.get_rating("learner")


def test_evaluate_vs_pool_uses_the_given_battle_settings():
    assert evaluate_vs_pool(DisciplinedCommander(), ScriptedCommander(1), 20, seed=0) >= 0.9
    # With a 5-step limit nobody can win: the settings are really applied.
    assert evaluate_vs_pool(DisciplinedCommander(), ScriptedCommander(1), 10, seed=0,
                            env_kwargs={"max_steps": 5}) == 0.0
    with pytest.raises(ValueError, match="n_episodes"):
        evaluate_vs_pool(DisciplinedCommander(), ScriptedCommander(1), 0)


def test_win_rate_callback_logs_and_rates_against_members(tmp_path):
    pool = OpponentPool(tmp_path)
    model = tiny_model()
    model.set_logger(configure(None, []))
    pool.add(model, 1)
    registry = EloRegistry(path=None)
    registry.set_rating("snapshot_v000001", 1000.0)
    callback = WinRateVsPoolCallback(pool, eval_freq=1, n_eval_episodes=4, registry=registry,
                                     agent_name="learner", env_kwargs={"max_steps": 50})
    callback.init_callback(model)
    win_rate = callback.evaluate()
    assert 0.0 <= win_rate <= 1.0
    assert registry.get_game_count("learner") == 4
    assert "self_play/win_rate_vs_pool" in callback.logger.name_to_value


def test_the_seeds_second_quick_start_form_runs_self_play(tmp_path):
    settings = tiny_config(tmp_path, self_play_pool_dir=str(tmp_path / "pool"),
                           self_play_snapshot_freq=512, self_play_eval_freq=512,
                           self_play_n_eval_episodes=2, elo_registry_path=str(
                               tmp_path / "elo.json"), enable_wandb=True,
                           wandb_project="my_project")
    config = TrainingConfig(total_timesteps=1536, curriculum_level=3, enable_self_play=True,
                            **settings)
    model = train(config)
    assert model.num_timesteps == 1536
    snapshots = sorted(p.name for p in (tmp_path / "pool").glob("*.zip"))
    assert snapshots == ["snapshot_v000001.zip", "snapshot_v000002.zip",
                         "snapshot_v000003.zip"]
    rows = CheckpointManifest(tmp_path / "ck" / "manifest.jsonl").rows()
    assert sum(r["type"] == "self_play_snapshot" for r in rows) == 3
    registry = EloRegistry(tmp_path / "elo.json")
    ratings = registry.all_ratings()
    assert {"snapshot_v000001", "snapshot_v000002", "snapshot_v000003"} <= set(ratings)
    learners = [name for name in ratings if not name.startswith("snapshot_")]
    assert len(learners) == 1  # the W&B run id names the learner
    assert registry.get_game_count(learners[0]) >= 2  # evaluated against the pool


def test_the_pool_member_acts_in_the_learners_mode():
    class Recorder(ScriptedCommander):
        flags: list = []

        def predict(self, observation, deterministic=True):
            self.flags.append(deterministic)
            return super().predict(observation, deterministic)

    red = Recorder(5)
    evaluate_vs_pool(ScriptedCommander(5), red, 4, seed=0, env_kwargs={"max_steps": 20})
    assert set(red.flags) == {True}
    red.flags.clear()
    evaluate_vs_pool(ScriptedCommander(5), red, 4, deterministic=False, seed=0,
                     env_kwargs={"max_steps": 20})
    assert set(red.flags) == {False}
