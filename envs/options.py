"""Options: the scripted macro-actions a higher echelon can give a battalion.

An :class:`Option` is a small closed-loop drill: whether it may start in a situation
(its initiation set, :meth:`Option.can_initiate`, which an executor honours), the orders
it gives while it runs, and when it is done. The six default ones
(:func:`make_default_options`, named by :class:`MacroAction`) read only the duel's
observation features that every env's observation starts with
(:data:`envs.battles.observation.OBSERVATION_FEATURES`), so they work on a
:class:`~envs.battalion_env.BattalionEnv` observation and on a
:class:`~envs.multi_battalion_env.MultiBattalionEnv` agent's alike, and on a batch of
them at once (every function takes ``obs[..., :]``). ``docs/echelons.md`` ("Drills")
says what each drill does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from envs.battles.observation import OBSERVATION_FEATURES
from envs.sim.constants import ACTION_DIM

LOW_MORALE = 0.35
"""Below this morale a battalion will not advance or flank."""
LOW_STRENGTH = 0.40
"""Below this strength an advance is broken off."""
ROUT_MORALE = 0.25
"""Below this morale every drill ends (the battalion is about to rout)."""
FIRE_AT_HIT_CHANCE = 0.25
"""An advancing battalion fires once its volley would hit this well (about 100 m)."""
DEFEND_FIRE_AT = 0.1
"""A battalion holding its ground fires once its volley would hit this well."""

_MORALE = OBSERVATION_FEATURES.index("own_morale")
_STRENGTH = OBSERVATION_FEATURES.index("own_strength")
_BEARING_SIN = OBSERVATION_FEATURES.index("enemy_relative_bearing_sin")
_BEARING_COS = OBSERVATION_FEATURES.index("enemy_relative_bearing_cos")
_OWN_HIT = OBSERVATION_FEATURES.index("own_hit_chance")
_ENEMY_HIT = OBSERVATION_FEATURES.index("enemy_hit_chance")
N_FEATURES_READ = max(_MORALE, _STRENGTH, _BEARING_SIN, _BEARING_COS, _OWN_HIT, _ENEMY_HIT) + 1
"""Observations must have at least this many entries."""

Predicate = Callable[[np.ndarray], np.ndarray]


class MacroAction(IntEnum):
    """The default options, in index order."""

    ADVANCE_SECTOR = 0
    DEFEND_POSITION = 1
    FLANK_LEFT = 2
    FLANK_RIGHT = 3
    WITHDRAW = 4
    CONCENTRATE_FIRE = 5


@dataclass(frozen=True)
class Option:
    """A drill: ``initiation_set(obs) -> bool``, ``policy(obs) -> (3,)`` orders and
    ``termination(obs, steps_active) -> bool``, cut off after ``max_steps`` steps.

    Raises:
        ValueError: if ``max_steps`` is below 1.
    """

    name: str
    initiation_set: Predicate
    policy: Callable[[np.ndarray], np.ndarray]
    termination: Callable[[np.ndarray, int], np.ndarray]
    max_steps: int = 50

    def __post_init__(self) -> None:
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int) \
                or self.max_steps < 1:
            raise ValueError(f"max_steps={self.max_steps!r} is invalid: expected an integer "
                             ">= 1")

    def can_initiate(self, obs: np.ndarray) -> bool:
        """Whether the drill may start in the situation ``obs``."""
        return bool(self.initiation_set(_observation(obs)))

    def get_action(self, obs: np.ndarray) -> np.ndarray:
        """The drill's orders ``[move, rotate, fire]`` now.

        Raises:
            ValueError: if the policy gives anything but 3 finite numbers.
        """
        action = np.asarray(self.policy(_observation(obs)), dtype=np.float32)
        if action.shape != (ACTION_DIM,) or not np.isfinite(action).all():
            raise ValueError(f"option {self.name!r} gave {action!r}: expected {ACTION_DIM} "
                             "finite numbers [move, rotate, fire]")
        return action

    def get_actions(self, obs: np.ndarray) -> np.ndarray:
        """The drill's orders (n, 3) for ``n`` battalions' observations (n, D) at once: one
        call of a policy that takes a batch (as the default drills' do), else one call per
        battalion, each checked as :meth:`get_action` checks it."""
        obs = _observation(obs)
        action = np.asarray(self.policy(obs), dtype=np.float32)
        if action.shape == (len(obs), ACTION_DIM) and np.isfinite(action).all():
            return action
        return np.stack([self.get_action(row) for row in obs]).reshape(-1, ACTION_DIM)

    def should_terminate(self, obs: np.ndarray, steps_active: int) -> bool:
        """Whether the drill is over after ``steps_active`` steps."""
        return steps_active >= self.max_steps or bool(
            self.termination(_observation(obs), steps_active))


def _observation(obs: np.ndarray) -> np.ndarray:
    obs = np.asarray(obs, dtype=np.float32)
    if obs.shape[-1] < N_FEATURES_READ:
        raise ValueError(f"obs has {obs.shape[-1]} features: expected at least "
                         f"{N_FEATURES_READ} (the duel's observation first)")
    return obs


def _steer(obs: np.ndarray) -> np.ndarray:
    """Rotate towards the focus enemy: the sign of its relative bearing, full turn
    while it is off to the side, proportional when nearly ahead."""
    return np.clip(np.arctan2(obs[..., _BEARING_SIN], obs[..., _BEARING_COS]) / 0.1, -1, 1)


def _orders(obs: np.ndarray, move, rotate, fire) -> np.ndarray:
    """Orders for each observation of ``obs`` (..., D): (..., 3)."""
    shape = obs.shape[:-1]
    return np.stack([np.broadcast_to(np.asarray(v, np.float32), shape)
                     for v in (move, rotate, fire)], axis=-1)


def _steady(obs: np.ndarray) -> np.ndarray:
    return obs[..., _MORALE] >= LOW_MORALE


def _breaking(obs: np.ndarray, steps: int = 0) -> np.ndarray:
    return obs[..., _MORALE] < ROUT_MORALE


def _spent(obs: np.ndarray, steps: int = 0) -> np.ndarray:
    return _breaking(obs) | (obs[..., _STRENGTH] < LOW_STRENGTH)


def _always(obs: np.ndarray) -> np.ndarray:
    return np.ones(obs.shape[:-1], bool)


def _advance(obs: np.ndarray) -> np.ndarray:
    return _orders(obs, 0.8, _steer(obs), (obs[..., _OWN_HIT] >= FIRE_AT_HIT_CHANCE) * 1.0)


def _defend(obs: np.ndarray) -> np.ndarray:
    return _orders(obs, 0.0, _steer(obs), (obs[..., _OWN_HIT] >= DEFEND_FIRE_AT) * 1.0)


def _flank(turn: float) -> Callable[[np.ndarray], np.ndarray]:
    def policy(obs: np.ndarray) -> np.ndarray:
        return _orders(obs, 0.6, turn, 0.0)
    return policy


def _withdraw(obs: np.ndarray) -> np.ndarray:
    # Step back facing the enemy (backwards is half speed, but the front stays to it).
    return _orders(obs, -1.0, _steer(obs), 0.0)


def _out_of_reach(obs: np.ndarray, steps: int) -> np.ndarray:
    return (steps >= 1) & (obs[..., _ENEMY_HIT] <= 0.0)


def _concentrate(obs: np.ndarray) -> np.ndarray:
    return _orders(obs, 0.0, _steer(obs), 1.0)


def make_default_options(max_steps: int = 30) -> list[Option]:
    """The six default drills, in :class:`MacroAction` order.

    ======================  ==================  ===========================================
    option                  may start           orders / ends
    ======================  ==================  ===========================================
    ``advance_sector``      morale >= 0.35      march at 0.8 on the focus enemy, fire once
                                                the hit chance reaches 0.25 / morale < 0.25
                                                or strength < 0.40
    ``defend_position``     always              hold, face the enemy, fire from hit chance
                                                0.1 / morale < 0.25
    ``flank_left``          morale >= 0.35      march at 0.6 wheeling left (+1) / morale
                                                < 0.25; half the cap
    ``flank_right``         morale >= 0.35      the same wheeling right (-1)
    ``withdraw``            always              step back facing the enemy / once it can
                                                no longer hit the unit
    ``concentrate_fire``    always              hold, face the enemy, fire every volley /
                                                morale < 0.25 or strength < 0.40
    ======================  ==================  ===========================================

    Args:
        max_steps: the cap of every drill (the flanks get half of it, at least 1).

    Raises:
        ValueError: if ``max_steps`` is below 1.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps={max_steps!r} is invalid: expected an integer >= 1")
    flank_cap = max(1, max_steps // 2)
    return [
        Option("advance_sector", _steady, _advance, _spent, max_steps),
        Option("defend_position", _always, _defend, _breaking, max_steps),
        Option("flank_left", _steady, _flank(1.0), _breaking, flank_cap),
        Option("flank_right", _steady, _flank(-1.0), _breaking, flank_cap),
        Option("withdraw", _always, _withdraw, _out_of_reach, max_steps),
        Option("concentrate_fire", _always, _concentrate, _spent, max_steps),
    ]


__all__ = ["LOW_MORALE", "LOW_STRENGTH", "ROUT_MORALE", "MacroAction", "Option",
           "make_default_options"]
