"""MAPPO policies on disk: :func:`save_policy` writes ``{"kwargs", "state_dict", ...}``
atomically, :func:`load_policy` and :func:`policy_from_kwargs` rebuild the policy from
tensors and plain values only (``weights_only=True``), its size checked first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from envs.sim.validation import short_repr
from models.limits import check_architecture
from models.mappo_policy import POLICY_FILE_KEYS, MAPPOPolicy
from models.weights import check_module_size, load_weights, save_weights


def save_policy(policy: MAPPOPolicy, path: str | os.PathLike, **extra: Any) -> Path:
    """Write ``policy`` to ``path`` atomically as ``{"kwargs", "state_dict", **extra}``.

    Tensors are stored on the CPU. ``extra`` values should be plain values
    (numbers, strings, lists, dicts, tensors) so that :func:`load_policy` can
    read the file with ``weights_only=True``.

    Args:
        policy: the policy to save.
        path: the file to write (folders are created).
        **extra: additional entries, e.g. ``version=3``.

    Returns:
        The path written.

    Raises:
        TypeError: if ``policy`` is not a MAPPOPolicy.
        ValueError: if ``extra`` uses a reserved key (``kwargs``, ``state_dict``).
    """
    if not isinstance(policy, MAPPOPolicy):
        raise TypeError(f"policy={type(policy).__name__} is invalid: expected a MAPPOPolicy")
    reserved = sorted(set(extra) & set(POLICY_FILE_KEYS))
    if reserved:
        raise ValueError(f"extra keys {reserved} are invalid: {list(POLICY_FILE_KEYS)} are "
                         "reserved for the policy itself")
    path = Path(path)
    state = {key: value.detach().cpu() for key, value in policy.state_dict().items()}
    return save_weights(path, {"kwargs": policy.kwargs, "state_dict": state, **extra})


def load_policy(path: str | os.PathLike,
                device: str | torch.device | None = None) -> MAPPOPolicy:
    """Rebuild a policy written by :func:`save_policy`, in eval mode.

    Only tensors and plain values are read (``torch.load(weights_only=True)``).

    Args:
        path: the policy file.
        device: where to put the policy (default CPU).

    Returns:
        The policy, in eval mode.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        UntrustedCheckpointError: if it holds pickled objects (a ``ValueError``).
        ValueError: if the file is not a MAPPO policy file (unreadable, special,
            too large, missing keys, invalid constructor arguments, a network
            larger than its weights, or weights of the wrong shapes).
    """
    path = Path(path)
    device = torch.device(device) if device is not None else torch.device("cpu")
    data = load_weights(path, "MAPPO policy file", device)
    if not isinstance(data, dict) or any(key not in data for key in POLICY_FILE_KEYS):
        found = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path} is not a MAPPO policy file: expected the keys "
                         f"{list(POLICY_FILE_KEYS)}, found {found}")
    kwargs, state_dict = data["kwargs"], data["state_dict"]
    policy = policy_from_kwargs(kwargs, state_dict, f"MAPPO policy file {path}")
    return policy.to(device).eval()


def policy_from_kwargs(kwargs: Any, state_dict: Any, what: str) -> MAPPOPolicy:
    """A MAPPOPolicy built from a file's constructor arguments and weights, both checked
    like user input (the architecture's bounds, :mod:`models.limits`, and the network's
    size are checked before it is built).

    Raises:
        ValueError: naming ``what``, for arguments or weights that do not make a policy
            (an architecture field past its bound names the field, value and limit).
    """
    if not isinstance(kwargs, dict) or not isinstance(state_dict, dict):
        raise ValueError(f"{what} is not a MAPPO policy: 'kwargs' and 'state_dict' must "
                         "be dicts")
    check_architecture(kwargs, what)  # before anything is built, even on meta
    try:
        check_module_size(lambda: MAPPOPolicy(**kwargs), state_dict, what)
        policy = MAPPOPolicy(**kwargs)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} holds invalid MAPPOPolicy arguments {short_repr(kwargs)}: "
                         f"{error}") from None
    try:
        policy.load_state_dict(state_dict)
    except RuntimeError as error:
        raise ValueError(f"{what} holds weights that do not fit its MAPPOPolicy arguments "
                         f"{short_repr(kwargs)}: {error}") from None
    return policy


__all__ = ["load_policy", "policy_from_kwargs", "save_policy"]
