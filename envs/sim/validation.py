"""Argument checks that name the field, the value and what is allowed.

Public entry points validate their input with these helpers wherever one fits, so
that error messages read the same everywhere: ``{name}={value} is invalid: expected
{what is allowed}``. Checks that belong to one class (an agent name, a policy's
activation, a checkpoint's contents) are written beside it, in the same words.
"""

from __future__ import annotations

import math
import numbers
import os
import reprlib
from collections.abc import Collection, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from envs.sim.constants import MAP_SIZE_RANGE, NUM_CURRICULUM_LEVELS, SEED_BOUND

GIB = 2**30
MAX_ID_LENGTH = 200
"""Longest agent or match id, in characters."""
MAX_PATH_BYTES = 4095
MAX_NAME_BYTES = 255
"""Longest file path and file name, in bytes (the usual Linux limits; longer ones fail
inside the operating system with errors that do not name the argument)."""

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = 6


def short_repr(value: Any) -> str:
    """``repr(value)``, shortened for error messages (huge strings and lists stay short)."""
    try:
        text = _REPR.repr(value)
    except Exception:  # an object whose repr fails, an int too long to print
        return f"<{type(value).__name__} object>"
    return " ".join(text.split()) if "\n" in text else text  # arrays print on one line


def format_count(n: int) -> str:
    """A count for a message, even one too large to print or to turn into a float."""
    if n < 10**15:
        return f"{n:,}"
    return f"10**{len(str(n)) - 1}" if n < 10**4000 else "more than 10**4000"


def _gib(n_bytes: int) -> str:
    """``n_bytes`` in GiB for a message."""
    gib = int(n_bytes) // GIB
    return f"{n_bytes / GIB:,.1f}" if gib < 10**15 else format_count(gib)


def _fail(name: str, value: Any, allowed: str, exc: type[Exception] = ValueError) -> None:
    raise exc(f"{name}={short_repr(value)} is invalid: expected {allowed}")


def check_bool(name: str, value: Any) -> bool:
    """``True`` or ``False`` (a NumPy bool too); never truthiness (``"false"`` is refused)."""
    if not isinstance(value, (bool, np.bool_)):
        _fail(name, value, "true or false")
    return bool(value)


def check_choice(name: str, value: Any, choices: Collection[Any]) -> Any:
    """One of ``choices``, compared by type and value (so ``1`` is not ``True`` and an
    array is never compared element-wise)."""
    for choice in choices:
        if type(value) is type(choice) and value == choice:
            return value
    _fail(name, value, "one of " + ", ".join(repr(c) for c in choices))


def check_number(name: str, value: Any) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _fail(name, value, "a finite number")
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range
        number = math.inf
    if not math.isfinite(number):
        _fail(name, value, "a finite number")
    return number


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


def check_scripted_level(name: str, value: Any) -> int:
    """A scripted commander's level: an integer in 1 to
    :data:`~envs.sim.constants.NUM_CURRICULUM_LEVELS`."""
    return check_int(name, value, minimum=1, maximum=NUM_CURRICULUM_LEVELS)


