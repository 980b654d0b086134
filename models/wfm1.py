"""WFM-1: one generalist commander for any number of units, any echelon and any scenario.

A battle reaches WFM-1 as a row of entity tokens (:mod:`envs.battles.entity_tokens`) and
optionally as a :class:`ScenarioCard` that says what kind of battle it is.
:class:`EchelonEncoder` embeds the tokens and runs a pre-norm transformer over them;
:class:`CrossEchelonTransformer` fuses the pooled vectors of the echelons given into one
vector; a FiLM adapter, the identity until trained, modulates it by the card
(:meth:`WFM1Policy.freeze_base` leaves the adapter alone to train). The actor gives every
token an action mean from its own vector and the battle's (one order per own unit, an
unsquashed diagonal Gaussian), with ``formation_orders=True`` also a formation choice
(:class:`~models.formation_orders.Orders`); the critic values the battle. With
``echelon_tokens=True`` the policy also reads its side's brigade and division tokens
(:meth:`WFM1Policy.echelon_context`). :meth:`WFM1Policy.save_checkpoint` and
:meth:`WFM1Policy.load_checkpoint` write and read policies, tensors and plain values only.
``docs/wfm1.md`` ("The model") gives the design and its reasons.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Normal
from torch.nn import functional as F

from envs.battles.echelon_tokens import EchelonTokens, echelon_tokens
from envs.battles.entity_tokens import ENTITY_TOKEN_DIM, MAX_TOKENS, TOKEN, EntityView
from envs.sim.constants import KEEP_FORMATION
from envs.sim.validation import (
    check_bool,
    check_in_range,
    check_int,
    short_repr,
)
from models.formation_orders import (
    KEEP_CHOICE,
    Orders,
    check_formation_codes,
    formation_choices,
    make_formation_head,
)
from models.limits import check_architecture, check_dimension, check_hidden_sizes
from models.weights import (
    RebuildablePolicy,
    check_module_size,
    checkpoint_from_data,
    is_training_checkpoint,
    load_weights,
    save_weights,
)
from models.wfm1_inputs import (
    CARD_DIM,
    CARD_FEATURES,
    ECHELON_BATTALION,
    ECHELON_BRIGADE,
    ECHELON_CORPS,
    ECHELON_DIVISION,
    GIS_AUSTERLITZ,
    GIS_BORODINO,
    GIS_SALAMANCA,
    GIS_WATERLOO,
    N_ECHELONS,
    N_TERRAIN_TYPES,
    N_WEATHER,
    TERRAIN_PROCEDURAL,
    WEATHER_CLEAR,
    WEATHER_FOG,
    WEATHER_RAIN,
    WEATHER_SNOW,
    ScenarioCard,
    WFM1Batch,
    as_batch,
    as_float,
    as_mask,
    check_echelon,
    check_token_count,
)

__all__ = [
    "CARD_DIM", "CARD_FEATURES", "CHECKPOINT_KEYS", "CrossEchelonTransformer", "ECHELON_BATTALION",
    "ECHELON_BRIGADE", "ECHELON_CORPS", "ECHELON_DIVISION", "EchelonEncoder",
    "GIS_AUSTERLITZ", "GIS_BORODINO", "GIS_SALAMANCA", "GIS_WATERLOO", "N_ECHELONS",
    "N_TERRAIN_TYPES", "N_WEATHER", "ScenarioCard", "TERRAIN_PROCEDURAL",
    "TRAINING_CHECKPOINT_KIND", "WEATHER_CLEAR", "WEATHER_FOG", "WEATHER_RAIN", "WEATHER_SNOW",
    "WFM1Batch", "WFM1Policy", "own_action_error", "own_formation_error", "own_order_error",
]

CHECKPOINT_KEYS = ("config", "state_dict")
"""Keys every file written by :meth:`WFM1Policy.save_checkpoint` holds."""
TRAINING_CHECKPOINT_KIND = "wfm1"
"""The ``kind`` of WFM-1's training checkpoints (:class:`models.weights.TrainingCheckpoint`),
whose policy :meth:`WFM1Policy.load_checkpoint` reads too."""

# Orthogonal initialisation gains, as in models.mappo_policy: small action means and
# unit-scale values at the start.
_HIDDEN_GAIN = math.sqrt(2.0)
_ACTION_GAIN = 0.01
_VALUE_GAIN = 1.0


# ----------------------------------------------------------------------------- checks


def _check_model_shape(d_model: Any, n_heads: Any) -> tuple[int, int]:
    d_model = check_dimension("d_model", d_model)
    n_heads = check_dimension("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is invalid with n_heads={n_heads}: expected a "
                         "multiple of n_heads")
    return d_model, n_heads


def _check_dropout(value: Any) -> float:
    return check_in_range("dropout", value, 0.0, 1.0, high_open=True)


# ----------------------------------------------------------------------------- layers


def _transformer(d_model: int, n_heads: int, n_layers: int, dropout: float,
                 final_norm: bool) -> nn.TransformerEncoder:
    """A pre-norm transformer stack (FFN ``4 * d_model``, GELU, batch first)."""
    layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=4 * d_model,
                                       dropout=dropout, activation="gelu", batch_first=True,
                                       norm_first=True)
    # Nested tensors do not apply to pre-norm layers; saying so avoids torch's warning.
    return nn.TransformerEncoder(layer, n_layers, norm=nn.LayerNorm(d_model) if final_norm
                                 else None, enable_nested_tensor=False)


def _orthogonal_(linear: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(linear.weight, gain=gain)
    nn.init.zeros_(linear.bias)
    return linear


def _mlp_trunk(in_dim: int, hidden_sizes: tuple[int, ...]) -> nn.Sequential:
    """[Linear, LayerNorm, Tanh] per hidden size, orthogonally initialised."""
    layers: list[nn.Module] = []
    for size in hidden_sizes:
        layers += [_orthogonal_(nn.Linear(in_dim, size), _HIDDEN_GAIN), nn.LayerNorm(size),
                   nn.Tanh()]
        in_dim = size
    return nn.Sequential(*layers)


class EchelonEncoder(nn.Module):
    """Entity tokens of one echelon -> one vector per token and one for the row.

    Each token is embedded linearly, plus (optionally) a Fourier encoding of its
    position (``sin`` and ``cos`` of ``2 pi k x`` and ``2 pi k y`` for ``k = 1..n_freq_bands``,
    projected to ``d_model``) and a learned embedding of the echelon; a pre-norm
    transformer then lets every token attend to the others (padding masked). Tokens
    carry no index embedding, so the encoder is equivariant to the tokens' order.

    Args:
        token_dim: numbers per token (>= 1; the features ``x`` and ``y`` must exist
            when ``use_spatial_pe``).
        d_model: width of the vectors (a multiple of ``n_heads``).
        n_heads: attention heads.
        n_layers: transformer layers (>= 1).
        dropout: dropout of the transformer, in [0, 1).
        use_spatial_pe: add the Fourier position encoding.
        n_freq_bands: frequencies of that encoding (>= 1).
        use_echelon_embedding: add the learned echelon embedding.

    Raises:
        ValueError, TypeError: for an invalid argument (the message names it), such as
            an architecture field past its bound in :mod:`models.limits`.
    """

    def __init__(self, token_dim: int = ENTITY_TOKEN_DIM, d_model: int = 128, n_heads: int = 8,
                 n_layers: int = 4, dropout: float = 0.0, use_spatial_pe: bool = True,
                 n_freq_bands: int = 8, use_echelon_embedding: bool = True) -> None:
        super().__init__()
        self.token_dim = check_dimension("token_dim", token_dim)
        self.d_model, n_heads = _check_model_shape(d_model, n_heads)
        n_layers = check_dimension("n_layers", n_layers)
        dropout = _check_dropout(dropout)
        self.use_spatial_pe = check_bool("use_spatial_pe", use_spatial_pe)
        n_freq_bands = check_dimension("n_freq_bands", n_freq_bands)
        self.use_echelon_embedding = check_bool("use_echelon_embedding", use_echelon_embedding)
        position = max(TOKEN["x"], TOKEN["y"])
        if self.use_spatial_pe and self.token_dim <= position:
            raise ValueError(f"token_dim={self.token_dim} is invalid with use_spatial_pe=True: "
                             f"expected > {position}, so that the tokens hold x and y")

        self.token_embedding = nn.Linear(self.token_dim, self.d_model)
        if self.use_spatial_pe:
            # Not saved: it follows from n_freq_bands.
            self.register_buffer("frequencies", 2 * math.pi * torch.arange(
                1, n_freq_bands + 1, dtype=torch.float32), persistent=False)
            self.spatial_projection = nn.Linear(4 * n_freq_bands, self.d_model)
        if self.use_echelon_embedding:
            self.echelon_embedding = nn.Parameter(torch.empty(N_ECHELONS, self.d_model))
            nn.init.normal_(self.echelon_embedding, std=0.02)
        self.transformer = _transformer(self.d_model, n_heads, n_layers, dropout,
                                        final_norm=True)
        # The identity at first: the pooled vector starts as the plain mean.
        self.out_proj = nn.Linear(self.d_model, self.d_model)
        with torch.no_grad():
            self.out_proj.weight.copy_(torch.eye(self.d_model))
            self.out_proj.bias.zero_()

    def encode(self, tokens: torch.Tensor, echelon: int | torch.Tensor = ECHELON_BATTALION,
               pad_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Encode a batch of token rows.

        Args:
            tokens: ``(B, N, token_dim)`` float tensor, ``N >= 1``.
            echelon: the echelon of every row (an int) or of each row (``(B,)`` long).
            pad_mask: ``(B, N)`` bool, True where the position is padding (default:
                none is).

        Returns:
            ``(per_token (B, N, d_model), pooled (B, d_model))``: padding positions'
            vectors are zero, and a row that is all padding pools to zeros.

        Raises:
            ValueError, TypeError: for a wrong shape or dtype, or an echelon outside
                ``[0, N_ECHELONS)``.
        """
        if tokens.ndim != 3 or tokens.shape[1] < 1 or tokens.shape[2] != self.token_dim:
            raise ValueError(f"tokens has shape {tuple(tokens.shape)}: expected (batch, "
                             f"n_tokens >= 1, {self.token_dim})")
        check_token_count("tokens", tuple(tokens.shape))
        batch, n_tokens = tokens.shape[:2]
        echelon = check_echelon(echelon, batch)
        if pad_mask is None:
            pad_mask = torch.zeros(batch, n_tokens, dtype=torch.bool, device=tokens.device)
        pad_mask = as_mask("pad_mask", pad_mask, (batch, n_tokens), tokens.device)
        if isinstance(echelon, torch.Tensor):
            echelon = echelon.to(tokens.device)
        return self._encode(tokens.float(), echelon, pad_mask)

    def forward(self, tokens: torch.Tensor, echelon: int | torch.Tensor = ECHELON_BATTALION,
                pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The pooled vector of each row, ``(B, d_model)`` (see :meth:`encode`)."""
        return self.encode(tokens, echelon, pad_mask)[1]

    def _encode(self, tokens: torch.Tensor, echelon: int | torch.Tensor,
                pad_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`encode` on checked inputs."""
        x = self.token_embedding(tokens)
        if self.use_spatial_pe:
            x = x + self.spatial_projection(self._fourier(tokens))
        if self.use_echelon_embedding:
            embedding = self.echelon_embedding[echelon]
            x = x + (embedding if isinstance(echelon, int) else embedding[:, None, :])
        # Attention over a row with every key masked is 0/0 = NaN, which would spread
        # through the batch's gradients; such a row attends to its first position
        # instead, and its outputs are zeroed below.
        empty = pad_mask.all(dim=1)
        first = torch.zeros_like(pad_mask)
        first[:, 0] = True
        attention_mask = pad_mask & ~(first & empty[:, None])
        per_token = self.transformer(x, src_key_padding_mask=attention_mask)
        per_token = per_token.masked_fill(pad_mask[..., None], 0.0)
        count = (~pad_mask).sum(dim=1, keepdim=True)
        mean = per_token.sum(dim=1) / count.clamp(min=1)
        # out_proj's bias would make an empty row's pooled vector non-zero.
        pooled = self.out_proj(mean) * (count > 0)
        return per_token, pooled

    def _fourier(self, tokens: torch.Tensor) -> torch.Tensor:
        """``[sin 2 pi k x, cos 2 pi k x, sin 2 pi k y, cos 2 pi k y]``, ``(B, N, 4F)``."""
        x = tokens[..., TOKEN["x"], None] * self.frequencies
        y = tokens[..., TOKEN["y"], None] * self.frequencies
        return torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=-1)


