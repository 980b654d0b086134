"""The main agent: the league's primary policy, trained against every member.

Run it as the league tutorial shows::

    python -m training.league.train_main_agent \
        --config-path configs/league --config-name main_agent
    python training/league/train_main_agent.py \
        training.total_timesteps=5_000_000 league.pfsp_temperature=1.0

or all three roles at once with ``python -m training.league``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from training.league.matchmaking import make_pfsp_weight_fn  # noqa: E402
from training.league.records import AgentType  # noqa: E402
from training.league.role import LeagueRole  # noqa: E402


class MainAgentTrainer(LeagueRole):
    """The main agent (:class:`~training.league.role.LeagueRole`): meets every league
    member (its own past snapshots, both exploiters' and the scripted share), by the
    config's matchmaking rule; never resets. Metrics: ``elo/main_agent``,
    ``matchup/win_rate/{opponent}``, ``league/nash_entropy``,
    ``league/diversity_score``, ``league/pool_size``, ``train/*``.

    Args:
        trainer, agent_pool, match_database, matchmaker, elo_registry, agent_id,
        snapshot_dir, snapshot_freq, eval_freq, n_eval_episodes, log_interval,
        checkpoint_dir, checkpoint_freq: as for :class:`LeagueRole`.
        pfsp_temperature: the PFSP temperature (the matchmaker's weight function
            becomes :func:`make_pfsp_weight_fn` of it).
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
        super().__init__(trainer, agent_pool, match_database, matchmaker, elo_registry,
                         agent_id, snapshot_dir, snapshot_freq, eval_freq, n_eval_episodes,
                         log_interval, checkpoint_dir, checkpoint_freq,
                         pfsp_temperature=pfsp_temperature, **league)


def main(argv: list[str] | None = None) -> None:
    """The Hydra command line of ``configs/league/main_agent.yaml``."""
    from training.league.launch import run_role_cli

    run_role_cli("main_agent", argv)


__all__ = ["MainAgentTrainer", "main", "make_pfsp_weight_fn"]

if __name__ == "__main__":
    main()