def check_scripted_levels(name: str, value: Any, count: int) -> np.ndarray:
    """One scripted level, or one per battle, as a read-only (count,) int8 array.

    Raises:
        ValueError: naming ``name`` unless ``value`` is an integer, or ``count``
            integers, each in 1 to :data:`~envs.sim.constants.NUM_CURRICULUM_LEVELS`.
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return _same_level(check_scripted_level(name, value), count)
    levels = np.asarray(value)
    allowed = (f"a scripted level in 1..{NUM_CURRICULUM_LEVELS}, or {count} of them "
               "(one per battle)")
    if levels.dtype.kind not in "iu" or levels.shape not in ((), (count,)):
        _fail(name, value, allowed)
    if levels.min() < 1 or levels.max() > NUM_CURRICULUM_LEVELS:
        _fail(name, value, allowed)
    return np.broadcast_to(levels.astype(np.int8), (count,))


@lru_cache(maxsize=64)
def _same_level(level: int, count: int) -> np.ndarray:
    """A read-only (count,) int8 array of ``level`` (asked for at every scripted step)."""
    levels = np.full(count, level, np.int8)
    levels.flags.writeable = False
    return levels


def check_real_array(name: str, value: Any, shape: tuple[int, ...] | None = None, *,
                     finite: bool = True, what: str = "finite numbers",
                     dtype: type[np.floating] = np.float32) -> np.ndarray:
    """Return ``value`` as a ``dtype`` array after checking its type, shape and values.

    Only real numeric data is accepted: integer or floating arrays (or nested lists of
    numbers). Strings, bytes, booleans, complex numbers, objects and ragged lists
    raise ``ValueError`` naming ``name`` rather than being converted.

    Args:
        name: the argument's name, for the message.
        value: the array-like to check.
        shape: the exact shape required, or None for any shape.
        finite: also require every entry to be finite in ``dtype``.
        what: what is allowed, for the message about non-finite entries.
        dtype: the floating dtype of the result.
    """
    if isinstance(value, np.ndarray) and value.dtype == dtype:
        array = value  # the fast path of every env step
    else:
        if value is None or isinstance(value, (str, bytes, Mapping)):
            _fail(name, value, f"a real numeric array{_of_shape(shape)}")
        try:
            array = np.asarray(value)
        except (TypeError, ValueError, OverflowError, RuntimeError):  # ragged, torch grads...
            _fail(name, value, f"a real numeric array{_of_shape(shape)}")
        if array.dtype.kind not in "iuf":
            raise ValueError(
                f"{name}={short_repr(value)} is invalid: it has dtype {array.dtype}; expected "
                f"a real numeric array{_of_shape(shape)} (int or float, not strings, "
                "booleans, complex numbers or objects)")
    if shape is not None and array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape}: expected shape {shape}")
    if array.dtype == dtype:
        converted = array
    else:
        with np.errstate(over="ignore", invalid="ignore"):  # overflow shows up as inf below
            converted = array.astype(dtype)
    if finite and not np.isfinite(converted).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(converted))[0])
        entry = array[bad].item()
        beyond = f" (beyond the {np.dtype(dtype).name} range)" if math.isfinite(entry) else ""
        raise ValueError(
            f"{name} contains a non-finite value {entry!r}{beyond} at index {bad}: "
            f"expected {what}"
        )
    return converted


def _of_shape(shape: tuple[int, ...] | None) -> str:
    return "" if shape is None else f" of shape {shape}"


def check_action_array(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Return ``value`` as a float32 array of ``shape`` with only finite real entries."""
    return check_real_array(name, value, shape,
                            what="finite numbers (values outside the action box are clipped)")


def check_seed(name: str, value: Any, *, count: int = 1) -> int | None:
    """None, or an integer in ``[0, SEED_BOUND - count + 1)`` as a Python int.

    ``count`` is the number of consecutive seeds ``value, value + 1, ...`` the
    caller derives from it (one per battle of a batch); all must be below the bound.
    """
    if value is None:
        return None
    top = SEED_BOUND - count
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not (
            0 <= int(value) <= top):
        bound = "2**63" if count == 1 else f"2**63 - {count - 1}"
        _fail(name, value, f"None or an integer in [0, {bound})")
    return int(value)


