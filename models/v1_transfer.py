"""A trained v1 commander (SB3 PPO, one battalion) as the starting point of a MAPPO team:
:func:`load_v1_weights_into_mappo` maps its layers onto the MAPPO actor and critic."""

from __future__ import annotations

import logging
import os
import zipfile
from pathlib import Path

import torch
from torch import nn

from envs.sim.validation import check_bool
from models.mappo_policy import MAPPOPolicy
from models.weights import checkpoint_path, load_weights
from storage.files import check_archive, loads_json

logger = logging.getLogger(__name__)

_V1_ACTOR_TRUNK = "mlp_extractor.policy_net."
_V1_CRITIC_TRUNK = "mlp_extractor.value_net."


def _read_v1_checkpoint(path: Path) -> tuple[dict[str, torch.Tensor], str | None]:
    """The v1 policy's tensors and its activation (None if unreadable) from an SB3 .zip."""
    check_archive(path, "v1 checkpoint")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if "policy.pth" not in names:
                raise ValueError(f"{path} is not a v1 SB3 checkpoint: the archive has no "
                                 f"policy.pth (it holds {sorted(names)})")
            raw = archive.read("policy.pth")
            data = archive.read("data") if "data" in names else None
    except zipfile.BadZipFile as error:
        raise ValueError(f"{path} is not a v1 SB3 checkpoint (not a zip archive): "
                         f"{error}") from error
    state = load_weights(raw, f"v1 checkpoint {path}: policy.pth")
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor)
                                              for v in state.values()):
        raise ValueError(f"{path}: policy.pth is not a state dict of tensors")
    activation = None
    if data is not None:
        description = loads_json(data, f"v1 checkpoint {path}: data")
        kwargs = description.get("policy_kwargs", {}) if isinstance(description, dict) else None
        # BattalionMlpPolicy and SB3's ActorCriticPolicy both default to Tanh.
        activation = kwargs.get("activation", "tanh") if isinstance(kwargs, dict) else None
    return state, activation


def _fold_standardisation(state: dict[str, torch.Tensor]) -> None:
    """Fold a standardising features extractor (``normalize_observations``) into the first
    Linear layer of each trunk, in place: ``W (x - m) / s + b`` is ``(W / s) x + (b - W m / s)``,
    so the MAPPO networks, which take the raw observation, compute the same functions.
    The extractor's buffers leave ``state``."""
    for trunk, extractor in ((_V1_ACTOR_TRUNK, "pi_features_extractor."),
                             (_V1_CRITIC_TRUNK, "vf_features_extractor.")):
        if extractor + "standardize.mean" not in state:
            extractor = "features_extractor."  # shared by both trunks
        mean = state.get(extractor + "standardize.mean")
        std = state.get(extractor + "standardize.std")
        layers = _v1_linear_layers(state, trunk)
        if mean is None or std is None or not layers:
            continue
        weight, bias = state[layers[0] + ".weight"], layers[0] + ".bias"
        scaled = weight / std
        state[layers[0] + ".weight"] = scaled
        if bias in state:
            state[bias] = state[bias] - scaled @ mean
    for key in [k for k in state if "features_extractor.standardize." in k]:
        del state[key]


def _v1_linear_layers(state: dict[str, torch.Tensor], prefix: str) -> list[str]:
    """Prefixes (``mlp_extractor.policy_net.2``) of the Linear layers under ``prefix``, in order."""
    indices = []
    for key, value in state.items():
        rest = key[len(prefix):] if key.startswith(prefix) else ""
        head, _, tail = rest.partition(".")
        if head.isdigit() and tail == "weight" and value.ndim == 2:
            indices.append(int(head))
    return [f"{prefix}{i}" for i in sorted(indices)]


def _mappo_linear_layers(trunk: nn.Sequential, prefix: str) -> list[str]:
    return [f"{prefix}{name}" for name, module in trunk.named_children()
            if isinstance(module, nn.Linear)]


def _fit(source: torch.Tensor, target: torch.Size, pad_inputs: bool) -> torch.Tensor | None:
    """``source`` in the shape ``target``, or None if it does not fit.

    With ``pad_inputs``, a weight with fewer input columns fits: its columns go
    first and the rest are zero, so the extra inputs do not change the output.
    """
    if source.shape == target:
        return source.clone()
    if (pad_inputs and source.ndim == 2 and len(target) == 2
            and source.shape[0] == target[0] and source.shape[1] < target[1]):
        padded = torch.zeros(target, dtype=source.dtype)
        padded[:, :source.shape[1]] = source
        return padded
    return None


