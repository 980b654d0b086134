"""How the simulator's kernels are compiled: one decorator, and a cache that never goes stale.

Every compiled function of the package is declared with :func:`kernel`, Numba's
``njit`` with the on-disk cache on: the first process compiles (a few seconds per
module) and every later one loads the machine code from ``__pycache__`` (or
``NUMBA_CACHE_DIR``).

Numba keys a function's cache to its own source file only, but a kernel compiles the
kernels it calls (from other files) into itself: edit a callee and a caller's cache
would silently keep the old code. So every kernel's cache is keyed to the digest of
all of :data:`KERNEL_SOURCES` together: any edit to any of them recompiles them all.
Processes sharing a cache directory read and write it one at a time
(:func:`cache_lock`), so concurrent first compilations cannot mix up entries.

**Loops over battles.** A kernel working on battles ``lo`` to ``hi - 1`` loops
``for c in range(hi - lo)`` and indexes battle ``lo + c``, after ``assert lo >= 0``.
Numba wraps negative indices around (``a[-1]`` is the last element) with a select on
every index it cannot prove non-negative; LLVM then loads the lanes of a vector one by
one (a gather), about ten times slower than a contiguous load. ``range(lo, hi)`` or an
unchecked ``lo`` leave the index's sign unknown; the assertion and a count from zero
prove it.

**Literal arguments.** A kernel calling another with a constant (``0``, ``True``, a
module's integer) compiles the callee once more for that value: Numba types a literal
apart from a variable, and a callee of the whole step is the whole step's compile time
again. Kernels pass such constants as NumPy scalars (``np.intp(0)``,
``np.bool_(True)``), which Numba types as plain ``int64`` and ``bool``.

**Threads that wait asleep.** The parallel kernels run on Numba's OpenMP threads. By
default OpenMP keeps an idle thread spinning on its core for a while; on a machine where
another process holds a core, the spinning thread and the one doing the work then take
turns, and two threads run a batch slower than one (1,024 2v2 battles on 2 cores with one
busy: 3.1 ms a step on 2 threads, 1.8 ms on 1; ``python -m benchmarks.thread_policy``).
Importing this module therefore sets ``OMP_WAIT_POLICY=PASSIVE`` (:data:`WAIT_POLICY`)
unless the environment already sets one: idle threads sleep, and the same step takes
1.8 ms beside a busy core, at the price of 1.3 ms instead of 1.1 ms on a quiet machine.
OpenMP reads the policy when it starts, which for Numba is the first parallel kernel,
after this import. torch's own OpenMP (a separate copy) reads it at ``import torch``, so
it holds there too when the project is imported first: at the trainers' default of one
torch thread it changes nothing, and an update on two torch threads beside a busy core
takes 0.76 s instead of 1.44 s (quiet: 0.67 s instead of 0.41 s). A machine that runs
nothing else can set ``OMP_WAIT_POLICY=ACTIVE`` before starting Python.
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
"""The ``OMP_WAIT_POLICY`` this module sets when the environment sets none (above)."""
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
