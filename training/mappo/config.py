"""MAPPOConfig: every setting of a multi-agent (MAPPO) run, each declared once with its
doc, its check and its YAML key (:mod:`training.common.settings`).

The PPO, battlefield, reward and tracking settings are the groups the duel's
TrainingConfig has too (:mod:`training.common.setting_groups`); MAPPO changes a few
of their defaults (:func:`~training.common.settings.override`).
``configs/experiment_mappo_2v2.yaml`` (the Hydra config of
``python -m training.train_mappo``) is generated from these declarations and a test
checks it; ``python -m training.mappo.config`` rewrites it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from envs.battles.multi_battalion_batch import bytes_per_battle, check_team_batch_size
from envs.battles.multi_observation import (
    ARMS_OBS_DIM,
    ARMS_STATE_DIM,
    MAX_TEAM_SIZE,
    OBS_DIM,
    STATE_DIM,
)
from envs.commanders.doctrine import EXPOSED_RANGE
from envs.commanders.orders import ORDER_DIM, OrderRewards
from envs.scenario import OrderOfBattle, ScenarioError
from envs.sim.constants import ACTION_DIM
from envs.sim.validation import (
    check_bool,
    check_count_fits,
    check_int,
    check_non_negative,
    check_number,
    check_positive,
)
from training.common.setting_groups import (
    BattlefieldSettings,
    CheckpointSettings,
    DistributedSettings,
    EloSettings,
    EvaluationSettings,
    PPOSettings,
    RewardSettings,
    SelfPlayEvaluationSettings,
    SelfPlaySettings,
    TeamBattleSettings,
    TrackingSettings,
    WarmStartSettings,
    arms_plan,
    reward_weight,
    team_doctrine,
)
from training.common.settings import (
    ConfigFile,
    ResumeOptions,
    hidden_sizes,
    non_negative_int,
    open_unit_interval,
    optional,
    override,
    path,
    positive_int,
    setting,
    text,
    unit_interval,
)
from training.curriculum_scheduler import STAGE_LABELS, load_scenario

_team_size = partial(check_int, minimum=1, maximum=MAX_TEAM_SIZE)


def _order_of_battle(name: str, value: Any) -> str | dict[str, Any] | None:
    """None, a scenario name of ``configs/scenarios/`` whose units make the order of
    battle, or a mapping ``{"blue": [...], "red": [...]}`` of units as a scenario lists
    them (:meth:`envs.scenario.OrderOfBattle.of`); returned as given once it reads."""
    if value is None:
        return None
    try:
        read_order_of_battle(value)
    except (ScenarioError, FileNotFoundError, TypeError, ValueError) as error:
        raise ValueError(f"{name}={value!r} is invalid: expected None, a scenario name of "
                         f"configs/scenarios/ or a mapping {{'blue': [...], 'red': [...]}} of "
                         f"units ({error})") from None
    return value


def read_order_of_battle(value: str | dict[str, Any]) -> OrderOfBattle:
    """The :class:`~envs.scenario.OrderOfBattle` a config's ``order_of_battle`` names."""
    if isinstance(value, str):
        return OrderOfBattle.of(load_scenario(value)["order_of_battle"])
    return OrderOfBattle.of(value)


def _stage(name: str, value: Any) -> str:
    labels = list(STAGE_LABELS.values())
    if value not in labels:
        raise ValueError(f"{name}={value!r} is invalid: expected one of {labels}")
    return value


