"""One owner per league role folder: a second copy of a role (in Python, on the command
line, or started by a second launcher) is refused at once, naming the owner's pid, and
changes no file; the owner's death, even by SIGKILL, frees the folder; and a snapshot
file is never rewritten once its pool record exists. Real processes throughout."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from storage.files import FolderInUseError, FolderLock, UnreadableFileError
from training.league import AgentPool
from training.league.agent_pool import SnapshotRewriteError
from training.league.config import MainAgentConfig, league_dir_overrides, league_dir_settings
from training.league.launch import role_class
from training.league.layout import IN_USE_EXIT_CODE, LAUNCHER_LOCK_FILE, ROLE_LOCK_FILE
from training.league.role import claim_role_folder

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "offline"}
SMALL = dict(n_envs=8, rollout_steps=256, total_timesteps=1024, warm_start_doctrine=None,
             enable_wandb=False, progress_bar=False)
"""A main agent that is only built (never trained here)."""

HOLDER = textwrap.dedent(
    """
    import pathlib, sys, time
    from training.league.config import MainAgentConfig, league_dir_settings
    from training.league.launch import role_class

    folder, ready = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    config = MainAgentConfig(**{small}, **league_dir_settings("main_agent", folder))
    role = role_class("main_agent").from_config(config)  # claims the folder, writes v0
    ready.touch()
    time.sleep(600)
    """
).format(small=repr(SMALL))
"""A process that builds the main agent on a league folder and keeps it (and its claim)."""

LOCK_HOLDER = textwrap.dedent(
    """
    import pathlib, sys, time
    from storage.files import FolderLock

    lock = FolderLock(sys.argv[1], sys.argv[2], "league folder").acquire()
    pathlib.Path(sys.argv[3]).touch()
    time.sleep(600)
    """
)
"""A process that only claims a folder (a launcher or a role, as far as the lock goes)."""


def _start(tmp_path: Path, script: str, *args: str) -> subprocess.Popen:
    ready = tmp_path / "ready"
    process = subprocess.Popen([sys.executable, "-c", script, *args, str(ready)], cwd=tmp_path,
                               env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not ready.exists():
        if process.poll() is not None:
            raise AssertionError(process.communicate()[1].decode()[-3000:])
        assert time.monotonic() < deadline, "the holder did not start"
        time.sleep(0.05)
    return process


def _files(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``folder``: its size, mtime (ns) and SHA-256."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns,
                                         hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


def test_a_second_copy_of_a_role_is_refused_and_a_killed_owner_frees_the_folder(tmp_path):
    league = tmp_path / "league"
    config = MainAgentConfig(**SMALL, **league_dir_settings("main_agent", league))
    holder = _start(tmp_path, HOLDER, str(league))
    try:
        assert (league / "main_agent" / ROLE_LOCK_FILE).read_text() == f"{holder.pid}\n"
        before = _files(league)
        assert "main_agent/snapshots/main_agent_main_agent_001_v000000.pt" in before

        # In Python: refused before the learner is built.
        with pytest.raises(FolderInUseError, match=f"in use by process {holder.pid}") as refused:
            role_class("main_agent").from_config(config)
        assert refused.value.pid == holder.pid

        # The role's command line: refused with its own exit status, the pid on stderr.
        cli = subprocess.run(
            [sys.executable, "-m", "training.league.train_main_agent", "--config-path",
             str(ROOT / "configs" / "league"), "--config-name", "main_agent", "resume.auto=true",
             f"hydra.run.dir={tmp_path / 'cli-hydra'}", *league_dir_overrides("main_agent", league),
             "wandb.enabled=false"], cwd=tmp_path, env=ENV, capture_output=True, text=True,
            timeout=300)
        assert cli.returncode == IN_USE_EXIT_CODE, cli.stderr[-3000:]
        assert cli.stderr.splitlines()[-1].startswith(
            f"FolderInUseError: league role folder {league / 'main_agent'} is in use by process "
            f"{holder.pid}")

        # A launcher on the league (a relaunch while a role of the last one still runs):
        # refused before it starts or writes anything.
        launcher = subprocess.run(
            [sys.executable, "-m", "training.league", "--league-dir", str(league), "--roles",
             "main_agent"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
        assert launcher.returncode == IN_USE_EXIT_CODE, launcher.stderr[-3000:]
        assert f"in use by process {holder.pid}" in launcher.stderr

        assert _files(league) == before  # 0 files rewritten, touched or added
    finally:
        _kill(holder)

    # SIGKILL leaves the lock file but no claim: the role is built here now.
    role = role_class("main_agent").from_config(config)
    try:
        assert role.folder_lock.held
        assert (league / "main_agent" / ROLE_LOCK_FILE).read_text() == f"{os.getpid()}\n"
        # A snapshot whose record exists is refused before a byte is written.
        snapshot = league / "main_agent" / "snapshots" / "main_agent_main_agent_001_v000000.pt"
        written = before["main_agent/snapshots/main_agent_main_agent_001_v000000.pt"]
        role.version = -1  # as a second copy that did not see the record would count
        with pytest.raises(SnapshotRewriteError, match="main_agent_001_v000000"):
            role.snapshot()
        assert (snapshot.stat().st_size, snapshot.stat().st_mtime_ns) == written[:2]
        # A second role of this very process is refused too, while the first is in use.
        with pytest.raises(FolderInUseError, match=f"in use by process {os.getpid()}"):
            claim_role_folder(league / "main_agent")
    finally:
        role.close()
    assert not role.folder_lock.held
    FolderLock(league / "main_agent", ROLE_LOCK_FILE, "league role folder").check_free()
    role.own_folder()  # used again after close(): claimed again
    assert role.folder_lock.held
    del role  # dropped while holding it: freed when claimed again here, not refused
    claim_role_folder(league / "main_agent").release()


def test_a_second_launcher_is_refused_naming_the_first(tmp_path):
    league = tmp_path / "league"
    first = _start(tmp_path, LOCK_HOLDER, str(league), LAUNCHER_LOCK_FILE)
    try:
        before = _files(league)
        second = subprocess.run([sys.executable, "-m", "training.league", "--league-dir",
                                 str(league)], cwd=tmp_path, env=ENV, capture_output=True,
                                text=True, timeout=300)
        assert second.returncode == IN_USE_EXIT_CODE, second.stderr[-3000:]
        assert f"league folder {league} is in use by process {first.pid}" in second.stderr
        assert _files(league) == before and sorted(before) == [LAUNCHER_LOCK_FILE]
    finally:
        _kill(first)


def test_the_folder_lock_dies_with_its_process_and_looking_changes_nothing(tmp_path):
    folder = tmp_path / "role"
    FolderLock(folder, ROLE_LOCK_FILE, "league role folder").check_free()
    assert not folder.exists()  # looking at an unclaimed folder creates nothing
    holder = _start(tmp_path, LOCK_HOLDER, str(folder), ROLE_LOCK_FILE)
    lock = FolderLock(folder, ROLE_LOCK_FILE, "league role folder")
    try:
        with pytest.raises(FolderInUseError) as refused:
            lock.acquire()
        assert refused.value.pid == holder.pid and not lock.held
    finally:
        _kill(holder)
    with lock:  # freed by the OS at the SIGKILL
        assert lock.held and (folder / ROLE_LOCK_FILE).read_text() == f"{os.getpid()}\n"
        with pytest.raises(FolderInUseError, match=str(os.getpid())):
            FolderLock(folder, ROLE_LOCK_FILE, "league role folder").acquire()
    assert not lock.held


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_left_alone(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    folder = tmp_path / "role"
    folder.mkdir()
    (folder / ROLE_LOCK_FILE).symlink_to(target)
    with pytest.raises(OSError):
        FolderLock(folder, ROLE_LOCK_FILE, "league role folder").acquire()
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnreadableFileError, match="not a regular file"):
        FolderLock(tmp_path, "fifo", "league role folder").acquire()  # never blocks
    assert target.read_text() == "keep me\n"


def test_a_recorded_snapshot_is_never_rewritten(tmp_path):
    pool = AgentPool(tmp_path / "pool.json")
    pool.add("snapshots/a_v000001.pt", agent_id="a_v000001", version=1)
    for path, agent_id in ((tmp_path / "snapshots" / "a_v000001.pt", "a_v000002"),
                           ("snapshots/../snapshots/a_v000001.pt", "b"),
                           (tmp_path / "snapshots" / "other.pt", "a_v000001")):
        with pytest.raises(SnapshotRewriteError, match="never rewritten"):
            pool.check_new_snapshot(path, agent_id)
    # Added by another process since this pool was read: still refused.
    AgentPool(tmp_path / "pool.json").add("snapshots/a_v000002.pt", agent_id="a_v000002")
    with pytest.raises(SnapshotRewriteError, match="a_v000002"):
        pool.check_new_snapshot(tmp_path / "snapshots" / "a_v000002.pt", "a_v000002")
    # A file left by a writer killed before its record: written again.
    (tmp_path / "snapshots").mkdir()
    (tmp_path / "snapshots" / "a_v000003.pt").write_bytes(b"torn")
    pool.check_new_snapshot(tmp_path / "snapshots" / "a_v000003.pt", "a_v000003")
