"""AlphaStar-style league: agent pool, match log, matchmaking, Nash and diversity.

Only NumPy, SciPy and filelock are needed here. Importing this package loads no
Gymnasium, torch, Stable-Baselines3 or SciPy: SciPy loads when the Nash solver
first runs, torch when ``AgentPool.load_snapshot`` first loads a snapshot, and
trainers that need torch live in their own modules. The distributed runner's names
(:mod:`training.league.distributed_runner`) load it, and Gymnasium, on first use;
Ray is needed only when a runner or remote env is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from training.league.agent_pool import AgentPool, AgentRecord, AgentType, PoolManifestError
from training.league.diversity import (
    DiversityTracker,
    TrajectoryBatch,
    diversity_score,
    embed_trajectory,
    pairwise_cosine_distances,
)
from training.league.match_database import MatchDatabase, MatchResult
from training.league.matchmaker import LeagueMatchmaker, make_nash_weight_fn
from training.league.nash import (
    NashSolution,
    build_payoff_matrix,
    compute_nash_distribution,
    exploitability,
    nash_entropy,
    solve_nash,
)
from training.league.pfsp import (
    DEFAULT_PFSP_WEIGHTING,
    PFSP_WEIGHTINGS,
    get_pfsp_weighting,
    pfsp_probabilities,
)

_LAZY = {name: "training.league.distributed_runner" for name in (
    "DistributedRolloutRunner", "RemoteMultiBattalionEnv", "RolloutResult", "make_remote_envs")}
"""Names imported from their module on first use."""

if TYPE_CHECKING:
    from training.league.distributed_runner import (
        DistributedRolloutRunner,
        RemoteMultiBattalionEnv,
        RolloutResult,
        make_remote_envs,
    )


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'training.league' has no attribute {name!r}")


__all__ = [
    # Named in the league tutorial.
    "AgentPool",
    "AgentRecord",
    "AgentType",
    "MatchDatabase",
    "LeagueMatchmaker",
    "build_payoff_matrix",
    "compute_nash_distribution",
    "nash_entropy",
    "TrajectoryBatch",
    "embed_trajectory",
    "pairwise_cosine_distances",
    "diversity_score",
    "DiversityTracker",
    # Additions.
    "MatchResult",
    "PoolManifestError",
    "NashSolution",
    "solve_nash",
    "exploitability",
    "make_nash_weight_fn",
    "PFSP_WEIGHTINGS",
    "DEFAULT_PFSP_WEIGHTING",
    "get_pfsp_weighting",
    "pfsp_probabilities",
    # The reference API's distributed runner (loaded on first use).
    "DistributedRolloutRunner",
    "RemoteMultiBattalionEnv",
    "RolloutResult",
    "make_remote_envs",
]
