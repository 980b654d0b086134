"""A run killed (SIGKILL) at its file events resumes from the newest complete checkpoint,
leaves no temporary file behind and loses no rating. ``benchmarks/reliability.py`` runs
20 kills per trainer; here three, spread over a run (the first event, one in the middle,
one late)."""

from __future__ import annotations

import pytest

from tests.reliability.kills import trials


@pytest.mark.parametrize("algo", ["ppo", "mappo"])
def test_killed_runs_resume_from_their_newest_checkpoint(algo, tmp_path):
    results = trials(algo, tmp_path, n=3)
    assert len(results) == 3 and all(r.killed for r in results)
    failures = [r for r in results if not r.passed]
    assert not failures, failures
    assert any(r.newest_on_disk > 0 for r in results)  # some kill came after a checkpoint
