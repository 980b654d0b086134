"""BattalionVecEnv: many 1v1 battles stepped as one batch, as an SB3 ``VecEnv``.

It follows Stable-Baselines3's vectorised-env contract: finished battles restart
on their own, the last observation of a finished battle is in
``infos[i]["terminal_observation"]``, and ``infos[i]["TimeLimit.truncated"]``
marks battles cut off by the step limit. For the same seeds it produces exactly
the trajectories of ``n_envs`` separate :class:`~envs.battalion_env.BattalionEnv`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from envs.battalion_env import RESET_OPTIONS, make_spaces
from envs.battlefield import Battlefield
from envs.battles.battalion_batch import (
    BattalionBatch,
    DuelStep,
    RedPolicy,
    check_duel_batch_size,
    check_red_policy,
)
from envs.reward import RewardWeights
from envs.sim.constants import (
    ACTION_DIM,
    NUM_CURRICULUM_LEVELS,
    SEED_BOUND,
)
from envs.sim.terrain import TerrainMap
from envs.sim.validation import (
    check_action_array,
    check_choice,
    check_options,
    check_seed,
    short_repr,
)

__all__ = ["BattalionVecEnv", "BatchInfos"]


class BatchInfos(Sequence):
    """The per-battle ``info`` dicts of one vectorised step, built on first access.

    Behaves as a list of dicts (indexing, slicing, iteration, ``len``); the dicts are
    only assembled, all at once from whole columns, when someone reads one, so a
    training loop that never looks at infos pays nothing for them. The whole batch is
    also available as arrays in :attr:`arrays`.
    """

    def __init__(self, result: DuelStep, done: np.ndarray,
                 terminal_observations: dict[int, np.ndarray]) -> None:
        self._result = result
        self._done = done
        self._terminal = terminal_observations
        self._built: list[dict[str, Any]] | None = None

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """Every info key as a (B,) array (rewards as their ``reward/*`` keys)."""
        arrays = self._result.info_arrays()
        arrays["TimeLimit.truncated"] = self._result.truncated
        return arrays

    def __len__(self) -> int:
        return len(self._done)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._infos())

    def __getitem__(self, index):  # type: ignore[override]
        # A list's indexing: slices, negative indices and IndexError as for a list.
        return self._infos()[index]

    def _infos(self) -> list[dict[str, Any]]:
        if self._built is None:
            infos = self._result.infos()
            for info, truncated in zip(infos, self._result.truncated.tolist(), strict=True):
                info["TimeLimit.truncated"] = truncated
            for index, observation in self._terminal.items():
                infos[index]["terminal_observation"] = observation
            self._built = infos
        return self._built


class BattalionVecEnv(VecEnv):
    """``n_envs`` independent 1v1 battles, stepped as one batch.

    Args:
        n_envs: number of battles (>= 1, and few enough to fit in memory:
            :data:`~envs.battles.battalion_batch.BYTES_PER_BATTLE` each).
        map_width: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        map_height: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        max_steps: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        terrain: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        randomize_terrain: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        hill_speed_factor: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        curriculum_level: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        reward_weights: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        render_mode: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.
        red_policy: commands Red in every battle (None: scripted). Its
            ``predict`` receives the (n, obs_dim) observations of all battles it
            commands at once and must return (n, ACTION_DIM) actions. Use
            ``env_method("set_red_policy", policy, indices=...)`` to give
            different battles different opponents; each opponent is still
            queried once per step.
        battlefield: as for :class:`~envs.battalion_env.BattalionEnv`, in every battle.

    Seeding follows SB3: ``seed(s)`` makes battle ``i`` play the episodes a
    ``BattalionEnv`` reset with ``seed=s + i`` would play. Like ``BattalionEnv``,
    the battles take no reset options: ``set_options`` accepts None, ``{}`` or a
    list of ``n_envs`` empty dicts.
    """

    def __init__(
        self,
        n_envs: int = 8,
        *,
        map_width: float | None = None,
        map_height: float | None = None,
        max_steps: int | None = None,
        terrain: TerrainMap | None = None,
        randomize_terrain: bool | None = None,
        hill_speed_factor: float | None = None,
        curriculum_level: int = NUM_CURRICULUM_LEVELS,
        reward_weights: RewardWeights | None = None,
        red_policy: RedPolicy | None = None,
        render_mode: str | None = None,
        battlefield: Battlefield | None = None,
    ) -> None:
        n_envs = check_duel_batch_size("n_envs", n_envs)
        check_choice("render_mode", render_mode, (None, "rgb_array"))
        check_red_policy(red_policy)
        self.battlefield = Battlefield.from_kwargs(
            battlefield, map_width=map_width, map_height=map_height, max_steps=max_steps,
            terrain=terrain, randomize_terrain=randomize_terrain,
            hill_speed_factor=hill_speed_factor)
        self.config = self.battlefield.battle_config()
        self._battle = BattalionBatch(
            n_envs, battlefield=self.battlefield, config=self.config,
            curriculum_level=curriculum_level, reward_weights=reward_weights)
        self._battle.set_red_policy(red_policy)
        self._render_mode = render_mode
        self._fresh_seeds = np.random.default_rng()
        self._actions: np.ndarray | None = None
        observation_space, action_space = make_spaces()
        super().__init__(n_envs, observation_space, action_space)

    # --- VecEnv API ------------------------------------------------------------

    def reset(self) -> np.ndarray:
        """Start a new battle everywhere (using seeds set by :meth:`seed`, once)."""
        fresh = self._fresh_seeds.integers(0, SEED_BOUND, size=self.num_envs, dtype=np.int64)
        self._battle.reset(np.arange(self.num_envs), list(self._seeds), fresh)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._battle.blue_observation().copy()

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed battle ``i`` with ``seed + i`` at the next reset (None: random seeds).

        Raises:
            ValueError: unless ``seed`` is None or an integer with ``seed + n_envs - 1``
                in [0, 2**63).
        """
        return super().seed(check_seed("seed", seed, count=self.num_envs))

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        """Check reset options: the battles define none, so only None, ``{}`` or a list
        of ``n_envs`` empty dicts are accepted (``ValueError`` names the first key)."""
        if isinstance(options, (list, tuple)):
            if len(options) != self.num_envs:
                raise ValueError(f"options={short_repr(options)} is invalid: expected a dict "
                                 f"or a list of {self.num_envs} dicts, one per battle")
            options = [check_options(f"options[{i}]", o, RESET_OPTIONS)
                       for i, o in enumerate(options)]
        else:
            check_options("options", options, RESET_OPTIONS)
        super().set_options(options)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = check_action_array("actions", actions, (self.num_envs, ACTION_DIM))

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, BatchInfos]:
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async(actions)")
        result = self._battle.step(self._actions)
        self._actions = None
        done = result.terminated | result.truncated
        rewards = result.reward.total
        terminal: dict[int, np.ndarray] = {}
        if done.any():
            finished = np.nonzero(done)[0]
            # Taken (fancy indexing copies) before the restart overwrites these rows.
            last = result.observation[finished]
            terminal = dict(zip(finished.tolist(), last, strict=True))
            result = result.frozen()
            self._battle.next_episode(finished)
        # The step's own array, restarted rows included: the next step writes a new one.
        return self._battle.blue_observation(), rewards, done, BatchInfos(result, done, terminal)

    def close(self) -> None:
        pass

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self._render_mode != "rgb_array":
            return [None] * self.num_envs
        from envs.rendering.draw import draw_battle

        return [draw_battle(self._battle.state, i, self.config) for i in range(self.num_envs)]

    # --- per-battle attributes and methods ----------------------------------------

    _ATTRIBUTES = ("render_mode", "curriculum_level", "red_policy", "map_width", "map_height",
                   "max_steps", "hill_speed_factor", "terrain", "randomize_terrain",
                   "reward_weights", "scripted_fire_scale", "observation_space", "action_space",
                   "config", "battlefield")

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The value of a battle attribute for each selected battle."""
        battles = list(self._get_indices(indices))
        if attr_name == "render_mode":
            # VecEnv.__init__ asks before anything else exists.
            return [getattr(self, "_render_mode", None)] * len(battles)
        if attr_name == "curriculum_level":
            return [int(self._battle.levels[i]) for i in battles]
        if attr_name == "red_policy":
            return [self._battle.red_policy(i) for i in battles]
        if attr_name in ("map_width", "map_height", "max_steps", "hill_speed_factor"):
            return [getattr(self.config, attr_name)] * len(battles)
        if attr_name in ("terrain", "randomize_terrain", "reward_weights", "scripted_fire_scale"):
            return [getattr(self._battle, attr_name)] * len(battles)
        if attr_name in ("observation_space", "action_space", "config", "battlefield"):
            return [getattr(self, attr_name)] * len(battles)
        raise AttributeError(f"battles have no attribute {attr_name!r}: expected one of "
                             f"{', '.join(self._ATTRIBUTES)}")

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set a battle attribute: ``curriculum_level`` and ``red_policy`` per battle,
        ``scripted_fire_scale`` for all battles at once
        (:meth:`~envs.battles.battalion_batch.BattalionBatch.set_scripted_fire_scale`;
        ``indices`` must then select every battle)."""
        if attr_name == "curriculum_level":
            self._battle.set_curriculum_level(value, self._index_array(indices))
        elif attr_name == "red_policy":
            self._battle.set_red_policy(value, self._index_array(indices))
        elif attr_name == "scripted_fire_scale":
            if len(self._index_array(indices)) != self.num_envs:
                raise ValueError(f"indices={indices!r} is invalid for scripted_fire_scale: "
                                 "expected every battle (the scale is the batch's)")
            self._battle.set_scripted_fire_scale(value)
        else:
            raise AttributeError(f"cannot set {attr_name!r}: expected 'curriculum_level', "
                                 "'red_policy' or 'scripted_fire_scale'")

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        """Call a :class:`~envs.battalion_env.BattalionEnv` method on selected battles.

        Supported: ``set_red_policy(policy)``, ``set_curriculum_level(level)``,
        ``render()``, ``_get_obs()`` and ``_get_red_obs()``.
        """
        battles = self._index_array(indices)
        if method_name == "set_red_policy":
            self._battle.set_red_policy(*method_args, battles, **method_kwargs)
            return [None] * len(battles)
        if method_name == "set_curriculum_level":
            self._battle.set_curriculum_level(*method_args, battles, **method_kwargs)
            return [None] * len(battles)
        if method_name == "render":
            images = self.get_images()
            return [images[i] for i in battles]
        if method_name == "_get_obs":
            return list(self._battle.blue_observation()[battles].copy())
        if method_name == "_get_red_obs":
            return list(self._battle.red_observation()[battles].copy())
        raise AttributeError(f"battles have no method {method_name!r}: expected one of "
                             "set_red_policy, set_curriculum_level, render, _get_obs, "
                             "_get_red_obs")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))

    def _index_array(self, indices: VecEnvIndices) -> np.ndarray:
        return np.fromiter(self._get_indices(indices), dtype=np.intp)

    @property
    def battle_state(self):
        """The simulator state of all battles (a batch of ``num_envs``)."""
        return self._battle.state
