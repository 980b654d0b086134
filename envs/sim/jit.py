"""How the simulator's kernels are compiled: one decorator, and a cache that never goes stale.

Every compiled function of the package is declared with :func:`kernel`, Numba's ``njit``
with the on-disk cache on: the first process compiles (a few seconds per module) and
every later one loads the machine code from ``__pycache__`` (or ``NUMBA_CACHE_DIR``).
Every kernel's cache is keyed to the digest of all of :data:`KERNEL_SOURCES` together, so
an edit to any of them recompiles them all, and processes sharing a cache directory read
and write it one at a time (:func:`cache_lock`). Importing this module sets
``OMP_WAIT_POLICY=PASSIVE`` (:data:`WAIT_POLICY`) unless the environment already sets one.
``docs/simulation.md`` ("Compiling the kernels") gives the reasons, and the conventions
every kernel follows: loops over battles counted from zero after ``assert lo >= 0``, and
constants passed to other kernels as NumPy scalars.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import inspect
import os
from pathlib import Path

import numpy as np
from numba import njit

WAIT_POLICY = "PASSIVE"
"""The ``OMP_WAIT_POLICY`` this module sets when the environment sets none
(``docs/simulation.md``, "Compiling the kernels")."""
os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)

_ENVS = Path(__file__).resolve().parent.parent

KERNEL_SOURCES = ("sim/random.py", "sim/vector_math.py", "sim/terrain.py", "sim/deploy.py",
                  "sim/kernels.py", "sim/scripted.py", "battles/observation.py", "reward.py",
                  "battles/multi_observation.py", "battles/duel_step.py",
                  "battles/team_step.py")
"""The files (relative to the ``envs`` package) that define kernels; :func:`kernel`
refuses a function from any other file, so none can be left out of the digest."""


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for name in KERNEL_SOURCES:
        path = _ENVS / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


SOURCES_DIGEST = _sources_digest()


CACHE_LOCK = ".kernels.lock"
"""The file in each cache directory that :func:`kernel`'s cache reads and writes under."""


@contextlib.contextmanager
def cache_lock(directory: str):
    """Hold the exclusive lock of the kernel cache in ``directory`` (an advisory
    ``flock`` on its :data:`CACHE_LOCK` file, which is created if missing)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, CACHE_LOCK), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _locked(method, directory: str):
    """``method`` called under :func:`cache_lock` of ``directory``."""
    @functools.wraps(method)
    def call(*args, **kwargs):
        with cache_lock(directory):
            return method(*args, **kwargs)

    return call


def kernel(**options):
    """``numba.njit(cache=True, error_model="numpy", **options)`` with the cache keyed to
    :data:`SOURCES_DIGEST`. NumPy's error model divides by zero as NumPy does (inf or
    nan, no exception), which spares every float division a branch; the kernels guard
    their divisors where it matters.

    Raises:
        ValueError: for a function defined outside :data:`KERNEL_SOURCES`.
    """
    def compile_(function):
        source = Path(inspect.getfile(function)).resolve()
        if not source.is_relative_to(_ENVS) or \
                source.relative_to(_ENVS).as_posix() not in KERNEL_SOURCES:
            raise ValueError(f"kernel {function.__qualname__} is defined in {source}: expected "
                             f"one of envs/{{{', '.join(KERNEL_SOURCES)}}}")
        dispatcher = njit(cache=True, error_model="numpy", **options)(function)
        # Numba compares this stamp with the one saved in the cache index on load
        # (numba==0.68.1 keeps it here); a mismatch recompiles and overwrites the entry.
        cache = dispatcher._cache
        cache._cache_file._source_stamp = (cache._cache_file._source_stamp, SOURCES_DIGEST)
        # One process at a time reads or writes a directory's cache entries: Numba picks
        # a new entry's data file from the index it read, so two processes compiling
        # different signatures of a kernel at once (pytest-xdist workers, Ray workers
        # on a cold cache) could leave one signature's index entry pointing at the
        # other's machine code (numba/numba#4807).
        cache.load_overload = _locked(cache.load_overload, cache._cache_path)
        cache.save_overload = _locked(cache.save_overload, cache._cache_path)
        return dispatcher

    return compile_


def read_only(array: np.ndarray) -> np.ndarray:
    """``array`` if it is read-only, else a read-only view of it (no copy).

    Numba types a read-only array apart from a writable one, and compiles (and caches)
    a kernel once per signature: an input that reaches a kernel writable from one caller
    and read-only from another (a shared read-only constant, and the same built by a
    user or unpickled on a Ray worker) would compile the whole step a second time. The
    inputs that kernels only read and that can come either way pass through here.
    """
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


__all__ = ["CACHE_LOCK", "KERNEL_SOURCES", "SOURCES_DIGEST", "cache_lock", "kernel",
           "read_only"]
