"""Nash solver: known games, certified exploitability, fallback reporting, validation."""

from __future__ import annotations

import logging
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.optimize

from training.league import (
    NashSolution,
    build_payoff_matrix,
    compute_nash_distribution,
    exploitability,
    nash_entropy,
    solve_nash,
)

LOGGER = "training.league.nash"

# Rock, paper, scissors in win-rate form: row beats column with probability M[i, j].
RPS = np.array([[0.5, 0.0, 1.0], [1.0, 0.5, 0.0], [0.0, 1.0, 0.5]])


def random_antisymmetric(n: int, seed: int) -> np.ndarray:
    """A random symmetric win-rate game: M = 0.5 + A with A antisymmetric, M in [0, 1]."""
    upper = np.triu(np.random.default_rng(seed).uniform(0.0, 1.0, (n, n)), 1)
    matrix = upper + np.tril(1.0 - upper.T, -1)
    np.fill_diagonal(matrix, 0.5)
    return matrix


def check_certificate(matrix: np.ndarray, solution: NashSolution) -> None:
    """The reported numbers obey the documented definitions."""
    sigma = solution.distribution
    assert sigma.shape == (matrix.shape[0],)
    assert np.all(sigma >= 0) and sigma.sum() == pytest.approx(1.0, abs=1e-12)
    assert solution.guaranteed_value == pytest.approx((sigma @ matrix).min(), abs=1e-12)
    assert solution.exploitability == pytest.approx(
        max(solution.value - solution.guaranteed_value, 0.0), abs=1e-15)


@pytest.mark.parametrize("use_lp", [True, False])
def test_rock_paper_scissors_is_uniform(use_lp: bool) -> None:
    solution = solve_nash(RPS, use_lp=use_lp)
    assert np.allclose(solution.distribution, 1 / 3, atol=1e-6)
    assert solution.solver == ("lp" if use_lp else "regret_matching")
    assert solution.value == 0.5  # symmetric game: exact
    assert solution.exploitability < 1e-6
    check_certificate(RPS, solution)
    # The same game in zero-sum form (-1, 0, 1) has value 0.
    zero_sum = solve_nash(2 * RPS - 1)
    assert np.allclose(zero_sum.distribution, 1 / 3) and abs(zero_sum.value) < 1e-12


def test_dominated_strategy_gets_zero() -> None:
    # Strategy 3 is strictly dominated by the uniform mix of 0-2 ([.5, .5, .5, .8]).
    matrix = np.array([
        [0.5, 0.0, 1.0, 0.9],
        [1.0, 0.5, 0.0, 0.8],
        [0.0, 1.0, 0.5, 0.7],
        [0.1, 0.2, 0.3, 0.5],
    ])
    for use_lp in (True, False):
        sigma = solve_nash(matrix, use_lp=use_lp).distribution
        assert sigma[3] == 0.0 if use_lp else sigma[3] < 1e-3
    assert np.allclose(solve_nash(matrix).distribution[:3], 1 / 3, atol=1e-9)
    dominant = np.array([[0.5, 0.6, 0.7], [0.4, 0.5, 0.6], [0.3, 0.4, 0.5]])
    assert np.array_equal(compute_nash_distribution(dominant), [1.0, 0.0, 0.0])


@pytest.mark.parametrize("seed", [0, 1])
def test_random_antisymmetric_50_has_tiny_exploitability(seed: int) -> None:
    matrix = random_antisymmetric(50, seed)
    solution = solve_nash(matrix)
    assert solution.solver == "lp" and solution.fallback_reason is None
    assert solution.exploitability < 1e-6
    assert solution.value == 0.5
    # Independent check: a symmetric game has value 1/2, so no column may push us below it.
    assert (solution.distribution @ matrix).min() > 0.5 - 1e-6
    assert not solution.degenerate
    check_certificate(matrix, solution)
    assert exploitability(matrix, solution.distribution) < 1e-6
    assert exploitability(matrix, np.eye(50)[0]) > 0.1  # a pure strategy is exploitable


