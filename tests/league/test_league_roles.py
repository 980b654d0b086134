"""The league's three roles, trained for a few rollouts each on one league directory: the
real tiny league of conftest.py (the ``league`` fixture), built once per test process for
these tests and test_league_report.py's."""

from __future__ import annotations

import json

import pytest

from training.elo import TeamEloRegistry
from training.league import AgentPool, AgentType, MatchDatabase
from training.league.launch import role_class
from training.league.matchmaking import make_pfsp_weight_fn, monotonic_prefix_length


def test_each_role_snapshots_under_the_seed_names(league):
    folder, roles = league
    for role, trainer in roles.items():
        pool = AgentPool(trainer.pool.manifest_path)
        own = [r for r in pool.list() if r.metadata["parent_agent_id"] == f"{role}_001"]
        assert [r.agent_id for r in own] == [f"{role}_001_v{v:06d}" for v in range(len(own))]
        assert len(own) >= 4 and all(r.agent_type is AgentType(role) for r in own)
        for record in own:
            assert pool.resolve_snapshot(record).name == \
                f"{role}_{role}_001_v{record.version:06d}.pt"
            assert "step" in record.metadata
            if role != "main_agent":
                assert "reset_count" in record.metadata


def test_the_league_exploiter_meets_every_role_and_everybody_is_rated(league):
    folder, roles = league
    matches = MatchDatabase(roles["main_agent"].matches.path)
    opponents = {r.opponent_id for r in matches.results if r.agent_id == "league_exploiter_001"}
    assert any(o.startswith("main_exploiter_001_v") for o in opponents)
    assert any(o.startswith("main_agent_001_v") for o in opponents)
    ratings = TeamEloRegistry(roles["main_agent"].elo.path).all_ratings()
    for role in roles:
        assert f"{role}_001" in ratings
    # Opponents' ratings move too: a snapshot that only others played is no longer
    # where it entered.
    snapshots = [name for name in ratings if "_v" in name]
    entered = json.loads(roles["main_agent"].elo.path.read_text())["game_counts"]
    assert any(entered[name] > 0 for name in snapshots)


def test_exploiters_reset_when_they_stop_winning(league):
    _, roles = league
    assert roles["main_exploiter"].reset_count >= 1
    assert roles["league_exploiter"].reset_count >= 1
    assert roles["main_agent"].reset_count == 0


def test_a_role_resumes_its_counters_from_its_checkpoint(league):
    folder, roles = league
    trainer = roles["main_exploiter"]
    checkpoint = trainer.checkpoint_dir / "mappo_policy.pt"
    again = role_class("main_exploiter").from_config(trainer.trainer.config, resume=checkpoint)
    assert again.trainer.total_steps == trainer.trainer.total_steps
    assert again.reset_count == trainer.reset_count
    assert again.version >= trainer.version  # never reuses a snapshot version


def test_pfsp_temperature_and_forgetting_helpers():
    f = make_pfsp_weight_fn(0.5)
    assert f(0.5) == pytest.approx(0.25) and f(1.0) == 0.0
    with pytest.raises(ValueError, match="temperature"):
        make_pfsp_weight_fn(0)
    assert monotonic_prefix_length([0.9, 0.8, 0.7]) == 0  # steady learning: nothing forgotten
    assert monotonic_prefix_length([0.5, 0.9, 0.8]) == 2


def test_a_finished_role_run_again_with_resume_auto_adds_nothing(league):
    from training.mappo.checkpoints import resolve_resume

    folder, roles = league
    trainer = roles["main_exploiter"]
    config = trainer.trainer.config
    pool_before = [r.agent_id for r in AgentPool(trainer.pool.manifest_path).list()]
    matches_before = len(MatchDatabase(config.match_db_path).results)
    checkpoint = resolve_resume({"auto": True, "checkpoint": None}, config)
    again = role_class("main_exploiter").from_config(config, resume=checkpoint).learn()
    assert again.trainer.total_steps == trainer.trainer.total_steps
    assert [r.agent_id for r in AgentPool(trainer.pool.manifest_path).list()] == pool_before
    assert len(MatchDatabase(config.match_db_path).results) == matches_before
    status = json.loads((trainer.role_dir / "status.json").read_text())
    assert status["state"] == "done" and status["step"] == trainer.trainer.total_steps


def test_the_main_exploiter_logs_under_the_seed_names(league):
    _, roles = league
    rows = [json.loads(line) for line in
            (roles["main_exploiter"].role_dir / "history.jsonl").read_text().splitlines()]
    names = set().union(*(row["metrics"] for row in rows))
    assert {"exploiter/win_rate_vs_main", "exploiter/rolling_win_rate_vs_main",
            "exploiter/mean_win_rate_vs_main", "exploiter/elo", "exploiter/elo_delta",
            "exploiter/reset_count", "elo/main_exploiter"} - names == set()


def test_every_role_draws_its_run_and_the_league_report_at_the_end(league):
    from tests.training.test_plots import assert_picture
    from training.league.report import PICTURES, REPORT_FILE
    from training.plots import COORDINATION_FILE, ELO_FILE, LEARNING_CURVES_FILE, read_scalars

    folder, roles = league
    for role in roles.values():
        assert {LEARNING_CURVES_FILE, ELO_FILE, COORDINATION_FILE} <= {
            p.name for p in role.log_folder.glob("*.png")}
        assert_picture(role.log_folder / LEARNING_CURVES_FILE)
        assert "coordination/flanking_ratio" in read_scalars(role.log_folder)
    assert (folder / REPORT_FILE).is_file()
    for name, _, _ in PICTURES:
        assert_picture(folder / name)
