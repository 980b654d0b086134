"""The kernels' own float32 functions (envs/sim/vector_math.py) hold the accuracy the
battle model's docs state, over the inputs the engine gives them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from envs.sim.config import BattleConfig
from envs.sim.vector_math import atan2, exp, sincos, wrap_angle

F32 = np.float32


@njit
def _sincos_all(x):
    cos, sin = np.empty_like(x), np.empty_like(x)
    for i in range(x.shape[0]):
        cos[i], sin[i] = sincos(x[i])
    return cos, sin


@njit
def _exp_all(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = exp(x[i])
    return out


@njit
def _atan2_all(y, x):
    out = np.empty_like(y)
    for i in range(y.shape[0]):
        out[i] = atan2(y[i], x[i])
    return out


@njit
def _wrap_all(a, period):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = wrap_angle(a[i], period)
    return out


def _ulps(values: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Errors in units of the float32 spacing at the exact value."""
    return np.abs(values.astype(np.float64) - exact) / np.spacing(
        np.abs(exact).astype(F32)).astype(np.float64)


RNG = np.random.default_rng(0)


def test_sincos_is_within_one_and_a_half_ulp_over_headings_and_turns():
    x = np.concatenate([RNG.uniform(-math.pi, 3 * math.pi, 200_000),
                        [0.0, -0.0, math.pi / 2, math.pi, 2 * math.pi]]).astype(F32)
    cos, sin = _sincos_all(x)
    # Near a zero of the function the float32 spacing vanishes: compare absolutely there.
    for got, exact in ((cos, np.cos(x.astype(np.float64))), (sin, np.sin(x.astype(np.float64)))):
        away = np.abs(exact) > 1e-3
        assert _ulps(got[away], exact[away]).max() <= 1.5
        assert np.abs(got - exact).max() <= 1e-7


def test_exp_is_within_one_ulp_and_flushes_only_subnormal_results():
    x = np.concatenate([-RNG.uniform(0, 87.3, 200_000), [0.0, -1e-9]]).astype(F32)
    assert _ulps(_exp_all(x), np.exp(x.astype(np.float64))).max() <= 1.0
    assert _exp_all(np.array([-87.5, -200.0], F32)).tolist() == [0.0, 0.0]


def test_atan2_is_within_a_few_ulp_with_numpys_signed_zeros():
    angle = RNG.uniform(-math.pi, math.pi, 200_000)
    radius = RNG.uniform(1e-3, 2.0, 200_000)
    y, x = radius * np.sin(angle), radius * np.cos(angle)
    exact = np.arctan2(y, x)
    assert (np.abs(_atan2_all(y, x) - exact) / np.spacing(np.abs(exact))).max() <= 4
    zeros = np.array([0.0, -0.0])
    ys, xs = np.repeat(zeros, 2), np.tile(zeros, 2)
    assert np.array_equal(np.signbit(_atan2_all(ys, xs)), np.signbit(np.arctan2(ys, xs)))
    assert np.array_equal(_atan2_all(ys, xs), np.arctan2(ys, xs))


def test_wrap_angle_is_numpys_remainder_for_a_heading_turned_by_up_to_pi():
    two_pi = F32(2 * math.pi)
    a = np.concatenate([RNG.uniform(-math.pi, 3 * math.pi, 200_000),
                        [-1e-9, -0.0, 0.0, 2 * math.pi, -math.pi]]).astype(F32)
    wrapped = _wrap_all(a, two_pi)
    expected = np.remainder(a, two_pi)
    assert np.array_equal(wrapped, expected)
    assert not np.signbit(wrapped).any()


@pytest.mark.parametrize("rate", [0.0, -0.1, math.pi + 0.01])
def test_a_turn_rate_beyond_half_a_turn_is_refused(rate):
    with pytest.raises(ValueError, match="max_turn_rate"):
        BattleConfig(max_turn_rate=rate)
    assert BattleConfig(max_turn_rate=math.pi).max_turn_rate == math.pi