def test_general_zero_sum_game_value_is_certified() -> None:
    matrix = np.random.default_rng(3).normal(size=(20, 20))  # not symmetric
    lp = solve_nash(matrix)
    rm = solve_nash(matrix, n_iterations=3000, use_lp=False)
    check_certificate(matrix, lp)
    check_certificate(matrix, rm)
    assert lp.exploitability < 1e-7
    # The regret-matching value is an upper bound on the LP value, so its
    # reported exploitability never understates the true one.
    assert rm.value >= lp.guaranteed_value - 1e-9
    true_gap = lp.value - rm.guaranteed_value
    assert rm.exploitability >= true_gap - 1e-7
    assert 0.0 < rm.exploitability < 0.1


def test_regret_matching_without_lp_reports_itself(caplog) -> None:
    matrix = random_antisymmetric(30, 4)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        solution = solve_nash(matrix, n_iterations=2000, use_lp=False)
    assert solution.solver == "regret_matching"
    assert solution.iterations == 2000 and solution.fallback_reason == "use_lp=False"
    assert 0.0 < solution.exploitability < 0.05
    check_certificate(matrix, solution)
    assert "solver=regret_matching" in caplog.text and "exploitability=" in caplog.text
    assert all(r.levelno == logging.INFO for r in caplog.records)  # requested, not a fallback


def _failing_linprog(*args, **kwargs):
    return SimpleNamespace(status=2, x=None, message="The problem is infeasible. (test)")


def _crashing_linprog(*args, **kwargs):
    raise RuntimeError("HiGHS exploded (test)")


@pytest.mark.parametrize(
    ("fake", "reason"),
    [(_failing_linprog, "status 2"), (_crashing_linprog, "RuntimeError: HiGHS exploded")],
)
def test_lp_failure_falls_back_loudly(monkeypatch, caplog, fake, reason) -> None:
    monkeypatch.setattr(scipy.optimize, "linprog", fake)
    matrix = random_antisymmetric(20, 5)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        solution = solve_nash(matrix, n_iterations=3000)
    assert solution.solver == "regret_matching"
    assert reason in solution.fallback_reason
    assert np.isfinite(solution.exploitability) and 0.0 < solution.exploitability < 0.05
    check_certificate(matrix, solution)

    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        probs = compute_nash_distribution(matrix, n_iterations=3000)
    assert np.array_equal(probs, solution.distribution)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "fell back to regret matching" in message and reason in message
    assert f"exploitability={solution.exploitability:.3g}" in message


def test_missing_scipy_falls_back(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "scipy", None)
    solution = solve_nash(RPS, n_iterations=500)
    assert solution.solver == "regret_matching" and "SciPy" in solution.fallback_reason
    assert np.allclose(solution.distribution, 1 / 3, atol=1e-3)


def test_lp_success_is_logged_with_its_gap(caplog) -> None:
    with caplog.at_level(logging.INFO, logger=LOGGER):
        compute_nash_distribution(RPS)
    assert "solver=lp" in caplog.text and "exploitability=" in caplog.text


def test_many_equilibria_choose_the_most_uniform() -> None:
    # No match data yet: every entry 0.5, every distribution is an equilibrium.
    flat = solve_nash(np.full((5, 5), 0.5))
    assert flat.degenerate and np.allclose(flat.distribution, 0.2)
    # Rock-paper-scissors plus two agents nobody has played.
    matrix = np.full((5, 5), 0.5)
    matrix[:3, :3] = RPS
    solution = solve_nash(matrix)
    assert solution.degenerate and solution.exploitability < 1e-9
    assert np.allclose(solution.distribution, 0.2)


def test_trivial_sizes() -> None:
    assert np.array_equal(compute_nash_distribution([[0.5]]), [1.0])
    assert np.array_equal(compute_nash_distribution([[0.5]], use_lp=False), [1.0])


