"""Self-play: a pool of frozen past selves as opponents, and play against it.

:class:`OpponentPool` keeps the latest ``max_size`` snapshots of a learner as SB3 ``.zip``
files; :class:`SelfPlayCallback` snapshots the learner every ``snapshot_freq`` steps and
deals pool members (most battles) and the config's scripted opponents (a share) as Red;
:class:`WinRateVsPoolCallback` and :func:`evaluate_vs_pool` rate the learner against pool
members. :class:`TeamOpponentPool` holds frozen MAPPO teams (:func:`evaluate_team_vs_pool`,
:func:`nash_exploitability_proxy`), :class:`WFM1OpponentPool` frozen WFM-1 generalists.
They live in ``training/{ppo,mappo,wfm1}/pool.py``, :mod:`training.ppo.self_play` and
:mod:`training.mappo.evaluation`; this module holds the duel against a pool and is where
all of them are imported from (``docs/self_play.md``). Besides
``train(enable_self_play=True)``, directly, with an ``OpponentPool``::

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
