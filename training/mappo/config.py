"""MAPPOConfig: every setting of a multi-agent (MAPPO) run, validated, with one set of defaults.

The dataclass is the single source of the defaults; ``configs/experiment_mappo_2v2.yaml``
(the Hydra config of ``python training/train_mappo.py``) mirrors it in sections,
:data:`YAML_KEYS` maps each field to its key, and a test checks they agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envs.multi_battalion_batch import bytes_per_battle, check_team_batch_size
from envs.multi_observation import CRITIC_STATE_DIM, OBS_DIM
from envs.reward import RewardWeights
from envs.sim.constants import (
    HILL_SPEED_FACTOR,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
    VISIBILITY_RADIUS,
)
from envs.sim.validation import check_count_fits, check_int, check_non_negative, check_positive
from training.curriculum_scheduler import STAGE_LABELS
from training.ppo.config import (
    Settings,
    TrainingConfig,
    _boolean,
    _device,
    _doctrine,
    _finite,
    _hidden_sizes,
    _learning_rate,
    _map_side,
    _max_steps,
    _open_unit_interval,
    _optional_path,
    _optional_positive_int,
    _optional_text,
    _path,
    _positive_int,
    _text,
    _text_list,
    _unit_interval,
    fields_from_nested,
)

_DUEL = TrainingConfig
"""The duel's training config: where the defaults both trainers share live."""

TEAM_SAMPLE_BYTES = 4 * (OBS_DIM + CRITIC_STATE_DIM + 8)
"""Memory of one battalion-step of Blue in a MAPPO rollout: float32 observation,
critic input, action and five scalars."""
TEAM_DEMONSTRATION_SAMPLE_BYTES = 2 * TEAM_SAMPLE_BYTES
"""Memory of one battalion-step of the warm start's demonstrations (recorded, then
copied for training)."""

REWARD_COMPONENTS = ("delta_enemy_strength", "delta_own_strength", "survival_bonus",
                     "win_bonus", "loss_penalty", "time_penalty", "enemy_routed_bonus",
                     "own_routing_penalty", "approach", "fire_cost")


