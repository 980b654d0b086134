"""The settings of the brigade and division commanders' runs, each declared once.

:class:`EchelonConfig` holds what both share; :class:`BrigadeConfig` and
:class:`DivisionConfig` add their battles' sizes, their lower echelon and their folders.
``configs/experiment_brigade.yaml`` and ``configs/experiment_division.yaml`` are made
from these declarations (``python -m training.echelons.config`` rewrites both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from training.common.setting_groups import (
    BattlefieldSettings,
    CheckpointSettings,
    EvaluationSettings,
    PPOSettings,
    TeamBattleSettings,
    TeamSizeSettings,
    TrackingSettings,
    WarmStartSettings,
    brigade_doctrine,
)
from training.common.settings import ConfigFile, optional, override, path, positive_int, setting


@dataclass
class EchelonConfig(PPOSettings, BattlefieldSettings, TeamBattleSettings, TrackingSettings,
                    CheckpointSettings, EvaluationSettings):
    """A brigade or division commander's PPO run (``configs/experiment_brigade.yaml``,
    ``configs/experiment_division.yaml``). Steps and frequencies count the commander's
    steps (one command, ``temporal_ratio`` battalion steps)."""

    total_timesteps: int = override(PPOSettings, "total_timesteps", default=500_000)
    n_envs: int = override(PPOSettings, "n_envs", default=16)
    n_steps: int | None = override(PPOSettings, "n_steps", default=512)
    batch_size: int | None = override(PPOSettings, "batch_size", default=64)
    gamma: float = override(PPOSettings, "gamma", default=0.99)
    device: str = override(PPOSettings, "device", default="cpu")
    temporal_ratio: int = setting(
        10, "Battalion steps one command lasts (the commander's tempo).", positive_int,
        "env.temporal_ratio")
    battalion_policy: str | None = setting(
        None, "A frozen order-following battalion policy file (phase 1's mappo_policy_final.pt) "
        "that follows Blue's drills as orders; null: the drills' own orders.", optional(path),
        "hierarchy.battalion_policy")
    checkpoint_freq: int = override(EvaluationSettings, "checkpoint_freq", default=50_000)
    eval_freq: int = override(EvaluationSettings, "eval_freq", default=10_000)
    n_eval_episodes: int = override(EvaluationSettings, "n_eval_episodes", default=50)

    def battle_kwargs(self) -> dict[str, Any]:
        """The battles' settings every echelon shares (its sizes and policies apart)."""
        return dict(map_width=self.map_width, map_height=self.map_height,
                    max_steps=self.max_steps, randomize_terrain=self.randomize_terrain,
                    hill_speed_factor=self.hill_speed_factor,
                    visibility_radius=self.visibility_radius,
                    temporal_ratio=self.temporal_ratio, red_level=self.red_level)


@dataclass
class BrigadeConfig(EchelonConfig):
    """A brigade commander's run (``configs/experiment_brigade.yaml``); it takes the warm
    start's settings, counted in commander steps, without the rest of that group."""

    wandb_tags: list[str] = override(
        TrackingSettings, "wandb_tags", default=["v3", "hrl", "brigade"])
    log_dir: str = override(TrackingSettings, "log_dir", default="logs/brigade")
    total_timesteps: int = override(PPOSettings, "total_timesteps", default=500_000)
    n_blue: int = override(TeamSizeSettings, "n_blue")
    n_red: int = override(TeamSizeSettings, "n_red")
    warm_start_doctrine: str | None = override(
        WarmStartSettings, "warm_start_doctrine", default="in_step", check=brigade_doctrine)
    warm_start_steps: int = override(WarmStartSettings, "warm_start_steps", default=20_000)
    warm_start_epochs: int = override(WarmStartSettings, "warm_start_epochs", default=30)
    warm_start_learning_rate: float = override(
        WarmStartSettings, "warm_start_learning_rate", default=1e-3)
    warm_start_max_share: float = override(WarmStartSettings, "warm_start_max_share")
    checkpoint_dir: str = override(
        CheckpointSettings, "checkpoint_dir", default="checkpoints/brigade")


BRIGADE_FILE = ConfigFile("experiment_brigade", (BrigadeConfig,), header="""
A brigade commander (SB3 PPO) over frozen battalion commanders against scripted Red: the
configuration of `python -m training.train_brigade` (Hydra), generated from the
declarations in training/echelons/config.py and checked
against them: edit those, then run `python -m training.echelons.config`.
Override any key on the command line, e.g.
  python -m training.train_brigade training.total_timesteps=200000 env.red_level=3
  python -m training.train_brigade hierarchy.battalion_policy=PATH/mappo_policy_final.pt
""")


@dataclass
class DivisionConfig(EchelonConfig):
    """A division commander's run (``configs/experiment_division.yaml``)."""

    wandb_tags: list[str] = override(
        TrackingSettings, "wandb_tags", default=["v3", "hrl", "division"])
    log_dir: str = override(TrackingSettings, "log_dir", default="logs/division")
    total_timesteps: int = override(PPOSettings, "total_timesteps", default=1_000_000)
    eval_freq: int = override(EvaluationSettings, "eval_freq", default=20_000)
    checkpoint_freq: int = override(EvaluationSettings, "checkpoint_freq", default=100_000)
    n_brigades: int = setting(2, "Blue brigades.", positive_int, "env.n_brigades")
    n_blue_per_brigade: int = setting(
        2, "Battalions of each Blue brigade.", positive_int, "env.n_blue_per_brigade")
    n_red_brigades: int = setting(2, "Red brigades.", positive_int, "env.n_red_brigades")
    n_red_per_brigade: int = setting(
        2, "Battalions of each Red brigade.", positive_int, "env.n_red_per_brigade")
    brigade_policy: str | None = setting(
        None, "A frozen brigade commander (phase 2's ppo_brigade_final.zip, trained on brigades of "
        "n_blue_per_brigade) commanding each Blue brigade; null: every battalion runs the "
        "command's drill.", optional(path), "hierarchy.brigade_policy")
    checkpoint_dir: str = override(
        CheckpointSettings, "checkpoint_dir", default="checkpoints/division")


DIVISION_FILE = ConfigFile("experiment_division", (DivisionConfig,), header="""
A division commander (SB3 PPO) over frozen brigade and battalion commanders against
scripted Red: the configuration of `python -m training.train_division` (Hydra), generated
from the declarations in training/echelons/config.py and checked against them: edit
those, then run `python -m training.echelons.config`. Override any key on the command
line, e.g.
  python -m training.train_division hierarchy.brigade_policy=PATH/ppo_brigade_final.zip
""")

CONFIG_FILES = {"brigade": BRIGADE_FILE, "division": DIVISION_FILE}
"""The echelons' config files."""

__all__ = ["BRIGADE_FILE", "BrigadeConfig", "CONFIG_FILES", "DIVISION_FILE", "DivisionConfig",
           "EchelonConfig"]

if __name__ == "__main__":
    for file in CONFIG_FILES.values():
        print(f"wrote {file.write()}")
