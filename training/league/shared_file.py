"""The base of the league's files that several processes share: a checked path and its lock.

The agent pool's manifest and the match log are each one file that trainers
in other processes read and write too; every change to one happens under the
inter-process lock ``<file>.lock`` (:func:`storage.files.hold_lock`).
"""

from __future__ import annotations

import os
from pathlib import Path

from envs.sim.validation import check_path
from storage.files import lock_path_for

__all__ = ["SharedFile"]


class SharedFile:
    """A file shared between processes, changed only under its lock.

    Args:
        name: Name of the constructor argument, for error messages.
        path: Path of the file; it need not exist yet, but must not be a directory.

    Raises:
        TypeError: If ``path`` is not a non-empty ``str`` or ``os.PathLike``.
        ValueError: If ``path`` is not a usable file path or is a directory.
    """

    def __init__(self, name: str, path: str | os.PathLike) -> None:
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise TypeError(f"{name}={path!r} is invalid: expected a file path")
        self._path = check_path(name, path)
        if self._path.is_dir():
            raise ValueError(f"{name}={str(self._path)!r} is a directory: expected a file")

    @property
    def path(self) -> Path:
        """Path of the shared file."""
        return self._path

    @property
    def lock_path(self) -> Path:
        """Path of the inter-process lock file (``<file>.lock``)."""
        return lock_path_for(self._path)
