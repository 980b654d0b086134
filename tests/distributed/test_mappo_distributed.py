"""MAPPO with distributed.enabled=true: rollouts and evaluation matches on a real local
Ray cluster equal the local ones bit for bit, and survive a killed worker."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("ray")

from envs.battles.multi_battalion_batch import RED  # noqa: E402
from envs.remote.cluster import import_ray  # noqa: E402
from tests.forked import run_module  # noqa: E402
from tests.training.test_batch_invariance import assert_same_rollout  # noqa: E402
from training.mappo.battles import DOCTRINE_TEAM  # noqa: E402
from training.mappo.config import MAPPOConfig  # noqa: E402
from training.mappo.trainer import MAPPOTrainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path, **changes) -> MAPPOConfig:
    settings = dict(n_envs=12, n_steps=40, total_timesteps=12 * 40 * 4, max_steps=30,
                    n_epochs=1, warm_start_doctrine=None, enable_wandb=False,
                    progress_bar=False, verbose=0, seed=7, checkpoint_dir=str(tmp_path / "ck"),
                    log_dir=str(tmp_path / "logs"))
    settings.update(changes)
    return MAPPOConfig(**settings)


def _pair(tmp_path):
    """A local and a distributed trainer on the same seed, with a sampling opponent dealt
    in some battles and Red learning in others."""
    local = MAPPOTrainer(_config(tmp_path / "local"))
    remote = MAPPOTrainer(_config(tmp_path / "remote", distributed=True,
                                  distributed_num_workers=2))
    torch.manual_seed(3)
    opponent = type(local.policy)(**local.policy.kwargs)
    for trainer in (local, remote):
        trainer.battles.deal([opponent], 0.5)
        trainer.battles.set_learning_side(RED, np.array([2, 7]))
    return local, remote


def test_distributed_training_equals_local_training_bit_for_bit(ray_cluster, tmp_path):
    local, remote = _pair(tmp_path)
    try:
        for _ in range(2):
            expected, got = local.collect_rollout(), remote.collect_rollout()
            assert_same_rollout(expected, got)
            assert expected.wins
            local.learn_from(expected)
            remote.learn_from(got)
        for a, b in zip(local.policy.state_dict().values(), remote.policy.state_dict().values(),
                        strict=True):
            assert torch.equal(a, b)
        assert remote.workers.n_workers == 2
    finally:
        remote.close()


def test_a_worker_killed_mid_rollout_is_replaced_and_nothing_is_lost(ray_cluster, tmp_path):
    local, remote = _pair(tmp_path)
    try:
        group = remote.workers.group
        victim = group.actors[0]

        killed = []

        # Kill worker 0 as soon as it holds its part of the rollout, not a fixed time after:
        # on a loaded machine a wait could outlast the part (test_runner's killed worker).
        def kill_worker_0() -> None:
            deadline = time.monotonic() + 60
            while 0 not in group.in_flight and time.monotonic() < deadline:
                time.sleep(0.0005)
            if 0 in group.in_flight:
                killed.append(victim)
                import_ray().kill(victim)

        killer = threading.Thread(target=kill_worker_0)
        killer.start()
        got = remote.collect_rollout()
        killer.join()
        assert killed, "the rollout ended before the worker could be killed"
        assert group.replacements == 1 and group.actors[0] is not victim
        expected = local.collect_rollout()
        assert_same_rollout(expected, got)  # its part re-run from where it stood: no battle lost
        assert sorted(got.episode_battles) == sorted(expected.episode_battles)
        assert_same_rollout(local.collect_rollout(), remote.collect_rollout())  # and it goes on
    finally:
        remote.close()


def test_evaluation_matches_on_the_workers_equal_local_ones(ray_cluster, tmp_path):
    field = dict(map_width=200.0, map_height=200.0, max_steps=120)
    local = MAPPOTrainer(_config(tmp_path / "local", **field))
    remote = MAPPOTrainer(_config(tmp_path / "remote", distributed=True,
                                  distributed_num_workers=2, **field))
    torch.manual_seed(4)
    opponent = type(local.policy)(**local.policy.kwargs)
    opponents = {"l3": 3, "doctrine": DOCTRINE_TEAM, "snapshot": opponent}
    try:
        for deterministic in (True, False):
            expected = local.play_matches(opponents, 7, seed=21,
                                          opponent_deterministic=deterministic)
            got = remote.play_matches(opponents, 7, seed=21,
                                      opponent_deterministic=deterministic)
            assert list(got) == list(opponents)
            for name in opponents:
                assert np.array_equal(expected[name], got[name]), name
        # Not a vacuous comparison: the matches have different outcomes.
        assert len(set(np.concatenate(list(expected.values())).tolist())) > 1
    finally:
        remote.close()


def test_timeouts_name_the_worker(ray_cluster, tmp_path):
    remote = MAPPOTrainer(_config(tmp_path, distributed=True, distributed_num_workers=1,
                                  distributed_timeout_s=0.01, n_steps=200, n_envs=64,
                                  total_timesteps=64 * 200))
    try:
        with pytest.raises(TimeoutError, match=r"rollout worker \[0\].*distributed.timeout_s"):
            remote.collect_rollout()
    finally:
        remote.close()


def test_the_command_line_trains_on_workers(tmp_path):
    rollout = 8 * 16
    # A new process (forked from a server that has the imports) that starts its own cluster.
    log = tmp_path / "output.txt"
    code = run_module(
        "training.train_mappo",
        [f"eval.checkpoint_dir={tmp_path / 'ck'}", f"logging.log_dir={tmp_path / 'logs'}",
         f"elo.registry_path={tmp_path / 'elo.json'}", "env.num_envs=8", "training.n_steps=16",
         "training.batch_size=128", "training.n_epochs=1",
         f"training.total_timesteps={2 * rollout}", f"eval.eval_freq={rollout}",
         "eval.n_eval_episodes=4", "env.max_steps=40", "wandb.enabled=false",
         "training.warm_start_doctrine=null", "logging.progress_bar=false",
         "distributed.enabled=true", "distributed.num_workers=2", "ray.num_cpus=2",
         f"hydra.run.dir={tmp_path / 'hydra'}"],
        cwd=ROOT, log=log, timeout=300)
    assert code == 0, log.read_text()[-3000:]
    assert (tmp_path / "ck" / "mappo_policy_final.pt").is_file()


def test_a_league_role_trains_and_evaluates_on_workers(ray_cluster, tmp_path):
    from training.league import MatchDatabase
    from training.league.config import MainAgentConfig, league_dir_settings
    from training.league.launch import role_class

    config = MainAgentConfig(n_envs=8, rollout_steps=256, total_timesteps=1024,
                             warm_start_doctrine=None, snapshot_freq=512, eval_freq=512,
                             n_eval_episodes=4, checkpoint_freq=512, enable_wandb=False,
                             progress_bar=False, distributed=True, distributed_num_workers=2,
                             **league_dir_settings("main_agent", tmp_path))
    role = role_class("main_agent").from_config(config).learn()
    assert role.done and role.trainer._workers is None  # finish() stopped the workers
    evaluations = [r for r in MatchDatabase(role.matches.path).results
                   if r.metadata.get("kind") == "evaluation"]
    assert {r.opponent_id for r in evaluations} >= {"scripted_team_l5", "doctrine_team"}
    assert all(r.metadata["games"] == 4 for r in evaluations)