@dataclass
class MAPPOConfig(PPOSettings, WarmStartSettings, BattlefieldSettings, TeamBattleSettings,
                  RewardSettings, TrackingSettings, DistributedSettings, CheckpointSettings,
                  EvaluationSettings, SelfPlaySettings, SelfPlayEvaluationSettings,
                  EloSettings):
    """Configuration of a MAPPO run on :class:`~envs.multi_battalion_env.MultiBattalionEnv`
    battles (Blue learns; Red is scripted or, with self-play, a frozen snapshot).

    Every field has a default matching ``configs/experiment_mappo_2v2.yaml``;
    ``docs/training.md`` explains the choices. Sample counts are in env-steps
    (one step of one battle, whatever the number of battalions in it). A run
    starts from ``v1_checkpoint`` when one is given, else imitates
    ``warm_start_doctrine`` for ``warm_start_steps`` (counted in the budget),
    else starts from scratch. The rollout rule is the duel's; samples are
    battalion-steps, so a minibatch is an ``n_minibatches``-th of Blue's samples.
    """

    # MAPPO's defaults for settings of the shared groups.
    total_timesteps: int = override(PPOSettings, "total_timesteps", default=2_000_000)
    n_envs: int = override(PPOSettings, "n_envs", default=128)
    n_epochs: int = override(PPOSettings, "n_epochs", default=5)
    device: str = override(PPOSettings, "device", default="cpu")
    # A team imitates the doctrine marching in step (envs.commanders.doctrine.InStepCommander):
    # in 2v2 it wins more than the doctrine's whole family of plans (python -m
    # benchmarks.plan_ceiling --team), and MAPPO keeps it (docs/training.md, "Marching in
    # step").
    warm_start_doctrine: str | None = override(WarmStartSettings, "warm_start_doctrine",
                                               default="in_step", check=team_doctrine)
    # As the duel's (docs/training.md, "Fine-tuning after imitation"): a clone fitted
    # closely and sampled with a small std keeps its held volley under PPO.
    warm_start_epochs: int = override(WarmStartSettings, "warm_start_epochs", default=40)
    warm_start_learning_rate: float = override(WarmStartSettings, "warm_start_learning_rate",
                                               default=3e-3)
    # In 2v2 the doctrine's own 60 m halt is not its family's best plan: halting at 75-80 m
    # wins more against L5 and its own team (python -m benchmarks.plan_ceiling --team;
    # docs/training.md, "A better plan to imitate"), and the team keeps what it imitates.
    # Marching on under fire (warm_start_exposed_range, below) is "Not waiting under fire".
    warm_start_hold_range: float = override(WarmStartSettings, "warm_start_hold_range",
                                            default=75.0)
    warm_start_exposed_range: float | None = setting(
        EXPOSED_RANGE,
        "With an in-step doctrine to imitate (in_step, concentrated; the disciplined "
        "doctrine never waits), the metres within which a battalion that sees its enemy "
        "marches on instead of waiting for its laggard ally (envs.commanders.doctrine."
        "InStepCommander's exposed_range); None: it waits wherever it leads.",
        optional(check_positive), "training.warm_start_exposed_range")
    wandb_tags: list[str] = override(TrackingSettings, "wandb_tags",
                                     default=["v2", "mappo", "2v2", "cooperative"])
    log_dir: str = override(TrackingSettings, "log_dir", default="logs/mappo")
    # Battles
    n_blue: int = setting(
        2, f"Blue battalions per battle (1-{MAX_TEAM_SIZE}); the curriculum starts smaller.",
        _team_size, "env.n_blue")
    n_red: int = setting(
        2, f"Red battalions per battle (1-{MAX_TEAM_SIZE}).", _team_size, "env.n_red")
    # Half the battles against the doctrine team: the clone of the in-step doctrine starts
    # 14 points below its teacher against that team and, trained against L5 alone, never
    # closes the gap (docs/training.md, "Marching in step").
    doctrine_share: float = setting(
        0.5, "Share of the training battles whose other side is the disciplined doctrine "
        "commanding each of its battalions (at its own 60 m halt: the doctrine team the "
        "benchmarks play) instead of scripted env.red_level; self-play deals its members "
        "among the rest.", unit_interval,
        "env.doctrine_share")
    order_of_battle: Any = setting(
        None, "Each battalion's arm, starting formation and quality: the name of a scenario "
        "of configs/scenarios/ (its units: combined_arms fields infantry, cavalry and guns a "
        "side) or {blue: [...], red: [...]} of units as a scenario lists them (e.g. cavalry, "
        "or {type: artillery, formation: limbered}); its sides' sizes must be env.n_blue and "
        "env.n_red. With one, the observations carry each unit's arm, formation, quality "
        "and disorder, the actors order formations, and the doctrine battles are commanded "
        "by the combined-arms doctrine; None: infantry of quality 1 in line.",
        _order_of_battle, "env.order_of_battle")
    warm_start_arms_plan: str = setting(
        "standard", "With an order of battle, how the combined-arms doctrine the warm start "
        "imitates uses its arms (envs.commanders.arms_doctrine.ARMS_PLANS): standard, the "
        "doctrine's own (the doctrine team's), searched, the plan found best on the "
        "combined_arms scenario against scripted L5, or line, the one found best against the "
        "doctrine on WFM-1's training battles.", arms_plan,
        "training.warm_start_arms_plan")
    formation_pull: float = setting(
        0.0, "With an order of battle, the weight of a pull of the actors' formation choices "
        "toward those of the policy MAPPO started from (its imitation, or init_policy): each "
        "minibatch adds this times the mean KL from the starting formation head's choices to "
        "the learner's, so that a long run's formation head does not drift to keeping every "
        "formation (docs/training.md, \"Arms\"); 0: no pull.",
        check_non_negative, "training.formation_pull")
    order_period: int = setting(
        0, "Steps each random order lasts (envs.commanders.orders: a posture and an objective, "
        "seen after the observation, rewarded by the order terms below; the warm start then "
        "imitates envs.commanders.orders.OrderFollower); 0: no orders. Phase 1 of the HRL "
        "curriculum trains order-following battalions so.",
        partial(check_int, minimum=0), "env.order_period")
    order_attack_share: float = setting(
        0.0, "With orders: the share of them that are attacks (advance_sector); the rest are "
        "drawn evenly from the six postures.", unit_interval, "env.order_attack_share")
    # The team reward's components the duel has no setting for.
    reward_enemy_routed_bonus: float = reward_weight("enemy_routed_bonus")
    reward_own_routing_penalty: float = reward_weight("own_routing_penalty")
    reward_order_progress: float = setting(
        OrderRewards.progress, "With orders: reward per 100 m gained towards the objective.",
        check_number, "reward.order_progress")
    reward_order_hold: float = setting(
        OrderRewards.hold, "With orders: reward per step within 40 m of the objective.",
        check_number, "reward.order_hold")
    # Networks
    share_parameters: bool = setting(
        True, "One actor for every Blue battalion; false: actor i commands battalion i.",
        check_bool, "training.share_parameters")
    actor_hidden_sizes: list[int] = setting(
        [128, 128], "Hidden layer widths of the actor (Tanh MLP, the v1 actor's shapes).",
        hidden_sizes, "training.actor_hidden_sizes")
    critic_hidden_sizes: list[int] = setting(
        [128, 128], "Hidden layer widths of the centralised critic (Tanh MLP).", hidden_sizes,
        "training.critic_hidden_sizes")
    log_std_init: float = setting(
        -3.0, "Initial log standard deviation of the orders' Gaussian (-3: std 0.05; at std "
        "0.37 the imitated doctrine's sampled orders spend its volley, and MAPPO unlearns it).",
        check_number, "training.log_std_init")
    normalize_observations: bool = setting(
        False, "Standardise each battalion's observation and critic state by their mean and "
        "spread over the imitation's demonstrations, saved with the weights; without an "
        "imitation (v1_checkpoint, no warm_start_doctrine) they pass unscaled, and with "
        "init_policy or resume they keep that file's statistics.",
        check_bool, "training.normalize_observations")
    critic_warmup_steps: int = setting(
        0, "Env-steps at the start of MAPPO (after the warm start) whose updates train the "
        "critic alone, the actor held as it started, so that the first advantages the actor "
        "follows come from a critic fitted to its own play (v1's critic saw a duel; the "
        "imitation's fitted the doctrine's returns). Counted in the budget; 0: none.",
        non_negative_int, "training.critic_warmup_steps")
    v1_checkpoint: str | None = setting(
        None, "A trained v1 (duel) commander to start from, layer for layer; it replaces the "
        "warm start. A v1 whose orders are choices (policy_orders: choices, the duel's "
        "default, or volleys) gives its trunks and critic only: its head does not fit the "
        "team's Gaussian one and is skipped, with a warning.", optional(path),
        "training.v1_checkpoint")
    init_policy: str | None = setting(
        None, "A MAPPO policy file (a pool snapshot or save_policy's file, same network "
        "shapes) to start from; it replaces the warm start and v1_checkpoint.",
        optional(path), "training.init_policy")
    # Evaluation and checkpoints
    checkpoint_dir: str = override(CheckpointSettings, "checkpoint_dir",
                                   default="checkpoints/mappo_2v2")
    eval_freq: int = override(EvaluationSettings, "eval_freq", default=100_000)
    n_eval_episodes: int = override(EvaluationSettings, "n_eval_episodes", default=50)
    # Curriculum
    curriculum: bool = setting(
        False, "Train 1v1, then 2v1, then 2v2 (configs/scenarios/), promoting on the win "
        "rate.", check_bool, "curriculum.enabled")
    curriculum_threshold: float = setting(
        0.7, "Win rate over the window that promotes to the next stage.", open_unit_interval,
        "curriculum.promote_threshold")
    curriculum_window: int = setting(
        50, "Battles in the rolling window of the win rate.", positive_int,
        "curriculum.win_rate_window")
    curriculum_initial_stage: str = setting(
        "1v1", f"The stage to start at: {', '.join(STAGE_LABELS.values())}.", _stage,
        "curriculum.initial_stage")
    # Team self-play
    self_play_pool_dir: str = override(SelfPlaySettings, "self_play_pool_dir",
                                       default="checkpoints/mappo_2v2/pool")
    self_play_snapshot_freq: int = override(SelfPlaySettings, "self_play_snapshot_freq",
                                            default=200_000)
    self_play_scripted_share: float = override(SelfPlaySettings, "self_play_scripted_share",
                                               default=0.5)
    self_play_eval_freq: int = override(SelfPlayEvaluationSettings, "self_play_eval_freq",
                                        default=200_000)
    self_play_exploitability_episodes: int = setting(
        10, "Battles against each pool member for the exploitability estimate.",
        positive_int, "self_play.exploitability_episodes")
    # Ratings
    elo_registry_path: str = override(EloSettings, "elo_registry_path",
                                      default="checkpoints/mappo_2v2/team_elo.json")
    elo_agent_name: str = setting(
        "mappo_blue", "The learner's name in the Elo registry.", text, "elo.agent_name")

    def __post_init__(self) -> None:
        super().__post_init__()
        n_units = self.n_blue + self.n_red
        self.check_rollout_memory(bytes_per_battle(n_units), self.n_blue * self.sample_bytes())
        for name in ("n_eval_episodes", "self_play_n_eval_episodes",
                     "self_play_exploitability_episodes"):
            # Evaluations play this many battles at once, as one batch.
            check_team_batch_size(name, getattr(self, name), n_units)
        if self.order_of_battle is not None:
            forces = read_order_of_battle(self.order_of_battle)
            if (forces.n_blue, forces.n_red) != (self.n_blue, self.n_red):
                raise ValueError(
                    f"order_of_battle={self.order_of_battle!r} is invalid: it fields "
                    f"{forces.n_blue} Blue and {forces.n_red} Red units, expected n_blue="
                    f"{self.n_blue} and n_red={self.n_red}")
            for name in ("curriculum", "order_period", "v1_checkpoint"):
                if getattr(self, name):
                    raise ValueError(f"{name}={getattr(self, name)!r} is invalid with an "
                                     "order_of_battle: the curriculum's stages, the orders and "
                                     "v1 commanders are infantry's; expected it off")
        elif self.formation_pull:
            raise ValueError(f"formation_pull={self.formation_pull!r} is invalid without an "
                             "order_of_battle: only actors that order formations have formation "
                             "choices to pull; expected 0")
        if self.warm_start_doctrine is not None and self.v1_checkpoint is None:
            check_count_fits("warm_start_steps", self.warm_start_steps,
                             # recorded, then copied for training
                             self.n_blue * 2 * self.sample_bytes(), "imitation samples")
        samples = self.rollout_n_steps() * self.n_envs * self.n_blue
        if self.batch_size is not None and self.batch_size > samples:
            raise ValueError(
                f"batch_size={self.batch_size} is invalid: expected at most one rollout's "
                f"samples, n_steps * n_envs * n_blue = {samples}")

    def field_kwargs(self) -> dict[str, Any]:
        """The battle settings other than the team sizes (which the curriculum changes)."""
        return {name: getattr(self, name) for name in (
            "map_width", "map_height", "max_steps", "randomize_terrain", "hill_speed_factor",
            "visibility_radius", "order_period", "order_attack_share", "reward_order_progress",
            "reward_order_hold")}

    def sample_bytes(self) -> int:
        """Memory of one battalion-step of Blue in a rollout: float32 observation, critic
        input, order and five scalars."""
        return 4 * (self.obs_dim() + self.critic_dim() + 8)

    def forces(self) -> OrderOfBattle | None:
        """The order of battle (:func:`read_order_of_battle`), or None."""
        return None if self.order_of_battle is None else read_order_of_battle(
            self.order_of_battle)

    def obs_dim(self) -> int:
        """Length of a battalion's observation: the team observation (with the arms
        block when there is an order of battle), and its order when the battalions follow
        orders."""
        if self.order_of_battle is not None:
            return ARMS_OBS_DIM
        return OBS_DIM + (ORDER_DIM if self.order_period else 0)

    def critic_dim(self) -> int:
        """Length of a battalion's critic input: its observation, then its side's global
        state."""
        state = ARMS_STATE_DIM if self.order_of_battle is not None else STATE_DIM
        return self.obs_dim() + state

    def policy_kwargs(self) -> dict[str, Any]:
        """The :class:`~models.mappo_policy.MAPPOPolicy` these settings build, but for its
        ``n_agents``."""
        return dict(obs_dim=self.obs_dim(), action_dim=ACTION_DIM, state_dim=self.critic_dim(),
                    share_parameters=self.share_parameters,
                    actor_hidden_sizes=tuple(self.actor_hidden_sizes),
                    critic_hidden_sizes=tuple(self.critic_hidden_sizes),
                    log_std_init=self.log_std_init,
                    normalize_observations=self.normalize_observations,
                    formation_orders=self.order_of_battle is not None)


