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

import dataclasses
import math
import os
from collections.abc import Iterator, Mapping, Sequence
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
    check_non_negative,
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
    check_module_size,
    checkpoint_from_data,
    is_training_checkpoint,
    load_weights,
    save_weights,
)

__all__ = [
    "CARD_DIM", "CARD_FEATURES", "CHECKPOINT_KEYS", "CrossEchelonTransformer", "ECHELON_BATTALION",
    "ECHELON_BRIGADE", "ECHELON_CORPS", "ECHELON_DIVISION", "EchelonEncoder",
    "GIS_AUSTERLITZ", "GIS_BORODINO", "GIS_SALAMANCA", "GIS_WATERLOO", "N_ECHELONS",
    "N_TERRAIN_TYPES", "N_WEATHER", "ScenarioCard", "TERRAIN_PROCEDURAL",
    "TRAINING_CHECKPOINT_KIND", "WEATHER_CLEAR", "WEATHER_FOG", "WEATHER_RAIN", "WEATHER_SNOW",
    "WFM1Batch", "WFM1Policy", "own_action_error", "own_formation_error", "own_order_error",
]

ECHELON_BATTALION, ECHELON_BRIGADE, ECHELON_DIVISION, ECHELON_CORPS = 0, 1, 2, 3
N_ECHELONS = 4
WEATHER_CLEAR, WEATHER_RAIN, WEATHER_FOG, WEATHER_SNOW = 0, 1, 2, 3
N_WEATHER = 4
TERRAIN_PROCEDURAL = 0
GIS_WATERLOO, GIS_AUSTERLITZ, GIS_BORODINO, GIS_SALAMANCA = 1, 2, 3, 4
N_TERRAIN_TYPES = 5
"""Terrain codes: procedural maps, then the four historical sites."""

CARD_DIM = 1 + N_ECHELONS + N_WEATHER + 2 + 1 + 4
"""Numbers in an encoded card (:meth:`ScenarioCard.to_tensor`): 16."""
CARD_FEATURES = ("map_scale",
                 *(f"echelon_{name}" for name in ("battalion", "brigade", "division", "corps")),
                 *(f"weather_{name}" for name in ("clear", "rain", "fog", "snow")),
                 "n_blue_units", "n_red_units", "terrain_type", "cavalry_fraction",
                 "artillery_fraction", "supply_pressure", "time_of_day")
"""Names of an encoded card's numbers, in order (:meth:`ScenarioCard.to_tensor`)."""
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


# ----------------------------------------------------------------------------- the card


