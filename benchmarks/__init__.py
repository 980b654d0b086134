"""Benchmarks: scripts that measure speed, learning and robustness and print small tables.

Run one as a module from the repository root, e.g. ``python -m benchmarks.sim_throughput``
(``--help`` lists its options); the results the docs state are recorded in
``benchmarks/results.yaml``, from which ``python -m benchmarks.results_page`` writes
``docs/results.md``, and the runs behind them in ``docs/research/``. Some reuse the test
suite's campaigns (``tests.reliability``, ``tests.doc_examples``), which the repository
root on ``sys.path`` makes importable.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any


def argument_parser(doc: str, module: str) -> argparse.ArgumentParser:
    """Return a benchmark's command-line parser, its usage line naming the ``-m`` command.

    Args:
        doc: The benchmark module's docstring; its first line describes the command.
        module: The module's import name (``__spec__.name``: ``__name__`` is
            ``"__main__"`` under ``python -m``).
    """
    return argparse.ArgumentParser(prog=f"python -m {module}", description=doc.splitlines()[0])


def run_jobs(function: Callable[[tuple], Any], tasks: Sequence[tuple], jobs: int) -> list[Any]:
    """``function(task)`` for every task, in order: here when ``jobs`` is 1, else in
    ``jobs`` fresh (spawned) processes, each task in one. OpenMP gets one thread per
    process unless ``OMP_NUM_THREADS`` says otherwise, so the jobs do not oversubscribe
    the cores; ``function`` must be importable from its module (a process pickles it)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if jobs > 1:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            return pool.map(function, tasks, chunksize=1)
    return [function(task) for task in tasks]
