"""Each kernel compiles once: inputs reach it with the same types from every caller.

Numba compiles (and caches) a kernel once per signature, and types a read-only array
apart from a writable one. The constants vector, formation orders and scripted levels
reach the kernels read-only (:func:`envs.sim.jit.read_only`) whether they are the
shared read-only ones or a caller's own (given by a user, unpickled on a Ray worker),
so a process never compiles the whole step a second time for them. Constants pass
from kernel to kernel as NumPy scalars, not literals ("Literal arguments" in
:mod:`envs.sim.jit`).
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np

from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.battles.multi_observation import FogReports, observe, observe_battles
from envs.battles.team_step import restart_teams, team_step_kernel
from envs.sim import engine, kernels, scripted
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.constants import KEEP_FORMATION, VISIBILITY_RADIUS
from envs.sim.deploy import deploy
from envs.sim.jit import read_only
from envs.sim.state import BattleState

N = 8


def test_read_only_gives_a_read_only_view_and_leaves_the_array_writable():
    array = np.arange(3, dtype=np.float32)
    view = read_only(array)
    assert not view.flags.writeable and array.flags.writeable and view.base is array
    assert read_only(view) is view


def test_an_unpickled_team_batch_steps_with_the_same_kernels():
    battles = MultiBattalionBatch(N, 2, 2, config=BattleConfig(), terrain=None,
                                  randomize_terrain=True, visibility_radius=VISIBILITY_RADIUS,
                                  reward_weights=None)
    battles.reset(np.arange(N), list(range(N)), np.zeros(N, np.int64))
    orders = np.zeros((N, 4, 3), np.float32)
    battles.step(orders)
    battles.next_episode(np.arange(1))
    copy = pickle.loads(pickle.dumps(battles))  # its arrays come back writable
    copy.step(orders)
    copy.next_episode(np.arange(1))
    assert len(team_step_kernel(N).signatures) == 1
    assert len(restart_teams.signatures) == 1


def test_the_engine_and_the_scripted_levels_take_any_caller_s_arrays():
    config = BattleConfig()
    state = BattleState.empty(N, np.array([0, 1]), 1, 1)
    deploy(state, np.arange(N), rnd.seed_keys(np.arange(N, dtype=np.uint64)), config,
           randomize_terrain=False)
    actions = np.zeros((N, 2, 3), np.float32)
    state, events = engine.step(state, actions, config)  # the shared read-only orders
    engine.step(state, actions, config, formations=np.full((N, 2), KEEP_FORMATION))
    assert len(kernels.step_kernel.signatures) == 1
    units = np.array([1])
    scripted.scripted_actions(state, events.geometry, units, np.full(N, 5, np.int8), config)
    scripted.scripted_actions(state, events.geometry, units, read_only(np.full(N, 5, np.int8)),
                              config)
    assert len(scripted.scripted_kernel.signatures) == 1


def test_the_fog_is_observed_by_one_kernel_whether_revealed_or_not():
    """``observe()`` calls the team step's own observation kernel, with ``reveal_all`` a
    plain bool: a literal ``True`` or ``False`` would compile it (half a minute) per value."""
    config = BattleConfig()
    state = BattleState.empty(N, np.array([0, 0, 1, 1]), 1, 1)
    deploy(state, np.arange(N), rnd.seed_keys(np.arange(N, dtype=np.uint64)), config,
           randomize_terrain=False)
    geometry = engine.sense(state, config)
    reports = FogReports.empty(4, N)
    observe(state, geometry, reports, VISIBILITY_RADIUS, config, reveal_all=True)
    observe(state, geometry, reports, VISIBILITY_RADIUS, config)
    (signature,) = observe_battles.signatures
    parameters = list(inspect.signature(observe_battles.py_func).parameters)
    assert str(signature[parameters.index("reveal_all")]) == "bool"
