"""The trainers' configs: each setting declared once, the YAML files and Hydra's schema
made from the declarations, validation that names the field."""

from __future__ import annotations

import dataclasses

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from envs.reward import RewardWeights
from training.common.settings import ConfigFile, ResumeOptions
from training.echelons.config import CONFIG_FILES as ECHELON_FILES
from training.echelons.config import BrigadeConfig, DivisionConfig
from training.league.config import CONFIG_FILES as LEAGUE_FILES
from training.mappo.config import CONFIG_FILE as MAPPO_FILE
from training.mappo.config import MAPPOConfig
from training.ppo.config import CONFIG_FILE as PPO_FILE
from training.ppo.config import TrainingConfig, config_from_nested
from training.wfm1.config import CONFIG_FILE as WFM1_FILE

FILES = [pytest.param(PPO_FILE, id="default"), pytest.param(MAPPO_FILE, id="mappo"),
         *(pytest.param(file, id=f"league-{role}") for role, file in LEAGUE_FILES.items()),
         *(pytest.param(file, id=f"echelon-{name}") for name, file in ECHELON_FILES.items()),
         pytest.param(WFM1_FILE, id="wfm1")]


def composed(file: ConfigFile, overrides: list[str] = (), name: str | None = None) -> dict:
    """The config the CLI would see, as plain containers."""
    file.register()
    # As the CLI does: the file's folder is the config path.
    with initialize_config_dir(config_dir=str(file.path.parent), version_base=None):
        cfg = compose(config_name=name or file.path.stem, overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.parametrize("file", FILES)
def test_yaml_files_are_what_the_declarations_give(file):
    regenerate = f"python -m {file.settings[0].__module__}"
    assert file.path.read_text(encoding="utf-8") == file.text(), f"run `{regenerate}`"


@pytest.mark.parametrize("file", FILES)
def test_hydra_gives_the_declared_defaults(file):
    config_class = file.settings[0]
    nested = composed(file)
    assert config_class.from_nested(nested) == config_class()
    assert ResumeOptions.from_nested(nested) == ResumeOptions()
    assert set(nested) == {key.split(".")[0] for cls in file.settings
                           for key in cls.yaml_keys().values()}


def test_every_setting_has_a_doc_a_check_and_its_own_yaml_key():
    for cls in (TrainingConfig, MAPPOConfig, BrigadeConfig, DivisionConfig, ResumeOptions):
        keys = cls.yaml_keys()
        assert len(set(keys.values())) == len(keys), cls  # no two settings share a key
        for spec in dataclasses.fields(cls):
            assert spec.metadata["doc"].strip() and callable(spec.metadata["check"]), spec.name


@pytest.mark.parametrize("overrides, message", [
    (["training.learning_rat=1e-3"], "learning_rat"),
    (["env.n_blu=3"], "n_blu"),
    (["training.seed=abc"], "training.seed"),
    (["wandb.tags=3"], "wandb.tags"),
])
def test_hydra_refuses_unknown_keys_and_wrong_types(overrides, message):
    file = MAPPO_FILE if "n_blu" in message else PPO_FILE
    with pytest.raises(ConfigCompositionException) as error:
        composed(file, overrides)
    assert message in str(error.value) + str(error.value.__cause__)


def test_hydra_refuses_an_unknown_key_in_a_yaml_file(tmp_path):
    (tmp_path / "mine.yaml").write_text(f"defaults:\n  - {PPO_FILE.schema_name}\n  - _self_\n"
                                        "training:\n  learning_rat: 0.001\n")
    PPO_FILE.register()
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        with pytest.raises(ConfigCompositionException) as error:
            compose(config_name="mine")
    assert "learning_rat" in str(error.value) + str(error.value.__cause__)


def test_an_added_key_is_still_refused_by_name():
    # Hydra lets a key through when it is added with "+"; the config refuses it.
    nested = composed(PPO_FILE, ["+training.learning_rat=1e-3"])
    with pytest.raises(ValueError, match="training.learning_rat.*learning_rate"):
        config_from_nested(nested)


def test_self_play_yaml_turns_self_play_on_over_the_defaults():
    config = config_from_nested(composed(PPO_FILE, name="self_play"))
    assert config.enable_self_play and config.total_timesteps == 2_000_000
    assert config.eval_freq == 100_000
    assert config.replace(enable_self_play=False, total_timesteps=1_000_000,
                          eval_freq=50_000) == TrainingConfig()


def test_the_shared_groups_are_the_same_settings_in_both_configs():
    duel, team = TrainingConfig(), MAPPOConfig()
    shared = set(duel.field_names()) & set(team.field_names())
    assert {"gamma", "map_width", "reward_win_bonus", "wandb_project"} <= shared
    mappo_defaults = {"total_timesteps", "n_envs", "n_epochs", "device", "wandb_tags",
                      "log_dir", "checkpoint_dir", "eval_freq", "n_eval_episodes",
                      "self_play_pool_dir", "self_play_snapshot_freq",
                      "self_play_scripted_share", "self_play_eval_freq", "elo_registry_path",
                      # the duel's imitation, measured on the duel (docs/training.md)
                      "warm_start_epochs", "warm_start_learning_rate",
                      # 2v2's best halt of the doctrine's family (plan_ceiling --team),
                      # and the team's own doctrine, marching in step
                      "warm_start_hold_range", "warm_start_doctrine"}
    for name in shared - mappo_defaults:
        assert getattr(duel, name) == getattr(team, name), name
    assert TrainingConfig.yaml_keys()["gamma"] == MAPPOConfig.yaml_keys()["gamma"]
    assert duel.reward_weights() == RewardWeights(approach=5.0)
    assert team.reward_weights() == RewardWeights(approach=5.0)
    assert MAPPOConfig(reward_enemy_routed_bonus=1.0).reward_weights().enemy_routed_bonus == 1.0
    assert (duel.warm_start_doctrine, team.warm_start_doctrine) == ("disciplined", "in_step")


@pytest.mark.parametrize("changes, field", [
    (dict(total_timesteps=0), "total_timesteps"),
    (dict(n_envs=0), "n_envs"),
    (dict(checkpoint_freq=0), "checkpoint_freq"),
    (dict(eval_freq=-1), "eval_freq"),
    (dict(learning_rate=-1e-4), "learning_rate"),
    (dict(gamma=1.5), "gamma"),
    (dict(curriculum_level=6), "curriculum_level"),
    (dict(training_opponents=["scripted_l9"]), "training_opponents"),
    (dict(device="tpu"), "device"),
    (dict(enable_wandb="yes"), "enable_wandb"),
    (dict(batch_size=1), "batch_size"),
    (dict(batch_size=10_000, n_envs=4, n_steps=128), "batch_size"),
])
def test_invalid_values_raise_naming_the_field(changes, field):
    with pytest.raises(ValueError, match=field):
        TrainingConfig(**changes)


def test_every_setting_is_checked_naming_it():
    for cls in (TrainingConfig, MAPPOConfig):
        for name in cls.field_names():
            with pytest.raises(ValueError, match=f"{name}"):
                cls(**{name: object()})


def test_unknown_field_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown.*lr.*valid fields are.*learning_rate"):
        TrainingConfig().replace(lr=1e-3)


def test_nested_config_rejects_unknown_keys():
    with pytest.raises(ValueError, match="training.learning_rat.*learning_rate"):
        config_from_nested({"training": {"learning_rat": 1e-3}})


# --- silent acceptance ---------------------------------------------------------------------

def test_a_run_that_cannot_fit_in_memory_is_refused_when_configured():
    with pytest.raises(ValueError, match=r"n_envs=1000000000000 is invalid: .* GiB of memory"):
        TrainingConfig(n_envs=10**12)
    with pytest.raises(ValueError, match=r"n_envs=1000000000000 is invalid: .* GiB of memory"):
        MAPPOConfig(n_envs=10**12)
    with pytest.raises(ValueError, match=r"n_envs=64 with n_steps=\d+ is invalid: .* GiB"):
        TrainingConfig(n_envs=64, n_steps=10**12)
    with pytest.raises(ValueError, match=r"n_eval_episodes=1000000000000 is invalid"):
        TrainingConfig(n_eval_episodes=10**12)


@pytest.mark.parametrize("changes, field", [
    (dict(map_width=1e308), "map_width"),
    (dict(map_height=5e-324), "map_height"),
    (dict(max_steps=10**9), "max_steps"),
    (dict(randomize_terrain="false"), "randomize_terrain"),
    (dict(eval_deterministic=0), "eval_deterministic"),
    (dict(checkpoint_dir="runs\0x"), "checkpoint_dir"),
])
def test_bounds_and_booleans_are_checked_in_both_configs(changes, field):
    with pytest.raises(ValueError, match=f"{field}="):
        TrainingConfig(**changes)
    if field in MAPPOConfig.field_names():
        with pytest.raises(ValueError, match=f"{field}="):
            MAPPOConfig(**changes)


@pytest.mark.parametrize("setting", ["enable_self_play", "curriculum"])
def test_a_league_role_refuses_the_mappo_extras_it_would_ignore(setting):
    from training.league.config import (
        LeagueExploiterConfig,
        MainAgentConfig,
        MainExploiterConfig,
    )

    for config_class in (MainAgentConfig, MainExploiterConfig, LeagueExploiterConfig):
        key = {"enable_self_play": "self_play"}.get(setting, setting)
        with pytest.raises(ValueError, match=f"{key}.enabled=True is invalid for a league"):
            config_class(**{setting: True})


def test_league_roles_default_to_the_tutorials_entropy_bonus():
    """The league tutorial (seed 002) tells a user to raise ``ent_coef`` in all league
    configs "from 0.01": every role's default and YAML file say 0.01; MAPPO's stays 0."""
    import yaml

    from training.league.config import LEAGUE_ENT_COEF
    from training.mappo.config import MAPPOConfig

    assert LEAGUE_ENT_COEF == 0.01
    for role, file in LEAGUE_FILES.items():
        assert file.settings[0]().ent_coef == 0.01, role
        assert yaml.safe_load(file.path.read_text())["training"]["ent_coef"] == 0.01, role
    assert MAPPOConfig().ent_coef == 0.0
