"""How well a side's battalions fight together: fire concentration, flanking, mutual support.

The metrics read the battle core's own geometry (:class:`envs.sim.engine.Geometry`) and
apply its rules (who can fire at whom, who touches whom in melee, where a blow strikes),
so each metric measures what the engine rewards. Every metric is computed over a whole
batch at once from a step's result (:func:`envs.sim.engine.step`'s state and events),
one float64 per battle, NaN where it is not defined in that battle at that step;
:func:`compute_all` computes them all. :class:`CoordinationTally` adds them up over a
rollout; :meth:`CoordinationTally.means` gives the ``coordination/<name>`` numbers the
trainers log. ``docs/metrics_reference.md`` defines each metric, its range and how to
read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from envs.battles.multi_battalion_batch import BLUE, RED
from envs.sim.config import BattleConfig
from envs.sim.engine import StepEvents
from envs.sim.kernels import A_ALL_ROUND, A_COS_ARC, A_RANGE, N_FORMATIONS, arms_table
from envs.sim.state import BattleState

PREFIX = "coordination/"
"""The logged name of metric ``name`` is ``coordination/<name>``."""
METRICS = ("fire_concentration", "flanking_ratio", "mutual_support_score")
"""The metrics, in the order :func:`compute_all` and :class:`CoordinationTally` keep them."""
SUPPORT_RADIUS = 300.0
"""Metres within which two battalions of a side support each other (the reference
design's radius: one and a half musket ranges, so a neighbour under fire is within a
short march of help)."""


def _own_units(state: BattleState, side: int | np.ndarray) -> np.ndarray:
    """(B, U) the units of ``side`` (one side for every battle, or a (B,) side per battle).

    Raises:
        ValueError: for a side other than BLUE (0) or RED (1), or a per-battle array of
            another length than the batch.
    """
    sides = np.asarray(side)
    if sides.ndim > 1 or (sides.ndim == 1 and sides.shape != (state.batch_size,)) \
            or not ((sides == BLUE) | (sides == RED)).all():
        raise ValueError(f"side={side!r} is invalid: expected {BLUE} (Blue) or {RED} (Red), "
                         f"or a ({state.batch_size},) array of them (one per battle)")
    team = state.team.astype(np.int8)
    if sides.ndim == 0:
        return np.broadcast_to(team[None, :] == sides, state.x.shape)
    return team[None, :] == sides[:, None]


def _in_fight(state: BattleState, in_fight: np.ndarray | None) -> np.ndarray:
    """(B, U) the units that fought in the step: ``in_fight`` as given, else the
    state's units still in the fight after it.

    Raises:
        ValueError: for an ``in_fight`` that is not a (B, U) bool array.
    """
    if in_fight is None:
        return state.active
    in_fight = np.asarray(in_fight)
    if in_fight.shape != state.x.shape or in_fight.dtype != bool:
        raise ValueError(f"in_fight has shape {in_fight.shape} and dtype {in_fight.dtype}: "
                         f"expected a {state.x.shape} bool array (battles, units)")
    return in_fight


def _check_radius(support_radius: object) -> float:
    if not isinstance(support_radius, (int, float, np.integer, np.floating)) \
            or isinstance(support_radius, bool) \
            or not support_radius > 0 or not np.isfinite(support_radius):
        raise ValueError(f"support_radius={support_radius!r} is invalid: expected a positive "
                         "number of metres")
    return float(support_radius)


def _ratio(numerator: np.ndarray, denominator: np.ndarray, defined: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` as float64 where ``defined``, NaN elsewhere."""
    out = np.full(numerator.shape, np.nan)
    np.divide(numerator, denominator, out=out, where=defined)
    return out


def fire_concentration(state: BattleState, events: StepEvents, config: BattleConfig,
                       side: int | np.ndarray = BLUE,
                       in_fight: np.ndarray | None = None) -> np.ndarray:
    """(B,) the share of the side's volleys this step that went at its most-targeted enemy.

    Among the side's battalions that fired this step (spent readiness on a target,
    ``events.volley > 0``), the number that fired at the enemy most of them fired at,
    divided by the number that fired: 1 when every volley struck one battalion, ``1/k``
    when ``k`` volleys struck ``k`` different ones. Defined when at least two of the
    side's battalions fired (one volley is concentrated by nature); NaN otherwise.
    ``config`` and ``in_fight`` are unused (every metric takes the same arguments: see
    :func:`compute_all`).

    Raises:
        ValueError: for a bad ``side``.
    """
    return _concentration(_own_units(state, side), events)


