"""TrainingConfig: one source of defaults, validation that names the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from training.ppo.config import YAML_KEYS, TrainingConfig, config_from_nested

DEFAULT_YAML = Path(__file__).resolve().parents[2] / "configs" / "default.yaml"


def test_default_yaml_matches_the_dataclass_field_for_field():
    nested = OmegaConf.to_container(OmegaConf.load(DEFAULT_YAML), resolve=True)
    assert config_from_nested(nested) == TrainingConfig()
    listed = {f"{section}.{key}" for section, keys in nested.items()
              if section != "resume" for key in keys}
    assert listed == set(YAML_KEYS.values())  # nothing missing, nothing extra
    assert nested["resume"] == {"auto": False, "checkpoint": None}


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
    (dict(batch_size=10_000, n_envs=4, n_steps=128), "batch_size"),
])
def test_invalid_values_raise_naming_the_field(changes, field):
    with pytest.raises(ValueError, match=field):
        TrainingConfig(**changes)


def test_unknown_field_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown.*lr.*valid fields are.*learning_rate"):
        TrainingConfig().replace(lr=1e-3)


def test_nested_config_rejects_unknown_keys():
    with pytest.raises(ValueError, match="training.learning_rat.*learning_rate"):
        config_from_nested({"training": {"learning_rat": 1e-3}})


def test_self_play_yaml_turns_self_play_on_over_the_defaults():
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(DEFAULT_YAML.parent), version_base=None):
        cfg = compose(config_name="self_play")
    config = config_from_nested(OmegaConf.to_container(cfg, resolve=True))
    assert config.enable_self_play and config.total_timesteps == 2_000_000
    assert config.eval_freq == 100_000
    assert config.replace(enable_self_play=False, total_timesteps=1_000_000,
                          eval_freq=50_000) == TrainingConfig()


# --- issue 11, silent acceptance ------------------------------------------------------------

def test_a_run_that_cannot_fit_in_memory_is_refused_when_configured():
    from training.mappo.config import MAPPOConfig

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
    from training.mappo.config import MAPPOConfig

    with pytest.raises(ValueError, match=f"{field}="):
        TrainingConfig(**changes)
    if field in MAPPOConfig.field_names():
        with pytest.raises(ValueError, match=f"{field}="):
            MAPPOConfig(**changes)