def load_v1_weights_into_mappo(v1_checkpoint_path: str | os.PathLike,
                               mappo_policy: MAPPOPolicy, *,
                               strict: bool = False) -> dict[str, list[str]]:
    """Seed ``mappo_policy`` with the weights of a trained v1 (SB3 PPO) commander.

    Only ``policy.pth`` is read from the archive, with
    ``torch.load(weights_only=True)``; nothing is unpickled. Layers map by
    position: the Linear layers of ``mlp_extractor.policy_net`` onto those of
    the actor trunk (every actor when parameters are not shared),
    ``action_net`` onto ``action_mean``, ``log_std`` onto ``log_std``; the
    Linear layers of ``mlp_extractor.value_net`` onto ``critic.trunk`` and
    ``value_net`` onto ``critic.value_head``. A layer's weight and bias move
    together or not at all.

    The MAPPO observation (and critic state) starts with the v1 observation's
    features, followed by features v1 never saw. So a first layer with the same
    width and at least as many inputs takes the v1 weight in its first columns
    and zeros in the rest: with plain (no LayerNorm) MLPs of the same
    activation, the MAPPO actor and critic then compute exactly the v1
    functions of those first inputs. A v1 policy that standardises its
    observations (``normalize_observations``) has the standardisation folded
    into those first layers. Every other layer transfers only on an exact shape
    match.

    Args:
        v1_checkpoint_path: the v1 ``.zip`` (suffix optional).
        mappo_policy: the policy to fill in place.
        strict: raise instead of skipping anything.

    Returns:
        ``{"loaded": MAPPO parameter names filled, "skipped": v1 keys not
        transferred}`` (the reasons are logged).

    Raises:
        FileNotFoundError: if the checkpoint does not exist.
        ValueError: if it is not a zip holding a readable ``policy.pth``, or, with
            ``strict``, if anything was skipped (the policy is then unchanged).
        TypeError: if ``mappo_policy`` is not a MAPPOPolicy.
    """
    if not isinstance(mappo_policy, MAPPOPolicy):
        raise TypeError(f"mappo_policy={type(mappo_policy).__name__} is invalid: expected a "
                        "MAPPOPolicy")
    strict = check_bool("strict", strict)
    path = checkpoint_path(v1_checkpoint_path)
    if path is None:
        raise FileNotFoundError(f"v1 checkpoint {v1_checkpoint_path} does not exist (also "
                                f"tried {v1_checkpoint_path}.zip)")
    v1, v1_activation = _read_v1_checkpoint(path)
    _fold_standardisation(v1)
    _warn_if_functions_differ(mappo_policy, path, v1_activation)
    targets = dict(mappo_policy.named_parameters())
    actor_prefixes = (["actor."] if mappo_policy.share_parameters
                      else [f"actors.{i}." for i in range(mappo_policy.n_agents)])
    problems: dict[str, str] = {}  # v1 key -> why it is not transferred
    plan, used = _plan(v1, targets, _layer_pairs(v1, mappo_policy, actor_prefixes, problems),
                       actor_prefixes, problems)
    for key in v1:
        if key not in used and key not in problems:
            problems[key] = "no MAPPO counterpart"
    skipped = [key for key in v1 if key in problems]
    if skipped and strict:
        raise ValueError(f"v1 checkpoint {path} does not fit the MAPPO policy (strict=True); "
                         "skipped: " + "; ".join(f"{k}: {problems[k]}" for k in skipped))
    with torch.no_grad():
        for name, value in plan:
            targets[name].copy_(value.to(dtype=targets[name].dtype, device=targets[name].device))
    if skipped:
        logger.warning("v1 checkpoint %s: skipped %d tensor(s): %s", path, len(skipped),
                       "; ".join(f"{k}: {problems[k]}" for k in skipped))
    logger.info("v1 checkpoint %s: loaded %d MAPPO tensor(s)", path, len(plan))
    return {"loaded": [name for name, _ in plan], "skipped": skipped}


