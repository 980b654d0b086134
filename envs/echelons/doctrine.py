"""Hand-written brigade commanders: what a brigadier imitates before PPO.

:class:`InStepBrigadier` is the in-step doctrine
(:class:`~envs.commanders.doctrine.InStepCommander`) one echelon up: instead of every
battalion waiting for its laggard ally on its own, the brigadier orders the battalions
ahead to hold while the last one comes up, and every other battalion to advance. It reads
the brigade observation (:func:`~envs.echelons.brigade_batch.brigade_observations`) and
gives drills of :class:`~envs.options.MacroAction` (the brigade's default options, in
their order), so it commands a :class:`~envs.echelons.brigade_batch.BrigadeBatch` as a
trained brigadier does, as an SB3 model would (``predict``).
"""

from __future__ import annotations

import numpy as np

from envs.echelons.brigade_batch import N_SECTORS, THREAT_FEATURES, brigade_obs_dim
from envs.options import MacroAction
from envs.sim.validation import check_int, check_positive

STEP_TOLERANCE = 20.0
"""Metres a battalion may lead the brigade's last one before it is ordered to hold
(chosen on validation battles: 10, 20, 30 and 40 m gave 80.7, 82.8, 83.0 and 80.0 %
against L5 over scripted order followers; ``docs/performance.md``)."""


class InStepBrigadier:
    """Advance in step: every battalion advances on its nearest enemy, except one more
    than ``step_tolerance`` metres nearer its enemy than the battalion furthest from its
    own, which holds (``defend_position``) until that one comes up.

    Args:
        n_units: battalions the brigadier commands (the observation's width follows).
        map_diagonal: the map's diagonal in metres (the observation gives distances as a
            share of it).
        step_tolerance: metres a battalion may lead the last one (> 0).

    Raises:
        ValueError: for ``n_units`` below 1 or a ``map_diagonal`` or ``step_tolerance``
            that is not positive.
    """

    def __init__(self, n_units: int, map_diagonal: float,
                 step_tolerance: float = STEP_TOLERANCE) -> None:
        self.n_units = check_int("n_units", n_units, minimum=1)
        self.map_diagonal = check_positive("map_diagonal", map_diagonal)
        self.step_tolerance = check_positive("step_tolerance", step_tolerance)
        self.obs_dim = brigade_obs_dim(self.n_units)

    def predict(self, observation: np.ndarray,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        """Drill indices (n, n_units) for brigade observations (n, obs_dim) (or (n_units,)
        for one)."""
        obs = np.atleast_2d(np.asarray(observation, dtype=np.float32))
        if obs.shape[1] != self.obs_dim:
            raise ValueError(f"observation has {obs.shape[1]} features: a brigade of "
                             f"{self.n_units} battalions is observed with {self.obs_dim}")
        strength = obs[:, N_SECTORS:N_SECTORS + 2 * self.n_units:2]
        start = N_SECTORS + 2 * self.n_units
        distance = obs[:, start:start + THREAT_FEATURES * self.n_units:THREAT_FEATURES] \
            * self.map_diagonal
        # A battalion out of the fight, or with no enemy in it, sets nobody's pace.
        pacing = (strength > 0) & (distance < self.map_diagonal)
        last = np.where(pacing, distance, -np.inf).max(axis=1, keepdims=True)
        ahead = pacing & (distance < last - self.step_tolerance)
        drills = np.where(ahead, int(MacroAction.DEFEND_POSITION),
                          int(MacroAction.ADVANCE_SECTOR))
        return (drills[0] if np.ndim(observation) == 1 else drills), None


__all__ = ["InStepBrigadier", "STEP_TOLERANCE"]
