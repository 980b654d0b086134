"""TrainingConfig: every setting of a v1 PPO run, each declared once with its doc, its
check and its YAML key (:mod:`training.common.settings`); :data:`CONFIG_FILE` is
``configs/default.yaml``, which ``python -m training.ppo.config`` rewrites.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from envs.battles.battalion_batch import BYTES_PER_BATTLE, check_duel_batch_size
from envs.battles.observation import OBS_DIM
from envs.commanders.doctrine import FALL_BACK_UNTIL
from envs.sim.validation import (
    check_bool,
    check_choice,
    check_count_fits,
    check_int,
    check_non_negative,
    check_number,
    check_positive,
    check_scripted_level,
)
from models.battalion_policy import ORDER_HEADS
from training.common.imitation import ORDER_MARGIN
from training.common.setting_groups import (
    BattlefieldSettings,
    CheckpointSettings,
    EloSettings,
    EvaluationSettings,
    PPOSettings,
    RewardSettings,
    SelfPlayEvaluationSettings,
    SelfPlaySettings,
    TeacherSettings,
    TrackingSettings,
    WarmStartSettings,
)
from training.common.settings import (
    ConfigFile,
    ResumeOptions,
    hidden_sizes,
    non_negative_int,
    optional,
    override,
    path,
    positive_int,
    seed,
    setting,
    text_list,
    unit_interval,
)
from training.ppo.opponents import NAMED_OPPONENTS, is_named_opponent

ROLLOUT_SAMPLE_BYTES = 2 * 4 * (OBS_DIM + 3 + 6)
"""Memory of one env-step in SB3's rollout buffer: a float32 observation, action and
six scalars, copied once when the buffer is flattened."""
DEMONSTRATION_SAMPLE_BYTES = 4 * 4 * (OBS_DIM + 3 + 3)
"""Memory of one imitation sample (observation, action, reward, done, return as float32,
held in about four copies while it is recorded and trained on)."""
SB3_SEED_BOUND = 2**32
"""PPO's seeds are below this: SB3 seeds NumPy's 32-bit legacy generator with them."""


def _minibatch(name: str, value: Any) -> int:
    # SB3 normalises advantages over each minibatch: one sample has no spread.
    return check_int(name, value, minimum=2)


def _opponent_list(name: str, value: Any) -> list[str]:
    opponents = text_list(name, value)
    for i, opponent in enumerate(opponents):
        if not is_named_opponent(opponent):
            raise ValueError(f"{name}[{i}]={opponent!r} is invalid: expected one of "
                             f"{', '.join(NAMED_OPPONENTS)} or doctrine_<metres>")
    return opponents


def _sb3_seed(name: str, value: Any) -> int:
    """A run's seed (:func:`training.common.settings.seed`) that SB3 can take."""
    value = seed(name, value)
    if value >= SB3_SEED_BOUND:
        raise ValueError(f"{name}={value} is invalid: expected an integer in [0, 2**32) "
                         "(Stable-Baselines3 seeds NumPy's 32-bit legacy generator)")
    return value


