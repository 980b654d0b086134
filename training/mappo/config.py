"""MAPPOConfig: every setting of a multi-agent (MAPPO) run, each declared once with its
doc, its check and its YAML key (:mod:`training.common.settings`); :data:`CONFIG_FILE` is
``configs/experiment_mappo_2v2.yaml``, which ``python -m training.mappo.config`` rewrites.
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
    ArmsPlanSettings,
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
    TeamSizeSettings,
    TrackingSettings,
    WarmStartSettings,
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
    """None, or a scenario name or units mapping that :func:`read_order_of_battle` reads."""
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
    """The :class:`~envs.scenario.OrderOfBattle` a config's ``order_of_battle`` names: a
    scenario of ``configs/scenarios/`` (its units), or ``{"blue": [...], "red": [...]}``."""
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

    Every field has a default matching ``configs/experiment_mappo_2v2.yaml`` (why:
    ``docs/defaults.md``). Sample counts are in env-steps (one step of one battle); a
    minibatch is an ``n_minibatches``-th of Blue's battalion-steps. A run starts from
    ``init_policy`` or ``v1_checkpoint`` when given, else imitates ``warm_start_doctrine``.
    """

    total_timesteps: int = override(PPOSettings, "total_timesteps", default=2_000_000)
    n_envs: int = override(PPOSettings, "n_envs", default=128)
    n_epochs: int = override(PPOSettings, "n_epochs", default=5)
    device: str = override(PPOSettings, "device", default="cpu")
    warm_start_doctrine: str | None = override(
        WarmStartSettings, "warm_start_doctrine", default="in_step", check=team_doctrine)
    warm_start_epochs: int = override(WarmStartSettings, "warm_start_epochs", default=40)
    warm_start_learning_rate: float = override(
        WarmStartSettings, "warm_start_learning_rate", default=3e-3)
    warm_start_hold_range: float = override(
        WarmStartSettings, "warm_start_hold_range", default=75.0)
    warm_start_exposed_range: float | None = setting(
        EXPOSED_RANGE, "Imitating an in-step doctrine: metres within which a battalion that sees "
        "its enemy marches on instead of waiting for its ally; None: it waits wherever it leads.",
        optional(check_positive), "training.warm_start_exposed_range")
    wandb_tags: list[str] = override(
        TrackingSettings, "wandb_tags", default=["v2", "mappo", "2v2", "cooperative"])
    log_dir: str = override(TrackingSettings, "log_dir", default="logs/mappo")
    n_blue: int = override(TeamSizeSettings, "n_blue", check=_team_size)
    n_red: int = override(TeamSizeSettings, "n_red", check=_team_size)
    doctrine_share: float = setting(
        0.5, "Share of the training battles whose Red is the doctrine team (the disciplined "
        "doctrine, 60 m halt); the rest meet env.red_level or the self-play pool.", unit_interval,
        "env.doctrine_share")
    order_of_battle: Any = setting(
        None, "Each battalion's arm, formation and quality: a scenario of configs/scenarios/ or "
        "{blue: [...], red: [...]} of units, sized env.n_blue and env.n_red; None: infantry of "
        "quality 1 in line.", _order_of_battle, "env.order_of_battle")
    warm_start_arms_plan: str = override(ArmsPlanSettings, "warm_start_arms_plan")
    formation_pull: float = setting(
        0.0, "With an order of battle, the weight of a KL pull of the actors' formation choices "
        "toward those of the policy MAPPO started from; 0: none.", check_non_negative,
        "training.formation_pull")
    order_period: int = setting(
        0, "Steps each random order (envs.commanders.orders) lasts, seen and rewarded by the "
        "battalions; 0: no orders.", partial(check_int, minimum=0), "env.order_period")
    order_attack_share: float = setting(
        0.0, "With orders: the share of them that are attacks (advance_sector); the rest are drawn "
        "evenly from the six postures.", unit_interval, "env.order_attack_share")
    reward_enemy_routed_bonus: float = reward_weight("enemy_routed_bonus")
    reward_own_routing_penalty: float = reward_weight("own_routing_penalty")
    reward_order_progress: float = setting(
        OrderRewards.progress, "With orders: reward per 100 m gained towards the objective.",
        check_number, "reward.order_progress")
    reward_order_hold: float = setting(
        OrderRewards.hold, "With orders: reward per step within 40 m of the objective.",
        check_number, "reward.order_hold")
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
        -3.0, "Initial log standard deviation of the orders' Gaussian (-3: std 0.05).",
        check_number, "training.log_std_init")
    normalize_observations: bool = setting(
        False, "Standardise observations and critic states by their spread over the imitation's "
        "demonstrations, saved with the weights; unscaled without an imitation.", check_bool,
        "training.normalize_observations")
    critic_warmup_steps: int = setting(
        0, "Env-steps at the start of MAPPO, after the warm start and counted in the budget, whose "
        "updates train the critic alone; 0: none.", non_negative_int,
        "training.critic_warmup_steps")
    v1_checkpoint: str | None = setting(
        None, "A trained v1 (duel) commander to start from instead of the warm start; one whose "
        "orders are choices gives its trunks and critic only.", optional(path),
        "training.v1_checkpoint")
    init_policy: str | None = setting(
        None, "A MAPPO policy file (a pool snapshot or save_policy's file, same network shapes) to "
        "start from; it replaces the warm start and v1_checkpoint.", optional(path),
        "training.init_policy")
    checkpoint_dir: str = override(
        CheckpointSettings, "checkpoint_dir", default="checkpoints/mappo_2v2")
    eval_freq: int = override(EvaluationSettings, "eval_freq", default=100_000)
    n_eval_episodes: int = override(EvaluationSettings, "n_eval_episodes", default=50)
    curriculum: bool = setting(
        False, "Train 1v1, then 2v1, then 2v2 (configs/scenarios/), promoting on the win rate.",
        check_bool, "curriculum.enabled")
    curriculum_threshold: float = setting(
        0.7, "Win rate over the window that promotes to the next stage.", open_unit_interval,
        "curriculum.promote_threshold")
    curriculum_window: int = setting(
        50, "Battles in the rolling window of the win rate.", positive_int,
        "curriculum.win_rate_window")
    curriculum_initial_stage: str = setting(
        "1v1", f"The stage to start at: {', '.join(STAGE_LABELS.values())}.", _stage,
        "curriculum.initial_stage")
    self_play_pool_dir: str = override(
        SelfPlaySettings, "self_play_pool_dir", default="checkpoints/mappo_2v2/pool")
    self_play_snapshot_freq: int = override(
        SelfPlaySettings, "self_play_snapshot_freq", default=200_000)
    self_play_scripted_share: float = override(
        SelfPlaySettings, "self_play_scripted_share", default=0.5)
    self_play_eval_freq: int = override(
        SelfPlayEvaluationSettings, "self_play_eval_freq", default=200_000)
    self_play_exploitability_episodes: int = setting(
        10, "Battles against each pool member for the exploitability estimate.", positive_int,
        "self_play.exploitability_episodes")
    elo_registry_path: str = override(
        EloSettings, "elo_registry_path", default="checkpoints/mappo_2v2/team_elo.json")
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
        self.check_batch_size(self.rollout_n_steps() * self.n_envs * self.n_blue,
                              "n_steps * n_envs * n_blue")

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
        """Length of a battalion's observation: the team observation (with the arms block
        with an order of battle), then its order when the battalions follow orders."""
        if self.order_of_battle is not None:
            return ARMS_OBS_DIM
        return OBS_DIM + (ORDER_DIM if self.order_period else 0)

    def critic_dim(self) -> int:
        """Length of a battalion's critic input: its observation, then its side's state."""
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


__all__ = ["CONFIG_FILE", "MAPPOConfig", "check_mappo_field_names", "read_order_of_battle"]

if __name__ == "__main__":
    print(f"wrote {CONFIG_FILE.write()}")
