"""What both warm starts share: the doctrines a run can imitate, and returns discounted
within the episodes of a recording."""

from __future__ import annotations

import math

import numpy as np

from envs.doctrine import DisciplinedCommander

DOCTRINES = ("disciplined",)



def make_doctrine(name: str, map_width: float, map_height: float):
    """The hand-written commander called ``name`` for a map of the given size."""
    if name == "disciplined":
        return DisciplinedCommander(map_diagonal=math.hypot(map_width, map_height))
    raise ValueError(f"doctrine={name!r} is invalid: expected one of {', '.join(DOCTRINES)}")


def discounted_returns(rewards: np.ndarray, dones: np.ndarray,
                       gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Returns discounted within episodes, over the first (time) axis of (T, ...) arrays.

    Returns:
        ``(returns, known)``: a step's return is known once an episode end follows
        it in the recording; the others are cut short and should not be used.
    """
    returns = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[1:], np.float32)
    seen_end = np.zeros(rewards.shape[1:], bool)
    known = np.zeros(rewards.shape, bool)
    for t in range(len(rewards) - 1, -1, -1):
        seen_end |= dones[t]
        running = rewards[t] + gamma * running * ~dones[t]
        returns[t] = running
        known[t] = seen_end
    return returns, known
