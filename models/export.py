"""Commanders as ONNX models: each policy kind's deterministic action as one graph, with
what its inputs and outputs mean written into the model.

A game or a tool outside this project runs a trained commander with nothing but an ONNX
runtime: the graph takes what the battle shows the commander and gives the orders the
project's own deterministic play gives, bounds applied (:class:`SB3Action`,
:class:`MAPPOAction`, :class:`WFM1Action`; a formation head adds a second output,
``formation``). Each kind of :data:`KINDS` has its graph builder (:func:`ppo_graph`,
:func:`mappo_graph`, :func:`wfm1_graph`, :func:`brigade_graph`, :func:`division_graph`);
:func:`to_onnx` exports one with torch's ``torch.export``-based exporter (opset
:data:`OPSET`, the batch size and the token count left free) and writes into the model's
``metadata_props`` under :data:`METADATA_KEY` one JSON object: the kind, the project's
version, and every input's and output's shape, dtype, names and bounds.
``docs/deployment.md`` says what each kind computes and shows the metadata.
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import numpy as np
import onnx
import torch
from stable_baselines3.common.distributions import (
    DiagGaussianDistribution,
    MultiCategoricalDistribution,
)
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from envs.battles.entity_tokens import ENTITY_FEATURES
from envs.battles.multi_observation import OBS_DIM as TEAM_OBS_DIM
from envs.battles.multi_observation import OBS_HIGH as TEAM_OBS_HIGH
from envs.battles.multi_observation import OBS_LOW as TEAM_OBS_LOW
from envs.battles.multi_observation import OBSERVATION_FEATURES as TEAM_FEATURES
from envs.battles.observation import OBSERVATION_FEATURES as DUEL_FEATURES
from envs.commanders.orders import ORDER_DIM, ORDER_FEATURES
from envs.echelons.brigade_batch import brigade_observation_features
from envs.echelons.division_batch import DIVISION_COMMANDS, division_observation_features
from envs.options import MacroAction
from envs.sim.constants import (
    ACTION_DIM,
    ACTION_HIGH,
    ACTION_LOW,
    ACTION_NAMES,
    FORMATION_NAMES,
    KEEP_FORMATION,
)
from models.formation_orders import likeliest_codes
from models.mappo_policy import MAPPOPolicy
from models.order_choices import (
    OrderChoices,
    VolleyChoices,
    bar_unloaded_fire,
    most_likely_orders,
)
from models.wfm1 import CARD_DIM, CARD_FEATURES, WFM1Batch, WFM1Policy

logger = logging.getLogger(__name__)

KINDS = ("ppo", "mappo", "wfm1", "brigade", "division")
"""The policy kinds that export: the 1v1 PPO commander, a MAPPO team, WFM-1, and the
brigade and division commanders."""
METADATA_KEY = "commander"
"""The ``metadata_props`` key under which :func:`to_onnx` writes the model's description."""
EXPORT_FORMAT = 1
"""Version of that description's layout."""
OPSET = 18
"""The ONNX opset the graphs use (the lowest torch's exporter writes)."""
DRILLS = tuple(option.name.lower() for option in MacroAction)
"""A brigade commander's choices for each battalion, by index."""

_SIGNED = ("_cos", "_sin")


