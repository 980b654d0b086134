"""Small battles, a small policy and comparisons shared by the distributed tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

FAST = dict(n_blue=2, n_red=2, map_width=200.0, map_height=200.0, max_steps=150)
"""Battles that are short, and close enough to be decided now and then."""


def small_policy(seed: int = 0, n_agents: int = 2):
    """A small MAPPO policy with seeded weights (a few thousand parameters)."""
    from envs.battles.multi_observation import CRITIC_STATE_DIM, OBS_DIM
    from models.mappo_policy import MAPPOPolicy

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=n_agents,
                           actor_hidden_sizes=(32,), critic_hidden_sizes=(16,))


def same(a: Any, b: Any) -> bool:
    """Deep equality, bit for bit, of episode dicts holding NumPy arrays."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all()))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b, strict=True)))
    return type(a) is type(b) and a == b


def played(result) -> tuple:
    """What a RolloutResult says about its battle (not its timing)."""
    return (result.worker_id, result.seed, result.episode_steps, result.total_reward,
            result.agent_rewards, result.blue_won, result.metadata)
