"""Self-play: a pool of frozen past selves as opponents, and play against it.

* :class:`OpponentPool` keeps the latest ``max_size`` snapshots of a learner as
  SB3 ``.zip`` files (``snapshot_v{version:06d}.zip``), written atomically.
* :class:`SelfPlayCallback` snapshots the learner every ``snapshot_freq`` steps
  and re-deals Red in the training battles: most battles face pool members
  (several different ones at once, each queried once per step for all its
  battles), and a share keeps facing the config's scripted opponents so the
  learner does not forget how to beat simple doctrines.
* :class:`WinRateVsPoolCallback` and :func:`evaluate_vs_pool` measure the
  learner against pool members, with the training battles' settings. Each
  snapshot enters the Elo registry at the learner's rating when it was taken,
  so progress against past selves is a number on the same scale as the
  scripted baselines.
* :class:`TeamOpponentPool` is the multi-agent counterpart: frozen MAPPO teams
  (``team_snapshot_v{version:06d}.pt``) for the Red side of N-vs-M battles;
  :func:`evaluate_team_vs_pool` and :func:`nash_exploitability_proxy` measure a
  team against them.

The pools live in :mod:`training.ppo.pool` and :mod:`training.mappo.pool` (on
:mod:`training.common.pools`), the SB3 callbacks in
:mod:`training.ppo.self_play`; this module holds the evaluation against a pool
(every battle played by :func:`training.common.play.play`) and is where all of
them are documented and imported from.

Typical use is ``train(enable_self_play=True)``; directly::

    pool = OpponentPool("checkpoints/pool", max_size=10)
    model.learn(1_000_000, callback=[SelfPlayCallback(pool, 50_000),
                                     WinRateVsPoolCallback(pool, 50_000)])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.sim.validation import check_int
from models.mappo_policy import MAPPOPolicy
from training.common.pools import SnapshotPool
from training.evaluate import EvaluationResult, play_duels
from training.mappo.battles import LOSS, WIN, play_team_battles
from training.mappo.pool import TeamOpponentPool
from training.ppo.pool import OpponentPool
from training.ppo.self_play import SelfPlayCallback, WinRateVsPoolCallback, self_play_callbacks

__all__ = ["OpponentPool", "SelfPlayCallback", "SnapshotPool", "TeamOpponentPool",
           "WinRateVsPoolCallback",
           "evaluate_team_vs_pool", "evaluate_vs_pool", "nash_exploitability_proxy",
           "pool_opponent_win_rates", "self_play_callbacks"]


def evaluate_vs_pool(model: Any, opponent: Any, n_episodes: int = 20,
                     deterministic: bool = True, seed: int | None = None,
                     env_kwargs: dict | None = None) -> float:
    """Blue's win rate with ``model`` against ``opponent`` commanding Red.

    Both sides act in the same mode (``deterministic``), so a policy against a
    copy of itself is an even match. The battles run as one batch with the
    given BattalionEnv settings (pass the training run's, e.g.
    :func:`training.ppo.battles.env_kwargs_for`); episode ``i`` uses ``seed + i``.
    A win is Red routed or destroyed while Blue is neither.

    Raises:
        ValueError: if ``n_episodes < 1``.
    """
    outcomes = play_duels(model, opponent, n_episodes, deterministic, seed,
                          env_kwargs=env_kwargs, red_deterministic=deterministic)
    return EvaluationResult.from_outcomes(outcomes).win_rate


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
                              env_kwargs: dict[str, Any] | None = None) -> float:
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

    Returns:
        The proxy in [0, 1]; 0.0 for an empty pool.
    """
    rates = pool_opponent_win_rates(policy, pool, n_blue, n_red, n_episodes_per_opponent, seed,
                                    env_kwargs)
    if not rates:
        return 0.0
    return max(rates) - float(np.mean(rates))


def pool_opponent_win_rates(policy: MAPPOPolicy, pool: TeamOpponentPool, n_blue: int = 2,
                            n_red: int = 2, n_episodes_per_opponent: int = 10,
                            seed: int | None = None,
                            env_kwargs: dict[str, Any] | None = None) -> list[float]:
    """Each snapshot's share of battles *won* against ``policy`` (oldest first; draws
    count for nobody). Arguments as for :func:`nash_exploitability_proxy`."""
    check_int("n_episodes_per_opponent", n_episodes_per_opponent, minimum=1)
    rates = []
    for path in pool.snapshot_paths:
        outcomes = play_team_battles(policy, pool.load(path), n_blue=n_blue, n_red=n_red,
                                     n_episodes=n_episodes_per_opponent, seed=seed,
                                     env_kwargs=env_kwargs)
        rates.append(float((outcomes == LOSS).mean()))
    return rates
