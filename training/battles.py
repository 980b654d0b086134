"""The battles a training config describes: the training env and the evaluation env."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnvWrapper, VecMonitor

from envs.reward import RewardWeights
from envs.vec_env import BattalionVecEnv
from training.config import TrainingConfig
from training.opponents import RandomPolicy, resolve_opponent

__all__ = ["OpponentRotation", "env_kwargs_for", "make_eval_env", "make_training_env"]


def env_kwargs_for(config: TrainingConfig) -> dict[str, Any]:
    """BattalionEnv settings of the config's battles (map, terrain, steps, reward)."""
    return dict(map_width=config.map_width, map_height=config.map_height,
                max_steps=config.max_steps, randomize_terrain=config.randomize_terrain,
                hill_speed_factor=config.hill_speed_factor, reward_weights=RewardWeights(
                    delta_enemy_strength=config.reward_delta_enemy_strength,
                    delta_own_strength=config.reward_delta_own_strength,
                    survival_bonus=config.reward_survival_bonus,
                    win_bonus=config.reward_win_bonus,
                    loss_penalty=config.reward_loss_penalty,
                    time_penalty=config.reward_time_penalty,
                    approach=config.reward_approach, fire_cost=config.reward_fire_cost))


def make_training_env(config: TrainingConfig) -> VecMonitor:
    """The training battles: ``n_envs`` battles whose episodes meet the
    ``training_opponents`` in turn (:class:`OpponentRotation`), or scripted
    ``curriculum_level`` in every battle if that list is empty."""
    env = BattalionVecEnv(config.n_envs, curriculum_level=config.curriculum_level,
                          **env_kwargs_for(config))
    env.seed(config.seed)
    if config.training_opponents:
        return VecMonitor(OpponentRotation(env, config.training_opponents, config.seed))
    return VecMonitor(env)


class OpponentRotation(VecEnvWrapper):
    """Deals Red's commanders episode by episode so that each opponent of a list gets
    its share of the training steps, whatever the number of battles.

    The list's repeats are weights: ``[l4, l5, l5]`` means a third of the steps
    against L4 and two thirds against L5. A battle whose episode ends meets the
    opponent furthest behind its share, counting the steps played against each
    and, for the battles now facing it, the mean episode length still to come.
    With many battles this keeps about ``weight * n_envs`` battles on each
    opponent; with fewer battles than opponents (``n_envs=4`` and nine
    entries) each still gets its share over time, where dealing once per battle
    would leave some out.

    A battle given another commander with ``set_red_policy`` keeps it and leaves
    the rotation; setting None, or the rotation's own random player, puts it
    back from its next episode.

    Args:
        venv: the training battles.
        opponents: names from :data:`~training.opponents.NAMED_OPPONENTS` (repeats
            weight an opponent).
        seed: seed of the ``random`` opponent's orders.
    """

    def __init__(self, venv: BattalionVecEnv, opponents: Sequence[str], seed: int = 0) -> None:
        super().__init__(venv)
        self.random = RandomPolicy(seed)
        names = list(dict.fromkeys(opponents))  # distinct, in first-seen order
        self.opponents = [resolve_opponent(name) for name in names]
        self.weights = np.array([list(opponents).count(n) for n in names], float)
        self.weights /= self.weights.sum()
        self.steps = np.zeros(len(names))  # steps played against each opponent
        self.facing = np.zeros(self.num_envs, np.intp)  # each battle's opponent
        self.rotating = np.ones(self.num_envs, bool)
        self._episode_steps = np.zeros(self.num_envs, np.intp)
        self._mean_length = float(venv.get_attr("max_steps", [0])[0]) / 2  # until measured
        self._deal(np.arange(self.num_envs))

    def _deal(self, battles: np.ndarray) -> None:
        staying = self.rotating.copy()
        staying[battles] = False
        facing = np.bincount(self.facing[staying], minlength=len(self.opponents))
        picks = np.empty(len(battles), np.intp)
        for j in range(len(battles)):
            load = self.steps + self._mean_length * facing
            k = int(np.argmax(self.weights * load.sum() - load + 1e-9 * self.weights))
            picks[j] = k
            facing[k] += 1
        self.facing[battles] = picks
        for k in np.unique(picks):
            chosen = battles[picks == k]
            opponent = self.opponents[k]
            policy = self.random if opponent.name == "random" else None
            self.venv.env_method("set_red_policy", policy, indices=chosen)
            self.venv.env_method("set_curriculum_level", opponent.curriculum_level,
                                 indices=chosen)

    def reset(self) -> np.ndarray:
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        self.steps += np.bincount(self.facing[self.rotating], minlength=len(self.opponents))
        self._episode_steps += 1
        ended = np.flatnonzero(dones)
        if len(ended):
            lengths = self._episode_steps[ended]
            self._mean_length += 0.05 * (lengths.mean() - self._mean_length)
            self._episode_steps[ended] = 0
            ended = ended[self.rotating[ended]]
            if len(ended):
                self._deal(ended)
        return obs, rewards, dones, infos

    def env_method(self, method_name: str, *method_args: Any, indices=None,
                   **method_kwargs: Any) -> list[Any]:
        if method_name == "set_red_policy":
            policy = method_args[0] if method_args else method_kwargs.get("policy")
            battles = np.arange(self.num_envs)[indices if indices is not None else slice(None)]
            if policy is None or policy is self.random:
                self.rotating[battles] = True  # dealt again from the next episode
                return [None] * len(np.atleast_1d(battles))
            self.rotating[battles] = False
        return self.venv.env_method(method_name, *method_args, indices=indices,
                                    **method_kwargs)


def make_eval_env(config: TrainingConfig) -> BattalionVecEnv:
    """One battle per evaluation episode against scripted ``curriculum_level``, all
    stepped together, on fixed seeds (``seed + 1000 + i``)."""
    env = BattalionVecEnv(config.n_eval_episodes, curriculum_level=config.curriculum_level,
                          **env_kwargs_for(config))
    env.seed(config.seed + 1000)
    return env
