"""Brigade and division tokens: a side's battalion tokens grouped into the higher echelons'
(the context WFM-1 reads beside its battalions, :mod:`models.wfm1`'s ``echelon_tokens``).

:func:`echelon_tokens` builds them from one side's battalion tokens
(:class:`~envs.battles.entity_tokens.EntityView`), for a whole batch at once: the side's
own battalions in brigades of ``brigade_size`` by the order of battle, the enemies it
believes in the fight in groups as they stand in its tokens, and one division token per
side. A group's token has the battalion tokens' layout
(:data:`~envs.battles.entity_tokens.ENTITY_FEATURES`), aggregated over its members; a
position with no member is padding (all zeros, True in its mask). ``docs/wfm1.md``
("Brigade and division tokens") gives the positions and each feature's aggregation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.battles.entity_tokens import ENTITY_TOKEN_DIM, MAX_TOKENS, TOKEN, EntityView
from envs.sim.validation import check_int, short_repr

F32 = np.float32

_WEIGHTED = tuple(TOKEN[name] for name in ("readiness", "morale", "quality", "disorder",
                                           "report_age"))
_HEADING = (TOKEN["heading_cos"], TOKEN["heading_sin"])
_STRENGTH = TOKEN["strength"]


@dataclass(frozen=True)
class EchelonTokens:
    """One side's brigade and division tokens of each battle of a batch."""

    brigade: np.ndarray
    """(B, 2 * ceil(N / brigade_size), ENTITY_TOKEN_DIM) float32: own brigades, then enemy
    groups."""
    brigade_pad: np.ndarray
    """(B, 2 * ceil(N / brigade_size)) True where a position holds no brigade."""
    division: np.ndarray
    """(B, 2, ENTITY_TOKEN_DIM) float32: the own division, then the enemy's."""
    division_pad: np.ndarray
    """(B, 2) True where a side has no battalion in the row."""
    brigade_size: int
    """Battalions a brigade groups."""


def brigade_count(n_tokens: int, brigade_size: int) -> int:
    """Brigade positions of a row of ``n_tokens`` battalion tokens: ``2 * ceil(n_tokens /
    brigade_size)``."""
    return 2 * -(-int(n_tokens) // int(brigade_size))


def echelon_tokens(view: EntityView, brigade_size: int,
                   first_unit: int | np.ndarray = 0) -> EchelonTokens:
    """The brigade and division tokens of ``view``'s side (``docs/wfm1.md``).

    Args:
        view: one side's battalion tokens (:func:`~envs.battles.entity_tokens.entity_tokens`,
            or several battles' rows concatenated).
        brigade_size: battalions a brigade groups (>= 1).
        first_unit: the unit index of the side's first battalion in each battle (Blue: 0;
            Red: the battle's Blue battalions), one for every row or ``(B,)``.

    Raises:
        TypeError: for a ``view`` that is not an :class:`EntityView`.
        ValueError: for a ``brigade_size`` below 1 or above the token bound, tokens of
            another width, a ``first_unit`` that is not whole numbers >= 0 (one, or one a
            row), or an own token whose unit is not among the row's first ``N`` units of
            the side.
    """
    if not isinstance(view, EntityView):
        raise TypeError(f"view={short_repr(view)} is invalid: expected an EntityView")
    size = check_int("brigade_size", brigade_size, minimum=1, maximum=MAX_TOKENS)
    tokens = np.asarray(view.tokens, F32)
    pad, own = np.asarray(view.pad_mask, bool), np.asarray(view.own_mask, bool)
    batch, n_tokens = pad.shape
    if tokens.shape[-1] != ENTITY_TOKEN_DIM:
        raise ValueError(f"view.tokens has {tokens.shape[-1]} features a token: expected "
                         f"{ENTITY_TOKEN_DIM} (envs.battles.entity_tokens)")
    given = np.asarray(first_unit)
    if given.shape not in ((), (batch,)) or given.dtype.kind not in "iu" or (given < 0).any():
        raise ValueError(f"first_unit={short_repr(first_unit)} is invalid: expected a whole "
                         f"number >= 0, or one per row ({batch},)")
    first = np.broadcast_to(given.astype(np.intp).reshape(-1, 1), (batch, 1))
    own = own & ~pad
    enemy = ~pad & ~own
    rank = np.where(own, view.unit - first, 0)
    if (rank < 0).any() or (rank >= n_tokens).any():
        raise ValueError(f"first_unit={short_repr(first_unit)} is invalid: the own tokens' "
                         f"units are not among the side's first {n_tokens} units")
    per_side = -(-n_tokens // size)
    enemy_rank = np.cumsum(enemy, axis=1) - 1
    brigade_slot = np.where(own, rank // size, np.where(enemy, per_side + enemy_rank // size, -1))
    division_slot = np.where(own, 0, np.where(enemy, 1, -1))
    brigade, brigade_pad = _pool(tokens, brigade_slot, 2 * per_side)
    division, division_pad = _pool(tokens, division_slot, 2)
    return EchelonTokens(brigade, brigade_pad, division, division_pad, size)


def _pool(tokens: np.ndarray, slot: np.ndarray, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Group tokens ``(B, N, D)`` by ``slot`` ``(B, N)`` (-1: in none) into ``(B, n_slots, D)``
    group tokens (``docs/wfm1.md``) and their padding mask."""
    batch = tokens.shape[0]
    index = np.where(slot >= 0, np.arange(batch)[:, None] * n_slots + slot, batch * n_slots)
    index = index.ravel()
    length = batch * n_slots + 1  # the last bin takes the tokens in no group

    def total(weights: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights=weights.ravel(), minlength=length)[:-1].reshape(
            batch, n_slots)

    count = total(np.ones(slot.shape))
    strength = tokens[..., _STRENGTH].astype(np.float64)
    weight = total(strength)
    out = np.zeros((batch, n_slots, ENTITY_TOKEN_DIM))
    members = np.maximum(count, 1)
    for feature in range(ENTITY_TOKEN_DIM):
        column = tokens[..., feature].astype(np.float64)
        mean = total(column) / members
        if feature in _WEIGHTED:
            weighted = total(column * strength) / np.where(weight > 0, weight, 1.0)
            mean = np.where(weight > 0, weighted, mean)
        out[..., feature] = mean
    heading = out[..., _HEADING]
    norm = np.hypot(heading[..., 0], heading[..., 1])[..., None]
    out[..., _HEADING] = np.where(norm > 1e-9, heading / np.where(norm > 1e-9, norm, 1.0), 0.0)
    empty = count == 0
    out[empty] = 0.0
    return out.astype(F32), empty


__all__ = ["EchelonTokens", "brigade_count", "echelon_tokens"]
