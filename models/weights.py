"""Reading torch weight files from elsewhere: tensors and plain values only, within limits.

Every torch file we load (MAPPO policies and checkpoints, team snapshots, the
``policy.pth`` of an SB3 archive) goes through :func:`load_weights`: the file
must be a regular file holding an archive of bounded size
(:func:`storage.files.check_archive`), it is read with ``torch.load(weights_only=True)``,
and a refusal is one of our named errors, never torch's advice to unpickle.
:func:`check_module_size` bounds a network that a file's constructor arguments
ask for before any memory is allocated for it.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from envs.sim.validation import check_path
from storage.files import UnreadableFileError, UntrustedCheckpointError, check_archive


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


def check_module_size(build: Callable[[], nn.Module], state_dict: Mapping[str, Any],
                      what: str) -> None:
    """Refuse constructor arguments that ask for a network other than the weights given.

    ``build()`` runs on PyTorch's meta device, which allocates nothing, so a file
    that asks for a 160 GB layer is refused before it costs any memory.

    Raises:
        UnreadableFileError: if the network would have more parameters than
            ``state_dict`` holds numbers (it could not load them anyway).
    """
    with torch.device("meta"):
        module = build()
    wanted = sum(p.numel() for p in module.parameters())
    given = sum(t.numel() for t in state_dict.values() if isinstance(t, torch.Tensor))
    if wanted > given:
        raise UnreadableFileError(f"{what} asks for a network of {wanted:,} parameters but "
                                  f"holds {given:,} weights")


__all__ = ["checkpoint_path", "check_module_size", "load_weights"]


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