def _warn_if_functions_differ(policy: MAPPOPolicy, path: Path,
                              v1_activation: str | None) -> None:
    """Warn when the copied networks cannot compute the v1 functions."""
    if policy.layer_norm:
        logger.warning("MAPPO policy uses LayerNorm: the v1 weights are copied, but the "
                       "MAPPO networks will not compute the v1 functions")
    if v1_activation is not None and v1_activation != policy.activation:
        logger.warning("v1 checkpoint %s uses activation %r but the MAPPO policy uses %r: the "
                       "copied networks will not compute the v1 functions", path,
                       v1_activation, policy.activation)


def _layer_pairs(v1: dict[str, torch.Tensor], policy: MAPPOPolicy, actor_prefixes: list[str],
                 problems: dict[str, str]) -> list[tuple[str, list[str], bool]]:
    """``(v1 layer, MAPPO layers, whether input columns may be padded)`` by position, a
    "layer" being a prefix whose ``.weight`` and ``.bias`` move together; v1 layers
    MAPPO has no place for go to ``problems``."""
    pairs: list[tuple[str, list[str], bool]] = []

    def pair_trunks(v1_prefix: str, trunk: nn.Sequential, mappo_prefixes: list[str]) -> None:
        v1_layers = _v1_linear_layers(v1, v1_prefix)
        mappo_layers = _mappo_linear_layers(trunk, "trunk.")
        for position, v1_layer in enumerate(v1_layers):
            if position >= len(mappo_layers):
                for suffix in (".weight", ".bias"):
                    problems[v1_layer + suffix] = (f"v1 has {len(v1_layers)} hidden layers, "
                                                   f"MAPPO only {len(mappo_layers)}")
                continue
            pairs.append((v1_layer, [p + mappo_layers[position] for p in mappo_prefixes],
                          position == 0))
        if len(mappo_layers) > len(v1_layers):
            logger.warning("MAPPO %strunk has %d Linear layers, v1 %s only %d: the extra "
                           "layers keep their initialisation", mappo_prefixes[0],
                           len(mappo_layers), v1_prefix.rstrip("."), len(v1_layers))

    pair_trunks(_V1_ACTOR_TRUNK, policy.all_actors()[0].trunk, actor_prefixes)
    pairs.append(("action_net", [p + "action_mean" for p in actor_prefixes], False))
    pair_trunks(_V1_CRITIC_TRUNK, policy.critic.trunk, ["critic."])
    pairs.append(("value_net", ["critic.value_head"], False))
    return pairs


def _plan(v1: dict[str, torch.Tensor], targets: dict[str, nn.Parameter],
          layer_pairs: list[tuple[str, list[str], bool]], actor_prefixes: list[str],
          problems: dict[str, str]) -> tuple[list[tuple[str, torch.Tensor]], set[str]]:
    """The ``(MAPPO parameter, value)`` copies of every layer that fits, and the v1 keys
    they use; a layer that does not fit goes to ``problems`` whole."""
    plan: list[tuple[str, torch.Tensor]] = []
    used: set[str] = set()

    def transfer(v1_keys: list[str], mappo_names: list[list[str]], pads: list[bool]) -> None:
        """Move the v1 tensors ``v1_keys`` together into each target group, or skip them all."""
        if not all(key in v1 for key in v1_keys):
            return  # the v1 file lacks this layer: nothing to transfer or report
        fitted = []
        for names in mappo_names:
            for key, name, pad in zip(v1_keys, names, pads, strict=True):
                value = _fit(v1[key], targets[name].shape, pad)
                if value is None:
                    reason = (f"shape {tuple(v1[key].shape)} does not fit {name} "
                              f"{tuple(targets[name].shape)}")
                    problems.setdefault(key, reason)
                    for other in v1_keys:  # a layer moves whole or not at all
                        problems.setdefault(other, f"its layer's {key}: {reason}")
                    return
                fitted.append((name, value))
        plan.extend(fitted)
        used.update(v1_keys)

    for v1_layer, mappo_layers, pad in layer_pairs:
        transfer([f"{v1_layer}.weight", f"{v1_layer}.bias"],
                 [[f"{m}.weight", f"{m}.bias"] for m in mappo_layers], [pad, False])
    transfer(["log_std"], [[p + "log_std"] for p in actor_prefixes], [False])
    return plan, used
