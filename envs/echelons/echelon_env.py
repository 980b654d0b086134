"""Brigade or division battles as a Gymnasium env (one battle) and an SB3 ``VecEnv``.

:class:`EchelonEnv` is one battle of an echelon batch (the base of
:class:`~envs.echelons.brigade_env.BrigadeEnv` and
:class:`~envs.echelons.division_env.DivisionEnv`).
:class:`EchelonVecEnv` steps a :class:`~envs.echelons.brigade_batch.BrigadeBatch` or a
:class:`~envs.echelons.division_batch.DivisionBatch` (anything with their ``reset``,
``next_episode``, ``observe``, ``check_action``, ``step`` and ``infos``) under
Stable-Baselines3's vectorised-env contract: finished battles restart on their own,
the last observation of a finished battle is in ``infos[i]["terminal_observation"]``,
and ``infos[i]["TimeLimit.truncated"]`` marks battles cut off undecided. Battle ``i``
seeded ``s + i`` plays what :class:`~envs.echelons.brigade_env.BrigadeEnv` (or
:class:`~envs.echelons.division_env.DivisionEnv`) reset with that seed plays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from envs.sim.constants import SEED_BOUND
from envs.sim.validation import check_options, check_seed, short_repr

F32 = np.float32
RESET_OPTIONS: tuple[str, ...] = ()
"""Keys ``reset(options=...)`` accepts: the echelon envs define none, and any key raises
``ValueError`` (as :class:`~envs.battalion_env.BattalionEnv`'s ``reset`` does)."""


class EchelonEnv(gym.Env):
    """One battle of an echelon batch (``self.batch``, of one battle): a subclass builds
    it and calls :meth:`_set_spaces`. An action is one choice per commanded unit."""

    metadata: dict[str, Any] = {"render_modes": []}
    batch: Any
    n_commanded: int
    n_choices: int

    def _set_spaces(self, n_choices: int, n_commanded: int) -> None:
        self.n_choices, self.n_commanded = n_choices, n_commanded
        self.action_space = spaces.MultiDiscrete([n_choices] * n_commanded)
        self.observation_space = spaces.Box(-1.0, 1.0, (self.batch.obs_dim,), F32)
        self._rng = np.random.default_rng()
        self._steps = 0
        self._over = True

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Start a new battle.

        Args:
            seed: None (a fresh seed) or an integer in [0, 2**63).
            options: None or an empty dict (no reset options are defined).

        Raises:
            ValueError: for a seed out of range or any options key (named).
        """
        seed = check_seed("seed", seed)
        check_options("options", options, RESET_OPTIONS)
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        fresh = self._rng.integers(0, SEED_BOUND, size=1, dtype=np.int64)
        self.batch.reset(np.array([0]), [seed], fresh)
        self._steps = 0
        self._over = False
        return self.batch.observe()[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One command step of the battle (the batch's ``step``).

        Raises:
            RuntimeError: before :meth:`reset` or after the battle ended.
            ValueError: for an action that is not one choice per commanded unit.
        """
        if self._over:
            raise RuntimeError("step() called before reset() or after the battle ended: call "
                               "reset()")
        chosen = np.asarray(action)
        if chosen.shape != (self.n_commanded,):
            raise ValueError(f"action={short_repr(action)} is invalid: expected "
                             f"{self.n_commanded} indices in [0, {self.n_choices})")
        result = self.batch.step(chosen[None])
        self._steps += 1
        info = self.batch.infos(result, np.array([self._steps]))[0]
        self._over = bool(result.battle_over[0])
        return (result.observation[0], float(result.reward[0]), bool(result.terminated[0]),
                bool(result.truncated[0]), info)


class EchelonVecEnv(VecEnv):
    """``batch.n_battles`` echelon battles as a ``VecEnv`` (module docstring).

    Args:
        batch: the brigade or division battles.
        n_actions: choices per commanded unit (drills, or commands), for the
            ``MultiDiscrete`` action space.
        n_commanded: units the commander gives one choice each (battalions, or brigades).
    """

    def __init__(self, batch: Any, n_actions: int, n_commanded: int) -> None:
        self.batch = batch
        observation_space = spaces.Box(-1.0, 1.0, (batch.obs_dim,), F32)
        action_space = spaces.MultiDiscrete([n_actions] * n_commanded)
        self._fresh_seeds = np.random.default_rng()
        self._actions: np.ndarray | None = None
        self._macro_steps = np.zeros(batch.n_battles, np.int64)
        super().__init__(batch.n_battles, observation_space, action_space)

    def reset(self) -> np.ndarray:
        """Start a new battle everywhere (using seeds set by :meth:`seed`, once)."""
        fresh = self._fresh_seeds.integers(0, SEED_BOUND, size=self.num_envs, dtype=np.int64)
        self.batch.reset(np.arange(self.num_envs), list(self._seeds), fresh)
        self._reset_seeds()
        self._reset_options()
        self._macro_steps[:] = 0
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self.batch.observe()

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed battle ``i`` with ``seed + i`` at the next reset (None: random seeds).

        Raises:
            ValueError: unless ``seed`` is None or an integer with ``seed + n_envs - 1``
                in [0, 2**63).
        """
        return super().seed(check_seed("seed", seed, count=self.num_envs))

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = self.batch.check_action(np.asarray(actions).reshape(
            self.num_envs, -1))

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async(actions)")
        result = self.batch.step(self._actions)
        self._actions = None
        self._macro_steps += 1
        infos = self.batch.infos(result, self._macro_steps)
        done = result.battle_over
        observation = result.observation.copy()
        finished = np.flatnonzero(done)
        for i in finished:
            infos[i]["terminal_observation"] = observation[i].copy()
            infos[i]["TimeLimit.truncated"] = bool(result.truncated[i])
        if len(finished):
            self.batch.next_episode(finished)
            self._macro_steps[finished] = 0
            observation[finished] = self.batch.observe()[finished]
        return observation, result.reward.astype(F32), done, infos

    def close(self) -> None:
        pass

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The battles' shared ``render_mode``, ``observation_space`` or ``action_space``."""
        n = len(list(self._get_indices(indices)))
        if attr_name == "render_mode":
            return [None] * n
        if attr_name in ("observation_space", "action_space"):
            return [getattr(self, attr_name)] * n
        raise AttributeError(f"battles have no attribute {attr_name!r}: expected render_mode, "
                             "observation_space or action_space")

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"cannot set {attr_name!r}: the battles have no settable attribute")

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        raise AttributeError(f"battles have no method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))


__all__ = ["EchelonEnv", "EchelonVecEnv", "RESET_OPTIONS"]
