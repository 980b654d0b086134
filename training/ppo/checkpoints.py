"""Saving and loading PPO checkpoints without trusting their pickles.

SB3 archives pickle a few objects into their metadata: the policy class, the
spaces, the rollout-buffer class and the learning-rate and clip schedules.
Unpickling a shared file can run arbitrary code, so :func:`load_ppo` never
does: it identifies each pickled entry from the readable description SB3 stores
beside it, supplies a trusted replacement (``custom_objects``), and refuses a
file whose entries it cannot vouch for. Weights load with
``torch.load(weights_only=True)`` inside SB3. :func:`save_ppo` writes archives
atomically, so a run killed mid-save leaves the previous checkpoint intact.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import random
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium.spaces import Box, MultiDiscrete, Space
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule

from envs.battalion_env import make_spaces
from models.battalion_policy import BattalionMlpPolicy
from models.weights import checkpoint_path
from storage.files import (
    UntrustedCheckpointError,
    atomic_write_bytes,
    check_archive,
    loads_json,
)

_POLICY_CLASSES = {
    ("models.battalion_policy", "BattalionMlpPolicy"): BattalionMlpPolicy,
    ("stable_baselines3.common.policies", "ActorCriticPolicy"): ActorCriticPolicy,
}
_BUFFER_CLASSES = {("stable_baselines3.common.buffers", "RolloutBuffer"): RolloutBuffer}
# Training state SB3 rebuilds by itself when it finds None (last observations,
# recent-episode statistics): dropped rather than unpickled.
_TRANSIENT = ("_last_obs", "_last_episode_starts", "_last_original_obs", "ep_info_buffer",
              "ep_success_buffer")


_DROPPED = object()


MAX_LAYER_WIDTH = 4096
MAX_LAYERS = 16
"""Bounds on the hidden layers an archive's ``policy_kwargs`` may ask for (ours use 2 x 128)."""


def save_ppo(model: PPO, path: str | Path) -> Path:
    """Save ``model`` to ``path`` (``.zip`` added if missing), atomically."""
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_name(path.name + ".zip")
    buffer = io.BytesIO()
    model.save(buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return path


@contextlib.contextmanager
def preserved_global_rngs() -> Iterator[None]:
    """Python's, NumPy's and torch's global random generators as they were on entry,
    whatever the body does to them."""
    # The legacy global NumPy generator is the one SB3 re-seeds.
    python_state, numpy_state = random.getstate(), np.random.get_state()  # noqa: NPY002
    with torch.random.fork_rng():
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)  # noqa: NPY002


def load_ppo(path: str | Path, *, env=None, device: str = "cpu",
             custom_objects: dict[str, Any] | None = None, trusted: bool = False,
             spaces: tuple[Space, Space] | None = None) -> PPO:
    """Load a PPO checkpoint without unpickling anything from it, leaving the global
    random generators as they were (SB3's own ``load`` re-seeds them).

    Args:
        path: the ``.zip`` (suffix optional).
        env: env to attach (needed to continue training).
        device: torch device.
        custom_objects: replacements that take precedence (e.g. the learning
            rate and clip range of a resumed run).
        trusted: allow SB3 to unpickle entries this function cannot identify.
            Only for files from a source you trust.
        spaces: the (observation, action) spaces the archive must have been trained on
            (a ``Box`` and a ``Box`` or ``MultiDiscrete``); None: the duel's.

    Raises:
        FileNotFoundError: if the checkpoint does not exist.
        UntrustedCheckpointError: if it holds pickled entries that cannot be
            identified and ``trusted`` is False, or weights with pickled objects.
        ValueError: if the file is not a readable SB3 archive (a special file,
            one that would expand past :data:`storage.files.MAX_ARCHIVE_BYTES`, or
            one whose network settings are out of bounds).
    """
    found = checkpoint_path(path)
    if found is None:
        raise FileNotFoundError(f"checkpoint {path} does not exist (also tried {path}.zip)")
    check_archive(found, "PPO checkpoint")
    replacements = {} if trusted else safe_replacements(found, spaces)
    replacements.update(custom_objects or {})
    try:
        # PPO.load re-seeds Python's, NumPy's and torch's global generators with the
        # saved run's seed; loading an opponent must not restart the caller's noise.
        with preserved_global_rngs():
            return PPO.load(found, env=env, device=device, custom_objects=replacements)
    except pickle.UnpicklingError:  # torch refused a pickled object in the weights
        raise UntrustedCheckpointError(
            f"{found} holds weights with pickled objects other than tensors; it is not "
            "loaded, since unpickling a shared file can run code") from None


