"""The chain of command in one command: three phases, each over the frozen policies of
the ones below, registered and rated."""

from __future__ import annotations

import json

import pytest

from training.echelons.pipeline import opponent_level, run_hrl
from training.elo import performance_rating
from training.policy_registry import PolicyRegistry

SMALL = {
    1: dict(total_timesteps=512, n_envs=8, n_steps=32, batch_size=128, n_epochs=1,
            warm_start_steps=256, eval_freq=10**6, checkpoint_freq=10**6, n_eval_episodes=4,
            enable_wandb=False, progress_bar=False),
    2: dict(total_timesteps=64, n_envs=4, n_steps=8, batch_size=16, n_epochs=1, eval_freq=64,
            n_eval_episodes=4, checkpoint_freq=64, enable_wandb=False, progress_bar=False,
            verbose=0),
}
SMALL[3] = SMALL[2]


def test_three_phases_chain_freeze_register_and_rate(tmp_path):
    reports = run_hrl(tmp_path, overrides=SMALL)
    assert [r.echelon for r in reports] == ["battalion", "brigade", "division"]
    files = [tmp_path / "phase1_battalion" / "mappo_policy_final.pt",
             tmp_path / "phase2_brigade" / "ppo_brigade_final.zip",
             tmp_path / "phase3_division" / "ppo_division_final.zip"]
    assert [r.policy_file for r in reports] == [str(f) for f in files]
    assert all(f.is_file() for f in files)
    registry = PolicyRegistry(tmp_path / "policy_registry.json")
    assert {e.echelon.value: e.path for e in registry.list()} == {
        "battalion": str(files[0]), "brigade": str(files[1]), "division": str(files[2])}
    for report in reports:
        rates = report.evaluation
        assert rates["won"] + rates["drawn"] + rates["lost"] == pytest.approx(1)
        assert report.status["conditions"]["window_full"]["holds"] and report.elo is not None
        assert report.criteria_met == (rates["won"] >= report.status["conditions"]["win_rate"]
                                       ["threshold"] and report.elo >= 1100)
        # The Elo is the performance rating of the score against scripted_l3 (800).
        n = report.status["conditions"]["window_full"]["needed"]
        assert report.elo == pytest.approx(performance_rating(
            rates["won"] + rates["drawn"] / 2, 800.0, n))
    assert reports[1].env_steps == 64 * 10
    # The battalions learned in 4v4 battles (phase 1's file) and command brigades of two.
    from training.echelons.trainer import load_frozen_battalion_policy
    assert load_frozen_battalion_policy(files[0]).n_agents == 4
    summary = json.loads((tmp_path / "hrl_summary.json").read_text())
    assert [s["phase"] for s in summary] == [1, 2, 3]
    # A later phase alone runs over the files already there.
    again = run_hrl(tmp_path, phases=(3,), overrides=SMALL, version="2")
    assert [r.phase for r in again] == [3]
    with pytest.raises(FileNotFoundError, match="phase 1"):
        run_hrl(tmp_path / "empty", phases=(2,), overrides=SMALL)


def test_the_elo_opponent_must_be_a_scripted_level():
    assert opponent_level("scripted_l3") == 3
    with pytest.raises(ValueError, match="elo_opponent"):
        opponent_level("doctrine_team")


def test_a_phase_file_sets_its_optional_training_keys(tmp_path, monkeypatch):
    import yaml

    import training.echelons.curriculum as hc
    from training.echelons.curriculum import PHASE_CONFIG_FILES, HRLPhase
    from training.echelons.pipeline import phase_settings
    # The battalions' phase pins the halt its order follower attacks to (not MAPPO's default).
    shipped = phase_settings(HRLPhase.PHASE_1_BATTALION, tmp_path, {})
    assert shipped["warm_start_hold_range"] == 80.0
    # ... and learns in the division's battles (two brigades of two a side).
    assert (shipped["n_blue"], shipped["n_red"]) == (4, 4)
    for phase in HRLPhase:
        data = yaml.safe_load((hc.HRL_CONFIG_DIR / PHASE_CONFIG_FILES[phase]).read_text())
        data["training"].update(n_envs=24, warm_start_hold_range=70.0)
        (tmp_path / PHASE_CONFIG_FILES[phase]).write_text(yaml.safe_dump(data))
    monkeypatch.setattr(hc, "HRL_CONFIG_DIR", tmp_path)
    settings = phase_settings(HRLPhase.PHASE_1_BATTALION, tmp_path, {})
    assert (settings["n_envs"], settings["warm_start_hold_range"]) == (24, 70.0)
    with pytest.raises(ValueError, match="phase2_brigade.yaml.*warm_start_hold_range"):
        phase_settings(HRLPhase.PHASE_2_BRIGADE, tmp_path, {})
    data = yaml.safe_load((hc.HRL_CONFIG_DIR / PHASE_CONFIG_FILES[HRLPhase(3)]).read_text())
    data["training"].pop("warm_start_hold_range")
    data["env"]["n_blue"] = 2
    (tmp_path / PHASE_CONFIG_FILES[HRLPhase(3)]).write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="phase3_division.yaml.*env.n_blue is for phase 1"):
        phase_settings(HRLPhase.PHASE_3_DIVISION, tmp_path, {})
