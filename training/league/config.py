"""The settings of the league's roles, each declared once (:mod:`training.common.settings`).

A role's config is a :class:`~training.mappo.config.MAPPOConfig` plus the ``league``
section; the roles share one league directory (:data:`LEAGUE_DIR`). :data:`CONFIG_FILES`
are ``configs/league/*.yaml``, which ``python -m training.league.config`` rewrites.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass, make_dataclass
from functools import partial
from pathlib import Path
from typing import Any

from envs.battles.multi_battalion_batch import check_team_batch_size
from envs.battles.multi_observation import MAX_TEAM_SIZE
from envs.sim.validation import check_choice, check_identifier, check_positive
from training.common.setting_groups import EvaluationSettings, PPOSettings, TrackingSettings
from training.common.settings import (
    ConfigFile,
    ResumeOptions,
    Settings,
    default_of,
    non_negative_int,
    open_unit_interval,
    override,
    path,
    positive_int,
    setting,
    text_list,
    unit_interval,
)
from training.league.layout import ELO_FILE, MATCHES_FILE, POOL_FILE, SNAPSHOT_FOLDER
from training.league.matchmaking import MATCHMAKING
from training.league.resets import RESET_RULES
from training.mappo.config import MAPPOConfig

LEAGUE_DIR = "checkpoints/league"
"""Where the roles' files live unless told otherwise."""
LEAGUE_LOG_DIR = "logs/league"
"""Where the roles' TensorBoard logs live unless told otherwise (``<this>/<role>``)."""
LEAGUE_ENT_COEF = 0.01
"""Every role's entropy bonus (``training.ent_coef``) unless told otherwise."""


def _eval_batch_size(name: str, value: Any) -> int:
    """An evaluation batch: at least one battle, and no more than fit in memory at the
    largest team size."""
    return check_team_batch_size(name, value, 2 * MAX_TEAM_SIZE)


def _role_dir(role: str) -> str:
    return f"{LEAGUE_DIR}/{role}"


@dataclass
class LeagueSettings(Settings):
    """The ``league`` section every role has."""

    agent_id: str = setting(
        "main_agent_001", "The live learner's id (snapshots are {agent_id}_v{version:06d}).",
        check_identifier, "league.agent_id")
    matchmaking: str = setting(
        "pfsp", f"Who the role meets: {', '.join(MATCHMAKING)} (training/league/matchmaking.py).",
        partial(check_choice, choices=MATCHMAKING), "league.matchmaking")
    snapshot_freq: int = setting(
        100_000, "Env-steps between snapshots into the role's pool.", positive_int,
        "league.snapshot_freq")
    eval_freq: int = override(EvaluationSettings, "eval_freq", yaml="league.eval_freq")
    n_eval_episodes: int = override(
        EvaluationSettings, "n_eval_episodes", check=_eval_batch_size,
        yaml="league.n_eval_episodes")
    pfsp_temperature: float = setting(
        1.0, "PFSP temperature T of f_T(w) = (1 - w)^(1/T) (1: hard opponents first).",
        check_positive, "league.pfsp_temperature")
    unknown_win_rate: float = setting(
        0.5, "Win rate assumed against a member never met.", unit_interval,
        "league.unknown_win_rate")
    opponents_per_rollout: int = setting(
        4, "Opponents drawn per rollout, each commanding Red in an equal share of the battles.",
        positive_int, "league.opponents_per_rollout")
    scripted_share: float = setting(
        0.25, "Share of the training battles against scripted env.red_level.", unit_interval,
        "league.scripted_share")
    log_interval: int = setting(
        2_000, "Env-steps between training log lines.", positive_int, "league.log_interval")
    pool_max_size: int = setting(
        200, "Snapshots the role's pool keeps (the oldest leave first).", positive_int,
        "league.pool_max_size")
    pool_manifest: str = setting(
        f"{_role_dir('main_agent')}/{POOL_FILE}", "The role's own pool manifest.", path,
        "league.pool_manifest")
    snapshot_dir: str = setting(
        f"{_role_dir('main_agent')}/{SNAPSHOT_FOLDER}", "Folder of the role's snapshot files.",
        path, "league.snapshot_dir")
    match_db_path: str = setting(
        f"{LEAGUE_DIR}/{MATCHES_FILE}", "The league's match log, shared by the roles.", path,
        "league.match_db_path")