@dataclass
class TrainingConfig(PPOSettings, WarmStartSettings, BattlefieldSettings, RewardSettings,
                     TrackingSettings, CheckpointSettings, EvaluationSettings,
                     SelfPlaySettings, SelfPlayEvaluationSettings, EloSettings):
    """Configuration for a single PPO training run on :class:`~envs.battalion_env.BattalionEnv`.

    All fields are optional; the defaults match ``configs/default.yaml`` (why they are
    what they are: ``docs/defaults.md``). Pass an instance to :func:`training.train.train`,
    or override fields as keyword arguments there.

    Examples:
        Minimal run with defaults::

            from training import train, TrainingConfig
            model = train(TrainingConfig(total_timesteps=500_000))

        Override specific fields at call time without constructing a config::

            model = train(total_timesteps=200_000, n_envs=4, enable_wandb=False)
    """

    batch_size: int | None = override(PPOSettings, "batch_size", check=optional(_minibatch))
    seed: int = override(PPOSettings, "seed", check=_sb3_seed)
    warm_start_learning_rate: float = override(
        WarmStartSettings, "warm_start_learning_rate", default=3e-3)
    warm_start_hold_range: float = override(
        WarmStartSettings, "warm_start_hold_range", default=70.0)
    warm_start_fall_back_uphill: bool = setting(
        True, "The imitated doctrine falls back from a hidden enemy that stands higher instead "
        f"of climbing to it blind, until {FALL_BACK_UNTIL:g} of the battle's time has passed.",
        check_bool, "training.warm_start_fall_back_uphill")
    warm_start_spent_hold_range: float | None = setting(
        60.0, "Metres at which the imitated doctrine halts for an enemy in sight that has spent "
        "its volley; null: warm_start_hold_range.", optional(check_positive),
        "training.warm_start_spent_hold_range")
    warm_start_order_margin: float = setting(
        ORDER_MARGIN, "How far past a bound of the order space the imitation aims an order the "
        "doctrine gives at that bound; 0: at the bound.", check_non_negative,
        "training.warm_start_order_margin")
    policy_hidden_sizes: list[int] = setting(
        [128, 128], "Hidden layer widths of the actor and of the critic (separate Tanh MLPs).",
        hidden_sizes, "training.policy_hidden_sizes")
    policy_log_std_init: float = setting(
        -3.0, "Initial log standard deviation of the orders' Gaussian (-3: std 0.05).",
        check_number, "training.policy_log_std_init")
    policy_orders: str = setting(
        "choices", "How the policy orders: gaussian, one Gaussian over move, rotate and fire; "
        "choices, march and fire as one of six pairs, the wheel Gaussian (models.order_choices); "
        "volleys, those choices with firing barred until loaded.",
        partial(check_choice, choices=ORDER_HEADS), "training.policy_orders")
    policy_normalize_observations: bool = setting(
        True, "Standardise each observed feature by its mean and spread in the first recorded play "
        "(demonstrations, else a first rollout); saved with the weights.", check_bool,
        "training.policy_normalize_observations")
    teacher_coef: float = override(TeacherSettings, "teacher_coef")
    teacher_decay_steps: int = override(TeacherSettings, "teacher_decay_steps")
    curriculum_level: int = setting(
        5, "Scripted level (1-5) of Red in the evaluations, and in training when env.opponents is "
        "empty; part of the checkpoint names.", check_scripted_level, "env.curriculum_level")
    training_opponents: list[str] = setting(
        ["scripted_l5", "doctrine", "scripted_l1"], "Red's commanders, met in turn in the training "
        "battles (scripted_l1..5, random, doctrine, doctrine_<metres>; a repeat weights an entry); "
        "empty: scripted env.curriculum_level.", _opponent_list, "env.opponents")
    scripted_fire_ramp: float = setting(
        0.0, "Share of the budget over which scripted Red's infantry fire in the training battles "
        "rises from none to full (training.ppo.callbacks.ramped_fire_scale); 0: full.",
        unit_interval, "env.scripted_fire_ramp")
    n_eval_episodes: int = override(
        EvaluationSettings, "n_eval_episodes", check=check_duel_batch_size)
    eval_deterministic: bool = setting(
        True, "Evaluate the policy's mean orders rather than samples.", check_bool,
        "eval.deterministic")
    write_manifest: bool = setting(
        True, "Index every checkpoint in the manifest.", check_bool, "artifacts.write_manifest")
    manifest_path: str = setting(
        "checkpoints/manifest.jsonl", "The manifest: one JSON line per artifact.", path,
        "artifacts.manifest_path")
    enable_naming_v2: bool = setting(
        True, "Name checkpoints with the seed and level (ppo_battalion_s42_c5_...); false: the "
        "plain ppo_battalion_... names.", check_bool, "artifacts.enable_naming_v2")
    keep_legacy_aliases: bool = setting(
        True, "With v2 names, also save the final model as ppo_battalion_final.zip.", check_bool,
        "artifacts.keep_legacy_aliases")
    wandb_log_freq: int = setting(
        1000, "Env-steps between the rollout statistics logged to W&B.", positive_int,
        "wandb.log_freq")
    self_play_n_eval_episodes: int = override(
        SelfPlayEvaluationSettings, "self_play_n_eval_episodes", check=check_duel_batch_size)
    self_play_use_latest_for_eval: bool = setting(
        False, "Evaluate against the newest snapshot rather than a random member.", check_bool,
        "self_play.use_latest_for_eval")
    elo_opponents: list[str] = setting(
        [], "Opponents to rate the learner against (names as in env.opponents); empty: no Elo "
        "evaluation.", _opponent_list, "elo.opponents")
    elo_eval_freq: int = setting(
        50_000, "Env-steps between Elo evaluations.", positive_int, "elo.eval_freq")
    elo_n_eval_episodes: int = setting(
        20, "Battles per opponent per Elo evaluation, played as one batch.", check_duel_batch_size,
        "elo.n_eval_episodes")
    keep_periodic: int = setting(
        5, "Periodic checkpoints kept at the end of a run (0: all).", non_negative_int,
        "retention.keep_periodic")
    keep_self_play_snapshots: int = setting(
        10, "Self-play snapshots kept at the end of a run (0: all).", non_negative_int,
        "retention.keep_self_play_snapshots")
    prune_on_run_end: bool = setting(
        True, "Delete the older checkpoints and snapshots when the run ends.", check_bool,
        "retention.prune_on_run_end")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_rollout_memory(BYTES_PER_BATTLE, ROLLOUT_SAMPLE_BYTES)
        if self.warm_start_doctrine is not None:
            check_count_fits("warm_start_steps", self.warm_start_steps,
                             DEMONSTRATION_SAMPLE_BYTES, "imitation samples")
        self.check_batch_size(self.rollout_n_steps() * self.n_envs, "n_steps * n_envs")


CONFIG_FILE = ConfigFile("default", (TrainingConfig, ResumeOptions), header="""
Configuration of `python -m training.train` (Hydra), generated from the declarations in
training/ppo/config.py and checked against them: edit those, then run
`python -m training.ppo.config` to rewrite this file. Override any key on the command
line, e.g.
  python -m training.train training.learning_rate=1e-4 env.curriculum_level=3
  python -m training.train resume.auto=true
""")
"""``configs/default.yaml``: TrainingConfig's settings and the ``resume`` section."""


def check_field_names(names: Any) -> None:
    """Raise ``ValueError`` naming any key that is not a TrainingConfig field."""
    TrainingConfig.check_field_names(names)


def config_from_nested(nested: Any) -> TrainingConfig:
    """A TrainingConfig from a nested mapping laid out like ``configs/default.yaml``
    (see :meth:`~training.common.settings.Settings.from_nested`)."""
    return TrainingConfig.from_nested(nested)


__all__ = ["CONFIG_FILE", "TrainingConfig", "check_field_names", "config_from_nested"]

if __name__ == "__main__":
    print(f"wrote {CONFIG_FILE.write()}")
