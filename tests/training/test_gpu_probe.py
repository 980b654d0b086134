"""benchmarks.gpu_probe: one command measures every row of its table, each in its own
process; ``--tiny`` runs them all on a CPU-only machine, the CUDA rows answering "no GPU",
and ``--json`` keeps the results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.gpu_probe import (
    GROUPS,
    NO_GPU,
    main,
    parallel_efficiency,
    plan,
    thread_counts,
)

ROOT = Path(__file__).resolve().parents[2]


def test_thread_counts_are_capped_at_the_usable_cores():
    assert thread_counts((1, 2, 4, 8, 16), 16) == [1, 2, 4, 8, 16]
    assert thread_counts((1, 2, 4, 8, 16), 12) == [1, 2, 4, 8, 12]
    assert thread_counts((1, 2, 4, 8, 16), 2) == [1, 2]
    assert thread_counts((2, 16), 1) == [1]


def test_the_plan_has_every_row_of_the_issue_on_a_16_core_machine():
    rows = {row.id: row for row in plan(GROUPS, 16)}
    assert list(rows) == ["mappo-cpu-128", "mappo-cpu-1024", "mappo-cuda-128",
                          "mappo-cuda-1024", "mappo-cuda-4096", "core-1", "core-2", "core-4",
                          "core-8", "core-16", "duel-2", "duel-16", "wfm1-cpu", "wfm1-cuda"]
    assert (rows["mappo-cpu-128"].torch_threads, rows["mappo-cpu-128"].numba_threads) == (1, 1)
    assert rows["mappo-cpu-1024"].threads == "torch 16, Numba 16"
    assert rows["core-8"].battles == 8192 and rows["duel-16"].battles == 16_384
    assert rows["wfm1-cuda"].unit == "battle-steps/s"
    assert [row.id for row in plan(["duel"], 2)] == ["duel-2"]


def test_parallel_efficiency_is_measured_from_two_threads_to_the_most():
    most, value = parallel_efficiency({1: 100.0, 2: 180.0, 4: 300.0, 16: 720.0})
    assert most == 16 and value == pytest.approx((720 / 180) / 8)
    assert parallel_efficiency({1: 100.0, 2: 180.0}) is None


@pytest.mark.parametrize("argv, message", [
    (["--rows", "gpu"], "argument --rows: invalid choice: 'gpu'"),
    (["--seconds", "0"], "argument --seconds: '0' is invalid: expected a positive number"),
    (["--deadline", "soon"], "argument --deadline: 'soon' is invalid"),
    (["--wait-policy", "spin"], "argument --wait-policy: invalid choice: 'spin'"),
    (["--json", "no/such/folder/r.json"], "--json 'no/such/folder/r.json' is invalid"),
])
def test_bad_command_lines_are_refused_naming_the_option(argv, message, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_the_tiny_probe_runs_every_row_and_writes_its_results(tmp_path):
    path = tmp_path / "probe.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu_probe", "--tiny", "--json",
                           str(path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(path.read_text())
    expected = plan(GROUPS, report["machine"]["cores"])
    assert [row["id"] for row in report["rows"]] == [row.id for row in expected]
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert len(table) == len(expected)
    for row, line in zip(report["rows"], table, strict=True):
        assert line.startswith(f"| {row['what']} | {row['battles']:,} | {row['device']} |")
        if row["device"] == "cpu":
            assert row["error"] is None, row
            assert row["rate"] > 0 and row["seconds"] > 0 and row["steps"] > 0, row
        elif not torch.cuda.is_available():
            assert row["note"] == NO_GPU and row["rate"] is None, row
            assert NO_GPU in line
    assert "CPU: " in done.stdout and "torch " in done.stdout and "numba " in done.stdout
