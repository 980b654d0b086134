"""TeamOpponentPool: frozen MAPPO teams on disk, evicted oldest first."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from models.mappo_policy import MAPPOPolicy
from training.self_play import TeamOpponentPool


def team(seed: int) -> MAPPOPolicy:
    torch.manual_seed(seed)
    return MAPPOPolicy(obs_dim=22, action_dim=3, state_dim=25, n_agents=2,
                       share_parameters=False, actor_hidden_sizes=(16,),
                       critic_hidden_sizes=(16,))


def mean_action(policy: MAPPOPolicy) -> torch.Tensor:
    obs = torch.linspace(-1, 1, 22).repeat(2, 1)
    return policy.act(obs, agent_idx=torch.tensor([0, 1]), deterministic=True)[0]


def names(paths) -> list[str]:
    return [p.name for p in paths]


def test_add_sample_and_sample_latest(tmp_path):
    pool = TeamOpponentPool(tmp_path / "pool", max_size=3)
    assert pool.size == 0 and pool.latest_version == 0
    assert pool.sample() is None and pool.sample_latest() is None
    teams = {version: team(version) for version in (1, 2, 3)}
    for version, policy in teams.items():
        path = pool.add(policy, version)
        assert path.name == f"team_snapshot_v{version:06d}.pt"
    assert pool.size == 3 and pool.latest_version == 3
    latest = pool.sample_latest()
    assert isinstance(latest, MAPPOPolicy) and not latest.training
    assert torch.equal(mean_action(latest), mean_action(teams[3]))
    assert latest.kwargs == teams[3].kwargs
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(20):
        sampled = mean_action(pool.sample(rng))
        seen.add(next(v for v, p in teams.items() if torch.equal(sampled, mean_action(p))))
    assert seen == {1, 2, 3}
    with pytest.raises(ValueError, match="version"):
        pool.add(team(9), 3)
    with pytest.raises(TypeError, match="MAPPOPolicy"):
        pool.add(torch.nn.Linear(2, 2), 4)
    with pytest.raises(KeyError):
        pool.load(tmp_path / "elsewhere.pt")


def test_eviction_deletes_the_oldest_files_and_keeps_max_size(tmp_path):
    pool = TeamOpponentPool(tmp_path, max_size=2)
    for version in range(1, 5):
        pool.add(team(version), version)
    kept = ["team_snapshot_v000003.pt", "team_snapshot_v000004.pt"]
    assert names(pool.snapshot_paths) == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == kept  # files deleted, no temp files
    copy = pool.snapshot_paths
    copy.clear()
    assert pool.size == 2  # snapshot_paths is a copy


def test_reload_from_disk_in_a_new_instance(tmp_path):
    pool = TeamOpponentPool(tmp_path, max_size=5)
    for version in (1, 2, 3, 4):
        pool.add(team(version), version)
    again = TeamOpponentPool(tmp_path, max_size=5)
    assert again.snapshot_paths == pool.snapshot_paths and again.latest_version == 4
    assert torch.equal(mean_action(again.sample_latest()), mean_action(team(4)))
    # A smaller pool uses the newest and deletes nothing.
    small = TeamOpponentPool(tmp_path, max_size=2)
    assert names(small.snapshot_paths) == ["team_snapshot_v000003.pt",
                                           "team_snapshot_v000004.pt"]
    assert len(list(tmp_path.iterdir())) == 4


def test_corrupt_snapshot_is_refused_by_name(tmp_path):
    pool = TeamOpponentPool(tmp_path, max_size=3)
    pool.add(team(1), 1)
    (tmp_path / "team_snapshot_v000002.pt").write_bytes(b"\x00truncated")
    with pytest.raises(ValueError, match="team_snapshot_v000002.pt"):
        TeamOpponentPool(tmp_path, max_size=3)
    assert (tmp_path / "team_snapshot_v000001.pt").exists()  # nothing deleted
    # A readable torch file that is not a policy fails when it is loaded.
    torch.save({"something": 1}, tmp_path / "team_snapshot_v000002.pt")
    pool = TeamOpponentPool(tmp_path, max_size=3)
    with pytest.raises(ValueError, match="team_snapshot_v000002.pt"):
        pool.sample_latest()


def test_foreign_files_are_reported_and_left_alone(tmp_path, caplog):
    (tmp_path / "notes.txt").write_text("keep me")
    (tmp_path / "snapshot_v000001.zip").write_bytes(b"an SB3 snapshot")
    with caplog.at_level(logging.WARNING, logger="training.common.pools"):
        pool = TeamOpponentPool(tmp_path, max_size=1)
    assert "notes.txt" in caplog.text and "snapshot_v000001.zip" in caplog.text
    pool.add(team(1), 1)
    pool.add(team(2), 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt", "snapshot_v000001.zip", "team_snapshot_v000002.pt"]
    assert pool.size == 1


def test_max_size_is_validated(tmp_path):
    with pytest.raises(ValueError, match="max_size"):
        TeamOpponentPool(tmp_path, max_size=0)


def ppo_snapshot(version: int):
    from stable_baselines3 import PPO

    from envs.vec_env import BattalionVecEnv

    return PPO("MlpPolicy", BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu",
               seed=version)


@pytest.mark.parametrize("kind", ["ppo", "team"])
def test_reload_deletes_nothing_and_add_evicts_only_pool_members(tmp_path, kind):
    from training.self_play import OpponentPool

    pool_class, make = ((OpponentPool, ppo_snapshot) if kind == "ppo"
                        else (TeamOpponentPool, team))
    big = pool_class(tmp_path, max_size=10)
    for version in range(1, 7):
        big.add(make(version), version)
    user_file = tmp_path / "notes.txt"
    user_file.write_text("mine")
    written = sorted(p.name for p in tmp_path.iterdir())

    small = pool_class(tmp_path, max_size=2)  # reloading a folder of 6 snapshots
    assert names(small.snapshot_paths) == names(big.snapshot_paths[-2:])
    assert sorted(p.name for p in tmp_path.iterdir()) == written

    small.add(make(7), 7)  # evicts v5, the oldest member; v1-v4 are not members
    on_disk = sorted(p.name for p in tmp_path.iterdir())
    assert big.snapshot_paths[4].name not in on_disk
    assert all(p.name in on_disk for p in big.snapshot_paths[:4])
    assert user_file.read_text() == "mine"
    assert names(small.snapshot_paths) == [big.snapshot_paths[5].name,
                                           pool_class.file_name(7)]