def _concentration(own: np.ndarray, events: StepEvents) -> np.ndarray:
    n_battles, n_units = own.shape
    fired = own & (events.volley > 0) & (events.target >= 0)
    # Volleys per (battle, target) as one count over battle * (U + 1) + target, the
    # units that did not fire counted at the spare target U.
    code = np.where(fired, events.target, n_units) + (n_units + 1) * np.arange(n_battles)[:, None]
    volleys = np.bincount(code.ravel(), minlength=n_battles * (n_units + 1))
    most = volleys.reshape(n_battles, n_units + 1)[:, :n_units].max(axis=1)
    n_fired = fired.sum(axis=1)
    return _ratio(most, n_fired, n_fired >= 2)


def flanking_ratio(state: BattleState, events: StepEvents, config: BattleConfig,
                   side: int | np.ndarray = BLUE,
                   in_fight: np.ndarray | None = None) -> np.ndarray:
    """(B,) the share of the side's engagements that strike the enemy's flank or rear.

    An engagement is a pair (own battalion ``i``, enemy ``j``), both in the fight during
    the step, where ``i`` can fire at ``j`` (in sight, within the range and inside the
    arc of ``i``'s arm and formation, not changing formation) or touches it in melee
    (centres within the two radii plus ``melee_reach``). It strikes the flank or rear
    when ``i`` stands more than ``front_half_angle`` off ``j``'s front, measured at
    ``j``'s centre, and ``j`` is not in square: exactly when the engine multiplies the
    damage by the flank or rear multiplier. Defined when the side has at least one
    engagement; NaN otherwise.

    Raises:
        ValueError: for a bad ``side`` or ``in_fight``.
    """
    return _flanking(state, events, config, _own_units(state, side), _in_fight(state, in_fight))


def _flanking(state: BattleState, events: StepEvents, config: BattleConfig, own: np.ndarray,
              fought: np.ndarray) -> np.ndarray:
    geometry = events.geometry
    row = state.arm.astype(np.intp) * N_FORMATIONS + state.formation
    unit = arms_table(config)[row]  # (B, U, fields): each unit's arm in its formation
    mine = own & fought
    can_fire = ((mine & (state.drill == 0))[:, :, None] & geometry.los
                & (geometry.dist <= unit[:, :, None, A_RANGE])
                & (geometry.facing_cos > unit[:, :, None, A_COS_ARC]))
    reach = _reach(config, state.arm.astype(np.int8).tobytes())
    touching = mine[:, :, None] & (geometry.dist <= reach)
    engaged = (can_fire | touching) & (~own & fought)[:, None, :]
    # facing_cos[b, j, i]: the bearing of attacker i off target j's front.
    off_front = geometry.facing_cos.transpose(0, 2, 1) <= config.f32.cos_front
    flank = engaged & off_front & (unit[:, None, :, A_ALL_ROUND] == 0)
    n_engaged = engaged.sum(axis=(1, 2))
    return _ratio(flank.sum(axis=(1, 2)), n_engaged, n_engaged > 0)


@lru_cache(maxsize=64)
def _reach(config: BattleConfig, arms: bytes) -> np.ndarray:
    """(U, U) the distance within which two units of the int8 ``arms`` touch in melee."""
    return config.melee_distance(np.frombuffer(arms, np.int8))


def mutual_support_score(state: BattleState, events: StepEvents, config: BattleConfig,
                         side: int | np.ndarray = BLUE, in_fight: np.ndarray | None = None,
                         support_radius: float = SUPPORT_RADIUS) -> np.ndarray:
    """(B,) how close together the side's battalions stand.

    For each of the side's ``n`` battalions in the fight during the step, the share of
    the other ``n - 1`` whose centres lie within ``support_radius`` metres of its own;
    the mean over the ``n``. 1 when every battalion has every other within reach, 0
    when each stands alone. Defined when at least two of the side's battalions are in
    the fight; NaN otherwise.

    Raises:
        ValueError: for a bad ``side`` or ``in_fight``, or a ``support_radius`` that is
            not a positive number.
    """
    return _support(events, _own_units(state, side) & _in_fight(state, in_fight),
                    _check_radius(support_radius))


