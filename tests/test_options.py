"""Options: the drills turn, advance and withdraw the way their names say, on a real env."""

from __future__ import annotations

import numpy as np
import pytest

from envs.battalion_env import BattalionEnv
from envs.battles.observation import OBSERVATION_FEATURES
from envs.options import LOW_MORALE, MacroAction, Option, make_default_options

OPTIONS = make_default_options()
MORALE = OBSERVATION_FEATURES.index("own_morale")
DISTANCE = OBSERVATION_FEATURES.index("enemy_distance")
ENEMY_HIT = OBSERVATION_FEATURES.index("enemy_hit_chance")


def run(option: Option, steps: int = 20, seed: int = 0, level: int = 1, before=None):
    """Play ``option`` in a duel against a passive Red (level 1), after ``before`` (an
    option played to its end first, if given); the observations and headings seen."""
    env = BattalionEnv(curriculum_level=level, randomize_terrain=False)
    obs, _ = env.reset(seed=seed)
    for drill in ([before] if before else []):
        t = 0
        while not drill.should_terminate(obs, t):
            obs, *_ = env.step(drill.get_action(obs))
            t += 1
    seen = [(obs, env.battle_state.theta[0, 0])]
    for t in range(steps):
        if option.should_terminate(obs, t):
            break
        obs, _, terminated, truncated, _ = env.step(option.get_action(obs))
        seen.append((obs, env.battle_state.theta[0, 0]))
        if terminated or truncated:
            break
    return seen


def test_the_options_are_in_macro_action_order():
    assert [o.name for o in OPTIONS] == [m.name.lower() for m in MacroAction]


@pytest.mark.parametrize("option, sign", [(MacroAction.FLANK_LEFT, 1),
                                          (MacroAction.FLANK_RIGHT, -1)])
def test_flank_left_wheels_counter_clockwise_and_right_clockwise(option, sign):
    seen = run(OPTIONS[option], steps=5)
    turned = (seen[-1][1] - seen[0][1] + np.pi) % (2 * np.pi) - np.pi
    assert sign * turned > 0.3  # five steps at the full turn rate


def test_advance_closes_and_withdraw_opens_the_distance():
    advance = run(OPTIONS[MacroAction.ADVANCE_SECTOR], steps=30)
    assert advance[-1][0][DISTANCE] < advance[0][0][DISTANCE]
    # Closed to volley range first: withdrawing with healthy morale does not stop after
    # one step, it goes on while the enemy can hit.
    hold_fire = OPTIONS[MacroAction.ADVANCE_SECTOR].policy
    close = Option("close_in_silently", lambda o: True,
                   lambda o: hold_fire(o) * np.array([1, 1, 0], np.float32),
                   lambda o, t: o[ENEMY_HIT] > 0.3, max_steps=300)
    withdraw = run(OPTIONS[MacroAction.WITHDRAW], steps=30, before=close)
    assert withdraw[0][0][ENEMY_HIT] > 0 and withdraw[0][0][MORALE] > 0.6
    assert len(withdraw) > 10
    assert withdraw[-1][0][DISTANCE] > withdraw[0][0][DISTANCE]


def test_withdraw_ends_once_the_enemy_cannot_hit_and_advance_needs_steady_men():
    obs = np.zeros(len(OBSERVATION_FEATURES), np.float32)
    obs[MORALE] = 1.0
    withdraw = OPTIONS[MacroAction.WITHDRAW]
    assert withdraw.can_initiate(obs) and withdraw.should_terminate(obs, 1)
    assert not withdraw.should_terminate(obs, 0)
    shaken = obs.copy()
    shaken[MORALE] = LOW_MORALE - 0.01
    assert not OPTIONS[MacroAction.ADVANCE_SECTOR].can_initiate(shaken)
    assert OPTIONS[MacroAction.DEFEND_POSITION].can_initiate(shaken)


def test_options_act_on_a_batch_of_observations():
    env = BattalionEnv()
    obs = np.stack([env.reset(seed=s)[0] for s in range(4)])
    for option in OPTIONS:
        assert option.policy(obs).shape == (4, 3)
        assert option.initiation_set(obs).shape == (4,)


def test_bad_orders_and_settings_are_refused():
    broken = Option("broken", lambda o: True, lambda o: np.array([np.nan, 0, 0]),
                    lambda o, s: False)
    with pytest.raises(ValueError, match="broken"):
        broken.get_action(np.zeros(len(OBSERVATION_FEATURES)))
    with pytest.raises(ValueError, match="max_steps"):
        make_default_options(0)
    with pytest.raises(ValueError, match="features"):
        OPTIONS[0].get_action(np.zeros(5))
    assert [o.max_steps for o in make_default_options(10)] == [10, 10, 5, 5, 10, 10]