@dataclass(frozen=True)
class Port:
    """One input or output of an exported commander, as its metadata describes it.

    Args:
        name: the graph's name for it.
        dtype: ``"float32"``, ``"int64"`` or ``"bool"``.
        shape: sizes, a name (``"batch"``, ``"tokens"``) where the size is free.
        meaning: what it is, in a sentence.
        features: names of the last axis's entries (observation features, action
            channels), or None.
        low: the lower bound of each entry of the last axis (None: unbounded), or None.
        high: the upper bound of each entry of the last axis (None: unbounded), or None.
        choices: for a discrete action, the meaning of each choice index.
    """

    name: str
    dtype: str
    shape: tuple[int | str, ...]
    meaning: str
    features: tuple[str, ...] | None = None
    low: tuple[float | None, ...] | None = None
    high: tuple[float | None, ...] | None = None
    choices: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this port (fields that are None left out)."""
        out: dict[str, Any] = {"name": self.name, "dtype": self.dtype,
                               "shape": list(self.shape), "meaning": self.meaning}
        for key in ("features", "low", "high", "choices"):
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value)
        return out


@dataclass
class CommanderGraph:
    """A policy kind's deterministic action, ready for :func:`to_onnx`.

    Attributes:
        kind: one of :data:`KINDS`.
        module: the torch module computing the action from the inputs, in order.
        inputs, outputs: what each means (:class:`Port`).
        example: inputs to trace the module with (shapes other than the free sizes matter).
        free: for each input, its free axes by index and name (``{0: "batch"}``).
        details: further facts for the metadata (e.g. MAPPO's number of agents).
    """

    kind: str
    module: nn.Module
    inputs: list[Port]
    outputs: list[Port]
    example: tuple[torch.Tensor, ...]
    free: tuple[dict[int, str], ...]
    details: dict[str, Any] = field(default_factory=dict)


def _bounds(names: Sequence[str]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The [-1, 1] bounds of cosines and sines and [0, 1] of the rest (the convention of
    every observation here)."""
    low = tuple(-1.0 if name.endswith(_SIGNED) else 0.0 for name in names)
    return low, tuple(1.0 for _ in names)


def _floats(values: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in np.asarray(values, np.float64).reshape(-1))


ORDERS = Port("action", "float32", ("batch", ACTION_DIM),
              "each battalion's order, in its side's own frame (Red's rotate mirrored), "
              "clipped into the action box", ACTION_NAMES, ACTION_LOW, ACTION_HIGH)
"""The output of the kinds that give a battalion's continuous order."""


def _formations(shape: tuple[str, ...], whose: str, rest: str = "") -> Port:
    """The second output of a policy with a formation head: its likeliest formation
    order for each unit, as the battles take it."""
    codes = ", ".join(f"{code} {name}" for code, name in
                      enumerate(("keep", *FORMATION_NAMES), start=KEEP_FORMATION))
    return Port("formation", "int64", shape,
                f"{whose} formation order, the formation head's likeliest choice ({codes})"
                + rest)


# ----------------------------------------------------------------------------- SB3 kinds


class SB3Action(nn.Module):
    """What SB3's ``predict(observation, deterministic=True)`` gives, as one graph: the
    actor's trunk and head on the observation (``get_distribution``'s path), then for a
    ``Box`` action the mean clipped into the box (``predict`` clips with ``np.clip``; with
    :class:`~models.order_choices.OrderChoices` the likeliest march and fire and the
    wheel's mean, clipped, with :class:`~models.order_choices.VolleyChoices` the firing
    pairs barred first for a battalion that is not loaded), for a ``MultiDiscrete`` one
    each sub-action's most likely choice (the mode; the argmax of the logits is the argmax
    of the probabilities).

    Args:
        policy: an SB3 ``ActorCriticPolicy`` with a diagonal Gaussian or a multi-categorical
            action distribution, without output squashing.

    Raises:
        ValueError: for another distribution (gSDE, squashed outputs), which no trainer
            here uses.
    """

    def __init__(self, policy: ActorCriticPolicy) -> None:
        super().__init__()
        gaussian = isinstance(policy.action_dist, DiagGaussianDistribution)
        if not (gaussian or isinstance(policy.action_dist, MultiCategoricalDistribution)) \
                or policy.squash_output:
            raise ValueError(f"policy with {type(policy.action_dist).__name__} "
                             f"(squash_output={policy.squash_output}) is invalid: expected a "
                             "DiagGaussianDistribution or MultiCategoricalDistribution without "
                             "squashing, as the project's trainers build")
        self.policy = policy
        space = policy.action_space
        self.choices: list[int] | None = None if gaussian else [int(n) for n in space.nvec]
        if gaussian:
            self.register_buffer("low", torch.as_tensor(space.low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(space.high, dtype=torch.float32))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        policy = self.policy
        # The base class's extract_features, as get_distribution calls it.
        features = super(ActorCriticPolicy, policy).extract_features(
            observation, policy.pi_features_extractor)
        out = policy.action_net(policy.mlp_extractor.forward_actor(features))
        if isinstance(policy.action_dist, VolleyChoices):
            out = bar_unloaded_fire(out, observation)
        if isinstance(policy.action_dist, OrderChoices):
            out = most_likely_orders(out)
        if self.choices is None:
            return torch.clamp(out, self.low, self.high)
        return torch.stack([logits.argmax(dim=1)
                            for logits in torch.split(out, self.choices, dim=1)], dim=1)


def _observation(policy: ActorCriticPolicy, features: Sequence[str], meaning: str) -> Port:
    space = policy.observation_space
    if space.shape != (len(features),):
        raise ValueError(f"observation_space has shape {space.shape}: expected "
                         f"({len(features)},) for this kind's layout")
    return Port("observation", "float32", ("batch", len(features)), meaning, tuple(features),
                _floats(space.low), _floats(space.high))


def _sb3_graph(kind: str, policy: ActorCriticPolicy, observation: Port, action: Port
               ) -> CommanderGraph:
    return CommanderGraph(kind, SB3Action(policy).eval(), [observation], [action],
                          (torch.zeros(2, observation.shape[1]),), ({0: "batch"},))


def ppo_graph(policy: ActorCriticPolicy) -> CommanderGraph:
    """The 1v1 commander's graph: ``observation`` (batch, 25) -> ``action`` (batch, 3).

    Raises:
        ValueError: for a policy whose spaces are not the duel's.
    """
    observation = _observation(policy, DUEL_FEATURES, "Blue's view of the duel "
                               "(envs.battles.observation), each side in its own frame")
    if policy.action_space.shape != (ACTION_DIM,):
        raise ValueError(f"action_space has shape {policy.action_space.shape}: expected "
                         f"({ACTION_DIM},), a battalion's order")
    action = Port(ORDERS.name, ORDERS.dtype, ORDERS.shape, ORDERS.meaning, ORDERS.features,
                  _floats(policy.action_space.low), _floats(policy.action_space.high))
    return _sb3_graph("ppo", policy, observation, action)


def _commands(policy: ActorCriticPolicy, unit: str, choices: tuple[str, ...]) -> Port:
    nvec = [int(n) for n in getattr(policy.action_space, "nvec", [])]
    if not nvec or any(n != len(choices) for n in nvec):
        raise ValueError(f"action_space={policy.action_space} is invalid: expected a "
                         f"MultiDiscrete of {len(choices)} choices per {unit}")
    return Port("action", "int64", ("batch", len(nvec)),
                f"each {unit}'s choice (an index into choices)",
                tuple(f"{unit}_{i}" for i in range(len(nvec))), choices=choices)


def brigade_graph(policy: ActorCriticPolicy) -> CommanderGraph:
    """A brigade commander's graph: ``observation`` (batch, 3 + 7n + 1) -> ``action``
    (batch, n) drill indices (:data:`DRILLS`), n the battalions commanded.

    Raises:
        ValueError: for a policy whose spaces are not a brigade commander's.
    """
    action = _commands(policy, "battalion", DRILLS)
    observation = _observation(policy, brigade_observation_features(action.shape[1]),
                               "the brigade's view (envs.echelons.brigade_batch), in its "
                               "side's own frame")
    return _sb3_graph("brigade", policy, observation, action)


def division_graph(policy: ActorCriticPolicy) -> CommanderGraph:
    """A division commander's graph: ``observation`` (batch, 5 + 8n + 1) -> ``action``
    (batch, n) command indices (``DIVISION_COMMANDS``), n the brigades commanded.

    Raises:
        ValueError: for a policy whose spaces are not a division commander's.
    """
    action = _commands(policy, "brigade", tuple(DIVISION_COMMANDS))
    observation = _observation(policy, division_observation_features(action.shape[1]),
                               "the division's view (envs.echelons.division_batch), in its "
                               "side's own frame")
    return _sb3_graph("division", policy, observation, action)


# ----------------------------------------------------------------------------- MAPPO


class MAPPOAction(nn.Module):
    """Each battalion's deterministic order under a MAPPO team: its actor's mean
    (:meth:`~models.mappo_policy.MAPPOPolicy.act` with ``deterministic=True``), clipped into
    the action box as the battles clip every order. With one actor per agent, ``agent``
    picks each row's actor (the project's battles give battalion ``i`` of a side actor
    ``i mod n_agents``). A team with a formation head also gives each row's formation
    order, its likeliest choice (int64 codes, -1 keep, 0 line, ...).

    Args:
        policy: the team.
    """

    def __init__(self, policy: MAPPOPolicy) -> None:
        super().__init__()
        self.actors = nn.ModuleList(policy.all_actors())
        self.shared = policy.share_parameters
        self.formations = policy.formation_orders
        self.action_dim = policy.action_dim
        self.register_buffer("low", torch.tensor(ACTION_LOW, dtype=torch.float32))
        self.register_buffer("high", torch.tensor(ACTION_HIGH, dtype=torch.float32))

    def forward(self, observation: torch.Tensor, agent: torch.Tensor | None = None
                ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        # The actors' layers without MAPPOActor.forward's padding of the batch to blocks
        # of 32 rows (a guard against batch-dependent rounding in torch's kernels), whose
        # size depends on the batch and would not trace; the rows' values are the same.
        heads = [actor._heads(observation) if self.formations else actor.mean_action(observation)
                 for actor in self.actors]
        if self.shared:
            out = heads[0]
        else:
            stacked = torch.stack(heads, dim=1)  # (batch, n_agents, outputs)
            index = agent.reshape(-1, 1, 1).expand(-1, 1, stacked.shape[2])
            out = stacked.gather(1, index).squeeze(1)
        action = torch.clamp(out[:, :self.action_dim], self.low, self.high)
        if not self.formations:
            return action
        return action, likeliest_codes(out[:, self.action_dim:])


def mappo_graph(policy: MAPPOPolicy) -> CommanderGraph:
    """A MAPPO team's graph: ``observation`` (batch, obs_dim), and ``agent`` (batch,) when
    each agent has its own actor, -> ``action`` (batch, 3), and ``formation`` (batch,)
    for a team with a formation head.

    The observation is a team battle's (``OBS_DIM`` numbers,
    :mod:`envs.battles.multi_observation`) or an order-following battalion's (those, then
    its order: ``ORDER_DIM`` numbers, :mod:`envs.commanders.orders`).

    Raises:
        ValueError: for a policy of another observation or action size.
    """
    if policy.obs_dim == TEAM_OBS_DIM:
        features, low, high = TEAM_FEATURES, _floats(TEAM_OBS_LOW), _floats(TEAM_OBS_HIGH)
        meaning = "a battalion's view of the team battle (envs.battles.multi_observation)"
    elif policy.obs_dim == TEAM_OBS_DIM + ORDER_DIM:
        order_low, order_high = _bounds(ORDER_FEATURES)
        features = (*TEAM_FEATURES, *ORDER_FEATURES)
        low, high = _floats(TEAM_OBS_LOW) + order_low, _floats(TEAM_OBS_HIGH) + order_high
        meaning = ("a battalion's view of the team battle, then its order "
                   "(envs.commanders.orders)")
    else:
        raise ValueError(f"obs_dim={policy.obs_dim} is invalid: expected {TEAM_OBS_DIM} (a team "
                         f"battle's observation) or {TEAM_OBS_DIM + ORDER_DIM} (with an order)")
    if policy.action_dim != ACTION_DIM:
        raise ValueError(f"action_dim={policy.action_dim} is invalid: expected {ACTION_DIM}, a "
                         "battalion's order")
    inputs = [Port("observation", "float32", ("batch", policy.obs_dim),
                   meaning + ", each side in its own frame", features, low, high)]
    example: tuple[torch.Tensor, ...] = (torch.zeros(2, policy.obs_dim),)
    free: tuple[dict[int, str], ...] = ({0: "batch"},)
    if not policy.share_parameters:
        inputs.append(Port("agent", "int64", ("batch",),
                           f"whose actor gives the row's order, in [0, {policy.n_agents}): "
                           f"battalion i of a side is agent i mod {policy.n_agents}"))
        example += (torch.zeros(2, dtype=torch.long),)
        free += ({0: "batch"},)
    outputs = [ORDERS, *([_formations(("batch",), "each battalion's")]
                         if policy.formation_orders else [])]
    return CommanderGraph("mappo", MAPPOAction(policy).eval(), inputs, outputs, example, free,
                          {"n_agents": policy.n_agents,
                           "share_parameters": policy.share_parameters})


# ----------------------------------------------------------------------------- WFM-1


class WFM1Action(nn.Module):
    """Every own token's deterministic order under WFM-1, as the project's battles ask for
    it (:meth:`~models.wfm1.WFM1Policy.act` with the battalion echelon, a scenario card
    and ``deterministic=True``): the action means, zero where the token is not own,
    clipped into the action box as the battles clip every order; with a formation head
    also each own token's likeliest formation order (int64 codes, -1 keep, 0 line, ...;
    -1 where the token is not own).

    A token marked own and padding is treated as padding (``act`` refuses such a mask;
    a graph cannot raise).

    Args:
        policy: the WFM-1 policy.
    """

    def __init__(self, policy: WFM1Policy) -> None:
        super().__init__()
        self.policy = policy
        self.register_buffer("low", torch.tensor(ACTION_LOW, dtype=torch.float32))
        self.register_buffer("high", torch.tensor(ACTION_HIGH, dtype=torch.float32))

    def forward(self, tokens: torch.Tensor, pad_mask: torch.Tensor, own_mask: torch.Tensor,
                card: torch.Tensor) -> torch.Tensor:
        # act()'s network on a batch taken as it is: WFM1Batch.checked reads values
        # (finiteness, the own mask against the padding), which a graph cannot do.
        own = own_mask & ~pad_mask
        batch = WFM1Batch(tokens, pad_mask, own, card)
        mean, logits = self.policy._heads(*self.policy._features(batch))
        action = torch.clamp(mean.masked_fill(~own[..., None], 0.0), self.low, self.high)
        if logits is None:
            return action
        return action, likeliest_codes(logits).masked_fill(~own, KEEP_FORMATION)


def wfm1_graph(policy: WFM1Policy) -> CommanderGraph:
    """WFM-1's graph: ``tokens`` (batch, tokens, 19), ``pad_mask`` and ``own_mask`` (batch,
    tokens) and ``card`` (batch, 16) -> ``action`` (batch, tokens, 3), and ``formation``
    (batch, tokens) for a policy with a formation head.

    Raises:
        ValueError: for a policy of another token or action size, or one that reads the
            brigade and division tokens (``echelon_tokens=True``, ``model.echelon_tokens``):
            the graph takes the battalion tokens alone, and would play differently.
    """
    if policy.echelon_tokens:
        raise ValueError("a WFM-1 policy with echelon_tokens=True (model.echelon_tokens) "
                         "cannot be exported: its graph takes the battalion tokens alone, "
                         "without the brigade and division tokens the policy reads, so it "
                         "would play differently")
    if policy.token_dim != len(ENTITY_FEATURES) or policy.action_dim != ACTION_DIM:
        raise ValueError(f"token_dim={policy.token_dim}, action_dim={policy.action_dim} are "
                         f"invalid: expected {len(ENTITY_FEATURES)} (entity tokens) and "
                         f"{ACTION_DIM} (a battalion's order)")
    token_low, token_high = _bounds(ENTITY_FEATURES)
    card_low = tuple(0.0 for _ in CARD_FEATURES)
    # The scale and the unit counts over max_units have no upper bound.
    card_high = tuple(None if name in ("map_scale", "n_blue_units", "n_red_units") else 1.0
                      for name in CARD_FEATURES)
    inputs = [
        Port("tokens", "float32", ("batch", "tokens", policy.token_dim),
             "one entity token per battalion the side knows of, its own first "
             "(envs.battles.entity_tokens), in its own frame", ENTITY_FEATURES,
             token_low, token_high),
        Port("pad_mask", "bool", ("batch", "tokens"), "true where the position is padding"),
        Port("own_mask", "bool", ("batch", "tokens"),
             "true at the tokens of the side's own battalions, whose orders are wanted"),
        Port("card", "float32", ("batch", CARD_DIM),
             "the scenario card (models.wfm1.ScenarioCard.to_tensor)", CARD_FEATURES,
             card_low, card_high),
    ]
    outputs = [Port("action", "float32", ("batch", "tokens", ACTION_DIM),
                    "each own token's order, in its side's own frame (Red's rotate "
                    "mirrored), clipped into the action box; zeros elsewhere",
                    ACTION_NAMES, ACTION_LOW, ACTION_HIGH)]
    if policy.formation_orders:
        outputs.append(_formations(("batch", "tokens"), "each own token's",
                                   "; -1 elsewhere"))
    example = (torch.zeros(2, 3, policy.token_dim), torch.zeros(2, 3, dtype=torch.bool),
               torch.ones(2, 3, dtype=torch.bool), torch.zeros(2, CARD_DIM))
    free = ({0: "batch", 1: "tokens"}, {0: "batch", 1: "tokens"}, {0: "batch", 1: "tokens"},
            {0: "batch"})
    return CommanderGraph("wfm1", WFM1Action(policy).eval(), inputs, outputs, example, free,
                          {"echelon": "battalion"})


# ----------------------------------------------------------------------------- ONNX


def project_version() -> str:
    """This project's installed version (``"unknown"`` when it is not installed, as when
    run from a bare checkout)."""
    try:
        return metadata.version("wargames-training")
    except metadata.PackageNotFoundError:
        logger.warning("wargames-training is not installed: its version is recorded as "
                       "'unknown'")
        return "unknown"


def describe(graph: CommanderGraph, source: str | None = None) -> dict[str, Any]:
    """The JSON object :func:`to_onnx` writes under :data:`METADATA_KEY`."""
    return {"format": EXPORT_FORMAT, "kind": graph.kind, "project": "wargames-training",
            "project_version": project_version(), "source": source,
            "deterministic": True, **graph.details,
            "inputs": [port.to_dict() for port in graph.inputs],
            "outputs": [port.to_dict() for port in graph.outputs]}


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Torch's exporter without its chatter: warnings about its own internals and log
    lines about optional packages (torchvision) this project does not use. Attention's
    fused inference kernel is turned off meanwhile, so the exporter traces the plain
    operations of ``nn.MultiheadAttention``, which ONNX has."""
    registration = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = registration.level
    fast_path = torch.backends.mha.get_fastpath_enabled()
    registration.setLevel(logging.ERROR)
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fast_path)
        registration.setLevel(level)


def to_onnx(graph: CommanderGraph, source: str | None = None) -> bytes:
    """The ONNX model of ``graph``: its module exported with free batch (and token) sizes,
    its description (:func:`describe`) in ``metadata_props`` under :data:`METADATA_KEY`,
    checked by ``onnx.checker``.

    Args:
        graph: what to export.
        source: the checkpoint's name, recorded in the description.

    Returns:
        The serialised model.
    """
    dims = {name: torch.export.Dim(name) for free in graph.free for name in free.values()}
    dynamic = tuple({axis: dims[name] for axis, name in free.items()} for free in graph.free)
    with _quiet_exporter(), torch.no_grad():
        program = torch.onnx.export(
            graph.module, graph.example, dynamo=True, opset_version=OPSET,
            input_names=[port.name for port in graph.inputs],
            output_names=[port.name for port in graph.outputs],
            dynamic_shapes=dynamic, verbose=False)
    model = program.model_proto
    entry = model.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, json.dumps(describe(graph, source))
    model.producer_name = "wargames-training"
    model.producer_version = project_version()
    onnx.checker.check_model(model)
    return model.SerializeToString()


__all__ = ["CommanderGraph", "DRILLS", "EXPORT_FORMAT", "KINDS", "MAPPOAction", "METADATA_KEY",
           "OPSET", "ORDERS", "Port", "SB3Action", "WFM1Action", "brigade_graph", "describe",
           "division_graph", "mappo_graph", "ppo_graph", "project_version", "to_onnx",
           "wfm1_graph"]