CONFIG_FILE = ConfigFile("experiment_mappo_2v2", (MAPPOConfig, ResumeOptions), header="""
MAPPO on 2v2 battles against scripted Red: the configuration of
`python -m training.train_mappo` (Hydra), generated from the declarations in
training/mappo/config.py and checked against them: edit those, then run
`python -m training.mappo.config` to rewrite this file. Override any key on the command
line, e.g.
  python -m training.train_mappo training.total_timesteps=500000 self_play.enabled=true
  python -m training.train_mappo curriculum.enabled=true training.v1_checkpoint=PATH.zip
  python -m training.train_mappo resume.auto=true    # continue eval.checkpoint_dir/mappo_policy.pt
""")
"""``configs/experiment_mappo_2v2.yaml``: MAPPOConfig's settings and the ``resume`` section."""


def check_mappo_field_names(names: Any) -> None:
    """Raise ``ValueError`` naming any key that is not a MAPPOConfig field."""
    MAPPOConfig.check_field_names(names)


def mappo_config_from_nested(nested: Any) -> MAPPOConfig:
    """A MAPPOConfig from a nested mapping laid out like the experiment YAML."""
    return MAPPOConfig.from_nested(nested)


__all__ = ["CONFIG_FILE", "MAPPOConfig", "check_mappo_field_names", "mappo_config_from_nested",
           "read_order_of_battle"]

if __name__ == "__main__":
    print(f"wrote {CONFIG_FILE.write()}")