@dataclass
class MAPPOConfig(Settings):
    """Configuration of a MAPPO run on :class:`~envs.multi_battalion_env.MultiBattalionEnv`
    battles (Blue learns; Red is scripted or, with self-play, a frozen snapshot).

    Every field has a default matching ``configs/experiment_mappo_2v2.yaml``;
    ``docs/training.md`` explains the choices. Sample counts are in env-steps
    (one step of one battle, whatever the number of battalions in it). A run
    starts from ``v1_checkpoint`` when one is given, else imitates
    ``warm_start_doctrine`` for ``warm_start_steps`` (counted in the budget),
    else starts from scratch.
    """

    # Battles
    n_envs: int = 128
    n_blue: int = 2
    n_red: int = 2
    map_width: float = MAP_WIDTH
    map_height: float = MAP_HEIGHT
    max_steps: int = MAX_STEPS
    randomize_terrain: bool = True
    hill_speed_factor: float = HILL_SPEED_FACTOR
    visibility_radius: float = VISIBILITY_RADIUS
    red_level: int = 5
    # Team reward (envs.reward.RewardWeights): the duel's training defaults, one source
    reward_delta_enemy_strength: float = _DUEL.reward_delta_enemy_strength
    reward_delta_own_strength: float = _DUEL.reward_delta_own_strength
    reward_survival_bonus: float = _DUEL.reward_survival_bonus
    reward_win_bonus: float = _DUEL.reward_win_bonus
    reward_loss_penalty: float = _DUEL.reward_loss_penalty
    reward_time_penalty: float = _DUEL.reward_time_penalty
    reward_enemy_routed_bonus: float = RewardWeights.enemy_routed_bonus
    reward_own_routing_penalty: float = RewardWeights.own_routing_penalty
    reward_approach: float = _DUEL.reward_approach
    reward_fire_cost: float = _DUEL.reward_fire_cost
    # MAPPO (the PPO constants and the rollout rule are the duel's; samples are
    # battalion-steps, so a minibatch is an n_minibatches-th of Blue's samples)
    total_timesteps: int = 2_000_000
    n_steps: int | None = None
    rollout_steps: int = _DUEL.rollout_steps
    n_epochs: int = 5
    batch_size: int | None = None
    n_minibatches: int = _DUEL.n_minibatches
    learning_rate: float = _DUEL.learning_rate
    gamma: float = _DUEL.gamma
    gae_lambda: float = _DUEL.gae_lambda
    clip_range: float = _DUEL.clip_range
    vf_coef: float = _DUEL.vf_coef
    ent_coef: float = _DUEL.ent_coef
    max_grad_norm: float = _DUEL.max_grad_norm
    share_parameters: bool = True
    actor_hidden_sizes: list[int] = field(default_factory=lambda: [128, 128])
    critic_hidden_sizes: list[int] = field(default_factory=lambda: [128, 128])
    log_std_init: float = -1.0
    v1_checkpoint: str | None = None
    warm_start_doctrine: str | None = _DUEL.warm_start_doctrine
    warm_start_steps: int = _DUEL.warm_start_steps
    warm_start_epochs: int = _DUEL.warm_start_epochs
    seed: int = 42
    device: str = "cpu"
    torch_threads: int = _DUEL.torch_threads
    # Evaluation and checkpoints
    checkpoint_dir: str = "checkpoints/mappo_2v2"
    checkpoint_freq: int = 100_000
    eval_freq: int = 100_000
    n_eval_episodes: int = 50
    # Curriculum
    curriculum: bool = False
    curriculum_threshold: float = 0.7
    curriculum_window: int = 50
    curriculum_initial_stage: str = "1v1"
    # Team self-play
    self_play: bool = False
    self_play_pool_dir: str = "checkpoints/mappo_2v2/pool"
    self_play_pool_max_size: int = 10
    self_play_snapshot_freq: int = 200_000
    self_play_scripted_share: float = 0.5
    self_play_eval_freq: int = 200_000
    self_play_n_eval_episodes: int = 20
    self_play_exploitability_episodes: int = 10
    # Ratings
    elo_registry_path: str = "checkpoints/mappo_2v2/team_elo.json"
    elo_agent_name: str = "mappo_blue"
    # Logging
    enable_wandb: bool = True
    wandb_project: str = "wargames_training"
    wandb_entity: str | None = None
    wandb_tags: list[str] = field(default_factory=lambda: ["v2", "mappo", "2v2", "cooperative"])
    log_dir: str = "logs/mappo"
    progress_bar: bool = True
    verbose: int = 1

    def __post_init__(self) -> None:
        self.validate_fields(_VALIDATORS)
        n_units = self.n_blue + self.n_red
        self.check_rollout_memory(bytes_per_battle(n_units), self.n_blue * TEAM_SAMPLE_BYTES)
        for name in ("n_eval_episodes", "self_play_n_eval_episodes",
                     "self_play_exploitability_episodes"):
            # Evaluations play this many battles at once, as one batch.
            check_team_batch_size(name, getattr(self, name), n_units)
        if self.warm_start_doctrine is not None and self.v1_checkpoint is None:
            check_count_fits("warm_start_steps", self.warm_start_steps,
                             self.n_blue * TEAM_DEMONSTRATION_SAMPLE_BYTES, "imitation samples")
        samples = self.rollout_n_steps() * self.n_envs * self.n_blue
        if self.batch_size is not None and self.batch_size > samples:
            raise ValueError(
                f"batch_size={self.batch_size} is invalid: expected at most one rollout's "
                f"samples, n_steps * n_envs * n_blue = {samples}")

    def env_kwargs(self) -> dict[str, Any]:
        """The battle settings as :class:`~envs.multi_battalion_env.MultiBattalionEnv` kwargs."""
        return {"n_blue": self.n_blue, "n_red": self.n_red, **self.field_kwargs()}

    def field_kwargs(self) -> dict[str, Any]:
        """The battle settings other than the team sizes (which the curriculum changes)."""
        return {name: getattr(self, name) for name in (
            "map_width", "map_height", "max_steps", "randomize_terrain", "hill_speed_factor",
            "visibility_radius")}

    def reward_weights(self) -> RewardWeights:
        """The team reward's weights."""
        return RewardWeights(**{name: getattr(self, f"reward_{name}")
                                for name in REWARD_COMPONENTS})


def check_mappo_field_names(names: Mapping[str, Any] | list[str]) -> None:
    """Raise ``ValueError`` naming any key that is not a MAPPOConfig field."""
    MAPPOConfig.check_field_names(names)


def _team_size(name: str, value: Any) -> int:
    from envs.multi_observation import MAX_TEAM_SIZE

    return check_int(name, value, minimum=1, maximum=MAX_TEAM_SIZE)


def _stage(name: str, value: Any) -> str:
    labels = list(STAGE_LABELS.values())
    if value not in labels:
        raise ValueError(f"{name}={value!r} is invalid: expected one of {labels}")
    return value


