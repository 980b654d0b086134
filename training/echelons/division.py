"""A division commander trained with PPO over frozen brigade and battalion commanders.

The division commander (SB3 PPO, :class:`~models.echelon_policy.EchelonMlpPolicy`) gives
each Blue brigade one of the :data:`~envs.echelons.division_batch.DIVISION_COMMANDS` every
``temporal_ratio`` battalion steps (:func:`division_battles`: ``n_envs`` battles of a
:class:`~envs.echelons.division_batch.DivisionBatch` as one
:class:`~envs.echelons.echelon_env.EchelonVecEnv`). With ``hierarchy.brigade_policy`` a
frozen brigade commander (phase 2, :func:`load_frozen_brigade_policy`) chooses each
battalion's drill within the command, and with ``hierarchy.battalion_policy`` a frozen
order-following battalion policy (phase 1) carries each drill out as an order; without
them the command is every battalion's drill. Red is scripted at ``env.red_level``.
:func:`train_division` runs it (``python -m training.train_division``, Hydra,
``configs/experiment_division.yaml``), evaluating with :class:`DivisionWinRateCallback`
and writing ``ppo_division_*.zip`` checkpoints. ``docs/echelons.md`` has the guide.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3 import PPO

from envs.echelons.brigade_batch import brigade_obs_dim
from envs.echelons.division_env import make_division_batch, make_division_vec_env
from envs.options import MacroAction
from models.weights import checkpoint_path as checkpoint_path_of
from training.echelons.config import CONFIG_FILES, DivisionConfig
from training.echelons.trainer import (
    EchelonResult,
    EchelonWinRateCallback,
    load_commander,
    load_frozen_battalion_policy,
    train_commander,
)
from training.ppo.checkpoints import archive_data, stored_shape

CHECKPOINT_PREFIX = "ppo_division"


class DivisionWinRateCallback(EchelonWinRateCallback):
    """Deterministic evaluation battles of the division commander; logs
    ``division/win_rate`` (a win is ``winner == "blue"``), ``draw_rate``, ``loss_rate``."""

    echelon = "division"


def load_frozen_brigade_policy(checkpoint_path: str | Path, device: str = "cpu") -> PPO:
    """A brigade commander's SB3 file (``ppo_brigade_final.zip``), loaded without running
    code from it (:func:`~training.ppo.checkpoints.load_ppo`, its spaces checked to be a
    brigade commander's) and frozen.

    Raises:
        FileNotFoundError: if nothing is at ``checkpoint_path``.
        ValueError: if the file is not a PPO archive this project can read safely.
    """
    found = checkpoint_path_of(checkpoint_path)
    if found is None:
        raise FileNotFoundError(f"checkpoint {checkpoint_path} does not exist (also tried "
                                f"{checkpoint_path}.zip)")
    shape = stored_shape(archive_data(found).get("observation_space"))
    n_blue = None if not shape or len(shape) != 1 else (shape[0] - brigade_obs_dim(0)) // 7
    if n_blue is None or n_blue < 1 or brigade_obs_dim(n_blue) != shape[0]:
        raise ValueError(f"{found} holds a policy for observations of shape {shape}: expected "
                         "a brigade commander's (3 + 7 * battalions + 1 numbers)")
    return load_commander(found, shape[0], n_blue, len(MacroAction), device)


def division_battles(config: DivisionConfig, n_battles: int, brigade: Any = None,
                     battalion: Any = None):
    """``n_battles`` division battles of ``config``'s settings, Blue's brigades under
    ``brigade`` and its battalions under ``battalion`` (frozen policies), or None."""
    return make_division_batch(
        n_battles, config.n_brigades, config.n_blue_per_brigade, config.n_red_brigades,
        config.n_red_per_brigade, blue_brigade_policy=brigade, blue_policy=battalion,
        **config.battle_kwargs())


def train_division(config: DivisionConfig | None = None, **overrides: Any) -> EchelonResult:
    """Train a division commander (module docstring).

    Args:
        config: the run's settings (defaults: :class:`DivisionConfig`'s).
        **overrides: settings to change, by field name.

    Raises:
        ValueError: for a bad setting (named), or a frozen policy file that does not fit
            (named).
    """
    config = config or DivisionConfig()
    if overrides:
        config = config.replace(**overrides)
    brigade = None if config.brigade_policy is None else load_frozen_brigade_policy(
        config.brigade_policy)
    battalion = None if config.battalion_policy is None else load_frozen_battalion_policy(
        config.battalion_policy)
    vec_env = make_division_vec_env(
        config.n_envs, n_brigades=config.n_brigades,
        n_blue_per_brigade=config.n_blue_per_brigade, n_red_brigades=config.n_red_brigades,
        n_red_per_brigade=config.n_red_per_brigade, blue_brigade_policy=brigade,
        blue_policy=battalion, **config.battle_kwargs())
    return train_commander(config, vec_env, DivisionWinRateCallback,
                           lambda n: division_battles(config, n, brigade, battalion),
                           CHECKPOINT_PREFIX)


def main() -> None:
    """Hydra entry point: ``python -m training.train_division key=value ...``."""
    CONFIG_FILES["division"].run(lambda config, _resume: print(train_division(config).report()))


__all__ = ["CHECKPOINT_PREFIX", "DivisionWinRateCallback",
           "division_battles", "load_frozen_brigade_policy", "train_division"]

if __name__ == "__main__":
    main()
