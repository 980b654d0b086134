"""Saving and loading PPO checkpoints without trusting their pickles: the one door
through which the project reads SB3 archives.

SB3 archives pickle a few objects into their metadata (the policy class, the spaces, the
rollout-buffer class, the schedules), and unpickling a shared file can run arbitrary
code, so :func:`load_ppo` never does: :func:`safe_replacements` gives every pickled entry
a trusted replacement identified from the readable description SB3 stores beside it, and
refuses a file with an entry it cannot vouch for. The archive is read once into memory
and SB3 parses those very bytes; the network settings and the rollout buffer it declares
are checked against their bounds before SB3 builds anything (:mod:`models.limits`,
:data:`MAX_ROLLOUT_BYTES`); weights load with ``torch.load(weights_only=True)``.
:func:`save_ppo` writes archives atomically; :func:`copy_model` copies a live model in
memory. ``docs/reliability.md`` ("Files from elsewhere") has the details.
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
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule

from envs.battalion_env import make_spaces
from envs.sim.validation import format_count, short_repr
from models.battalion_policy import BattalionMlpPolicy
from models.echelon_policy import EchelonMlpPolicy
from models.limits import MAX_LAYERS, MAX_WIDTH, check_hidden_sizes
from models.weights import checkpoint_path
from storage.files import (
    UnreadableFileError,
    UntrustedCheckpointError,
    atomic_write_bytes,
    loads_json,
    read_archive,
)

_POLICY_CLASSES = {
    ("models.battalion_policy", "BattalionMlpPolicy"): BattalionMlpPolicy,
    ("models.echelon_policy", "EchelonMlpPolicy"): EchelonMlpPolicy,
    ("stable_baselines3.common.policies", "ActorCriticPolicy"): ActorCriticPolicy,
}
_BUFFER_CLASSES = {("stable_baselines3.common.buffers", "RolloutBuffer"): RolloutBuffer}
# Training state SB3 rebuilds by itself when it finds None (last observations,
# recent-episode statistics): dropped rather than unpickled.
_TRANSIENT = ("_last_obs", "_last_episode_starts", "_last_original_obs", "ep_info_buffer",
              "ep_success_buffer")


_DROPPED = object()


MAX_LAYER_WIDTH = MAX_WIDTH
"""Widest hidden layer an archive's ``policy_kwargs`` may ask for (ours use 2 x 128): the
bound of :mod:`models.limits`, as is :data:`~models.limits.MAX_LAYERS`."""

_POLICY_KWARGS = frozenset({"net_arch", "log_std_init", "ortho_init", "full_std",
                            "use_expln", "squash_output", "share_features_extractor",
                            "normalize_images", "normalize_observations", "orders"})
"""The ``policy_kwargs`` keys an archive may hold: plain settings of SB3's actor-critic
policy whose size is bounded (``net_arch``) or that allocate nothing."""

MAX_ROLLOUT_BYTES = 2**30
"""Most memory the rollout buffer an archive declares (``n_steps`` x ``n_envs`` steps of
observations, actions and statistics) may take: SB3 allocates it while loading."""

_ROLLOUT_FLOATS = 6
"""Numbers the rollout buffer keeps per step besides the observation and the action
(reward, return, episode start, value, log-probability, advantage)."""


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
             spaces: tuple[Space, Space] | None = None,
             algorithm: type[PPO] = PPO) -> PPO:
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
        algorithm: the class to load as (``PPO`` or a subclass, such as
            :class:`~training.ppo.guided.GuidedPPO` for a run to resume).

    Raises:
        FileNotFoundError: if the checkpoint does not exist.
        UntrustedCheckpointError: if it holds pickled entries that cannot be
            identified and ``trusted`` is False, or weights with pickled objects.
        ValueError: if the file is not a readable SB3 archive (a special file,
            one that would expand past :data:`storage.files.MAX_ARCHIVE_BYTES`, or
            one whose network settings or rollout buffer are out of bounds).
    """
    found = checkpoint_path(path)
    if found is None:
        raise FileNotFoundError(f"checkpoint {path} does not exist (also tried {path}.zip)")
    raw = read_archive(found, "PPO checkpoint")
    data = archive_data(found, raw)
    spaces = spaces or make_spaces()
    _check_rollout_buffer(found, data, spaces, env)
    replacements = {} if trusted else _replacements(found, data, spaces)
    replacements.update(custom_objects or {})
    try:
        # PPO.load re-seeds Python's, NumPy's and torch's global generators with the
        # saved run's seed; loading an opponent must not restart the caller's noise.
        with preserved_global_rngs():
            return algorithm.load(io.BytesIO(raw), env=env, device=device,
                            custom_objects=replacements)
    except pickle.UnpicklingError:  # torch refused a pickled object in the weights
        raise UntrustedCheckpointError(
            f"{found} holds weights with pickled objects other than tensors; it is not "
            "loaded, since unpickling a shared file can run code") from None


