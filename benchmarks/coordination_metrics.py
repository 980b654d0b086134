"""Coordination metrics: what computing them every step costs beside the battle step.

Rows: battles of N-vs-N battalions (scripted level-5 commanders on both sides, 60
steps from deployment, so fire and melee happen), the time of one
``MultiBattalionBatch.step`` of the batch, the time of
:func:`envs.metrics.coordination.compute_all` on its result, and their ratio: the
share of a rollout step that MAPPO and the league spend on ``coordination/*``. Each
row is warmed up, then timed ``--repeats`` times and the median repeat reported.

Usage::

    python -m benchmarks.coordination_metrics [--repeats 5]
"""

from __future__ import annotations

import platform
import statistics
import time

import numpy as np

from benchmarks import argument_parser
from envs.battles.multi_battalion_batch import BLUE, MultiBattalionBatch
from envs.metrics.coordination import compute_all
from envs.sim.config import BattleConfig

SIZES = ((128, 2), (128, 6), (512, 2), (512, 6))
"""(battles, battalions a side) of each row."""
STEPS = 60


def time_row(n_battles: int, side: int, repeats: int) -> tuple[float, float]:
    """Median seconds per step of the battles and of the metrics over ``STEPS`` steps."""
    batch = MultiBattalionBatch(n_battles, side, side, config=BattleConfig(), terrain=None,
                                randomize_terrain=True, visibility_radius=600.0,
                                reward_weights=None)
    units = np.arange(2 * side)
    step_times, metric_times = [], []
    for repeat in range(repeats + 1):  # the first repeat warms up (and compiles)
        batch.reset(np.arange(n_battles), list(range(n_battles)), np.zeros(n_battles, np.int64))
        stepping = measuring = 0.0
        for _ in range(STEPS):
            orders = batch.scripted_actions(units, 5)
            started = time.perf_counter()
            result = batch.step(orders)
            stepping += time.perf_counter() - started
            started = time.perf_counter()
            compute_all(batch.state, batch.last_events, batch.config, BLUE, in_fight=result.acted)
            measuring += time.perf_counter() - started
        if repeat:
            step_times.append(stepping / STEPS)
            metric_times.append(measuring / STEPS)
    return statistics.median(step_times), statistics.median(metric_times)


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{platform.processor() or platform.machine()}, numpy {np.__version__}, "
          f"median of {args.repeats}, {STEPS} steps each")
    print("| battles | battalions a side | battle step (ms) | metrics (ms) | metrics / step |")
    print("|---:|---:|---:|---:|---:|")
    for n_battles, side in SIZES:
        step, metrics = time_row(n_battles, side, args.repeats)
        print(f"| {n_battles} | {side} | {step * 1e3:.2f} | {metrics * 1e3:.2f} | "
              f"{metrics / step:.0%} |")


if __name__ == "__main__":
    main()
