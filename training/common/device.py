"""The torch device a trainer runs on, from a config's ``device`` setting.

Every trainer (SB3 PPO, MAPPO, WFM-1, the brigade and division commanders) turns its
``device`` into a :class:`torch.device` with :func:`resolve_device`, so a machine
without CUDA answers ``device="cuda"`` with a clear error instead of a silent CPU run
or torch's bare assertion deep inside the first ``.to()``.
"""

from __future__ import annotations

import re
from typing import Any

import torch

ALLOWED = "'auto', 'cpu', 'cuda' or 'cuda:<index>'"
"""The device names a config accepts, as error messages list them."""

_CUDA = re.compile(r"cuda(?::(\d+))?")


def check_device_name(field: str, value: Any) -> str:
    """``value`` if it names a device a config accepts (:data:`ALLOWED`), whether or not
    this machine has it.

    Raises:
        ValueError: naming ``field`` and ``value`` otherwise.
    """
    if not isinstance(value, str) or (value not in ("auto", "cpu")
                                      and _CUDA.fullmatch(value) is None):
        raise ValueError(f"{field}={value!r} is invalid: expected {ALLOWED}")
    return value


def resolve_device(value: Any, *, field: str = "device") -> torch.device:
    """The torch device a config's ``field`` names: ``"auto"`` is CUDA when this machine
    has it, else the CPU.

    Parameters:
        value: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``.
        field: the setting's name, for the error message.

    Returns:
        The device to put the policy, its rollouts and its updates on.

    Raises:
        ValueError: if ``value`` names no device (:data:`ALLOWED`), or a CUDA device
            this machine does not have.
    """
    name = check_device_name(field, value)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"{field}={value!r} is invalid: CUDA is not available on this "
                         "machine; use 'cpu' or 'auto'")
    index = _CUDA.fullmatch(name).group(1)
    if index is not None and int(index) >= torch.cuda.device_count():
        raise ValueError(f"{field}={value!r} is invalid: this machine has "
                         f"{torch.cuda.device_count()} CUDA device(s), indexed from 0")
    return torch.device(name)


__all__ = ["ALLOWED", "check_device_name", "resolve_device"]
