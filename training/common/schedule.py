"""The trainers' schedules in env-steps: "every N env-steps" (resume-safe) and a weight
that falls linearly to 0."""

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


def linear_decay(initial: float, elapsed: int, over: int | None) -> float:
    """A weight that starts at ``initial`` and falls linearly to 0 over ``over`` env-steps,
    ``elapsed`` env-steps after it started; ``over`` None keeps it at ``initial`` (the
    teachers' pull of the duel and of WFM-1)."""
    if over is None:
        return initial
    return initial * max(0.0, 1.0 - elapsed / over)


__all__ = ["EveryNSteps", "linear_decay"]
