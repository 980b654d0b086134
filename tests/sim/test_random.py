"""Counter-based randomness: a battle's draws do not depend on its batch."""

from __future__ import annotations

import numpy as np

from envs.sim import random as rnd


def test_draws_depend_only_on_key_stream_counter_and_lane():
    keys = rnd.seed_keys(np.arange(10))
    batch = rnd.uniform(keys, rnd.STREAM_ROUT, np.arange(10), 3)
    for i in range(10):
        alone = rnd.uniform(keys[i:i + 1], rnd.STREAM_ROUT, np.array([i]), 3)
        assert np.array_equal(alone[0], batch[i])


def test_draws_are_uniform_and_streams_independent():
    keys = rnd.seed_keys(np.arange(20000))
    a = rnd.uniform(keys, rnd.STREAM_ROUT, 0, 1)[:, 0]
    b = rnd.uniform(keys, rnd.STREAM_SPAWN, 0, 1)[:, 0]
    assert 0 <= a.min() and a.max() < 1
    assert abs(a.mean() - 0.5) < 0.01 and abs(a.var() - 1 / 12) < 0.005
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.03


def test_episode_keys_differ_between_episodes_and_seeds():
    base = rnd.seed_keys(np.array([1, 2]))
    first = rnd.episode_keys(base, np.array([0, 0]))
    second = rnd.episode_keys(base, np.array([1, 1]))
    assert len({*first.tolist(), *second.tolist()}) == 4