@dataclass
class ResetSettings(Settings):
    """The exploiters' reset rule."""

    reset_rule: str = setting(
        "rolling", "rolling: reset when the mean of the last reset_window_size evaluation win "
        "rates falls below reset_win_rate_threshold; alphastar: the checkpoint-and-reset gate.",
        partial(check_choice, choices=RESET_RULES), "league.reset_rule")
    reset_win_rate_threshold: float = setting(
        0.30, "Rolling rule: reset below this mean win rate.", unit_interval,
        "league.reset_win_rate_threshold")
    reset_window_size: int = setting(
        5, "Rolling rule: evaluations in the window.", positive_int, "league.reset_window_size")
    gate_min_steps: int = setting(
        200_000, "Gate: env-steps since the last gate before the next.", positive_int,
        "league.gate_min_steps")
    gate_max_steps: int = setting(
        400_000, "Gate: env-steps after which it opens whatever the win rates.", positive_int,
        "league.gate_max_steps")
    gate_win_rate: float = setting(
        0.7, "Gate: opens early once the least win rate against the targets exceeds this.",
        open_unit_interval, "league.gate_win_rate")


_PER_ROLE = (  # (group, setting, default for role): the defaults that differ by role
    (TrackingSettings, "wandb_tags", lambda role: ["v4", "league", role]),
    (TrackingSettings, "log_dir", lambda role: f"{LEAGUE_LOG_DIR}/{role}"),
    (MAPPOConfig, "checkpoint_dir", _role_dir),
    (MAPPOConfig, "elo_registry_path", lambda role: f"{LEAGUE_DIR}/{ELO_FILE}"),
    (LeagueSettings, "agent_id", lambda role: f"{role}_001"),
    (LeagueSettings, "pool_manifest", lambda role: f"{_role_dir(role)}/{POOL_FILE}"),
    (LeagueSettings, "snapshot_dir", lambda role: f"{_role_dir(role)}/{SNAPSHOT_FOLDER}"),
)


class _RoleChecks:
    """What a role's config refuses of the MAPPO settings it inherits: the league deals
    the opponents and trains one team size."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, key in (("enable_self_play", "self_play.enabled"),
                          ("curriculum", "curriculum.enabled")):
            if getattr(self, name):
                raise ValueError(f"{key}=True is invalid for a league role: expected false "
                                 "(the league chooses the opponents, league.matchmaking, and "
                                 "trains env.n_blue against env.n_red)")


def _role_base(role: str, bases: tuple[type, ...], *, total_timesteps: int, seed: int,
               scripted_share: float) -> type:
    """``bases`` with the defaults of ``role``: its folders and names under
    :data:`LEAGUE_DIR`, its budget, seed and scripted share."""
    given = {(PPOSettings, "total_timesteps"): total_timesteps, (PPOSettings, "seed"): seed,
             (LeagueSettings, "scripted_share"): scripted_share,
             # The league section's evaluation settings, not MAPPO's (which no role runs).
             (LeagueSettings, "eval_freq"): 50_000, (LeagueSettings, "n_eval_episodes"): 20,
             (PPOSettings, "ent_coef"): LEAGUE_ENT_COEF,
             (MAPPOConfig, "doctrine_share"): 0.0,
             **{(group, name): default(role) for group, name, default in _PER_ROLE}}
    fields = [(name, typing.get_type_hints(group)[name], override(group, name, default=value))
              for (group, name), value in given.items()]
    return make_dataclass(f"{role}_defaults", fields, bases=(_RoleChecks, *bases))


@dataclass
class MainAgentConfig(_role_base("main_agent", (MAPPOConfig, LeagueSettings),
                                 total_timesteps=5_000_000, seed=42, scripted_share=0.25)):
    """The main agent: meets every league member; never resets."""

    opponent_pool_manifests: list[str] = setting(
        [f"{_role_dir(role)}/{POOL_FILE}" for role in ("main_exploiter", "league_exploiter")],
        "The exploiters' pools, whose members the main agent meets too.", text_list,
        "league.opponent_pool_manifests")

    def league_pools(self) -> list[str]:
        return list(self.opponent_pool_manifests)


@dataclass
class MainExploiterConfig(_role_base("main_exploiter",
                                     (MAPPOConfig, LeagueSettings, ResetSettings),
                                     total_timesteps=3_000_000, seed=43, scripted_share=0.0)):
    """The main exploiter: meets the main agent only; resets."""

    main_agent_pool_manifest: str = setting(
        f"{_role_dir('main_agent')}/{POOL_FILE}", "The main agent's pool (read only).", path,
        "league.main_agent_pool_manifest")

    def league_pools(self) -> list[str]:
        return [self.main_agent_pool_manifest]


@dataclass
class LeagueExploiterConfig(_role_base("league_exploiter",
                                       (MAPPOConfig, LeagueSettings, ResetSettings),
                                       total_timesteps=3_000_000, seed=44, scripted_share=0.0)):
    """The league exploiter: meets every member outside its lineage; resets; measures
    the league's exploitability."""

    additional_pool_manifests: list[str] = setting(
        [f"{_role_dir('main_agent')}/{POOL_FILE}", f"{_role_dir('main_exploiter')}/{POOL_FILE}"],
        "The other roles' pools (read only).", text_list, "league.additional_pool_manifests")
    reset_probability: float = setting(
        0.25, "Gate rule: chance of a reset at each gate.", unit_interval,
        "league.reset_probability")
    exploitability_eval_freq: int = setting(
        100_000, "Env-steps between exploitability estimates (0: never).", non_negative_int,
        "league.exploitability_eval_freq")
    n_exploitability_opponents: int = setting(
        10, "Members sampled (without replacement) per exploitability estimate.", positive_int,
        "league.n_exploitability_opponents")

    def league_pools(self) -> list[str]:
        return list(self.additional_pool_manifests)


