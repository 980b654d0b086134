"""The hierarchical curriculum, where the reference documents it:
:mod:`training.echelons.curriculum` holds it, and this module hands its names on.

The project itself imports :mod:`training.echelons.curriculum` (whose module-level
settings, such as ``HRL_CONFIG_DIR``, are the ones read).
"""

from __future__ import annotations

from training.echelons.curriculum import (
    HRL_CONFIG_DIR,
    PHASE_CONFIG_FILES,
    PHASE_LABELS,
    HRLCurriculumScheduler,
    HRLPhase,
    load_phase_config,
)

__all__ = ["HRL_CONFIG_DIR", "PHASE_CONFIG_FILES", "PHASE_LABELS", "HRLCurriculumScheduler",
           "HRLPhase", "load_phase_config"]