@dataclasses.dataclass
class ScenarioCard:
    """What kind of battle it is, for the FiLM adapter.

    Args:
        map_scale: the map's scale, a number >= 0 (0.5 by default; encoded as given).
        echelon_level: the echelon commanded, ``ECHELON_*`` (0-3).
        weather_code: ``WEATHER_*`` (0-3).
        n_blue_units: Blue's units (>= 0), encoded over ``max_units``.
        n_red_units: Red's units (>= 0), encoded over ``max_units``.
        terrain_type: ``TERRAIN_PROCEDURAL`` or a ``GIS_*`` site (0-4).
        cavalry_fraction: the cavalry's share of the order of battle, in [0, 1].
        artillery_fraction: the artillery's share of the order of battle, in [0, 1].
        supply_pressure: how short of supply the armies are, in [0, 1].
        time_of_day: 0 at dawn to 1 at dusk, in [0, 1].
        max_units: the unit count that encodes as 1 (an integer >= 1).

    Raises:
        ValueError: for an invalid field (the message names it).
    """

    map_scale: float = 0.5
    echelon_level: int = ECHELON_BATTALION
    weather_code: int = WEATHER_CLEAR
    n_blue_units: float = 8.0
    n_red_units: float = 8.0
    terrain_type: int = TERRAIN_PROCEDURAL
    cavalry_fraction: float = 0.0
    artillery_fraction: float = 0.0
    supply_pressure: float = 0.0
    time_of_day: float = 0.5
    max_units: int = 64

    def __post_init__(self) -> None:
        check_non_negative("map_scale", self.map_scale)
        check_int("echelon_level", self.echelon_level, minimum=0, maximum=N_ECHELONS - 1)
        check_int("weather_code", self.weather_code, minimum=0, maximum=N_WEATHER - 1)
        check_non_negative("n_blue_units", self.n_blue_units)
        check_non_negative("n_red_units", self.n_red_units)
        check_int("terrain_type", self.terrain_type, minimum=0, maximum=N_TERRAIN_TYPES - 1)
        for name in ("cavalry_fraction", "artillery_fraction", "supply_pressure",
                     "time_of_day"):
            check_in_range(name, getattr(self, name), 0.0, 1.0)
        check_int("max_units", self.max_units, minimum=1)

    def to_tensor(self) -> torch.Tensor:
        """The card as :data:`CARD_DIM` float32 numbers.

        Layout: ``[map_scale, echelon one-hot x4, weather one-hot x4,
        n_blue_units / max_units, n_red_units / max_units, terrain_type / 4,
        cavalry_fraction, artillery_fraction, supply_pressure, time_of_day]``. The
        codes are clamped into their ranges and the last four numbers into [0, 1], as
        the reference design clamps its codes, so a card whose fields are changed after
        it is built still encodes to a valid vector.
        """
        vector = torch.zeros(CARD_DIM, dtype=torch.float32)
        vector[0] = float(self.map_scale)
        echelon = min(max(int(self.echelon_level), 0), N_ECHELONS - 1)
        weather = min(max(int(self.weather_code), 0), N_WEATHER - 1)
        terrain = min(max(int(self.terrain_type), 0), N_TERRAIN_TYPES - 1)
        vector[1 + echelon] = 1.0
        vector[1 + N_ECHELONS + weather] = 1.0
        at = 1 + N_ECHELONS + N_WEATHER
        max_units = max(int(self.max_units), 1)
        vector[at] = float(self.n_blue_units) / max_units
        vector[at + 1] = float(self.n_red_units) / max_units
        vector[at + 2] = terrain / (N_TERRAIN_TYPES - 1)
        fractions = (self.cavalry_fraction, self.artillery_fraction, self.supply_pressure,
                     self.time_of_day)
        for i, value in enumerate(fractions):
            vector[at + 3 + i] = min(max(float(value), 0.0), 1.0)
        return vector


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


def _check_echelon(value: Any, batch: int) -> int | torch.Tensor:
    """An echelon index as an int, or a ``(batch,)`` long tensor of them, in
    ``[0, N_ECHELONS)``."""
    if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, (torch.Tensor, np.ndarray)):
        return check_int("echelon", value, minimum=0, maximum=N_ECHELONS - 1)
    echelons = torch.as_tensor(value)
    if echelons.is_floating_point() or echelons.is_complex() or echelons.dtype == torch.bool:
        raise TypeError(f"echelon has dtype {echelons.dtype}: expected integer echelon indices")
    if echelons.shape != (batch,):
        raise ValueError(f"echelon has shape {tuple(echelons.shape)}: expected an int or "
                         f"({batch},), one echelon per row")
    low, high = int(echelons.min()), int(echelons.max())
    if low < 0 or high >= N_ECHELONS:
        raise ValueError(f"echelon contains {low}..{high}: expected echelon indices in "
                         f"[0, {N_ECHELONS - 1}]")
    return echelons.long()


