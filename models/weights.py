"""Reading torch weight files from elsewhere: tensors and plain values only, within limits.

Every torch file the project loads (MAPPO policies and checkpoints, team snapshots, the
``policy.pth`` of an SB3 archive) goes through :func:`load_weights`: a regular file holding
an archive of bounded size (:func:`storage.files.check_archive`), read with
``torch.load(weights_only=True)``, a refusal one of our named errors, never torch's advice
to unpickle. :func:`check_module_size` bounds a network that a file's constructor
arguments ask for before any memory is allocated for it (the architecture fields
themselves are bounded by :mod:`models.limits`). Every trainer that writes torch
checkpoints (MAPPO, WFM-1, the league roles that drive MAPPO) writes one shape,
:class:`TrainingCheckpoint`, with :func:`write_checkpoint` (atomically) and reads it back
with :func:`read_checkpoint`, whose ``legacy`` reader takes a file without
``checkpoint_format``. ``docs/training.md`` ("Training checkpoints") gives the layout.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from envs.sim.validation import check_path
from storage.files import (
    UnreadableFileError,
    UntrustedCheckpointError,
    atomic_write_bytes,
    check_archive,
)


def load_weights(source: str | Path | bytes, what: str, device: str | torch.device = "cpu"
                 ) -> Any:
    """``torch.load(weights_only=True)`` of a file (or of bytes read from an archive).

    Args:
        source: a path, or the bytes of an archive member already bounded by its archive.
        what: what the file is, for messages (e.g. "MAPPO policy file"); for bytes,
            also where they come from.

    Raises:
        FileNotFoundError: if the file does not exist.
        UntrustedCheckpointError: if it holds pickled objects other than tensors
            and plain values.
        UnreadableFileError: if it is not a readable torch file (special file,
            too large, corrupt or truncated).
    """
    if isinstance(source, (bytes, bytearray)):
        handle: Any = io.BytesIO(source)
    else:
        handle = check_archive(source, what)
        what = f"{what} {source}"
    try:
        return torch.load(handle, map_location=device, weights_only=True)
    except pickle.UnpicklingError:
        raise UntrustedCheckpointError(
            f"{what} holds pickled objects other than tensors and plain values; it is not "
            "loaded, since unpickling a shared file can run code") from None
    except Exception as error:  # torch raises many types for a bad file; all mean "corrupt"
        raise UnreadableFileError(f"{what} is not a readable torch file (corrupt or "
                                  f"truncated): {type(error).__name__}") from None


def save_weights(path: str | Path, data: Any) -> Path:
    """``torch.save`` of ``data`` to ``path``, atomically (temporary sibling, fsync,
    ``os.replace``: :func:`storage.files.atomic_write_bytes`); folders are created. What
    :func:`load_weights` reads back: ``data`` should hold tensors and plain values only.

    Returns:
        ``path`` as a Path.
    """
    buffer = io.BytesIO()
    torch.save(data, buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


class RebuildablePolicy(nn.Module):
    """A policy that keeps its constructor arguments (``_kwargs``, set by the subclass), so
    that a file holding them and the weights rebuilds it: ``type(policy)(**policy.kwargs)``."""

    _kwargs: dict[str, Any]

    @property
    def kwargs(self) -> dict[str, Any]:
        """The constructor arguments as plain values, lists copied."""
        return {key: list(value) if isinstance(value, list) else value
                for key, value in self._kwargs.items()}

    @property
    def device(self) -> torch.device:
        """The device the parameters live on."""
        return next(self.parameters()).device


def check_module_size(build: Callable[[], nn.Module], state_dict: Mapping[str, Any],
                      what: str) -> None:
    """Refuse constructor arguments that ask for a network other than the weights given.

    ``build()`` runs on PyTorch's meta device, which allocates nothing, so a file
    that asks for a 160 GB layer is refused before it costs any memory (the caller
    bounds the architecture fields first, :func:`models.limits.check_architecture`, so
    that even the meta build is small). Only weights the file really holds count: a
    tensor without memory (on the meta device) is refused, and a tensor that repeats
    its storage (an ``expand``-ed view) counts the numbers stored, not the numbers shown.

    Raises:
        UnreadableFileError: naming ``what``, for a tensor without memory, or if the
            network would have more parameters than ``state_dict`` holds numbers (it
            could not load them anyway).
    """
    stored: dict[int, int] = {}  # numbers held, by storage (views of one count once)
    for name, tensor in state_dict.items():
        if not isinstance(tensor, torch.Tensor):
            continue
        if tensor.is_meta or tensor.layout != torch.strided:
            raise UnreadableFileError(
                f"{what} holds {name!s:.80} as a {tensor.layout} tensor on the "
                f"{tensor.device.type} device: expected weights stored in the file")
        storage = tensor.untyped_storage()
        numbers = min(tensor.numel(), storage.nbytes() // max(tensor.element_size(), 1))
        key = storage.data_ptr()
        stored[key] = max(stored.get(key, 0), numbers)
    given = sum(stored.values())
    with torch.device("meta"):
        module = build()
    wanted = sum(p.numel() for p in module.parameters())
    if wanted > given:
        raise UnreadableFileError(f"{what} asks for a network of {wanted:,} parameters but "
                                  f"holds {given:,} weights")


def checkpoint_path(path: str | Path, name: str = "path") -> Path | None:
    """The existing checkpoint file ``path`` names (``.zip`` optional), or None.

    Raises:
        ValueError: naming ``name`` if ``path`` is not a usable file path (empty, not
            text, with a NUL character or an over-long part).
        UnreadableFileError: if what is there is not a regular file (a folder, a
            FIFO, a device), which would hang or never end if read.
    """
    path = check_path(name, path)
    for candidate in (path, path.with_name(path.name + ".zip")):
        if candidate.is_file():
            return candidate
        if candidate.exists():
            raise UnreadableFileError(f"checkpoint {candidate} is not a regular file: "
                                      "refusing to read it")
    return None


# --- the one training checkpoint ---------------------------------------------------------

CHECKPOINT_FORMAT = 2
"""The version of the layout :func:`write_checkpoint` writes (``docs/training.md``, "Training
checkpoints"); files without a ``checkpoint_format`` key are in a trainer's own version-1
layout."""

REQUIRED_COUNTERS = ("total_steps", "episodes")
"""The counters every training checkpoint holds (stored as top-level keys)."""

_SECTIONS = {"kind": str, "kwargs": dict, "policy_state_dict": dict,
             "optimizer_state_dict": dict, "total_steps": int, "episodes": int,
             "counters": dict, "rng": dict, "extras": dict}
"""Each key of a format-2 file (but ``checkpoint_format``) and the type it must hold."""


@dataclass
class TrainingCheckpoint:
    """Everything a killed training run needs to go on, as tensors and plain values.

    Attributes:
        kind: which trainer wrote it (``"mappo"``, ``"wfm1"``).
        kwargs: the policy's constructor arguments.
        weights: the policy's ``state_dict``.
        optimizer: the optimiser's ``state_dict``.
        counters: ``total_steps``, ``episodes`` and the trainer's other counters (numbers).
        rng: every random generator's state, by name.
        extras: the trainer's other plain values (config, curriculum, a driver's state).
    """

    kind: str
    kwargs: dict[str, Any]
    weights: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    counters: dict[str, int | float]
    rng: dict[str, Any]
    extras: dict[str, Any] = field(default_factory=dict)


def write_checkpoint(path: str | Path, checkpoint: TrainingCheckpoint) -> Path:
    """Write ``checkpoint`` to ``path`` atomically (temporary sibling, fsync,
    ``os.replace``; folders are created) in the layout of ``docs/training.md``
    ("Training checkpoints").

    Its values should be tensors and plain values (numbers, strings, lists, dicts), so
    that :func:`read_checkpoint` can read it with ``weights_only=True``.

    Returns:
        ``path`` as a Path.

    Raises:
        TypeError: if ``checkpoint`` is not a TrainingCheckpoint.
        ValueError: naming the field, for an empty ``kind``, a section that is not a dict,
            or counters without ``total_steps`` and ``episodes`` (or not numbers).
    """
    if not isinstance(checkpoint, TrainingCheckpoint):
        raise TypeError(f"checkpoint={type(checkpoint).__name__} is invalid: expected a "
                        "TrainingCheckpoint")
    if not isinstance(checkpoint.kind, str) or not checkpoint.kind:
        raise ValueError(f"checkpoint.kind={checkpoint.kind!r} is invalid: expected the "
                         "name of the trainer that writes it")
    for name in ("kwargs", "weights", "optimizer", "counters", "rng", "extras"):
        value = getattr(checkpoint, name)
        if not isinstance(value, dict):
            raise ValueError(f"checkpoint.{name} is a {type(value).__name__}: expected a dict")
    counters = dict(checkpoint.counters)
    missing = [name for name in REQUIRED_COUNTERS if name not in counters]
    if missing:
        raise ValueError(f"checkpoint.counters has {sorted(counters)}: {missing} missing "
                         f"(every checkpoint counts {list(REQUIRED_COUNTERS)})")
    for name, value in counters.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"checkpoint.counters[{name!r}]={value!r} is invalid: expected "
                             "a number")
    data = {"checkpoint_format": CHECKPOINT_FORMAT, "kind": checkpoint.kind,
            "kwargs": checkpoint.kwargs, "policy_state_dict": checkpoint.weights,
            "optimizer_state_dict": checkpoint.optimizer,
            "total_steps": int(counters.pop("total_steps")),
            "episodes": int(counters.pop("episodes")), "counters": counters,
            "rng": checkpoint.rng, "extras": checkpoint.extras}
    return save_weights(path, data)


LegacyReader = Callable[[Any, str], TrainingCheckpoint]
"""Turns the loaded contents of a file of a version-1 layout (and the file's name, for
messages) into a :class:`TrainingCheckpoint`, or raises ``ValueError``."""


def check_legacy_keys(data: Any, source: str, trainer: str, required: frozenset[str]) -> None:
    """Raise unless ``data`` is a dict holding every key of a trainer's version-1 layout.

    Args:
        data: the loaded contents of a file without ``checkpoint_format``.
        source: the file, for the message.
        trainer: the trainer whose layout it should be (``"MAPPO"``), for the message.
        required: the keys every file of that layout holds.

    Raises:
        ValueError: naming ``source`` and the keys it lacks.
    """
    missing = required - set(data if isinstance(data, dict) else ())
    if missing:
        raise ValueError(f"{source} is not a {trainer} training checkpoint: missing "
                         f"{sorted(missing)}")


def read_checkpoint(path: str | Path, what: str, kind: str, *,
                    legacy: LegacyReader | None = None,
                    device: str | torch.device = "cpu") -> TrainingCheckpoint:
    """Read a checkpoint written by :func:`write_checkpoint` (never unpickles code).

    Args:
        path: the file.
        what: what the file should be, for messages (e.g. "MAPPO checkpoint").
        kind: the ``kind`` it must have.
        legacy: the reader of the trainer's version-1 layout, for files without
            ``checkpoint_format``; None refuses them.
        device: where its tensors go.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        UntrustedCheckpointError: if it holds pickled objects (a ``ValueError``).
        ValueError: naming the file, if it is unreadable or not a training checkpoint of
            ``kind`` (:func:`checkpoint_from_data`).
    """
    data = load_weights(path, what, device)
    return checkpoint_from_data(data, f"{what} {path}", kind, legacy)


def is_training_checkpoint(data: Any) -> bool:
    """Whether ``data`` (a loaded torch file) is in the layout of :func:`write_checkpoint`."""
    return isinstance(data, dict) and "checkpoint_format" in data


def checkpoint_from_data(data: Any, source: str, kind: str,
                         legacy: LegacyReader | None = None) -> TrainingCheckpoint:
    """The :class:`TrainingCheckpoint` in ``data``, a loaded torch file named ``source``.

    Raises:
        ValueError: naming ``source``, for a format other than :data:`CHECKPOINT_FORMAT`,
            another ``kind``, a missing key or a key of the wrong type, or (without
            ``legacy``) a file of a version-1 layout.
    """
    if not is_training_checkpoint(data):
        if legacy is None:
            found = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"{source} is not a {kind} training checkpoint: it has no "
                             f"checkpoint_format (found {found})")
        return legacy(data, source)
    version = data["checkpoint_format"]
    if version != CHECKPOINT_FORMAT:
        raise ValueError(f"{source} has checkpoint_format={version!r}: this version reads "
                         f"format {CHECKPOINT_FORMAT} and the earlier layouts")
    missing = sorted(set(_SECTIONS) - set(data))
    if missing:
        raise ValueError(f"{source} is not a complete training checkpoint: missing {missing}")
    for key, expected in _SECTIONS.items():
        if not isinstance(data[key], expected) or isinstance(data[key], bool):
            raise ValueError(f"{source} has {key} of type {type(data[key]).__name__}: "
                             f"expected {expected.__name__}")
    if data["kind"] != kind:
        raise ValueError(f"{source} is a {data['kind']} checkpoint: expected a {kind} one")
    return TrainingCheckpoint(
        kind=data["kind"], kwargs=data["kwargs"], weights=data["policy_state_dict"],
        optimizer=data["optimizer_state_dict"],
        counters={"total_steps": data["total_steps"], "episodes": data["episodes"],
                  **data["counters"]},
        rng=data["rng"], extras=data["extras"])


__all__ = ["CHECKPOINT_FORMAT", "LegacyReader", "REQUIRED_COUNTERS", "RebuildablePolicy",
           "TrainingCheckpoint",
           "check_legacy_keys", "check_module_size", "checkpoint_from_data", "checkpoint_path",
           "is_training_checkpoint", "load_weights", "read_checkpoint", "save_weights",
           "write_checkpoint"]
