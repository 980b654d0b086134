"""What WFM-1 reads: the scenario card and the batch of inputs.

:class:`ScenarioCard` says what kind of battle a row is; :class:`WFM1Batch` holds a
batch's tokens, masks, card and other echelons as tensors, checked once when a caller's
raw inputs become one (:meth:`WFM1Batch.checked`) and trusted when the trainer builds it
from its own tensors (:meth:`WFM1Batch.trusted`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from envs.battles.echelon_tokens import EchelonTokens
from envs.battles.entity_tokens import MAX_TOKENS
from envs.sim.validation import (
    check_in_range,
    check_int,
    check_non_negative,
    short_repr,
)

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


def check_echelon(value: Any, batch: int) -> int | torch.Tensor:
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


def as_float(name: str, value: Any, device: torch.device) -> torch.Tensor:
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


def check_token_count(name: str, shape: tuple[int, ...]) -> None:
    """Refuse rows longer than :data:`~envs.battles.entity_tokens.MAX_TOKENS` tokens
    before any work: attention costs the square of a row's length and a forward pass
    cannot be interrupted (a row of 100,000 tokens ran for a minute), while the work
    per token of a row within the bound stays bounded."""
    if len(shape) == 3 and int(shape[1]) > MAX_TOKENS:
        raise ValueError(f"{name} has {int(shape[1]):,} tokens per row: expected at most "
                         f"{MAX_TOKENS:,} (MAX_TOKENS)")


def as_mask(name: str, value: Any, shape: tuple[int, ...], device: torch.device
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


# ----------------------------------------------------------------------------- inputs


def _checked_tokens(name: str, value: Any, token_dim: int, device: torch.device
                    ) -> torch.Tensor:
    """``value`` as ``(batch >= 1, n_tokens >= 1, token_dim)`` float32 tokens on ``device``,
    rows of at most :data:`~envs.battles.entity_tokens.MAX_TOKENS` tokens."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple | torch.Size) and all(isinstance(d, int) for d in shape):
        check_token_count(name, tuple(shape))  # bounded before it is converted
    tokens = as_float(name, value, device)
    check_token_count(name, tuple(tokens.shape))
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
                else as_mask(f"pad_masks[{level}]", mask, shape, device))
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
    vector = as_float("card_vec", card_vec, device)
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
    own = as_mask("own_mask", own_mask, tuple(pad_mask.shape), pad_mask.device)
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
    def checked(cls, policy: nn.Module, tokens: Any, pad_mask: Any = None, *,
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
               if pad_mask is None else as_mask("pad_mask", pad_mask, (batch, n_tokens), device))
        echelon = check_echelon(echelon, batch)
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


def as_batch(value: Any) -> WFM1Batch:
    """``value`` if it is a :class:`WFM1Batch`; a caller's raw inputs are refused by name."""
    if not isinstance(value, WFM1Batch):
        raise TypeError(f"batch={short_repr(value)} is invalid: expected a WFM1Batch "
                        "(WFM1Batch.checked builds one from tokens, masks and cards)")
    return value


__all__ = ["CARD_DIM", "CARD_FEATURES", "ECHELON_BATTALION", "ECHELON_BRIGADE",
           "ECHELON_CORPS", "ECHELON_DIVISION", "GIS_AUSTERLITZ", "GIS_BORODINO",
           "GIS_SALAMANCA", "GIS_WATERLOO", "N_ECHELONS", "N_TERRAIN_TYPES", "N_WEATHER",
           "ScenarioCard", "TERRAIN_PROCEDURAL", "WEATHER_CLEAR", "WEATHER_FOG",
           "WEATHER_RAIN", "WEATHER_SNOW", "WFM1Batch", "as_batch", "as_float", "as_mask",
           "check_echelon", "check_token_count"]
