"""The historical benchmark, where the seeds document it: :mod:`benchmarks.historical`
holds it (with :mod:`benchmarks.historical_scoring` and
:mod:`benchmarks.historical_baselines`), and this module hands its names on.

``python -m training.historical_benchmark`` runs its command line (the same flags and
output as ``python -m benchmarks.historical``). Nothing in the project imports this
module: benchmarks sit above training, and only the seeds' documented path points up.
"""

from __future__ import annotations

from benchmarks.historical import (
    BASELINE_MARGIN_TARGET,
    BASELINES,
    CANDIDATE_ATTACK_RULES,
    CASUALTY_RATIO_ERROR_TARGET,
    DEFAULT_SEEDS,
    HELD_OUT_MATCH_TARGET,
    SPLIT_KEY,
    SPLITS,
    TRAIN_SHARE,
    WEIGHTS,
    WINNER_MATCH_TARGET,
    WINNER_NAMES,
    BaselineResult,
    BenchmarkEntry,
    BenchmarkSummary,
    HistoricalBenchmark,
    OutcomeComparator,
    OutcomeComparison,
    RuleTrial,
    Scores,
    army_figures,
    brier_score,
    choose_attack_rule,
    draw_results,
    historical_winner,
    in_training_split,
    log_loss,
    main,
    render_markdown,
    replay_gif,
    score_entries,
    smoothed_probabilities,
)

__all__ = ["BASELINES", "BASELINE_MARGIN_TARGET", "CANDIDATE_ATTACK_RULES",
           "CASUALTY_RATIO_ERROR_TARGET", "DEFAULT_SEEDS", "HELD_OUT_MATCH_TARGET", "SPLITS",
           "SPLIT_KEY", "TRAIN_SHARE", "WEIGHTS", "WINNER_MATCH_TARGET", "WINNER_NAMES",
           "BaselineResult", "BenchmarkEntry", "BenchmarkSummary", "HistoricalBenchmark",
           "OutcomeComparator", "OutcomeComparison", "RuleTrial", "Scores", "army_figures",
           "brier_score", "choose_attack_rule", "draw_results", "historical_winner",
           "in_training_split", "log_loss", "main", "render_markdown", "replay_gif",
           "score_entries", "smoothed_probabilities"]

if __name__ == "__main__":
    main()
