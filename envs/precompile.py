"""Compile every simulator kernel once, so that later processes load them from the cache.

It steps every kind of battle batch and the bare engine once, below and above the
parallel batch size (in two halves, two processes at once where there are two cores),
which fills the Numba cache for every later process; ``make test`` runs it first, so that
a test suite's workers or a league's roles do not each compile the same kernels at once.
It imports only the battles' own modules (NumPy, Numba, filelock and PyYAML), which lets
the kernels compile while the rest installs. ``docs/simulation.md`` ("Compiling the
kernels") says more.

Usage::

    python -m envs.precompile
"""

from __future__ import annotations

import multiprocessing
import os
import time

import numpy as np

from envs.battles.battalion_batch import BattalionBatch
from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.battles.multi_observation import FogReports, observe
from envs.sim import engine
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.constants import KEEP_FORMATION, VISIBILITY_RADIUS
from envs.sim.deploy import deploy
from envs.sim.kernels import PARALLEL_MIN_BATTLES
from envs.sim.state import BattleState

SCRIPTED_LEVEL = 5


def _duels(n_battles: int) -> None:
    """A batch of duels with the envs' defaults: deployed, stepped, one battle restarted
    while the others go on (an auto-reset, its own kernel)."""
    battles = BattalionBatch(n_battles, curriculum_level=SCRIPTED_LEVEL, reward_weights=None)
    battles.reset(np.arange(n_battles), list(range(n_battles)),
                  np.zeros(n_battles, np.int64))
    battles.step(np.zeros((n_battles, 3), np.float32))
    battles.next_episode(np.arange(1))


def _team_batch(n_battles: int) -> MultiBattalionBatch:
    """A deployed batch of 2v2 battles (the first deployment observes through the public
    functions' kernels: :func:`~envs.battles.multi_observation.sightings` and the rest)."""
    battles = MultiBattalionBatch(n_battles, 2, 2, config=BattleConfig(), terrain=None,
                                  randomize_terrain=True, visibility_radius=VISIBILITY_RADIUS,
                                  reward_weights=None)
    battles.reset(np.arange(n_battles), list(range(n_battles)), np.zeros(n_battles, np.int64))
    return battles


def _teams(n_battles: int, restarts: bool = True) -> None:
    battles = _team_batch(n_battles)
    orders = np.zeros((n_battles, 4, 3), np.float32)
    orders[:, 2:] = battles.scripted_actions(np.arange(2, 4), SCRIPTED_LEVEL)
    battles.action_noise()
    result = battles.step(orders)
    _ = result.observation, result.critic_state  # built when first read
    if restarts:
        battles.next_episode(np.arange(n_battles))
        battles.next_episode(np.arange(1))  # one battle restarting alone: its own kernel


def _fog(n_battles: int) -> None:
    """The fog of war's kernel alone (:func:`~envs.battles.multi_observation.observe`):
    the longest compilation of the team step, started first."""
    config = BattleConfig()
    state = BattleState.empty(n_battles, np.array([0, 0, 1, 1]), 1, 1)
    deploy(state, np.arange(n_battles), rnd.seed_keys(np.arange(n_battles, dtype=np.uint64)),
           config, randomize_terrain=False)
    observe(state, engine.sense(state, config), FogReports.empty(4, n_battles),
            VISIBILITY_RADIUS, config, reveal_all=True)


def _engine(n_battles: int) -> None:
    """The bare engine step (scenarios, benchmarks), with formation orders."""
    config = BattleConfig()
    state = BattleState.empty(n_battles, np.array([0, 1]), 1, 1)
    deploy(state, np.arange(n_battles), rnd.seed_keys(np.arange(n_battles, dtype=np.uint64)),
           config, randomize_terrain=False)
    engine.step(state, np.zeros((n_battles, 2, 3), np.float32), config,
                formations=np.full((n_battles, 2), KEEP_FORMATION))


def _single_battles() -> None:
    """Batches of one battle, as ``BattalionEnv`` and ``MultiBattalionEnv`` step them."""
    duel = BattalionBatch(1, curriculum_level=SCRIPTED_LEVEL, reward_weights=None)
    duel.reset(np.arange(1), [0], np.zeros(1, np.int64))
    duel.step(np.zeros((1, 3), np.float32))
    team = _team_batch(1)
    orders = np.zeros((1, 4, 3), np.float32)
    orders[:, 2:] = team.scripted_actions(np.arange(2, 4), SCRIPTED_LEVEL)
    result = team.step(orders)
    _ = result.observation, result.critic_state


SERIAL = 8
"""A batch size below :data:`~envs.sim.kernels.PARALLEL_MIN_BATTLES`."""

PARTS = ("duels", "teams")
"""The halves the compilation is split into, about equal in time: ``"teams"`` the team
step's fog of war and its step on one thread and on many; ``"duels"`` the bare engine's
steps, every duel kernel, the team batches' deployment and restarts, and single battles.
Each starts with what the other part's later kernels are built from, so that they load
it from the cache instead of compiling it twice."""


def precompile(parts: tuple[str, ...] = PARTS) -> float:
    """Step every kind of battle batch once, below and above the parallel batch size.

    Parameters:
        parts: which of :data:`PARTS` to compile (both by default).

    Returns:
        The seconds it took (loading from a warm cache takes a few).

    Raises:
        ValueError: for a part not in :data:`PARTS`.
    """
    for part in parts:
        if part not in PARTS:
            raise ValueError(f"parts: {part!r} is invalid: expected one of {', '.join(PARTS)}")
    start = time.perf_counter()
    if "duels" in parts:
        _engine(SERIAL)  # the battle step itself: every other step calls it
        _team_batch(SERIAL)
        _engine(PARALLEL_MIN_BATTLES)
        _duels(SERIAL)
        _duels(PARALLEL_MIN_BATTLES)
    if "teams" in parts:
        _fog(SERIAL)
        _teams(PARALLEL_MIN_BATTLES, restarts=False)
    if "duels" in parts:  # by now the other part has compiled the team step's pieces
        _teams(SERIAL)
        _single_battles()
    return time.perf_counter() - start


def _compile_part(part: str) -> float:
    return precompile((part,))


def main() -> None:
    """Compile both halves at once, one process each where there are two cores (Numba
    compiles in one thread), and fill the cache every later process loads from."""
    print("compiling the simulator's kernels (about two minutes on a cold cache) ...",
          flush=True)
    start = time.perf_counter()
    if len(os.sched_getaffinity(0)) >= 2:
        context = multiprocessing.get_context("spawn")
        with context.Pool(len(PARTS)) as pool:
            seconds = pool.map(_compile_part, PARTS, chunksize=1)
        parts = ", ".join(f"{part} {took:.1f} s" for part, took in
                          zip(PARTS, seconds, strict=True))
        print(f"kernels ready in {time.perf_counter() - start:.1f} s ({parts} at once)")
    else:
        precompile()
        print(f"kernels ready in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
