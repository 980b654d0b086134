"""Curriculum scheduler, scenario files and the v1 -> MAPPO weight transfer."""

from __future__ import annotations

import json
import logging
import zipfile

import numpy as np
import pytest
import torch
import yaml

from envs.multi_battalion_env import MultiBattalionEnv
from models.mappo_policy import MAPPOPolicy
from tests.training.conftest import FakeRun, tiny_config
from training.curriculum_scheduler import (
    SCENARIO_DIR,
    STAGE_ENV_KWARGS,
    STAGE_LABELS,
    CurriculumScheduler,
    CurriculumStage,
    load_scenario,
    load_v1_weights_into_mappo,
)
from training.ppo.checkpoints import load_ppo

# ---------------------------------------------------------------------------- scheduler


def test_promotion_needs_a_full_window_at_the_threshold():
    scheduler = CurriculumScheduler(promote_threshold=0.75, win_rate_window=4)
    assert scheduler.win_rate() == 0.0 and not scheduler.should_promote()
    scheduler.record_episodes([True, True, True])
    assert scheduler.win_rate() == 1.0
    assert not scheduler.should_promote()  # 3 of 4 episodes: the window is not full
    scheduler.record_episode(False)
    assert scheduler.win_rate() == 0.75 and scheduler.should_promote()
    scheduler.record_episode(False)  # the window slides: T T F F
    assert scheduler.win_rate() == 0.5 and not scheduler.should_promote()
    scheduler.record_episodes([True, True])  # F F T T
    assert not scheduler.should_promote()
    scheduler.record_episode(True)  # F T T T
    assert scheduler.should_promote() and scheduler.total_episodes == 8


def test_promote_advances_clears_the_window_and_stops_at_the_final_stage():
    scheduler = CurriculumScheduler(promote_threshold=1.0, win_rate_window=2)
    assert scheduler.stage == CurriculumStage.STAGE_1V1 and scheduler.stage_label == "1v1"
    assert scheduler.env_kwargs() == {**load_scenario("1v1"), "n_blue": 1, "n_red": 1}
    scheduler.record_episodes([True, True])
    assert scheduler.promote() == CurriculumStage.STAGE_2V1
    assert scheduler.win_rate() == 0.0 and not scheduler.should_promote()
    assert scheduler.env_kwargs() == {**load_scenario("2v1"), "n_blue": 2, "n_red": 1}
    scheduler.record_episodes([True, True])
    scheduler.promote()
    assert scheduler.is_final_stage and scheduler.stage_label == "2v2"
    scheduler.record_episodes([True, True])
    assert not scheduler.should_promote()  # nothing after the final stage
    with pytest.raises(RuntimeError, match="final stage"):
        scheduler.promote()
    assert scheduler.total_episodes == 6
    assert [p["to_stage"] for p in scheduler.promotions] == [1, 2]
    kwargs = scheduler.env_kwargs()
    kwargs["n_blue"] = 99  # a copy: the table is not changed
    assert STAGE_ENV_KWARGS[CurriculumStage.STAGE_2V2]["n_blue"] == 2


def test_metrics_and_promotion_event_logging(caplog):
    scheduler = CurriculumScheduler(promote_threshold=0.5, win_rate_window=2)
    scheduler.record_episodes([True, False])
    scheduler.promote()
    run = FakeRun()
    with caplog.at_level(logging.INFO, logger="training.curriculum_scheduler"):
        scheduler.log_promotion_event(12_345, run)
        scheduler.log_promotion_event(12_400)
    assert "2v1" in caplog.text and "12345" in caplog.text
    assert run.calls == [({"curriculum/stage": 1, "curriculum/stage_label": "2v1",
                           "curriculum/win_rate": 0.0, "curriculum/total_episodes": 2,
                           "curriculum/promotion_step": 12_345}, 12_345)]
    assert scheduler.promotions == [{"to_stage": 1, "total_episodes": 2, "total_steps": 12_345}]


@pytest.mark.parametrize("kwargs, field", [
    ({"initial_stage": 3}, "initial_stage"),
    ({"initial_stage": True}, "initial_stage"),
])
def test_constructor_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        CurriculumScheduler(**kwargs)


def test_episode_results_must_be_bools():
    scheduler = CurriculumScheduler(win_rate_window=3)
    scheduler.record_episode(np.bool_(True))
    with pytest.raises(ValueError, match="win"):
        scheduler.record_episode(1)
    with pytest.raises(ValueError, match=r"wins\[1\]"):
        scheduler.record_episodes([True, "yes"])
    assert scheduler.total_episodes == 1  # nothing of a bad batch is recorded
    assert CurriculumScheduler(initial_stage=2).is_final_stage


