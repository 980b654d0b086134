"""Nash equilibria of the league's payoff matrix, with the solver's quality reported.

The league is a two-player zero-sum game: ``M[i, j]`` is the payoff of agent ``i`` (the
row player) against agent ``j``, usually the win rate (:func:`build_payoff_matrix`). The
Nash distribution is the row player's maximin mixed strategy ``sigma``: it maximises
``min_j (sigma^T M)_j``, the payoff it guarantees against any pure column response; that
maximum is the game value ``v*``. :func:`solve_nash` tries the linear programme on
SciPy's HiGHS first and falls back on regret matching
(:mod:`training.league.nash_solvers`); every answer is certified on the full matrix
(:class:`NashSolution`: the exploitability is computed, never assumed), and a fallback
is logged at WARNING level with its reason and gap. ``docs/league.md`` ("Nash solver and
its report") says when each solver runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from envs.sim.validation import check_bool, check_positive, check_real_array
from training.league.nash_solvers import (
    certify,
    is_degenerate,
    most_uniform_equilibrium,
    regret_matching,
    solve_lp,
    symmetric_value,
)

logger = logging.getLogger(__name__)

__all__ = [
    "NashSolution",
    "build_payoff_matrix",
    "compute_nash_distribution",
    "exploitability",
    "nash_entropy",
    "solve_nash",
    "MAX_REGRET_ITERATIONS",
]

MAX_REGRET_ITERATIONS = 1_000_000
"""Most regret-matching iterations a solve may ask for: 10 to 25 s on one core for
leagues of 2 to 200 agents (the default, 10,000, takes 0.1 to 0.3 s)."""

SOLVER_LP = "lp"
SOLVER_REGRET_MATCHING = "regret_matching"


@dataclass(frozen=True)
class NashSolution:
    """A Nash distribution together with how it was found and how good it is.

    Attributes:
        distribution: The row player's mixed strategy ``sigma``, shape (N,),
            non-negative, summing to 1.
        solver: ``"lp"`` or ``"regret_matching"``.
        exploitability: ``value - guaranteed_value`` (>= 0): how much more a
            best-responding column player gets against ``sigma`` than the game
            value lets it expect, i.e.
            ``max_j [(-M)^T sigma]_j - (-value)``
            ``= value - min_j (sigma^T M)_j``. 0 means ``sigma`` is an exact
            equilibrium strategy; in win-rate form it is the extra win rate a
            best response gains over the fair share ``1 - value``.
        value: The game value ``v*`` used for ``exploitability``. It is the
            smallest certified upper bound available: ``max_i (M q)_i`` for the
            column strategy ``q`` that the solver produced (LP duals or the
            regret-matching column average), and exactly ``c/2`` when
            ``M + M^T = c`` everywhere (a symmetric game). Because it never
            lies below ``v*``, the reported exploitability is never smaller
            than the true one; for the LP both coincide up to solver tolerance.
        guaranteed_value: ``min_j (sigma^T M)_j``, the payoff ``sigma`` is
            guaranteed against every opponent (a lower bound on ``v*``).
        iterations: Regret-matching iterations run, or None for the LP.
        fallback_reason: Why the LP was not used (None when it was).
        degenerate: True when the LP's equilibrium was not strict (the game
            has several equilibria, e.g. agents without match data that all
            score 0.5); the returned distribution is then the equilibrium
            closest to uniform (in L1) rather than an arbitrary vertex that
            would put all weight on one agent.
    """

    distribution: np.ndarray
    solver: str
    exploitability: float
    value: float
    guaranteed_value: float
    iterations: int | None = None
    fallback_reason: str | None = None
    degenerate: bool = False


# ---------------------------------------------------------------- validation


def _as_payoff(payoff: object) -> np.ndarray:
    matrix = check_real_array("payoff", payoff, finite=False, dtype=np.float64).copy()
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(
            f"payoff matrix has shape {matrix.shape}: expected a non-empty square (N, N) array"
        )
    bad = np.argwhere(~np.isfinite(matrix))
    if bad.size:
        i, j = (int(k) for k in bad[0])
        raise ValueError(
            f"payoff matrix entry [{i}, {j}] is {matrix[i, j]}: all entries must be finite "
            f"({len(bad)} non-finite entr{'y' if len(bad) == 1 else 'ies'})"
        )
    return matrix


def _check_iterations(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not (
            1 <= value <= MAX_REGRET_ITERATIONS):
        raise ValueError(f"n_iterations={value!r} is invalid: expected an int in "
                         f"[1, {MAX_REGRET_ITERATIONS:_}] (MAX_REGRET_ITERATIONS)")
    return int(value)


def _check_epsilon(value: object) -> float:
    return check_positive("epsilon", value)


# ---------------------------------------------------------------- solving


def exploitability(payoff: object, distribution: object) -> float:
    """Return how far a row distribution is from an equilibrium of ``payoff``.

    Defined as ``v* - min_j (sigma^T M)_j``, where ``v*`` is the game value
    (computed with the LP, or exactly ``c/2`` for a symmetric game
    ``M + M^T = c``): the extra payoff a best-responding column player gets
    against ``sigma`` beyond what the game value allows.

    Args:
        payoff: The (N, N) payoff matrix of the row player.
        distribution: The row player's mixed strategy, shape (N,).

    Returns:
        The exploitability (>= 0, up to solver tolerance).

    Raises:
        ValueError: If the shapes or values are invalid.
    """
    matrix = _as_payoff(payoff)
    sigma = check_real_array("distribution", distribution, finite=False, dtype=np.float64)
    if sigma.shape != (matrix.shape[0],) or not np.all(np.isfinite(sigma)) or np.any(sigma < 0):
        raise ValueError(
            f"distribution has shape {sigma.shape}: expected {matrix.shape[0]} finite "
            "non-negative entries"
        )
    if sigma.sum() <= 0:
        raise ValueError("distribution sums to 0: expected a probability vector")
    sigma = sigma / sigma.sum()
    value = symmetric_value(matrix)
    if value is None:
        value = solve_nash(matrix, log=False).value
    return max(value - float((sigma @ matrix).min()), 0.0)


def solve_nash(
    payoff: object,
    n_iterations: int = 10_000,
    epsilon: float = 1e-8,
    use_lp: bool = True,
    *,
    log: bool = True,
) -> NashSolution:
    """Solve for the Nash distribution and report the solver and its exploitability.

    Tries the LP first (unless ``use_lp`` is False); falls back to regret
    matching, with a WARNING log naming the reason, when SciPy is missing or
    the LP raises, fails, or returns a solution summing to less than
    ``epsilon``.

    Args:
        payoff: (N, N) payoff matrix of the row player (e.g. win rates), finite.
        n_iterations: Regret-matching iterations, an int in
            [1, :data:`MAX_REGRET_ITERATIONS`].
        epsilon: Threshold below which a sum counts as zero, > 0.
        use_lp: Try the LP first (``True`` or ``False``).
        log: Log the solver used and the exploitability (INFO; WARNING for a
            fallback); ``True`` or ``False``.

    Returns:
        A :class:`NashSolution`; see there for the exact definitions.

    Raises:
        ValueError: If the matrix is not a non-empty square finite array, or
            ``n_iterations``/``epsilon`` is invalid.
    """
    matrix = _as_payoff(payoff)
    n_iterations = _check_iterations(n_iterations)
    epsilon = _check_epsilon(epsilon)
    use_lp = check_bool("use_lp", use_lp)
    log = check_bool("log", log)
    n = matrix.shape[0]

    reason: str | None = "use_lp=False" if not use_lp else None
    if use_lp:
        lp = solve_lp(matrix, epsilon)
        if isinstance(lp, str):
            reason = lp
        else:
            sigma, column, lp_value = lp
            value, guaranteed, gap = certify(matrix, sigma, column, lp_value)
            degenerate = is_degenerate(matrix, sigma, column, value)
            if degenerate:
                refined = most_uniform_equilibrium(matrix, guaranteed, epsilon)
                if refined is not None:
                    sigma = refined
                    value, guaranteed, gap = certify(matrix, sigma, column, lp_value)
            solution = NashSolution(
                sigma, SOLVER_LP, gap, value, guaranteed, degenerate=degenerate
            )
            if log:
                logger.info(
                    "Nash (%dx%d): solver=lp, exploitability=%.3g, value=%.6g%s",
                    n, n, gap, value,
                    " (several equilibria: chose the one closest to uniform)"
                    if degenerate else "",
                )
            return solution

    sigma, column = regret_matching(matrix, n_iterations, epsilon)
    fallback_value = float(sigma @ matrix @ column)
    value, guaranteed, gap = certify(matrix, sigma, column, fallback_value)
    solution = NashSolution(
        sigma, SOLVER_REGRET_MATCHING, gap, value, guaranteed, n_iterations, reason
    )
    if log:
        if use_lp:
            logger.warning(
                "Nash (%dx%d): LP solver failed (%s); fell back to regret matching "
                "(%d iterations), exploitability=%.3g, value=%.6g",
                n, n, reason, n_iterations, gap, value,
            )
        else:
            logger.info(
                "Nash (%dx%d): solver=regret_matching (use_lp=False, %d iterations), "
                "exploitability=%.3g, value=%.6g",
                n, n, n_iterations, gap, value,
            )
    return solution


def compute_nash_distribution(
    payoff: object,
    n_iterations: int = 10_000,
    epsilon: float = 1e-8,
    use_lp: bool = True,
) -> np.ndarray:
    """Return the Nash distribution of the row player (shape (N,), sums to 1).

    Same as :func:`solve_nash` but returns only the distribution; the solver
    used and the exploitability are logged (WARNING when the LP falls back to
    regret matching). Use :func:`solve_nash` to inspect them in code.

    Args:
        payoff: (N, N) payoff matrix (e.g. from :func:`build_payoff_matrix`).
        n_iterations: Regret-matching iterations for the fallback, in
            [1, :data:`MAX_REGRET_ITERATIONS`].
        epsilon: Threshold below which a sum counts as zero, > 0.
        use_lp: Try the LP (SciPy HiGHS) first.

    Returns:
        The distribution as a float64 array.

    Raises:
        ValueError: If the matrix is not a non-empty square finite array, or
            an argument is out of range.
    """
    return solve_nash(payoff, n_iterations, epsilon, use_lp).distribution


def build_payoff_matrix(
    agent_ids: Sequence[str],
    win_rate_fn: Callable[[str, str], float | None],
    unknown_win_rate: float = 0.5,
) -> np.ndarray:
    """Build the win-rate payoff matrix of a set of agents.

    ``M[i, j] = win_rate_fn(a_i, a_j)``; if that is None, ``1 - win_rate_fn(a_j,
    a_i)`` when the reverse is known; otherwise ``unknown_win_rate``. The
    diagonal is 0.5.

    Args:
        agent_ids: Distinct agent ids, in the order of the rows.
        win_rate_fn: ``f(agent, opponent) -> win rate in [0, 1] or None``,
            e.g. :meth:`MatchDatabase.win_rate`.
        unknown_win_rate: Entry for pairs without data, in [0, 1].

    Returns:
        A float64 array of shape (N, N).

    Raises:
        ValueError: If ids repeat, ``unknown_win_rate`` is outside [0, 1] or
            ``win_rate_fn`` returns a value outside [0, 1].
        TypeError: If ``agent_ids`` is a string or ``win_rate_fn`` is not callable.
    """
    if isinstance(agent_ids, (str, bytes)):
        raise TypeError(f"agent_ids={agent_ids!r} is a string: expected a sequence of ids")
    ids = list(agent_ids)
    for agent in ids:
        if not isinstance(agent, str):
            raise TypeError(f"agent id {agent!r} is not a string")
    if len(set(ids)) != len(ids):
        repeated = sorted({a for a in ids if ids.count(a) > 1})
        raise ValueError(f"agent_ids repeat {repeated}: each agent may appear once")
    if not callable(win_rate_fn):
        raise TypeError(f"win_rate_fn={win_rate_fn!r} is not callable")
    if isinstance(unknown_win_rate, bool) or not isinstance(unknown_win_rate, (int, float)) or not (
        0.0 <= unknown_win_rate <= 1.0
    ):
        raise ValueError(f"unknown_win_rate={unknown_win_rate!r} is invalid: expected [0, 1]")

    def rate(a: str, b: str) -> float | None:
        value = win_rate_fn(a, b)
        if value is None:
            return None
        number = float(value)
        if not 0.0 <= number <= 1.0:  # also rejects NaN
            raise ValueError(
                f"win_rate_fn({a!r}, {b!r}) returned {value!r}: expected a win rate in [0, 1] "
                "or None"
            )
        return number

    n = len(ids)
    matrix = np.full((n, n), float(unknown_win_rate))
    np.fill_diagonal(matrix, 0.5)
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if i == j:
                continue
            direct = rate(a, b)
            if direct is not None:
                matrix[i, j] = direct
                continue
            reverse = rate(b, a)
            if reverse is not None:
                matrix[i, j] = 1.0 - reverse
    return matrix


def nash_entropy(probabilities: object, epsilon: float = 1e-12) -> float:
    """Return the Shannon entropy, in nats, of a (possibly unnormalised) distribution.

    The input is normalised first; zero entries contribute 0. A distribution
    summing to less than ``epsilon`` has entropy 0.

    Args:
        probabilities: Non-negative weights, shape (N,).
        epsilon: Sums below this count as zero; also the floor inside the log.

    Returns:
        ``-sum(p * ln p)``, between 0 and ``ln N``.

    Raises:
        ValueError: If an entry is negative or not finite, or the input is not 1-D.
    """
    p = check_real_array("probabilities", probabilities, finite=False, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"probabilities have shape {p.shape}: expected a 1-D array")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"probabilities {p.tolist()} are invalid: expected finite values >= 0")
    epsilon = _check_epsilon(epsilon)
    total = float(p.sum())
    if total < epsilon:
        return 0.0
    p = p / total
    entropy = -float((p * np.log(np.maximum(p, epsilon))).sum())
    return entropy + 0.0  # turns -0.0 (a pure strategy) into 0.0
