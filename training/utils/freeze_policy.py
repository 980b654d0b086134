"""Freezing trained policies so that they act but never learn.

A frozen policy is one whose parameters all have ``requires_grad=False`` and whose
modules are in eval mode: a higher echelon that drives it, or a learner that plays
against it, cannot move its weights through a shared optimiser or a stray
``backward()``, and no layer behaves as in training. :func:`assert_frozen` checks
the first half (the parameters), which is what an optimiser could change.

The loaders read files without unpickling code: MAPPO files go through
:func:`models.weights.load_weights` (``torch.load(weights_only=True)``) and SB3
archives through :func:`training.ppo.checkpoints.load_ppo`, which refuses pickled
entries it cannot vouch for.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from envs.sim.validation import check_int, check_path
from models.mappo_files import policy_from_kwargs
from models.mappo_policy import MAPPOPolicy
from models.weights import load_weights

_DIM_FIELDS = ("obs_dim", "action_dim", "state_dim", "n_agents")


def freeze_mappo_policy(module: nn.Module) -> nn.Module:
    """Freeze a torch module (a :class:`~models.mappo_policy.MAPPOPolicy` or any other).

    Args:
        module: the module to freeze, in place.

    Returns:
        ``module``, with no parameter requiring gradients, in eval mode.

    Raises:
        TypeError: if ``module`` is not a ``torch.nn.Module``.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module={type(module).__name__} is invalid: expected a "
                        "torch.nn.Module (for an SB3 model use freeze_sb3_policy)")
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module.eval()


def freeze_sb3_policy(model: Any) -> Any:
    """Freeze the network of a Stable-Baselines3 model (``model.policy``).

    Args:
        model: an SB3 model such as ``PPO``, frozen in place.

    Returns:
        ``model``, whose policy has no parameter requiring gradients and is in eval mode.

    Raises:
        AttributeError: if ``model`` has no ``policy`` attribute (not an SB3 model).
        TypeError: if ``model.policy`` is not a ``torch.nn.Module``.
    """
    _sb3_policy(model)
    freeze_mappo_policy(model.policy)
    return model


def assert_frozen(module: Any) -> None:
    """Check that no parameter of ``module`` (or of an SB3 model's ``policy``) is trainable.

    Only the parameters are checked, not the eval mode: they are what an optimiser
    could change.

    Args:
        module: a ``torch.nn.Module``, or an SB3 model (its ``policy`` is checked).

    Raises:
        RuntimeError: naming the first parameter that requires gradients.
        TypeError: if ``module`` is neither a module nor an SB3 model.
    """
    network = module if isinstance(module, nn.Module) else _sb3_policy(module)
    for name, parameter in network.named_parameters():
        if parameter.requires_grad:
            raise RuntimeError(f"{type(network).__name__} is not frozen: parameter {name!r} "
                               "requires grad; freeze it with freeze_mappo_policy or "
                               "freeze_sb3_policy first")


