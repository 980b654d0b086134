"""What a league role is built from: the league's files it uses, its settings, and the
claim on its folder."""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.files import FolderInUseError, FolderLock
from training.elo import TeamEloRegistry
from training.league.agent_pool import AgentPool
from training.league.layout import ROLE_LOCK_FILE
from training.league.match_database import MatchDatabase
from training.league.matchmaker import LeagueMatchmaker
from training.league.matchmaking import MATCHMAKING


@dataclass(frozen=True)
class LeagueFiles:
    """The league's files a role reads and writes.

    Attributes:
        pool: the role's own pool: its snapshots go here.
        matches: the league's match log (shared by the roles).
        matchmaker: the matchmaker over the role's pool.
        elo: the league's team Elo registry (shared by the roles).
    """

    pool: AgentPool
    matches: MatchDatabase
    matchmaker: LeagueMatchmaker
    elo: TeamEloRegistry


@dataclass(frozen=True)
class RoleSettings:
    """How a role trains in the league.

    Attributes:
        agent_id: the live learner's id (snapshots are ``{agent_id}_v{version:06d}``).
        snapshot_dir: folder of the snapshot files.
        snapshot_freq, eval_freq, checkpoint_freq: env-steps between snapshots,
            evaluations and checkpoints.
        n_eval_episodes: battles per evaluation match, played as one batch.
        log_interval: env-steps between training log lines.
        checkpoint_dir: folder of the role's checkpoints (None: the trainer's).
        league_pools: the other roles' pool manifests, read before every rollout.
        matchmaking: ``pfsp``, ``nash`` or ``alphastar`` (:mod:`training.league.matchmaking`).
        pfsp_temperature: the ``pfsp`` rule's temperature.
        opponents_per_rollout: opponents drawn per rollout, each commanding Red in an
            equal share of the battles not kept scripted.
        scripted_share: share of the training battles against scripted Red.

    Raises:
        ValueError: for an unknown ``matchmaking``.
    """

    agent_id: str
    snapshot_dir: str | Path
    snapshot_freq: int = 100_000
    eval_freq: int = 50_000
    n_eval_episodes: int = 20
    log_interval: int = 2_000
    checkpoint_dir: str | Path | None = None
    checkpoint_freq: int = 100_000
    league_pools: Sequence[str | Path] = ()
    matchmaking: str = "pfsp"
    pfsp_temperature: float = 1.0
    opponents_per_rollout: int = 4
    scripted_share: float = 0.0

    def __post_init__(self) -> None:
        if self.matchmaking not in MATCHMAKING:
            raise ValueError(f"matchmaking={self.matchmaking!r} is invalid: expected one of "
                             f"{', '.join(MATCHMAKING)}")


def claim_role_folder(folder: str | Path) -> FolderLock:
    """The claim on the role folder ``folder`` (:data:`~training.league.layout.ROLE_LOCK_FILE`
    in it, created with the folder if missing), held: one process trains a role folder at
    a time. The OS frees it when the process ends, however it ends.

    A role this process dropped holds its claim until Python's cycle collector frees it
    (a role's objects refer to each other), so when this process is the holder it
    collects once and tries again: a role still in use keeps its claim.

    Raises:
        storage.files.FolderInUseError: if another process, or a role of this one still
            in use, holds it, naming the pid.
    """
    lock = FolderLock(folder, ROLE_LOCK_FILE, "league role folder")
    try:
        return lock.acquire()
    except FolderInUseError as error:
        if error.pid != os.getpid():
            raise
    gc.collect()
    return lock.acquire()


__all__ = ["LeagueFiles", "RoleSettings", "claim_role_folder"]
