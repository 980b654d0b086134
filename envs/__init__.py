"""Environments: the battle simulator and the RL interfaces on top of it.

``BattalionEnv`` is registered with Gymnasium as ``wargames/Battalion-v0``.
"""

import gymnasium

from envs.battalion_env import BattalionEnv
from envs.reward import RewardWeights
from envs.sim.config import BattleConfig
from envs.sim.terrain import TerrainMap
from envs.vec_env import BattalionVecEnv

if "wargames/Battalion-v0" not in gymnasium.registry:
    # The env truncates itself at max_steps, so no TimeLimit wrapper is added.
    gymnasium.register("wargames/Battalion-v0", entry_point="envs.battalion_env:BattalionEnv")

__all__ = ["BattalionEnv", "BattalionVecEnv", "BattleConfig", "RewardWeights", "TerrainMap"]
