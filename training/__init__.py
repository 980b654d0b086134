"""Training: algorithms and bookkeeping on top of the environments.

The stable API is importable from here, e.g. ``from training import train,
TrainingConfig``. Names load on first use, so ``import training.league`` and
other light modules do not pay for torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "train": "training.train",
    "TrainingConfig": "training.config",
    "WandbCallback": "training.callbacks",
    "RewardBreakdownCallback": "training.callbacks",
    "EloEvalCallback": "training.callbacks",
    "ManifestCheckpointCallback": "training.callbacks",
    "ManifestEvalCallback": "training.callbacks",
    "EvaluationResult": "training.evaluate",
    "evaluate": "training.evaluate",
    "evaluate_detailed": "training.evaluate",
    "run_episodes_with_model": "training.evaluate",
    "EloRegistry": "training.elo",
    "TeamEloRegistry": "training.elo",
    "DEFAULT_RATING": "training.elo",
    "BASELINE_RATINGS": "training.elo",
    "TEAM_BASELINE_RATINGS": "training.elo",
    "CheckpointManifest": "training.artifacts",
    "checkpoint_name_prefix": "training.artifacts",
    "checkpoint_final_stem": "training.artifacts",
    "checkpoint_best_filename": "training.artifacts",
    "parse_step_from_checkpoint_name": "training.artifacts",
    "TeamOpponentPool": "training.self_play",
    "CurriculumScheduler": "training.curriculum_scheduler",
    "CurriculumStage": "training.curriculum_scheduler",
    "STAGE_ENV_KWARGS": "training.curriculum_scheduler",
    "load_v1_weights_into_mappo": "training.curriculum_scheduler",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from training.artifacts import (  # noqa: F401
        CheckpointManifest,
        checkpoint_best_filename,
        checkpoint_final_stem,
        checkpoint_name_prefix,
        parse_step_from_checkpoint_name,
    )
    from training.callbacks import (  # noqa: F401
        EloEvalCallback,
        ManifestCheckpointCallback,
        ManifestEvalCallback,
        RewardBreakdownCallback,
        WandbCallback,
    )
    from training.config import TrainingConfig  # noqa: F401
    from training.curriculum_scheduler import (  # noqa: F401
        STAGE_ENV_KWARGS,
        CurriculumScheduler,
        CurriculumStage,
        load_v1_weights_into_mappo,
    )
    from training.elo import (  # noqa: F401
        BASELINE_RATINGS,
        DEFAULT_RATING,
        TEAM_BASELINE_RATINGS,
        EloRegistry,
        TeamEloRegistry,
    )
    from training.evaluate import (  # noqa: F401
        EvaluationResult,
        evaluate,
        evaluate_detailed,
        run_episodes_with_model,
    )
    from training.self_play import TeamOpponentPool  # noqa: F401
    from training.train import train  # noqa: F401


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        # Importing training.train binds the submodule to the name "train";
        # the package's public "train" is the function, so bind it last.
        globals()[name] = value
        return value
    raise AttributeError(f"module 'training' has no attribute {name!r}")
