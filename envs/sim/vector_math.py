"""Float32 functions the kernels call inside loops over battles, written so that LLVM
vectorises them across SIMD lanes.

A loop over battles that calls libm's ``cosf``/``sinf`` is compiled with one scalar
call per battle, and a call under a branch stops the loop from vectorising at all.
These use only arithmetic and selects. :func:`sincos` is accurate to about one unit in
the last place for the angles the engine keeps (headings in [0, 2*pi)), as libm's is,
so it may round differently from libm in the last bit now and then.
"""

from __future__ import annotations

import numpy as np

from envs.sim.jit import kernel

F32 = np.float32

# Cody-Waite reduction by pi/4 in three parts (the first two exact in float32), and the
# minimax polynomials of sin and cos on [-pi/4, pi/4] (the classic single-precision ones).
_FOUR_OVER_PI = F32(4 / np.pi)
_PI4_A, _PI4_B, _PI4_C = F32(0.78515625), F32(2.4187564849853515625e-4), F32(3.77489497744594108e-8)
_S1, _S2, _S3 = F32(-1.9515295891e-4), F32(8.3321608736e-3), F32(-1.6666654611e-1)
_C1, _C2, _C3 = F32(2.443315711809948e-5), F32(-1.388731625493765e-3), F32(4.166664568298827e-2)


@kernel(inline="always")
def sincos(x):
    """``(cos(x), sin(x))`` of a float32 angle in [-8192, 8192] radians (the range the
    three-part reduction is exact for; headings are in [0, 2*pi))."""
    octant = np.int32(abs(x) * _FOUR_OVER_PI)
    octant = (octant + 1) & ~np.int32(1)  # the nearest multiple of pi/2, in octants
    y = F32(octant)
    r = ((abs(x) - y * _PI4_A) - y * _PI4_B) - y * _PI4_C
    z = r * r
    s = ((_S1 * z + _S2) * z + _S3) * z * r + r
    c = ((_C1 * z + _C2) * z + _C3) * z * z - F32(0.5) * z + F32(1)
    quadrant = (octant >> 1) & 3
    # Rotate (c, s) by the quadrant: 0 -> (c, s), 1 -> (-s, c), 2 -> (-c, -s), 3 -> (s, -c).
    odd = (quadrant & 1) == 1
    cos_x = s if odd else c
    sin_x = c if odd else s
    cos_x = -cos_x if (quadrant == 1) | (quadrant == 2) else cos_x
    sin_x = -sin_x if quadrant >= 2 else sin_x
    return cos_x, (-sin_x if x < F32(0) else sin_x)


# exp: 2**n * exp(r) with n = round(x / ln 2) and r = x - n ln 2 in [-ln2/2, ln2/2] (ln 2 in
# two parts, the first exact in float32), exp(r) by its degree-5 minimax polynomial.
_LOG2E = F32(1.44269504088896341)
_LN2_A, _LN2_B = F32(0.693359375), F32(-2.12194440e-4)
_E1, _E2, _E3 = F32(1.9875691500e-4), F32(1.3981999507e-3), F32(8.3334519073e-3)
_E4, _E5 = F32(4.1665795894e-2), F32(1.6666665459e-1)
_EXP_MIN = F32(-87.33)
"""Below this (about ln 2**-126) exp leaves the float32 normal range: the subnormal
result is flushed to 0."""


@kernel(inline="always")
def exp(x):
    """``exp(x)`` of a float32 ``x`` <= 0 (terrain's Gaussians), to about one unit in the
    last place; 0 where the result would be subnormal (below :data:`_EXP_MIN`)."""
    n = np.floor(x * _LOG2E + F32(0.5))
    r = (x - n * _LN2_A) - n * _LN2_B
    z = r * r
    p = ((((_E1 * r + _E2) * r + _E3) * r + _E4) * r + _E5) * z * r + F32(0.5) * z + r \
        + F32(1)
    bits = np.int32((np.int32(max(n, F32(-126))) + np.int32(127)) << np.int32(23))
    scale = bits.view(F32)
    return p * scale if x >= _EXP_MIN else F32(0)


# atan on [0, tan(pi/8)] as x + x^3 P(x^2) / Q(x^2) (the classic double-precision
# rational approximation), after reducing by pi/4 or pi/2 above tan(pi/8) and tan(3pi/8).
_TAN_3PI_8, _TAN_PI_8 = 2.41421356237309504880, 0.41421356237309504880
_PI_2, _PI_4 = np.pi / 2, np.pi / 4
_MORE_BITS = 6.123233995736765886130e-17
"""pi/2 minus its double, added back after the reduction."""
_P0, _P1, _P2 = -8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1
_P3, _P4 = -1.228866684490136173410e2, -6.485021904942025371773e1
_Q0, _Q1, _Q2 = 2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2
_Q3, _Q4 = 4.853903996359136964868e2, 1.945506571482613964425e2


@kernel(inline="always")
def atan2(y, x):
    """``arctan2(y, x)`` in float64 for finite ``y`` and ``x``, to about one unit in the
    last place, signed zeros included, as selects that vectorise."""
    ay, ax = abs(y), abs(x)
    # atan of t = ay / ax in [0, inf], then reflected into the right quadrant.
    t = ay / ax if ax > 0.0 else (np.inf if ay > 0.0 else 0.0)
    big = t > _TAN_3PI_8
    mid = (t > _TAN_PI_8) & (not big)
    r = -1.0 / t if big else ((t - 1.0) / (t + 1.0) if mid else t)
    base = _PI_2 if big else (_PI_4 if mid else 0.0)
    extra = _MORE_BITS if big else (0.5 * _MORE_BITS if mid else 0.0)
    z = r * r
    p = (((_P0 * z + _P1) * z + _P2) * z + _P3) * z + _P4
    q = ((((z + _Q0) * z + _Q1) * z + _Q2) * z + _Q3) * z + _Q4
    a = base + (r * (z * p / q) + r + extra)
    a = np.pi - a if np.signbit(x) else a
    return np.copysign(a, y)


@kernel(inline="always")
def wrap_angle(a, period):
    """``np.remainder(a, period)`` for ``a`` in [-period, 2 * period), as selects: the one
    subtraction or addition rounds as NumPy's does, and -0 becomes +0 as there. A heading
    in [0, 2*pi) turned by at most pi (``max_turn_rate``'s bound) stays in that range."""
    r = a - period if a >= period else (a + period if a < F32(0) else a)
    return r + F32(0)


__all__ = ["atan2", "exp", "sincos", "wrap_angle"]