def test_state_dict_round_trip_continues_exactly():
    scheduler = CurriculumScheduler(promote_threshold=0.6, win_rate_window=5)
    scheduler.record_episodes([True] * 5)
    scheduler.promote()
    scheduler.log_promotion_event(1000)
    scheduler.record_episodes([True, False, True])
    state = json.loads(json.dumps(scheduler.state_dict()))  # plain JSON values
    resumed = CurriculumScheduler(promote_threshold=0.6, win_rate_window=5)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == scheduler.state_dict()
    assert resumed.stage == CurriculumStage.STAGE_2V1 and resumed.win_rate() == pytest.approx(2 / 3)
    for s in (scheduler, resumed):
        s.record_episodes([True, True])
    assert resumed.should_promote() == scheduler.should_promote() is True


@pytest.mark.parametrize("change, field", [
    ({"stage": 5}, "stage"),
    ({"window": [True, 1]}, r"window'\]\[1\]"),
    ({"total_episodes": 0}, "total_episodes"),
    ({"promotions": [{"to_stage": 1}]}, "promotions"),
    ({"extra": 1}, "extra"),
])
def test_load_state_dict_refuses_malformed_state(change, field):
    scheduler = CurriculumScheduler()
    scheduler.record_episodes([True, False])
    state = {**scheduler.state_dict(), **change}
    with pytest.raises((TypeError, ValueError), match=field):
        scheduler.load_state_dict(state)
    assert scheduler.total_episodes == 2 and scheduler.win_rate() == 0.5  # unchanged


# ---------------------------------------------------------------------------- scenarios


def test_stages_take_their_team_sizes_from_the_scenario_files(tmp_path, monkeypatch):
    assert STAGE_ENV_KWARGS == {CurriculumStage.STAGE_1V1: {"n_blue": 1, "n_red": 1},
                                CurriculumStage.STAGE_2V1: {"n_blue": 2, "n_red": 1},
                                CurriculumStage.STAGE_2V2: {"n_blue": 2, "n_red": 2}}
    import training.curriculum_scheduler as cs

    for label in STAGE_LABELS.values():
        (tmp_path / f"{label}.yaml").write_text(yaml.safe_dump(team_file(3, 4)))
    monkeypatch.setattr(cs, "SCENARIO_DIR", tmp_path)
    sizes = cs._stage_team_sizes()
    assert list(sizes.values()) == [{"n_blue": 3, "n_red": 4}] * len(STAGE_LABELS)
    (tmp_path / "2v1.yaml").write_text(yaml.safe_dump({**team_file(3, 4), "units": {
        "blue": [{"type": "infantry"}]}}))
    with pytest.raises(ValueError, match=r"2v1.yaml.*units.*'red'"):
        cs._stage_team_sizes()


def test_env_kwargs_are_the_stage_scenario_files_arguments():
    """The seed's env_kwargs(): the current stage's environment arguments, agreeing with
    its file under configs/scenarios/: the team sizes and the rest (map, steps, terrain,
    visibility), so MultiBattalionEnv(**env_kwargs()) is the stage's battle."""
    for stage, label in STAGE_LABELS.items():
        kwargs = CurriculumScheduler(initial_stage=stage).env_kwargs()
        assert kwargs == load_scenario(label)
        assert {k: kwargs[k] for k in ("n_blue", "n_red")} == STAGE_ENV_KWARGS[stage]
        env = MultiBattalionEnv(**kwargs)
        file = yaml.safe_load((SCENARIO_DIR / f"{label}.yaml").read_text())
        assert (env.n_blue, env.n_red) == (len(file["units"]["blue"]), len(file["units"]["red"]))
        assert (env.config.map_width, env.config.map_height, env.config.max_steps) == (
            file["field"]["width_m"], file["field"]["height_m"], file["field"]["max_steps"])
        assert env.config.hill_speed_factor == file["model"]["hill_speed_factor"]
        assert kwargs["visibility_radius"] == file["visibility_radius"]
        assert kwargs["randomize_terrain"] is (file["terrain"] == "procedural")


def team_file(n_blue, n_red, **changes):
    """A training scenario in the scenario format."""
    return {"id": "t", "deployment": "random", **changes,
            "units": {"blue": [{"type": "infantry"}] * n_blue,
                      "red": [{"type": "infantry"}] * n_red}}


@pytest.mark.parametrize("name, n, visibility", [
    ("1v1", 1, 600.0), ("2v1", None, 600.0), ("2v2", 2, 600.0), ("3v3", 3, 500.0),
    ("4v4", 4, 500.0), ("6v6", 6, 500.0)])
