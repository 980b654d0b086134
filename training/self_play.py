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
* :class:`WFM1OpponentPool` holds frozen WFM-1 generalists
  (``wfm1_snapshot_v{version:06d}.pt``), which command Red in a share of WFM-1's
  training battles (``self_play.enabled`` in ``configs/wfm1_train.yaml``,
  :class:`~training.wfm1.trainer.WFM1Trainer`).

The pools live in :mod:`training.ppo.pool`, :mod:`training.mappo.pool` and
:mod:`training.wfm1.pool` (on :mod:`training.common.pools`), the SB3 callbacks in
:mod:`training.ppo.self_play`, the team measures in :mod:`training.mappo.evaluation`;
this module holds the duel against a pool (every battle played by
:func:`training.common.play.play`) and is where all of them are documented and imported
from.

Typical use is ``train(enable_self_play=True)``; directly::

    pool = OpponentPool("checkpoints/pool", max_size=10)
    model.learn(1_000_000, callback=[SelfPlayCallback(pool, 50_000),
                                     WinRateVsPoolCallback(pool, 50_000)])
"""

from __future__ import annotations

from typing import Any

from training.common.pools import SnapshotPool
from training.mappo.evaluation import (
    evaluate_team_vs_pool,
    nash_exploitability_proxy,
    pool_opponent_win_rates,
)
from training.mappo.pool import TeamOpponentPool
from training.ppo.evaluation import EvaluationResult, play_duels
from training.ppo.pool import OpponentPool
from training.ppo.self_play import SelfPlayCallback, WinRateVsPoolCallback, self_play_callbacks
from training.wfm1.pool import WFM1OpponentPool

__all__ = ["OpponentPool", "SelfPlayCallback", "SnapshotPool", "TeamOpponentPool",
           "WFM1OpponentPool", "WinRateVsPoolCallback",
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
