"""The agent pool's manifest file: its format, its last good copy and recovery from corruption.

The manifest (``pool.json``, UTF-8, indent 2) is ``{"max_size": N, "agents": [...]}``,
one record per agent (``agent_id``, ``agent_type``, ``version``, ``snapshot_path``,
``created_at``, ``metadata``), oldest first (:func:`manifest_text`). :class:`PoolManifest`
makes it safe to share: every save writes a temporary sibling, fsyncs it and renames it
over the manifest; every change takes an inter-process lock on ``pool.json.lock`` and
re-reads the manifest under it; and every save first copies the valid manifest it
replaces to ``pool.tmp`` (:func:`backup_path_for`). A corrupt manifest raises
:class:`PoolManifestError` naming the file, the problem and the copy;
:func:`recover_manifest` (behind ``AgentPool.recover``) restores the copy and keeps the
corrupt file aside as ``pool.json.corrupt-<UTC time>``. ``docs/league.md`` ("File
formats", "Corrupt manifest: recovery") has the details.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import numpy as np

from envs.sim.validation import check_bool
from storage.files import (
    MAX_JSON_BYTES,
    atomic_write_text,
    check_nesting,
    hold_lock,
    read_regular_file,
)
from training.league.records import AgentRecord
from training.league.shared_file import SharedFile

logger = logging.getLogger(__name__)

__all__ = [
    "PoolManifest",
    "PoolManifestError",
    "backup_path_for",
    "corrupt_manifest_error",
    "load_manifest",
    "manifest_text",
    "recover_manifest",
]


class PoolManifestError(ValueError):
    """A pool manifest that cannot be used; the message names the file and the recovery."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


def backup_path_for(manifest: Path) -> Path:
    """``pool.json`` -> ``pool.tmp``: the last-good copy the reference docs tell users about."""
    return manifest.with_name(manifest.stem + ".tmp")


def manifest_text(max_size: int, records: Iterable[AgentRecord]) -> str:
    """Return the manifest's text for a pool of capacity ``max_size`` holding ``records``."""
    payload = {"max_size": max_size, "agents": [record.to_dict() for record in records]}
    return json.dumps(payload, indent=2, allow_nan=False) + "\n"


def _parse(text: str) -> tuple[int | None, dict[str, AgentRecord]]:
    """Parse manifest text into (max_size, records by id); raise ValueError on any defect."""
    if not text.strip():
        raise ValueError("the file is empty")
    try:
        data = check_nesting(json.loads(text), "the manifest")
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


def load_manifest(path: Path) -> tuple[str, int | None, dict[str, AgentRecord]] | None:
    """Read and check a manifest (or its copy).

    Args:
        path: The file to read.

    Returns:
        ``(text, max_size, records by id)``, ``max_size`` None when the file has
        none; None if the file does not exist.

    Raises:
        ValueError: If the file is corrupt; the message says what is wrong.
    """
    text = _read_text(path)
    if text is None:
        return None
    max_size, records = _parse(text)
    return text, max_size, records


