"""The Nash solvers behind :func:`training.league.nash.solve_nash`, and their certificates.

``M[i, j]`` is the payoff of the row player's strategy ``i`` against the column player's
``j`` in a two-player zero-sum game; every function here takes a checked, finite, square
float64 matrix. :func:`solve_lp` is the linear programme on SciPy's HiGHS, in the classic
von Neumann form on the shifted matrix ``P = M - min(M) + 1 > 0`` (minimise ``sum(u)``
subject to ``P^T u >= 1``, ``u >= 0``; then ``sigma = u / sum(u)``), equivalent to the
reference formulation and faster, with no free variable or equality row.
:func:`most_uniform_equilibrium` replaces a degenerate answer (:func:`is_degenerate`) by
the equilibrium closest to uniform; :func:`regret_matching` is the fallback, giving both
players' average strategies; :func:`certify` computes an answer's value, guaranteed value
and exploitability on the full matrix. ``docs/league.md`` ("Nash solver and its report")
has the details.
"""

from __future__ import annotations

import logging
import math

import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "certify",
    "is_degenerate",
    "most_uniform_equilibrium",
    "normalised",
    "regret_matching",
    "solve_lp",
    "symmetric_value",
]


def symmetric_value(matrix: np.ndarray) -> float | None:
    """The exact value c/2 when M + M^T == c everywhere, else None."""
    total = matrix + matrix.T
    c = float(total[0, 0])
    scale = max(1.0, float(np.abs(matrix).max()))
    if np.all(np.abs(total - c) <= 1e-12 * scale):
        return c / 2.0
    return None


def certify(
    matrix: np.ndarray, sigma: np.ndarray, column: np.ndarray | None, fallback_value: float
) -> tuple[float, float, float]:
    """Return (value, guaranteed_value, exploitability) of ``sigma``; see NashSolution."""
    guaranteed = float((sigma @ matrix).min())
    upper_bounds = []
    if column is not None:
        upper_bounds.append(float((matrix @ column).max()))
    symmetric = symmetric_value(matrix)
    if symmetric is not None:
        upper_bounds.append(symmetric)
    value = min(upper_bounds) if upper_bounds else fallback_value
    return value, guaranteed, max(value - guaranteed, 0.0)


def normalised(vector: np.ndarray, epsilon: float) -> np.ndarray | None:
    clipped = np.clip(vector, 0.0, None)
    total = float(clipped.sum())
    if not math.isfinite(total) or total < epsilon:
        return None
    return clipped / total


# ---------------------------------------------------------------- solvers


def solve_lp(
    matrix: np.ndarray, epsilon: float
) -> tuple[np.ndarray, np.ndarray | None, float] | str:
    """Solve with HiGHS; return (sigma, column strategy or None, LP value) or a failure reason."""
    try:
        from scipy import optimize
    except ImportError as exc:
        return f"SciPy is not available ({exc})"
    n = matrix.shape[0]
    shift = 1.0 - float(matrix.min())
    shifted = matrix + shift  # every entry >= 1, so the value is >= 1 and u is bounded
    try:
        # Looked up at call time so that tests can substitute a failing solver.
        result = optimize.linprog(
            np.ones(n),
            A_ub=-shifted.T,
            b_ub=-np.ones(n),
            bounds=(0, None),
            method="highs",
            # Presolve only costs time on a dense square game (measured ~30 %).
            options={"presolve": False},
        )
    except Exception as exc:  # any solver crash must fall back, with its reason logged
        return f"linprog raised {type(exc).__name__}: {exc}"
    if getattr(result, "status", None) != 0 or getattr(result, "x", None) is None:
        return (
            f"linprog failed (status {getattr(result, 'status', '?')}: "
            f"{getattr(result, 'message', 'no message')})"
        )
    u = np.asarray(result.x, dtype=np.float64).reshape(-1)
    if u.shape != (n,) or not np.all(np.isfinite(u)):
        return f"linprog returned an unusable solution of shape {u.shape}"
    sigma = normalised(u, epsilon)
    if sigma is None:
        return f"the LP solution sums to {float(np.clip(u, 0, None).sum()):.3g} < epsilon"
    lp_value = 1.0 / float(np.clip(u, 0, None).sum()) - shift
    column = None
    marginals = getattr(getattr(result, "ineqlin", None), "marginals", None)
    if marginals is not None:
        duals = -np.asarray(marginals, dtype=np.float64).reshape(-1)
        if duals.shape == (n,) and np.all(np.isfinite(duals)):
            column = normalised(duals, epsilon)
    return sigma, column, lp_value