def _as_float(name: str, value: Any, device: torch.device) -> torch.Tensor:
    """``value`` as a finite float32 tensor on ``device`` (integer or floating data only:
    booleans, complex numbers, strings and objects are refused, not converted)."""
    dtype = getattr(value, "dtype", None)
    if (isinstance(dtype, np.dtype) and dtype.kind not in "iuf") or (
            isinstance(dtype, torch.dtype) and (dtype == torch.bool or dtype.is_complex)):
        raise TypeError(f"{name} has dtype {dtype}: expected a tensor of real numbers")
    try:
        tensor = torch.as_tensor(value, dtype=torch.float32, device=device)
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"{name}={short_repr(value)} is invalid: expected a tensor of real "
                        f"numbers ({error})") from None
    # The sum is finite for finite inputs except on overflow, so the full check runs
    # only then (one reduction instead of a boolean copy per call).
    if not bool(torch.isfinite(tensor.sum())) and not bool(torch.isfinite(tensor).all()):
        raise ValueError(f"{name} contains non-finite values (NaN or inf): expected finite "
                         "numbers")
    return tensor


def _check_token_count(name: str, shape: tuple[int, ...]) -> None:
    """Refuse rows longer than :data:`~envs.battles.entity_tokens.MAX_TOKENS` tokens
    before any work: attention costs the square of a row's length and a forward pass
    cannot be interrupted (a row of 100,000 tokens ran for a minute), while the work
    per token of a row within the bound stays bounded."""
    if len(shape) == 3 and int(shape[1]) > MAX_TOKENS:
        raise ValueError(f"{name} has {int(shape[1]):,} tokens per row: expected at most "
                         f"{MAX_TOKENS:,} (MAX_TOKENS)")


def _as_mask(name: str, value: Any, shape: tuple[int, ...], device: torch.device
             ) -> torch.Tensor:
    """``value`` as a bool tensor of ``shape`` on ``device``."""
    try:
        mask = torch.as_tensor(value, device=device)
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"{name}={short_repr(value)} is invalid: expected a bool mask "
                        f"({error})") from None
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} has dtype {mask.dtype}: expected a bool mask")
    if tuple(mask.shape) != shape:
        raise ValueError(f"{name} has shape {tuple(mask.shape)}: expected {shape}")
    return mask


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
        _check_token_count("tokens", tuple(tokens.shape))
        batch, n_tokens = tokens.shape[:2]
        echelon = _check_echelon(echelon, batch)
        if pad_mask is None:
            pad_mask = torch.zeros(batch, n_tokens, dtype=torch.bool, device=tokens.device)
        pad_mask = _as_mask("pad_mask", pad_mask, (batch, n_tokens), tokens.device)
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


# ----------------------------------------------------------------------------- inputs


