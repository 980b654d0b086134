"""The snapshot pools of self-play: folders of frozen past selves, the newest kept.

:class:`SnapshotPool` is what every stack's self-play shares: a folder of
versioned snapshots, reloaded in version order, the oldest evicted when a new one
comes in, foreign files reported and left alone, unsafe files refused. Its three
kinds, all documented and importable as :mod:`training.self_play`'s:
:class:`~training.ppo.pool.OpponentPool` (Stable-Baselines3 PPO learners as
``snapshot_v{version:06d}.zip``), :class:`~training.mappo.pool.TeamOpponentPool`
(MAPPO teams as ``team_snapshot_v{version:06d}.pt``) and
:class:`~training.wfm1.pool.WFM1OpponentPool` (WFM-1 generalists as
``wfm1_snapshot_v{version:06d}.pt``).
"""

from __future__ import annotations

import logging
import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

from envs.sim.validation import check_int
from storage.files import UnreadableFileError, check_archive, clean_stale_temporaries

logger = logging.getLogger(__name__)


__all__ = ["DevicePool", "SnapshotPool"]


class SnapshotPool:
    """A folder of versioned snapshots: the newest ``max_size`` form the pool, and the
    oldest is evicted (its file deleted) when a new one comes in.

    Subclasses say how a snapshot is named (:attr:`pattern`, :meth:`file_name`),
    written and read. On construction an existing folder is reloaded in version
    order; a file there that is not a snapshot is reported (logged) and left
    alone, and a kept snapshot that is not a readable archive raises
    ``ValueError`` naming it (every format is a zip archive). Reloading never
    deletes anything: snapshots beyond ``max_size`` stay on disk, outside the
    pool. Only :meth:`add` evicts, and only snapshots that are in the pool.

    Args:
        pool_dir: folder of the snapshots (created).
        max_size: snapshots kept (>= 1).

    Attributes:
        pool_dir: the folder.
        max_size: the capacity.
    """

    pattern: re.Pattern
    kind = "pool"

    def __init__(self, pool_dir: str | Path, max_size: int = 10) -> None:
        self.pool_dir = Path(pool_dir)
        self.max_size = check_int("max_size", max_size, minimum=1)
        self.pool_dir.mkdir(parents=True, exist_ok=True)
        clean_stale_temporaries(self.pool_dir)
        self._paths: list[Path] = self._scan()

    @classmethod
    def file_name(cls, version: int) -> str:
        raise NotImplementedError

    @classmethod
    def version_of(cls, path: str | Path) -> int:
        """The version in a snapshot's file name."""
        match = cls.pattern.match(Path(path).name)
        if match is None:
            raise ValueError(f"{path} is not named like a {cls.kind} snapshot "
                             f"({cls.file_name(1)})")
        return int(match.group(1))

    def _scan(self) -> list[Path]:
        snapshots, foreign = [], []
        for path in self.pool_dir.iterdir():
            if self.pattern.match(path.name):
                self._check_member(path)
                snapshots.append(path)
            elif path.is_file() and not path.name.startswith("."):
                foreign.append(path.name)
        if foreign:
            logger.warning("%s %s holds files that are not snapshots (left alone): %s",
                           self.kind, self.pool_dir, ", ".join(sorted(foreign)))
        snapshots.sort(key=self.version_of)
        kept, excess = snapshots[-self.max_size:], snapshots[:-self.max_size]
        for path in kept:
            # Every format is a zip archive: a cheap check that catches truncated,
            # foreign and oversized files without loading every snapshot.
            try:
                check_archive(path, f"{self.kind} snapshot")
            except UnreadableFileError as error:
                raise UnreadableFileError(f"{error}: remove or restore it before using the "
                                          "pool") from None
        if excess:
            logger.warning("%s %s holds %d snapshots; using the newest %d (older files are "
                           "left on disk)", self.kind, self.pool_dir, len(snapshots),
                           self.max_size)
        return kept

    def _check_member(self, path: Path) -> None:
        """Refuse a snapshot that is not a regular file of the pool's own folder: a
        symlink out of it (to another file, a device or a FIFO) or a special file."""
        try:
            target, info = path.resolve(), os.stat(path)
        except OSError as error:
            raise UnreadableFileError(f"{self.kind} snapshot {path} cannot be read: "
                                      f"{error.strerror}") from None
        if target.parent != self.pool_dir.resolve():
            raise UnreadableFileError(f"{self.kind} snapshot {path} links to {target}, outside "
                                      f"{self.pool_dir}: refusing to read it")
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFileError(f"{self.kind} snapshot {path} is not a regular file: "
                                      "refusing to read it")

    @property
    def size(self) -> int:
        """Number of snapshots in the pool."""
        return len(self._paths)

    @property
    def snapshot_paths(self) -> list[Path]:
        """Snapshot paths, oldest first (a copy)."""
        return list(self._paths)

    @property
    def latest_version(self) -> int:
        """Highest snapshot version in the pool (0 when empty)."""
        return self.version_of(self._paths[-1]) if self._paths else 0

    def _add(self, version: int, write) -> Path:
        """Write snapshot ``version`` with ``write(path) -> path``, then evict the oldest
        beyond ``max_size``. Written first: if the process dies in between, the folder
        has one snapshot too many (the next reload leaves it out), never one too few."""
        version = check_int("version", version, minimum=1)
        if self._paths and version <= self.latest_version:
            raise ValueError(f"version={version} is invalid: expected a version above "
                             f"{self.latest_version}, the newest in {self.pool_dir}")
        path = write(self.pool_dir / self.file_name(version))
        while len(self._paths) >= self.max_size:
            oldest = self._paths.pop(0)
            self._forget(oldest)
            oldest.unlink(missing_ok=True)
            logger.info("evicted %s from the %s", oldest.name, self.kind)
        self._paths.append(path)
        return path

    def _forget(self, path: Path) -> None:
        """Drop anything kept in memory for an evicted snapshot."""

    def _member(self, path: str | Path) -> Path:
        path = Path(path)
        if path not in self._paths:
            raise KeyError(f"{path} is not in the {self.kind} {self.pool_dir}")
        self._check_member(path)  # it may have been replaced since the scan
        return path

    def _pick(self, rng: np.random.Generator | None) -> Path | None:
        if not self._paths:
            return None
        rng = rng if rng is not None else np.random.default_rng()
        return self._paths[int(rng.integers(len(self._paths)))]


