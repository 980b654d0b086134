"""Entity tokens: a battle as one token per battalion a side knows of, for any number of
units (WFM-1's observation, :mod:`models.wfm1`).

:func:`entity_tokens` gives one side's tokens of every battle of a batch
(:class:`EntityView`: the tokens, the padding mask and the own-unit mask). A token has
:data:`ENTITY_TOKEN_DIM` numbers (:data:`ENTITY_FEATURES`, listed with their scales in
``docs/wfm1.md``). A side's tokens are its own battalions in the fight (in unit order),
then the enemy battalions it believes in the fight, nearest to its own first, each where
the side's report puts it (:class:`~envs.battles.multi_observation.FogReports`); the rest
of a row, up to the token budget, is padding, which the mask marks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.battles.multi_battalion_batch import BLUE, MultiBattalionBatch
from envs.battles.multi_observation import QUALITY_SCALE
from envs.sim.constants import ARM_NAMES, FORMATION_NAMES
from envs.sim.validation import check_int, short_repr

F32 = np.float32

ENTITY_FEATURES = (
    *(f"arm_{name}" for name in ARM_NAMES), "x", "y", "heading_cos", "heading_sin",
    "strength", *(f"formation_{name}" for name in FORMATION_NAMES), "readiness", "morale",
    "team_own", "team_enemy", "quality", "disorder", "report_age",
)
"""The features of a token, in order (``docs/wfm1.md`` lists them)."""
ENTITY_TOKEN_DIM = len(ENTITY_FEATURES)
SEED_TOKEN_DIM = 16
"""The reference design's token: the first sixteen features, in its order."""
TOKEN = {name: i for i, name in enumerate(ENTITY_FEATURES)}
"""Index of each feature."""
MAX_TOKENS = 4096
"""Most tokens a row may hold (``max_tokens``, and WFM-1's ``n_tokens``): twice the
units of the largest scenario (:data:`~envs.scenario.MAX_SIDE_UNITS` a
side) with room to spare. Attention costs the square of a row's length, so a row of
100,000 tokens would run for a minute."""
_ARM = TOKEN["arm_infantry"]
_FORMATION = TOKEN["formation_line"]
# What a report keeps, in FogReports.values' order, and where each goes in a token.
_REPORT_ROWS = {"x": 0, "y": 1, "heading_cos": 2, "heading_sin": 3, "strength": 4,
                "morale": 5, "readiness": 6}


@dataclass(frozen=True)
class EntityView:
    """One side's tokens of each battle of a batch."""

    tokens: np.ndarray
    """(B, N, ENTITY_TOKEN_DIM) float32."""
    pad_mask: np.ndarray
    """(B, N) True where a row holds no token."""
    own_mask: np.ndarray
    """(B, N) True where the token is one of the side's battalions (those that act)."""
    unit: np.ndarray
    """(B, N) the battle's unit index of each token, -1 for padding."""