_HEADER = """
League role {role} (v4): the configuration of
`python -m training.league.{module} --config-path configs/league --config-name {role}`
(Hydra), generated from the declarations in training/league/config.py and checked
against them: edit those, then run `python -m training.league.config`. Override any key
on the command line, e.g.
  python training/league/{module}.py training.total_timesteps=5000000 league.pfsp_temperature=1.0
Start all three roles on one league with `python -m training.league`.
"""

ROLE_MODULES = {"main_agent": "train_main_agent", "main_exploiter": "train_exploiter",
                "league_exploiter": "train_league_exploiter"}
"""The module of each role's command line, ``python -m training.league.<module>``."""

CONFIG_FILES = {
    role: ConfigFile(f"league/{role}", (config, ResumeOptions),
                     header=_HEADER.format(role=role, module=ROLE_MODULES[role]))
    for role, config in (("main_agent", MainAgentConfig),
                         ("main_exploiter", MainExploiterConfig),
                         ("league_exploiter", LeagueExploiterConfig))
}
"""The roles' Hydra config files, by role."""


def league_dir_settings(role: str, league_dir: str | Path) -> dict[str, Any]:
    """The settings of ``role``'s config that move its files into the league folder
    ``league_dir`` (field name -> value), for a config built in Python.

    Every path setting whose default lies under :data:`LEAGUE_DIR` (its pool, snapshots
    and checkpoints, the other roles' pools, the match log, the Elo file) moves to the
    same place under ``league_dir``, and every one under :data:`LEAGUE_LOG_DIR` to
    ``<league_dir>/logs``; the settings are found from their declarations, not listed.
    """
    return {spec.name: value for spec, value in _moved(role, league_dir)}


def league_dir_overrides(role: str, league_dir: str | Path) -> list[str]:
    """The same as :func:`league_dir_settings`, as Hydra overrides for the role's command
    line: ``["section.key=value", ...]``, values quoted for Hydra."""
    return [f"{spec.metadata['yaml']}=" + (
        "[" + ",".join(hydra_quoted(v) for v in value) + "]" if isinstance(value, list)
        else hydra_quoted(value)) for spec, value in _moved(role, league_dir)]


def _moved(role: str, league_dir: str | Path) -> list[tuple[dataclasses.Field, Any]]:
    """(declaration, value under ``league_dir``) of every path setting of ``role`` that
    :func:`league_dir_settings` moves."""
    folder = Path(league_dir)
    moves = ((LEAGUE_DIR, folder), (LEAGUE_LOG_DIR, folder / "logs"))

    def moved(value: str) -> str:
        for root, to in moves:
            if value == root or value.startswith(root + "/"):
                return str(to / value[len(root):].lstrip("/"))
        return value

    found = []
    for settings in CONFIG_FILES[role].settings:
        for spec in dataclasses.fields(settings):
            default = default_of(spec)
            if isinstance(default, str) and moved(default) != default:
                found.append((spec, moved(default)))
            elif isinstance(default, list) and default and all(
                    isinstance(v, str) for v in default) and [moved(v) for v in default] != default:
                found.append((spec, [moved(v) for v in default]))
    return found


def hydra_quoted(text: str) -> str:
    """``text`` as a quoted string of Hydra's override grammar (any characters kept:
    quotes escaped, backslashes doubled where they precede one or the end)."""
    return "'" + re.sub(r"(\\+)(?='|$)", r"\1\1", text).replace("'", "\\'") + "'"


__all__ = ["CONFIG_FILES", "LEAGUE_DIR", "LEAGUE_LOG_DIR", "LeagueExploiterConfig",
           "LeagueSettings", "MainAgentConfig", "MainExploiterConfig", "ROLE_MODULES",
           "ResetSettings", "hydra_quoted", "league_dir_overrides", "league_dir_settings"]

if __name__ == "__main__":
    for config_file in CONFIG_FILES.values():
        print(f"wrote {config_file.write()}")
