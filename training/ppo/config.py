"""TrainingConfig: every setting of a v1 PPO run, validated, with one set of defaults.

The dataclass below is the single source of the defaults. ``configs/default.yaml``
(the Hydra config of the CLI) mirrors it in sections; :data:`YAML_KEYS` maps each
field to its YAML key, and a test checks that every value matches.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from envs.battalion_batch import BYTES_PER_BATTLE, check_duel_batch_size
from envs.observation import OBS_DIM
from envs.sim.constants import MAX_STEPS_LIMIT
from envs.sim.validation import (
    check_bool,
    check_count_fits,
    check_in_range,
    check_int,
    check_map_size,
    check_memory,
    check_non_negative,
    check_number,
    check_path,
    check_positive,
    format_count,
    memory_bytes,
    short_repr,
)
from training.common.imitation import DOCTRINES
from training.common.opponents import NAMED_OPPONENTS

ROLLOUT_SAMPLE_BYTES = 2 * 4 * (OBS_DIM + 3 + 6)
"""Memory of one env-step in SB3's rollout buffer: a float32 observation, action and
six scalars (reward, return, value, ...), copied once when the buffer is flattened."""
DEMONSTRATION_SAMPLE_BYTES = 4 * 4 * (OBS_DIM + 3 + 3)
"""Memory of one imitation sample during the warm start (observation, action, reward,
done, return as float32; held in about four copies while it is recorded and trained on)."""


def _default_training_opponents() -> list[str]:
    # Every scripted level and random play, weighted towards the fighting levels.
    return ["scripted_l1", "scripted_l2", "scripted_l3", "scripted_l4", "scripted_l5",
            "scripted_l4", "scripted_l5", "scripted_l5", "random"]


class Settings:
    """What the trainers' config dataclasses share: field names, validated copies, dicts."""

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def check_field_names(cls, names: Mapping[str, Any] | list[str]) -> None:
        """Raise ``ValueError`` naming any key that is not a field."""
        valid = cls.field_names()
        unknown = sorted(set(names) - set(valid))
        if unknown:
            raise ValueError(f"unknown {cls.__name__} field(s) {unknown}: valid fields are "
                             f"{', '.join(valid)}")

    def replace(self, **changes: Any):
        """A copy with ``changes`` applied (and validated); unknown names raise ``ValueError``."""
        self.check_field_names(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def validate_fields(self, validators: Mapping[str, Callable[[str, Any], Any]]) -> None:
        """Replace each field by its validator's result (which raises, naming the field)."""
        for name, value in dataclasses.asdict(self).items():
            validator = validators.get(name)
            if validator is not None:
                setattr(self, name, validator(name, value))

    # The rollout rule, for configs with n_envs, n_steps, rollout_steps,
    # batch_size, n_minibatches and total_timesteps (docs/training.md, "Rollout size").

    def rollout_n_steps(self) -> int:
        """Steps of every battle per rollout.

        ``n_steps`` when set; otherwise ``rollout_steps`` spread over ``n_envs``
        (rounded up), so a rollout holds the same number of env-steps whatever
        ``n_envs`` is, and no more than ``total_timesteps`` allows.
        """
        if self.n_steps is not None:
            return self.n_steps
        spread = -(-self.rollout_steps // self.n_envs)
        fits = self.total_timesteps // self.n_envs
        return max(min(spread, fits), -(-2 // self.n_envs))  # PPO needs two samples

    def check_rollout_memory(self, battle_bytes: int, sample_bytes: int) -> None:
        """Raise ``ValueError`` naming ``n_envs`` (and ``n_steps``) if the battles and one
        rollout of them would not fit in this machine's memory.

        Args:
            battle_bytes: memory of one battle of the training batch.
            sample_bytes: memory of one env-step of one battle in the rollout.
        """
        n_steps = self.rollout_n_steps()
        per_battle = battle_bytes + n_steps * sample_bytes
        limit = memory_bytes()
        fits = None if limit is None else limit // per_battle
        subject = (f"n_envs={short_repr(self.n_envs)}" if self.n_steps is None else
                   f"n_envs={short_repr(self.n_envs)} with n_steps={short_repr(n_steps)}")
        check_memory(subject, self.n_envs * per_battle,
                     f"{format_count(self.n_envs)} battles with rollouts of "
                     f"{format_count(n_steps)} steps each",
                     expected=f"at most {fits:,} battles" if fits else "a smaller n_steps")

    def minibatch_size(self, samples: int) -> int:
        """Samples per minibatch for a rollout of ``samples``: ``batch_size`` when
        set, otherwise an ``n_minibatches``-th of the rollout (rounded up)."""
        if self.batch_size is not None:
            return self.batch_size
        return max(2, -(-samples // self.n_minibatches))


@dataclass
class TrainingConfig(Settings):
    """Configuration for a single PPO training run on :class:`~envs.battalion_env.BattalionEnv`.

    All fields are optional; the defaults match ``configs/default.yaml``. Pass an
    instance to :func:`training.train.train`, or override fields as keyword
    arguments there. Defaults were chosen to learn well and fast on a 2-core
    machine; ``docs/training.md`` explains each choice.

    Examples:
        Minimal run with defaults::

            from training import train, TrainingConfig
            model = train(TrainingConfig(total_timesteps=500_000))

        Override specific fields at call time without constructing a config::

            model = train(total_timesteps=200_000, n_envs=4, enable_wandb=False)
    """

    # PPO
    total_timesteps: int = 1_000_000
    learning_rate: float = 3e-4
    # A rollout holds rollout_steps env-steps whatever n_envs is and is split into
    # n_minibatches; n_steps (per battle) or batch_size, when set, fix those instead.
    n_steps: int | None = None
    rollout_steps: int = 8192
    batch_size: int | None = None
    n_minibatches: int = 4
    n_epochs: int = 10
    gamma: float = 0.995
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    seed: int = 42
    device: str = "auto"
    torch_threads: int = 1
    policy_hidden_sizes: list[int] = field(default_factory=lambda: [128, 128])
    policy_log_std_init: float = -1.0
    warm_start_doctrine: str | None = "disciplined"
    warm_start_steps: int = 300_000
    warm_start_epochs: int = 10
    # Environment
    n_envs: int = 64
    curriculum_level: int = 5
    training_opponents: list[str] = field(default_factory=_default_training_opponents)
    map_width: float = 1000.0
    map_height: float = 1000.0
    max_steps: int = 500
    randomize_terrain: bool = True
    hill_speed_factor: float = 0.5
    # Reward
    reward_delta_enemy_strength: float = 5.0
    reward_delta_own_strength: float = 5.0
    reward_survival_bonus: float = 0.0
    reward_win_bonus: float = 10.0
    reward_loss_penalty: float = -10.0
    reward_time_penalty: float = -0.01
    reward_approach: float = 5.0
    reward_fire_cost: float = 0.0
    # Checkpoints and evaluation
    checkpoint_dir: str = "checkpoints"
    checkpoint_freq: int = 100_000
    eval_freq: int = 50_000
    n_eval_episodes: int = 20
    eval_deterministic: bool = True
    # Artifacts
    write_manifest: bool = True
    manifest_path: str = "checkpoints/manifest.jsonl"
    enable_naming_v2: bool = True
    keep_legacy_aliases: bool = True
    # Weights & Biases
    enable_wandb: bool = True
    wandb_project: str = "wargames_training"
    wandb_entity: str | None = None
    wandb_tags: list[str] = field(default_factory=lambda: ["v1", "ppo"])
    wandb_log_freq: int = 1000
    # Self-play
    enable_self_play: bool = False
    self_play_pool_dir: str = "checkpoints/pool"
    self_play_pool_max_size: int = 10
    self_play_snapshot_freq: int = 50_000
    self_play_eval_freq: int = 50_000
    self_play_n_eval_episodes: int = 20
    self_play_use_latest_for_eval: bool = False
    self_play_scripted_share: float = 0.75
    # Elo
    elo_opponents: list[str] = field(default_factory=list)
    elo_registry_path: str = "checkpoints/elo_registry.json"
    elo_eval_freq: int = 50_000
    elo_n_eval_episodes: int = 20
    # Retention
    keep_periodic: int = 5
    keep_self_play_snapshots: int = 10
    prune_on_run_end: bool = True
    # Misc
    verbose: int = 1
    log_dir: str = "logs"
    progress_bar: bool = True

    def __post_init__(self) -> None:
        self.validate_fields(_VALIDATORS)
        self.check_rollout_memory(BYTES_PER_BATTLE, ROLLOUT_SAMPLE_BYTES)
        if self.warm_start_doctrine is not None:
            check_count_fits("warm_start_steps", self.warm_start_steps,
                             DEMONSTRATION_SAMPLE_BYTES, "imitation samples")
        rollout = self.rollout_n_steps() * self.n_envs
        if self.batch_size is not None and self.batch_size > rollout:
            raise ValueError(
                f"batch_size={self.batch_size} is invalid: expected at most n_steps * n_envs "
                f"= {rollout} (one rollout)")


def check_field_names(names: Mapping[str, Any] | list[str]) -> None:
    """Raise ``ValueError`` naming any key that is not a TrainingConfig field."""
    TrainingConfig.check_field_names(names)


# --- validation ----------------------------------------------------------------

def _positive_int(name: str, value: Any) -> int:
    return check_int(name, value, minimum=1)


def _optional_positive_int(name: str, value: Any) -> int | None:
    return None if value is None else _positive_int(name, value)


def _optional_minibatch(name: str, value: Any) -> int | None:
    # PPO normalises advantages over a minibatch: one sample has no spread.
    return None if value is None else check_int(name, value, minimum=2)


def _non_negative_int(name: str, value: Any) -> int:
    return check_int(name, value, minimum=0)


def _boolean(name: str, value: Any) -> bool:
    return check_bool(name, value)


def _max_steps(name: str, value: Any) -> int:
    return check_int(name, value, minimum=1, maximum=MAX_STEPS_LIMIT)


def _map_side(name: str, value: Any) -> float:
    return check_map_size(name, value)


def _duel_batch(name: str, value: Any) -> int:
    # Evaluations play this many battles at once, as one batch.
    return check_duel_batch_size(name, value)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}={value!r} is invalid: expected a non-empty string")
    return value


def _optional_text(name: str, value: Any) -> str | None:
    return None if value is None else _text(name, value)


def _path(name: str, value: Any) -> str:
    if not isinstance(value, str):
        _text(name, value)
    return str(check_path(name, value))


def _optional_path(name: str, value: Any) -> str | None:
    return None if value is None else _path(name, value)


def _unit_interval(name: str, value: Any) -> float:
    return check_in_range(name, value, 0.0, 1.0)


def _open_unit_interval(name: str, value: Any) -> float:
    return check_in_range(name, value, 0.0, 1.0, low_open=True)


def _text_list(name: str, value: Any) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"{name}={value!r} is invalid: expected a list of strings")
    return [_text(f"{name}[{i}]", item) for i, item in enumerate(value)]


def _opponent_list(name: str, value: Any) -> list[str]:
    opponents = _text_list(name, value)
    for i, opponent in enumerate(opponents):
        if opponent not in NAMED_OPPONENTS:
            raise ValueError(f"{name}[{i}]={opponent!r} is invalid: expected one of "
                             f"{', '.join(NAMED_OPPONENTS)}")
    return opponents


def _hidden_sizes(name: str, value: Any) -> list[int]:
    if isinstance(value, (str, int)) or not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"{name}={value!r} is invalid: expected a non-empty list of ints")
    return [check_int(f"{name}[{i}]", v, minimum=1) for i, v in enumerate(value)]


def _device(name: str, value: Any) -> str:
    if value not in ("auto", "cpu", "cuda") and not (isinstance(value, str)
                                                     and value.startswith("cuda:")):
        raise ValueError(f"{name}={value!r} is invalid: expected 'auto', 'cpu', 'cuda' or "
                         "'cuda:<index>'")
    return value


def _finite(name: str, value: Any) -> float:
    return check_number(name, value)


def _learning_rate(name: str, value: Any) -> float:
    rate = check_positive(name, value)
    if not math.isfinite(rate) or rate >= 1:
        raise ValueError(f"{name}={value!r} is invalid: expected a number in (0, 1)")
    return rate


def _doctrine(name: str, value: Any) -> str | None:
    if value is not None and value not in DOCTRINES:
        raise ValueError(f"{name}={value!r} is invalid: expected null (no warm start) or one "
                         f"of {', '.join(DOCTRINES)}")
    return value


def _curriculum(name: str, value: Any) -> int:
    return check_int(name, value, minimum=1, maximum=5)


_VALIDATORS: dict[str, Callable[[str, Any], Any]] = {
    "total_timesteps": _positive_int, "learning_rate": _learning_rate,
    "n_steps": _optional_positive_int, "rollout_steps": _positive_int,
    "batch_size": _optional_minibatch, "n_minibatches": _positive_int,
    "n_epochs": _positive_int,
    "gamma": _open_unit_interval, "gae_lambda": _unit_interval,
    "clip_range": _open_unit_interval, "ent_coef": lambda n, v: check_non_negative(n, v),
    "vf_coef": lambda n, v: check_non_negative(n, v),
    "max_grad_norm": lambda n, v: check_positive(n, v), "seed": _non_negative_int,
    "device": _device, "torch_threads": _positive_int, "policy_hidden_sizes": _hidden_sizes,
    "policy_log_std_init": _finite, "warm_start_doctrine": _doctrine,
    "warm_start_steps": _positive_int, "warm_start_epochs": _positive_int,
    "n_envs": _positive_int, "curriculum_level": _curriculum,
    "training_opponents": _opponent_list,
    "map_width": _map_side, "map_height": _map_side, "max_steps": _max_steps,
    "randomize_terrain": _boolean, "hill_speed_factor": _open_unit_interval,
    **{f"reward_{name}": _finite for name in (
        "delta_enemy_strength", "delta_own_strength", "survival_bonus", "win_bonus",
        "loss_penalty", "time_penalty", "approach", "fire_cost")},
    "checkpoint_dir": _path, "checkpoint_freq": _positive_int, "eval_freq": _positive_int,
    "n_eval_episodes": _duel_batch, "eval_deterministic": _boolean,
    "write_manifest": _boolean, "manifest_path": _path, "enable_naming_v2": _boolean,
    "keep_legacy_aliases": _boolean, "enable_wandb": _boolean, "wandb_project": _text,
    "wandb_entity": _optional_text, "wandb_tags": _text_list, "wandb_log_freq": _positive_int,
    "enable_self_play": _boolean, "self_play_pool_dir": _path,
    "self_play_pool_max_size": _positive_int, "self_play_snapshot_freq": _positive_int,
    "self_play_eval_freq": _positive_int, "self_play_n_eval_episodes": _duel_batch,
    "self_play_use_latest_for_eval": _boolean, "self_play_scripted_share": _unit_interval,
    "elo_opponents": _opponent_list, "elo_registry_path": _path,
    "elo_eval_freq": _positive_int, "elo_n_eval_episodes": _duel_batch,
    "keep_periodic": _non_negative_int, "keep_self_play_snapshots": _non_negative_int,
    "prune_on_run_end": _boolean, "verbose": _non_negative_int, "log_dir": _path,
    "progress_bar": _boolean,
}

YAML_KEYS: dict[str, str] = {
    **{name: f"training.{name}" for name in (
        "total_timesteps", "learning_rate", "n_steps", "rollout_steps", "batch_size",
        "n_minibatches", "n_epochs", "gamma",
        "gae_lambda", "clip_range", "ent_coef", "vf_coef", "max_grad_norm", "seed", "device",
        "torch_threads", "policy_hidden_sizes", "policy_log_std_init", "warm_start_doctrine",
        "warm_start_steps", "warm_start_epochs")},
    "n_envs": "env.num_envs", "curriculum_level": "env.curriculum_level",
    "training_opponents": "env.opponents",
    **{name: f"env.{name}" for name in ("map_width", "map_height", "max_steps",
                                        "randomize_terrain", "hill_speed_factor")},
    **{f"reward_{name}": f"reward.{name}" for name in (
        "delta_enemy_strength", "delta_own_strength", "survival_bonus", "win_bonus",
        "loss_penalty", "time_penalty", "approach", "fire_cost")},
    "checkpoint_dir": "eval.checkpoint_dir", "checkpoint_freq": "eval.checkpoint_freq",
    "eval_freq": "eval.eval_freq", "n_eval_episodes": "eval.n_eval_episodes",
    "eval_deterministic": "eval.deterministic",
    **{name: f"artifacts.{name}" for name in ("write_manifest", "manifest_path",
                                              "enable_naming_v2", "keep_legacy_aliases")},
    "enable_wandb": "wandb.enabled", "wandb_project": "wandb.project",
    "wandb_entity": "wandb.entity", "wandb_tags": "wandb.tags",
    "wandb_log_freq": "wandb.log_freq",
    "enable_self_play": "self_play.enabled",
    **{f"self_play_{name}": f"self_play.{name}" for name in (
        "pool_dir", "pool_max_size", "snapshot_freq", "eval_freq", "n_eval_episodes",
        "use_latest_for_eval", "scripted_share")},
    "elo_opponents": "elo.opponents", "elo_registry_path": "elo.registry_path",
    "elo_eval_freq": "elo.eval_freq", "elo_n_eval_episodes": "elo.n_eval_episodes",
    **{name: f"retention.{name}" for name in ("keep_periodic", "keep_self_play_snapshots",
                                              "prune_on_run_end")},
    "verbose": "logging.verbose", "log_dir": "logging.log_dir",
    "progress_bar": "logging.progress_bar",
}
"""Where each TrainingConfig field lives in ``configs/default.yaml`` (section.key)."""


def config_from_nested(nested: Mapping[str, Any]) -> TrainingConfig:
    """A TrainingConfig from a nested mapping laid out like ``configs/default.yaml``.

    Sections the CLI uses for itself (``resume``, ``hydra``) are ignored; an
    unknown key in a known section raises ``ValueError`` naming it.
    """
    return TrainingConfig(**fields_from_nested(nested, YAML_KEYS))


def fields_from_nested(nested: Mapping[str, Any], yaml_keys: Mapping[str, str]) -> dict[str, Any]:
    """Field values from a nested mapping, given where each field lives (``section.key``).

    Sections that hold no field are ignored; an unknown key in a known section
    raises ``ValueError`` naming it and listing the section's valid keys.
    """
    by_key = {key: name for name, key in yaml_keys.items()}
    sections = {key.split(".")[0] for key in by_key}
    values: dict[str, Any] = {}
    for section, content in nested.items():
        if section not in sections:
            continue
        if not isinstance(content, Mapping):
            raise ValueError(f"config section {section!r} is invalid: expected a mapping")
        for key, value in content.items():
            name = by_key.get(f"{section}.{key}")
            if name is None:
                known = sorted(k.split(".", 1)[1] for k in by_key if k.startswith(section + "."))
                raise ValueError(f"unknown config key {section}.{key}: valid keys in "
                                 f"{section!r} are {', '.join(known)}")
            values[name] = list(value) if isinstance(value, (list, tuple)) else value
    return values
