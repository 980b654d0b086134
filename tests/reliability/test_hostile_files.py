"""Hostile files (symlinks to devices, FIFOs and outside files, zip bombs, huge constructor
arguments, nested JSON, pickled payloads) through every loader: each refused by name."""

from __future__ import annotations

import json

from tests.fresh import run_python


def test_every_loader_refuses_every_hostile_file_by_name(tmp_path):
    # A small archive limit keeps the zip bomb small here; benchmarks/reliability.py
    # runs the real limit against a multi-GB bomb.
    output = run_python(["-m", "tests.reliability.hostile", str(tmp_path / "campaign"),
                         "--bomb-mib", "40", "--archive-limit-mib", "16"], timeout=600)
    cases = [json.loads(line) for line in output.splitlines()]
    assert len(cases) >= 45
    failures = [c for c in cases if c["outcome"] not in ("refused", "skipped")
                or c["payload_ran"]]
    assert not failures, failures
    kinds = {c["kind"] for c in cases}
    assert kinds == {"dev_zero", "fifo", "outside", "bomb", "huge", "weights", "nested",
                     "nested_line"}
    assert not (tmp_path / "campaign" / "PAYLOAD_RAN").exists()


def test_league_snapshots_load_only_inside_the_league(tmp_path):
    import pytest
    from stable_baselines3 import PPO

    from envs.vec_env import BattalionVecEnv
    from training.league import AgentPool, AgentType
    from training.ppo.checkpoints import save_ppo

    league = tmp_path / "league"
    pool = AgentPool(league / "pool.json")
    model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu")
    inside = pool.add(save_ppo(model, league / "snapshots" / "a.zip"), AgentType.MAIN_AGENT)
    outside = pool.add(save_ppo(model, tmp_path / "elsewhere.zip"), AgentType.MAIN_EXPLOITER)
    (league / "snapshots" / "b.zip").symlink_to(tmp_path / "elsewhere.zip")
    linked = pool.add(league / "snapshots" / "b.zip", AgentType.LEAGUE_EXPLOITER)
    device = pool.add("/dev/null", AgentType.LEAGUE_EXPLOITER)

    assert pool.load_snapshot(inside).num_timesteps == 0
    for record in (outside, linked, device):
        with pytest.raises(ValueError, match="outside the league"):
            pool.load_snapshot(record)
