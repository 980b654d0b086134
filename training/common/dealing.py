"""Who commands Red in which training battles: the one rule of every learner that meets
other policies (self-play, the league's roles, the echelons' league)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def deal_battles(rng: np.random.Generator, n_battles: int, opponents: Sequence[Any],
                 scripted_share: float) -> list[tuple[Any, np.ndarray]]:
    """Give ``1 - scripted_share`` of ``n_battles`` battles, drawn at random, to
    ``opponents`` in equal parts (the rest stay scripted).

    Returns:
        ``(opponent, sorted battle indices)`` for each opponent given at least one battle;
        empty without opponents.
    """
    order = rng.permutation(n_battles)  # drawn even without opponents: one stream per run
    if not opponents:
        return []
    n_scripted = int(round(scripted_share * n_battles))
    return [(opponent, np.sort(part)) for opponent, part in zip(
        opponents, np.array_split(order[n_scripted:], len(opponents)), strict=True)
        if len(part)]


__all__ = ["deal_battles"]