def is_degenerate(
    matrix: np.ndarray, sigma: np.ndarray, column: np.ndarray | None, value: float
) -> bool:
    """True if a strategy outside a support still ties with the value (several equilibria).

    A strictly complementary solution (every strategy outside the supports
    does strictly worse than the value) is the unique equilibrium of a
    non-degenerate game; a tie means other equilibria may exist.
    """
    if column is None:
        return False
    tolerance = 1e-9 * max(1.0, float(np.abs(matrix).max()))
    zero = 1e-9
    row_ties = (sigma <= zero) & (matrix @ column >= value - tolerance)
    column_ties = (column <= zero) & (sigma @ matrix <= value + tolerance)
    return bool(row_ties.any() or column_ties.any())


def most_uniform_equilibrium(
    matrix: np.ndarray, guaranteed: float, epsilon: float
) -> np.ndarray | None:
    """Among strategies guaranteeing ``guaranteed``, the one closest to uniform in L1.

    Variables ``[sigma, t]``; minimise ``sum(t)`` with ``t >= |sigma - 1/N|``.
    Returns None if the LP fails (the caller keeps its vertex solution).
    """
    from scipy import optimize

    n = matrix.shape[0]
    tolerance = 1e-12 * max(1.0, float(np.abs(matrix).max()))
    eye = np.eye(n)
    a_ub = np.block(
        [
            [-matrix.T, np.zeros((n, n))],  # sigma^T M >= guaranteed, for every column
            [eye, -eye],  # sigma - t <= 1/N
            [-eye, -eye],  # -sigma - t <= -1/N
        ]
    )
    b_ub = np.concatenate(
        [np.full(n, -(guaranteed - tolerance)), np.full(n, 1.0 / n), np.full(n, -1.0 / n)]
    )
    a_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
    try:
        result = optimize.linprog(
            np.concatenate([np.zeros(n), np.ones(n)]),
            A_ub=a_ub,
            b_ub=b_ub,
            A_eq=a_eq,
            b_eq=[1.0],
            bounds=(0, None),
            method="highs",
        )
    except Exception as exc:  # keep the vertex solution, but say why
        logger.warning("Nash tie-break LP raised %s: %s; keeping the vertex solution",
                       type(exc).__name__, exc)
        return None
    if getattr(result, "status", None) != 0 or getattr(result, "x", None) is None:
        logger.warning("Nash tie-break LP failed (%s); keeping the vertex solution",
                       getattr(result, "message", "no message"))
        return None
    return normalised(np.asarray(result.x[:n], dtype=np.float64), epsilon)


def regret_matching(
    matrix: np.ndarray, n_iterations: int, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Two-player regret matching; return the average (row, column) strategies."""
    n = matrix.shape[0]
    transposed = np.ascontiguousarray(matrix.T)
    uniform = np.full(n, 1.0 / n)
    regret_row = np.zeros(n)
    regret_col = np.zeros(n)
    sum_row = np.zeros(n)
    sum_col = np.zeros(n)
    positive = np.empty(n)
    for _ in range(n_iterations):
        np.maximum(regret_row, 0.0, out=positive)
        total = positive.sum()
        row = positive / total if total > epsilon else uniform
        np.maximum(regret_col, 0.0, out=positive)
        total = positive.sum()
        col = positive / total if total > epsilon else uniform
        row_payoffs = matrix @ col  # payoff of each pure row against col
        expected = row @ row_payoffs
        regret_row += row_payoffs - expected
        regret_col += expected - transposed @ row  # column player minimises M
        sum_row += row
        sum_col += col
    average_row = normalised(sum_row, epsilon)
    average_col = normalised(sum_col, epsilon)
    return (
        uniform.copy() if average_row is None else average_row,
        uniform.copy() if average_col is None else average_col,
    )
