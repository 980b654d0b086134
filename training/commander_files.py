"""Commander files: what kind of commander a checkpoint holds, and loading it.

A file's kind is told from its contents (:func:`identify_checkpoint`), never from its
name: an SB3 archive by the spaces it stores (the 1v1 PPO commander, a brigade or a
division commander), a torch file by its ``kind`` or its keys (MAPPO or WFM-1, a
trainer's checkpoint or a policy file). :func:`load_commander_policy` then loads it with
the project's own loader for that kind, which runs no code from the file. The ONNX export
(:mod:`training.export`) and the play server's Red (:mod:`training.play`) both read
commanders this way.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envs.battles.observation import OBS_DIM as DUEL_OBS_DIM
from envs.echelons.brigade_batch import brigade_obs_dim
from envs.echelons.division_batch import DIVISION_COMMANDS, division_obs_dim
from envs.sim.constants import ACTION_DIM
from models.export import DRILLS
from models.mappo_files import load_policy
from models.weights import checkpoint_path, is_training_checkpoint, load_weights
from models.wfm1 import WFM1Policy
from storage.files import UnreadableFileError, read_archive
from training.echelons.trainer import load_commander
from training.mappo.checkpoints import policy_from_checkpoint
from training.ppo.checkpoints import archive_data, load_ppo, stored_shape

ACCEPTED = ("an SB3 .zip of a 1v1 PPO, brigade or division commander, or a MAPPO or WFM-1 "
            "training checkpoint or policy file (.pt)")
"""What :func:`identify_checkpoint` accepts, for messages."""


@dataclass(frozen=True)
class CheckpointKind:
    """What a checkpoint file holds, as :func:`identify_checkpoint` tells it.

    Attributes:
        kind: one of :data:`models.export.KINDS`.
        path: the file.
        training_checkpoint: a trainer's resumable checkpoint (MAPPO, WFM-1) rather than a
            policy file; False for SB3 archives.
        obs_dim, n_commanded: for a brigade or division commander, its observation's size
            and the units it commands; None otherwise.
    """

    kind: str
    path: Path
    training_checkpoint: bool = False
    obs_dim: int | None = None
    n_commanded: int | None = None


def _not_a_commander(path: Path, found: str) -> ValueError:
    return ValueError(f"checkpoint {path} is {found}: expected {ACCEPTED}")


def identify_checkpoint(checkpoint: str | Path) -> CheckpointKind:
    """The kind of commander the file ``checkpoint`` (``.zip`` optional, as for SB3 files)
    holds, told from its contents: an SB3 archive by its spaces, a torch file by its
    ``kind`` or its keys. Nothing in the file is unpickled.

    Raises:
        FileNotFoundError: naming ``checkpoint`` if nothing is there.
        ValueError: naming the file and the kinds accepted, for a file that is none of
            them (:class:`~storage.files.UnreadableFileError`, a ``ValueError``, for one
            that is not a readable archive, a special file or one too large).
    """
    path = checkpoint_path(checkpoint, "checkpoint")
    if path is None:
        raise FileNotFoundError(f"checkpoint={str(checkpoint)!r}: no such file (also tried "
                                f"{str(checkpoint)!r} + '.zip')")
    try:
        raw = read_archive(path, "checkpoint")
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            names = set(archive.namelist())
        if {"data", "policy.pth"} <= names:  # SB3's layout; torch files nest under a folder
            return _sb3_kind(path, raw)
        data = load_weights(raw, f"checkpoint {path}")
    except UnreadableFileError as error:  # not an archive, or not a torch file
        raise UnreadableFileError(f"{error}: expected {ACCEPTED}") from None
    return _torch_kind(path, data)


def _sb3_kind(path: Path, raw: bytes) -> CheckpointKind:
    """The kind of an SB3 archive, from the spaces its ``data`` describes."""
    data = archive_data(path, raw)
    observation, action = data.get("observation_space"), data.get("action_space")
    obs_shape = stored_shape(observation) if isinstance(observation, dict) else None
    action_type = str(action.get(":type:")) if isinstance(action, dict) else "none"
    if "gymnasium.spaces.box.Box" in action_type and obs_shape == (DUEL_OBS_DIM,) and \
            stored_shape(action) == (ACTION_DIM,):
        return CheckpointKind("ppo", path)
    if "gymnasium.spaces.multi_discrete.MultiDiscrete" in action_type and obs_shape and \
            len(obs_shape) == 1:
        match = re.fullmatch(r"\[([0-9\s]+)\]", str(action.get("nvec", "")).strip())
        nvec = [int(n) for n in match.group(1).split()] if match else []
        n, obs_dim = len(nvec), obs_shape[0]
        for kind, size, choices in (("brigade", brigade_obs_dim, len(DRILLS)),
                                    ("division", division_obs_dim, len(DIVISION_COMMANDS))):
            if n and obs_dim == size(n) and all(v == choices for v in nvec):
                return CheckpointKind(kind, path, obs_dim=obs_dim, n_commanded=n)
    raise _not_a_commander(path, f"an SB3 archive for observations of shape {obs_shape} "
                           f"and actions of type {action_type}")


def _torch_kind(path: Path, data: Any) -> CheckpointKind:
    """The kind of a torch file (read with ``weights_only=True``), from its keys."""
    if is_training_checkpoint(data):
        kind = data.get("kind")
        if kind in ("mappo", "wfm1"):
            return CheckpointKind(kind, path, training_checkpoint=True)
        raise _not_a_commander(path, f"a training checkpoint of kind {kind!r}")
    keys = set(map(str, data)) if isinstance(data, dict) else set()
    if {"kwargs", "state_dict"} <= keys:  # models.mappo_files.save_policy
        return CheckpointKind("mappo", path)
    if {"kwargs", "policy_state_dict"} <= keys:  # MAPPO's checkpoints of before format 2
        return CheckpointKind("mappo", path, training_checkpoint=True)
    if {"config", "state_dict"} <= keys:  # WFM1Policy.save_checkpoint, and WFM-1's old ones
        return CheckpointKind("wfm1", path)
    found = f"a torch file with keys {sorted(keys)}" if isinstance(data, dict) else \
        f"a torch file holding a {type(data).__name__}"
    raise _not_a_commander(path, found)


def load_commander_policy(found: CheckpointKind) -> Any:
    """The policy in the file ``found`` describes, loaded by the project's loader for its
    kind (none runs code from the file): an SB3 ``ActorCriticPolicy`` for ``ppo``,
    ``brigade`` and ``division``, a :class:`~models.mappo_policy.MAPPOPolicy` or a
    :class:`~models.wfm1.WFM1Policy`, on the CPU, in eval mode.

    Raises:
        FileNotFoundError, ValueError: as those loaders.
    """
    if found.kind == "mappo":
        if found.training_checkpoint:
            return policy_from_checkpoint(found.path)
        return load_policy(found.path)
    if found.kind == "wfm1":
        return WFM1Policy.load_checkpoint(found.path)
    if found.kind == "ppo":
        return load_ppo(found.path).policy.eval()
    choices = len(DRILLS) if found.kind == "brigade" else len(DIVISION_COMMANDS)
    return load_commander(found.path, found.obs_dim, found.n_commanded, choices).policy.eval()


__all__ = ["ACCEPTED", "CheckpointKind", "identify_checkpoint", "load_commander_policy"]
