"""The league's agent pool: every snapshot ever added, in a JSON manifest.

:class:`AgentPool` is the registry (add, remove, query, sample, load snapshots);
the manifest file under it (format, atomic saves under an inter-process lock,
the last good copy, recovery) is :mod:`training.league.pool_manifest`, and the
records are :mod:`training.league.records`.

**Paths from elsewhere.** A manifest may record any ``snapshot_path`` (it is
the record's metadata), but :meth:`AgentPool.load_snapshot`, the way to load
one, refuses a path that resolves outside the pool's directory tree
(:meth:`AgentPool.resolve_snapshot`) and a file that is not a regular, bounded
archive, and never unpickles code.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from envs.sim.validation import check_bool
from training.league.pfsp import pfsp_choice
from training.league.pool_manifest import PoolManifest, PoolManifestError
from training.league.records import AgentRecord, AgentType

logger = logging.getLogger(__name__)

# AgentRecord, AgentType and PoolManifestError are re-exported: the seeds name this module
# as their home.
__all__ = ["AgentType", "AgentRecord", "AgentPool", "PoolManifestError", "SnapshotRewriteError"]


class SnapshotRewriteError(ValueError):
    """A snapshot file about to be written already has its pool record: writing it would
    change the weights of a member others may have loaded, played and rated
    (:meth:`AgentPool.check_new_snapshot`)."""


class AgentPool(PoolManifest):
    """A persistent, multi-process safe registry of league snapshots.

    Args:
        pool_manifest: Path of the JSON manifest (created on the first save;
            its folder is created too). It must not end in ``.tmp``, which is
            the name of the last-good copy.
        max_size: Capacity, an int >= 1. At capacity ``add`` raises unless
            ``force=True``, which evicts the oldest agents.
        recover: If True and the manifest is corrupt (or missing while a
            last-good copy exists), restore the last-good copy ``<stem>.tmp``
            first, with a logged warning. See :meth:`recover`.

    Raises:
        PoolManifestError: If the manifest exists but is corrupt (and
            ``recover`` is False, or there is no valid copy to restore).
        ValueError, TypeError: If ``max_size`` or the path is invalid.

    Reads (``list``, ``get``, ...) use the state loaded last; call
    :meth:`reload` to see agents that other processes added since.
    ``add``/``remove``/``save`` always start from the newest file contents.
    Loading, reloading, recovering and writing the manifest are inherited from
    :class:`~training.league.pool_manifest.PoolManifest`.
    """

    # ---------------------------------------------------------------- changes

    def add(
        self,
        snapshot_path: str | os.PathLike,
        agent_type: AgentType | str = AgentType.MAIN_AGENT,
        *,
        agent_id: str | None = None,
        version: int = 1,
        metadata: Mapping[str, Any] | None = None,
        force: bool = False,
    ) -> AgentRecord:
        """Add a snapshot to the pool and save the manifest.

        Args:
            snapshot_path: Snapshot file (not checked to exist). Prefer a path
                relative to the manifest's folder, so the pool can be moved.
            agent_type: Role of the agent (``AgentType`` or its name/value).
            agent_id: Unique id; a random UUID4 string when None.
            version: Snapshot version, an int >= 0.
            metadata: JSON-compatible extra information (copied).
            force: At capacity, evict the oldest agents instead of raising
                (``True`` or ``False``; a string such as ``"no"`` is refused).

        Returns:
            The new record.

        Raises:
            ValueError: If ``agent_id`` is already in the pool or a field is invalid.
            RuntimeError: If the pool is full and ``force`` is False.
            PoolManifestError: If the manifest on disk is corrupt.
        """
        force = check_bool("force", force)
        record = AgentRecord(
            agent_id=str(uuid.uuid4()) if agent_id is None else agent_id,
            agent_type=agent_type,
            version=version,
            snapshot_path=snapshot_path,
            metadata={} if metadata is None else metadata,
        )

        def change() -> AgentRecord:
            if record.agent_id in self._records:
                raise ValueError(
                    f"agent_id={record.agent_id!r} is already in pool {self._path}: "
                    "ids must be unique"
                )
            if len(self._records) >= self._max_size:
                if not force:
                    raise RuntimeError(
                        f"pool {self._path} is full ({len(self._records)}/{self._max_size} "
                        "agents): pass force=True to evict the oldest, remove agents, or "
                        "raise max_size"
                    )
                while len(self._records) >= self._max_size:
                    oldest = next(iter(self._records))
                    evicted = self._records.pop(oldest)
                    logger.info(
                        "pool %s full: evicted oldest agent %s (%s v%d)",
                        self._path, evicted.agent_id, evicted.agent_type.value, evicted.version,
                    )
            self._records[record.agent_id] = record
            return record

        return self._mutate(change)

    def remove(self, agent_id: str) -> AgentRecord:
        """Remove an agent and save the manifest.

        Args:
            agent_id: Id of the agent to remove.

        Returns:
            The removed record.

        Raises:
            KeyError: If no agent has that id.
        """

        def change() -> AgentRecord:
            if agent_id not in self._records:
                raise KeyError(f"agent_id={agent_id!r} is not in pool {self._path}")
            return self._records.pop(agent_id)

        return self._mutate(change)

    def save(self) -> None:
        """Save in-memory edits of records (e.g. changed ``metadata``).

        ``add`` and ``remove`` save by themselves. ``save`` merges: it starts
        from the newest manifest on disk, replaces the records this process
        also holds by its in-memory versions, and keeps agents added by other
        processes; agents that another process removed stay removed. If the
        manifest does not exist yet, the in-memory pool is written.

        Raises:
            PoolManifestError: If the manifest on disk is corrupt.
        """
        mine = dict(self._records)

        def change() -> None:
            if self._path.exists():
                self._records = {rid: mine.get(rid, rec) for rid, rec in self._records.items()}
            else:
                self._records = mine

        self._mutate(change)

    def check_new_snapshot(self, snapshot_path: str | os.PathLike, agent_id: str) -> None:
        """Refuse to write the snapshot ``agent_id`` at ``snapshot_path`` if the newest
        manifest already records it: a snapshot file never changes once it is a member.

        Called before the file is written (re-reads the manifest). A file on disk with no
        record (its writer was killed before adding it) may be written again.

        Args:
            snapshot_path: The file about to be written (relative paths are taken from
                the manifest's folder, as the records' are).
            agent_id: The id its record will have.

        Raises:
            SnapshotRewriteError: If a record has that id or that file, naming both.
            PoolManifestError: If the manifest on disk is corrupt.
        """
        self.reload()
        folder = self._path.parent.resolve()

        def absolute(path: str | os.PathLike) -> str:
            return os.path.normpath(os.path.join(folder, os.path.expanduser(path)))

        target = absolute(snapshot_path)
        for record in self._records.values():
            if record.agent_id == agent_id or absolute(record.snapshot_path) == target:
                raise SnapshotRewriteError(
                    f"snapshot {target} of agent_id={agent_id!r} is refused: pool "
                    f"{self._path} already records {record.agent_id!r} with "
                    f"snapshot_path={record.snapshot_path!r}, and a member's file is never "
                    "rewritten (is another copy of this role running on its folder?)"
                )

    # ---------------------------------------------------------------- queries

    def get(self, agent_id: str) -> AgentRecord:
        """Return the record with this id.

        Raises:
            KeyError: If no agent has that id.
        """
        try:
            return self._records[agent_id]
        except (KeyError, TypeError):
            raise KeyError(f"agent_id={agent_id!r} is not in pool {self._path}") from None

    def list(self, agent_type: AgentType | str | None = None) -> list[AgentRecord]:
        """Return the records, oldest first, optionally of one type only."""
        if agent_type is None:
            return list(self._records.values())
        wanted = AgentType.from_str(agent_type)
        return [r for r in self._records.values() if r.agent_type is wanted]

    def latest(self, agent_type: AgentType | str | None = None) -> AgentRecord | None:
        """Return the most recently added record (of a type), or None if there is none."""
        records = self.list(agent_type)
        return records[-1] if records else None

    @property
    def size(self) -> int:
        """Number of agents in the pool."""
        return len(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, agent: object) -> bool:
        key = agent.agent_id if isinstance(agent, AgentRecord) else agent
        return isinstance(key, str) and key in self._records

    def __iter__(self) -> Iterator[AgentRecord]:
        return iter(list(self._records.values()))

    def __repr__(self) -> str:
        return f"AgentPool({str(self._path)!r}, size={len(self)}, max_size={self._max_size})"

    # --------------------------------------------------------------- sampling

    def _candidates(
        self, exclude_ids: Iterable[str] | None, agent_type: AgentType | str | None
    ) -> list[AgentRecord]:
        if isinstance(exclude_ids, str):
            raise TypeError(
                f"exclude_ids={exclude_ids!r} is a string: expected a collection of agent ids"
            )
        excluded = set(exclude_ids or ())
        return [r for r in self.list(agent_type) if r.agent_id not in excluded]

    def sample_uniform(
        self,
        *,
        exclude_ids: Iterable[str] | None = None,
        agent_type: AgentType | str | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> AgentRecord | None:
        """Draw one agent uniformly at random; None if no agent is eligible."""
        candidates = self._candidates(exclude_ids, agent_type)
        if not candidates:
            return None
        return candidates[int(np.random.default_rng(rng).integers(len(candidates)))]

    def sample_pfsp(
        self,
        win_rates: Mapping[str, float] | None = None,
        *,
        exclude_ids: Iterable[str] | None = None,
        agent_type: AgentType | str | None = None,
        pfsp_weight_fn: str | Callable[[float], float] | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> AgentRecord | None:
        """Draw one agent with PFSP weights.

        Args:
            win_rates: The focal agent's win rate against each agent id;
                agents without an entry (or with None) count as 0.5.
            exclude_ids: Agent ids never drawn (e.g. the focal agent).
            agent_type: Draw only agents of this type.
            pfsp_weight_fn: Weighting name (``"squared"``, ``"variance"``,
                ``"linear"``, ``"linear_capped"``), callable, or None for
                ``"squared"``. Weights summing below 1e-10 give uniform sampling.
            rng: Generator or seed.

        Returns:
            The drawn record, or None if no agent is eligible.

        Raises:
            ValueError: If a win rate is outside [0, 1] or the weighting is unknown.
        """
        candidates = self._candidates(exclude_ids, agent_type)
        if not candidates:
            return None
        rates = win_rates or {}
        unknown = 0.5
        index = pfsp_choice(
            [unknown if rates.get(r.agent_id) is None else rates[r.agent_id] for r in candidates],
            pfsp_weight_fn,
            rng,
            labels=[r.agent_id for r in candidates],
        )
        return candidates[index]

    # ------------------------------------------------------------------ files

    def load_snapshot(self, record: AgentRecord | str, *,
                      root: str | os.PathLike | None = None, device: str = "cpu") -> Any:
        """Load a record's snapshot safely: an SB3 ``.zip`` as a PPO model, a ``.pt``
        as a MAPPO policy.

        The path must resolve inside ``root`` (:meth:`resolve_snapshot`), and the
        file is read like any file from elsewhere: a regular file only, bounded
        in size, nothing unpickled.

        Args:
            record: A record or an agent id of this pool.
            root: The allowed directory tree; defaults to the manifest's folder.
            device: Torch device of the loaded policy.

        Raises:
            KeyError: If ``record`` is an id that is not in the pool.
            ValueError: If the path is outside ``root``, has another suffix, or the
                file is not a loadable snapshot (the message names it).
            FileNotFoundError: If the file does not exist.
        """
        path = self.resolve_snapshot(record, root=root)
        if path.suffix == ".zip":
            from training.ppo.checkpoints import load_ppo

            return load_ppo(path, device=device)
        if path.suffix == ".pt":
            from models.mappo_files import load_policy

            return load_policy(path, device=device)
        raise ValueError(f"snapshot {path} is invalid: expected an SB3 .zip or a MAPPO .pt file")

    def resolve_snapshot(
        self, record: AgentRecord | str, *, root: str | os.PathLike | None = None
    ) -> Path:
        """Return the absolute snapshot path of a record, refusing paths outside the league.

        Relative snapshot paths are taken relative to the manifest's folder.
        The resolved path (symlinks and ``..`` followed) must lie inside
        ``root``; use this before loading a snapshot from a shared pool.

        Args:
            record: A record or an agent id of this pool.
            root: The allowed directory tree; defaults to the manifest's folder.

        Returns:
            The resolved absolute path (not checked to exist).

        Raises:
            ValueError: If the path resolves outside ``root``.
            KeyError: If ``record`` is an id that is not in the pool.
        """
        rec = self.get(record) if isinstance(record, str) else record
        if not isinstance(rec, AgentRecord):
            raise TypeError(f"record={record!r} is invalid: expected an AgentRecord or agent id")
        base = Path(root) if root is not None else self._path.parent
        base_resolved = base.resolve()
        candidate = Path(rec.snapshot_path).expanduser()
        if not candidate.is_absolute():
            candidate = self._path.parent / candidate
        resolved = candidate.resolve()
        if not resolved.is_relative_to(base_resolved):
            raise ValueError(
                f"snapshot_path={rec.snapshot_path!r} of agent {rec.agent_id!r} resolves to "
                f"{resolved}, outside the league directory {base_resolved}: refusing to load it "
                "(pass root= to allow a wider, trusted directory)"
            )
        return resolved