def entity_tokens(battles: MultiBattalionBatch, side: int,
                  max_tokens: int | None = None) -> EntityView:
    """``side``'s tokens of every battle of ``battles`` (module docstring).

    Args:
        battles: the battles, reset.
        side: BLUE (0) or RED (1).
        max_tokens: tokens a row holds (default: every unit of the battle); the enemies
            farthest away are left out when there are more.

    Raises:
        TypeError: for ``battles`` that is not a :class:`MultiBattalionBatch`.
        ValueError: for a side other than 0 or 1, or a budget that is not an integer
            from the side's battalions to :data:`MAX_TOKENS`.
    """
    if not isinstance(battles, MultiBattalionBatch):
        raise TypeError(f"battles={short_repr(battles)} is invalid: expected a "
                        "MultiBattalionBatch")
    side = check_int("side", side, minimum=0, maximum=1)
    state, config, reports = battles.state, battles.config, battles.reports
    team = battles.team
    n_units = len(team)
    n_own = int((team == side).sum())
    if max_tokens is None:
        n = n_units
    else:
        n = check_int("max_tokens", max_tokens, minimum=1, maximum=MAX_TOKENS)
        if n < n_own:
            raise ValueError(f"max_tokens={n} is invalid: expected at least the side's "
                             f"{n_own} battalions")
    batch = state.x.shape[0]
    own = (team == side)[None, :]
    active = state.active
    believed = reports.in_fight[side].T  # (B, U)
    present = np.where(own, active, believed)
    seen_now = reports.seen_step[side].T == state.step[:, None]
    values = reports.values[:, side].transpose(0, 2, 1)  # (9, B, U)
    feature = np.zeros((batch, n_units, ENTITY_TOKEN_DIM), F32)
    theta = state.theta
    mine = {"x": state.x, "y": state.y, "heading_cos": np.cos(theta),
            "heading_sin": np.sin(theta), "strength": state.strength, "morale": state.morale,
            "readiness": state.readiness}
    for name, row in _REPORT_ROWS.items():
        feature[..., TOKEN[name]] = np.where(own, mine[name], values[row])
    if side != BLUE:  # Red's frame: mirrored across the north-south centre line
        feature[..., TOKEN["x"]] = config.map_width - feature[..., TOKEN["x"]]
        feature[..., TOKEN["heading_cos"]] *= -1
    feature[..., TOKEN["x"]] /= config.map_width
    feature[..., TOKEN["y"]] /= config.map_height
    feature[:, np.arange(n_units), _ARM + state.arm.astype(np.intp)] = 1.0  # (U,): known
    known = own | seen_now
    formation = np.zeros((batch, n_units, len(FORMATION_NAMES)), F32)
    np.put_along_axis(formation, state.formation.astype(np.intp)[..., None], 1.0, axis=2)
    feature[..., _FORMATION:_FORMATION + len(FORMATION_NAMES)] = formation * known[..., None]
    feature[..., TOKEN["team_own"]] = own
    feature[..., TOKEN["team_enemy"]] = ~own
    feature[..., TOKEN["quality"]] = np.minimum(state.quality / QUALITY_SCALE, 1.0)
    drill_steps = np.asarray(config.arm_drill_steps, F32)[state.arm.astype(np.intp)]
    feature[..., TOKEN["disorder"]] = np.where(
        known & (drill_steps > 0), state.drill / np.maximum(drill_steps, 1), 0.0)
    age = (state.step[:, None] - reports.seen_step[side].T) / config.max_steps
    feature[..., TOKEN["report_age"]] = np.where(own, 0.0, np.minimum(age, 1.0))

    # Order: own battalions first (unit order), then enemies nearest first; absent last.
    fx, fy = feature[..., TOKEN["x"]], feature[..., TOKEN["y"]]
    gap = np.hypot((fx[:, :, None] - fx[:, None, :]) * config.map_width,
                   (fy[:, :, None] - fy[:, None, :]) * config.map_height)
    gap = np.where((own & active)[:, None, :], gap, np.inf).min(axis=2)  # to nearest own
    rank = np.where(present, np.where(own, 0.0, 1.0 + np.minimum(gap, 1e5) / 1e6), 2.0)
    order = np.argsort(rank, axis=1, kind="stable")[:, :n]  # ties keep unit order
    rows = np.arange(batch)[:, None]
    kept = present[rows, order]
    tokens = np.zeros((batch, n, ENTITY_TOKEN_DIM), F32)
    tokens[:, :order.shape[1]] = np.where(kept[..., None], feature[rows, order], 0.0)
    pad = np.ones((batch, n), bool)
    pad[:, :order.shape[1]] = ~kept
    unit = np.full((batch, n), -1, np.intp)
    unit[:, :order.shape[1]] = np.where(kept, order, -1)
    own_mask = ~pad & (unit >= 0) & (team[np.maximum(unit, 0)] == side)
    return EntityView(tokens, pad, own_mask, unit)


__all__ = ["ENTITY_FEATURES", "ENTITY_TOKEN_DIM", "EntityView", "MAX_TOKENS", "QUALITY_SCALE",
           "SEED_TOKEN_DIM", "TOKEN", "entity_tokens"]
