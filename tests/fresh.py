"""Python in a fresh interpreter, for the tests of what a new process imports, prints or
refuses (as a user's command would run, with nothing already imported)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The project's folder: where the interpreter runs, and what it imports from."""


def run_python(args: list[str], timeout: float) -> str:
    """Run ``python ARGS`` in a fresh interpreter in :data:`ROOT`, with it on the path.

    Args:
        args: the interpreter's arguments (``["-c", code]``, ``["-m", module, ...]``).
        timeout: seconds it may take.

    Returns:
        What it printed on stdout, after asserting that it exited 0 (the end of its
        stderr is the assertion's message).
    """
    done = subprocess.run([sys.executable, *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