def check_options(name: str, value: Any, allowed: Collection[str] = ()) -> dict[str, Any]:
    """None (as ``{}``) or a dict whose keys are all in ``allowed``; ``ValueError`` names
    the first unknown key."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        _fail(name, value, "None or a dict")
    for key in value:
        if key not in allowed:
            known = ", ".join(repr(k) for k in allowed) if allowed else "none are defined"
            raise ValueError(f"{name} key {short_repr(key)} is invalid: expected only the "
                             f"documented keys ({known})")
    return dict(value)


def check_keywords(name: str, value: Any, allowed: Collection[str], what: str,
                   note: str = "") -> dict[str, Any]:
    """None (as ``{}``) or a dict whose keys are all in ``allowed``, copied.

    Args:
        name: the argument's name, for the messages.
        value: the argument.
        allowed: the keys it may have.
        what: what its keys are, for the message (``"BattalionEnv settings"``).
        note: added to the message of an unknown key.

    Raises:
        ValueError: for anything but None or a dict, or an unknown key (named).
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected None or a dict of "
                         f"{what}")
    for key in value:
        if key not in allowed:
            raise ValueError(f"{name} key {short_repr(key)} is invalid: expected some of "
                             f"{', '.join(allowed)}{note}")
    return dict(value)


def check_map_size(name: str, value: Any) -> float:
    """A map side in metres within :data:`~envs.sim.constants.MAP_SIZE_RANGE`."""
    low, high = MAP_SIZE_RANGE
    number = check_number(name, value)
    if not low <= number <= high:
        _fail(name, value, f"a map side in metres in [{low:g}, {high:g}]")
    return number


def check_identifier(name: str, value: Any) -> str:
    """A printable, non-blank string of at most :data:`MAX_ID_LENGTH` characters.

    Ids end up in JSON files, log lines and file names: a newline, NUL or other
    control character would corrupt them or hide one id behind another.
    """
    if not isinstance(value, str) or not value.strip():
        _fail(name, value, "a non-empty string")
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        _fail(name, value, f"printable characters only (found {bad!r})")
    if len(value) > MAX_ID_LENGTH:
        _fail(name, value, f"at most {MAX_ID_LENGTH} characters (got {len(value)})")
    return value


def check_path(name: str, value: Any) -> Path:
    """A file path: a non-empty ``str`` or ``os.PathLike`` of text without NUL characters."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        _fail(name, value, "a non-empty file path (str or os.PathLike)")
    if "\0" in value:
        _fail(name, value, "a file path without NUL characters")
    try:
        encoded = os.fsencode(value)
    except UnicodeError:
        _fail(name, value, "a file path the file system can encode")
    if len(encoded) > MAX_PATH_BYTES or any(
            len(os.fsencode(part)) > MAX_NAME_BYTES for part in Path(value).parts):
        _fail(name, value, f"a file path of at most {MAX_PATH_BYTES} bytes whose parts are at "
              f"most {MAX_NAME_BYTES} bytes long")
    return Path(value)


@cache
def memory_bytes() -> int | None:
    """Bytes of memory this process may use: physical memory, or the container's
    limit when lower; None when the system does not say."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max",
                       "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def check_memory(subject: str, n_bytes: float, what: str, *,
                 expected: str | None = None) -> None:
    """Raise ``ValueError`` if ``n_bytes`` would not fit in this machine's memory.

    The message reads ``{subject} is invalid: {what} would need about X GiB of
    memory, more than the Y GiB this machine has`` and ends with ``expected``
    (e.g. ``"at most 2000000"``) when given.
    """
    limit = memory_bytes()
    if limit is None or n_bytes <= limit:
        return
    tail = f": expected {expected}" if expected else ""
    raise ValueError(f"{subject} is invalid: {what} would need about {_gib(n_bytes)} GiB "
                     f"of memory, more than the {_gib(limit)} GiB this machine has{tail}")


def check_count_fits(name: str, value: int, bytes_each: int, what: str) -> int:
    """``value`` items of ``bytes_each`` bytes must fit in memory (``ValueError`` naming
    ``name``, the GiB needed and the largest count that fits)."""
    limit = memory_bytes()
    fits = None if limit is None else limit // bytes_each
    check_memory(f"{name}={short_repr(value)}", value * bytes_each,
                 f"{format_count(value)} {what}",
                 expected=None if not fits else f"at most {fits:,}")
    return value