def _checked_tokens(name: str, value: Any, token_dim: int, device: torch.device
                    ) -> torch.Tensor:
    """``value`` as ``(batch >= 1, n_tokens >= 1, token_dim)`` float32 tokens on ``device``,
    rows of at most :data:`~envs.battles.entity_tokens.MAX_TOKENS` tokens."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple | torch.Size) and all(isinstance(d, int) for d in shape):
        _check_token_count(name, tuple(shape))  # bounded before it is converted
    tokens = _as_float(name, value, device)
    _check_token_count(name, tuple(tokens.shape))
    if tokens.ndim != 3 or tokens.shape[0] < 1 or tokens.shape[1] < 1 or \
            tokens.shape[2] != token_dim:
        raise ValueError(f"{name} has shape {tuple(tokens.shape)}: expected (batch >= 1, "
                         f"n_tokens >= 1, {token_dim})")
    return tokens


def _checked_others(tokens_per_echelon: Any, pad_masks: Any, echelon: int | torch.Tensor,
                    batch: int, token_dim: int, device: torch.device
                    ) -> tuple[tuple[int, torch.Tensor, torch.Tensor], ...]:
    """The checked ``(echelon, tokens, pad_mask)`` of the other echelons, in order."""
    if tokens_per_echelon is None:
        if pad_masks is not None:
            raise ValueError("pad_masks is given without tokens_per_echelon: expected "
                             "both or neither")
        return ()
    if not isinstance(tokens_per_echelon, Mapping):
        raise TypeError(f"tokens_per_echelon={short_repr(tokens_per_echelon)} is invalid: "
                        "expected a dict of echelon -> (batch, n_tokens, token_dim) tokens")
    if pad_masks is not None and not isinstance(pad_masks, Mapping):
        raise TypeError(f"pad_masks={short_repr(pad_masks)} is invalid: expected a dict "
                        "of echelon -> (batch, n_tokens) bool masks")
    if isinstance(echelon, torch.Tensor):
        raise ValueError("echelon is a tensor with tokens_per_echelon: expected one int "
                         "echelon for the whole batch when several echelons are given")
    pad_masks = pad_masks or {}
    unknown = sorted(map(repr, set(pad_masks) - set(tokens_per_echelon)))
    if unknown:
        raise ValueError(f"pad_masks has echelons {unknown} that tokens_per_echelon lacks")
    others = []
    for key in sorted(tokens_per_echelon, key=repr):
        level = check_int("tokens_per_echelon key", key, minimum=0, maximum=N_ECHELONS - 1)
        if level == echelon:
            raise ValueError(f"tokens_per_echelon key {level} is invalid: it is the "
                             "acting echelon, whose tokens are `tokens`; expected the "
                             "other echelons only")
        tokens = _checked_tokens(f"tokens_per_echelon[{level}]", tokens_per_echelon[key],
                                 token_dim, device)
        if tokens.shape[0] != batch:
            raise ValueError(f"tokens_per_echelon[{level}] has {tokens.shape[0]} rows: "
                             f"expected {batch}, one per battle")
        shape = tuple(tokens.shape[:2])
        mask = pad_masks.get(key)
        mask = (torch.zeros(shape, dtype=torch.bool, device=device) if mask is None
                else _as_mask(f"pad_masks[{level}]", mask, shape, device))
        others.append((level, tokens, mask))
    return tuple(sorted(others, key=lambda item: item[0]))


def _checked_card(card: Any, card_vec: Any, batch: int, device: torch.device
                  ) -> torch.Tensor | None:
    """The encoded card(s), ``(batch or 1, CARD_DIM)``, or None."""
    if card is not None and card_vec is not None:
        raise ValueError("card and card_vec are both given: expected at most one")
    if card is not None:
        cards = [card] if isinstance(card, ScenarioCard) else card
        if not isinstance(cards, Sequence) or not cards or \
                not all(isinstance(c, ScenarioCard) for c in cards):
            raise TypeError(f"card={short_repr(card)} is invalid: expected a ScenarioCard "
                            "or a list of them, one per battle")
        if len(cards) not in (1, batch):
            raise ValueError(f"card holds {len(cards)} cards: expected 1 or {batch}, one "
                             "per battle")
        return torch.stack([c.to_tensor() for c in cards]).to(device)
    if card_vec is None:
        return None
    vector = _as_float("card_vec", card_vec, device)
    if vector.ndim == 1:
        vector = vector[None]
    if vector.ndim != 2 or vector.shape[1] != CARD_DIM or vector.shape[0] not in (1, batch):
        raise ValueError(f"card_vec has shape {tuple(vector.shape)}: expected ({CARD_DIM},)"
                         f" or (1 or {batch}, {CARD_DIM})")
    return vector


def _checked_own(own_mask: Any, pad_mask: torch.Tensor) -> torch.Tensor:
    """The acting side's tokens: ``own_mask`` checked against ``pad_mask``, or every
    non-padded token."""
    if own_mask is None:
        return ~pad_mask
    own = _as_mask("own_mask", own_mask, tuple(pad_mask.shape), pad_mask.device)
    if bool((own & pad_mask).any()):
        raise ValueError("own_mask marks padding positions as own units: expected own "
                         "tokens among the non-padded ones")
    return own


# Tensors compare element-wise, so the batch has no value equality (identity only).
@dataclasses.dataclass(frozen=True, eq=False)
class WFM1Batch:
    """One call's inputs to a :class:`WFM1Policy`, as tensors on its device: what its
    :meth:`~WFM1Policy.act`, :meth:`~WFM1Policy.act_and_value`,
    :meth:`~WFM1Policy.get_value`, :meth:`~WFM1Policy.evaluate_actions`,
    :meth:`~WFM1Policy.heads`, :meth:`~WFM1Policy.forward` and
    :meth:`~WFM1Policy.finetune_loss` read.

    :meth:`checked` builds one from a caller's inputs (tensors or array-likes), refusing
    invalid ones by name; the policy then reads the batch as it is, so a batch is checked
    once however many passes read it. The project's rollouts and battles, whose tensors
    are valid as they are made, build theirs with :meth:`trusted`, unchecked. A batch is
    built for one policy: its token size, device and ``echelon_tokens``.
    """

    tokens: torch.Tensor
    """``(B, N, token_dim)`` float32: the acting echelon's tokens (the actions are theirs)."""
    pad_mask: torch.Tensor
    """``(B, N)`` bool, True at padding."""
    own_mask: torch.Tensor
    """``(B, N)`` bool, True at the acting side's units (never at padding)."""
    card: torch.Tensor | None = None
    """``(B or 1, CARD_DIM)`` float32 encoded cards, or None: the adapter is left out."""
    echelon: int | torch.Tensor = ECHELON_BATTALION
    """The acting echelon (``ECHELON_*``), or ``(B,)`` long, one per battle."""
    others: tuple[tuple[int, torch.Tensor, torch.Tensor], ...] = ()
    """The other echelons' ``(echelon, tokens (B, N_e, token_dim), pad_mask (B, N_e))``,
    in echelon order; their pooled vectors join the acting echelon's in the
    cross-echelon transformer."""

    @classmethod
    def checked(cls, policy: WFM1Policy, tokens: Any, pad_mask: Any = None, *,
                own_mask: Any = None, echelon: Any = ECHELON_BATTALION,
                card: ScenarioCard | Sequence[ScenarioCard] | None = None,
                card_vec: Any = None, tokens_per_echelon: Mapping[int, Any] | None = None,
                pad_masks: Mapping[int, Any] | None = None) -> WFM1Batch:
        """``policy``'s inputs checked and moved to its device, as a batch.

        Args:
            policy: the policy that reads the batch (its ``token_dim``, device and
                ``echelon_tokens``).
            tokens: the acting echelon's tokens ``(B, N, token_dim)``; the actions are
                theirs.
            pad_mask: ``(B, N)`` bool, True at padding (None: no padding).
            own_mask: ``(B, N)`` bool, True at the acting side's units (None: every
                non-padded token); it must not mark padding.
            echelon: the acting echelon (``ECHELON_*``), or one per battle (``(B,)`` long;
                not with ``tokens_per_echelon``).
            card: a :class:`ScenarioCard` for every battle, or a list of one per battle.
            card_vec: encoded card(s), ``(CARD_DIM,)`` or ``(B, CARD_DIM)``; not with
                ``card``. Without either, the adapter is left out (the identity).
            tokens_per_echelon: the other echelons' tokens, echelon -> ``(B, N_e,
                token_dim)``; required with the brigade and division echelons for a
                policy with ``echelon_tokens`` (:meth:`WFM1Policy.echelon_inputs`).
            pad_masks: their padding masks, echelon -> ``(B, N_e)`` bool (missing: none).

        Raises:
            ValueError, TypeError: for a wrong shape, dtype or value, an invalid echelon
                or card, or rows longer than :data:`~envs.battles.entity_tokens.MAX_TOKENS`
                tokens (checked before any work); the message names the argument.
        """
        device = policy.device
        tokens_t = _checked_tokens("tokens", tokens, policy.token_dim, device)
        batch, n_tokens = tokens_t.shape[:2]
        pad = (torch.zeros(batch, n_tokens, dtype=torch.bool, device=device)
               if pad_mask is None else _as_mask("pad_mask", pad_mask, (batch, n_tokens), device))
        echelon = _check_echelon(echelon, batch)
        if isinstance(echelon, torch.Tensor):
            echelon = echelon.to(device)
        others = _checked_others(tokens_per_echelon, pad_masks, echelon, batch,
                                 policy.token_dim, device)
        acting_battalion = not isinstance(echelon, int) or echelon == ECHELON_BATTALION
        if policy.echelon_tokens and acting_battalion and not (
                {ECHELON_BRIGADE, ECHELON_DIVISION} <= {level for level, _, _ in others}):
            raise ValueError("tokens_per_echelon lacks the brigade and division tokens: the "
                             "policy has echelon_tokens=True and reads them beside the "
                             "battalions' (WFM1Policy.echelon_context, echelon_inputs)")
        card_t = _checked_card(card, card_vec, batch, device)
        return cls(tokens_t, pad, _checked_own(own_mask, pad), card_t, echelon, others)

    @classmethod
    def trusted(cls, tokens: torch.Tensor, pad_mask: torch.Tensor,
                own_mask: torch.Tensor | None = None, card: torch.Tensor | None = None,
                echelons: EchelonTokens | None = None) -> WFM1Batch:
        """The battalion echelon's batch from inputs valid as they are made (the project's
        views, rollouts and stored rows), taken as they are: nothing is checked.

        Args:
            tokens: ``(B, N, token_dim)`` float32, on the policy's device.
            pad_mask: ``(B, N)`` bool, True at padding, on that device.
            own_mask: ``(B, N)`` bool, True at own units only (None: every non-padded
                token).
            card: ``(B or 1, CARD_DIM)`` float32 encoded cards (None: no card).
            echelons: the brigade and division tokens a policy with ``echelon_tokens``
                reads (arrays or tensors, moved to ``tokens``' device), or None.
        """
        others: tuple[tuple[int, torch.Tensor, torch.Tensor], ...] = ()
        if echelons is not None:
            device = tokens.device
            others = tuple(
                (level, torch.as_tensor(rows, dtype=torch.float32, device=device),
                 torch.as_tensor(pad, device=device))
                for level, rows, pad in (
                    (ECHELON_BRIGADE, echelons.brigade, echelons.brigade_pad),
                    (ECHELON_DIVISION, echelons.division, echelons.division_pad)))
        own = ~pad_mask if own_mask is None else own_mask
        return cls(tokens, pad_mask, own, card, ECHELON_BATTALION, others)