def corrupt_manifest_error(path: Path, problem: str) -> PoolManifestError:
    """Return the error for a corrupt manifest, saying what its last good copy holds."""
    backup = backup_path_for(path)
    try:
        loaded = load_manifest(backup)
    except ValueError:
        loaded = None
    if loaded is not None:
        saved = datetime.fromtimestamp(backup.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M")
        recovery = (
            f"The last good copy {backup} holds {len(loaded[2])} agent(s) "
            f"(saved {saved} UTC). Restore it with AgentPool.recover({str(path)!r}) "
            "or AgentPool(..., recover=True), which keeps the corrupt file aside, "
            f"or by hand: mv {backup} {path}"
        )
    else:
        recovery = (
            f"There is no valid last-good copy at {backup}: restore {path} from your "
            "own backups, or move it away to start an empty pool"
        )
    return PoolManifestError(path, f"pool manifest {path} is corrupt: {problem}. {recovery}.")


def recover_manifest(path: Path) -> dict[str, AgentRecord]:
    """Restore a corrupt or missing manifest from its last good copy, under the lock.

    A valid manifest is left alone; with neither file, the pool starts empty.
    A corrupt manifest is kept as ``<manifest>.corrupt-<UTC time>``.

    Args:
        path: The manifest.

    Returns:
        The records of the manifest as it now is (empty when there is none).

    Raises:
        PoolManifestError: If neither the manifest nor the copy is valid.
    """
    with hold_lock(path):
        try:
            loaded = load_manifest(path)
        except ValueError as exc:
            problem = f"pool manifest {path} is corrupt: {exc}"
            corrupt = True
        else:
            if loaded is not None:
                logger.info("pool manifest %s is valid; nothing to recover", path)
                return loaded[2]
            problem = f"pool manifest {path} does not exist"
            corrupt = False
        backup = backup_path_for(path)
        if not corrupt and not backup.exists():
            logger.info("pool %s and its copy %s do not exist; starting an empty pool",
                        path, backup)
            return {}
        try:
            restored = load_manifest(backup)
        except ValueError as exc:
            raise PoolManifestError(
                path,
                f"cannot recover {path} ({problem}): the last-good copy {backup} is "
                f"corrupt too: {exc}",
            ) from None
        if restored is None:
            raise PoolManifestError(
                path,
                f"cannot recover {path} ({problem}): the last-good copy {backup} does "
                "not exist",
            )
        text, _, records = restored
        aside = None
        if corrupt:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            aside = path.with_name(f"{path.name}.corrupt-{stamp}")
            os.replace(path, aside)
        atomic_write_text(path, text)
        logger.warning(
            "pool %s recovered from its last-good copy %s: %d agent(s) restored (%s)%s; "
            "agents added by the last save before the failure are not in the copy",
            path, backup, len(records), problem,
            f"; the corrupt file is kept as {aside}" if aside else "",
        )
        return records


class PoolManifest(SharedFile):
    """The file side of an agent pool: its records as loaded, reloaded, recovered and saved.

    :class:`~training.league.agent_pool.AgentPool` builds the registry on this; the
    arguments are documented there. Every change goes through :meth:`_mutate`,
    which holds the lock, starts from the newest manifest and writes the last
    good copy before the new manifest.
    """

    def __init__(self, pool_manifest: str | os.PathLike, max_size: int = 200, *,
                 recover: bool = False) -> None:
        super().__init__("pool_manifest", pool_manifest)
        if self._path.suffix == ".tmp":
            raise ValueError(
                f"pool_manifest={str(self._path)!r} ends in '.tmp', the suffix reserved for the "
                "last-good copy: use e.g. 'pool.json'"
            )
        if isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer)):
            raise TypeError(f"max_size={max_size!r} is invalid: expected an int >= 1")
        if max_size < 1:
            raise ValueError(f"max_size={max_size} is invalid: expected an int >= 1")
        recover = check_bool("recover", recover)
        self._max_size = int(max_size)
        self._records: dict[str, AgentRecord] = {}
        if recover:
            self._records = recover_manifest(self._path)
        else:
            self._initial_load()

    # ------------------------------------------------------------------ paths

    @property
    def manifest_path(self) -> Path:
        """Path of the JSON manifest (also :attr:`path` and :attr:`pool_manifest`)."""
        return self._path

    # The constructor's argument name.
    pool_manifest = manifest_path

    @property
    def backup_path(self) -> Path:
        """Path of the last-good copy (``<stem>.tmp``, e.g. ``pool.tmp``)."""
        return backup_path_for(self._path)

    @property
    def max_size(self) -> int:
        """Capacity of the pool."""
        return self._max_size

    # ---------------------------------------------------------------- loading

    def _read_manifest(self) -> tuple[str, dict[str, AgentRecord]] | None:
        """Read the manifest: (text, records), None if missing; corrupt: PoolManifestError."""
        try:
            loaded = load_manifest(self._path)
        except ValueError as exc:
            raise corrupt_manifest_error(self._path, str(exc)) from None
        if loaded is None:
            return None
        text, file_max_size, records = loaded
        if file_max_size is not None and file_max_size != self._max_size:
            logger.debug(
                "pool %s: manifest max_size=%d, using max_size=%d from the constructor",
                self._path, file_max_size, self._max_size,
            )
        return text, records

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
    def recover(cls, pool_manifest: str | os.PathLike, max_size: int = 200) -> Self:
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

    # ---------------------------------------------------------------- writing

    def _write_locked(self, previous_text: str | None) -> None:
        """Write the in-memory pool; the caller holds the lock and read ``previous_text``."""
        if previous_text is not None:
            # The copy is the manifest being replaced, already validated under
            # this lock, so it is always a good one.
            atomic_write_text(self.backup_path, previous_text)
        atomic_write_text(self._path, manifest_text(self._max_size, self._records.values()))

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

