"""Evaluation of an SB3 commander against an opponent: wins, draws and losses over
many battles.

The seed documents these under :mod:`training.evaluate` (which hands them on and holds
the command line); the SB3 stack's callbacks and self-play take them from here.

Opponents are ``scripted_l1`` .. ``scripted_l5`` (the built-in scripted Red of
that curriculum level), ``random`` (uniformly random orders), or the path of an
SB3 ``.zip`` checkpoint that then commands Red. Blue wins when Red is routed or
destroyed while Blue is neither; it loses in the mirror case; anything else
(both broken on the same step, or the step limit) is a draw.

All episodes run at once, as one :class:`~envs.vec_env.BattalionVecEnv` batch
played by :func:`training.common.play.play` with :class:`DuelSettings`; episode
``i`` is the battle ``BattalionEnv(...).reset(seed=seed + i)`` plays.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from envs.battalion_env import BattalionEnv
from envs.battles.battalion_batch import check_duel_batch_size
from envs.sim.validation import (
    check_bool,
    check_keywords,
    check_path,
    check_seed,
    short_repr,
)
from envs.vec_env import BattalionVecEnv
from training.common.play import play
from training.ppo.opponents import check_opponent, resolve_opponent

__all__ = ["DuelSettings", "EvaluationResult", "env_kwargs_of", "evaluate", "evaluate_detailed",
           "play_duels", "run_episodes_with_model"]

_ENV_SETTINGS = ("map_width", "map_height", "max_steps", "terrain", "randomize_terrain",
                 "hill_speed_factor", "reward_weights")


class EvaluationResult(NamedTuple):
    """Outcome counts of an evaluation and their rates.

    Attributes:
        wins: battles Blue won.
        draws: battles neither side won (both broke together, or time ran out).
        losses: battles Blue lost.
        n_episodes: battles played (``wins + draws + losses``).
        win_rate, draw_rate, loss_rate: the counts divided by ``n_episodes``.
    """

    wins: int
    draws: int
    losses: int
    n_episodes: int
    win_rate: float
    draw_rate: float
    loss_rate: float

    @classmethod
    def from_outcomes(cls, outcomes: np.ndarray) -> EvaluationResult:
        """From per-battle outcomes: +1 win, 0 draw, -1 loss."""
        n = len(outcomes)
        wins, losses = int((outcomes > 0).sum()), int((outcomes < 0).sum())
        draws = n - wins - losses
        return cls(wins, draws, losses, n, wins / n, draws / n, losses / n)

    @property
    def score(self) -> float:
        """Mean score per battle for Elo: 1 per win, 0.5 per draw (the
        :func:`training.common.play.score` of the battles)."""
        return (self.wins + 0.5 * self.draws) / self.n_episodes


def env_kwargs_of(env: BattalionEnv) -> dict[str, Any]:
    """The constructor settings of ``env`` that shape its battles."""
    return {name: getattr(env, name) for name in _ENV_SETTINGS}


def run_episodes_with_model(
    model: Any,
    opponent: Any = "scripted_l5",
    n_episodes: int = 50,
    deterministic: bool = True,
    seed: int | None = None,
    env: BattalionEnv | None = None,
    env_kwargs: dict | None = None,
) -> EvaluationResult:
    """Play ``n_episodes`` battles with ``model`` commanding Blue, all at once.

    Args:
        model: anything with ``predict(obs, deterministic) -> (actions, state)``
            that accepts an (n, obs_dim) batch (SB3 models do).
        opponent: see the module docstring; also any object with ``predict`` (it
            then commands Red, receiving an (n, obs_dim) batch).
        n_episodes: number of battles (>= 1), played at once as one batch (so no
            more than fit in memory).
        deterministic: whether Blue acts deterministically (``True`` or ``False``).
        seed: base seed; episode ``i`` uses ``seed + i``, which must stay below
            2**63. None draws one.
        env: a :class:`BattalionEnv` whose settings (map, terrain, step limit,
            reward weights) the battles use; its curriculum level and Red are
            replaced by ``opponent``.
        env_kwargs: further BattalionEnv settings (override ``env``'s): some of
            ``map_width``, ``map_height``, ``max_steps``, ``terrain``,
            ``randomize_terrain``, ``hill_speed_factor`` and ``reward_weights``.

    Returns:
        The :class:`EvaluationResult`.

    Raises:
        ValueError: if an argument is out of range or of the wrong type (the
            message names it), the opponent is unknown, or the model returns
            actions of the wrong shape.
        TypeError: if ``model`` has no ``predict``.
    """
    return EvaluationResult.from_outcomes(
        play_duels(model, opponent, n_episodes, deterministic, seed, env=env,
                   env_kwargs=env_kwargs))


def play_duels(model: Any, opponent: Any, n_episodes: int, deterministic: bool = True,
               seed: int | None = None, *, env: BattalionEnv | None = None,
               env_kwargs: dict | None = None, red_deterministic: bool = False) -> np.ndarray:
    """Check a duel evaluation's arguments, then :func:`~training.common.play.play` it.

    Arguments as for :func:`run_episodes_with_model`; ``red_deterministic`` as
    in :class:`DuelSettings`.

    Returns:
        (n_episodes,) int8 outcomes from Blue's side: +1 won, 0 drawn, -1 lost.
    """
    if not callable(getattr(model, "predict", None)):
        raise TypeError(f"model={short_repr(model)} is invalid: expected an object with "
                        "predict(obs, deterministic) -> (actions, state)")
    n_episodes = check_duel_batch_size("n_episodes", n_episodes)
    deterministic = check_bool("deterministic", deterministic)
    seed = check_seed("seed", seed, count=n_episodes)
    if seed is None:
        seed = int(np.random.default_rng().integers(0, 2**31))
    if env is not None and not isinstance(env, BattalionEnv):
        raise TypeError(f"env={short_repr(env)} is invalid: expected None or a BattalionEnv")
    settings = env_kwargs_of(env) if env is not None else {}
    settings.update(_check_env_kwargs(env_kwargs))
    return play(model, opponent, n_episodes, seed,
                DuelSettings(settings, deterministic, red_deterministic))


@dataclass(frozen=True)
class DuelSettings:
    """How 1v1 duels are played: one :class:`~envs.vec_env.BattalionVecEnv` batch in
    which Blue's model predicts its orders and the battles command Red.

    Red is an opponent name or a policy (see the module docstring); a scripted
    level sets the battles' curriculum level, any other Red plays at the top one.

    Attributes:
        env_kwargs: BattalionEnv settings of the battles (map, terrain, step limit,
            reward weights).
        deterministic: Blue acts on its policy's mean.
        red_deterministic: a policy Red acts on its mean too; otherwise it samples,
            as the battles ask it to.
    """

    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    deterministic: bool = True
    red_deterministic: bool = False

    @contextmanager
    def battles(self, blue: Any, red: Any, n: int, seed: int) -> Iterator[_Duels]:
        """``n`` duels of ``blue`` against ``red``, duel ``i`` seeded ``seed + i``."""
        yield _Duels(blue, red, n, seed, self)


class _Duels:
    """The :class:`~training.common.play.Battles` of :class:`DuelSettings`."""

    def __init__(self, blue: Any, red: Any, n: int, seed: int, settings: DuelSettings) -> None:
        self.vec = BattalionVecEnv(n, **settings.env_kwargs)
        field = self.vec.battlefield
        opponent = resolve_opponent(red, seed=seed, map_diagonal=float(np.hypot(
            field.map_width, field.map_height)))
        policy = opponent.policy
        if policy is not None and settings.red_deterministic:
            policy = _ActingAs(policy, True)
        self.vec.set_attr("curriculum_level", opponent.curriculum_level)
        self.vec.set_attr("red_policy", policy)
        self.vec.seed(seed)
        self.observations = self.vec.reset()
        self.blue, self.deterministic, self.n = blue, settings.deterministic, n
        self.infos = None

    def step(self) -> np.ndarray:
        actions = np.asarray(self.blue.predict(self.observations,
                                               deterministic=self.deterministic)[0],
                             dtype=np.float32)
        if actions.shape != (self.n, 3):
            raise ValueError(f"model returned actions of shape {actions.shape}: expected "
                             f"({self.n}, 3) for a batch of {self.n} observations")
        self.observations, _, done, self.infos = self.vec.step(actions)
        return done

    def outcomes(self) -> np.ndarray:
        return duel_outcomes(self.infos.arrays)


def duel_outcomes(info: Mapping[str, np.ndarray]) -> np.ndarray:
    """Outcomes of ended duels from Blue's side (+1 won, 0 drawn, -1 lost) from their
    last step's ``blue_routed``, ``blue_destroyed``, ``red_routed`` and ``red_destroyed``
    (one bool array each): a side that broke while the other held lost; both or neither
    is a draw."""
    blue_out = np.asarray(info["blue_routed"]) | np.asarray(info["blue_destroyed"])
    red_out = np.asarray(info["red_routed"]) | np.asarray(info["red_destroyed"])
    return (red_out & ~blue_out).astype(np.int8) - (blue_out & ~red_out).astype(np.int8)


class _ActingAs:
    """A policy answering every ``predict`` with a fixed ``deterministic`` flag (the
    battles always ask Red to sample)."""

    def __init__(self, policy: Any, deterministic: bool) -> None:
        self.policy, self.deterministic = policy, deterministic

    def predict(self, observation: np.ndarray, deterministic: bool = False):
        return self.policy.predict(observation, deterministic=self.deterministic)


def _check_env_kwargs(env_kwargs: Any) -> dict[str, Any]:
    """``env_kwargs`` as a dict of battle settings (values are checked by the env)."""
    return check_keywords("env_kwargs", env_kwargs, _ENV_SETTINGS, "BattalionEnv settings",
                          " (Red and its level come from opponent)")


def evaluate_detailed(checkpoint_path: str, n_episodes: int = 50, deterministic: bool = True,
                      seed: int | None = None, opponent: str = "scripted_l5",
                      env_kwargs: dict | None = None) -> EvaluationResult:
    """Load a checkpoint and play ``n_episodes`` battles; see :func:`run_episodes_with_model`.

    Raises:
        FileNotFoundError: if the checkpoint does not exist.
        ValueError: if an argument is invalid (the message names it) or the
            opponent is unknown; arguments are checked before the checkpoint is read.
    """
    from training.ppo.checkpoints import load_ppo

    check_path("checkpoint_path", checkpoint_path)
    n_episodes = check_duel_batch_size("n_episodes", n_episodes)
    check_bool("deterministic", deterministic)
    check_seed("seed", seed, count=n_episodes)
    _check_env_kwargs(env_kwargs)
    check_opponent(opponent)
    model = load_ppo(checkpoint_path)
    return run_episodes_with_model(model, opponent, n_episodes, deterministic, seed,
                                   env_kwargs=env_kwargs)


def evaluate(checkpoint_path: str, n_episodes: int = 50, deterministic: bool = True,
             seed: int | None = None, opponent: str = "scripted_l5") -> float:
    """Blue's win rate over ``n_episodes`` battles; see :func:`evaluate_detailed`."""
    return evaluate_detailed(checkpoint_path, n_episodes, deterministic, seed,
                             opponent).win_rate
