"""The compiled steps (the bare engine, duels and team battles) give the same battles on
one thread and on many, and their thread count is a checked setting."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from envs.battles.battalion_batch import BattalionBatch
from envs.sim import engine, kernels
from envs.sim.config import BattleConfig
from training.mappo.battles import make_team_battles

N_BATTLES = kernels.PARALLEL_MIN_BATTLES + 37
"""Above the parallel threshold, and three chunks on one thread (the last one short)."""


def test_the_parallel_kernel_steps_battles_exactly_as_the_serial_one(monkeypatch):
    battles = make_team_battles(N_BATTLES, 2, 3)
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


def _played(make, orders, monkeypatch, parallel: bool, steps: int = 40) -> list:
    """What a fresh batch gives over ``steps`` steps of ``orders``, on every thread or (the
    threshold raised past the batch) on one."""
    if not parallel:
        monkeypatch.setattr(kernels, "PARALLEL_MIN_BATTLES", 10 * N_BATTLES)
    battles = make()
    battles.reset(np.arange(N_BATTLES), list(range(N_BATTLES)), np.zeros(N_BATTLES, np.int64))
    results = [battles.step(orders) for _ in range(steps)]
    monkeypatch.undo()
    return results


def _bits(value) -> bytes:
    return np.ascontiguousarray(value).tobytes()


def test_duels_play_the_same_on_one_thread_and_on_many(monkeypatch):
    orders = np.random.default_rng(1).uniform(-1, 1, (N_BATTLES, 3)).astype(np.float32)
    make = lambda: BattalionBatch(N_BATTLES, curriculum_level=5, reward_weights=None)  # noqa: E731
    serial, parallel = (_played(make, orders, monkeypatch, p) for p in (False, True))
    for a, b in zip(serial, parallel, strict=True):
        for field in ("observation", "terminated", "truncated", "blue_damage_dealt",
                      "red_damage_dealt", "blue_routed", "red_destroyed", "step_count"):
            assert _bits(getattr(a, field)) == _bits(getattr(b, field)), field
        assert _bits(a.reward.total) == _bits(b.reward.total)
    assert any(s.blue_damage_dealt.any() for s in serial)  # the duels fought


def test_team_battles_play_the_same_on_one_thread_and_on_many(monkeypatch):
    orders = np.random.default_rng(2).uniform(-1, 1, (N_BATTLES, 5, 3)).astype(np.float32)
    orders[..., 2] = np.abs(orders[..., 2])
    make = lambda: make_team_battles(N_BATTLES, 2, 3)  # noqa: E731
    serial, parallel = (_played(make, orders, monkeypatch, p) for p in (False, True))
    for a, b in zip(serial, parallel, strict=True):
        for field in ("observation", "global_state", "reward", "acted", "terminated",
                      "truncated", "battle_over", "winner", "damage_dealt"):
            assert _bits(getattr(a, field)) == _bits(getattr(b, field)), field
        assert _bits(a.team_reward.total) == _bits(b.team_reward.total)
    assert any(s.damage_dealt.any() for s in serial)  # the battles fought


def test_the_thread_count_is_checked():
    with pytest.raises(ValueError, match="n=0 is invalid"):
        kernels.set_num_threads(0)
    with pytest.raises(ValueError, match="is invalid"):
        kernels.set_num_threads(numba.config.NUMBA_NUM_THREADS + 1)
    kernels.set_num_threads(1)
    assert numba.get_num_threads() == 1
    kernels.set_num_threads(numba.config.NUMBA_NUM_THREADS)
