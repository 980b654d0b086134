"""``benchmarks.training_throughput``'s profile split names code that exists: a part
whose file or function was renamed would read 0 % and say nothing."""

from __future__ import annotations

import ast
import site
from pathlib import Path

import pytest

from benchmarks.training_throughput import DUEL_PARTS, TEAM_PARTS, _cumulative

ROOTS = [Path(__file__).resolve().parents[2], *map(Path, site.getsitepackages())]


def defined_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


@pytest.mark.parametrize("part", [*DUEL_PARTS.items(), *TEAM_PARTS.items()],
                         ids=lambda part: part[0])
def test_each_part_names_a_file_and_function_that_exist(part) -> None:
    _, (suffix, function) = part
    files = [root / suffix for root in ROOTS if (root / suffix).is_file()]
    assert len(files) == 1, f"{suffix} names {len(files)} files"
    if function is not None:
        assert function in defined_functions(files[0])


def test_cumulative_counts_a_file_once_and_only_its_entry_points() -> None:
    # pstats entries: (file, line, name) -> (calls, primitive, tottime, cumtime, callers)
    stats = type("Stats", (), {})()
    stats.stats = {
        ("/x/training/mappo/update.py", 1, "update"): (1, 1, 0.1, 2.0, {("/x/t.py", 1, "f"): 0}),
        ("/x/training/mappo/update.py", 9, "helper"): (
            1, 1, 0.1, 1.5, {("/x/training/mappo/update.py", 1, "update"): 0}),
        ("/x/other.py", 1, "update"): (1, 1, 0.1, 7.0, {}),
    }
    assert _cumulative(stats, "training/mappo/update.py", "update") == 2.0
    assert _cumulative(stats, "training/mappo/update.py", None) == 2.0
