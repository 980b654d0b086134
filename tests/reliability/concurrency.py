"""Several processes on the same shared files: what each wrote must all be there.

Used by ``tests/reliability/test_concurrency.py`` (small counts) and
``benchmarks/reliability.py`` (the issue's counts). Each scenario starts
``n_processes`` real processes that work on one file at the same moment.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from pathlib import Path

AGENT = "main_agent"


def _elo_worker(path: str, n_updates: int, barrier) -> None:
    from training.elo import EloRegistry

    barrier.wait()
    for k in range(n_updates):
        registry = EloRegistry(path)
        registry.update(AGENT, "scripted_l5", float(k % 2))
        registry.save()


def _manifest_worker(path: str, n_artifacts: int, barrier) -> None:
    from training.artifacts import CheckpointManifest

    manifest = CheckpointManifest(path)
    barrier.wait()
    for k in range(n_artifacts):
        manifest.register(f"ck/model_{k}_steps.zip", artifact_type="periodic", seed=0,
                          curriculum_level=5, run_id=None, config_hash="h", step=k)


def _match_worker(path: str, n_matches: int, barrier) -> None:
    from training.league.match_database import MatchDatabase

    db = MatchDatabase(path)
    barrier.wait()
    for k in range(n_matches):  # every process records the same match ids
        db.record("a", "b", 1.0, match_id=f"match-{k}")


@dataclass
class Counts:
    """What a scenario left in its file, and what it should have left."""

    found: int
    expected: int


def _run(worker, path: Path, n: int, n_processes: int) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(n_processes)
    processes = [context.Process(target=worker, args=(str(path), n, barrier))
                 for _ in range(n_processes)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=600)
        if process.exitcode != 0:
            raise RuntimeError(f"{worker.__name__} exited with {process.exitcode}")


def elo_updates(folder: Path, n_updates: int, n_processes: int = 4) -> Counts:
    """Processes rating the same agent: the registry must count every game."""
    from training.elo import EloRegistry

    path = folder / "elo.json"
    _run(_elo_worker, path, n_updates, n_processes)
    return Counts(EloRegistry(path).get_game_count(AGENT), n_updates * n_processes)


def manifest_registrations(folder: Path, n_artifacts: int, n_processes: int = 4) -> Counts:
    """Processes registering the same artifacts: one row each."""
    from training.artifacts import CheckpointManifest

    path = folder / "manifest.jsonl"
    _run(_manifest_worker, path, n_artifacts, n_processes)
    return Counts(len(CheckpointManifest(path).rows()), n_artifacts)


def duplicate_matches(folder: Path, n_matches: int, n_processes: int = 4) -> Counts:
    """Processes recording the same match ids: each match once, in memory and on reload."""
    from training.league.match_database import MatchDatabase

    path = folder / "matches.jsonl"
    _run(_match_worker, path, n_matches, n_processes)
    lines = sum(1 for line in path.read_text().splitlines() if line.strip())
    return Counts(max(len(MatchDatabase(path)), lines), n_matches)
