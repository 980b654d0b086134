"""The league's agent pool: every snapshot ever added, in a JSON manifest.

Manifest format (``pool.json``, UTF-8, indent 2)::

    {
      "max_size": 200,
      "agents": [
        {"agent_id": "...", "agent_type": "main_agent", "version": 1,
         "snapshot_path": "snapshots/main_agent_x_v000001.pt",
         "created_at": 1700000000.0, "metadata": {}}
      ]
    }

Agents are listed in insertion order (oldest first).

Safety, beyond the reference design:

* **Atomic writes.** Every save writes a temporary sibling, fsyncs it and
  renames it over the manifest, so a reader sees the old or the new pool,
  never half of one.
* **Several processes.** ``add``, ``remove`` and ``save`` take an
  inter-process lock on ``pool.json.lock`` and re-read the manifest under
  it before changing anything, so two trainers adding agents at once both
  keep their agents.
* **Last good copy.** Every save first copies the manifest it is about to
  replace (if that one is valid) to ``pool.tmp`` (``<stem>.tmp`` next to the
  manifest). A corrupt manifest raises :class:`PoolManifestError` naming the
  file, the problem and the copy; :meth:`AgentPool.recover` (or
  ``AgentPool(..., recover=True)``) restores the copy and keeps the corrupt
  file aside as ``pool.json.corrupt-<UTC time>``.
* **Paths from elsewhere.** A manifest may record any ``snapshot_path`` (it is
  the record's metadata), but :meth:`AgentPool.load_snapshot`, the way to load
  one, refuses a path that resolves outside the pool's directory tree
  (:meth:`AgentPool.resolve_snapshot`) and a file that is not a regular, bounded
  archive, and never unpickles code.
"""

from __future__ import annotations

import copy
import enum
import json
import logging
import math
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from envs.sim.validation import check_bool, check_identifier, check_path
from storage.files import (
    MAX_JSON_BYTES,
    atomic_write_text,
    hold_lock,
    lock_path_for,
    read_regular_file,
)
from training.league.pfsp import pfsp_probabilities

logger = logging.getLogger(__name__)

__all__ = ["AgentType", "AgentRecord", "AgentPool", "PoolManifestError"]


class AgentType(enum.StrEnum):
    """Role of a league agent; the value is the string stored in manifests."""

    MAIN_AGENT = "main_agent"
    MAIN_EXPLOITER = "main_exploiter"
    LEAGUE_EXPLOITER = "league_exploiter"

    @classmethod
    def from_str(cls, value: str | AgentType) -> AgentType:
        """Parse an agent type from its value or name, ignoring case.

        Args:
            value: ``"main_agent"``, ``"MAIN_AGENT"``, ... or an ``AgentType``.

        Returns:
            The matching ``AgentType``.

        Raises:
            ValueError: If ``value`` names no agent type.
            TypeError: If ``value`` is not a string.
        """
        if isinstance(value, AgentType):
            return value
        if not isinstance(value, str):
            raise TypeError(
                f"agent_type={value!r} has type {type(value).__name__}: expected an AgentType "
                f"or one of {[t.value for t in cls]}"
            )
        key = value.strip().lower()
        for member in cls:
            if key == member.value:
                return member
        raise ValueError(
            f"agent_type={value!r} is unknown: expected one of {[t.value for t in cls]} "
            "(case-insensitive)"
        )