def _support(events: StepEvents, mine: np.ndarray, support_radius: float) -> np.ndarray:
    n = mine.sum(axis=1)
    near = mine[:, :, None] & mine[:, None, :] & (events.geometry.dist <= support_radius)
    # Each battalion is within the radius of itself: take it out of both counts.
    pairs = near.sum(axis=(1, 2)) - n
    return _ratio(pairs, n * (n - 1), n >= 2)


def compute_all(state: BattleState, events: StepEvents, config: BattleConfig,
                side: int | np.ndarray = BLUE, in_fight: np.ndarray | None = None,
                support_radius: float = SUPPORT_RADIUS) -> dict[str, np.ndarray]:
    """Every metric of :data:`METRICS` for ``side``, keyed ``coordination/<name>``.

    Args:
        state: the batch after a step (what :func:`envs.sim.engine.step` returned).
        events: that step's events (their geometry is ``state``'s positions, where the
            step's fire and melee happened).
        config: the battle model the batch runs.
        side: BLUE or RED, for every battle or as a (B,) array, one per battle.
        in_fight: (B, U) the units that were in the fight at the start of the step
            (``TeamStep.acted``); None takes those still in it after the step, which
            leaves out a unit that a volley of this very step broke.
        support_radius: :func:`mutual_support_score`'s radius in metres.

    Returns:
        Name -> (B,) float64 values, NaN where undefined.

    Raises:
        ValueError: for a bad ``side``, ``in_fight`` or ``support_radius``.
    """
    own, fought = _own_units(state, side), _in_fight(state, in_fight)
    radius = _check_radius(support_radius)
    return {PREFIX + "fire_concentration": _concentration(own, events),
            PREFIX + "flanking_ratio": _flanking(state, events, config, own, fought),
            PREFIX + "mutual_support_score": _support(events, own & fought, radius)}


@dataclass
class CoordinationTally:
    """Each metric's sum and sample count per battle, over the steps added so far.

    Attributes:
        sums: (len(METRICS), B) float64 sums of the defined values.
        counts: (len(METRICS), B) int64 steps at which each battle's metric was defined.
    """

    sums: np.ndarray
    counts: np.ndarray

    @classmethod
    def empty(cls, n_battles: int) -> CoordinationTally:
        """A tally of ``n_battles`` battles with nothing added."""
        return cls(np.zeros((len(METRICS), n_battles)),
                   np.zeros((len(METRICS), n_battles), np.int64))

    def add(self, values: dict[str, np.ndarray]) -> None:
        """Add one step's :func:`compute_all` values (NaN: no sample)."""
        for k, name in enumerate(METRICS):
            value = values[PREFIX + name]
            defined = ~np.isnan(value)
            self.sums[k] += np.where(defined, value, 0.0)
            self.counts[k] += defined

    @classmethod
    def join(cls, parts: Sequence[CoordinationTally]) -> CoordinationTally:
        """One tally of the battles of ``parts``, in order (a rollout collected in parts)."""
        return cls(np.concatenate([p.sums for p in parts], axis=1),
                   np.concatenate([p.counts for p in parts], axis=1))

    def means(self) -> dict[str, float]:
        """``coordination/<name>`` -> the mean of the metric over every (battle, step)
        sample at which it was defined; 0.0 for a metric never defined (the reference
        design's convention)."""
        sums, counts = self.sums.sum(axis=1), self.counts.sum(axis=1)
        return {PREFIX + name: float(sums[k] / counts[k]) if counts[k] else 0.0
                for k, name in enumerate(METRICS)}


__all__ = ["BLUE", "METRICS", "PREFIX", "RED", "SUPPORT_RADIUS", "CoordinationTally",
           "compute_all", "fire_concentration", "flanking_ratio", "mutual_support_score"]
