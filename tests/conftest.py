"""Settings for every test: each test process uses its share of the cores.

Under pytest-xdist (``make test`` runs ``-n 2``) every worker, and every process it
starts (the documentation's examples, league roles, killed-and-resumed runs), gets
``cores // workers`` compute threads (at least one) for torch and the BLAS/OpenMP
libraries under it. Left alone, torch gives each process a thread per core, so two
workers on two cores oversubscribe them: torch's OpenMP threads then wait on each other,
and a forward pass of the small batches the tests use takes some 70 times longer
(a batch of 8 through a 64-unit MLP: ~5 ms instead of ~80 us). One thread is also what
``train()`` uses by default (``torch_threads: 1``) and what the Ray workers set.
The simulator's Numba threads are left alone: they only run batches of
``PARALLEL_MIN_BATTLES`` battles or more.
"""

from __future__ import annotations

import os
import sys

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _threads_per_process() -> int:
    """This test process's share of the cores: all of them without xdist."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, len(os.sched_getaffinity(0)) // max(1, workers))


def pytest_configure(config) -> None:
    if getattr(config.option, "numprocesses", None):
        return  # the xdist controller: it runs no tests, and its workers take their own share
    threads = _threads_per_process()
    for name in _THREAD_VARIABLES:  # torch reads OMP_NUM_THREADS when it is imported
        os.environ.setdefault(name, str(threads))
    if "torch" in sys.modules:  # imported already (by a plugin): too late for the variable
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
