"""SIGKILL a training run at its file events, resume it, and check that nothing was lost.

A file event is a moment a run touches a file that must not be lost: just before
a finished temporary file is renamed over its target (a checkpoint, a snapshot,
the Elo registry, the best model), just after that rename, and just after a line
is appended to the manifest. The hook replaces ``storage.files.os`` with a proxy
that counts these events and kills the process (SIGKILL, no cleanup) at the
chosen one.

A trial: run a small PPO (with self-play, Elo and a manifest) or MAPPO training
in a fresh process, killed at event ``k``; then, in another process, resume it as
the command line's ``resume.auto=true`` would and let it finish. It passes if

- the resume started from the newest complete checkpoint on disk at the kill
  (PPO: the highest ``_N_steps.zip``; MAPPO: ``mappo_policy.pt``'s step count),
- no temporary file is left in the run's folders after the resume,
- every self-play snapshot in the pool has a rating in the Elo registry (PPO).

Command line::

    python -m tests.reliability.kills count ppo DIR    # list the events of a run
    python -m tests.reliability.kills child ppo DIR --kill-at K
    python -m tests.reliability.kills trials ppo DIR --n 20
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.forked import run_module

ROOT = Path(__file__).resolve().parents[2]


class _KillingOs:
    """``os`` for storage.files, counting file events and dying at the chosen one."""

    def __init__(self, real, kill_at: int | None, log: list) -> None:
        self._real, self._kill_at, self._log = real, kill_at, log

    def __getattr__(self, name):
        return getattr(self._real, name)

    def _event(self, kind: str, target) -> None:
        self._log.append((kind, str(target)))
        if len(self._log) == self._kill_at:
            self._real.kill(self._real.getpid(), signal.SIGKILL)

    def replace(self, source, target):
        self._event("before_rename", target)
        self._real.replace(source, target)
        self._event("after_rename", target)

    def write(self, fd, data):
        written = self._real.write(fd, data)
        if data.endswith(b"\n"):  # append_line's one write of a whole line
            self._event("after_append", fd)
        return written


def ppo_config(folder: Path):
    from training.ppo.config import TrainingConfig

    return TrainingConfig(
        total_timesteps=2048, n_envs=4, n_steps=64, batch_size=128, n_epochs=1,
        checkpoint_freq=256, eval_freq=512, n_eval_episodes=2, max_steps=60,
        warm_start_doctrine=None, enable_wandb=False, progress_bar=False, verbose=0,
        enable_self_play=True, self_play_snapshot_freq=512, self_play_eval_freq=1024,
        self_play_n_eval_episodes=2, checkpoint_dir=str(folder / "ck"),
        manifest_path=str(folder / "ck" / "manifest.jsonl"), log_dir=str(folder / "logs"),
        self_play_pool_dir=str(folder / "ck" / "pool"),
        elo_registry_path=str(folder / "ck" / "elo.json"), keep_periodic=0)


def mappo_config(folder: Path):
    from training.mappo.config import MAPPOConfig

    return MAPPOConfig(
        total_timesteps=8 * 16 * 6, n_envs=8, n_steps=16, n_epochs=1, max_steps=60,
        checkpoint_freq=128, eval_freq=256, n_eval_episodes=2, warm_start_doctrine=None,
        enable_wandb=False, progress_bar=False, verbose=0, checkpoint_dir=str(folder / "ck"),
        log_dir=str(folder / "logs"), elo_registry_path=str(folder / "ck" / "team_elo.json"),
        enable_self_play=True, self_play_snapshot_freq=256, self_play_eval_freq=256,
        self_play_n_eval_episodes=2, self_play_exploitability_episodes=1,
        self_play_pool_dir=str(folder / "ck" / "pool"))


def train_once(algo: str, folder: Path, resume: bool) -> int:
    """Train (or resume, as ``resume.auto=true`` does); the step the run started from."""
    import torch

    torch.set_num_threads(1)
    if algo == "ppo":
        from training.train import resolve_resume, train

        config = ppo_config(folder)
        path = resolve_resume({"auto": True}, config) if resume else None
        start = 0 if path is None else int(path.name.split("_")[-2])
        train(config, resume=path)
        return start
    from training.train_mappo import load_checkpoint, resolve_resume, train_mappo

    config = mappo_config(folder)
    path = resolve_resume({"auto": True}, config) if resume else None
    start = 0 if path is None else int(load_checkpoint(path).counters["total_steps"])
    train_mappo(config, resume=path)
    return start


def child(algo: str, folder: Path, kill_at: int | None, events_out: Path | None) -> None:
    import storage.files

    log: list = []
    storage.files.os = _KillingOs(os, kill_at, log)
    train_once(algo, folder, resume=False)
    if events_out is not None:
        events_out.write_text(json.dumps(log))


def newest_complete(algo: str, folder: Path) -> int:
    """The step of the newest complete checkpoint on disk (0 if none)."""
    ck = folder / "ck"
    if algo == "ppo":
        from training.train import periodic_checkpoints

        prefix = "ppo_battalion_s42_c5"
        found = periodic_checkpoints(ck, prefix)
        return found[-1][1] if found else 0
    from training.train_mappo import CHECKPOINT_NAME, load_checkpoint

    path = ck / CHECKPOINT_NAME
    return int(load_checkpoint(path).counters["total_steps"]) if path.exists() else 0


def temporaries(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob(".*.tmp"))


def unrated_snapshots(algo: str, folder: Path) -> list[str]:
    if algo != "ppo":
        return []
    from training.elo import EloRegistry

    rated = EloRegistry(folder / "ck" / "elo.json").all_ratings()
    return sorted(p.stem for p in (folder / "ck" / "pool").glob("snapshot_v*.zip")
                  if p.stem not in rated)


def _python(log: Path, *args: str, timeout: float = 600) -> int:
    """``python -m tests.reliability.kills *args`` as a new process (forked from a server
    that has the imports: :mod:`tests.forked`), its output appended to ``log``; its exit
    code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "offline"}
    return run_module("tests.reliability.kills", list(args), cwd=ROOT, log=log, env=env,
                      timeout=timeout)


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-3000:]


