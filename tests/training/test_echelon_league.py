"""The league's roles with brigade and division commanders (EchelonLearner): members
command Red's echelon, snapshots are SB3 archives, matches and Elo are the league's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from envs.echelons.brigade_batch import brigade_obs_dim
from training.echelons.config import BrigadeConfig, DivisionConfig
from training.elo import TeamEloRegistry
from training.league import AgentPool, MatchDatabase
from training.league.echelon_learner import EchelonLearner
from training.league.layout import ANCHORS
from training.league.matchmaking import SELF
from training.league.role import train_in_turns
from training.league.train_exploiter import MainExploiterTrainer
from training.league.train_main_agent import MainAgentTrainer

SMALL = dict(n_envs=8, n_steps=16, batch_size=64, total_timesteps=512, map_width=600.0,
             map_height=600.0, max_steps=80, temporal_ratio=5, randomize_terrain=False,
             enable_wandb=False, progress_bar=False)
ROLE = dict(snapshot_freq=128, eval_freq=256, n_eval_episodes=4, checkpoint_freq=256,
            opponents_per_rollout=2)


def brigade_config(tmp_path, seed, **kw):
    # No warm start unless a test asks: these budgets are the league's mechanics alone.
    return BrigadeConfig(**{**SMALL, "warm_start_doctrine": None, **kw}, seed=seed,
                         log_dir=str(tmp_path / "logs"), checkpoint_dir=str(tmp_path / "unused"))


@pytest.fixture(scope="module")
def brigade_league(tmp_path_factory):
    folder = tmp_path_factory.mktemp("brigade_league")
    main = MainAgentTrainer.in_league(
        EchelonLearner(brigade_config(folder, 42)), folder, scripted_share=0.25,
        league_pools=[folder / "main_exploiter" / "pool.json"], **ROLE)
    exploiter = MainExploiterTrainer.in_league(
        EchelonLearner(brigade_config(folder, 43)), folder, scripted_share=0.0,
        league_pools=[folder / "main_agent" / "pool.json"], **ROLE)
    train_in_turns([main, exploiter])
    return folder, main, exploiter


def test_snapshots_are_the_brigadiers_archives_and_load_as_commanders(brigade_league):
    folder, main, exploiter = brigade_league
    for role in (main, exploiter):
        own = [r for r in AgentPool(role.pool.manifest_path).list()]
        assert len(own) >= 4
        for record in own:
            path = role.pool.resolve_snapshot(record)
            assert path.suffix == ".zip"
            commander = role.trainer.load_snapshot(path)
            assert commander.observation_space.shape == (brigade_obs_dim(2),)
            assert [int(n) for n in commander.action_space.nvec] == [6, 6]
    assert (main.checkpoint_dir / EchelonLearner.FINAL_CHECKPOINT_NAME).is_file()


def test_members_command_red_and_every_match_is_recorded_and_rated(brigade_league):
    folder, main, exploiter = brigade_league
    matches = MatchDatabase(folder / "matches.jsonl")
    met = {r.opponent_id for r in matches.results if r.agent_id == "main_exploiter_001"}
    assert any(o.startswith("main_agent_001_v") for o in met)
    main_met = {r.opponent_id for r in matches.results if r.agent_id == "main_agent_001"}
    assert {"scripted_team_l5", *ANCHORS} <= main_met
    kinds = {r.metadata["kind"] for r in matches.results}
    assert kinds == {"training", "evaluation"}
    ratings = TeamEloRegistry(folder / "elo.json").all_ratings()
    assert {"main_agent_001", "main_exploiter_001"} <= set(ratings)
    status = json.loads((folder / "main_agent" / "status.json").read_text())
    assert status["state"] == "done" and status["step"] == 512


def test_a_dealt_member_commands_reds_brigade_in_its_share_of_the_battles(brigade_league):
    folder, main, _ = brigade_league
    learner = main.trainer
    record = AgentPool(main.pool.manifest_path).list()[0]
    main.deal([record, SELF])
    names = main.opponent_of_battles()
    assert sorted(set(names)) == sorted({record.agent_id, "main_agent_001", "scripted_team_l5"})
    assert (names == "scripted_team_l5").sum() == 2  # a quarter of 8
    commanded = learner.batch.red_commanders.commanded
    np.testing.assert_array_equal(commanded, names != "scripted_team_l5")


def test_an_echelon_role_resumes_from_its_checkpoint(brigade_league):
    folder, main, _ = brigade_league
    checkpoint = main.checkpoint_dir / EchelonLearner.CHECKPOINT_NAME
    learner = EchelonLearner(main.trainer.config, resume=checkpoint)
    assert learner.total_steps == main.trainer.total_steps
    again = MainAgentTrainer.in_league(learner, folder, league_pools=[], **ROLE)
    assert again.version == main.version
    for name, weights in main.trainer.policy.state_dict().items():
        assert np.array_equal(weights.numpy(), again.trainer.policy.state_dict()[name].numpy())


def test_a_division_commander_plays_its_own_snapshots(tmp_path):
    config = DivisionConfig(**{**SMALL, "total_timesteps": 256}, seed=7,
                            log_dir=str(tmp_path / "logs"), checkpoint_dir=str(tmp_path / "x"))
    role = MainAgentTrainer.in_league(EchelonLearner(config), tmp_path, scripted_share=0.0,
                                      **{**ROLE, "snapshot_freq": 128, "eval_freq": 128})
    role.learn()
    matches = MatchDatabase(tmp_path / "matches.jsonl").results
    played = {r.opponent_id for r in matches if r.metadata["kind"] == "training"}
    assert played & {"main_agent_001", "main_agent_001_v000000", "main_agent_001_v000001"}
    evaluated = {r.opponent_id for r in matches if r.metadata["kind"] == "evaluation"}
    assert set(ANCHORS) <= evaluated


def test_both_learners_name_the_leagues_anchors(brigade_league):
    from training.mappo.config import MAPPOConfig
    from training.mappo.trainer import MAPPOTrainer

    _, main, _ = brigade_league
    assert tuple(main.trainer.anchors()) == ANCHORS
    tiny = MAPPOConfig(n_envs=4, rollout_steps=64, total_timesteps=256,
                       warm_start_doctrine=None)
    assert tuple(MAPPOTrainer(tiny).anchors()) == ANCHORS
    # The doctrine reads distances on the learner's own map.
    doctrine = main.trainer.anchors()["doctrine_team"]
    assert doctrine.map_diagonal == pytest.approx(np.hypot(600.0, 600.0))


def test_the_learner_refuses_a_config_of_another_kind():
    from training.mappo.config import MAPPOConfig

    with pytest.raises(TypeError, match="BrigadeConfig or a DivisionConfig"):
        EchelonLearner(MAPPOConfig())


def test_a_brigadier_in_the_league_starts_from_its_clone(tmp_path):
    # As train_brigade: the in-step brigadier imitated first, counted in the budget, and
    # a role resets to the clone rather than to random weights.
    learner = EchelonLearner(brigade_config(tmp_path, 0, warm_start_doctrine="in_step",
                                            warm_start_steps=128))
    assert learner.total_steps == learner.model.num_timesteps == 128
    assert EchelonLearner(brigade_config(tmp_path, 0)).total_steps == 0
    metrics = learner.learn_from(learner.collect_rollout())
    assert learner.total_steps == 128 + learner.rollout_steps
    assert metrics["time/total_steps"] == learner.total_steps
