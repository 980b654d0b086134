"""Benchmark the league's Nash solvers on random symmetric win-rate games.

For each size N the payoff matrix is ``M = 0.5 + A`` with ``A`` antisymmetric
and entries of ``M`` in [0, 1] (``M + M^T = 1``, game value 1/2). The script
times ``solve_nash`` with the LP (HiGHS) and with regret matching
(``use_lp=False``), and prints the median time of a few repeats together with
the certified exploitability of each answer.

Run: ``python -m benchmarks.nash`` (``--help`` for options). Target: the LP
solves 200x200 in under 50 ms on a 2-core machine.
"""

from __future__ import annotations

import os
import platform
import statistics
import time

import numpy as np

from benchmarks import argument_parser
from training.league.nash import solve_nash


def random_symmetric_game(n: int, seed: int) -> np.ndarray:
    """Return M = 0.5 + A, A antisymmetric, entries of M uniform in [0, 1]."""
    upper = np.triu(np.random.default_rng(seed).uniform(0.0, 1.0, (n, n)), 1)
    matrix = upper + np.tril(1.0 - upper.T, -1)
    np.fill_diagonal(matrix, 0.5)
    return matrix


def time_solver(matrix: np.ndarray, repeats: int, **kwargs) -> tuple[float, float, str]:
    """Return (median seconds, exploitability, solver name) over ``repeats`` runs."""
    times = []
    solution = None
    for _ in range(repeats):
        start = time.perf_counter()
        solution = solve_nash(matrix, log=False, **kwargs)
        times.append(time.perf_counter() - start)
    assert solution is not None
    return statistics.median(times), solution.exploitability, solution.solver


def main() -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 500])
    parser.add_argument("--lp-repeats", type=int, default=5)
    parser.add_argument("--rm-repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10_000,
                        help="regret-matching iterations (the solver's default)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import scipy

    print(f"python {platform.python_version()}, numpy {np.__version__}, scipy "
          f"{scipy.__version__}, {os.cpu_count()} CPU(s)")
    print(f"median of {args.lp_repeats} (LP) / {args.rm_repeats} (regret matching, "
          f"{args.iterations} iterations) runs; exploitability = value - min_j (sigma^T M)_j")
    header = (f"{'N':>5} | {'LP ms':>9} | {'LP exploit.':>11} | {'RM ms':>9} | "
              f"{'RM exploit.':>11} | {'RM/LP time':>10}")
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        matrix = random_symmetric_game(n, args.seed)
        solve_nash(matrix, log=False)  # warm-up: imports SciPy, fills caches
        lp_time, lp_gap, lp_solver = time_solver(matrix, args.lp_repeats)
        if lp_solver != "lp":
            print(f"warning: N={n}: the LP fell back to {lp_solver}")
        rm_time, rm_gap, _ = time_solver(
            matrix, args.rm_repeats, use_lp=False, n_iterations=args.iterations
        )
        print(f"{n:>5} | {lp_time * 1e3:>9.1f} | {lp_gap:>11.1e} | {rm_time * 1e3:>9.1f} | "
              f"{rm_gap:>11.1e} | {rm_time / lp_time:>10.1f}")


if __name__ == "__main__":
    main()