@pytest.mark.parametrize(
    ("matrix", "match"),
    [
        (np.zeros((2, 3)), r"shape \(2, 3\)"),
        (np.zeros((0, 0)), "non-empty"),
        (np.zeros(3), r"shape \(3,\)"),
        (np.array([[0.5, np.nan], [0.5, 0.5]]), r"\[0, 1\] is nan"),
        (np.array([[0.5, np.inf], [0.5, 0.5]]), "finite"),
        ([["a", "b"], ["c", "d"]], "payoff=.*dtype <U1"),
    ],
)
def test_invalid_matrices_are_rejected(matrix, match) -> None:
    with pytest.raises(ValueError, match=match):
        compute_nash_distribution(matrix)


def test_invalid_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="n_iterations=0"):
        solve_nash(RPS, n_iterations=0)
    with pytest.raises(ValueError, match="epsilon=-1"):
        solve_nash(RPS, epsilon=-1)


def test_build_payoff_matrix() -> None:
    rates = {("a", "b"): 0.8, ("c", "a"): 0.3}
    matrix = build_payoff_matrix(["a", "b", "c"], lambda x, y: rates.get((x, y)),
                                 unknown_win_rate=0.4)
    expected = np.array([
        [0.5, 0.8, 0.7],  # a vs c: 1 - wr(c, a)
        [0.2, 0.5, 0.4],  # b vs c: unknown
        [0.3, 0.4, 0.5],
    ])
    assert np.allclose(matrix, expected)
    with pytest.raises(ValueError, match=r"win_rate_fn\('a', 'b'\) returned 1\.2"):
        build_payoff_matrix(["a", "b"], lambda x, y: 1.2)
    with pytest.raises(ValueError, match="repeat"):
        build_payoff_matrix(["a", "a"], lambda x, y: None)
    with pytest.raises(TypeError, match="string"):
        build_payoff_matrix("ab", lambda x, y: None)
    with pytest.raises(ValueError, match="unknown_win_rate"):
        build_payoff_matrix(["a"], lambda x, y: None, unknown_win_rate=2)


def test_nash_entropy() -> None:
    assert nash_entropy([1 / 3, 1 / 3, 1 / 3]) == pytest.approx(np.log(3))
    assert nash_entropy([2.0, 2.0]) == pytest.approx(np.log(2))  # normalised first
    assert nash_entropy([1.0, 0.0, 0.0]) == 0.0
    assert str(nash_entropy([1.0, 0.0])) == "0.0"  # not -0.0
    assert nash_entropy([0.0, 0.0]) == 0.0
    with pytest.raises(ValueError, match="finite values >= 0"):
        nash_entropy([0.5, -0.1])
    with pytest.raises(ValueError, match="1-D"):
        nash_entropy([[0.5]])


# --- silent acceptance ---------------------------------------------------------------------

def test_regret_matching_iterations_are_bounded() -> None:
    from training.league.nash import MAX_REGRET_ITERATIONS

    for use_lp in (True, False):  # refused even when the LP would not need them
        with pytest.raises(ValueError, match=r"n_iterations=1000000000000 is invalid: expected "
                                             r"an int in \[1, 1_000_000\]"):
            compute_nash_distribution(RPS, n_iterations=10**12, use_lp=use_lp)
    assert MAX_REGRET_ITERATIONS == 1_000_000


@pytest.mark.parametrize("payoff", [np.full((2, 2), 0.5, dtype=complex),
                                    np.full((2, 2), True), np.full((2, 2), "0.5")])
def test_payoffs_must_be_real_numbers(payoff) -> None:
    with pytest.raises(ValueError, match="payoff=.* dtype"):
        compute_nash_distribution(payoff)


def test_use_lp_must_be_a_boolean() -> None:
    with pytest.raises(ValueError, match="use_lp='false' is invalid"):
        compute_nash_distribution(RPS, use_lp="false")
