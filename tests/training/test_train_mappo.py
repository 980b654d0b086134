"""MAPPO training: runs, checkpoints, resume, curriculum, team self-play, CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from envs.battles.multi_observation import CRITIC_STATE_DIM, OBS_DIM
from envs.commanders.doctrine import ConcentratingCommander, DisciplinedCommander, InStepCommander
from models.mappo_policy import MAPPOPolicy
from tests.forked import run_module
from tests.training.conftest import record_teachers
from training.mappo.battles import play_team_battles
from training.mappo.config import MAPPOConfig
from training.mappo.trainer import MAPPOTrainer
from training.self_play import (
    TeamOpponentPool,
    evaluate_team_vs_pool,
    nash_exploitability_proxy,
    pool_opponent_win_rates,
)
from training.train_mappo import (
    CHECKPOINT_NAME,
    load_checkpoint,
    policy_from_checkpoint,
    train_mappo,
)

ROOT = Path(__file__).resolve().parents[2]
ROLLOUT = 8 * 16


def tiny(tmp_path, **changes):
    settings = dict(n_envs=8, n_steps=16, batch_size=128, n_epochs=1, max_steps=60,
                    total_timesteps=2 * ROLLOUT, checkpoint_freq=ROLLOUT, eval_freq=ROLLOUT,
                    n_eval_episodes=4, checkpoint_dir=str(tmp_path / "ck"),
                    log_dir=str(tmp_path / "logs"), elo_registry_path=str(tmp_path / "elo.json"),
                    self_play_pool_dir=str(tmp_path / "pool"), enable_wandb=False,
                    progress_bar=False, warm_start_doctrine=None)
    settings.update(changes)
    return settings


def test_bad_settings_are_named(tmp_path):
    with pytest.raises(ValueError, match="n_blu"):
        train_mappo(**tiny(tmp_path), n_blu=2)
    with pytest.raises(ValueError, match="n_red"):
        MAPPOConfig(n_red=7)
    with pytest.raises(ValueError, match="total_timesteps"):
        train_mappo(**tiny(tmp_path, total_timesteps=ROLLOUT - 1))
    with pytest.raises(ValueError, match="curriculum_initial_stage"):
        MAPPOConfig(curriculum_initial_stage="5v5")
    with pytest.raises(FileNotFoundError):
        train_mappo(**tiny(tmp_path), resume=tmp_path / "missing.pt")


def test_a_run_learns_logs_and_checkpoints(tmp_path):
    result = train_mappo(**tiny(tmp_path))
    assert result.total_steps == 2 * ROLLOUT
    assert len(result.history) == 2
    last = result.history[-1]
    assert not any(key.startswith("warm_start/") for key in result.history[0])  # none ran
    for key in ("train/policy_loss", "train/value_loss", "train/entropy", "train/total_loss",
                "time/total_steps", "time/episodes", "eval/win_rate", "elo/team_rating"):
        assert key in last, key
    assert (tmp_path / "logs" / "mappo").is_dir()  # TensorBoard events
    data = load_checkpoint(result.final_checkpoint)
    assert data.counters["total_steps"] == 2 * ROLLOUT
    assert MAPPOPolicy(**data.kwargs).kwargs == result.policy.kwargs
    restored = policy_from_checkpoint(result.final_checkpoint)
    obs = torch.rand(5, OBS_DIM)
    state = torch.rand(5, CRITIC_STATE_DIM)
    torch.testing.assert_close(restored.act(obs, deterministic=True)[0],
                               result.policy.act(obs, deterministic=True)[0])
    torch.testing.assert_close(restored.get_value(state), result.policy.get_value(state))
    with pytest.raises(ValueError, match="not a"):
        bad = tmp_path / "bad.pt"
        bad.write_bytes(b"not a checkpoint")
        load_checkpoint(bad)


def test_a_resumed_run_steps_at_the_learning_rate_it_is_given(tmp_path):
    train_mappo(**tiny(tmp_path, total_timesteps=ROLLOUT, learning_rate=3e-4))
    periodic = tmp_path / "ck" / CHECKPOINT_NAME
    resumed = MAPPOTrainer(MAPPOConfig(**tiny(tmp_path, learning_rate=1e-5)), resume=periodic)
    assert [group["lr"] for group in resumed.optimizer.param_groups] == [1e-5]
    # Adam's moments are the saved run's.
    saved = load_checkpoint(periodic).optimizer["state"]
    state = resumed.optimizer.state_dict()["state"]
    assert state.keys() == saved.keys() and all(
        torch.equal(state[k]["exp_avg"], saved[k]["exp_avg"]) for k in saved)


def test_resume_restores_counters_optimiser_and_generators(tmp_path, monkeypatch):
    # Battles of 16 steps: every rollout finishes some, so the episode counter moves.
    first = train_mappo(**tiny(tmp_path, total_timesteps=2 * ROLLOUT, max_steps=16))
    periodic = tmp_path / "ck" / CHECKPOINT_NAME
    saved = load_checkpoint(periodic)
    assert saved.counters["total_steps"] == 2 * ROLLOUT
    assert saved.counters["episodes"] == first.episodes > 0

    import training.train_mappo as trainer

    seen = {}
    original = trainer.TrainingBattles.__init__

    def spy(self, config, n_blue, n_red, rng):  # what the resumed run starts from
        seen["rng"] = rng.bit_generator.state
        seen["torch"] = torch.get_rng_state()
        original(self, config, n_blue, n_red, rng)

    monkeypatch.setattr(trainer.TrainingBattles, "__init__", spy)
    second = train_mappo(**tiny(tmp_path, total_timesteps=4 * ROLLOUT, max_steps=16),
                         resume=periodic)
    assert seen["rng"] == saved.rng["numpy"]
    assert torch.equal(seen["torch"], saved.rng["torch"])
    assert second.total_steps == 4 * ROLLOUT
    assert len(second.history) == 2
    assert second.history[0]["time/total_steps"] == 3 * ROLLOUT
    assert second.episodes == first.episodes + sum(h["reward/n_episodes"]
                                                   for h in second.history)
    # The optimiser went on from its saved moments (Adam's step count grew).
    final = load_checkpoint(second.final_checkpoint)
    steps_before = saved.optimizer["state"][0]["step"]
    assert final.optimizer["state"][0]["step"] > steps_before


def test_the_critic_warm_up_holds_the_actor_and_resumes_on_its_clock(tmp_path):
    trainer = MAPPOTrainer(MAPPOConfig(**tiny(tmp_path, critic_warmup_steps=ROLLOUT + 1)))
    start = {name: tensor.clone() for name, tensor in trainer.policy.state_dict().items()}
    trainer.learn()
    assert [h["train/actor_frozen"] for h in trainer.history] == [1.0, 1.0]
    for h in trainer.history:  # the diagnostics of every update
        assert np.isfinite(h["train/explained_variance"]) and h["train/advantage_std"] > 0
    moved = {name for name, tensor in trainer.policy.state_dict().items()
             if not torch.equal(tensor, start[name])}
    assert moved and all(name.startswith("critic.") for name in moved), moved
    trainer.save(tmp_path / "ck" / CHECKPOINT_NAME)
    assert load_checkpoint(tmp_path / "ck" / CHECKPOINT_NAME).counters["ppo_steps"] == 2 * ROLLOUT
    # Resumed past the warm-up, the actor trains; a run without one trains it at once.
    resumed = train_mappo(**tiny(tmp_path, critic_warmup_steps=ROLLOUT + 1,
                                 total_timesteps=3 * ROLLOUT),
                          resume=tmp_path / "ck" / CHECKPOINT_NAME)
    assert [h["train/actor_frozen"] for h in resumed.history] == [0.0]
    plain = train_mappo(**tiny(tmp_path / "plain"))
    assert [h["train/actor_frozen"] for h in plain.history] == [0.0, 0.0]


def test_curriculum_promotion_swaps_the_battles(tmp_path):
    # On a 60 m field a passive Red (level 1) is always in reach, so Blue's random
    # volleys win about a third of the battles and the scheduler promotes on its own.
    result = train_mappo(**tiny(
        tmp_path, curriculum=True, curriculum_threshold=0.25, curriculum_window=4,
        map_width=60.0, map_height=60.0, red_level=1, max_steps=150, n_steps=75,
        batch_size=600, total_timesteps=16 * 8 * 75))
    sizes = [(h["curriculum/n_blue"], h["curriculum/n_red"]) for h in result.history]
    assert sizes[0] == (1, 1)
    assert (2, 1) in sizes and sizes[-1] == (2, 2), sizes
    promotions = [h["curriculum/promotion_step"] for h in result.history
                  if "curriculum/promotion_step" in h]
    assert len(promotions) == 2
    assert load_checkpoint(result.final_checkpoint).extras["curriculum"]["stage"] == 2


def test_team_self_play_from_the_config(tmp_path):
    result = train_mappo(**tiny(tmp_path, enable_self_play=True, self_play_snapshot_freq=ROLLOUT,
                                self_play_eval_freq=ROLLOUT, self_play_n_eval_episodes=4,
                                self_play_exploitability_episodes=2,
                                self_play_scripted_share=0.5, total_timesteps=3 * ROLLOUT))
    pool = TeamOpponentPool(tmp_path / "pool")
    assert pool.size == 3
    assert "self_play/win_rate_vs_pool" in result.history[-1]
    assert "self_play/exploitability" in result.history[-1]
    assert (tmp_path / "elo.json").is_file()


def test_team_evaluation_counts_draws_for_nobody(tmp_path):
    torch.manual_seed(0)
    policy = MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=2)
    pool = TeamOpponentPool(tmp_path / "pool", max_size=3)
    pool.add(MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=2), 1)
    pool.add(MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=1), 2)
    # Ten steps are too few for anyone to win: every battle is a draw.
    short = {"max_steps": 10}
    assert evaluate_team_vs_pool(policy, pool.sample_latest(), n_episodes=6,
                                 env_kwargs=short) == 0.0
    assert pool_opponent_win_rates(policy, pool, n_episodes_per_opponent=4,
                                   env_kwargs=short) == [0.0, 0.0]
    assert nash_exploitability_proxy(policy, pool, n_episodes_per_opponent=4,
                                     env_kwargs=short) == 0.0
    # Same seed, same battles and the same sampled orders: on a 150 m field battles
    # are decided, so the outcomes really depend on both.
    small = {"map_width": 150.0, "map_height": 150.0}
    opponent = pool.sample_latest()
    runs = [play_team_battles(policy, opponent, n_episodes=24, seed=3, env_kwargs=small)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0], runs[1])
    assert (runs[0] != 0).any()
    other = play_team_battles(policy, opponent, n_episodes=24, seed=4, env_kwargs=small)
    assert (other != runs[0]).any()
    assert evaluate_team_vs_pool(policy, opponent, n_episodes=24, seed=3,
                                 env_kwargs=small) == float((runs[0] == 1).mean())
    with pytest.raises(ValueError, match="n_episodes"):
        evaluate_team_vs_pool(policy, pool.sample_latest(), n_episodes=0)
    with pytest.raises(ValueError, match="env_kwargs"):
        evaluate_team_vs_pool(policy, pool.sample_latest(), env_kwargs={"fog": True})
    with pytest.raises(ValueError, match="n_red"):
        evaluate_team_vs_pool(policy, pool.sample_latest(), env_kwargs={"n_red": 3})


def test_command_line_trains_and_resumes(tmp_path):
    overrides = [f"eval.checkpoint_dir={tmp_path / 'ck'}", f"logging.log_dir={tmp_path / 'logs'}",
                 f"elo.registry_path={tmp_path / 'elo.json'}", "env.num_envs=8",
                 "training.n_steps=16", "training.batch_size=128", "training.n_epochs=1",
                 f"training.total_timesteps={ROLLOUT}", f"eval.checkpoint_freq={ROLLOUT}",
                 "eval.n_eval_episodes=2", "env.max_steps=40", "wandb.enabled=false",
                 "training.warm_start_doctrine=null", "logging.progress_bar=false",
                 f"hydra.run.dir={tmp_path / 'hydra'}"]
    script = ROOT / "training" / "train_mappo.py"
    done = subprocess.run([sys.executable, str(script), *overrides], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "ck" / "mappo_policy_final.pt").is_file()
    budget = f"training.total_timesteps={ROLLOUT}"
    # The module form, in a process forked from a server that has the imports.
    log = tmp_path / "again.txt"
    code = run_module("training.train_mappo", [*[o for o in overrides if o != budget],
                                               f"training.total_timesteps={2 * ROLLOUT}",
                                               "resume.auto=true"],
                      cwd=tmp_path, log=log, timeout=300)
    assert code == 0, log.read_text()[-2000:]
    assert "Resuming from" in log.read_text()
    assert load_checkpoint(tmp_path / "ck" / "mappo_policy_final.pt").counters["total_steps"] == \
        2 * ROLLOUT
    assert load_checkpoint(tmp_path / "ck" / CHECKPOINT_NAME).counters["total_steps"] == 2 * ROLLOUT


def test_wandb_offline_run_is_written(tmp_path):
    result = train_mappo(**tiny(tmp_path, enable_wandb=True, wandb_project="mappo_test"))
    runs = list((tmp_path / "logs" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert list(runs[0].glob("run-*.wandb"))
    assert result.history[-1]["time/total_steps"] == 2 * ROLLOUT


@pytest.mark.parametrize("doctrine, teacher", [("disciplined", DisciplinedCommander),
                                               ("in_step", InStepCommander),
                                               ("concentrated", ConcentratingCommander)])
def test_the_team_imitates_the_doctrine_at_warm_start_hold_range(tmp_path, monkeypatch,
                                                                 doctrine, teacher):
    import training.mappo.warm_start as team_warm_start
    teachers = record_teachers(monkeypatch, team_warm_start)
    train_mappo(**tiny(tmp_path, warm_start_doctrine=doctrine, warm_start_steps=8 * 50,
                       warm_start_max_share=1.0, total_timesteps=8 * 50 + ROLLOUT,
                       warm_start_hold_range=70))
    assert [type(t) for t in teachers] == [teacher]
    assert [t.hold_range for t in teachers] == [70.0]
    assert MAPPOConfig().warm_start_hold_range == 75.0  # 2v2's default (docs/training.md)


def test_the_team_imitates_the_in_step_doctrine_at_warm_start_exposed_range(tmp_path,
                                                                            monkeypatch):
    import training.mappo.warm_start as team_warm_start
    teachers = record_teachers(monkeypatch, team_warm_start)
    train_mappo(**tiny(tmp_path, warm_start_doctrine="in_step", warm_start_steps=8 * 50,
                       warm_start_max_share=1.0, total_timesteps=8 * 50 + ROLLOUT,
                       warm_start_exposed_range=120))
    assert [t.exposed_range for t in teachers] == [120.0]
    assert MAPPOConfig().warm_start_exposed_range == 100.0  # 2v2's default (docs/training.md)
    with pytest.raises(ValueError, match="warm_start_exposed_range"):
        MAPPOConfig(warm_start_exposed_range=-5)


@pytest.mark.parametrize("normalize", [False, True])
def test_doctrine_warm_start_teaches_the_actor_and_counts_in_the_budget(tmp_path, normalize):
    import math

    from envs.commanders.doctrine import DisciplinedCommander
    from training.mappo.battles import make_team_battles

    warm = train_mappo(**tiny(tmp_path / "warm", warm_start_doctrine="disciplined",
                              warm_start_steps=8 * 400, total_timesteps=8 * 400 + ROLLOUT,
                              warm_start_max_share=1.0, n_epochs=1, eval_freq=10**6,
                              normalize_observations=normalize))
    assert warm.total_steps == 8 * 400 + ROLLOUT
    if normalize:  # fitted to the demonstrations: the distance's spread is far below 1
        spread = warm.policy.actor.standardize.std
        assert 0.01 <= spread.min() < 0.5 and warm.policy.critic.standardize.std.min() < 0.5
    assert len(warm.history) == 1  # the demonstrations used the rest of the budget
    # The clone's fit is logged with the first update.
    fit = warm.history[0]
    assert 0 < fit["warm_start/action_loss"] < 1 and np.isfinite(fit["warm_start/value_loss"])
    assert 0 < fit["warm_start/samples"] <= 8 * 400 * 2  # Blue's battalion-steps
    torch.manual_seed(0)
    fresh = MAPPOPolicy(**warm.policy.kwargs)
    # Unseen battles: how close are the policies' orders to the doctrine's?
    battles = make_team_battles(32, 2, 2)
    battles.reset(np.arange(32), list(range(900, 932)), np.zeros(32, np.int64))
    teacher = DisciplinedCommander(map_diagonal=math.hypot(1000, 1000))
    errors = {"warm": [], "fresh": []}
    for _ in range(60):
        obs = battles.observation[:, :2].reshape(-1, OBS_DIM)
        taught = np.asarray(teacher.predict(obs[:, :25])[0], np.float32)
        for name, policy in (("warm", warm.policy), ("fresh", fresh)):
            mean = policy.act(obs, deterministic=True)[0].numpy()
            errors[name].append(((np.clip(mean, [-1, -1, 0], 1) - taught) ** 2).mean())
        orders = np.zeros((32, 4, 3), np.float32)
        orders[:, :2] = taught.reshape(32, 2, 3)
        orders[:, 2:] = battles.scripted_actions(np.array([2, 3]), 5)
        battles.step(orders)
    assert np.mean(errors["warm"]) < 0.5 * np.mean(errors["fresh"]), errors
