"""The planning commander (envs.planning): honest under fog (its choice never depends on
what its side cannot see) and under dice (its futures never touch or reuse the real
battles' random state); its belief over the enemy; its checks."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from envs.commanders.doctrine import DisciplinedCommander, InStepCommander
from envs.planning.belief import belief_states, hidden_enemies
from envs.planning.opponent import EnemyBelief
from envs.planning.planner import PlanningCommander, Search
from envs.play.commanders import BatchedRed, ScriptedRed
from envs.sim.state import UNIT_FIELDS
from training.mappo.battles import PolicyCommander, make_team_battles

BLUE_UNITS, RED_UNITS = np.arange(2), np.arange(2, 4)
# A small field where the battalions lose sight of each other: 120 m of sight on ground
# with hills and woods.
FIELD = dict(map_width=600.0, map_height=600.0, max_steps=200, randomize_terrain=True,
             visibility_radius=120.0)
SEARCH = Search(every=5, futures=3, horizon=20)


def doctrine(commander, name):
    return BatchedRed(PolicyCommander(commander, deterministic=True), name)


def candidates():
    return [doctrine(InStepCommander(hold_range=75.0), "in_step"),
            doctrine(DisciplinedCommander(), "disciplined"), ScriptedRed(3)]


def battles_with_hidden_enemies(n=8, seed=40):
    """Battles played by scripted commanders until Blue has lost sight of an enemy in
    some of them."""
    battles = make_team_battles(n, 2, 2, FIELD)
    battles.reset(np.arange(n), [seed + i for i in range(n)], np.zeros(n, np.int64))
    for _ in range(200):
        hidden = hidden_enemies(battles, 0) & battles.state.active
        if hidden.any() and battles.state.step[0] > 10:
            return battles, hidden
        orders = np.concatenate([battles.scripted_actions(BLUE_UNITS, 2),
                                 battles.scripted_actions(RED_UNITS, 3)], axis=1)
        battles.step(orders)
    pytest.fail("no battle hid an enemy from Blue")


def test_choice_and_orders_do_not_depend_on_hidden_enemies_true_state():
    battles, hidden = battles_with_hidden_enemies()
    moved = copy.deepcopy(battles)
    rng = np.random.default_rng(0)
    battle, unit = np.nonzero(hidden)
    for name in ("x", "y", "theta", "strength", "morale", "readiness"):
        array = getattr(moved.state, name)
        array[battle, unit] = rng.uniform(0.05, 0.95, len(battle)) * (
            600.0 if name in ("x", "y") else 1.0)
    assert not np.array_equal(moved.state.x, battles.state.x)
    results = []
    for batch in (battles, moved):
        planner = PlanningCommander(candidates(), ScriptedRed(2), SEARCH, seed=7)
        rows = np.arange(batch.n_battles)
        scores = planner.scores(batch, 0, rows)
        orders, formations = planner.orders(batch, BLUE_UNITS)
        results.append((scores, orders, formations))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


def test_belief_puts_hidden_enemies_where_they_could_be_and_keeps_what_is_seen():
    battles, hidden = battles_with_hidden_enemies()
    rows = np.repeat(np.arange(battles.n_battles), 5)
    belief = belief_states(battles, 0, rows, np.random.default_rng(1))
    real = battles.state.select(rows)
    shown = ~hidden[rows]
    for name in UNIT_FIELDS:
        np.testing.assert_array_equal(getattr(belief, name)[shown], getattr(real, name)[shown])
    battle, unit = np.nonzero(hidden[rows])
    last_seen = battles.reports.values[:2, 0, unit, rows[battle]]
    elapsed = belief.step[battle] - battles.reports.seen_step[0, unit, rows[battle]]
    reach = battles.config.step_length * max(max(speeds) for speeds in
                                             battles.config.arm_speed)
    moved = np.hypot(belief.x[battle, unit] - last_seen[0], belief.y[battle, unit] - last_seen[1])
    assert np.all(moved <= reach * elapsed + 1e-3)
    assert np.all(belief.key == 0)  # a caller gives it dice of its own


def test_planning_leaves_the_real_battles_and_their_dice_untouched():
    battles, _ = battles_with_hidden_enemies()
    twin = copy.deepcopy(battles)
    planner = PlanningCommander(candidates(), ScriptedRed(2), SEARCH, seed=3)
    keys = battles.state.key.copy()
    orders, formations = planner.orders(battles, BLUE_UNITS)
    for name in (*UNIT_FIELDS, "step", "key", "formation", "drill"):
        np.testing.assert_array_equal(getattr(battles.state, name), getattr(twin.state, name))
    # The futures had dice of their own, none of them a real battle's.
    assert planner.last_future_keys.size == battles.n_battles * SEARCH.futures
    assert not np.isin(planner.last_future_keys, keys).any()
    # The real battles play on as they would have without the search.
    red = battles.scripted_actions(RED_UNITS, 3)
    full = np.concatenate([orders, red], axis=1)
    after = battles.step(full)
    again = twin.step(full)
    np.testing.assert_array_equal(after.winner, again.winner)
    for name in UNIT_FIELDS:
        np.testing.assert_array_equal(getattr(battles.state, name), getattr(twin.state, name))


def test_enemy_belief_finds_the_commander_that_explains_what_it_sees():
    pool = [ScriptedRed(1), ScriptedRed(3), ScriptedRed(5)]
    planner = PlanningCommander(candidates(), pool, SEARCH, seed=0)
    battles = make_team_battles(6, 2, 2, dict(FIELD, visibility_radius=1000.0))
    battles.reset(np.arange(6), list(range(6)), np.zeros(6, np.int64))
    for _ in range(40):
        blue, _ = planner.orders(battles, BLUE_UNITS)
        battles.step(np.concatenate([blue, battles.scripted_actions(RED_UNITS, 3)], axis=1))
    posterior = planner.enemy_belief.posterior()
    judged = np.ptp(posterior, axis=1) > 1e-6
    assert judged.sum() >= 4, posterior
    # L3 explains what was seen best (L1 may explain it as well while L3 stands at its
    # halt); L5, which fires as it marches, is ruled out.
    assert np.all(posterior[judged, 1] >= posterior[judged].max(axis=1) - 1e-9), posterior
    assert np.all(posterior[judged, 2] < 1e-6), posterior


def test_enemy_belief_draws_futures_from_its_posterior():
    belief = EnemyBelief([ScriptedRed(1), ScriptedRed(3)])
    belief.log_likelihood = np.array([[0.0, -50.0], [-50.0, 0.0]])
    drawn = belief.draw(np.array([0, 1]), 100, np.random.default_rng(0))
    assert np.all(drawn[:100] == 0) and np.all(drawn[100:] == 1)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(candidates=[ScriptedRed(3)]), "candidates="),
    (dict(candidates=[ScriptedRed(3), "L5"]), "candidates[1]="),
    (dict(enemy=[]), "enemy=[]"),
    (dict(enemy=[ScriptedRed(1), object()]), "enemy[1]="),
    (dict(seed=-1), "seed=-1"),
])
def test_planner_checks_its_arguments(kwargs, message):
    arguments = dict(candidates=candidates(), enemy=ScriptedRed(2)) | kwargs
    with pytest.raises((TypeError, ValueError)) as error:
        PlanningCommander(**arguments)
    assert message in str(error.value)


@pytest.mark.parametrize("name", ["every", "futures", "horizon"])
def test_search_counts_are_at_least_one(name):
    with pytest.raises(ValueError, match=f"{name}=0"):
        Search(**{name: 0})


def test_a_margin_no_candidate_can_promise_keeps_the_prior():
    battles, _ = battles_with_hidden_enemies()
    rows = np.arange(battles.n_battles)
    free = PlanningCommander(candidates(), ScriptedRed(2), SEARCH, seed=5)
    chosen = free.choose(battles, 0, rows)
    held = PlanningCommander(candidates(), ScriptedRed(2),
                             Search(every=5, futures=3, horizon=20, margin=1e6), seed=5)
    assert np.all(held.choose(battles, 0, rows) == 0)
    assert chosen.shape == rows.shape


def test_a_robust_search_judges_a_candidate_by_its_worst_likeliest_enemy():
    battles, _ = battles_with_hidden_enemies()
    rows = np.arange(battles.n_battles)
    pool = [ScriptedRed(1), ScriptedRed(5)]
    planner = PlanningCommander(candidates(), pool,
                                Search(every=5, futures=2, horizon=20, robust=2), seed=5)
    scores = planner.scores(battles, 0, rows)  # future 0 meets one enemy, future 1 the other
    worst = scores.min(axis=2)
    planner.rng = np.random.default_rng(5)
    expected = np.argmax(worst, axis=0)
    expected = np.where(worst[expected, rows] - worst[0] > 0, expected, 0)
    np.testing.assert_array_equal(planner.choose(battles, 0, rows), expected)
    with pytest.raises(ValueError, match="robust=3"):
        Search(futures=2, robust=3)
