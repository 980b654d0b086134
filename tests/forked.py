"""Run ``python -m MODULE ARGS`` in a fresh process without paying for its imports again.

A test that starts a training command in a new process (to kill it, or to run it as a
user would) spends most of that process's CPU importing torch, Stable-Baselines3,
Numba and the package, some 4-6 CPU-seconds each time. :func:`run_module` starts the
process from a fork server instead: one process per test worker that imports
:data:`PRELOAD` once, and forks a child for every command. The child is a separate
process like any other (its own memory, exit code, signals: a SIGKILL kills it alone),
which runs the module as ``__main__`` with ``sys.argv`` set, as ``python -m`` does, in
the folder, environment and log file given.

What the child does not redo is only what a fresh interpreter would repeat identically:
importing the preloaded modules. It imports nothing else before the module runs, and
the server runs no torch or Numba code before it forks (no thread pool to inherit).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import runpy
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path

PRELOAD = ["torch", "torch._dynamo", "stable_baselines3", "numba", "hydra", "matplotlib",
           "matplotlib.figure", "wandb", "envs.battalion_env", "training.train",
           "training.train_mappo", "training.league.launch", "tests.doc_examples"]
"""Modules the fork server imports once (torch._dynamo: torch imports it when the
first optimiser is made; matplotlib.figure when a run draws its pictures, some 0.4 s;
wandb when a PPO run's callbacks first look for a W&B run, even with W&B off, some
0.8 s)."""

_context = None


def _server() -> multiprocessing.context.BaseContext:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _main(module: str, args: list[str], cwd: str, env: dict[str, str], log: str) -> None:
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    # python -m puts the working folder first on the path, after it PYTHONPATH's folders.
    sys.path[0:0] = [cwd, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    sys.argv = [module, *args]
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if isinstance(stop.code, int) or stop.code is None:
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    # What an interpreter does at exit, which a forked child would skip: the exit
    # handlers (W&B, Ray, logging) and the flush of its files.
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_module(module: str, args: list[str], *, cwd: str | Path, log: str | Path,
               env: Mapping[str, str] | None = None, timeout: float = 600) -> int:
    """Run ``python -m module *args`` in a child of the fork server; its exit code.

    Args:
        module: the module to run as ``__main__``.
        args: its command-line arguments.
        cwd: the folder it runs in.
        log: the file its stdout and stderr are appended to.
        env: its whole environment (this process's when None).
        timeout: seconds before it is killed and :class:`TimeoutError` raised.

    Returns:
        The exit code: 0, the code of ``sys.exit``, 1 for an uncaught exception (the
        traceback is in ``log``), minus the signal's number when a signal ended it.
    """
    child = _server().Process(target=_main, args=(
        module, list(args), str(cwd), dict(os.environ if env is None else env), str(log)))
    child.start()
    child.join(timeout)
    if child.exitcode is None:
        child.kill()
        child.join()
        raise TimeoutError(f"python -m {module} {' '.join(args)} ran past {timeout} s")
    return child.exitcode


__all__ = ["PRELOAD", "run_module"]