def _check_json_metadata(metadata: Any, where: str) -> dict[str, Any]:
    """Return a deep copy of ``metadata`` after checking it is a JSON object."""
    if not isinstance(metadata, Mapping):
        raise TypeError(
            f"{where} metadata={metadata!r} has type {type(metadata).__name__}: "
            "expected a dict with string keys"
        )
    for key in metadata:
        if not isinstance(key, str):
            raise TypeError(f"{where} metadata key {key!r} is not a string: JSON needs string keys")
    try:
        # A round trip both checks JSON-compatibility (no NaN, no objects) and
        # detaches the copy from the caller's mutable values.
        return json.loads(json.dumps(dict(metadata), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{where} metadata is not JSON-serialisable ({exc}): use str, int, float (finite), "
            "bool, None, lists and dicts"
        ) from None


@dataclass(eq=False)
class AgentRecord:
    """One snapshot in the league: who it is, its role, version and file.

    Equality and hashing use ``agent_id`` only.

    Args:
        agent_id: Unique id: a non-blank string of printable characters (no newline,
            tab or NUL), at most :data:`~envs.sim.validation.MAX_ID_LENGTH` long.
        agent_type: Role (``AgentType`` or its string value/name).
        version: Snapshot version, an int >= 0 (trainers register version 0
            for their initial weights).
        snapshot_path: Path of the snapshot file as recorded; relative paths
            are relative to the pool manifest's folder (see
            :meth:`AgentPool.resolve_snapshot`). It is not checked to exist.
        created_at: Unix time of creation.
        metadata: JSON-compatible extra information.

    Raises:
        ValueError, TypeError: If a field is missing its allowed type or range.
    """

    agent_id: str
    agent_type: AgentType
    version: int
    snapshot_path: str
    created_at: float = field(default_factory=time.time)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_identifier("agent_id", self.agent_id)
        self.agent_type = AgentType.from_str(self.agent_type)
        if isinstance(self.version, bool) or not isinstance(self.version, (int, np.integer)):
            raise TypeError(f"version={self.version!r} is invalid: expected an int >= 0")
        self.version = int(self.version)
        if self.version < 0:
            raise ValueError(f"version={self.version} is invalid: expected an int >= 0")
        self.snapshot_path = os.fspath(check_path("snapshot_path", self.snapshot_path))
        if isinstance(self.created_at, bool) or not isinstance(
            self.created_at, (int, float, np.integer, np.floating)
        ):
            raise TypeError(f"created_at={self.created_at!r} is invalid: expected Unix time")
        self.created_at = float(self.created_at)
        if not math.isfinite(self.created_at):
            raise ValueError(f"created_at={self.created_at} is invalid: expected a finite number")
        self.metadata = _check_json_metadata(self.metadata, f"agent {self.agent_id!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentRecord):
            return NotImplemented
        return self.agent_id == other.agent_id

    def __hash__(self) -> int:
        return hash(self.agent_id)

    def to_dict(self) -> dict[str, Any]:
        """Return the manifest form of this record (JSON-compatible)."""
        return {
            "agent_id": self.agent_id,
            "agent_type": self.agent_type.value,
            "version": self.version,
            "snapshot_path": self.snapshot_path,
            "created_at": self.created_at,
            "metadata": copy.deepcopy(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentRecord:
        """Build a record from its manifest form.

        Args:
            data: A mapping with ``agent_id``, ``agent_type``, ``version`` and
                ``snapshot_path``; ``created_at`` and ``metadata`` are optional.

        Returns:
            The validated record.

        Raises:
            KeyError: If a required field is missing.
            ValueError, TypeError: If a field has a wrong type or value.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"agent record {data!r} is not a JSON object")
        for key in ("agent_id", "agent_type", "version", "snapshot_path"):
            if key not in data:
                raise KeyError(f"agent record is missing field {key!r} (record: {dict(data)!r})")
        return cls(
            agent_id=data["agent_id"],
            agent_type=data["agent_type"],
            version=data["version"],
            snapshot_path=data["snapshot_path"],
            created_at=data.get("created_at", time.time()),
            metadata=data.get("metadata") or {},
        )


class PoolManifestError(ValueError):
    """A pool manifest that cannot be used; the message names the file and the recovery."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


def _backup_path_for(manifest: Path) -> Path:
    """``pool.json`` -> ``pool.tmp``: the last-good copy the seed's docs tell users about."""
    return manifest.with_name(manifest.stem + ".tmp")


def _parse_manifest(path: Path, text: str) -> tuple[int | None, dict[str, AgentRecord]]:
    """Parse manifest text into (max_size, records by id); raise ValueError on any defect."""
    if not text.strip():
        raise ValueError("the file is empty")
    try:
        data = json.loads(text)
    except RecursionError:
        raise ValueError("its JSON is nested too deeply to parse") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); "
            "the file is probably truncated"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(
            f"the top level is a JSON {type(data).__name__}: expected an object with "
            "'max_size' and 'agents'"
        )
    if "agents" not in data or not isinstance(data["agents"], list):
        raise ValueError("the key 'agents' is missing or is not a list")
    max_size = data.get("max_size")
    if max_size is not None and (
        isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1
    ):
        raise ValueError(f"'max_size' is {max_size!r}: expected an int >= 1")
    records: dict[str, AgentRecord] = {}
    for index, item in enumerate(data["agents"]):
        try:
            record = AgentRecord.from_dict(item)
        except (KeyError, TypeError, ValueError) as exc:
            detail = exc.args[0] if exc.args else exc
            raise ValueError(f"agents[{index}] is invalid: {detail}") from None
        if record.agent_id in records:
            raise ValueError(f"agents[{index}] repeats agent_id {record.agent_id!r}")
        records[record.agent_id] = record
    return max_size, records


def _read_text(path: Path) -> str | None:
    """Return the file's text, or None if it does not exist."""
    if not path.exists() and not path.is_symlink():
        return None
    data = read_regular_file(path, MAX_JSON_BYTES, f"pool manifest {path}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"the file is not UTF-8 text ({exc})") from None


class AgentPool:
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
    """

    def __init__(self, pool_manifest: str | os.PathLike, max_size: int = 200, *,
                 recover: bool = False) -> None:
        if not isinstance(pool_manifest, (str, os.PathLike)) or not os.fspath(pool_manifest):
            raise TypeError(f"pool_manifest={pool_manifest!r} is invalid: expected a file path")
        self._path = check_path("pool_manifest", pool_manifest)
        if self._path.suffix == ".tmp":
            raise ValueError(
                f"pool_manifest={str(self._path)!r} ends in '.tmp', the suffix reserved for the "
                "last-good copy: use e.g. 'pool.json'"
            )
        if self._path.is_dir():
            raise ValueError(f"pool_manifest={str(self._path)!r} is a directory: expected a file")
        if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)):
            raise TypeError(f"max_size={max_size!r} is invalid: expected an int >= 1")
        if max_size < 1:
            raise ValueError(f"max_size={max_size} is invalid: expected an int >= 1")
        recover = check_bool("recover", recover)
        self._max_size = int(max_size)
        self._records: dict[str, AgentRecord] = {}
        if recover:
            self._recover_from_backup()
        else:
            self._initial_load()

    # ------------------------------------------------------------------ paths

    @property
    def manifest_path(self) -> Path:
        """Path of the JSON manifest."""
        return self._path

    @property
    def pool_manifest(self) -> Path:
        """Alias of :attr:`manifest_path` (the constructor's argument name)."""
        return self._path

    @property
    def backup_path(self) -> Path:
        """Path of the last-good copy (``<stem>.tmp``, e.g. ``pool.tmp``)."""
        return _backup_path_for(self._path)

    @property
    def lock_path(self) -> Path:
        """Path of the inter-process lock file (``<manifest>.lock``)."""
        return lock_path_for(self._path)

    @property
    def max_size(self) -> int:
        """Capacity of the pool."""
        return self._max_size

    # ---------------------------------------------------------------- loading

    def _corrupt_error(self, problem: str) -> PoolManifestError:
        backup = self.backup_path
        backup_records: dict[str, AgentRecord] | None = None
        try:
            backup_text = _read_text(backup)
            if backup_text is not None:
                backup_records = _parse_manifest(backup, backup_text)[1]
        except ValueError:
            backup_records = None
        if backup_records is not None:
            saved = datetime.fromtimestamp(backup.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M")
            recovery = (
                f"The last good copy {backup} holds {len(backup_records)} agent(s) "
                f"(saved {saved} UTC). Restore it with AgentPool.recover({str(self._path)!r}) "
                "or AgentPool(..., recover=True), which keeps the corrupt file aside, "
                f"or by hand: mv {backup} {self._path}"
            )
        else:
            recovery = (
                f"There is no valid last-good copy at {backup}: restore {self._path} from your "
                "own backups, or move it away to start an empty pool"
            )
        return PoolManifestError(
            self._path, f"pool manifest {self._path} is corrupt: {problem}. {recovery}."
        )

    def _load_file(self) -> tuple[str, dict[str, AgentRecord]] | None:
        """Read and validate the manifest; None if missing; ValueError(problem) if corrupt."""
        text = _read_text(self._path)
        if text is None:
            return None
        file_max_size, records = _parse_manifest(self._path, text)
        if file_max_size is not None and file_max_size != self._max_size:
            logger.debug(
                "pool %s: manifest max_size=%d, using max_size=%d from the constructor",
                self._path, file_max_size, self._max_size,
            )
        return text, records

    def _read_manifest(self) -> tuple[str, dict[str, AgentRecord]] | None:
        """Like ``_load_file`` but a corrupt file raises PoolManifestError with the recovery."""
        try:
            return self._load_file()
        except ValueError as exc:
            raise self._corrupt_error(str(exc)) from None

    def _initial_load(self) -> None:
        loaded = self._read_manifest()
        if loaded is None:
            if self.backup_path.exists():
                logger.warning(
                    "pool manifest %s does not exist but a last-good copy %s does; starting "
                    "empty. If agents are missing, restore it with AgentPool.recover(%r)",
                    self._path, self.backup_path, str(self._path),
                )
            return
        self._records = loaded[1]
        if len(self._records) > self._max_size:
            logger.warning(
                "pool %s holds %d agents, more than max_size=%d; none are dropped, but add() "
                "needs force=True until it shrinks",
                self._path, len(self._records), self._max_size,
            )

    def reload(self) -> None:
        """Re-read the manifest to see changes made by other processes.

        A missing manifest leaves the in-memory pool unchanged.

        Raises:
            PoolManifestError: If the manifest is corrupt.
        """
        loaded = self._read_manifest()
        if loaded is not None:
            self._records = loaded[1]

    @classmethod
    def recover(cls, pool_manifest: str | os.PathLike, max_size: int = 200) -> AgentPool:
        """Open a pool, restoring its last-good copy if the manifest is corrupt or missing.

        The copy ``<stem>.tmp`` (e.g. ``pool.tmp``) is the manifest as it was
        before the most recent save, so agents added by that save are lost
        and must be re-added. The corrupt file is kept as
        ``<manifest>.corrupt-<UTC time>``. A valid manifest is left alone, and
        a pool with neither file starts empty.

        Args:
            pool_manifest: Path of the JSON manifest.
            max_size: Capacity, as for the constructor.

        Returns:
            The opened pool.

        Raises:
            PoolManifestError: If neither the manifest nor the copy is valid.
        """
        return cls(pool_manifest, max_size, recover=True)

    def _recover_from_backup(self) -> None:
        with hold_lock(self._path):
            try:
                loaded = self._load_file()
            except ValueError as exc:
                problem = f"pool manifest {self._path} is corrupt: {exc}"
                corrupt = True
            else:
                if loaded is not None:
                    logger.info("pool manifest %s is valid; nothing to recover", self._path)
                    self._records = loaded[1]
                    return
                problem = f"pool manifest {self._path} does not exist"
                corrupt = False
            backup = self.backup_path
            if not corrupt and not backup.exists():
                logger.info("pool %s and its copy %s do not exist; starting an empty pool",
                            self._path, backup)
                return
            try:
                text = _read_text(backup)
                if text is None:
                    raise FileNotFoundError(backup)
                _, records = _parse_manifest(backup, text)
            except FileNotFoundError:
                raise PoolManifestError(
                    self._path,
                    f"cannot recover {self._path} ({problem}): the last-good copy {backup} does "
                    "not exist",
                ) from None
            except ValueError as exc:
                raise PoolManifestError(
                    self._path,
                    f"cannot recover {self._path} ({problem}): the last-good copy {backup} is "
                    f"corrupt too: {exc}",
                ) from None
            aside = None
            if corrupt:
                stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
                aside = self._path.with_name(f"{self._path.name}.corrupt-{stamp}")
                os.replace(self._path, aside)
            atomic_write_text(self._path, text)
            self._records = records
            logger.warning(
                "pool %s recovered from its last-good copy %s: %d agent(s) restored (%s)%s; "
                "agents added by the last save before the failure are not in the copy",
                self._path, backup, len(records), problem,
                f"; the corrupt file is kept as {aside}" if aside else "",
            )

    # ---------------------------------------------------------------- writing

    def _manifest_text(self) -> str:
        payload = {
            "max_size": self._max_size,
            "agents": [record.to_dict() for record in self._records.values()],
        }
        return json.dumps(payload, indent=2, allow_nan=False) + "\n"

    def _write_locked(self, previous_text: str | None) -> None:
        """Write the in-memory pool; the caller holds the lock and read ``previous_text``."""
        if previous_text is not None:
            # The copy is the manifest being replaced, already validated under
            # this lock, so it is always a good one.
            atomic_write_text(self.backup_path, previous_text)
        atomic_write_text(self._path, self._manifest_text())

    def _mutate(self, change: Callable[[], Any]) -> Any:
        """Under the lock: load the newest manifest, apply ``change``, save.

        On any failure the in-memory pool is left as it was loaded.
        """
        with hold_lock(self._path):
            loaded = self._read_manifest()
            if loaded is None:
                previous_text = None
                if self._records:
                    logger.warning(
                        "pool manifest %s disappeared; rewriting it from the %d agent(s) in "
                        "memory", self._path, len(self._records),
                    )
            else:
                previous_text, self._records = loaded
            before = dict(self._records)
            try:
                result = change()
                self._write_locked(previous_text)
            except BaseException:
                self._records = before
                raise
            return result

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
        probs = pfsp_probabilities(
            [unknown if rates.get(r.agent_id) is None else rates[r.agent_id] for r in candidates],
            pfsp_weight_fn,
            labels=[r.agent_id for r in candidates],
        )
        index = int(np.random.default_rng(rng).choice(len(candidates), p=probs))
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
            from models.mappo_policy import load_policy

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
