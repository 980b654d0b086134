"""tests/forked.py: ``python -m`` in a child of a fork server that has the imports."""

from __future__ import annotations

import pytest

from tests.forked import run_module

PROBE = """
import atexit, os, signal, sys, time
preloaded = "torch" in sys.modules
atexit.register(lambda: print("exit handlers ran"))
print("argv", sys.argv[1:], "cwd", os.getcwd(), "X", os.environ.get("X"), __name__, preloaded)
what = sys.argv[1]
if what == "exit3":
    sys.exit(3)
if what == "raise":
    raise RuntimeError("boom")
if what == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if what == "sleep":
    time.sleep(60)
"""


def test_a_forked_command_runs_like_python_m(tmp_path):
    (tmp_path / "probe.py").write_text(PROBE)
    log = tmp_path / "log.txt"
    env = {"X": "1", "PATH": "/usr/bin:/bin"}
    assert run_module("probe", ["ok", "b"], cwd=tmp_path, log=log, env=env) == 0
    text = log.read_text()
    assert f"argv ['ok', 'b'] cwd {tmp_path} X 1 __main__ True" in text
    assert "exit handlers ran" in text
    assert run_module("probe", ["exit3"], cwd=tmp_path, log=log, env=env) == 3
    assert run_module("probe", ["raise"], cwd=tmp_path, log=log, env=env) == 1
    assert "RuntimeError: boom" in log.read_text()
    assert run_module("probe", ["kill"], cwd=tmp_path, log=log, env=env) == -9
    with pytest.raises(TimeoutError, match="probe sleep"):
        run_module("probe", ["sleep"], cwd=tmp_path, log=log, env=env, timeout=1)