def test_every_scenario_file_loads(name, n, visibility):
    scenario = load_scenario(name)
    assert scenario["map_width"] == scenario["map_height"] == 1000.0
    assert scenario["max_steps"] == 500 and scenario["randomize_terrain"] is True
    assert scenario["hill_speed_factor"] == 0.5
    assert scenario["visibility_radius"] == visibility
    if n is not None:
        assert scenario["n_blue"] == scenario["n_red"] == n
    assert (SCENARIO_DIR / f"{name}.yaml").read_text().startswith("# Scenario")


def test_scenario_errors(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match=r"5v5.*'2v2'"):
        load_scenario("5v5")
    with pytest.raises(ValueError, match="name"):
        load_scenario("../default")
    import training.curriculum_scheduler as cs

    monkeypatch.setattr(cs, "SCENARIO_DIR", tmp_path)
    (tmp_path / "odd.yaml").write_text(yaml.safe_dump(team_file(2, 2, n_reds=2)))
    with pytest.raises(ValueError, match=r"odd.yaml.*n_reds"):
        load_scenario("odd")
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(team_file(2, 2, visibility_radius=0)))
    with pytest.raises(ValueError, match=r"bad.yaml.*visibility_radius=0"):
        load_scenario("bad")
    (tmp_path / "placed.yaml").write_text(yaml.safe_dump({**team_file(1, 1),
                                                          "deployment": "placed"}))
    with pytest.raises(ValueError, match=r"placed.yaml.*deploys at random|placed.yaml.*x"):
        load_scenario("placed")


def test_a_scenario_of_all_arms_gives_its_order_of_battle():
    scenario = load_scenario("combined_arms")
    assert (scenario["n_blue"], scenario["n_red"], scenario["map_width"]) == (4, 4, 1500.0)
    env = MultiBattalionEnv(**scenario)
    env.reset(seed=0)
    assert list(env._battle.state.arm) == [0, 0, 1, 2] * 2
    assert "order_of_battle" not in load_scenario("2v2")


# ---------------------------------------------------------------------------- v1 -> MAPPO

V1_OBS = 25


@pytest.fixture(scope="module")
def gaussian_checkpoint(tmp_path_factory):
    """A tiny v1 commander whose orders are one Gaussian, the head a MAPPO actor has."""
    from training.train import train

    root = tmp_path_factory.mktemp("gaussian_v1")
    train(total_timesteps=512, **tiny_config(root, policy_orders="gaussian"))
    return root / "ck" / "ppo_battalion_s42_c5_final.zip"


def v1_networks(checkpoint):
    """The v1 model's Gaussian mean and value functions."""
    model = load_ppo(checkpoint)
    policy = model.policy.eval()

    def mean(obs):
        return policy.get_distribution(obs).distribution.mean

    return mean, policy.predict_values