class DevicePool(SnapshotPool):
    """A :class:`SnapshotPool` of torch policies of one kind (:attr:`policy_type`), written
    by :meth:`_write` and loaded onto a device (``load(path, device)``): the team pool and
    WFM-1's share their adding and sampling."""

    policy_type: type
    """The policies the pool holds."""

    def _write(self, policy: Any, path: Path, version: int) -> Path:
        """Write ``policy`` as snapshot ``version`` at ``path`` (atomically); the path."""
        raise NotImplementedError

    def load(self, path: str | Path, device: Any = None) -> Any:
        raise NotImplementedError

    def add(self, policy: Any, version: int) -> Path:
        """Save ``policy`` as snapshot ``version``, then evict the oldest beyond ``max_size``.

        Args:
            policy: the policy to freeze (it is not modified).
            version: its version, above every version in the pool.

        Returns:
            The snapshot's path.

        Raises:
            TypeError: if ``policy`` is not a :attr:`policy_type`.
            ValueError: if ``version`` is not an integer above every version in the pool.
        """
        if not isinstance(policy, self.policy_type):
            raise TypeError(f"policy={type(policy).__name__} is invalid: expected a "
                            f"{self.policy_type.__name__}")
        return self._add(version, lambda path: self._write(policy, path, version))

    def sample(self, rng: np.random.Generator | None = None, device: Any = None) -> Any:
        """A uniformly chosen snapshot, loaded (:meth:`load`); None if the pool is empty.

        Raises:
            ValueError: if the chosen snapshot is corrupt (the message names it).
        """
        path = self._pick(rng)
        return None if path is None else self.load(path, device=device)

    def sample_latest(self, device: Any = None) -> Any:
        """The newest snapshot, loaded (:meth:`load`); None if the pool is empty."""
        return self.load(self._paths[-1], device=device) if self._paths else None