_VALIDATORS = {
    "n_envs": _positive_int, "n_blue": _team_size, "n_red": _team_size,
    "map_width": _map_side, "map_height": _map_side, "max_steps": _max_steps,
    "randomize_terrain": _boolean, "hill_speed_factor": _open_unit_interval,
    "visibility_radius": lambda n, v: check_positive(n, v),
    "red_level": lambda n, v: check_int(n, v, minimum=1, maximum=5),
    **{f"reward_{name}": _finite for name in REWARD_COMPONENTS},
    "total_timesteps": _positive_int, "n_steps": _optional_positive_int,
    "rollout_steps": _positive_int, "n_epochs": _positive_int,
    "batch_size": _optional_positive_int, "n_minibatches": _positive_int,
    "learning_rate": _learning_rate,
    "gamma": _open_unit_interval, "gae_lambda": _unit_interval,
    "clip_range": _open_unit_interval, "vf_coef": lambda n, v: check_non_negative(n, v),
    "ent_coef": lambda n, v: check_non_negative(n, v),
    "max_grad_norm": lambda n, v: check_positive(n, v), "share_parameters": _boolean,
    "actor_hidden_sizes": _hidden_sizes, "critic_hidden_sizes": _hidden_sizes,
    "log_std_init": _finite, "v1_checkpoint": _optional_path,
    "warm_start_doctrine": _doctrine, "warm_start_steps": _positive_int,
    "warm_start_epochs": _positive_int,
    "seed": lambda n, v: check_int(n, v, minimum=0), "device": _device,
    "torch_threads": _positive_int,
    "checkpoint_dir": _path, "checkpoint_freq": _positive_int, "eval_freq": _positive_int,
    "n_eval_episodes": _positive_int,
    "curriculum": _boolean, "curriculum_threshold": _open_unit_interval,
    "curriculum_window": _positive_int, "curriculum_initial_stage": _stage,
    "self_play": _boolean, "self_play_pool_dir": _path, "self_play_pool_max_size": _positive_int,
    "self_play_snapshot_freq": _positive_int, "self_play_scripted_share": _unit_interval,
    "self_play_eval_freq": _positive_int, "self_play_n_eval_episodes": _positive_int,
    "self_play_exploitability_episodes": _positive_int,
    "elo_registry_path": _path, "elo_agent_name": _text,
    "enable_wandb": _boolean, "wandb_project": _text, "wandb_entity": _optional_text,
    "wandb_tags": _text_list, "log_dir": _path, "progress_bar": _boolean,
    "verbose": lambda n, v: check_int(n, v, minimum=0),
}

YAML_KEYS: dict[str, str] = {
    "n_envs": "env.num_envs",
    **{name: f"env.{name}" for name in (
        "n_blue", "n_red", "map_width", "map_height", "max_steps", "randomize_terrain",
        "hill_speed_factor", "visibility_radius", "red_level")},
    **{f"reward_{name}": f"reward.{name}" for name in REWARD_COMPONENTS},
    **{name: f"training.{name}" for name in (
        "total_timesteps", "n_steps", "rollout_steps", "n_epochs", "batch_size",
        "n_minibatches", "learning_rate", "gamma",
        "gae_lambda", "clip_range", "vf_coef", "ent_coef", "max_grad_norm", "share_parameters",
        "actor_hidden_sizes", "critic_hidden_sizes", "log_std_init", "v1_checkpoint",
        "warm_start_doctrine", "warm_start_steps", "warm_start_epochs", "seed", "device",
        "torch_threads")},
    **{name: f"eval.{name}" for name in (
        "checkpoint_dir", "checkpoint_freq", "eval_freq", "n_eval_episodes")},
    "curriculum": "curriculum.enabled", "curriculum_threshold": "curriculum.promote_threshold",
    "curriculum_window": "curriculum.win_rate_window",
    "curriculum_initial_stage": "curriculum.initial_stage",
    "self_play": "self_play.enabled",
    **{f"self_play_{name}": f"self_play.{name}" for name in (
        "pool_dir", "pool_max_size", "snapshot_freq", "scripted_share", "eval_freq",
        "n_eval_episodes", "exploitability_episodes")},
    "elo_registry_path": "elo.registry_path", "elo_agent_name": "elo.agent_name",
    "enable_wandb": "wandb.enabled", "wandb_project": "wandb.project",
    "wandb_entity": "wandb.entity", "wandb_tags": "wandb.tags",
    "log_dir": "logging.log_dir", "progress_bar": "logging.progress_bar",
    "verbose": "logging.verbose",
}
"""Where each MAPPOConfig field lives in ``configs/experiment_mappo_2v2.yaml``."""


def mappo_config_from_nested(nested: Mapping[str, Any]) -> MAPPOConfig:
    """A MAPPOConfig from a nested mapping laid out like the experiment YAML."""
    return MAPPOConfig(**fields_from_nested(nested, YAML_KEYS))


__all__ = ["MAPPOConfig", "YAML_KEYS", "check_mappo_field_names", "mappo_config_from_nested"]
