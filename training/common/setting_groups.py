"""The groups of settings several trainers have, each setting declared once.

The trainers' configs inherit the groups they use and change a default or check with
:func:`~training.common.settings.override`; a group of settings that trainers take one by
one (:class:`TeamSizeSettings`, :class:`ArmsPlanSettings`, :class:`TeacherSettings`) is
declared here too. Why the defaults are what they are: ``docs/defaults.md``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from functools import partial
from typing import Any

from envs.commanders.arms_doctrine import ARMS_PLANS
from envs.reward import COMPONENTS, RewardWeights
from envs.sim.constants import (
    HILL_SPEED_FACTOR,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
    MAX_STEPS_LIMIT,
    VISIBILITY_RADIUS,
)
from envs.sim.validation import (
    check_bool,
    check_int,
    check_map_size,
    check_memory,
    check_non_negative,
    check_number,
    check_positive,
    check_scripted_level,
    format_count,
    memory_bytes,
    short_repr,
)
from training.common.device import check_device_name
from training.common.imitation import BRIGADE_DOCTRINES, DOCTRINES, HOLD_RANGE, TEAM_DOCTRINES
from training.common.settings import (
    Settings,
    non_negative_int,
    open_unit_interval,
    optional,
    path,
    positive_int,
    seed,
    setting,
    text,
    text_list,
    unit_interval,
)

logger = logging.getLogger(__name__)


def step_size(name: str, value: Any) -> float:
    """A step size in (0, 1)."""
    rate = check_positive(name, value)
    if not math.isfinite(rate) or rate >= 1:
        raise ValueError(f"{name}={value!r} is invalid: expected a number in (0, 1)")
    return rate


def _one_of_doctrines(name: str, value: Any, doctrines: tuple[str, ...],
                      hint: str = "") -> str | None:
    """``value`` if it is None or one of ``doctrines``, else ``ValueError`` (with ``hint``)."""
    if value is not None and value not in doctrines:
        raise ValueError(f"{name}={value!r} is invalid: expected null (no warm start) or one "
                         f"of {', '.join(doctrines)}{hint}")
    return value


def doctrine(name: str, value: Any) -> str | None:
    """A doctrine a battalion can imitate, or None."""
    hint = " (a team doctrine: MAPPO's)" if value in TEAM_DOCTRINES else ""
    return _one_of_doctrines(name, value, DOCTRINES, hint)


def brigade_doctrine(name: str, value: Any) -> str | None:
    """A doctrine a brigadier can imitate, or None."""
    return _one_of_doctrines(name, value, BRIGADE_DOCTRINES)


def team_doctrine(name: str, value: Any) -> str | None:
    """A doctrine a team can imitate, or None."""
    return _one_of_doctrines(name, value, TEAM_DOCTRINES)


def arms_plan(name: str, value: Any) -> str:
    """A plan of :data:`envs.commanders.arms_doctrine.ARMS_PLANS`, by name."""
    if value not in ARMS_PLANS:
        raise ValueError(f"{name}={value!r} is invalid: expected one of "
                         f"{', '.join(ARMS_PLANS)}")
    return value


@dataclass
class PPOSettings(Settings):
    """A PPO run: budget, battles per batch, rollout, update constants (the rollout rule:
    ``docs/training.md``, "Rollout size")."""

    total_timesteps: int = setting(
        1_000_000, "Env-steps to train, warm-start demonstrations included; training runs whole "
        "rollouts until it is reached.", positive_int, "training.total_timesteps")
    n_envs: int = setting(
        64, "Battles stepped together, as one batch.", positive_int, "env.num_envs")
    learning_rate: float = setting(
        3e-4, "Adam's step size (constant).", step_size, "training.learning_rate")
    n_steps: int | None = setting(
        None, "Steps of every battle per rollout; null: rollout_steps spread over the battles.",
        optional(positive_int), "training.n_steps")
    rollout_steps: int = setting(
        8192, "Env-steps per rollout when n_steps is null, whatever the number of battles.",
        positive_int, "training.rollout_steps")
    batch_size: int | None = setting(
        None, "Samples per minibatch; null: an n_minibatches-th of the rollout.",
        optional(positive_int), "training.batch_size")
    n_minibatches: int = setting(
        4, "Minibatches per pass when batch_size is null.", positive_int, "training.n_minibatches")
    n_epochs: int = setting(10, "Passes over each rollout.", positive_int, "training.n_epochs")
    gamma: float = setting(
        0.995, "Discount per step (battles last 100 to 300 steps).", open_unit_interval,
        "training.gamma")
    gae_lambda: float = setting(
        0.95, "GAE's lambda: 0 is one-step TD, 1 Monte Carlo returns.", unit_interval,
        "training.gae_lambda")
    clip_range: float = setting(
        0.2, "How far PPO lets the probability ratio move from 1.", open_unit_interval,
        "training.clip_range")
    ent_coef: float = setting(
        0.0, "Weight of the entropy bonus in the loss.", check_non_negative, "training.ent_coef")
    vf_coef: float = setting(
        0.5, "Weight of the value loss in the loss.", check_non_negative, "training.vf_coef")
    max_grad_norm: float = setting(
        0.5, "Gradients are clipped to this global norm.", check_positive, "training.max_grad_norm")
    target_kl: float | None = setting(
        None, "Stop an update's passes at the first minibatch whose approx-KL exceeds 1.5 times "
        "this (SB3's rule); null: every pass runs.", optional(check_positive), "training.target_kl")
    seed: int = setting(
        42, "Seed of the battles, the network's initial weights and the dealing of opponents.",
        seed, "training.seed")
    device: str = setting(
        "auto", "Torch device: auto, cpu, cuda or cuda:<index>.", check_device_name,
        "training.device")
    torch_threads: int = setting(1, "Torch's CPU threads.", positive_int, "training.torch_threads")

    def rollout_n_steps(self) -> int:
        """Steps of every battle per rollout: ``n_steps`` when set, otherwise
        ``rollout_steps`` spread over ``n_envs`` (rounded up), no more than
        ``total_timesteps`` allows."""
        if self.n_steps is not None:
            return self.n_steps
        spread = -(-self.rollout_steps // self.n_envs)
        fits = self.total_timesteps // self.n_envs
        return max(min(spread, fits), -(-2 // self.n_envs))  # PPO needs two samples

    def rollout_size(self) -> tuple[int, int]:
        """``(n_steps, n_steps * n_envs)``: steps of every battle per rollout, and the
        env-steps a rollout holds.

        Raises:
            ValueError: if ``total_timesteps`` is less than one rollout.
        """
        n_steps = self.rollout_n_steps()
        if self.total_timesteps < n_steps * self.n_envs:
            raise ValueError(f"total_timesteps={self.total_timesteps} is invalid: expected at "
                             f"least one rollout, n_steps * n_envs = {n_steps * self.n_envs}")
        return n_steps, n_steps * self.n_envs

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

    def check_batch_size(self, samples: int, formula: str) -> None:
        """Raise ``ValueError`` if ``batch_size`` is set above one rollout's ``samples``
        (``formula`` says how they are counted)."""
        if self.batch_size is not None and self.batch_size > samples:
            raise ValueError(f"batch_size={self.batch_size} is invalid: expected at most one "
                             f"rollout's samples, {formula} = {samples}")

    def minibatch_size(self, samples: int) -> int:
        """Samples per minibatch for a rollout of ``samples``: ``batch_size`` when
        set, otherwise an ``n_minibatches``-th of the rollout (rounded up)."""
        if self.batch_size is not None:
            return self.batch_size
        return max(2, -(-samples // self.n_minibatches))


def warm_start_budget(settings: Any, total_timesteps: int) -> int:
    """Env-steps of imitation for a run of ``total_timesteps``: ``warm_start_steps``, cut
    to ``warm_start_max_share`` of the budget (logged when it is cut). ``settings`` need
    declare only those two (the brigade's config takes them without the whole group)."""
    cap = int(settings.warm_start_max_share * total_timesteps)
    if settings.warm_start_steps > cap:
        logger.warning("warm start cut from %d to %d steps: warm_start_max_share=%s of "
                       "total_timesteps=%d", settings.warm_start_steps, cap,
                       settings.warm_start_max_share, total_timesteps)
        return cap
    return settings.warm_start_steps


@dataclass
class WarmStartSettings(Settings):
    """Imitating a hand-written doctrine before PPO (the battalion trainers')."""

    warm_start_doctrine: str | None = setting(
        "disciplined", "Doctrine imitated before PPO (behaviour cloning of its orders); null "
        "starts from scratch.", doctrine, "training.warm_start_doctrine")
    warm_start_steps: int = setting(
        300_000, "Env-steps of the doctrine's battles imitated before PPO, counted in "
        "total_timesteps (WFM-1 takes 0: none).", positive_int, "training.warm_start_steps")
    warm_start_epochs: int = setting(
        10, "Passes over the demonstrations.", positive_int, "training.warm_start_epochs")
    warm_start_learning_rate: float = setting(
        1e-3, "Adam's step size while imitating the doctrine (constant).", step_size,
        "training.warm_start_learning_rate")
    warm_start_hold_range: float = setting(
        HOLD_RANGE, "Metres at which the imitated doctrine halts and opens fire (the evaluation "
        "doctrine: 60).", check_positive, "training.warm_start_hold_range")
    warm_start_max_share: float = setting(
        0.3, "Largest share of total_timesteps the imitation may take; a longer warm_start_steps "
        "is cut to it (logged).", unit_interval, "training.warm_start_max_share")

    warm_start_budget = warm_start_budget  # the function above, as a method


@dataclass
class ArmsPlanSettings(Settings):
    """How a combined-arms teacher uses its arms (MAPPO's and WFM-1's)."""

    warm_start_arms_plan: str = setting(
        "standard", "The plan (envs.commanders.arms_doctrine.ARMS_PLANS; WFM-1: perhaps +RULE) by "
        "which the combined-arms doctrine Blue imitates uses its arms; standard: its own.",
        arms_plan, "training.warm_start_arms_plan")


@dataclass
class TeacherSettings(Settings):
    """A pull toward the imitated teacher during PPO (the duel's and WFM-1's)."""

    teacher_coef: float = setting(
        1.0, "Weight at the first PPO update of a loss pulling the learner toward the teacher's "
        "orders on its own states; 0, or no teacher: plain PPO.", check_non_negative,
        "training.teacher_coef")
    teacher_decay_steps: int = setting(
        700_000, "Env-steps of PPO over which teacher_coef falls linearly to 0; null (WFM-1): it "
        "stays.", positive_int, "training.teacher_decay_steps")


@dataclass
class BattlefieldSettings(Settings):
    """The ground the training battles are fought on."""

    map_width: float = setting(MAP_WIDTH, "Map width in metres.", check_map_size, "env.map_width")
    map_height: float = setting(
        MAP_HEIGHT, "Map height in metres.", check_map_size, "env.map_height")
    max_steps: int = setting(
        MAX_STEPS, "Steps after which a battle is called a draw.",
        partial(check_int, minimum=1, maximum=MAX_STEPS_LIMIT), "env.max_steps")
    randomize_terrain: bool = setting(
        True, "Draw new hills and woods for every battle; false: open ground.", check_bool,
        "env.randomize_terrain")
    hill_speed_factor: float = setting(
        HILL_SPEED_FACTOR, "Speed on the highest ground as a fraction of speed on the lowest.",
        open_unit_interval, "env.hill_speed_factor")


@dataclass
class TeamSizeSettings(Settings):
    """The sides' sizes of N-vs-M battles (MAPPO's and the brigade's)."""

    n_blue: int = setting(2, "Blue battalions per battle.", positive_int, "env.n_blue")
    n_red: int = setting(2, "Red battalions per battle.", positive_int, "env.n_red")


@dataclass
class TeamBattleSettings(Settings):
    """What the battalions of N-vs-M battles see, and who commands Red."""

    visibility_radius: float = setting(
        VISIBILITY_RADIUS, "Metres a battalion sees (fog of war).", check_positive,
        "env.visibility_radius")
    red_level: int = setting(
        5, "Scripted level (1-5) of Red, in training and in the evaluations.", check_scripted_level,
        "env.red_level")


def reward_weight(component: str, default: float | None = None) -> Any:
    """The setting ``reward_<component>``: the weight of one component of
    :class:`~envs.reward.RewardWeights` (its default there unless ``default`` is given)."""
    if component not in COMPONENTS:
        raise ValueError(f"component={component!r} is invalid: expected one of {COMPONENTS}")
    return setting(getattr(RewardWeights, component) if default is None else default,
                   f"Weight of the reward's {component} component (envs.reward.RewardWeights "
                   "says what it pays for).", check_number, f"reward.{component}")


@dataclass
class RewardSettings(Settings):
    """The reward's weights (:class:`~envs.reward.RewardWeights`); components a
    config has no setting for keep RewardWeights' defaults."""

    reward_delta_enemy_strength: float = reward_weight("delta_enemy_strength")
    reward_delta_own_strength: float = reward_weight("delta_own_strength")
    reward_survival_bonus: float = reward_weight("survival_bonus")
    reward_win_bonus: float = reward_weight("win_bonus")
    reward_loss_penalty: float = reward_weight("loss_penalty")
    reward_time_penalty: float = reward_weight("time_penalty")
    reward_approach: float = reward_weight("approach", 5.0)
    reward_fire_cost: float = reward_weight("fire_cost")

    def reward_weights(self) -> RewardWeights:
        """The reward's weights."""
        return RewardWeights(**{name: getattr(self, f"reward_{name}") for name in COMPONENTS
                                if hasattr(self, f"reward_{name}")})


@dataclass
class CheckpointSettings(Settings):
    """Where a run's checkpoints go."""

    checkpoint_dir: str = setting(
        "checkpoints", "Folder of the run's checkpoints and final model.", path,
        "eval.checkpoint_dir")


@dataclass
class EvaluationSettings(Settings):
    """How often a run checkpoints and evaluates its learner."""

    checkpoint_freq: int = setting(
        100_000, "Env-steps between periodic checkpoints.", positive_int, "eval.checkpoint_freq")
    eval_freq: int = setting(
        50_000, "Env-steps between evaluations: against scripted Red, or a league role's matches "
        "(Elo, Nash, diversity, resets).", positive_int, "eval.eval_freq")
    n_eval_episodes: int = setting(
        20, "Battles per evaluation, played as one batch.", positive_int, "eval.n_eval_episodes")


@dataclass
class SelfPlaySettings(Settings):
    """Self-play: in a share of the training battles Red is one of the learner's past
    snapshots, dealt from a pool on disk."""

    enable_self_play: bool = setting(
        False, "Deal Red from a pool of the learner's past snapshots in some battles.", check_bool,
        "self_play.enabled")
    self_play_pool_dir: str = setting(
        "checkpoints/pool", "Folder of the self-play pool (snapshots already there are dealt too).",
        path, "self_play.pool_dir")
    self_play_pool_max_size: int = setting(
        10, "Snapshots the pool keeps (the oldest leaves first).", positive_int,
        "self_play.pool_max_size")
    self_play_snapshot_freq: int = setting(
        50_000, "Env-steps between snapshots into the pool.", positive_int,
        "self_play.snapshot_freq")
    self_play_scripted_share: float = setting(
        0.75, "Share of the training battles whose Red stays scripted.", unit_interval,
        "self_play.scripted_share")


@dataclass
class SelfPlayEvaluationSettings(Settings):
    """Matches of the learner against members of its self-play pool."""

    self_play_eval_freq: int = setting(
        50_000, "Env-steps between evaluations against a pool member.", positive_int,
        "self_play.eval_freq")
    self_play_n_eval_episodes: int = setting(
        20, "Battles per evaluation against the pool, played as one batch.", positive_int,
        "self_play.n_eval_episodes")


@dataclass
class EloSettings(Settings):
    """Where a run keeps its Elo ratings."""

    elo_registry_path: str = setting(
        "checkpoints/elo_registry.json", "The Elo ratings file.", path, "elo.registry_path")


@dataclass
class TrackingSettings(Settings):
    """Where a run reports: Weights & Biases, TensorBoard, the console."""

    enable_wandb: bool = setting(
        True, "Log to Weights & Biases (online with an API key, otherwise offline under "
        "log_dir/wandb).", check_bool, "wandb.enabled")
    wandb_project: str = setting("wargames_training", "W&B project.", text, "wandb.project")
    wandb_entity: str | None = setting(
        None, "W&B entity (user or team); null: your default.", optional(text), "wandb.entity")
    wandb_tags: list[str] = setting(["v1", "ppo"], "W&B run tags.", text_list, "wandb.tags")
    log_dir: str = setting(
        "logs", "Folder of the TensorBoard logs (and of offline W&B runs).", path,
        "logging.log_dir")
    progress_bar: bool = setting(True, "Show a progress bar.", check_bool, "logging.progress_bar")
    verbose: int = setting(
        1, "Console output: 0 silent, 1 progress and results.", non_negative_int, "logging.verbose")


@dataclass
class DistributedSettings(Settings):
    """Where rollouts and evaluation matches run: in this process, or on Ray workers, which
    return the same rollout bit for bit (``docs/distributed.md``)."""

    distributed: bool = setting(
        False, "Collect rollouts and play evaluation matches on Ray workers (pip install -e "
        "'.[distributed]').", check_bool, "distributed.enabled")
    distributed_num_workers: int | None = setting(
        None, "Ray workers; null: one per CPU of the cluster (num_cpus / num_cpus_per_worker).",
        optional(positive_int), "distributed.num_workers")
    distributed_num_cpus_per_worker: float = setting(
        1.0, "Logical CPUs each worker reserves.", check_positive,
        "distributed.num_cpus_per_worker")
    distributed_timeout_s: float = setting(
        600.0, "Seconds a worker may take over one job (a rollout part, a match) before the run "
        "stops with an error naming it.", check_positive, "distributed.timeout_s")
    ray_address: str | None = setting(
        None, "A running Ray cluster ('auto', 'host:port', 'ray://host:10001'); null: start a "
        "local one on loopback.", optional(text), "ray.address")
    ray_num_cpus: int | None = setting(
        None, "Logical CPUs of a local cluster; null: this machine's cores (at least what the "
        "workers reserve).", optional(positive_int), "ray.num_cpus")