def count_events(algo: str, folder: Path) -> list[tuple[str, str]]:
    """The file events of one whole run, in order."""
    events, log = folder / "events.json", folder / "count.log"
    folder.mkdir(parents=True, exist_ok=True)
    if _python(log, "child", algo, str(folder / "run"), "--events-out", str(events)) != 0:
        raise RuntimeError(_tail(log))
    return [tuple(e) for e in json.loads(events.read_text())]


@dataclass
class Trial:
    """One kill and resume."""

    algo: str
    kill_at: int
    event: str
    killed: bool
    newest_on_disk: int
    resumed_from: int
    temporaries_left: list
    unrated: list

    @property
    def passed(self) -> bool:
        return (self.killed and self.resumed_from == self.newest_on_disk
                and not self.temporaries_left and not self.unrated)


def trial(algo: str, folder: Path, kill_at: int, event: str) -> Trial:
    run = folder / "run"
    folder.mkdir(parents=True, exist_ok=True)
    was_killed = _python(folder / "killed.log", "child", algo, str(run), "--kill-at",
                         str(kill_at)) == -signal.SIGKILL
    newest = newest_complete(algo, run)
    start_file, log = folder / "resumed_from.txt", folder / "resumed.log"
    if _python(log, "resume", algo, str(run), "--start-out", str(start_file)) != 0:
        raise RuntimeError(f"resume after a kill at event {kill_at} ({event}) failed:\n"
                           f"{_tail(log)}")
    start = int(start_file.read_text())
    return Trial(algo, kill_at, event, was_killed, newest, start, temporaries(run),
                 unrated_snapshots(algo, run))


def spread(events: list, n: int) -> list[int]:
    """``n`` event numbers (1-based) spread evenly over the run, from its start to its
    end, the i-th the nearest event of the i-th kind (kinds ordered by when they happen
    on average, and cycled), so that ``n`` at least the number of kinds covers them all
    without trading the late kill for one."""
    if n >= len(events):
        return list(range(1, len(events) + 1))
    where: dict = {}
    for j, (kind, _) in enumerate(events):
        where.setdefault(kind, []).append(j)
    kinds = sorted(where, key=lambda kind: sum(where[kind]) / len(where[kind]))
    chosen: set[int] = set()
    for i in range(n):
        target = i * (len(events) - 1) / max(n - 1, 1)
        kind = kinds[i % len(kinds)]
        free = [j for j in range(len(events)) if j + 1 not in chosen]
        candidates = [j for j in free if events[j][0] == kind] or free
        chosen.add(1 + min(candidates, key=lambda j: abs(j - target)))
    return sorted(chosen)


def trials(algo: str, folder: Path, n: int) -> list[Trial]:
    events = count_events(algo, folder / "count")
    results = []
    for k in spread(events, n):
        kind, target = events[k - 1]
        results.append(trial(algo, folder / f"kill{k:04d}", k,
                             f"{kind} {Path(target).name if '/' in target else 'manifest'}"))
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("child")
    c.add_argument("algo", choices=["ppo", "mappo"])
    c.add_argument("folder", type=Path)
    c.add_argument("--kill-at", type=int, default=None)
    c.add_argument("--events-out", type=Path, default=None)
    r = sub.add_parser("resume")
    r.add_argument("algo", choices=["ppo", "mappo"])
    r.add_argument("folder", type=Path)
    r.add_argument("--start-out", type=Path, default=None,
                   help="also write the step it resumed from here")
    t = sub.add_parser("trials")
    t.add_argument("algo", choices=["ppo", "mappo"])
    t.add_argument("folder", type=Path)
    t.add_argument("--n", type=int, default=20)
    args = parser.parse_args(argv)
    if args.command == "child":
        child(args.algo, args.folder, args.kill_at, args.events_out)
    elif args.command == "resume":
        start = train_once(args.algo, args.folder, resume=True)
        print(start)
        if args.start_out is not None:
            args.start_out.write_text(str(start))
    else:
        for result in trials(args.algo, args.folder, args.n):
            print(json.dumps({**asdict(result), "passed": result.passed}), flush=True)


if __name__ == "__main__":
    main()
