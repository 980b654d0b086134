"""Environments: the battle simulator and the RL interfaces on top of it.

The public classes are imported on first use, so that light modules of this
package (``envs.sim``) load neither Gymnasium nor torch, which
``BattalionVecEnv`` pulls in through Stable-Baselines3. ``BattalionEnv`` is
registered with Gymnasium as ``wargames/Battalion-v0`` when its module is
imported (e.g. by ``from envs import BattalionEnv``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envs.lazy import lazy_getattr

_EXPORTS = {
    "BattalionEnv": "envs.battalion_env",
    "BattalionVecEnv": "envs.vec_env",
    "BattleConfig": "envs.sim.config",
    "Battlefield": "envs.battlefield",
    "MultiBattalionEnv": "envs.multi_battalion_env",
    "RewardWeights": "envs.reward",
    "TerrainMap": "envs.sim.terrain",
}

__all__ = ["BattalionEnv", "BattalionVecEnv", "BattleConfig", "Battlefield", "MultiBattalionEnv",
           "RewardWeights", "TerrainMap"]

if TYPE_CHECKING:
    from envs.battalion_env import BattalionEnv
    from envs.battlefield import Battlefield
    from envs.multi_battalion_env import MultiBattalionEnv
    from envs.reward import RewardWeights
    from envs.sim.config import BattleConfig
    from envs.sim.terrain import TerrainMap
    from envs.vec_env import BattalionVecEnv

__getattr__ = lazy_getattr("envs", _EXPORTS)
