"""Each league role, killed (SIGKILL) mid-run and continued with ``resume.auto=true``,
loses nothing: its snapshots (records and files), the match log, the Elo ratings, its
evaluations, its counters and reset state all survive, and no snapshot version is used
twice.

The role runs its own command line in a child process with the kill hook of
``tests/reliability/kills.py``: the child dies at a file event (just before or after a
rename, just after an appended line), chosen by a seeded draw among the events that
follow its second checkpoint, so each role is killed at a reproducible moment with
snapshots, evaluations (and, for the exploiters, resets) behind it.

Run as a module, this file is that child::

    python -m tests.league.test_league_kills AFTER AT KILL_JSON ROLE [CLI args...]
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sys
from pathlib import Path

import pytest

from tests.forked import run_module
from tests.reliability.kills import _KillingOs
from training.league.config import ROLE_MODULES

ROOT = Path(__file__).resolve().parents[2]
ROLES = tuple(ROLE_MODULES)
ROLLOUT = 512
ROLLOUTS = 5
TINY = [f"training.total_timesteps={ROLLOUTS * ROLLOUT}", f"training.rollout_steps={ROLLOUT}",
        "env.num_envs=8", "env.max_steps=100", "training.n_epochs=1",
        "training.warm_start_doctrine=null", f"league.snapshot_freq={ROLLOUT}",
        f"league.eval_freq={ROLLOUT}", f"eval.checkpoint_freq={ROLLOUT}",
        "league.n_eval_episodes=2", "league.opponents_per_rollout=2", "wandb.enabled=false",
        "logging.progress_bar=false"]
"""Five rollouts of 512 env-steps, a snapshot, an evaluation and a checkpoint each: the
three after the second checkpoint hold more file events than :data:`MAX_OFFSET` (two
rollouts' worth), so the kill always comes before the end; the resumed run does the rest."""
RESETS = ["league.reset_win_rate_threshold=0.99", "league.reset_window_size=1"]
"""An exploiter resets after every evaluation it does not win 99 % of."""
AFTER_CHECKPOINTS = 2
"""The kill comes after the child's second checkpoint..."""
MAX_OFFSET = 40
"""... at one of the next file events (about two rollouts' worth)."""


# --- the child --------------------------------------------------------------------------------

class _KillAfterCheckpoints(_KillingOs):
    """``os`` for storage.files: dies (SIGKILL) at a file event after the ``after``-th
    checkpoint, first writing which event that was to ``report``: ``at`` is either
    ``"N"``, the N-th event after it, or ``"KIND:NAME"``, the first such event after it
    (``after_rename:pool.json``)."""

    def __init__(self, real, after: int, at: str, report: str) -> None:
        super().__init__(real, None, [])
        self._after, self._report = after, report
        self._offset = int(at) if at.isdigit() else None
        self._match = None if at.isdigit() else tuple(at.split(":", 1))
        self._checkpoints, self._armed_at = 0, None

    def _event(self, kind: str, target) -> None:
        if isinstance(target, int):  # an appended line: name the file
            try:
                target = self._real.readlink(f"/proc/self/fd/{target}")
            except OSError:
                target = f"fd {target}"
        self._log.append((kind, str(target)))
        if self._armed_at is None and kind == "after_rename" and \
                str(target).endswith("mappo_policy.pt"):
            self._checkpoints += 1
            if self._checkpoints == self._after:
                self._armed_at = len(self._log)
        if self._armed_at is None or len(self._log) == self._armed_at:
            return
        due = (len(self._log) - self._armed_at == self._offset if self._offset is not None
               else (kind, Path(str(target)).name) == self._match)
        if due:
            Path(self._report).write_text(json.dumps({"kind": kind, "target": str(target)}))
            self._real.kill(self._real.getpid(), signal.SIGKILL)


def _child(argv: list[str]) -> None:
    import storage.files

    after, at, report, role, *cli = argv
    storage.files.os = _KillAfterCheckpoints(os, int(after), at, report)
    from training.league.launch import run_role_cli

    run_role_cli(role, cli)


# --- the parent -------------------------------------------------------------------------------

def _cli(role: str, league: Path) -> list[str]:
    from training.league.config import CONFIG_FILES, league_dir_overrides

    config_file = CONFIG_FILES[role]
    return ["--config-path", str(config_file.path.parent), "--config-name", role,
            "resume.auto=true", f"hydra.run.dir={league / role / 'hydra'}",
            *league_dir_overrides(role, league), *TINY, *(RESETS if role != "main_agent" else [])]


def _run(module: str, args: list[str], log: Path, timeout: float = 120) -> int:
    """``python -m module *args`` as a new process (forked from a server that has the
    imports: :mod:`tests.forked`), its output appended to ``log``; its exit code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "offline"}
    return run_module(module, args, cwd=log.parent, log=log, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def seeded_league(tmp_path_factory):
    """A league folder whose main-agent pool holds its initial snapshot (rated), as the
    main agent leaves it when it starts: the exploiters' targets."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from training.league.config import CONFIG_FILES, league_dir_overrides
    from training.league.launch import role_class

    folder = tmp_path_factory.mktemp("seed") / "league"
    config_file = CONFIG_FILES["main_agent"]
    config_file.register()
    with initialize_config_dir(config_dir=str(config_file.path.parent), version_base=None):
        nested = OmegaConf.to_container(compose(
            "main_agent", overrides=[*league_dir_overrides("main_agent", folder), *TINY]))
    role_class("main_agent").from_config(config_file.settings[0].from_nested(nested))
    return folder


def _counts(league: Path, role: str) -> dict:
    """What the role has on disk: its pool, the league's matches and ratings, its
    evaluations, its checkpoint."""
    from training.league import AgentPool, MatchDatabase
    from training.mappo.checkpoints import load_checkpoint

    folder = league / role
    checkpoint = load_checkpoint(folder / "mappo_policy.pt")
    own = [r for r in AgentPool(folder / "pool.json").list()
           if r.metadata["parent_agent_id"] == f"{role}_001"]
    return {"records": [r.agent_id for r in own], "versions": [r.version for r in own],
            "files": sorted(p.name for p in (folder / "snapshots").glob("*.pt")),
            "matches": len(MatchDatabase(league / "matches.jsonl").results),
            "agents_in_matches": sorted({r.agent_id for r in
                                         MatchDatabase(league / "matches.jsonl").results}),
            "ratings": sorted(json.loads((league / "elo.json").read_text())["ratings"]),
            "history": len(_json_lines(folder / "history.jsonl")),
            "step": checkpoint.counters["total_steps"],
            "role_state": checkpoint.extras["driver"]["league_role"],
            "numpy_rng": checkpoint.rng["numpy"]}


def _json_lines(path: Path) -> list[dict]:
    """Every line of a JSONL file, each of which must be whole JSON."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]  # a torn line raises here


KILLS = [
    *(pytest.param(role, str(random.Random(f"kill {role}").randint(1, MAX_OFFSET)), id=role)
      for role in ("main_agent", "league_exploiter")),
    pytest.param("main_exploiter", "after_rename:pool.json", id="main_exploiter-snapshot-unrated"),
]
"""(role, kill moment): the main agent and the league exploiter at a seeded draw among
the events after their second checkpoint; the main exploiter (the league exploiter's
class, ExploiterRole, with another matchmaking) at the moment between a snapshot's pool
entry and its Elo rating (the resumed role rates it)."""


@pytest.mark.parametrize("role, at", KILLS)
def test_a_role_killed_mid_run_resumes_and_loses_nothing(role, at, seeded_league, tmp_path):
    from models.mappo_files import load_policy
    from training.league import AgentPool
    from training.mappo.checkpoints import load_checkpoint

    league = tmp_path / "league"
    if role == "main_agent":
        league.mkdir()
    else:
        shutil.copytree(seeded_league, league)
    log = tmp_path / "role.log"
    report = tmp_path / "kill.json"
    code = _run("tests.league.test_league_kills", [str(AFTER_CHECKPOINTS), at, str(report),
                                                   role, *_cli(role, league)], log)
    assert code == -signal.SIGKILL, log.read_text()[-3000:]
    killed_at = json.loads(report.read_text())
    before = _counts(league, role)
    assert before["step"] >= AFTER_CHECKPOINTS * ROLLOUT
    assert len(before["records"]) >= 3  # the initial weights and two snapshots at least
    if role != "main_agent":
        assert before["role_state"]["reset_count"] > 0, "no reset before the kill"

    resumed_log = tmp_path / "resumed.log"
    code = _run(f"training.league.{ROLE_MODULES[role]}", _cli(role, league), resumed_log)
    assert code == 0, resumed_log.read_text()[-3000:]
    after = _counts(league, role)
    final = load_checkpoint(league / role / "mappo_policy_final.pt")
    context = f"killed at {killed_at} (moment {at!r} after checkpoint {AFTER_CHECKPOINTS})"

    # It continued from the checkpoint on disk at the kill, and finished.
    resumed = re.search(r"resuming \S+ at step (\d+)", resumed_log.read_text())
    assert resumed and int(resumed.group(1)) == before["step"], context
    assert final.counters["total_steps"] == ROLLOUTS * ROLLOUT
    status = json.loads((league / role / "status.json").read_text())
    assert status["state"] == "done" and status["step"] == ROLLOUTS * ROLLOUT
    # Nothing lost: every count at least what it was.
    assert set(before["records"]) <= set(after["records"]), context
    assert set(before["files"]) <= set(after["files"]), context
    assert after["matches"] >= before["matches"] and after["history"] >= before["history"]
    assert set(before["agents_in_matches"]) <= set(after["agents_in_matches"])
    assert set(before["ratings"]) <= set(after["ratings"]), context
    # No version used twice; every record's file is there and loads; every one is rated.
    assert after["versions"] == sorted(set(after["versions"])), context
    manifest = json.loads((league / role / "pool.json").read_text())["agents"]
    assert len({a["agent_id"] for a in manifest}) == len(manifest)
    pool = AgentPool(league / role / "pool.json")
    ratings = set(after["ratings"])
    for record in pool.list():
        load_policy(pool.resolve_snapshot(record))
        assert record.agent_id in ratings, f"{record.agent_id} unrated; {context}"
    # The role's counters and reset state went on from the checkpoint's.
    state = final.extras["driver"]["league_role"]
    assert state["version"] >= max(before["versions"]) >= before["role_state"]["version"]
    assert state["reset_count"] >= before["role_state"]["reset_count"]
    if role != "main_agent":
        assert set(state["reset_rule"]) == set(before["role_state"]["reset_rule"])
    assert before["numpy_rng"]["bit_generator"] == "PCG64"
    assert final.rng["numpy"]["state"] != before["numpy_rng"]["state"]
    # No torn line, no temporary left (pool.tmp is the manifest's last good copy).
    for path in (league / "matches.jsonl", league / role / "history.jsonl"):
        _json_lines(path)
    assert {p.name for p in league.rglob("*.tmp*")} <= {"pool.tmp"}, context


if __name__ == "__main__":
    _child(sys.argv[1:])