def _as_batch(value: Any) -> WFM1Batch:
    """``value`` if it is a :class:`WFM1Batch`; a caller's raw inputs are refused by name."""
    if not isinstance(value, WFM1Batch):
        raise TypeError(f"batch={short_repr(value)} is invalid: expected a WFM1Batch "
                        "(WFM1Batch.checked builds one from tokens, masks and cards)")
    return value


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


class WFM1Policy(nn.Module):
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

    @property
    def kwargs(self) -> dict[str, Any]:
        """The constructor arguments as plain values: ``WFM1Policy(**policy.kwargs)``."""
        return {key: list(value) if isinstance(value, list) else value
                for key, value in self._kwargs.items()}

    @property
    def device(self) -> torch.device:
        """The device the parameters live on."""
        return self.log_std.device

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
        per_token, fused = self._features(_as_batch(batch))
        return self._means(per_token, fused), self._value(fused)

    def heads(self, batch: WFM1Batch
              ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Every token's action mean ``(B, N, action_dim)`` and formation logits ``(B, N,
        FORMATION_CHOICES)`` (None without a formation head), and values ``(B,)``, with
        gradients, from one forward pass: for losses on both heads, as the imitation's.

        Raises:
            TypeError: for a ``batch`` that is not a :class:`WFM1Batch`.
        """
        per_token, fused = self._features(_as_batch(batch))
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
        batch = _as_batch(batch)
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
            noise_t = _as_float("noise", noise, self.device)
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
        batch = _as_batch(batch)
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
        batch = _as_batch(batch)
        own = batch.own_mask
        actions_t = _as_float("actions", actions, self.device)
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
        batch = _as_batch(batch)
        own = batch.own_mask
        targets = _as_float("actions", actions, self.device)
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
