"""Files that must not be lost: atomic replacement and inter-process locks.

A file is written to a temporary sibling in the same folder, flushed and
fsynced, then moved over the target with ``os.replace`` (atomic on POSIX and
Windows), and the folder entry is fsynced. Readers see the old file or the new
one, never a mixture.

A file shared by several processes (league pools, match databases, Elo
registries) is guarded by an advisory lock on its sibling ``<name>.lock``. The
lock is an OS-level ``flock``, released when the holding process dies; a
leftover ``.lock`` file is harmless and never a reason to delete anything.

A folder that one process alone may work in (a league role's) is claimed for
that process's life with a :class:`FolderLock`, also an ``flock``; a second
claimant is refused at once with :class:`FolderInUseError`, naming the holder.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import logging
import os
import stat
import tempfile
import time
import weakref
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import filelock
import yaml

logger = logging.getLogger(__name__)

LOCK_TIMEOUT_S = 120.0
"""Seconds a writer waits for another process before giving up with an error."""

# mkstemp creates files readable by their owner only; written files should get
# the permissions the user's umask gives any new file. Read it once, at import.
_UMASK = os.umask(0)
os.umask(_UMASK)


def fsync_directory(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file that replaces ``path`` only if the block succeeds.

    Example::

        with atomic_writer("pool.json", "w") as f:
            json.dump(data, f)
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode={mode!r} is invalid: expected 'w' or 'wb'")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # The writer's pid in the name lets clean_stale_temporaries tell a dead
    # writer's leftover from a live writer's file.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp",
                                    dir=target.parent)
    tmp = Path(tmp_name)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_directory(target.parent)


def clean_stale_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Delete the temporary files that writers killed mid-write left in ``folder``.

    Only :func:`atomic_writer`'s own files (``.<name>.<pid>.<random>.tmp``) whose
    writing process no longer exists are deleted; a live writer's file, and
    anything else, is left alone. Returns the deleted paths.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    deleted = []
    for path in folder.glob(".*.tmp"):
        parts = path.name.split(".")
        # ["", name..., pid, random, "tmp"]: the pid is the third field from the end.
        if len(parts) < 5 or not parts[-3].isdigit() or not path.is_file() or \
                path.is_symlink() or _alive(int(parts[-3])):
            continue
        path.unlink(missing_ok=True)
        deleted.append(path)
    if deleted:
        logger.info("removed %d temporary file(s) of dead writers in %s", len(deleted), folder)
    return deleted


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_writer(path, "wb") as handle:
        handle.write(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically."""
    with atomic_writer(path, "w") as handle:
        handle.write(text)


def lock_path_for(path: str | os.PathLike) -> Path:
    """The sibling lock file of ``path`` (``pool.json`` -> ``pool.json.lock``)."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def hold_lock(path: str | os.PathLike, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the inter-process lock that guards ``path`` for the block.

    Raises:
        TimeoutError: if another process holds the lock for ``timeout`` seconds.
    """
    lock_file = lock_path_for(path)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(str(lock_file), timeout=timeout)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise TimeoutError(
            f"could not lock {path} within {timeout:.0f} s: another process holds {lock_file}; "
            "check for a hung trainer (the lock is released automatically when it exits)"
        ) from None
    try:
        yield
    finally:
        lock.release()