def load_and_freeze_mappo(path: str | os.PathLike, obs_dim: int, action_dim: int,
                          state_dim: int, n_agents: int | None = 2,
                          device: str | torch.device = "cpu") -> MAPPOPolicy:
    """Load a MAPPO policy from a file and freeze it.

    Reads both files the project writes: a training checkpoint of the MAPPO trainer
    (:func:`training.mappo.checkpoints.save_checkpoint`, the ``mappo_policy.pt`` and
    ``mappo_policy_final.pt`` of a run) and a policy file
    (:func:`models.mappo_files.save_policy`: pool and league snapshots). Only tensors
    and plain values are read (``torch.load(weights_only=True)``), so a file holding
    pickled objects is refused without running anything from it.

    Args:
        path: the file.
        obs_dim, action_dim, state_dim, n_agents: the sizes the caller's environment
            needs; the file's must be the same. ``n_agents=None`` takes a policy of any
            number of agents (a caller that maps its units onto the policy's agents
            itself, as the echelons' battles do).
        device: where to put the policy.

    Returns:
        The policy, frozen (see :func:`freeze_mappo_policy`).

    Raises:
        FileNotFoundError: if nothing is at ``path``.
        ValueError: naming the field if the file's sizes differ from the ones asked
            for, or if the file is not a MAPPO policy or checkpoint
            (:class:`~storage.files.UntrustedCheckpointError`, a ``ValueError``, for
            one holding pickled objects).
    """
    path = check_path("path", path)
    expected = {"obs_dim": check_int("obs_dim", obs_dim, minimum=1),
                "action_dim": check_int("action_dim", action_dim, minimum=1),
                "state_dim": check_int("state_dim", state_dim, minimum=1),
                "n_agents": None if n_agents is None else check_int("n_agents", n_agents,
                                                                    minimum=1)}
    what = f"MAPPO policy file {path}"
    # One safe read, then the format is told from the keys: reading with
    # load_checkpoint first and load_policy on failure would read the file twice.
    data = load_weights(path, "MAPPO policy file")
    if isinstance(data, dict) and "policy_state_dict" in data:  # the trainer's checkpoint
        state_dict = data["policy_state_dict"]
    elif isinstance(data, dict) and "state_dict" in data:  # save_policy's file
        state_dict = data["state_dict"]
    else:
        found = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{what} is not a MAPPO policy: expected a training checkpoint "
                         "(kwargs, policy_state_dict, ...) or a policy file (kwargs, "
                         f"state_dict), found {found}")
    kwargs = data.get("kwargs")
    if not isinstance(kwargs, dict):
        raise ValueError(f"{what} is not a MAPPO policy: 'kwargs' is "
                         f"{type(kwargs).__name__}, expected the policy's constructor arguments")
    # The sizes are compared before the network is built, so a mismatch names the
    # field instead of surfacing later as a shape error deep inside a forward pass.
    for field in _DIM_FIELDS:
        found = kwargs.get(field)
        if expected[field] is not None and found != expected[field]:
            raise ValueError(f"{what} has {field}={found!r} but {field}={expected[field]} "
                             "was asked for: load a policy trained for this environment")
    policy = policy_from_kwargs(kwargs, state_dict, what)
    return freeze_mappo_policy(policy.to(device))


def load_and_freeze_sb3(path: str | os.PathLike, device: str | torch.device = "cpu") -> Any:
    """Load a Stable-Baselines3 PPO model and freeze its policy.

    Loaded with :func:`training.ppo.checkpoints.load_ppo`, which never unpickles
    anything from the archive and leaves the global random generators alone.

    Args:
        path: the ``.zip`` archive (suffix optional).
        device: torch device.

    Returns:
        The ``PPO`` model, its policy frozen (see :func:`freeze_sb3_policy`).

    Raises:
        FileNotFoundError: if the archive does not exist.
        ValueError: if it is not a readable SB3 archive, or holds pickled entries that
            cannot be verified (:class:`~storage.files.UntrustedCheckpointError`).
    """
    # Imported here: SB3 is heavy, and MAPPO-only callers of this module never need it.
    from training.ppo.checkpoints import load_ppo

    return freeze_sb3_policy(load_ppo(path, device=device))


def _sb3_policy(model: Any) -> nn.Module:
    """``model.policy``, checked to be a torch module."""
    try:
        policy = model.policy
    except AttributeError:
        raise AttributeError(f"{type(model).__name__} object has no 'policy' attribute: expected "
                             "a Stable-Baselines3 model such as PPO (for a torch module use "
                             "freeze_mappo_policy)") from None
    if not isinstance(policy, nn.Module):
        raise TypeError(f"{type(model).__name__}.policy is {type(policy).__name__}: expected a "
                        "torch.nn.Module")
    return policy


__all__ = ["assert_frozen", "freeze_mappo_policy", "freeze_sb3_policy",
           "load_and_freeze_mappo", "load_and_freeze_sb3"]
