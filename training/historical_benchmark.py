"""The historical benchmark, where the seeds document it: :mod:`benchmarks.historical`
holds it, and this module hands its names on.

``python -m training.historical_benchmark`` runs its command line (the same flags and
output as ``python -m benchmarks.historical``). Nothing in the project imports this
module: benchmarks sit above training, and only the seeds' documented path points up.
"""

from __future__ import annotations

from benchmarks.historical import (
    DEFAULT_SEEDS,
    WEIGHTS,
    WINNER_MATCH_TARGET,
    WINNER_NAMES,
    BenchmarkEntry,
    BenchmarkSummary,
    HistoricalBenchmark,
    OutcomeComparator,
    OutcomeComparison,
    draw_results,
    historical_winner,
    main,
    render_markdown,
    replay_gif,
)

__all__ = ["DEFAULT_SEEDS", "WEIGHTS", "WINNER_MATCH_TARGET", "WINNER_NAMES", "BenchmarkEntry",
           "BenchmarkSummary", "HistoricalBenchmark", "OutcomeComparator", "OutcomeComparison",
           "draw_results", "historical_winner", "main", "render_markdown", "replay_gif"]

if __name__ == "__main__":
    main()
