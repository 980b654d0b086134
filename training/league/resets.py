"""When an exploiter starts over: the seeds' rolling rule, or the published gate.

* ``rolling`` (the seeds): the last ``window_size`` evaluation win rates against
  the exploiter's targets; once the window is full and its mean is below
  ``threshold``, the exploiter has stopped finding weaknesses: reset, and clear
  the window.
* ``alphastar`` (REFERENCE §M): a gate that opens once ``gate_min_steps`` have
  passed since it last opened and either the exploiter beats every target more
  than ``gate_win_rate`` of the time or ``gate_max_steps`` have passed. At the
  gate the exploiter is added to the league as a snapshot and then reset (a
  main exploiter always; a league exploiter with probability ``reset_probability``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

RESET_RULES = ("rolling", "alphastar")
"""How an exploiter decides to reset: the seeds' rolling win rate below a threshold, or
the published checkpoint-and-reset gate."""
RESET, GATE = "reset", "gate"


@dataclass
class ResetRule:
    """An exploiter's reset rule and its state (kept in the role's checkpoints).

    Args:
        rule: ``rolling`` or ``alphastar``.
        threshold, window_size: the rolling rule's.
        gate_min_steps, gate_max_steps, gate_win_rate, reset_probability: the gate's.
    """

    rule: str = "rolling"
    threshold: float = 0.30
    window_size: int = 5
    gate_min_steps: int = 200_000
    gate_max_steps: int = 400_000
    gate_win_rate: float = 0.7
    reset_probability: float = 1.0
    window: deque = field(default_factory=deque)
    gate_opened_at: int = 0
    last_mean: float = float("nan")

    def observe(self, win_rate: float, least_win_rate: float, step: int,
                rng: np.random.Generator) -> str | None:
        """After an evaluation: the latest win rate against the targets, the least
        against any of them, and the step; returns :data:`RESET` (start over),
        :data:`GATE` (snapshot and keep training) or None."""
        if self.rule == "rolling":
            self.window.append(win_rate)
            while len(self.window) > self.window_size:
                self.window.popleft()
            self.last_mean = float(np.mean(self.window))
            if len(self.window) == self.window_size and self.last_mean < self.threshold:
                self.window.clear()
                return RESET
            return None
        self.last_mean = win_rate
        since = step - self.gate_opened_at
        if since < self.gate_min_steps or (least_win_rate <= self.gate_win_rate
                                           and since < self.gate_max_steps):
            return None
        self.gate_opened_at = step
        return RESET if rng.random() < self.reset_probability else GATE

    def rolling_win_rate(self) -> float:
        """The mean win rate the last :meth:`observe` decided on (the rolling rule's
        window before a reset cleared it; the gate's latest); NaN before the first."""
        return self.last_mean

    def state_dict(self) -> dict:
        return {"window": list(self.window), "gate_opened_at": self.gate_opened_at}

    def load_state_dict(self, state: dict) -> None:
        self.window = deque(state["window"])
        self.gate_opened_at = int(state["gate_opened_at"])


__all__ = ["GATE", "RESET", "RESET_RULES", "ResetRule"]