class CrossEchelonTransformer(nn.Module):
    """The pooled vectors of several echelons -> one vector.

    Each input vector gets its echelon's learned embedding, a pre-norm transformer mixes
    them, and their mean goes through a LayerNorm.

    Args:
        d_model: width of the vectors (a multiple of ``n_heads``).
        n_heads: attention heads.
        n_layers: transformer layers (>= 1).
        dropout: dropout of the transformer, in [0, 1).

    Raises:
        ValueError, TypeError: for an invalid argument (the message names it), such as
            an architecture field past its bound in :mod:`models.limits`.
    """

    def __init__(self, d_model: int = 128, n_heads: int = 8, n_layers: int = 2,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model, n_heads = _check_model_shape(d_model, n_heads)
        n_layers = check_dimension("n_layers", n_layers)
        dropout = _check_dropout(dropout)
        self.echelon_embedding = nn.Parameter(torch.empty(N_ECHELONS, self.d_model))
        nn.init.normal_(self.echelon_embedding, std=0.02)
        self.transformer = _transformer(self.d_model, n_heads, n_layers, dropout,
                                        final_norm=False)
        self.norm = nn.LayerNorm(self.d_model)

    def forward(self, pooled: torch.Tensor, echelons: torch.Tensor | None = None
                ) -> torch.Tensor:
        """Fuse ``pooled`` (``(B, E, d_model)``) into ``(B, d_model)``.

        Args:
            pooled: one vector per echelon given.
            echelons: the echelon of each vector, ``(E,)`` or ``(B, E)`` long; default
                ``0..E-1`` (the vectors in echelon order, battalions first).

        Raises:
            ValueError: for a wrong shape or an echelon outside ``[0, N_ECHELONS)``.
        """
        if pooled.ndim != 3 or pooled.shape[2] != self.d_model or pooled.shape[1] < 1:
            raise ValueError(f"pooled has shape {tuple(pooled.shape)}: expected (batch, "
                             f"n_echelons >= 1, {self.d_model})")
        if echelons is None:
            if pooled.shape[1] > N_ECHELONS:
                raise ValueError(f"pooled holds {pooled.shape[1]} vectors: expected at most "
                                 f"{N_ECHELONS} when no echelons are given")
            echelons = torch.arange(pooled.shape[1], device=pooled.device)
        elif echelons.numel() and (int(echelons.min()) < 0 or
                                   int(echelons.max()) >= N_ECHELONS):
            raise ValueError(f"echelons contains {int(echelons.min())}..{int(echelons.max())}: "
                             f"expected echelon indices in [0, {N_ECHELONS - 1}]")
        return self._fuse(pooled, echelons)

    def _fuse(self, pooled: torch.Tensor, echelons: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` on checked inputs."""
        mixed = self.transformer(pooled + self.echelon_embedding[echelons])
        return self.norm(mixed.mean(dim=1))


class _ScenarioCardEncoder(nn.Module):
    """FiLM adapter: an encoded card -> ``(gamma, beta)``, each ``(B, d_model)``.

    The heads start with zero weights and biases of one (gamma) and zero (beta), so the
    modulation ``f * gamma + beta`` is the identity until the adapter is trained.
    """

    def __init__(self, card_dim: int = CARD_DIM, hidden: int = 64, d_model: int = 128) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(card_dim, hidden), nn.LayerNorm(hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.Tanh())
        self.gamma = nn.Linear(hidden, d_model)
        self.beta = nn.Linear(hidden, d_model)
        with torch.no_grad():
            for head, bias in ((self.gamma, 1.0), (self.beta, 0.0)):
                head.weight.zero_()
                head.bias.fill_(bias)

    def forward(self, card: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.mlp(card)
        return self.gamma(hidden), self.beta(hidden)


# ----------------------------------------------------------------------------- the policy


def own_action_error(means: torch.Tensor, targets: torch.Tensor,
                     own: torch.Tensor) -> torch.Tensor:
    """The mean squared error between action means and target actions ``(B, N,
    action_dim)`` over the own tokens (``own``, ``(B, N)`` bool), per action dimension; 0
    when no token is own. The imitation's and the fine-tuning's loss."""
    squared = ((means - targets) ** 2).sum(-1).masked_fill(~own, 0.0)
    return squared.sum() / (own.sum().clamp(min=1) * means.shape[-1])


def own_formation_error(logits: torch.Tensor, codes: torch.Tensor,
                        own: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy between formation logits ``(B, N, FORMATION_CHOICES)`` and
    target formation codes ``(B, N)`` (-1 keep, 0 line, ...) over the own tokens
    (``own``, ``(B, N)`` bool; the other tokens' codes are ignored); 0 when no token is
    own. The imitation's and the fine-tuning's loss on the formation head."""
    choices = formation_choices(codes).masked_fill(~own, KEEP_CHOICE)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), choices.reshape(-1),
                           reduction="none").view_as(choices).masked_fill(~own, 0.0)
    return loss.sum() / own.sum().clamp(min=1)


def own_order_error(means: torch.Tensor, logits: torch.Tensor | None, targets: torch.Tensor,
                    own: torch.Tensor) -> torch.Tensor:
    """How far a policy's orders for ``(B, N)`` tokens are from target orders ``(B, N,
    width)`` over the own tokens: :func:`own_action_error` of the action ``means`` against
    the targets' continuous numbers, plus, with formation ``logits`` (None: no formation
    head) and targets that carry a formation code last, :func:`own_formation_error`. The
    imitation's, the fine-tuning's and the teacher's loss."""
    width = means.shape[-1]
    error = own_action_error(means, targets[..., :width], own)
    if logits is None or targets.shape[-1] == width:
        return error
    return error + own_formation_error(logits, targets[..., width], own)


class WFM1Policy(RebuildablePolicy):
    """WFM-1: entity tokens (and optionally a scenario card) -> one Gaussian action per
    token (and, with ``formation_orders``, a formation choice) and one value per battle
    (module docstring).

    Inputs reach the policy as a :class:`WFM1Batch` (``tokens`` ``(B, N, token_dim)``:
    ``B`` battles, ``N >= 1`` token positions; masks ``(B, N)``), which
    :meth:`WFM1Batch.checked` builds from tensors or array-likes; :meth:`act` also takes
    the raw inputs and builds it.

    Args:
        token_dim: numbers per token (:data:`~envs.battles.entity_tokens.ENTITY_TOKEN_DIM`).
        action_dim: numbers per unit's action (>= 1).
        d_model: width of the vectors (a multiple of ``n_heads``).
        n_heads: attention heads of every transformer.
        n_echelon_layers: layers of each echelon encoder (>= 1).
        n_cross_layers: layers of the cross-echelon transformer (>= 1).
        actor_hidden_sizes: hidden widths of the actor's head.
        critic_hidden_sizes: hidden widths of the critic's head.
        dropout: dropout of the transformers, in [0, 1).
        use_spatial_pe: add the Fourier position encoding to the tokens.
        share_echelon_encoders: one encoder for every echelon (with an echelon
            embedding), or one encoder per echelon (without: each knows its echelon).
        card_hidden_size: width of the card adapter's MLP.
        formation_orders: the actor also orders every unit's formation: a categorical
            head over :data:`~models.formation_orders.FORMATION_CHOICES`, starting to
            keep the formation 93 % of the time. Actions are then :attr:`order_width` =
            ``action_dim + 1`` numbers, the last the formation code (-1 keep, 0 line,
            ...); :meth:`forward` and the means of :meth:`evaluate_actions` stay the
            Gaussian's. Saved in :attr:`kwargs` only when True, so the files of policies
            without the head keep their layout.
        echelon_tokens: the policy reads its side's brigade and division tokens
            (:mod:`envs.battles.echelon_tokens`) beside the battalions' as the other
            echelons' context: every batch then holds them (``tokens_per_echelon`` with
            the brigade and division echelons; :meth:`echelon_context` builds them from the
            battalion view and :meth:`echelon_inputs` passes them on). The acting echelon
            stays the battalion. Saved in :attr:`kwargs` only when True (with
            ``brigade_size``), so the files of policies without it keep their layout.
        brigade_size: battalions a brigade token groups (>= 1), with ``echelon_tokens``.

    Raises:
        ValueError, TypeError: for an invalid argument (the message names it), such as
            an architecture field past its bound in :mod:`models.limits`.
    """

    def __init__(self, token_dim: int = ENTITY_TOKEN_DIM, action_dim: int = 3,
                 d_model: int = 128, n_heads: int = 8, n_echelon_layers: int = 4,
                 n_cross_layers: int = 2, actor_hidden_sizes: Sequence[int] = (256, 128),
                 critic_hidden_sizes: Sequence[int] = (256, 128), dropout: float = 0.0,
                 use_spatial_pe: bool = True, share_echelon_encoders: bool = True,
                 card_hidden_size: int = 64, formation_orders: bool = False,
                 echelon_tokens: bool = False, brigade_size: int = 4) -> None:
        super().__init__()
        self.token_dim = check_dimension("token_dim", token_dim)
        self.action_dim = check_dimension("action_dim", action_dim)
        self.d_model, n_heads = _check_model_shape(d_model, n_heads)
        n_echelon_layers = check_dimension("n_echelon_layers", n_echelon_layers)
        n_cross_layers = check_dimension("n_cross_layers", n_cross_layers)
        actor_hidden = check_hidden_sizes("actor_hidden_sizes", actor_hidden_sizes)
        critic_hidden = check_hidden_sizes("critic_hidden_sizes", critic_hidden_sizes)
        dropout = _check_dropout(dropout)
        use_spatial_pe = check_bool("use_spatial_pe", use_spatial_pe)
        self.share_echelon_encoders = check_bool("share_echelon_encoders",
                                                 share_echelon_encoders)
        card_hidden_size = check_dimension("card_hidden_size", card_hidden_size)
        self.formation_orders = check_bool("formation_orders", formation_orders)
        self._kwargs: dict[str, Any] = dict(
            token_dim=self.token_dim, action_dim=self.action_dim, d_model=self.d_model,
            n_heads=n_heads, n_echelon_layers=n_echelon_layers, n_cross_layers=n_cross_layers,
            actor_hidden_sizes=list(actor_hidden), critic_hidden_sizes=list(critic_hidden),
            dropout=dropout, use_spatial_pe=use_spatial_pe,
            share_echelon_encoders=self.share_echelon_encoders,
            card_hidden_size=card_hidden_size)
        if self.formation_orders:  # absent from the files of policies without the head
            self._kwargs["formation_orders"] = True
        self.echelon_tokens = check_bool("echelon_tokens", echelon_tokens)
        self.brigade_size = check_int("brigade_size", brigade_size, minimum=1,
                                      maximum=MAX_TOKENS)
        if self.echelon_tokens:  # absent from the files of policies without them
            self._kwargs.update(echelon_tokens=True, brigade_size=self.brigade_size)
        self.order_width = self.action_dim + self.formation_orders
        """Numbers in one unit's order: ``action_dim``, plus the formation code with a
        formation head."""

        def make_encoder(use_echelon_embedding: bool) -> EchelonEncoder:
            return EchelonEncoder(self.token_dim, self.d_model, n_heads, n_echelon_layers,
                                  dropout, use_spatial_pe,
                                  use_echelon_embedding=use_echelon_embedding)

        if self.share_echelon_encoders:
            self.encoder = make_encoder(True)
        else:
            self.encoders = nn.ModuleList(make_encoder(False) for _ in range(N_ECHELONS))
        self.cross = CrossEchelonTransformer(self.d_model, n_heads, n_cross_layers, dropout)
        self.card_encoder = _ScenarioCardEncoder(CARD_DIM, card_hidden_size, self.d_model)
        self.actor_trunk = _mlp_trunk(2 * self.d_model, actor_hidden)
        self.action_mean = _orthogonal_(nn.Linear(actor_hidden[-1], self.action_dim),
                                        _ACTION_GAIN)
        self.log_std = nn.Parameter(torch.zeros(self.action_dim))
        self.critic_trunk = _mlp_trunk(self.d_model, critic_hidden)
        self.value_head = _orthogonal_(nn.Linear(critic_hidden[-1], 1), _VALUE_GAIN)
        # Built last, so that the rest of the network starts the same with it or without.
        self.formation_head = (make_formation_head(actor_hidden[-1]) if self.formation_orders
                               else None)

    # ----------------------------------------------------------------- structure

    def n_parameters(self) -> int:
        """Number of parameters (trainable or frozen)."""
        return sum(p.numel() for p in self.parameters())

    def adapter_parameters(self) -> Iterator[nn.Parameter]:
        """The card adapter's parameters (what :meth:`freeze_base` leaves trainable)."""
        return self.card_encoder.parameters()

    def base_parameters(self) -> Iterator[nn.Parameter]:
        """Every parameter but the card adapter's."""
        adapter = {id(p) for p in self.card_encoder.parameters()}
        return (p for p in self.parameters() if id(p) not in adapter)

    def freeze_base(self) -> None:
        """Stop gradients to every parameter but the adapter's (to fine-tune on a card)."""
        for parameter in self.base_parameters():
            parameter.requires_grad_(False)

    def unfreeze_base(self) -> None:
        """Undo :meth:`freeze_base`."""
        for parameter in self.base_parameters():
            parameter.requires_grad_(True)

    # ----------------------------------------------------------------- echelon tokens

    def echelon_context(self, view: EntityView, first_unit: int | np.ndarray = 0
                        ) -> EchelonTokens | None:
        """The brigade and division tokens this policy reads beside ``view`` (a side's
        battalion tokens; ``first_unit`` as in
        :func:`~envs.battles.echelon_tokens.echelon_tokens`: Red's is the battle's Blue
        battalions), or None for a policy without ``echelon_tokens``."""
        if not self.echelon_tokens:
            return None
        return echelon_tokens(view, self.brigade_size, first_unit)

    def echelon_inputs(self, echelons: EchelonTokens | None) -> dict[str, Any]:
        """The keyword arguments that give :meth:`WFM1Batch.checked` (and :meth:`act` on
        tokens) the brigade and division tokens: ``tokens_per_echelon`` and ``pad_masks``;
        ``{}`` for a policy without ``echelon_tokens`` (``echelons`` is then ignored). The
        fields of ``echelons`` may be arrays or tensors.

        Raises:
            ValueError: for a policy with ``echelon_tokens`` and no ``echelons``, or
                ``echelons`` of another ``brigade_size``.
        """
        if not self.echelon_tokens:
            return {}
        if echelons is None:
            raise ValueError("echelons=None is invalid: the policy has echelon_tokens=True "
                             "and reads its side's brigade and division tokens")
        if echelons.brigade_size != self.brigade_size:
            raise ValueError(f"echelons has brigade_size={echelons.brigade_size}: expected "
                             f"the policy's brigade_size={self.brigade_size}")
        return {"tokens_per_echelon": {ECHELON_BRIGADE: echelons.brigade,
                                       ECHELON_DIVISION: echelons.division},
                "pad_masks": {ECHELON_BRIGADE: echelons.brigade_pad,
                              ECHELON_DIVISION: echelons.division_pad}}

    # ----------------------------------------------------------------- network

    def _encode(self, tokens: torch.Tensor, pad_mask: torch.Tensor,
                echelon: int | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token and pooled vectors under the echelon's encoder."""
        if self.share_echelon_encoders:
            return self.encoder._encode(tokens, echelon, pad_mask)
        if isinstance(echelon, int):
            return self.encoders[echelon]._encode(tokens, echelon, pad_mask)
        # One echelon per row: run each encoder on its own rows; index_put keeps autograd.
        batch, n_tokens = tokens.shape[:2]
        per_token = tokens.new_zeros(batch, n_tokens, self.d_model)
        pooled = tokens.new_zeros(batch, self.d_model)
        for level in torch.unique(echelon).tolist():
            rows = echelon == level
            h, p = self.encoders[level]._encode(tokens[rows], level, pad_mask[rows])
            per_token = per_token.index_put((rows,), h)
            pooled = pooled.index_put((rows,), p)
        return per_token, pooled

    def _features(self, batch: WFM1Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """``(h (B, N, d), f (B, d))``: the acting echelon's per-token vectors and the
        battle's fused, card-modulated vector."""
        per_token, pooled = self._encode(batch.tokens, batch.pad_mask, batch.echelon)
        vectors, levels = [pooled], [batch.echelon]
        for level, tokens, mask in batch.others:
            vectors.append(self._encode(tokens, mask, level)[1])
            levels.append(level)
        if isinstance(batch.echelon, torch.Tensor):
            echelons = batch.echelon[:, None]
        else:
            echelons = torch.tensor(levels, device=pooled.device)
        fused = self.cross._fuse(torch.stack(vectors, dim=1), echelons)
        if batch.card is not None:
            gamma, beta = self.card_encoder(batch.card)
            fused = fused * gamma + beta
        return per_token, fused

    def _actor_hidden(self, per_token: torch.Tensor, fused: torch.Tensor) -> torch.Tensor:
        """The actor trunk's output for each token, from ``concat(h_i, f)``."""
        both = torch.cat((per_token, fused[:, None, :].expand_as(per_token)), dim=-1)
        return self.actor_trunk(both)

    def _means(self, per_token: torch.Tensor, fused: torch.Tensor) -> torch.Tensor:
        """Each token's action mean, ``(B, N, action_dim)``."""
        return self.action_mean(self._actor_hidden(per_token, fused))

    def _heads(self, per_token: torch.Tensor, fused: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Each token's action mean ``(B, N, action_dim)`` and formation logits ``(B, N,
        FORMATION_CHOICES)`` (None without the head), the trunk run once."""
        hidden = self._actor_hidden(per_token, fused)
        logits = None if self.formation_head is None else self.formation_head(hidden)
        return self.action_mean(hidden), logits

    def _orders(self, per_token: torch.Tensor, fused: torch.Tensor) -> Orders:
        """Each token's order distribution (:class:`~models.formation_orders.Orders`, batch
        shape ``(B, N)``)."""
        mean, logits = self._heads(per_token, fused)
        gaussian = Normal(mean, self.log_std.exp().expand_as(mean))
        return Orders(gaussian, None if logits is None else Categorical(logits=logits))

    def _value(self, fused: torch.Tensor) -> torch.Tensor:
        return self.value_head(self.critic_trunk(fused)).squeeze(-1)

    def forward(self, batch: WFM1Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Action means ``(B, N, action_dim)`` of every token and values ``(B,)``, with
        gradients. The means are the Gaussian's only, with a formation head too
        (:meth:`heads` gives its logits).

        Raises:
            TypeError: for a ``batch`` that is not a :class:`WFM1Batch`.
        """
        per_token, fused = self._features(as_batch(batch))
        return self._means(per_token, fused), self._value(fused)

    def heads(self, batch: WFM1Batch
              ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Every token's action mean ``(B, N, action_dim)`` and formation logits ``(B, N,
        FORMATION_CHOICES)`` (None without a formation head), and values ``(B,)``, with
        gradients, from one forward pass: for losses on both heads, as the imitation's.

        Raises:
            TypeError: for a ``batch`` that is not a :class:`WFM1Batch`.
        """
        per_token, fused = self._features(as_batch(batch))
        return *self._heads(per_token, fused), self._value(fused)

    # ----------------------------------------------------------------- acting

    def act(self, batch: WFM1Batch | Any, pad_mask: Any = None, *,
            deterministic: bool = False, noise: Any = None, **inputs: Any
            ) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample (or take the mean of) every own unit's action, without gradients.

        Actions are the raw Gaussian draws, not clipped (the environment clips), and
        their log-probabilities are those of the drawn values, so they match
        :meth:`evaluate_actions` on the same actions.

        Args:
            batch: a :class:`WFM1Batch`, or the acting echelon's tokens ``(B, N,
                token_dim)``, which :meth:`WFM1Batch.checked` makes a batch of with
                ``pad_mask`` and ``inputs``.
            pad_mask: with tokens, ``(B, N)`` bool, True at padding (None: no padding).
            deterministic: return the means (and the likeliest formation choices)
                instead of samples.
            noise: standard normal draws ``(B, N, order_width)`` to sample with instead
                of torch's generator: ``mean + std * noise``, and with a formation head
                the choice the last draw decides
                (:meth:`~models.formation_orders.Orders.sample`, as MAPPO's keyed draws).
            **inputs: with tokens, the other inputs of :meth:`WFM1Batch.checked`
                (``own_mask``, ``echelon``, ``card``, ``card_vec``, ``tokens_per_echelon``,
                ``pad_masks``).

        Returns:
            ``(actions (B, N, order_width), log_probs (B, N))``, log-probabilities summed
            over the order's parts; both zero where the token is not own. With a formation
            head the last column is the formation code (-1 keep, 0 line, ...).

        Raises:
            ValueError, TypeError: as :meth:`WFM1Batch.checked`, for noise of the wrong
                shape, or for a batch given with ``pad_mask`` or ``inputs``.
        """
        deterministic = check_bool("deterministic", deterministic)
        batch = self._batch(batch, pad_mask, inputs)
        with torch.no_grad():
            return self._sample(self._orders(*self._features(batch)), batch.own_mask,
                                deterministic, noise)

    def _batch(self, batch: Any, pad_mask: Any, inputs: dict[str, Any]) -> WFM1Batch:
        """:meth:`act`'s batch: ``batch`` itself, or raw inputs checked once."""
        if not isinstance(batch, WFM1Batch):
            return WFM1Batch.checked(self, batch, pad_mask, **inputs)
        given = ["pad_mask"] * (pad_mask is not None) + sorted(inputs)
        if given:
            raise ValueError(f"{', '.join(given)} given with a WFM1Batch: expected the batch "
                             "alone, which holds every input")
        return batch

    def act_and_value(self, batch: WFM1Batch, *, deterministic: bool = False,
                      noise: Any = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`act` and :meth:`get_value` from one forward pass (a rollout needs both).

        Returns:
            ``(actions (B, N, order_width), log_probs (B, N), values (B,))``.

        Raises:
            ValueError, TypeError: for a ``batch`` that is not a :class:`WFM1Batch`, or
                as :meth:`act` for ``deterministic`` and ``noise``.
        """
        deterministic = check_bool("deterministic", deterministic)
        batch = as_batch(batch)
        with torch.no_grad():
            per_token, fused = self._features(batch)
            actions, log_probs = self._sample(self._orders(per_token, fused), batch.own_mask,
                                              deterministic, noise)
            return actions, log_probs, self._value(fused)

    def _sample(self, orders: Orders, own: torch.Tensor, deterministic: bool,
                noise: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Orders drawn from ``orders`` (or its mode) and their log-probabilities, zero
        where the token is not own."""
        if deterministic:
            actions = orders.mode()
        elif noise is None:
            actions = orders.sample()
        else:
            noise_t = as_float("noise", noise, self.device)
            expected = (*own.shape, self.order_width)
            if tuple(noise_t.shape) != expected:
                raise ValueError(f"noise has shape {tuple(noise_t.shape)}: expected "
                                 f"{expected}, one draw per token and order number"
                                 f"{self._formation_note()}")
            actions = orders.sample(noise_t)
        log_probs = orders.log_prob(actions)
        not_own = ~own
        return actions.masked_fill(not_own[..., None], 0.0), log_probs.masked_fill(not_own, 0.0)

    def _formation_note(self) -> str:
        """What the last order number is, for messages about a shape."""
        if self.formation_orders:
            return " (the last is the formation code: formation_orders=True)"
        return " (the policy orders no formations: formation_orders=False)"

    def _checked_codes(self, name: str, orders: torch.Tensor, own: torch.Tensor
                       ) -> torch.Tensor:
        """``orders`` (B, N, order_width) with their own tokens' formation codes checked
        and the other tokens' set to keep (they are ignored, and may hold anything)."""
        codes = orders[..., self.action_dim]
        check_formation_codes(f"{name}[..., {self.action_dim}]", codes[own])
        return torch.cat((orders[..., :self.action_dim],
                          codes.masked_fill(~own, float(KEEP_FORMATION)).unsqueeze(-1)), -1)

    def get_value(self, batch: WFM1Batch) -> torch.Tensor:
        """Each battle's value, ``(B,)``, without gradients.

        Raises:
            TypeError: for a ``batch`` that is not a :class:`WFM1Batch`.
        """
        batch = as_batch(batch)
        with torch.no_grad():
            return self._value(self._features(batch)[1])

    def evaluate_actions(self, batch: WFM1Batch, actions: Any, *,
                         return_orders: bool = False) -> tuple[Any, ...]:
        """Log-probabilities, entropies and values for a PPO update, with gradients.

        Args:
            batch: the states the actions were taken in.
            actions: the actions taken, ``(B, N, order_width)`` (entries of tokens that
                are not own are ignored; the own tokens' formation codes must be whole
                numbers from -1 to the last formation's).
            return_orders: also return the tokens' order distribution
                (:class:`~models.formation_orders.Orders`: the Gaussian's means, and the
                formation logits with a formation head), for a loss on them beside PPO's
                from the same forward pass (:func:`own_order_error`).

        Returns:
            ``(log_prob (B, N), entropy (B, N), value (B,))``, and the distribution last
            with ``return_orders``; log-probability and entropy are summed over the order's
            parts (the Gaussian's dimensions, and the formation choice with a formation
            head) and zero where the token is not own.

        Raises:
            ValueError, TypeError: for a ``batch`` that is not a :class:`WFM1Batch`, for
                actions of the wrong shape or with non-finite values, or for an own
                token's formation code that is not one.
        """
        batch = as_batch(batch)
        own = batch.own_mask
        actions_t = as_float("actions", actions, self.device)
        expected = (*batch.tokens.shape[:2], self.order_width)
        if tuple(actions_t.shape) != expected:
            raise ValueError(f"actions has shape {tuple(actions_t.shape)}: expected "
                             f"{expected}{self._formation_note()}")
        if self.formation_orders:
            actions_t = self._checked_codes("actions", actions_t, own)
        per_token, fused = self._features(batch)
        orders = self._orders(per_token, fused)
        not_own = ~own
        log_prob = orders.log_prob(actions_t).masked_fill(not_own, 0.0)
        entropy = orders.entropy().masked_fill(not_own, 0.0)
        if return_orders:
            return log_prob, entropy, self._value(fused), orders
        return log_prob, entropy, self._value(fused)

    def finetune_loss(self, batch: WFM1Batch, actions: Any) -> torch.Tensor:
        """Mean squared error between the action means and target actions over own tokens
        (:func:`own_action_error`); with targets of :attr:`order_width` numbers (a policy
        with a formation head), plus the formation head's cross-entropy against their
        last number, the formation code (:func:`own_formation_error`).

        Args:
            batch: the states to fit.
            actions: the targets, ``(B, N, action_dim)``, or ``(B, N, action_dim + 1)``
                with a formation head (entries of tokens that are not own are ignored).

        Returns:
            A scalar with gradients (0 when no token is own).

        Raises:
            ValueError, TypeError: for a ``batch`` that is not a :class:`WFM1Batch`, or
                for targets of the wrong shape, with non-finite values or with an own
                token's formation code that is not one.
        """
        batch = as_batch(batch)
        own = batch.own_mask
        targets = as_float("actions", actions, self.device)
        rows = tuple(batch.tokens.shape[:2])
        widths = sorted({self.action_dim, self.order_width})
        if targets.ndim != 3 or tuple(targets.shape[:2]) != rows or \
                targets.shape[2] not in widths:
            expected = " or ".join(str((*rows, width)) for width in widths)
            raise ValueError(f"actions has shape {tuple(targets.shape)}: expected {expected}"
                             f"{self._formation_note()}")
        if targets.shape[2] > self.action_dim:
            targets = self._checked_codes("actions", targets, own)
        return own_order_error(*self._heads(*self._features(batch)), targets, own)

    # ----------------------------------------------------------------- files

    def save_checkpoint(self, path: str | os.PathLike) -> Path:
        """Write the policy to ``path`` atomically as ``{"config": kwargs, "state_dict"}``
        (tensors on the CPU; folders are created).

        Returns:
            The path written.
        """
        path = Path(path)
        state = {key: value.detach().cpu() for key, value in self.state_dict().items()}
        return save_weights(path, {"config": self.kwargs, "state_dict": state})

    @classmethod
    def load_checkpoint(cls, path: str | os.PathLike, **overrides: Any) -> WFM1Policy:
        """Rebuild a policy written by :meth:`save_checkpoint`, or the policy of a WFM-1
        training checkpoint (:mod:`training.wfm1.checkpoints`), on the CPU, in eval mode.

        Only tensors and plain values are read (``torch.load(weights_only=True)``).

        Args:
            path: the checkpoint file.
            **overrides: constructor arguments that replace the saved ones (e.g.
                ``dropout=0.1``); the weights must still fit.

        Raises:
            FileNotFoundError: if ``path`` does not exist.
            UntrustedCheckpointError: if it holds pickled objects (a ``ValueError``).
            ValueError: if it is not a WFM-1 checkpoint (unreadable, missing keys,
                values of the wrong type, invalid arguments, a network larger than its
                weights, or weights that do not fit it).
        """
        what = f"WFM-1 checkpoint {Path(path)}"
        data = load_weights(path, "WFM-1 checkpoint")
        if is_training_checkpoint(data):  # a trainer's file: its policy part
            saved = checkpoint_from_data(data, what, TRAINING_CHECKPOINT_KIND)
            data = {"config": saved.kwargs, "state_dict": saved.weights}
        if not isinstance(data, dict) or any(key not in data for key in CHECKPOINT_KEYS):
            found = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"{what} is not a WFM-1 checkpoint: expected the keys "
                             f"{list(CHECKPOINT_KEYS)}, found {found}")
        config, state_dict = data["config"], data["state_dict"]
        if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
            raise ValueError(f"{what} has config of type {type(config).__name__}: expected a "
                             "dict of constructor arguments")
        if not isinstance(state_dict, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor)
                for k, v in state_dict.items()):
            raise ValueError(f"{what} has a state_dict that is not a dict of named tensors")
        config = {**config, **overrides}
        check_architecture(config, what)  # before anything is built, even on meta
        try:
            with torch.device("meta"):  # checks the arguments, allocating nothing
                cls(**config)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{what} holds invalid WFM1Policy arguments {short_repr(config)}: "
                             f"{error}") from None
        # A file must not make us allocate a network larger than the weights it holds.
        check_module_size(lambda: cls(**config), state_dict, what)
        policy = cls(**config)
        try:
            policy.load_state_dict(state_dict, strict=True)
        except RuntimeError as error:
            raise ValueError(f"{what} holds weights that do not fit its WFM1Policy arguments "
                             f"{short_repr(config)}: {error}") from None
        return policy.eval()
