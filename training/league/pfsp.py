"""Prioritised Fictitious Self-Play (PFSP) weightings, selectable by name.

PFSP turns the focal agent's win rate ``x`` against each candidate opponent into a
sampling weight ``f(x)``; the weights are then normalised into probabilities
(:func:`pfsp_probabilities`). The named weightings (:func:`get_pfsp_weighting`:
``squared``, the default, ``variance``, ``linear``, ``linear_capped``) follow the
AlphaStar league pseudocode; the league's roles weigh with a temperature instead
(:func:`make_pfsp_weight_fn`: ``f_T(x) = max((1 - x) ** (1 / T), 0)``). A custom callable
``f(win_rate) -> weight`` may be used anywhere a name is accepted. Negative weights count
as 0, a NaN or infinite weight raises ``ValueError``, and weights summing to less than
:data:`UNIFORM_FALLBACK_THRESHOLD` give uniform sampling, as in AlphaStar. Every PFSP draw
of the league goes through :func:`pfsp_choice`. ``docs/league.md`` ("PFSP weightings")
tabulates the weightings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import numpy as np

WeightFn = Callable[[float], float]

#: Name of the weighting used when none is given.
DEFAULT_PFSP_WEIGHTING = "squared"

#: Below this total weight, sampling falls back to uniform (AlphaStar's threshold).
UNIFORM_FALLBACK_THRESHOLD = 1e-10


def pfsp_squared(win_rate: float) -> float:
    """Hard-first weighting ``(1 - x)^2`` (AlphaStar's f_hard with p=2)."""
    return (1.0 - win_rate) ** 2


def pfsp_variance(win_rate: float) -> float:
    """Even-match weighting ``x (1 - x)``, highest at a 50 % win rate."""
    return win_rate * (1.0 - win_rate)


def pfsp_linear(win_rate: float) -> float:
    """Linear hard-first weighting ``1 - x``."""
    return 1.0 - win_rate


def pfsp_linear_capped(win_rate: float) -> float:
    """Capped linear weighting ``min(0.5, 1 - x)``."""
    return min(0.5, 1.0 - win_rate)


def make_pfsp_weight_fn(temperature: float = 1.0) -> WeightFn:
    """PFSP with a temperature: ``f_T(w) = max((1 - w) ** (1 / T), 0)``.

    Args:
        temperature: ``T > 0``; 1 gives the linear ``1 - w`` (hard opponents first),
            smaller values sharpen it towards the hardest.

    Returns:
        The weighting ``f_T``.

    Raises:
        ValueError: if ``temperature`` is not a positive number.
    """
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or \
            not np.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature={temperature!r} is invalid: expected a number > 0")
    power = 1.0 / float(temperature)

    def weight(win_rate: float) -> float:
        return max((1.0 - win_rate) ** power, 0.0)

    return weight


#: Read-only registry of the named PFSP weightings.
PFSP_WEIGHTINGS: Mapping[str, WeightFn] = MappingProxyType(
    {
        "squared": pfsp_squared,
        "variance": pfsp_variance,
        "linear": pfsp_linear,
        "linear_capped": pfsp_linear_capped,
    }
)


def get_pfsp_weighting(weighting: str | WeightFn | None) -> WeightFn:
    """Resolve a weighting name, callable or ``None`` into a callable.

    Args:
        weighting: A name from :data:`PFSP_WEIGHTINGS`, a callable
            ``f(win_rate) -> weight``, or ``None`` for the default
            (``"squared"``).

    Returns:
        The weighting callable.

    Raises:
        ValueError: If ``weighting`` is an unknown name.
        TypeError: If ``weighting`` is neither a string, a callable nor None.
    """
    if weighting is None:
        return PFSP_WEIGHTINGS[DEFAULT_PFSP_WEIGHTING]
    if isinstance(weighting, str):
        try:
            return PFSP_WEIGHTINGS[weighting]
        except KeyError:
            allowed = ", ".join(sorted(PFSP_WEIGHTINGS))
            raise ValueError(
                f"PFSP weighting={weighting!r} is unknown: expected one of {allowed}, "
                "a callable f(win_rate) -> weight, or None for the default "
                f"({DEFAULT_PFSP_WEIGHTING!r})"
            ) from None
    if callable(weighting):
        return weighting
    raise TypeError(
        f"PFSP weighting={weighting!r} has type {type(weighting).__name__}: expected a name "
        f"({', '.join(sorted(PFSP_WEIGHTINGS))}), a callable or None"
    )


def pfsp_probabilities(
    win_rates: Sequence[float] | np.ndarray,
    weighting: str | WeightFn | None = None,
    *,
    labels: Sequence[str] | None = None,
) -> np.ndarray:
    """Turn win rates into PFSP sampling probabilities.

    Each weight is ``max(f(x), 0)``. If the weights sum to less than
    ``1e-10`` the result is uniform.

    Args:
        win_rates: The focal agent's win rate against each candidate, in [0, 1].
        weighting: Weighting name, callable, or ``None`` for ``"squared"``.
        labels: Optional candidate names, used only in error messages.

    Returns:
        Float64 probabilities of the same length, summing to 1 (empty input
        gives an empty array).

    Raises:
        ValueError: If a win rate is outside [0, 1] or not finite, the
            weighting name is unknown, or the weighting returns NaN/inf.
        TypeError: If the weighting returns a non-number.
    """
    fn = get_pfsp_weighting(weighting)
    rates = np.asarray(win_rates, dtype=np.float64).reshape(-1)
    n = rates.size
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    names = list(labels) if labels is not None else [f"#{i}" for i in range(n)]
    weights = np.empty(n, dtype=np.float64)
    for i, x in enumerate(rates.tolist()):
        if not (0.0 <= x <= 1.0):
            raise ValueError(
                f"win rate for candidate {names[i]} is {x!r}: expected a number in [0, 1]"
            )
        w = fn(x)
        try:
            w = float(w)
        except (TypeError, ValueError):
            raise TypeError(
                f"PFSP weighting {getattr(fn, '__name__', fn)!r} returned {w!r} for win rate "
                f"{x} (candidate {names[i]}): expected a real number"
            ) from None
        if not math.isfinite(w):
            raise ValueError(
                f"PFSP weighting {getattr(fn, '__name__', fn)!r} returned {w} for win rate "
                f"{x} (candidate {names[i]}): expected a finite number"
            )
        weights[i] = max(w, 0.0)
    total = float(weights.sum())
    if total < UNIFORM_FALLBACK_THRESHOLD:
        return np.full(n, 1.0 / n)
    return weights / total


def pfsp_choice(
    win_rates: Sequence[float] | np.ndarray,
    weighting: str | WeightFn | None = None,
    rng: np.random.Generator | int | None = None,
    *,
    labels: Sequence[str] | None = None,
) -> int | None:
    """Draw one candidate by PFSP: the index of the candidate, or None when there is none.

    The probabilities are :func:`pfsp_probabilities`'; the draw is one
    ``choice`` of the generator (none when ``win_rates`` is empty), so that every PFSP
    draw of the league takes the same numbers from a generator.

    Args:
        win_rates: The focal agent's win rate against each candidate, in [0, 1].
        weighting: Weighting name, callable, or ``None`` for ``"squared"``.
        rng: A generator (drawn from) or a seed (a fresh generator when None).
        labels: Optional candidate names, used only in error messages.

    Raises:
        ValueError, TypeError: as :func:`pfsp_probabilities`.
    """
    probabilities = pfsp_probabilities(win_rates, weighting, labels=labels)
    if probabilities.size == 0:
        return None
    return int(np.random.default_rng(rng).choice(probabilities.size, p=probabilities))
