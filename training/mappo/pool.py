"""The team self-play pool: frozen MAPPO teams for the other side of N-vs-M battles."""

from __future__ import annotations

import re
from pathlib import Path

from models.mappo_files import load_policy, save_policy
from models.mappo_policy import MAPPOPolicy
from training.common.pools import DevicePool

TEAM_SNAPSHOT_PATTERN = re.compile(r"^team_snapshot_v(\d{6,})\.pt$")


class TeamOpponentPool(DevicePool):
    """Fixed-size pool of frozen MAPPO team snapshots, oldest evicted first.

    Each snapshot is a :func:`models.mappo_files.save_policy` file
    ``team_snapshot_v{version:06d}.pt`` holding ``{"kwargs", "state_dict"}``,
    written atomically; loading reads tensors and plain values only
    (``weights_only=True``) and rebuilds ``MAPPOPolicy(**kwargs)``.

    An existing folder is reloaded as :class:`SnapshotPool` says: its snapshots
    in version order, the newest ``max_size`` in the pool, older ones left on
    disk outside it (only :meth:`add` evicts). A file there that is not a team
    snapshot is reported (logged) and left alone. A kept snapshot that is not a
    readable archive raises ``ValueError`` naming it; one that is readable but
    not a MAPPO policy raises when it is loaded.

    Every load returns a fresh policy in eval mode, so a caller may move or
    modify it without affecting the pool.

    Args:
        pool_dir: folder of the snapshots (created).
        max_size: snapshots kept (>= 1).

    Raises:
        ValueError: for ``max_size < 1`` or a corrupt snapshot.

    Attributes:
        pool_dir: the folder.
        max_size: the capacity.
    """

    pattern = TEAM_SNAPSHOT_PATTERN
    policy_type = MAPPOPolicy
    kind = "team pool"

    @classmethod
    def file_name(cls, version: int) -> str:
        return f"team_snapshot_v{version:06d}.pt"

    def _write(self, policy: MAPPOPolicy, path: Path, version: int) -> Path:
        return save_policy(policy, path, version=version)

    def load(self, path: str | Path, device: str | None = None) -> MAPPOPolicy:
        """The policy of snapshot ``path`` (a fresh copy, in eval mode).

        Raises:
            KeyError: if ``path`` is not in the pool.
            FileNotFoundError: if its file has disappeared.
            ValueError: if the file is not a readable MAPPO policy (the message names it).
        """
        return load_policy(self._member(path), device=device)


__all__ = ["TEAM_SNAPSHOT_PATTERN", "TeamOpponentPool"]