def archive_data(path: Path) -> dict[str, Any]:
    """The ``data`` entry of the SB3 archive at ``path`` (JSON, read without unpickling).

    Raises:
        ValueError: if it is not an SB3 archive.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            raw = archive.read("data")
    except (zipfile.BadZipFile, KeyError) as error:
        raise ValueError(f"{path} is not a Stable-Baselines3 archive: {error}") from None
    data = loads_json(raw, f"PPO checkpoint {path}: data")
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a Stable-Baselines3 archive: 'data' is not an object")
    return data


def stored_shape(entry: Any) -> tuple[int, ...] | None:
    """The shape an archive's space entry records, or None."""
    try:
        return tuple(json.loads(str(entry.get("_shape"))))
    except (ValueError, TypeError, AttributeError):
        return None


def safe_replacements(path: Path,
                      spaces: tuple[Space, Space] | None = None) -> dict[str, Any]:
    """Trusted stand-ins for every pickled entry of the archive at ``path`` (its spaces
    must be ``spaces``, by default the duel's)."""
    data = archive_data(path)
    _check_policy_kwargs(path, data.get("policy_kwargs"))
    replacements: dict[str, Any] = {}
    for key, entry in data.items():
        if not (isinstance(entry, dict) and ":serialized:" in entry):
            continue
        replacement = _replace(key, entry, spaces or make_spaces())
        if replacement is _DROPPED:
            replacements[key] = None
            continue
        if replacement is None:
            raise UntrustedCheckpointError(
                f"{path} stores a pickled {key!r} ({entry.get(':type:')}) that cannot be "
                "verified; refusing to unpickle it. Load it with trusted=True only if you "
                "trust where the file came from.")
        replacements[key] = replacement
    return replacements


def _check_policy_kwargs(path: Path, kwargs: Any) -> None:
    """The archive's network settings, checked like user input before SB3 builds the net."""
    if kwargs is None:
        return
    if not isinstance(kwargs, dict):
        raise ValueError(f"{path}: policy_kwargs={kwargs!r} is invalid: expected an object")
    arch = kwargs.get("net_arch", [])
    layers = list(arch.values()) if isinstance(arch, dict) else [arch]
    for sizes in layers:
        if not isinstance(sizes, list) or len(sizes) > MAX_LAYERS or not all(
                type(n) is int and 1 <= n <= MAX_LAYER_WIDTH for n in sizes):
            raise ValueError(f"{path}: policy_kwargs net_arch={arch!r} is invalid: expected "
                             f"at most {MAX_LAYERS} layers of 1 to {MAX_LAYER_WIDTH} units")


def _replace(key: str, entry: dict[str, Any], spaces: tuple[Space, Space]) -> Any | None:
    if key in _TRANSIENT:
        return _DROPPED
    if key == "policy_class":
        return _POLICY_CLASSES.get(_class_identity(entry))
    if key == "rollout_buffer_class":
        return _BUFFER_CLASSES.get(_class_identity(entry))
    if key in ("observation_space", "action_space"):
        space = spaces[0] if key == "observation_space" else spaces[1]
        return space if _same_space(entry, space) else None
    if key in ("lr_schedule", "clip_range", "clip_range_vf"):
        match = re.fullmatch(r"ConstantSchedule\(val=([-+0-9.eE]+)\)",
                             str(entry.get("value_schedule", "")))
        return FloatSchedule(ConstantSchedule(float(match.group(1)))) if match else None
    return None


def _class_identity(entry: dict[str, Any]) -> tuple[str, str] | None:
    """(module, class name) of a pickled class, from SB3's readable method reprs."""
    module = entry.get("__module__")
    for value in entry.values():
        match = re.match(r"<function (\w+)\.", str(value))
        if match:
            return module, match.group(1)
    return None


def _same_space(entry: dict[str, Any], space: Space) -> bool:
    """Whether an archive's space entry is ``space``: a Box of its shape, or a
    MultiDiscrete of its choices starting at 0."""
    kind = str(entry.get(":type:"))
    if isinstance(space, Box):
        return "gymnasium.spaces.box.Box" in kind and stored_shape(entry) == space.shape
    if isinstance(space, MultiDiscrete):
        nvec = re.fullmatch(r"\[([0-9 ]*)\]", str(entry.get("nvec", "")).strip())
        start = re.fullmatch(r"\[([0 ]*)\]", str(entry.get("start", "[0]")).strip())
        return ("gymnasium.spaces.multi_discrete.MultiDiscrete" in kind and nvec is not None
                and start is not None
                and [int(n) for n in nvec.group(1).split()] == space.nvec.tolist())
    return False


__all__ = ["UntrustedCheckpointError", "archive_data", "load_ppo", "safe_replacements",
           "save_ppo", "stored_shape"]