class FolderInUseError(RuntimeError):
    """A folder is claimed by another live process (:class:`FolderLock`): the message
    names the folder, the holder's pid and what to do; :attr:`pid` is that pid (None
    when the holder has not written it yet)."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


class FolderLock:
    """One process's exclusive claim on a folder, for as long as it works there.

    The claim is an OS-level ``flock`` on the file ``<folder>/<name>``, held open: the
    OS drops it when the process ends, however it ends (SIGKILL included), so a dead
    owner never leaves a stale claim, and the lock file is never deleted. Once locked,
    the owner writes its pid into the file, so that a refused process can name it. A
    child forked by the owner closes its copy of the descriptor (a forked worker
    outliving its parent must not keep the claim); POSIX only, as ``flock`` is.

    Args:
        folder: the folder claimed (created when claimed, if missing).
        name: the lock file's name in it.
        what: what the folder is, for messages (e.g. ``"league role folder"``).
    """

    def __init__(self, folder: str | os.PathLike, name: str, what: str) -> None:
        if not name or Path(name).name != name:
            raise ValueError(f"name={name!r} is invalid: expected a file name without a folder")
        self.folder, self.name, self.what = Path(folder), name, what
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        """The lock file."""
        return self.folder / self.name

    @property
    def held(self) -> bool:
        """Whether this object holds the claim now."""
        return self._fd is not None

    def acquire(self) -> FolderLock:
        """Claim the folder now, or refuse at once (never waits); returns ``self``.

        Raises:
            FolderInUseError: if another process (or another :class:`FolderLock` of
                this one) holds the claim, naming its pid.
            OSError: if the lock file cannot be created or opened (the message names it).
        """
        if self._fd is not None:
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = self._open(os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            error = self._in_use(fd)
            os.close(fd)
            raise error from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except BaseException:
            os.close(fd)  # the claim goes with the descriptor
            raise
        self._fd = fd
        _HELD_FOLDER_LOCKS.add(self)
        return self

    def release(self) -> None:
        """Give the claim up (nothing if not held); the lock file stays."""
        fd, self._fd = self._fd, None
        _HELD_FOLDER_LOCKS.discard(self)
        if fd is not None:
            os.close(fd)

    def check_free(self) -> None:
        """Refuse if another process holds the claim, changing nothing on disk (no
        file is created or written; the claim is not kept).

        Raises:
            FolderInUseError: naming the holder's pid.
        """
        if self._fd is not None:
            return
        try:
            fd = self._open(os.O_RDONLY)
        except FileNotFoundError:
            return  # never claimed
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._in_use(fd) from None
        finally:
            os.close(fd)  # drops the shared lock taken to look

    def _open(self, flags: int) -> int:
        """The lock file opened with ``flags``: never through a link, never blocking on a
        FIFO, and only if it is a regular file (it is truncated and written)."""
        fd = os.open(self.path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UnreadableFileError(f"the lock file {self.path} of {self.what} {self.folder} "
                                      "is not a regular file: remove it")
        return fd

    def _in_use(self, fd: int) -> FolderInUseError:
        """The refusal, naming the pid the holder wrote (it writes it just after locking,
        so a moment is allowed for it)."""
        pid = None
        for _ in range(20):
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            if text.isdecimal():
                pid = int(text)
                break
            time.sleep(0.01)
        holder = f"process {pid}" if pid is not None else "another process (pid not yet written)"
        return FolderInUseError(
            f"{self.what} {self.folder} is in use by {holder}, which holds its lock "
            f"{self.path}: another copy is running there. Stop it"
            f"{f' (kill {pid})' if pid is not None else ''} or use another folder; the lock "
            "is freed as soon as that process ends", pid)

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.release()

    def __repr__(self) -> str:
        return f"FolderLock({str(self.path)!r}, held={self.held})"


_HELD_FOLDER_LOCKS: weakref.WeakSet[FolderLock] = weakref.WeakSet()


def _close_held_folder_locks_in_child() -> None:
    # A forked child shares the parent's open lock; closing its copy (never unlocking,
    # which would free the parent's too) leaves the claim to the parent alone.
    for lock in list(_HELD_FOLDER_LOCKS):
        fd, lock._fd = lock._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
    _HELD_FOLDER_LOCKS.clear()


os.register_at_fork(after_in_child=_close_held_folder_locks_in_child)


def append_line(path: str | os.PathLike, line: bytes, *, fsync: bool = False,
                locked: bool = False) -> None:
    """Append one complete line to a file shared by several processes.

    The line goes in one ``os.write`` on a file opened with ``O_APPEND``, under
    :func:`hold_lock`, so concurrent writers never interleave. If a crashed
    writer left a torn last line, it is terminated first so this line stays
    whole (readers skip the fragment). ``fsync`` also survives power loss.
    ``locked`` says the caller already holds :func:`hold_lock` on ``path`` (to
    check the file and append in one critical section).
    """
    if not line.endswith(b"\n") or b"\n" in line[:-1]:
        raise ValueError("line must be a single line ending in a newline")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.nullcontext() if locked else hold_lock(path):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                logger.warning("%s ends in a torn line; terminating it before appending", path)
                line = b"\n" + line
            written = os.write(fd, line)
            while written < len(line):  # only on a nearly full disk or a signal
                written += os.write(fd, line[written:])
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)


def append_json_line(path: str | os.PathLike, row: dict, *, fsync: bool = False,
                     locked: bool = False) -> None:
    """Append ``row`` as one JSON line (keys sorted) with :func:`append_line`."""
    line = json.dumps(row, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n"
    append_line(path, line.encode("utf-8"), fsync=fsync, locked=locked)


class UnreadableFileError(ValueError):
    """A file we read is not what it should be: its message names the file, what is
    wrong, and what to do. A ``ValueError``, so callers that catch those still do."""


class UntrustedCheckpointError(ValueError):
    """A checkpoint holds pickled objects that cannot be verified, so it is not loaded
    (unpickling a shared file can run any code)."""


MAX_ARCHIVE_BYTES = 2**30
"""Most bytes a checkpoint archive may expand to: policies here are a few MB."""


def check_archive(path: str | os.PathLike, what: str, max_bytes: int | None = None) -> Path:
    """``path`` if it is a regular file holding a zip archive (SB3 and torch files are)
    that expands to at most ``max_bytes`` (default :data:`MAX_ARCHIVE_BYTES`); the
    declared sizes bound every later read.

    Raises:
        FileNotFoundError: if nothing is at ``path``.
        UnreadableFileError: for a special file, an unreadable archive or one that
            would expand past ``max_bytes`` (a zip bomb).
    """
    path = Path(path)
    source = f"{what} {path}"
    try:
        info = path.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"{source} does not exist") from None
    except OSError as error:
        raise UnreadableFileError(f"{source} cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableFileError(f"{source} is not a regular file: refusing to read it")
    _check_expansion(path, source, max_bytes)
    return path


def read_archive(path: str | os.PathLike, what: str, max_bytes: int | None = None) -> bytes:
    """The bytes of the zip archive at ``path``, read once, checked like
    :func:`check_archive` (a regular file, at most ``max_bytes`` on disk and expanded).

    A reader that parses these bytes, rather than opening ``path`` again, reads the
    very archive that was checked: a file swapped in between cannot slip past.

    Raises:
        UnreadableFileError: for a missing or special file, an unreadable archive or
            one larger than ``max_bytes`` (default :data:`MAX_ARCHIVE_BYTES`).
    """
    path = Path(path)
    source = f"{what} {path}"
    max_bytes = MAX_ARCHIVE_BYTES if max_bytes is None else max_bytes
    data = read_regular_file(path, max_bytes, source)
    _check_expansion(io.BytesIO(data), source, max_bytes)
    return data


def _check_expansion(archive_file: Path | IO[bytes], source: str,
                     max_bytes: int | None) -> None:
    """Refuse an archive that is unreadable or whose members expand past ``max_bytes``."""
    try:
        with zipfile.ZipFile(archive_file) as archive:
            expanded = sum(entry.file_size for entry in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise UnreadableFileError(f"{source} is not a readable archive (corrupt or "
                                  f"truncated): {error}") from None
    max_bytes = MAX_ARCHIVE_BYTES if max_bytes is None else max_bytes
    if expanded > max_bytes:
        raise UnreadableFileError(f"{source} would expand to {expanded:,} bytes: more than "
                                  f"the {max_bytes:,} allowed")


MAX_JSON_BYTES = 256 * 2**20
"""Largest JSON file read whole: far above any registry, pool or manifest we write."""


MAX_NESTING = 100
"""Deepest nesting of lists and mappings in a JSON or YAML file we read (ours nest a few
levels). Deeper input is refused with :class:`UnreadableFileError`: parsers and every
reader after them recurse, and a deep enough file would end in ``RecursionError``."""


def _too_deep(source: str, kind: str) -> UnreadableFileError:
    return UnreadableFileError(f"{source}: {kind} nested more than {MAX_NESTING} levels "
                               f"deep: expected at most {MAX_NESTING} (MAX_NESTING)")


def check_nesting(value: Any, source: str, kind: str = "JSON") -> Any:
    """``value`` (parsed from ``source``) if no list or mapping in it is nested deeper
    than :data:`MAX_NESTING`; walked without recursion, a container reached twice
    walked once.

    Raises:
        UnreadableFileError: naming ``source`` and the limit.
    """
    stack, seen = [(value, 1)], set()
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)) or id(item) in seen:
            continue
        if depth > MAX_NESTING:
            raise _too_deep(source, kind)
        seen.add(id(item))
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return value


def loads_json(text: str | bytes, source: str) -> Any:
    """``json.loads`` that refuses nesting deeper than :data:`MAX_NESTING` and reports
    invalid JSON, both as :class:`UnreadableFileError` naming ``source``."""
    try:
        value = json.loads(text)
    except RecursionError:  # deeper than the parser's own guard
        raise _too_deep(source, "JSON") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise UnreadableFileError(f"{source}: not valid JSON ({error})") from None
    return check_nesting(value, source, "JSON")


class _TooDeep(Exception):
    """Raised inside the YAML composer at a node deeper than :data:`MAX_NESTING`."""


class _DepthLimitedSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a node deeper than :data:`MAX_NESTING` as it is
    composed (before anything below it is read)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_NESTING and not self.check_event(yaml.ScalarEvent,
                                                                  yaml.AliasEvent):
                raise _TooDeep
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def loads_yaml(text: str | bytes, source: str) -> Any:
    """``yaml.safe_load`` that refuses nesting deeper than :data:`MAX_NESTING` while it
    parses and reports invalid YAML, both as :class:`UnreadableFileError` naming
    ``source``. Aliases are kept as shared objects, never expanded."""
    try:
        return yaml.load(text, Loader=_DepthLimitedSafeLoader)  # a SafeLoader subclass
    except (_TooDeep, RecursionError):
        raise _too_deep(source, "YAML") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise UnreadableFileError(f"{source}: not valid YAML ({error})") from None


def read_json_file(path: str | os.PathLike, what: str) -> Any:
    """Parse the JSON file ``path``, a ``what`` (e.g. "Elo registry"), refusing anything
    but a regular file of at most :data:`MAX_JSON_BYTES`.

    Raises:
        UnreadableFileError: naming the file and the problem, for a missing or
            special file (FIFO, device, folder), one too large, or invalid JSON.
    """
    path = Path(path)
    source = f"{what} {path}"
    data = read_regular_file(path, MAX_JSON_BYTES, source)
    return loads_json(data, source)


def read_regular_file(path: Path, max_bytes: int, source: str) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes``.

    Opened without blocking and checked after opening, so a FIFO or a device
    put in its place is refused, never read (a FIFO would hang, ``/dev/zero``
    would never end).

    Raises:
        UnreadableFileError: for anything else.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise UnreadableFileError(f"{source} cannot be opened: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFileError(f"{source} is not a regular file: refusing to read it")
        if info.st_size > max_bytes:
            raise UnreadableFileError(f"{source} holds {info.st_size:,} bytes: more than the "
                                      f"{max_bytes:,} allowed")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > max_bytes:
                raise UnreadableFileError(f"{source} grew past {max_bytes:,} bytes while read")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json_lines(path: str | os.PathLike) -> tuple[list[dict], int]:
    """The JSON objects of a JSON-lines file and the number of lines skipped.

    Malformed lines (nested too deep included) and a torn last line are
    skipped, counted and logged; a missing file reads as empty.

    Raises:
        UnreadableFileError: if ``path`` is not a regular file or is larger than
            :data:`MAX_JSON_BYTES`.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return [], 0
    data = read_regular_file(path, MAX_JSON_BYTES, f"JSON-lines file {path}")
    rows, bad = [], []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            row = loads_json(raw, f"line {number}")
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            bad.append(f"line {number}: {error}")
            continue
        rows.append(row)
    if bad:
        logger.warning("%s: skipped %d malformed or torn line(s): %s", path, len(bad),
                       "; ".join(bad[:5]))
    return rows, len(bad)


