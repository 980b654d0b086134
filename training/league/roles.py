"""The league's three roles: the main agent, the main exploiter and the league exploiter.

Each is a :class:`~training.league.role.LeagueRole` (the exploiters an
:class:`~training.league.exploiters.ExploiterRole`) differing in whom it meets, its
metric names and what it does after an evaluation. Their documented homes, and command
lines, are :mod:`training.league.train_main_agent`,
:mod:`training.league.train_exploiter` and :mod:`training.league.train_league_exploiter`,
which import them from here; the command line itself is
:func:`training.league.launch.run_role_cli`, which finds a role's class in
:data:`ROLE_CLASSES`. So the imports point one way: the role modules (the command lines)
to :mod:`training.league.launch` to this module to :mod:`training.league.role`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from training.common.schedule import EveryNSteps
from training.league.exploiters import ExploiterRole, reset_rule_of
from training.league.records import AgentRecord, AgentType
from training.league.resets import ResetRule
from training.league.role import LeagueRole
from training.league.role_config import LeagueFiles, RoleSettings
from training.mappo.battles import WIN, play_team_battles


def role_parts(agent_pool: Any, match_database: Any, matchmaker: Any, elo_registry: Any, *,
               run: Any = None, folder_lock: Any = None, **settings: Any) -> dict[str, Any]:
    """:class:`~training.league.role.LeagueRole`'s arguments from the roles' constructors'
    (the reference API's): the league's files, the :class:`RoleSettings`, ``run`` and
    ``folder_lock``."""
    return dict(files=LeagueFiles(agent_pool, match_database, matchmaker, elo_registry),
                settings=RoleSettings(**settings), run=run, folder_lock=folder_lock)


class MainAgentTrainer(LeagueRole):
    """The main agent (:class:`~training.league.role.LeagueRole`): meets every league
    member (its own past snapshots, both exploiters' and the scripted share), by the
    config's matchmaking rule; never resets. Metrics: ``elo/main_agent``,
    ``matchup/win_rate/{opponent}``, ``league/nash_entropy``,
    ``league/diversity_score``, ``league/pool_size``, ``train/*``.

    The other arguments (``trainer``, ``agent_pool``, ``match_database``, ``matchmaker``,
    ``elo_registry``, ``agent_id``, ``snapshot_dir``, ``snapshot_freq``, ``eval_freq``,
    ``n_eval_episodes``, ``log_interval``, ``checkpoint_dir``, ``checkpoint_freq``) are
    as for :class:`LeagueRole`.

    Args:
        pfsp_temperature: the PFSP temperature (the matchmaker's weight function
            becomes :func:`~training.league.pfsp.make_pfsp_weight_fn` of it).
        **league: :class:`LeagueRole`'s keyword-only arguments (``league_pools``, the
            exploiters' manifests; ``matchmaking``; ...).
    """

    agent_type = AgentType.MAIN_AGENT

    def __init__(self, trainer, agent_pool, match_database, matchmaker, elo_registry,
                 agent_id: str = "main_agent_001",
                 snapshot_dir: str | Path = "checkpoints/league/main_agent/snapshots",
                 snapshot_freq: int = 100_000, eval_freq: int = 50_000,
                 n_eval_episodes: int = 20, pfsp_temperature: float = 1.0,
                 log_interval: int = 2_000, checkpoint_dir: str | Path | None = None,
                 checkpoint_freq: int = 100_000, **league: Any) -> None:
        super().__init__(trainer, **role_parts(
            agent_pool, match_database, matchmaker, elo_registry, agent_id=agent_id,
            snapshot_dir=snapshot_dir, snapshot_freq=snapshot_freq, eval_freq=eval_freq,
            n_eval_episodes=n_eval_episodes, log_interval=log_interval,
            checkpoint_dir=checkpoint_dir, checkpoint_freq=checkpoint_freq,
            pfsp_temperature=pfsp_temperature, **league))


class MainExploiterTrainer(ExploiterRole):
    """The main exploiter: meets main-agent snapshots only (the newest under ``pfsp``;
    the published rule under ``alphastar``) and resets when it stops beating them.

    Metrics (the reference API's names): ``exploiter/win_rate_vs_main``,
    ``exploiter/rolling_win_rate_vs_main``, ``exploiter/mean_win_rate_vs_main``,
    ``exploiter/elo``, ``exploiter/elo_delta``, ``exploiter/reset_count``,
    ``exploiter/reset_step``, ``exploiter/target_main_agent``.

    The other arguments (``trainer``, ``agent_pool``, ``match_database``, ``matchmaker``,
    ``elo_registry``, ``agent_id``, ``snapshot_dir``, ``snapshot_freq``, ``eval_freq``,
    ``n_eval_episodes``, ``log_interval``, ``checkpoint_dir``, ``checkpoint_freq``) are
    as for :class:`~training.league.role.LeagueRole`.

    Args:
        reset_win_rate_threshold: reset when the window's mean win rate falls below this
            (in [0, 1)).
        reset_window_size: evaluations in the rolling window (>= 1).
        main_agent_pool_manifest: the main agent's pool, read before every rollout
            (None: its own pool holds the main agents).
        main_agent_pool_max_size: that pool's capacity when it is opened.
        reset_rule: a :class:`ResetRule` replacing the rolling rule built from the two
            settings above (the ``alphastar`` gate).
        **league: :class:`LeagueRole`'s other keyword-only arguments.

    Raises:
        ValueError: for a threshold outside [0, 1) or a window below 1.
    """

    agent_type = AgentType.MAIN_EXPLOITER

    def __init__(self, trainer, agent_pool, match_database, matchmaker, elo_registry,
                 agent_id: str = "main_exploiter_001",
                 snapshot_dir: str | Path = "checkpoints/league/main_exploiter/snapshots",
                 snapshot_freq: int = 100_000, eval_freq: int = 50_000,
                 n_eval_episodes: int = 20, reset_win_rate_threshold: float = 0.30,
                 reset_window_size: int = 5, main_agent_pool_manifest: str | None = None,
                 main_agent_pool_max_size: int = 200, log_interval: int = 2_000,
                 checkpoint_dir: str | Path | None = None, checkpoint_freq: int = 100_000, *,
                 reset_rule: ResetRule | None = None, **league: Any) -> None:
        if not 0.0 <= reset_win_rate_threshold < 1.0:
            raise ValueError(f"reset_win_rate_threshold={reset_win_rate_threshold!r} is "
                             "invalid: expected a number in [0, 1)")
        if isinstance(reset_window_size, bool) or not isinstance(reset_window_size, int) or \
                reset_window_size < 1:
            raise ValueError(f"reset_window_size={reset_window_size!r} is invalid: expected "
                             "an int >= 1")
        if main_agent_pool_manifest is not None:
            league.setdefault("league_pools", [main_agent_pool_manifest])
        super().__init__(trainer, **role_parts(
            agent_pool, match_database, matchmaker, elo_registry, agent_id=agent_id,
            snapshot_dir=snapshot_dir, snapshot_freq=snapshot_freq, eval_freq=eval_freq,
            n_eval_episodes=n_eval_episodes, log_interval=log_interval,
            checkpoint_dir=checkpoint_dir, checkpoint_freq=checkpoint_freq, **league),
            reset_rule=reset_rule or ResetRule("rolling", reset_win_rate_threshold,
                                               reset_window_size))

    @property
    def metric_prefix(self) -> str:
        return "exploiter"

    @classmethod
    def role_kwargs(cls, config: Any) -> dict[str, Any]:
        return {**super().role_kwargs(config), "reset_rule": reset_rule_of(config)}

    def target(self) -> str | None:
        """The newest main-agent snapshot, the exploiter's target."""
        mains = [r for r in self.members if r.agent_type is AgentType.MAIN_AGENT]
        return mains[-1].agent_id if mains else None

    def targets(self) -> list[str]:
        target = self.target()
        return [target] if target else []

    def evaluation_opponents(self) -> list[str]:
        return sorted({*super().evaluation_opponents(), *self.targets()})

    def after_evaluation(self, evaluation: dict[str, Any]) -> dict[str, Any]:
        metrics = super().after_evaluation(evaluation)
        # The reference API's name for the main exploiter's rolling win rate.
        if "exploiter/rolling_win_rate" in metrics:
            metrics["exploiter/rolling_win_rate_vs_main"] = metrics.pop(
                "exploiter/rolling_win_rate")
        target = self.target()
        if target is not None and f"matchup/win_rate/{target}" in evaluation:
            metrics["exploiter/win_rate_vs_main"] = evaluation[f"matchup/win_rate/{target}"]
            metrics["exploiter/mean_win_rate_vs_main"] = self.win_rate(target)
            metrics["exploiter/target_main_agent"] = target
        metrics["exploiter/elo"] = evaluation[f"elo/{self.agent_type.value}"]
        metrics["exploiter/elo_delta"] = evaluation["elo/delta"]
        return metrics


def compute_league_exploitability(policy: Any, opponent_records: Sequence[AgentRecord],
                                  load_fn: Callable[[AgentRecord], Any], n_blue: int = 2,
                                  n_red: int = 2, n_episodes: int = 20, seed: int = 0,
                                  env_kwargs: dict[str, Any] | None = None) -> float:
    """The exploiter's mean win rate against ``opponent_records`` (0 when there are none).

    Draws count as not won: an exploiter that cannot beat a member does not exploit it.
    Both sides act on their policy's mean.

    Args:
        policy: the exploiter (a MAPPOPolicy), deterministic.
        opponent_records: the members to exploit.
        load_fn: ``load_fn(record)`` -> the member's policy.
        n_blue: Blue's battalions.
        n_red: Red's battalions.
        n_episodes: battles per member, played as one batch.
        seed: base seed of the battles.
        env_kwargs: further battle settings (map, max_steps, ...).
    """
    if not opponent_records:
        return 0.0
    rates = [float((play_team_battles(policy, load_fn(record), n_blue=n_blue, n_red=n_red,
                                      n_episodes=n_episodes, seed=seed, env_kwargs=env_kwargs,
                                      opponent_deterministic=True) == WIN).mean())
             for record in opponent_records]
    return sum(rates) / len(rates)


class LeagueExploiterTrainer(ExploiterRole):
    """The league exploiter: meets every member outside its own lineage (PFSP with a
    temperature under ``pfsp``, ``linear_capped`` under ``alphastar``), resets like the
    main exploiter, and every ``exploitability_eval_freq`` steps plays up to
    ``n_exploitability_opponents`` members drawn without replacement:
    ``league_exploiter/exploitability`` is its mean win rate against them.

    The other arguments (``trainer``, ``agent_pool``, ``match_database``, ``matchmaker``,
    ``elo_registry``, ``agent_id``, ``snapshot_dir``, ``snapshot_freq``, ``eval_freq``,
    ``n_eval_episodes``, ``log_interval``, ``checkpoint_dir``, ``checkpoint_freq``) are
    as for :class:`~training.league.role.LeagueRole`; ``pfsp_temperature``,
    ``reset_win_rate_threshold`` and ``reset_window_size`` as for the main agent and the
    main exploiter.

    Args:
        exploitability_eval_freq: env-steps between exploitability estimates (0: never).
        n_exploitability_opponents: members per estimate (>= 1).
        additional_pool_manifests: the other roles' pools, read before every rollout.
        additional_pool_max_size: their capacity when opened.
        reset_rule: a :class:`ResetRule` replacing the rolling rule.
        **league: :class:`LeagueRole`'s other keyword-only arguments.
    """

    agent_type = AgentType.LEAGUE_EXPLOITER

    def __init__(self, trainer, agent_pool, match_database, matchmaker, elo_registry,
                 agent_id: str = "league_exploiter_001",
                 snapshot_dir: str | Path = "checkpoints/league/league_exploiter/snapshots",
                 snapshot_freq: int = 100_000, eval_freq: int = 50_000,
                 n_eval_episodes: int = 20, pfsp_temperature: float = 1.0,
                 reset_win_rate_threshold: float = 0.30, reset_window_size: int = 5,
                 exploitability_eval_freq: int = 100_000, n_exploitability_opponents: int = 10,
                 additional_pool_manifests: Sequence[str] | None = None,
                 additional_pool_max_size: int = 200, log_interval: int = 2_000,
                 checkpoint_dir: str | Path | None = None, checkpoint_freq: int = 100_000, *,
                 reset_rule: ResetRule | None = None, **league: Any) -> None:
        if additional_pool_manifests is not None:
            league.setdefault("league_pools", list(additional_pool_manifests))
        self.exploitability_eval_freq = exploitability_eval_freq
        self.n_exploitability_opponents = n_exploitability_opponents
        super().__init__(trainer, **role_parts(
            agent_pool, match_database, matchmaker, elo_registry, agent_id=agent_id,
            snapshot_dir=snapshot_dir, snapshot_freq=snapshot_freq, eval_freq=eval_freq,
            n_eval_episodes=n_eval_episodes, log_interval=log_interval,
            checkpoint_dir=checkpoint_dir, checkpoint_freq=checkpoint_freq,
            pfsp_temperature=pfsp_temperature, **league),
            reset_rule=reset_rule or ResetRule("rolling", reset_win_rate_threshold,
                                               reset_window_size))
        self.exploitability_due = EveryNSteps(exploitability_eval_freq or 1,
                                              trainer.total_steps)

    @classmethod
    def role_kwargs(cls, config: Any) -> dict[str, Any]:
        return {**super().role_kwargs(config),
                "reset_rule": reset_rule_of(config, config.reset_probability),
                "exploitability_eval_freq": config.exploitability_eval_freq,
                "n_exploitability_opponents": config.n_exploitability_opponents}

    def targets(self) -> list[str]:
        return self.evaluation_opponents()

    def after_evaluation(self, evaluation: dict[str, Any]) -> dict[str, Any]:
        metrics = super().after_evaluation(evaluation)
        metrics["league_exploiter/elo"] = evaluation[f"elo/{self.agent_type.value}"]
        metrics["league_exploiter/elo_delta"] = evaluation["elo/delta"]
        step = self.trainer.total_steps
        if self.exploitability_eval_freq and self.exploitability_due(step):
            members = [r for r in self.members
                       if r.metadata.get("parent_agent_id") != self.agent_id]
            k = min(self.n_exploitability_opponents, len(members))
            chosen = [members[i] for i in sorted(self.rng.choice(len(members), k, replace=False))]
            # compute_league_exploitability's estimate, played by the learner (on its
            # workers when distributed; an echelon learner's battles for an echelon).
            played = self.trainer.play_matches(
                {record.agent_id: self.load(record) for record in chosen},
                self.settings.n_eval_episodes, self.trainer.config.seed + 7 * step,
                opponent_deterministic=True)
            metrics["league_exploiter/exploitability"] = float(np.mean(
                [(outcomes == WIN).mean() for outcomes in played.values()])) if played else 0.0
            metrics["league_exploiter/exploitability_sample_size"] = k
        return metrics


ROLE_CLASSES: dict[str, type[LeagueRole]] = {
    cls.agent_type.value: cls
    for cls in (MainAgentTrainer, MainExploiterTrainer, LeagueExploiterTrainer)}
"""Each role's class, by its name (``main_agent``, ``main_exploiter``,
``league_exploiter``)."""


__all__ = ["LeagueExploiterTrainer", "MainAgentTrainer", "MainExploiterTrainer",
           "ROLE_CLASSES", "compute_league_exploitability"]
