"""A brigade commander trained with PPO over frozen battalion commanders.

The brigadier (SB3 PPO, :class:`~models.echelon_policy.EchelonMlpPolicy`; by default it
first imitates :class:`~envs.echelons.doctrine.InStepBrigadier`, ``warm_start_doctrine``)
gives each Blue battalion a drill every ``temporal_ratio`` battalion steps
(:func:`brigade_battles`: ``n_envs`` battles of a
:class:`~envs.echelons.brigade_batch.BrigadeBatch` as one
:class:`~envs.echelons.echelon_env.EchelonVecEnv`); the battalions carry the drills out
themselves, or, with ``hierarchy.battalion_policy``, a frozen order-following battalion
policy (phase 1 of the HRL curriculum) carries each out as an order. Red is scripted at
``env.red_level``. :func:`train_brigade` runs it (``python -m training.train_brigade``,
Hydra, ``configs/experiment_brigade.yaml``), evaluating with
:class:`BrigadeWinRateCallback` and writing ``ppo_brigade_*.zip`` checkpoints; shared
machinery: :mod:`training.echelons.trainer`. ``docs/echelons.md`` has the guide.
"""

from __future__ import annotations

from typing import Any

from envs.echelons.brigade_env import make_brigade_batch, make_brigade_vec_env
from training.echelons.config import CONFIG_FILES, BrigadeConfig
from training.echelons.trainer import (
    EchelonResult,
    EchelonWinRateCallback,
    load_frozen_battalion_policy,
    train_commander,
)

CHECKPOINT_PREFIX = "ppo_brigade"


class BrigadeWinRateCallback(EchelonWinRateCallback):
    """Deterministic evaluation battles of the brigade commander; logs
    ``brigade/win_rate`` (a win is ``winner == "blue"``), ``draw_rate``, ``loss_rate``."""

    echelon = "brigade"


def brigade_battles(config: BrigadeConfig, n_battles: int, battalion: Any = None):
    """``n_battles`` brigade battles of ``config``'s settings, Blue's battalions under
    ``battalion`` (a frozen order-following policy) or their drills."""
    return make_brigade_batch(n_battles, config.n_blue, config.n_red,
                              blue_policy=battalion, **config.battle_kwargs())


def train_brigade(config: BrigadeConfig | None = None, **overrides: Any) -> EchelonResult:
    """Train a brigade commander (module docstring).

    Args:
        config: the run's settings (defaults: :class:`BrigadeConfig`'s).
        **overrides: settings to change, by field name.

    Raises:
        ValueError: for a bad setting (named), or a battalion policy file that does not
            fit (named).
    """
    config = config or BrigadeConfig()
    if overrides:
        config = config.replace(**overrides)
    battalion = None if config.battalion_policy is None else load_frozen_battalion_policy(
        config.battalion_policy)
    vec_env = make_brigade_vec_env(config.n_envs, n_blue=config.n_blue, n_red=config.n_red,
                                   blue_policy=battalion, **config.battle_kwargs())
    return train_commander(config, vec_env, BrigadeWinRateCallback,
                           lambda n: brigade_battles(config, n, battalion), CHECKPOINT_PREFIX)


def main() -> None:
    """Hydra entry point: ``python -m training.train_brigade key=value ...``."""
    CONFIG_FILES["brigade"].run(lambda config, _resume: print(train_brigade(config).report()))


__all__ = ["BrigadeConfig", "BrigadeWinRateCallback", "CHECKPOINT_PREFIX",
           "brigade_battles", "load_frozen_battalion_policy", "train_brigade"]

if __name__ == "__main__":
    main()
