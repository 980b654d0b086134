"""The terrain-transfer benchmark, where the seeds document it: :mod:`benchmarks.transfer`
holds it, and this module hands its names on.

``python -m training.transfer_benchmark`` runs its command line (the same flags and
output as ``python -m benchmarks.transfer``). Nothing in the project imports this module:
benchmarks sit above training, and only the seeds' documented path points up. The sites'
sectors are :mod:`data.gis.sectors`'s.
"""

from __future__ import annotations

from benchmarks.transfer import (
    CONDITIONS,
    DECISIVE_SHARE,
    EVAL_SEED,
    FINETUNE_MAX_DROP,
    FINETUNE_MAX_STEPS,
    FINETUNE_N_ENVS,
    ZERO_SHOT_MAX_DROP,
    TransferBenchmark,
    TransferEvalConfig,
    TransferResult,
    TransferSummary,
    main,
    procedural_terrain,
    render_markdown,
)

__all__ = ["CONDITIONS", "DECISIVE_SHARE", "EVAL_SEED", "FINETUNE_MAX_DROP",
           "FINETUNE_MAX_STEPS", "FINETUNE_N_ENVS", "ZERO_SHOT_MAX_DROP", "TransferBenchmark",
           "TransferEvalConfig", "TransferResult", "TransferSummary", "main",
           "procedural_terrain", "render_markdown"]

if __name__ == "__main__":
    main()