# --- finding the checkpoint to resume from -------------------------------------------------

def numbered_files(folder: str | os.PathLike, prefix: str, suffix: str,
                   what: str) -> list[tuple[Path, int]]:
    """The complete numbered checkpoints ``{prefix}{N}{suffix}`` of ``folder``, by ``N``.

    Checkpoints are renamed into place whole (:func:`atomic_writer`), so a file with
    such a name is complete; one that is not a regular file holding a readable archive
    of bounded size (:func:`check_archive`: damaged since, or something else put there)
    is logged and left out. ``N`` must be written plainly (``12``, not ``012``).

    Args:
        folder: where to look (a missing folder has none).
        prefix, suffix: the fixed parts of the names (matched literally).
        what: what the files are, for the log (e.g. "WFM-1 checkpoint").

    Returns:
        ``(path, N)`` pairs, smallest ``N`` first.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        name = path.name
        if not (name.startswith(prefix) and name.endswith(suffix)) or \
                len(name) <= len(prefix) + len(suffix):
            continue
        number = name[len(prefix):len(name) - len(suffix)]
        if not number.isdecimal() or not number.isascii() or str(int(number)) != number:
            continue
        try:
            check_archive(path, what)
        except (OSError, UnreadableFileError) as error:
            logger.warning("%s is not a readable checkpoint (%s); leaving it out", path, error)
            continue
        found.append((path, int(number)))
    return sorted(found, key=lambda item: item[1])


def existing_regular_file(path: str | os.PathLike, field: str) -> Path:
    """``path`` if a regular file is there (checked without opening it), for a setting
    such as ``resume.checkpoint`` that names a file to read.

    Raises:
        FileNotFoundError: naming ``field`` if nothing is there.
        UnreadableFileError: naming ``field`` for a folder, a FIFO or a device, which
            would fail, hang or never end if read.
    """
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"{field}={str(path)!r}: no such file") from None
    except OSError as error:
        raise UnreadableFileError(f"{field}={str(path)!r} cannot be read: "
                                  f"{error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableFileError(f"{field}={str(path)!r} is not a regular file: refusing "
                                  "to read it")
    return path