def assert_computes_the_v1_functions(mappo, checkpoint, atol):
    """The MAPPO team (obs 40, state 60) gives the v1 mean and value on the v1 features."""
    v1_mean, v1_value = v1_networks(checkpoint)
    x = torch.randn(32, 40, generator=torch.Generator().manual_seed(0))
    state = torch.cat([x[:, :V1_OBS], torch.randn(32, 60 - V1_OBS)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(mappo.act(x, deterministic=True)[0],
                                   v1_mean(x[:, :V1_OBS]), atol=atol, rtol=0)
        torch.testing.assert_close(mappo.get_value(state),
                                   v1_value(x[:, :V1_OBS]).squeeze(-1), atol=atol, rtol=0)


def test_v1_weights_seed_mappo_exactly(gaussian_checkpoint):
    mappo = MAPPOPolicy(obs_dim=40, action_dim=3, state_dim=60)
    report = load_v1_weights_into_mappo(gaussian_checkpoint, mappo)
    expected = {f"{net}.{layer}.{kind}" for net, layer in [
        ("actor", "trunk.0"), ("actor", "trunk.2"), ("actor", "action_mean"),
        ("critic", "trunk.0"), ("critic", "trunk.2"), ("critic", "value_head")]
        for kind in ("weight", "bias")} | {"actor.log_std"}
    assert set(report["loaded"]) == expected and report["skipped"] == []
    # The extra inputs have zero weight: the first layer ignores them.
    assert torch.all(mappo.actor.trunk[0].weight[:, V1_OBS:] == 0)
    assert torch.all(mappo.critic.trunk[0].weight[:, V1_OBS:] == 0)

    assert_computes_the_v1_functions(mappo, gaussian_checkpoint, atol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(mappo.actor.log_std,
                                   load_ppo(gaussian_checkpoint).policy.log_std)


def test_a_standardising_v1_policy_is_folded_into_the_first_layers(tmp_path):
    from stable_baselines3 import PPO

    from envs.vec_env import BattalionVecEnv
    from models.battalion_policy import BattalionMlpPolicy
    from training.ppo.checkpoints import save_ppo

    model = PPO(BattalionMlpPolicy, BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu",
                seed=1, policy_kwargs={"normalize_observations": True})
    recorded = torch.rand(300, V1_OBS, generator=torch.Generator().manual_seed(1))
    model.policy.fit_observation_statistics(recorded * torch.linspace(0.05, 3.0, V1_OBS) + 0.4)
    save_ppo(model, tmp_path / "v1.zip")

    mappo = MAPPOPolicy(obs_dim=40, action_dim=3, state_dim=60)
    report = load_v1_weights_into_mappo(tmp_path / "v1.zip", mappo)
    assert report["skipped"] == []
    assert_computes_the_v1_functions(mappo, tmp_path / "v1.zip", atol=1e-4)


def test_v1_weights_go_into_every_actor_when_not_shared(gaussian_checkpoint):
    mappo = MAPPOPolicy(obs_dim=30, action_dim=3, state_dim=40, n_agents=3,
                        share_parameters=False)
    report = load_v1_weights_into_mappo(gaussian_checkpoint, mappo)
    assert report["skipped"] == []
    x = torch.randn(5, 30)
    means = [mappo.act(x, agent_idx=i, deterministic=True)[0] for i in range(3)]
    assert torch.equal(means[0], means[1]) and torch.equal(means[0], means[2])
    assert {f"actors.{i}.log_std" for i in range(3)} <= set(report["loaded"])


def test_layers_that_do_not_fit_are_skipped_and_reported(gaussian_checkpoint):
    mappo = MAPPOPolicy(obs_dim=20, action_dim=3, state_dim=40,
                        actor_hidden_sizes=(128, 64))
    before = {k: v.clone() for k, v in mappo.state_dict().items()}
    report = load_v1_weights_into_mappo(gaussian_checkpoint, mappo)
    # obs 20 < 25 inputs; the second layer and the action head are 128 -> 64 vs 128.
    assert report["skipped"] == [
        "mlp_extractor.policy_net.0.weight", "mlp_extractor.policy_net.0.bias",
        "mlp_extractor.policy_net.2.weight", "mlp_extractor.policy_net.2.bias",
        "action_net.weight", "action_net.bias"]
    assert torch.equal(mappo.actor.trunk[0].weight, before["actor.trunk.0.weight"])
    assert "critic.value_head.weight" in report["loaded"]
    with pytest.raises(ValueError, match="strict"):
        load_v1_weights_into_mappo(gaussian_checkpoint, MAPPOPolicy(20, 3, 40), strict=True)


def test_a_v1_of_choices_seeds_the_trunks_and_reports_its_head_skipped(tiny_checkpoint):
    # The default v1 chooses its march and fire: six head outputs and one log std (the
    # wheel's), which do not fit a MAPPO actor's Gaussian head.
    assert load_ppo(tiny_checkpoint).policy.orders == "choices"
    mappo = MAPPOPolicy(obs_dim=40, action_dim=3, state_dim=60)
    report = load_v1_weights_into_mappo(tiny_checkpoint, mappo)
    assert {"actor.trunk.0.weight", "actor.trunk.2.weight", "critic.value_head.weight"} <= \
        set(report["loaded"])
    assert set(report["skipped"]) == {"action_net.weight", "action_net.bias", "log_std"}
    with pytest.raises(ValueError, match="action_net"):
        load_v1_weights_into_mappo(tiny_checkpoint, MAPPOPolicy(40, 3, 60), strict=True)


def test_layer_norm_transfer_warns(tiny_checkpoint, caplog):
    with caplog.at_level(logging.WARNING, logger="training.curriculum_scheduler"):
        load_v1_weights_into_mappo(tiny_checkpoint, MAPPOPolicy(25, 3, 25, layer_norm=True))
    assert "LayerNorm" in caplog.text


def test_v1_file_errors(tmp_path, tiny_checkpoint):
    mappo = MAPPOPolicy(40, 3, 60)
    with pytest.raises(FileNotFoundError, match="missing_model"):
        load_v1_weights_into_mappo(tmp_path / "missing_model.zip", mappo)
    no_policy = tmp_path / "no_policy.zip"
    with zipfile.ZipFile(no_policy, "w") as archive:
        archive.writestr("data", "{}")
    with pytest.raises(ValueError, match=r"no_policy.zip.*policy.pth"):
        load_v1_weights_into_mappo(no_policy, mappo)
    not_zip = tmp_path / "not_zip.zip"
    not_zip.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not_zip.zip"):
        load_v1_weights_into_mappo(not_zip, mappo)
    with pytest.raises(TypeError, match="mappo_policy"):
        load_v1_weights_into_mappo(tiny_checkpoint, torch.nn.Linear(2, 2))
