"""Training: algorithms and bookkeeping on top of the environments.

The stable API is importable from here, e.g. ``from training import train,
TrainingConfig``, and from the module that documents each name (``from
training.train import train``). :data:`_EXPORTS` is the one list of these
names. They load on first use, so ``import training.league`` and other light
modules do not pay for torch.

``training.train`` and ``training.evaluate`` are both a module and the function
of the same name in it; as an attribute of this package the name is always the
function, whichever was imported first (as an eager ``from training.train import
train`` here would make it). Reach the modules' other names with ``from
training.train import TrainingConfig`` or ``importlib.import_module``.
"""

from __future__ import annotations

import sys
import types

from envs.lazy import lazy_getattr

_EXPORTS = {
    # training API
    "train": "training.train",
    "TrainingConfig": "training.ppo.config",
    "WandbCallback": "training.ppo.callbacks",
    "RewardBreakdownCallback": "training.ppo.callbacks",
    "EloEvalCallback": "training.ppo.callbacks",
    "ManifestCheckpointCallback": "training.ppo.callbacks",
    "ManifestEvalCallback": "training.ppo.callbacks",
    # evaluation
    "EvaluationResult": "training.evaluate",
    "evaluate": "training.evaluate",
    "evaluate_detailed": "training.evaluate",
    "run_episodes_with_model": "training.evaluate",
    # self-play
    "OpponentPool": "training.self_play",
    "SelfPlayCallback": "training.self_play",
    "WinRateVsPoolCallback": "training.self_play",
    "evaluate_vs_pool": "training.self_play",
    "TeamOpponentPool": "training.self_play",
    "WFM1OpponentPool": "training.self_play",
    "evaluate_team_vs_pool": "training.self_play",
    "nash_exploitability_proxy": "training.self_play",
    # curriculum
    "CurriculumScheduler": "training.curriculum_scheduler",
    "CurriculumStage": "training.curriculum_scheduler",
    "STAGE_ENV_KWARGS": "training.curriculum_scheduler",
    "load_v1_weights_into_mappo": "training.curriculum_scheduler",
    # HRL curriculum
    "HRLPhase": "training.echelons.curriculum",
    "HRLCurriculumScheduler": "training.echelons.curriculum",
    # policy registry
    "PolicyRegistry": "training.policy_registry",
    "Echelon": "training.policy_registry",
    "PolicyEntry": "training.policy_registry",
    "freeze_mappo_policy": "training.utils.freeze_policy",
    "freeze_sb3_policy": "training.utils.freeze_policy",
    "assert_frozen": "training.utils.freeze_policy",
    "load_and_freeze_mappo": "training.utils.freeze_policy",
    "load_and_freeze_sb3": "training.utils.freeze_policy",
    # Elo
    "EloRegistry": "training.elo",
    "TeamEloRegistry": "training.elo",
    "DEFAULT_RATING": "training.elo",
    "BASELINE_RATINGS": "training.elo",
    "TEAM_BASELINE_RATINGS": "training.elo",
    # artifacts
    "CheckpointManifest": "training.artifacts",
    "checkpoint_name_prefix": "training.artifacts",
    "checkpoint_final_stem": "training.artifacts",
    "checkpoint_best_filename": "training.artifacts",
    "parse_step_from_checkpoint_name": "training.artifacts",
    # benchmarks
    "HistoricalBenchmark": "training.historical_benchmark",
    "BenchmarkSummary": "training.historical_benchmark",
    "TransferBenchmark": "training.transfer_benchmark",
    "TransferEvalConfig": "training.transfer_benchmark",
    "TransferSummary": "training.transfer_benchmark",
    "WFM1Benchmark": "training.wfm1_benchmark",
    "WFM1BenchmarkConfig": "training.wfm1_benchmark",
    "WFM1BenchmarkSummary": "training.wfm1_benchmark",
}
"""Every public name of the package and the module that defines it."""

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr("training", _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


class _Package(types.ModuleType):
    """The package module: a submodule named like an exported function binds the function.

    The import system binds ``training.train`` (the submodule) as the package's
    attribute ``train`` once the submodule has run, which would hide the function
    ``train`` from ``from training import train``. The function wins instead.
    """

    def __setattr__(self, name: str, value) -> None:
        if (isinstance(value, types.ModuleType) and _EXPORTS.get(name) == value.__name__
                and hasattr(value, name)):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
