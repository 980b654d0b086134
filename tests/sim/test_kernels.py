"""The compiled step gives the same battles on one thread and on many, and its thread
count is a checked setting."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from envs.sim import engine, kernels
from envs.sim.config import BattleConfig
from training.mappo.battles import make_team_battles


def test_the_parallel_kernel_steps_battles_exactly_as_the_serial_one(monkeypatch):
    battles = make_team_battles(kernels.PARALLEL_MIN_BATTLES + 37, 2, 3)
    n = battles.n_battles
    battles.reset(np.arange(n), list(range(n)), np.zeros(n, np.int64))
    state, config = battles.state, BattleConfig()
    orders = np.random.default_rng(0).uniform(-1, 1, (n, 5, 3)).astype(np.float32)
    orders[..., 2] = np.abs(orders[..., 2])
    results = {}
    for name in ("step_kernel", "step_kernel_parallel"):
        chosen = getattr(kernels, name)
        monkeypatch.setattr(engine, "_step_kernel", lambda batch, chosen=chosen: chosen)
        current, steps = state, []
        for _ in range(60):
            current, events = engine.step(current, orders, config)
            steps.append((current, events))
        results[name] = steps
    for (a, ea), (b, eb) in zip(results["step_kernel"], results["step_kernel_parallel"],
                                strict=True):
        for field in ("x", "y", "theta", "strength", "morale", "readiness", "routed",
                      "destroyed"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field
        for field in ("volley", "target", "damage_dealt", "damage_taken"):
            assert np.array_equal(getattr(ea, field), getattr(eb, field)), field
        assert np.array_equal(ea.geometry.los, eb.geometry.los)
    assert results["step_kernel"][-1][1].damage_dealt.any()  # the battles fought


def test_the_thread_count_is_checked():
    with pytest.raises(ValueError, match="n=0 is invalid"):
        kernels.set_num_threads(0)
    with pytest.raises(ValueError, match="is invalid"):
        kernels.set_num_threads(numba.config.NUMBA_NUM_THREADS + 1)
    kernels.set_num_threads(1)
    assert numba.get_num_threads() == 1
    kernels.set_num_threads(numba.config.NUMBA_NUM_THREADS)
