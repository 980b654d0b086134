"""Invariants of the simulator under arbitrary orders (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from envs.sim import engine
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.deploy import deploy
from envs.sim.scripted import scripted_actions
from envs.sim.state import BattleState

CONFIG = BattleConfig(map_width=600.0, map_height=400.0)  # small map: fights happen
BATCH, STEPS = 6, 120


@st.composite
def battles(draw):
    seed = draw(st.integers(0, 2**31))
    n_blue = draw(st.integers(1, 3))
    n_red = draw(st.integers(1, 3))
    scale = draw(st.sampled_from([1.0, 3.0]))  # 3.0: orders far outside the box
    scripted = draw(st.booleans())
    return seed, n_blue, n_red, scale, scripted


def run(seed, n_blue, n_red, scale, scripted):
    team = np.array([0] * n_blue + [1] * n_red)
    state = BattleState.empty(BATCH, team, 20, 20)
    deploy(state, np.arange(BATCH), rnd.seed_keys(np.arange(seed, seed + BATCH)), CONFIG)
    rng = np.random.default_rng(seed)
    geometry = engine.sense(state, CONFIG)
    levels = np.full(BATCH, 5)
    history = [state]
    for _ in range(STEPS):
        orders = rng.uniform(-scale, scale, size=(BATCH, len(team), 3)).astype(np.float32)
        if scripted:
            red = np.nonzero(team == 1)[0]
            orders[:, red] = scripted_actions(state, geometry, red, levels, CONFIG)
        state, events = engine.step(state, orders, CONFIG, geometry)
        geometry = events.geometry
        history.append((state, events))
    return history


@settings(max_examples=25, deadline=None)
@given(battles())
def test_quantities_stay_in_their_ranges_and_units_on_the_map(params):
    history = run(*params)
    for state, _ in history[1:]:
        for name in ("strength", "morale", "readiness"):
            values = getattr(state, name)
            assert values.min() >= 0 and values.max() <= 1, name
        assert state.x.min() >= 0 and state.x.max() <= CONFIG.map_width
        assert state.y.min() >= 0 and state.y.max() <= CONFIG.map_height
        assert state.theta.min() >= 0 and state.theta.max() < 2 * math.pi


@settings(max_examples=25, deadline=None)
@given(battles())
def test_losses_are_final_and_units_out_of_the_fight_stop_acting(params):
    history = run(*params)
    previous = history[0]
    for state, events in history[1:]:
        assert (state.strength <= previous.strength).all()
        assert (state.routed >= previous.routed).all()
        assert (state.destroyed >= previous.destroyed).all()
        out = previous.routed | previous.destroyed
        assert np.array_equal(state.x[out], previous.x[out])
        assert np.array_equal(state.theta[out], previous.theta[out])
        assert (events.damage_dealt[out] == 0).all() and (events.volley[out] == 0).all()
        previous = state
