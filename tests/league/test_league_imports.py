"""Importing the league costs what docs/league.md says: no Gymnasium, torch, SB3 or SciPy."""

from __future__ import annotations

import subprocess
import sys

# The league's bookkeeping runs where no simulator or network is needed (a league
# head, a script reading a pool); SciPy waits until the Nash solver first runs.
HEAVY = ("gymnasium", "torch", "stable_baselines3", "scipy")


def test_importing_the_league_loads_no_heavy_library() -> None:
    # A fresh interpreter: this test process has imported all of them already.
    code = (
        "import sys, training.league\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.strip()
    assert loaded == "", f"import training.league loaded {loaded}"
