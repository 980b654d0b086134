"""The one step scheduler of both trainers: "every N env-steps", resume-safe."""

from __future__ import annotations

from envs.sim.validation import check_int


class EveryNSteps:
    """Fires once each time a step count crosses a multiple of ``freq``.

    Args:
        freq: the period in env-steps (>= 1).
        start: the step count to count from (a resumed run does not fire at once).
    """

    def __init__(self, freq: int, start: int = 0) -> None:
        self.freq = check_int("freq", freq, minimum=1)
        self.last = start

    def start(self, steps: int) -> None:
        """Count from ``steps``."""
        self.last = steps

    def __call__(self, steps: int) -> bool:
        due = steps // self.freq > self.last // self.freq
        self.last = steps
        return due


__all__ = ["EveryNSteps"]
