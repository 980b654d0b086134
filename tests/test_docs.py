"""The documentation stays in step with the code."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_model_constant_is_documented_in_simulation_md():
    source = (ROOT / "envs/sim/constants.py").read_text()
    names = [node.targets[0].id for node in ast.parse(source).body
             if isinstance(node, ast.Assign)]
    doc = (ROOT / "docs/simulation.md").read_text()
    missing = [name for name in names if f"`{name}`" not in doc]
    assert not missing, f"constants missing from docs/simulation.md: {missing}"


def test_simulation_md_states_the_kernels_chunking_and_threading():
    from envs.sim import kernels

    doc = " ".join((ROOT / "docs/simulation.md").read_text().split())
    assert f"chunks of {kernels.CHUNK} battles" in doc
    assert f"Batches of {kernels.PARALLEL_MIN_BATTLES} battles or more" in doc
