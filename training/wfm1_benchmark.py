"""WFM-1's benchmark, where the seeds document it: :mod:`benchmarks.wfm1` holds it, and
this module hands its names on.

``python -m training.wfm1_benchmark`` runs its command line (the same flags and output as
``python -m benchmarks.wfm1``). Nothing in the project imports this module: benchmarks sit
above training, and only the seeds' documented path points up.
"""

from __future__ import annotations

from benchmarks.wfm1 import (
    CONDITIONS,
    EVAL_SEED,
    WFM1Benchmark,
    WFM1BenchmarkConfig,
    WFM1BenchmarkResult,
    WFM1BenchmarkSummary,
    main,
    play_scenario,
)

__all__ = ["CONDITIONS", "EVAL_SEED", "WFM1Benchmark", "WFM1BenchmarkConfig",
           "WFM1BenchmarkResult", "WFM1BenchmarkSummary", "main", "play_scenario"]

if __name__ == "__main__":
    main()
