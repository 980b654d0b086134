"""Measures of how a side fights, computed from the battle core's state and events
(:mod:`envs.metrics.coordination`; definitions in ``docs/metrics_reference.md``)."""

from __future__ import annotations

from envs.metrics.coordination import (
    METRICS,
    SUPPORT_RADIUS,
    CoordinationTally,
    compute_all,
    fire_concentration,
    flanking_ratio,
    mutual_support_score,
)

__all__ = ["METRICS", "SUPPORT_RADIUS", "CoordinationTally", "compute_all",
           "fire_concentration", "flanking_ratio", "mutual_support_score"]
