"""The league launcher: the three roles as processes on one league folder, watched,
restarted when they crash, stopped together (``python -m training.league``).

:class:`Launcher` runs each role's own command line (:func:`role_command`, through
:func:`training.league.launch.run_role_cli`), its output appended to
``<league>/<role>/role.log`` (:data:`ROLE_LOG`). It shows one line per role, read from the
role's ``status.json``; restarts a role that exits with an error or is killed, up to
``max_restarts`` times; and on SIGINT or SIGTERM passes SIGINT on to every role (each
stops after its rollout with a checkpoint), waits ``grace`` seconds, then kills those
still running. One launcher per league: it claims the league folder
(:data:`~training.league.layout.LAUNCHER_LOCK_FILE`) and refuses to start while another
launcher holds it, or while another process owns a role's folder, naming that process.
``docs/league_training_guide.md`` ("Running a league") has the guide.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from storage.files import FolderInUseError, FolderLock, clean_stale_temporaries, read_json_file
from training.league.config import (
    CONFIG_FILES,
    LEAGUE_DIR,
    ROLE_MODULES,
    hydra_quoted,
    league_dir_overrides,
)
from training.league.layout import (
    IN_USE_EXIT_CODE,
    LAUNCHER_LOCK_FILE,
    ROLE_LOCK_FILE,
    STATUS_FILE,
    STOPPED_EXIT_CODE,
)

ROOT = Path(__file__).resolve().parents[2]
"""The repository (put on the roles' ``PYTHONPATH``)."""
ROLES = tuple(ROLE_MODULES)
"""The league's roles, in the order they are started and shown."""
ROLE_LOG = "role.log"
"""A role's output, appended, in its folder."""
RESTART_DELAY_S = 2.0
"""Seconds between a role's crash and its restart."""
FINAL_STATES = ("done", "stopped", "killed", "failed")
"""The states of a role that has ended for good."""
PLAIN_INTERVAL_S = 10.0
"""Without a terminal: the least seconds between two lines of one role (a change of
state is printed at once)."""
HYDRA_BOILERPLATE = "Set the environment variable HYDRA_FULL_ERROR=1"
"""The start of the line Hydra prints after a crashed app's error: never the crash's
own last line."""


@dataclass
class RoleProcess:
    """One role under the launcher: its command, its process and what became of it.

    ``state`` is ``starting`` (no status from this process yet), ``training`` (its
    status came), ``restarting`` (crashed; started again, or to be in a moment, with no
    status from the new process yet), ``stopping`` (SIGINT sent), or once it has ended
    for good (:data:`FINAL_STATES`) ``done`` (exited 0), ``stopped`` (exited after a
    SIGINT or SIGTERM), ``killed`` (still running after the grace period) or ``failed``
    (crashed again after ``max_restarts`` restarts, or refused because another process
    owns its folder).
    """

    role: str
    command: list[str]
    folder: Path
    process: subprocess.Popen | None = None
    state: str = "starting"
    restarts: int = 0
    restart_at: float | None = None

    @property
    def log_path(self) -> Path:
        return self.folder / ROLE_LOG

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def status(self) -> dict[str, Any] | None:
        """The role's ``status.json``, or None while there is none (or it is unreadable)."""
        try:
            status = read_json_file(self.folder / STATUS_FILE, "role status")
        except (OSError, ValueError):
            return None
        return status if isinstance(status, dict) else None


def role_command(role: str, league_dir: Path | None, overrides: Sequence[str] = ()) -> list[str]:
    """The command line that runs ``role`` in the league folder ``league_dir`` (None: the
    configs' own folders), continuing its checkpoint, with Hydra ``overrides`` last."""
    config_file = CONFIG_FILES[role]
    folder = role_folder(role, league_dir)
    moved = league_dir_overrides(role, league_dir) if league_dir is not None else []
    return [sys.executable, "-m", f"training.league.{ROLE_MODULES[role]}",
            "--config-path", str(config_file.path.parent), "--config-name", config_file.path.stem,
            "resume.auto=true", f"hydra.run.dir={hydra_quoted(str(folder / 'hydra'))}", *moved,
            *overrides]


def role_folder(role: str, league_dir: Path | None) -> Path:
    """Where ``role`` keeps its pool, checkpoints, status and ``role.log``."""
    return Path(league_dir if league_dir is not None else LEAGUE_DIR) / role


def split_overrides(overrides: Sequence[str], roles: Sequence[str]) -> dict[str, list[str]]:
    """Each role's Hydra overrides: ``key=value`` goes to every role, ``<role>:key=value``
    to that role only (order kept).

    Raises:
        ValueError: for ``<role>:...`` naming a role that is not run.
    """
    given: dict[str, list[str]] = {role: [] for role in roles}
    for override in overrides:
        prefix, colon, rest = override.partition(":")
        if colon and prefix in ROLES:
            if prefix not in given:
                raise ValueError(f"override {override!r} is for {prefix}, which is not run "
                                 f"(--roles {' '.join(roles)})")
            given[prefix].append(rest)
        else:
            for role in roles:
                given[role].append(override)
    return given


class Launcher:
    """Runs ``roles`` on one league folder until each is done, failed or stopped.

    Args:
        roles: the roles to run (:data:`ROLES`' names).
        league_dir: the league folder (None: the configs' ``checkpoints/league``, with
            the logs in ``logs/league``).
        overrides: Hydra overrides for every role, and ``<role>:key=value`` for one.
        max_restarts: restarts of a role that crashed, each.
        grace: seconds the roles get to stop after SIGINT before they are killed.
        refresh: seconds between two looks at the roles.
        out: where the lines go (a terminal gets a live table).

    Raises:
        ValueError: for an unknown role, ``max_restarts`` not an int >= 0, ``grace``
            not a number >= 0, or ``refresh`` not a finite number > 0.
    """

    def __init__(self, roles: Sequence[str] = ROLES, league_dir: str | Path | None = None,
                 overrides: Sequence[str] = (), *, max_restarts: int = 3, grace: float = 30.0,
                 refresh: float = 1.0, out: TextIO | None = None) -> None:
        unknown = sorted(set(roles) - set(ROLES))
        if unknown or not roles:
            raise ValueError(f"roles={list(roles)!r} is invalid: expected some of "
                             f"{', '.join(ROLES)}")
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or \
                max_restarts < 0:
            raise ValueError(f"max_restarts={max_restarts!r} is invalid: expected an int >= 0")
        if not _is_number(grace) or math.isnan(grace) or grace < 0:
            raise ValueError(f"grace={grace!r} is invalid: expected a number of seconds >= 0")
        if not _is_number(refresh) or not math.isfinite(refresh) or refresh <= 0:
            raise ValueError(f"refresh={refresh!r} is invalid: expected a finite number of "
                             "seconds > 0")
        self.league_dir = Path(league_dir).resolve() if league_dir is not None else None
        per_role = split_overrides(overrides, roles)
        self.roles = [RoleProcess(role, role_command(role, self.league_dir, per_role[role]),
                                  role_folder(role, self.league_dir))
                      for role in dict.fromkeys(roles)]
        self.max_restarts, self.grace, self.refresh = max_restarts, grace, refresh
        self.out = out or sys.stdout
        self.signals: list[int] = []
        self.kill_at: float | None = None
        self._shown: dict[str, tuple[str, str, float]] = {}
        self._console: Any = None

    # --- the loop ----------------------------------------------------------------------------

    @property
    def folder(self) -> Path:
        """The league folder (the configs' :data:`~training.league.config.LEAGUE_DIR`
        without ``league_dir``)."""
        return self.league_dir if self.league_dir is not None else Path(LEAGUE_DIR)

    def run(self) -> int:
        """Start the roles and watch them until each has ended for good (every exit
        processed, whenever it came); returns :meth:`exit_code`.

        Raises:
            storage.files.FolderInUseError: before anything is started or written, if
                another launcher runs on the league folder or another process owns a
                role's folder, naming its pid.
        """
        claim = FolderLock(self.folder, LAUNCHER_LOCK_FILE, "league folder")
        # Looked at before claiming, so that a refused launcher leaves no trace (the
        # claim itself writes the lock file); each role claims its own folder too.
        claim.check_free()
        for role in self.roles:
            FolderLock(role.folder, ROLE_LOCK_FILE, "league role folder").check_free()
        claim.acquire()
        try:
            return self._watch()
        finally:
            claim.release()

    def _watch(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            with self._display() as show:
                for role in self.roles:
                    self._start(role)
                while True:
                    self._step()
                    show()
                    # Decided by the states, not by which processes run: a role that
                    # ended since _step looked is processed by the next _step.
                    if all(r.state in FINAL_STATES for r in self.roles):
                        break
                    self._sleep(self.refresh)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.exit_code()

    def exit_code(self) -> int:
        """128 + the signal after SIGINT (130) or SIGTERM (143); else 1 when a role
        failed, 130 when one was stopped on its own (a SIGINT to it), 0 when every role
        is done."""
        if self.signals:
            return 128 + self.signals[0]
        if any(r.state == "failed" for r in self.roles):
            return 1
        if any(r.state != "done" for r in self.roles):
            return STOPPED_EXIT_CODE
        return 0

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.signals.append(signum)

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        handled = len(self.signals)
        while time.monotonic() < end and len(self.signals) == handled:
            time.sleep(min(0.1, max(end - time.monotonic(), 0)))

    def _step(self) -> None:
        """One look at every role: exits, shutdown, restarts. Every exit since the last
        look is processed first, once, so a crash is one even if a signal came since."""
        self._collect_exits()
        now = time.monotonic()
        if self.signals and self.kill_at is None:
            self.kill_at = now + self.grace
            self._event(None, f"{signal.Signals(self.signals[0]).name}: stopping every role "
                        f"(SIGINT), killing those still running in {self.grace:g} s")
            for role in self.roles:
                if role.restart_at is not None:  # crashed, not to be restarted now
                    role.restart_at, role.state = None, "stopped"
                if role.running:
                    role.process.send_signal(signal.SIGINT)
                    role.state = "stopping"
        if self.kill_at is not None and (now >= self.kill_at or len(self.signals) > 1):
            why = "a second signal" if len(self.signals) > 1 else "the grace period"
            for role in self._unprocessed():
                role.process.kill()
                code = role.process.wait()
                if code != -signal.SIGKILL:  # it ended by itself before the SIGKILL came
                    self._exited(role, code)
                    continue
                role.state = "killed"
                self._event(role, f"still running after {why}: killed (SIGKILL)")
                self._clean(role)
        for role in self.roles:
            if role.restart_at is not None:
                if now >= role.restart_at:
                    self._start(role)
                continue
            if role.process is None or role.state in FINAL_STATES:
                continue
            status = role.status()
            if role.state in ("starting", "restarting") and status and \
                    status.get("pid") == role.process.pid:
                role.state = "training"  # its first status: it is built and training

    def _unprocessed(self) -> list[RoleProcess]:
        """The roles whose current process has not had its exit processed (running, or
        ended since the last look)."""
        return [role for role in self.roles if role.process is not None and
                role.restart_at is None and role.state not in FINAL_STATES]

    def _collect_exits(self) -> None:
        """Process the exit of every role whose process has ended since the last look."""
        for role in self._unprocessed():
            code = role.process.poll()
            if code is not None:
                self._exited(role, code)

    def _exited(self, role: RoleProcess, code: int) -> None:
        """What a role's exit with ``code`` means: done, stopped, refused, or a crash
        (restarted, or failed after ``max_restarts``); called once per process."""
        self._clean(role)
        if code == 0:
            role.state = "done"
            self._event(role, "done")
        elif code in (STOPPED_EXIT_CODE, -signal.SIGINT) or self.kill_at is not None:
            role.state = "stopped"
            self._event(role, f"stopped ({_describe(code)})")
        elif code == IN_USE_EXIT_CODE:  # another process trains its folder: not restarted
            role.state = "failed"
            last = _last_line(role.log_path)
            self._event(role, "refused: another process owns its folder" +
                        (f"; its last line: {last}" if last else ""))
        else:
            reason = _describe(code)
            last = _last_line(role.log_path) if code > 0 else ""  # a crash's message
            if role.restarts < self.max_restarts:
                role.restarts += 1
                role.state, role.restart_at = "restarting", time.monotonic() + RESTART_DELAY_S
                self._event(role, f"{reason}; restarting with resume.auto=true "
                            f"({role.restarts}/{self.max_restarts})" +
                            (f"; its last line: {last}" if last else ""))
            else:
                role.state = "failed"
                self._event(role, f"{reason}; failed after {role.restarts} restart(s)" +
                            (f"; its last line: {last}" if last else ""))

    @staticmethod
    def _clean(role: RoleProcess) -> None:
        """Remove the temporaries a dead role's writers left in its folders and the shared
        ones (a role cleans them when it starts; this leaves none behind a role that is
        not started again); a live writer's stay."""
        for folder in (role.folder.parent, role.folder, role.folder / "snapshots"):
            clean_stale_temporaries(folder)

    def _start(self, role: RoleProcess) -> None:
        role.restart_at = None
        role.state = "restarting" if role.restarts else "starting"
        role.folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT),
                                                         os.environ.get("PYTHONPATH")) if p)}
        with open(role.log_path, "a", encoding="utf-8") as log:
            log.write(f"==== {time.strftime('%Y-%m-%d %H:%M:%S')} launcher: start "
                      f"{role.restarts + 1}: {' '.join(role.command)}\n")
            log.flush()
            role.process = subprocess.Popen(role.command, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, env=env)

    # --- what is shown -----------------------------------------------------------------------

    def _event(self, role: RoleProcess | None, message: str) -> None:
        line = f"[launcher] {role.role + ': ' if role else ''}{message}"
        if role is not None:
            with open(role.log_path, "a", encoding="utf-8") as log:
                log.write(f"==== {time.strftime('%Y-%m-%d %H:%M:%S')} launcher: {message}\n")
        self._print(line)

    def _print(self, line: str) -> None:
        if self._console is not None:
            self._console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.out, flush=True)

    def rows(self) -> list[dict[str, str]]:
        """What the display shows of each role, as text."""
        rows = []
        for role in self.roles:
            status = role.status() or {}
            step, total = status.get("step"), status.get("total_timesteps")
            win = (status.get("metrics") or {}).get("rollout/win_rate")
            rows.append({
                "role": role.role, "agent": str(status.get("agent_id", "-")),
                "state": role.state,
                "step": f"{step:,}/{total:,}" if step is not None and total else "-",
                "%": f"{100 * step / total:.0f}%" if step is not None and total else "-",
                "Elo": f"{status['elo']:.0f}" if "elo" in status else "-",
                "win rate": f"{win:.2f}" if win is not None else "-",
                "pool": str(status.get("pool_size", "-")),
                "resets": str(status.get("reset_count", "-")),
                "restarts": str(role.restarts),
            })
        return rows

    def _display(self) -> contextlib.AbstractContextManager[Callable[[], None]]:
        """A context giving ``show()``: a live table on a terminal, else lines."""
        return self._live() if self.out.isatty() else self._lines()

    @contextlib.contextmanager
    def _lines(self) -> Iterator[Callable[[], None]]:
        """A line per role when it changes: at once for a new state, else at most every
        :data:`PLAIN_INTERVAL_S`."""
        def show() -> None:
            now = time.monotonic()
            for row in self.rows():
                line = (f"{row['role']}: {row['state']}, agent {row['agent']}, step "
                        f"{row['step']} ({row['%']}), Elo {row['Elo']}, win rate "
                        f"{row['win rate']}, pool {row['pool']}, resets {row['resets']}, "
                        f"restarts {row['restarts']}")
                last = self._shown.get(row["role"])
                if last is None or (line != last[1] and (
                        row["state"] != last[0] or now - last[2] >= PLAIN_INTERVAL_S)):
                    self._shown[row["role"]] = (row["state"], line, now)
                    self._print(line)

        yield show

    @contextlib.contextmanager
    def _live(self) -> Iterator[Callable[[], None]]:
        """A table of the roles, redrawn by ``show()`` (rich; no thread of its own)."""
        from rich import box
        from rich.console import Console
        from rich.live import Live
        from rich.table import Table

        def table() -> Table:
            grid = Table(title=f"league {self.league_dir or LEAGUE_DIR}", box=box.SIMPLE_HEAD,
                         title_justify="left")
            rows = self.rows()
            for name in rows[0]:
                grid.add_column(name, no_wrap=True, justify="left" if name in (
                    "role", "agent", "state") else "right")
            for row in rows:
                grid.add_row(*row.values())
            return grid

        self._console = Console(file=self.out)
        try:
            with Live(table(), console=self._console, auto_refresh=False,
                      redirect_stdout=False, redirect_stderr=False) as display:
                yield lambda: display.update(table(), refresh=True)
        finally:
            self._console = None


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def _last_line(path: Path, max_bytes: int = 4096) -> str:
    """The last line of ``path`` that is neither the launcher's nor Hydra's advice after
    an error (:data:`HYDRA_BOILERPLATE`): a crash's own message, the exception's line."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(handle.seek(0, os.SEEK_END) - max_bytes, 0))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    lines = [line.strip() for line in lines if line.strip() and not line.startswith("====")
             and not line.startswith(HYDRA_BOILERPLATE)]
    return lines[-1][:300] if lines else ""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _seconds(*, finite: bool, positive: bool) -> Callable[[str], float]:
    """An argparse ``type`` for a number of seconds: the error (after argparse's
    ``argument --flag:``) names the value and what is allowed."""
    allowed = f"{'a finite' if finite else 'a'} number of seconds {'> 0' if positive else '>= 0'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if math.isnan(value) or (finite and math.isinf(value)) or value < 0 or \
                (positive and value == 0):
            raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected {allowed}")
        return value

    return parse


def _count(text: str) -> int:
    """An argparse ``type`` for an int >= 0 (the error names the value)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected an int >= 0")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``python -m training.league``); returns the exit status
    (:meth:`Launcher.exit_code`, or :data:`~training.league.layout.IN_USE_EXIT_CODE` when
    another process owns the league folder or a role's folder: nothing is started)."""
    parser = argparse.ArgumentParser(
        prog="python -m training.league",
        description="Run the league's roles on one league folder: a line per role, "
                    "crashed roles restarted, Ctrl-C stops them all with a checkpoint.",
        epilog="Overrides: key=value goes to every role, <role>:key=value to one, e.g. "
               "`-- training.total_timesteps=20000 main_agent:training.seed=1`.")
    parser.add_argument("--roles", nargs="+", choices=ROLES, default=list(ROLES), metavar="ROLE",
                        help=f"roles to run, of {', '.join(ROLES)} (default: all three)")
    parser.add_argument("--league-dir", type=Path, default=None, metavar="DIR",
                        help=f"the league folder (default: the configs' {LEAGUE_DIR}, logs "
                             "in logs/league); every role's files go under it, its "
                             "TensorBoard logs in DIR/logs/<role>")
    parser.add_argument("--max-restarts", type=_count, default=3,
                        metavar="N", help="restarts of a crashed role (default 3)")
    parser.add_argument("--grace", type=_seconds(finite=False, positive=False),
                        default=30.0, metavar="S",
                        help="seconds the roles get to stop after Ctrl-C (default 30)")
    parser.add_argument("--refresh", type=_seconds(finite=True, positive=True),
                        default=1.0, metavar="S",
                        help="seconds between two looks at the roles, finite and > 0 "
                             "(default 1)")
    parser.add_argument("overrides", nargs="*",
                        help="Hydra overrides (after --): key=value or <role>:key=value")
    args = parser.parse_args(argv)
    try:
        launcher = Launcher(args.roles, args.league_dir, args.overrides,
                            max_restarts=args.max_restarts, grace=args.grace,
                            refresh=args.refresh)
    except ValueError as error:
        parser.error(str(error))
    try:
        return launcher.run()
    except FolderInUseError as error:
        print(f"{parser.prog}: refused: {error}", file=sys.stderr, flush=True)
        return IN_USE_EXIT_CODE


__all__ = ["Launcher", "ROLES", "RoleProcess", "main", "role_command", "split_overrides"]
