"""The league launcher (``python -m training.league``): the three roles as real processes
on one league folder, a role killed mid-run restarted, Ctrl-C stopping them all with a
checkpoint, and the overrides that move a role's files into the league folder."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from training.league import AgentPool, MatchDatabase
from training.league.config import CONFIG_FILES, LEAGUE_DIR, LEAGUE_LOG_DIR, league_dir_overrides
from training.league.launcher import ROLES, Launcher, role_command, split_overrides

ROOT = Path(__file__).resolve().parents[2]
ROLLOUT = 512
ROLLOUTS = 5
"""Rollouts of each role in the league run to the end: the main exploiter is killed once
its second checkpoint is written, with the rest still to do."""
TINY = [f"training.rollout_steps={ROLLOUT}", "env.num_envs=8", "env.max_steps=100",
        "training.n_epochs=1", "training.warm_start_doctrine=null",
        f"league.snapshot_freq={ROLLOUT}", f"league.eval_freq={ROLLOUT}",
        f"eval.checkpoint_freq={ROLLOUT}", "league.n_eval_episodes=2",
        "league.opponents_per_rollout=2", "wandb.enabled=false", "logging.progress_bar=false"]
"""Rollouts of 512 env-steps, a snapshot, an evaluation and a checkpoint each."""


def _launch(cwd: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "offline"}
    out = open(cwd / "launcher.out", "w", encoding="utf-8")  # noqa: SIM115 (the child's)
    return subprocess.Popen([sys.executable, "-m", "training.league", "--league-dir", "league",
                             "--refresh", "0.5", *args], cwd=cwd, env=env, stdout=out,
                            stderr=subprocess.STDOUT)


def _status(league: Path, role: str) -> dict:
    try:
        return json.loads((league / role / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _wait_for(condition, timeout: float, what: str, launcher: subprocess.Popen) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if launcher.poll() is not None:
            raise AssertionError(f"the launcher exited ({launcher.returncode}) before {what}")
        if time.monotonic() > end:
            raise AssertionError(f"no {what} within {timeout} s")
        time.sleep(0.2)


def _temporaries(league: Path) -> list[str]:
    """Files that atomic writers left (``.<name>.<pid>.<random>.tmp``)."""
    return sorted(str(p) for p in league.rglob(".*.tmp"))


@pytest.fixture(scope="module")
def league_run(tmp_path_factory):
    """The three roles for :data:`ROLLOUTS` rollouts each; the main exploiter SIGKILLed after its
    second checkpoint; the launcher let run to the end."""
    cwd = tmp_path_factory.mktemp("run")
    league = cwd / "league"
    launcher = _launch(cwd, "--", f"training.total_timesteps={ROLLOUTS * ROLLOUT}", *TINY,
                       "main_exploiter:league.reset_window_size=1")
    try:
        def checkpointed() -> bool:
            status = _status(league, "main_exploiter")
            return status.get("state") == "training" and status["step"] >= 2 * ROLLOUT and \
                (league / "main_exploiter" / "mappo_policy.pt").is_file()

        _wait_for(checkpointed, 300, "main exploiter checkpoint", launcher)
        killed = _status(league, "main_exploiter")
        os.kill(killed["pid"], signal.SIGKILL)
        code = launcher.wait(timeout=300)
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGINT)
            launcher.wait(timeout=60)
    return {"cwd": cwd, "league": league, "code": code, "killed": killed,
            "output": (cwd / "launcher.out").read_text()}


def test_the_launcher_runs_the_three_roles_to_the_end_on_one_league(league_run):
    league, output = league_run["league"], league_run["output"]
    assert league_run["code"] == 0, output[-3000:]
    # Every file of every role went into the league folder: nothing else in the cwd.
    assert sorted(p.name for p in league_run["cwd"].iterdir()) == ["launcher.out", "league"]
    agents = {f"{role}_001" for role in ROLES}
    for role in ROLES:
        status = _status(league, role)
        assert status["state"] == "done" and status["step"] == ROLLOUTS * ROLLOUT, status
        own = [r for r in AgentPool(league / role / "pool.json").list()
               if r.metadata["parent_agent_id"] == f"{role}_001"]
        assert len(own) >= 2 and all(r.agent_type.value == role for r in own)
        assert all((league / role / r.snapshot_path).is_file() for r in own)
        assert (league / "logs" / role / f"{role}_001").is_dir()  # TensorBoard's
        assert f"[launcher] {role}: done" in output
        assert re.search(rf"^{role}: training, agent {role}_001, step [\d,]+/"
                         rf"{ROLLOUTS * ROLLOUT:,}", output, re.MULTILINE), output
    assert agents <= {r.agent_id for r in MatchDatabase(league / "matches.jsonl").results}
    ratings = json.loads((league / "elo.json").read_text())["ratings"]
    for role in ("main_exploiter", "league_exploiter"):
        assert any(name.startswith(f"{role}_001_v") for name in ratings), role
    assert not _temporaries(league)
    # A per-role override reached its role only.
    windows = {role: (league / role / "hydra" / ".hydra" / "config.yaml").read_text()
               for role in ("main_exploiter", "league_exploiter")}
    assert "reset_window_size: 1\n" in windows["main_exploiter"]
    assert "reset_window_size: 5\n" in windows["league_exploiter"]


def test_a_role_killed_mid_run_is_restarted_and_finishes(league_run):
    league, output, killed = league_run["league"], league_run["output"], league_run["killed"]
    assert killed["step"] < ROLLOUTS * ROLLOUT
    assert "[launcher] main_exploiter: killed by SIGKILL; restarting with resume.auto=true " \
           "(1/3)" in output, output[-3000:]
    log = (league / "main_exploiter" / "role.log").read_text()
    assert log.count("launcher: start") == 2 and "launcher: killed by SIGKILL" in log
    resumed = re.search(r"resuming \S+ at step (\d+)", log)
    assert resumed and 2 * ROLLOUT <= int(resumed.group(1)) <= killed["step"]
    status = _status(league, "main_exploiter")
    assert status["state"] == "done" and status["pid"] != killed["pid"]
    for role in ("main_agent", "league_exploiter"):  # the others ran once
        assert (league / role / "role.log").read_text().count("launcher: start") == 1


def test_ctrl_c_stops_every_role_with_a_checkpoint_within_the_grace_period(tmp_path):
    league, grace = tmp_path / "league", 30
    launcher = _launch(tmp_path, "--grace", str(grace), "--",
                       f"training.total_timesteps={64 * ROLLOUT}", *TINY)
    try:
        _wait_for(lambda: all(_status(league, r).get("step", 0) >= ROLLOUT for r in ROLES),
                  300, "first rollout of every role", launcher)
        pids = {role: _status(league, role)["pid"] for role in ROLES}
        started = time.monotonic()
        launcher.send_signal(signal.SIGINT)
        code = launcher.wait(timeout=grace + 30)
        took = time.monotonic() - started
    finally:
        if launcher.poll() is None:
            launcher.kill()
    output = (tmp_path / "launcher.out").read_text()
    assert code == 130 and took < grace, (code, took, output[-3000:])
    from training.mappo.checkpoints import load_checkpoint

    for role in ROLES:
        status = _status(league, role)
        assert status["state"] == "stopped" and status["pid"] == pids[role], status
        assert 0 < status["step"] < 64 * ROLLOUT
        checkpoint = load_checkpoint(league / role / "mappo_policy.pt")
        assert checkpoint.counters["total_steps"] == status["step"]
        assert f"[launcher] {role}: stopped (exited with code 130)" in output, output
        with pytest.raises(ProcessLookupError):
            os.kill(pids[role], 0)
    assert not _temporaries(league)


def _composed(role: str, overrides: list[str]) -> dict:
    config_file = CONFIG_FILES[role]
    config_file.register()
    with initialize_config_dir(config_dir=str(config_file.path.parent), version_base=None):
        nested = OmegaConf.to_container(compose(role, overrides=overrides))
    return config_file.settings[0].from_nested(nested).to_dict()


@pytest.mark.parametrize("role", ROLES)
def test_the_league_dir_overrides_move_every_path_of_a_role(role, tmp_path):
    folder = tmp_path / "my league, 'v2'"  # a space, a comma and quotes survive Hydra
    overrides = league_dir_overrides(role, folder)
    default, moved = _composed(role, []), _composed(role, overrides)

    def paths(value):
        return value if isinstance(value, list) else [value]

    changed = {name for name in default if default[name] != moved[name]}
    assert len(changed) == len(overrides)
    for name, value in moved.items():
        for item in paths(value):
            assert not (isinstance(item, str) and item.startswith((LEAGUE_DIR, LEAGUE_LOG_DIR))), \
                (name, item)
    for name in changed:
        for before, after in zip(paths(default[name]), paths(moved[name]), strict=True):
            root, to = ((LEAGUE_DIR, folder) if before.startswith(LEAGUE_DIR)
                        else (LEAGUE_LOG_DIR, folder / "logs"))
            assert after == str(to / before[len(root) + 1:]), name
    assert moved["checkpoint_dir"] == str(folder / role)
    assert moved["match_db_path"] == str(folder / "matches.jsonl")
    assert moved["elo_registry_path"] == str(folder / "elo.json")
    assert moved["log_dir"] == str(folder / "logs" / role)


def test_overrides_go_to_every_role_or_to_the_one_named(tmp_path):
    given = split_overrides(["training.seed=1", "main_agent:env.num_envs=4",
                             "training.device=cuda:0"], ["main_agent", "main_exploiter"])
    assert given == {"main_agent": ["training.seed=1", "env.num_envs=4", "training.device=cuda:0"],
                     "main_exploiter": ["training.seed=1", "training.device=cuda:0"]}
    with pytest.raises(ValueError, match="league_exploiter"):
        split_overrides(["league_exploiter:training.seed=1"], ["main_agent"])
    command = role_command("main_exploiter", tmp_path, ["training.seed=1"])
    assert command[1:3] == ["-m", "training.league.train_exploiter"]
    assert "resume.auto=true" in command and command[-1] == "training.seed=1"
    assert f"eval.checkpoint_dir='{tmp_path / 'main_exploiter'}'" in command


def test_without_a_terminal_a_role_s_line_is_printed_when_it_changes(tmp_path):
    out = io.StringIO()
    launcher = Launcher(["main_agent"], tmp_path, out=out)
    status = {"state": "training", "pid": 1, "agent_id": "main_agent_001", "step": 1024,
              "total_timesteps": 4096, "elo": 1012.4, "pool_size": 3, "reset_count": 0,
              "metrics": {"rollout/win_rate": 0.5}}
    (tmp_path / "main_agent").mkdir()
    (tmp_path / "main_agent" / "status.json").write_text(json.dumps(status))
    with launcher._lines() as show:
        show()
        show()  # unchanged: nothing printed
        status["step"] = 2048
        (tmp_path / "main_agent" / "status.json").write_text(json.dumps(status))
        show()  # changed, but within 10 s of the last line and in the same state
        launcher.roles[0].state = "done"
        show()  # a new state: at once
    assert out.getvalue().splitlines() == [
        "main_agent: starting, agent main_agent_001, step 1,024/4,096 (25%), Elo 1012, win "
        "rate 0.50, pool 3, resets 0, restarts 0",
        "main_agent: done, agent main_agent_001, step 2,048/4,096 (50%), Elo 1012, win "
        "rate 0.50, pool 3, resets 0, restarts 0"]
    assert launcher.exit_code() == 0
    launcher.roles[0].state = "failed"
    assert launcher.exit_code() == 1


# --- every exit processed, --refresh checked, a crash's own line shown -----------------------

EXIT = "import sys; print('{line}', file=sys.stderr); sys.exit({code})"
"""A fake role: prints a line to its log and exits at once with a status."""


class _ExitsInTheWindow(Launcher):
    """A launcher whose roles always end between two looks: after each look it waits for
    every role it started to end (a loop that stopped there would never process their
    exits). ``after_first_look`` runs once, after the first look."""

    after_first_look = None

    def _step(self) -> None:
        super()._step()
        for role in self.roles:
            if role.process is not None:
                role.process.wait()  # it ends now: after this look, before the next
        if self.after_first_look is not None:
            self.after_first_look, hook = None, self.after_first_look
            hook(self)


def _fake_launcher(tmp_path, monkeypatch, exits: dict[str, tuple[int, str]],
                   **kwargs) -> tuple[_ExitsInTheWindow, io.StringIO]:
    monkeypatch.setattr("training.league.launcher.RESTART_DELAY_S", 0.0)
    out = io.StringIO()
    launcher = _ExitsInTheWindow(list(exits), tmp_path, out=out, refresh=0.01, **kwargs)
    for role in launcher.roles:
        code, line = exits[role.role]
        role.command = [sys.executable, "-c", EXIT.format(line=line, code=code)]
    return launcher, out


def test_a_role_that_ends_between_two_looks_is_processed(tmp_path, monkeypatch):
    launcher, out = _fake_launcher(tmp_path, monkeypatch, {
        "main_agent": (3, "ValueError: boom"), "main_exploiter": (0, "finished")},
        max_restarts=1)
    assert launcher.run() == 1  # before: 130, the crash neither restarted nor reported
    output = out.getvalue()
    agent, exploiter = launcher.roles
    assert (agent.state, agent.restarts, exploiter.state) == ("failed", 1, "done"), output
    assert "[launcher] main_agent: exited with code 3; restarting with resume.auto=true " \
           "(1/1); its last line: ValueError: boom" in output
    assert "[launcher] main_agent: exited with code 3; failed after 1 restart(s)" in output
    assert "[launcher] main_exploiter: done" in output
    assert (tmp_path / "main_agent" / "role.log").read_text().count("launcher: start") == 2
    assert (tmp_path / "launcher.lock").read_text().strip().isdecimal()  # it claimed the league


def test_a_crash_that_came_before_a_signal_is_processed_as_a_crash(tmp_path, monkeypatch):
    launcher, out = _fake_launcher(tmp_path, monkeypatch, {"main_agent": (3, "ValueError: x")})
    launcher.after_first_look = lambda it: it.signals.append(signal.SIGTERM)
    assert launcher.run() == 143
    output = out.getvalue()
    assert "[launcher] main_agent: exited with code 3; restarting" in output, output
    assert launcher.roles[0].state == "stopped"  # the shutdown cancels the restart
    assert (tmp_path / "main_agent" / "role.log").read_text().count("launcher: start") == 1


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "soon"])
def test_refresh_must_be_a_finite_positive_number(value, capsys):
    from training.league.launcher import main

    with pytest.raises(SystemExit) as exited:
        main([f"--refresh={value}"])
    assert exited.value.code == 2
    assert f"argument --refresh: {value!r} is invalid: expected a finite number of seconds " \
           "> 0" in capsys.readouterr().err
    if value != "soon":
        with pytest.raises(ValueError, match=r"refresh=.* is invalid: expected a finite"):
            Launcher(["main_agent"], refresh=float(value))


def test_grace_and_max_restarts_are_checked(capsys):
    from training.league.launcher import main

    for flag, value in (("--grace", "nan"), ("--grace", "-1"), ("--max-restarts", "-1"),
                        ("--max-restarts", "1.5")):
        with pytest.raises(SystemExit):
            main([f"{flag}={value}"])
        assert f"argument {flag}: {value!r} is invalid" in capsys.readouterr().err
    with pytest.raises(ValueError, match="max_restarts=True is invalid"):
        Launcher(["main_agent"], max_restarts=True)


def test_a_crashed_role_s_own_error_line_is_shown_not_hydra_s_advice(tmp_path):
    # A real role whose config Hydra accepts and the role refuses: Hydra reports the
    # error and ends with its advice to set HYDRA_FULL_ERROR, the line shown before.
    out = io.StringIO()
    launcher = Launcher(["main_agent"], tmp_path / "league", ["training.n_epochs=0",
                                                              "wandb.enabled=false"],
                        max_restarts=0, refresh=0.2, out=out)
    assert launcher.run() == 1
    output = out.getvalue()
    assert "[launcher] main_agent: exited with code 1; failed after 0 restart(s); its last " \
           "line: ValueError: n_epochs=0 is invalid: expected an integer >= 1" in output, output
    assert "HYDRA_FULL_ERROR" not in output
    assert "HYDRA_FULL_ERROR" in (tmp_path / "league" / "main_agent" / "role.log").read_text()
