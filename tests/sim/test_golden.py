"""The engine reproduces the golden battles recorded from the NumPy engine
(``tests/sim/golden.py``): 1,400 whole battles through the duel and team batches."""

from __future__ import annotations

import numpy as np

from tests.sim.golden import GOLDEN_FILE, compare, play_all

TOLERANCE = 1e-4
"""Strengths, morale and Blue's summed reward may differ by this much: the compiled
engine's float32 ``cos``, ``sin`` and power round differently from NumPy's in the last
bit now and then. Winners, end steps and out-flags may not differ at all."""
POSITION_TOLERANCE = 1e-3
"""Metres: those last bits, carried over up to 500 steps of marching."""


def test_the_golden_battles_are_reproduced():
    with np.load(GOLDEN_FILE) as recorded:
        recorded = dict(recorded)
    assert len(recorded["winner"]) >= 1000
    assert np.count_nonzero(recorded["winner"] >= 0) >= 400  # decided battles, not only draws
    gaps = compare(recorded, play_all())
    exact = ("winner", "steps", "routed", "destroyed", "n_units")
    assert {name: gaps[name] for name in exact} == dict.fromkeys(exact, 0.0)
    close = ("strength", "morale", "blue_reward")
    assert all(gaps[name] <= TOLERANCE for name in close), gaps
    assert gaps["x"] <= POSITION_TOLERANCE and gaps["y"] <= POSITION_TOLERANCE, gaps
