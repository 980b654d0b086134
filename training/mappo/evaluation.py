"""A MAPPO team against frozen teams: win rates and the Nash exploitability proxy.

Every battle is played as one batch by :func:`training.mappo.battles.play_team_battles`.
The seed documents these under :mod:`training.self_play`, which hands them on; MAPPO's
hooks take them from here, so that ``training.mappo`` never imports the face above it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.sim.validation import check_int
from models.mappo_policy import MAPPOPolicy
from training.mappo.battles import LOSS, WIN, play_team_battles
from training.mappo.pool import TeamOpponentPool

__all__ = ["evaluate_team_vs_pool", "nash_exploitability_proxy", "pool_opponent_win_rates"]


def evaluate_team_vs_pool(policy: MAPPOPolicy, opponent: MAPPOPolicy, n_blue: int = 2,
                          n_red: int = 2, n_episodes: int = 20, deterministic: bool = True,
                          seed: int | None = None,
                          env_kwargs: dict[str, Any] | None = None) -> float:
    """Blue's win rate when ``policy`` commands Blue and ``opponent`` Red.

    The battles are played as one batch of
    :class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch` (the batched
    :class:`~envs.multi_battalion_env.MultiBattalionEnv`); battle ``i`` is the
    first battle of seed ``seed + i``. Blue battalion ``i`` acts with actor
    ``i mod policy.n_agents``, Red's likewise with the opponent's; the opponent
    samples its actions (a frozen snapshot plays as it trained). A win means
    every Red battalion is out of the fight while a Blue one is still in it.

    Args:
        policy: the Blue :class:`~models.mappo_policy.MAPPOPolicy`.
        opponent: the frozen Red policy.
        n_blue: Blue's team size.
        n_red: Red's team size.
        n_episodes: number of battles (>= 1).
        deterministic: Blue acts on its policy's mean.
        seed: base seed (0 when None).
        env_kwargs: further MultiBattalionEnv settings.

    Returns:
        Win rate in [0, 1].

    Raises:
        ValueError: if ``n_episodes < 1``.
    """
    outcomes = play_team_battles(policy, opponent, n_blue=n_blue, n_red=n_red,
                                 n_episodes=n_episodes, deterministic=deterministic, seed=seed,
                                 env_kwargs=env_kwargs)
    return float((outcomes == WIN).mean())


def nash_exploitability_proxy(policy: MAPPOPolicy, pool: TeamOpponentPool, n_blue: int = 2,
                              n_red: int = 2, n_episodes_per_opponent: int = 10,
                              seed: int | None = None,
                              env_kwargs: dict[str, Any] | None = None,
                              order_of_battle: Any = None) -> float:
    """How far the pool's best member beats ``policy`` compared with the average member.

    For every snapshot ``i`` the opponent's win rate ``owr_i`` is the share of
    battles Red *won* (a draw is nobody's win, unlike the reference, which
    counted draws for the opponent). The proxy is ``max(owr) - mean(owr)``: 0
    when no member does better than the others against the policy, large when one
    has found a weakness.

    Args:
        policy: the Blue policy.
        pool: the team pool; every snapshot in it is played.
        n_blue: Blue's team size.
        n_red: Red's team size.
        n_episodes_per_opponent: battles per snapshot (>= 1).
        seed: base seed; every snapshot meets the same battles.
        env_kwargs: further MultiBattalionEnv settings.
        order_of_battle: each unit's arm, formation and quality (None: infantry in line).

    Returns:
        The proxy in [0, 1]; 0.0 for an empty pool.
    """
    rates = pool_opponent_win_rates(policy, pool, n_blue, n_red, n_episodes_per_opponent, seed,
                                    env_kwargs, order_of_battle)
    if not rates:
        return 0.0
    return max(rates) - float(np.mean(rates))


def pool_opponent_win_rates(policy: MAPPOPolicy, pool: TeamOpponentPool, n_blue: int = 2,
                            n_red: int = 2, n_episodes_per_opponent: int = 10,
                            seed: int | None = None,
                            env_kwargs: dict[str, Any] | None = None,
                            order_of_battle: Any = None) -> list[float]:
    """Each snapshot's share of battles *won* against ``policy`` (oldest first; draws
    count for nobody). Arguments as for :func:`nash_exploitability_proxy`."""
    check_int("n_episodes_per_opponent", n_episodes_per_opponent, minimum=1)
    rates = []
    for path in pool.snapshot_paths:
        outcomes = play_team_battles(policy, pool.load(path), n_blue=n_blue, n_red=n_red,
                                     n_episodes=n_episodes_per_opponent, seed=seed,
                                     env_kwargs=env_kwargs, order_of_battle=order_of_battle)
        rates.append(float((outcomes == LOSS).mean()))
    return rates
