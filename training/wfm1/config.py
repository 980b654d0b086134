"""The settings of WFM-1's multi-task training, each declared once; :data:`CONFIG_FILE` is
``configs/wfm1_train.yaml``, which ``python -m training.wfm1.config`` rewrites.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from envs.battles.echelon_tokens import brigade_count
from envs.battles.entity_tokens import ENTITY_TOKEN_DIM, MAX_TOKENS
from envs.battles.multi_battalion_batch import bytes_per_battle
from envs.sim.validation import check_bool, check_int, check_positive
from models.limits import check_dimension
from training.common.setting_groups import (
    ArmsPlanSettings,
    BattlefieldSettings,
    CheckpointSettings,
    PPOSettings,
    SelfPlaySettings,
    TeacherSettings,
    TrackingSettings,
    WarmStartSettings,
)
from training.common.settings import (
    ConfigFile,
    ResumeOptions,
    non_negative_int,
    optional,
    override,
    positive_int,
    setting,
    text_list,
    unit_interval,
)
from training.wfm1.lookahead import Lookahead, candidate
from training.wfm1.scenarios import MAX_SIDE

TOKEN_SAMPLE_BYTES = 4 * (ENTITY_TOKEN_DIM + 7) + 2
"""Memory of one token-step of a WFM-1 rollout: its float32 features, action, teacher's
action and log-probability, and its two masks (a battle-step holds ``2 * max_side``); a
formation-ordering policy's action and the teacher's label each hold one float32 more."""
ECHELON_TOKEN_BYTES = 4 * ENTITY_TOKEN_DIM + 1
"""Memory of one brigade or division token of a rollout step (``model.echelon_tokens``):
its float32 features and its padding mask."""


def teacher_plan(name: str, value: Any) -> str:
    """A plan of ARMS_PLANS by name, perhaps with an attack rule after a ``+`` (a
    :func:`~training.wfm1.lookahead.candidate`'s name)."""
    if not isinstance(value, str):
        raise ValueError(f"{name}={value!r} is invalid: expected a plan's name, perhaps with "
                         "+RULE")
    try:
        candidate(value)
    except ValueError as error:
        raise ValueError(f"{name}={value!r} is invalid: {error}") from None
    return value


def lookahead_plans(name: str, value: Any) -> list[str]:
    """The lookahead teacher's candidates (:class:`~training.wfm1.lookahead.Lookahead`'s
    ``plans``), or [] for none."""
    plans = text_list(name, value)
    if plans:
        try:
            Lookahead(tuple(plans))
        except ValueError as error:
            raise ValueError(f"{name}={plans!r} is invalid: {error}") from None
    return plans


@dataclass
class WFM1TrainConfig(PPOSettings, TrackingSettings, CheckpointSettings, SelfPlaySettings):
    """WFM-1 trained by PPO over a distribution of scenarios (``configs/wfm1_train.yaml``;
    why the defaults: ``docs/defaults.md``).

    Each rollout plays ``n_envs`` battles: ``n_envs / scenarios_per_rollout`` battles of
    each of ``scenarios_per_rollout`` scenarios, new ones every ``resample_every``
    rollouts. Steps count battle steps (every Blue unit acts in each).
    """

    total_timesteps: int = override(PPOSettings, "total_timesteps", default=10_000_000)
    n_envs: int = override(PPOSettings, "n_envs", default=64)
    n_steps: int | None = override(PPOSettings, "n_steps", default=512)
    batch_size: int | None = override(PPOSettings, "batch_size", default=256)
    n_epochs: int = override(PPOSettings, "n_epochs", default=4)
    ent_coef: float = override(PPOSettings, "ent_coef", default=0.01)
    device: str = override(PPOSettings, "device", default="cpu")
    wandb_project: str = override(TrackingSettings, "wandb_project", default="wargames-wfm1")
    wandb_tags: list[str] = override(TrackingSettings, "wandb_tags", default=["wfm1"])
    log_dir: str = override(TrackingSettings, "log_dir", default="logs/wfm1")

    scenarios_per_rollout: int = setting(
        8, "Scenarios each rollout plays, n_envs / this battles of each.", positive_int,
        "scenarios.per_rollout")
    resample_every: int = setting(
        1, "Rollouts between draws of new scenarios.", positive_int, "scenarios.resample_every")
    max_side: int = setting(
        MAX_SIDE, "Most units a side fields in a training scenario.", positive_int,
        "scenarios.max_side")
    gis_share: float = setting(
        0.25, "Share of training scenarios on a battle site's sector (else procedural).",
        unit_interval, "scenarios.gis_share")
    max_steps: int = override(
        BattlefieldSettings, "max_steps", default=500, yaml="scenarios.max_steps")
    warm_start_steps: int = override(WarmStartSettings, "warm_start_steps", check=non_negative_int)
    warm_start_epochs: int = override(WarmStartSettings, "warm_start_epochs", default=5)
    warm_start_learning_rate: float = override(WarmStartSettings, "warm_start_learning_rate")
    warm_start_dagger_rounds: int = setting(
        0, "DAgger rounds after the imitation, each playing warm_start_dagger_steps on the "
        "policy's means and refitting on the teacher's labels (counted in the budget); 0: none.",
        non_negative_int, "training.warm_start_dagger_rounds")
    warm_start_dagger_steps: int = setting(
        100_000, "Battle steps each DAgger round plays.", positive_int,
        "training.warm_start_dagger_steps")
    warm_start_arms_plan: str = override(
        ArmsPlanSettings, "warm_start_arms_plan", check=teacher_plan)
    warm_start_lookahead: list[str] = setting(
        [], "Candidate plans (ARMS_PLANS, perhaps +RULE) among which Blue's teacher chooses by "
        "playing each ahead on a copy of the battles (training.wfm1.lookahead); []: "
        "warm_start_arms_plan.", lookahead_plans, "training.warm_start_lookahead")
    warm_start_lookahead_every: int = setting(
        25, "Battle steps between two searches of the lookahead teacher.", positive_int,
        "training.warm_start_lookahead_every")
    warm_start_lookahead_horizon: int = setting(
        75, "Battle steps the lookahead teacher plays each candidate ahead.", positive_int,
        "training.warm_start_lookahead_horizon")
    warm_start_std: float = setting(
        0.2, "Standard deviation of every action after the warm start (which fits the means only).",
        check_positive, "training.warm_start_std")
    teacher_coef: float = override(TeacherSettings, "teacher_coef", default=0.0)
    teacher_decay_steps: int | None = override(
        TeacherSettings, "teacher_decay_steps", default=None, check=optional(positive_int))
    validate_every_updates: int = setting(
        0, "Updates between evaluations on fixed validation battles of training scenarios; the "
        "best is kept as wfm1_best.pt. 0: none.", non_negative_int, "validation.every_updates")
    validation_scenarios: int = setting(
        8, "Training scenarios of the validation battles.", positive_int, "validation.scenarios")
    validation_battles: int = setting(
        8, "Validation battles of each of those scenarios.", positive_int,
        "validation.battles_per_scenario")
    self_play_pool_dir: str = override(
        SelfPlaySettings, "self_play_pool_dir", default="checkpoints/wfm1/pool")
    self_play_snapshot_freq: int = override(
        SelfPlaySettings, "self_play_snapshot_freq", default=200_000)
    self_play_scripted_share: float = override(
        SelfPlaySettings, "self_play_scripted_share", default=0.5)
    # The model.* settings say what the policy reads and travel in its kwargs; they are
    # bounded as WFM1Policy bounds them (models/limits.py), so a config that checks builds.
    d_model: int = setting(128, "Width of the token embeddings.", check_dimension, "model.d_model")
    n_heads: int = setting(8, "Attention heads.", check_dimension, "model.n_heads")
    n_echelon_layers: int = setting(
        4, "Layers of the echelon encoder.", check_dimension, "model.n_echelon_layers")
    n_cross_layers: int = setting(
        2, "Layers of the cross-echelon transformer.", check_dimension, "model.n_cross_layers")
    formation_orders: bool = setting(
        False, "The policy orders each unit's formation; false: the combined-arms drill does.",
        check_bool, "model.formation_orders")
    echelon_tokens: bool = setting(
        False, "The policy also reads its side's brigade and division tokens as context; false: "
        "battalion tokens alone.", check_bool, "model.echelon_tokens")
    brigade_size: int = setting(
        4, "Battalions a brigade token groups, with model.echelon_tokens.",
        partial(check_int, minimum=1, maximum=MAX_TOKENS), "model.brigade_size")
    checkpoint_every_updates: int = setting(
        200, "Updates between checkpoints (wfm1_<steps>_steps.pt and wfm1_latest.pt).",
        positive_int, "checkpoint.every_updates")
    checkpoint_dir: str = override(
        CheckpointSettings, "checkpoint_dir", default="checkpoints/wfm1", yaml="checkpoint.dir")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("max_side", self.max_side, minimum=1, maximum=MAX_SIDE)
        if self.n_envs % self.scenarios_per_rollout:
            raise ValueError(f"n_envs={self.n_envs} is invalid: expected a multiple of "
                             f"scenarios.per_rollout={self.scenarios_per_rollout}")
        if candidate(self.warm_start_arms_plan)[0] != "standard" and not self.formation_orders:
            # Without a formation head Blue's formations follow the drill, which is the
            # doctrine's own in validation, the benchmark and play: the plan's would be
            # taught in training only.
            raise ValueError(f"training.warm_start_arms_plan={self.warm_start_arms_plan!r} is "
                             "invalid without model.formation_orders=true: a plan's formations "
                             "are part of what it teaches, and only a formation head carries "
                             "them beyond training (or keep the plan standard)")
        if self.warm_start_lookahead:
            if not self.formation_orders:
                raise ValueError("training.warm_start_lookahead is invalid without "
                                 "model.formation_orders=true: the candidates' formations are "
                                 "part of what the teacher teaches")
            if self.warm_start_arms_plan != "standard":
                raise ValueError("training.warm_start_lookahead and training.warm_start_arms_"
                                 f"plan={self.warm_start_arms_plan!r} are both set: expected "
                                 "one (the lookahead's candidates are Blue's plans)")
        if self.d_model % self.n_heads:
            raise ValueError(f"model.d_model={self.d_model} is invalid: expected a multiple "
                             f"of model.n_heads={self.n_heads}")
        # Refused here rather than by a MemoryError an hour into the run.
        n_tokens = 2 * self.max_side
        echelon_bytes = (ECHELON_TOKEN_BYTES * (brigade_count(n_tokens, self.brigade_size) + 2)
                         if self.echelon_tokens else 0)
        self.check_rollout_memory(bytes_per_battle(n_tokens),
                                  n_tokens * (TOKEN_SAMPLE_BYTES + 8 * self.formation_orders)
                                  + echelon_bytes)

    @property
    def battles_per_scenario(self) -> int:
        return self.n_envs // self.scenarios_per_rollout

    def model_kwargs(self) -> dict[str, Any]:
        """The policy's size, whether it orders formations and whether it reads the
        brigade and division tokens, for :class:`models.wfm1.WFM1Policy`."""
        return dict(d_model=self.d_model, n_heads=self.n_heads,
                    n_echelon_layers=self.n_echelon_layers, n_cross_layers=self.n_cross_layers,
                    formation_orders=self.formation_orders, echelon_tokens=self.echelon_tokens,
                    brigade_size=self.brigade_size)


CONFIG_FILE = ConfigFile("wfm1_train", (WFM1TrainConfig, ResumeOptions), header="""
WFM-1, one generalist commander over entity tokens, trained by PPO over a distribution of
scenarios (1v1 to 16v16, all arms, procedural ground and the four battle sites, four
weathers) against the combined-arms doctrine (and, with self_play.enabled, against past
snapshots of itself in a share of the scenarios): the configuration of
`python -m training.train_wfm1` (Hydra), generated from the declarations in
training/wfm1/config.py and checked against them: edit those, then run
`python -m training.wfm1.config`. Override any key on the command line, e.g.
  python -m training.train_wfm1 training.total_timesteps=2000000 env.num_envs=32
""")

__all__ = ["CONFIG_FILE", "WFM1TrainConfig"]

if __name__ == "__main__":
    print(f"wrote {CONFIG_FILE.write()}")
