"""The battles a training config describes: the training env and the evaluation env."""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecMonitor

from envs.reward import RewardWeights
from envs.vec_env import BattalionVecEnv
from training.config import TrainingConfig
from training.opponents import RandomPolicy

__all__ = ["env_kwargs_for", "make_eval_env", "make_training_env"]


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
    """The training battles: ``n_envs`` battles, their opponents assigned in turn from
    ``training_opponents`` (all scripted at ``curriculum_level`` if that is empty)."""
    env = BattalionVecEnv(config.n_envs, curriculum_level=config.curriculum_level,
                          **env_kwargs_for(config))
    opponents = config.training_opponents
    if opponents:
        battles = np.arange(config.n_envs)
        random_battles = [int(i) for i in battles if opponents[i % len(opponents)] == "random"]
        for level in range(1, 6):
            chosen = [int(i) for i in battles
                      if opponents[i % len(opponents)] == f"scripted_l{level}"]
            if chosen:
                env.env_method("set_curriculum_level", level, indices=chosen)
        if random_battles:
            env.env_method("set_red_policy", RandomPolicy(config.seed), indices=random_battles)
    env.seed(config.seed)
    return VecMonitor(env)


def make_eval_env(config: TrainingConfig) -> BattalionVecEnv:
    """One battle per evaluation episode against scripted ``curriculum_level``, all
    stepped together, on fixed seeds (``seed + 1000 + i``)."""
    env = BattalionVecEnv(config.n_eval_episodes, curriculum_level=config.curriculum_level,
                          **env_kwargs_for(config))
    env.seed(config.seed + 1000)
    return env
