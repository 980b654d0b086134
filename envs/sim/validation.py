"""Argument checks that name the field, the value and what is allowed.

Every public entry point of the project validates its input with these helpers so
that error messages read the same everywhere.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def _fail(name: str, value: Any, allowed: str, exc: type[Exception] = ValueError) -> None:
    raise exc(f"{name}={value!r} is invalid: expected {allowed}")


def check_number(name: str, value: Any) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        _fail(name, value, "a finite number")
    return float(value)


def check_positive(name: str, value: Any) -> float:
    """A finite number > 0."""
    number = check_number(name, value)
    if number <= 0:
        _fail(name, value, "a number > 0")
    return number


def check_non_negative(name: str, value: Any) -> float:
    """A finite number >= 0."""
    number = check_number(name, value)
    if number < 0:
        _fail(name, value, "a number >= 0")
    return number


def check_in_range(
    name: str, value: Any, low: float, high: float, *, low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite number in the interval given by ``low``/``high`` and openness flags."""
    number = check_number(name, value)
    too_low = number <= low if low_open else number < low
    too_high = number >= high if high_open else number > high
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        _fail(name, value, f"a number in {left}{low}, {high}{right}")
    return number


def check_int(name: str, value: Any, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """An integer (not a bool) within the optional inclusive bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(name, value, "an integer")
    number = int(value)
    if minimum is not None and number < minimum:
        bound = f"<= {maximum}" if maximum is not None else ""
        _fail(name, value, f"an integer >= {minimum}" + (f" and {bound}" if bound else ""))
    if maximum is not None and number > maximum:
        _fail(name, value, f"an integer <= {maximum}" + (
            f" and >= {minimum}" if minimum is not None else ""))
    return number


def check_action_array(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Return ``value`` as a float32 array of ``shape`` with only finite entries."""
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        _fail(name, value, f"a numeric array of shape {shape}")
    if array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape}: expected shape {shape}")
    if not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ValueError(
            f"{name} contains a non-finite value {array[tuple(bad)]!r} at index {tuple(bad)}: "
            "expected finite numbers (values outside the action box are clipped)"
        )
    return array