def copy_model(model: BaseAlgorithm, *, env=None, device: str = "cpu") -> BaseAlgorithm:
    """A copy of the live SB3 ``model`` attached to ``env``, made by SB3's own save and
    load in memory (what a fine-tuning must not change stays unchanged).

    The pickles read back are the ones just written from ``model``'s own objects in
    this process, never a file from elsewhere, so SB3's full ``load`` is safe here (it
    re-seeds the global generators from the model's seed, as training from it expects).
    """
    if not isinstance(model, BaseAlgorithm):
        raise TypeError(f"model={type(model).__name__} is invalid: expected a "
                        "Stable-Baselines3 model")
    buffer = io.BytesIO()
    model.save(buffer)
    buffer.seek(0)
    return type(model).load(buffer, env=env, device=device)


def archive_data(path: Path, raw: bytes | None = None) -> dict[str, Any]:
    """The ``data`` entry of the SB3 archive at ``path`` (JSON, read without unpickling).

    Args:
        path: the archive (for messages, and read if ``raw`` is None).
        raw: the archive's bytes already read (:func:`storage.files.read_archive`).

    Raises:
        ValueError: if it is not an SB3 archive.
    """
    if raw is None:
        raw = read_archive(path, "PPO checkpoint")
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            entry = archive.read("data")
    except (zipfile.BadZipFile, KeyError) as error:
        raise ValueError(f"{path} is not a Stable-Baselines3 archive: {error}") from None
    try:
        # SB3 decodes the entry as UTF-8 before parsing: read it the same way, so both
        # see the same keys.
        text = entry.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableFileError(f"PPO checkpoint {path}: data is not UTF-8 text") from None
    data = loads_json(text, f"PPO checkpoint {path}: data")
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
    must be ``spaces``, by default the duel's), to pass SB3 as ``custom_objects``.

    Raises:
        UntrustedCheckpointError: for a pickled entry that cannot be identified.
        ValueError: for network settings out of bounds or a file that is no archive.
    """
    return _replacements(path, archive_data(path), spaces or make_spaces())


def _replacements(path: Path, data: dict[str, Any],
                  spaces: tuple[Space, Space]) -> dict[str, Any]:
    """:func:`safe_replacements` of the parsed ``data`` entry."""
    _check_policy_kwargs(path, data.get("policy_kwargs"))
    replacements: dict[str, Any] = {}
    for key, entry in data.items():
        # Exactly SB3's test for an entry it would unpickle: every such entry, whatever
        # its key, gets a replacement or the file is refused.
        if not (isinstance(entry, dict) and ":serialized:" in entry.keys()):
            continue
        replacement = _replace(key, entry, spaces)
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
    if kwargs is None or isinstance(kwargs, dict) and ":serialized:" in kwargs:
        return  # a pickled entry: refused as such by the caller unless trusted
    if not isinstance(kwargs, dict):
        raise ValueError(f"{path}: policy_kwargs={short_repr(kwargs)} is invalid: expected "
                         "an object")
    unknown = sorted(set(kwargs) - _POLICY_KWARGS)
    if unknown:
        raise ValueError(f"{path}: policy_kwargs has keys {short_repr(unknown)}: expected "
                         f"only {sorted(_POLICY_KWARGS)}")
    arch = kwargs.get("net_arch", [])
    layers = arch.items() if isinstance(arch, dict) else [("net_arch", arch)]
    for name, sizes in layers:
        if isinstance(sizes, list) and not sizes:
            continue  # no hidden layer: SB3's linear policy
        if not isinstance(sizes, list) or not all(type(n) is int for n in sizes[:MAX_LAYERS]):
            raise ValueError(f"{path}: policy_kwargs net_arch={short_repr(arch)} is invalid: "
                             f"expected at most {MAX_LAYERS} layers of 1 to {MAX_LAYER_WIDTH} "
                             "units")
        try:
            check_hidden_sizes(f"policy_kwargs net_arch {name}", sizes)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None


def _check_rollout_buffer(path: Path, data: dict[str, Any], spaces: tuple[Space, Space],
                          env: Any) -> None:
    """Refuse a rollout buffer that SB3 would allocate past :data:`MAX_ROLLOUT_BYTES`.

    ``n_steps`` comes from the archive, ``n_envs`` from ``env`` when one is attached
    (SB3 takes it from there), else from the archive.
    """
    sizes = {"n_steps": data.get("n_steps", 1),
             # SB3 wraps an env that is not vectorised into a batch of one.
             "n_envs": getattr(env, "num_envs", 1) if env is not None else
             data.get("n_envs", 1)}
    for name, value in sizes.items():
        if type(value) is not int or value < 1:
            raise ValueError(f"{path}: {name}={short_repr(value)} is invalid: expected a "
                             "positive integer")
    per_step = sum(int(np.prod(space.shape)) for space in spaces) + _ROLLOUT_FLOATS
    needed = sizes["n_steps"] * sizes["n_envs"] * per_step * 4
    if needed > MAX_ROLLOUT_BYTES:
        raise ValueError(f"{path}: n_steps={format_count(sizes['n_steps'])} x n_envs="
                         f"{format_count(sizes['n_envs'])} asks for a rollout buffer of "
                         f"{format_count(needed)} bytes: more than the {MAX_ROLLOUT_BYTES:,} "
                         "allowed (training.ppo.checkpoints.MAX_ROLLOUT_BYTES)")


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


__all__ = ["MAX_ROLLOUT_BYTES", "UntrustedCheckpointError", "archive_data", "copy_model",
           "load_ppo", "safe_replacements", "save_ppo", "stored_shape"]
