"""The SMDP wrapper: PettingZoo's API test, drills run to their ends, rewards summed."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from envs.echelons.smdp_wrapper import SMDPWrapper
from envs.multi_battalion_env import MultiBattalionEnv
from envs.options import MacroAction, Option, make_default_options


def test_pettingzoo_api():
    parallel_api_test(SMDPWrapper(MultiBattalionEnv(2, 2)), num_cycles=40)


def test_a_step_runs_the_drills_and_reports_the_temporal_abstraction():
    env = SMDPWrapper(MultiBattalionEnv(2, 2), make_default_options(max_steps=8))
    env.reset(seed=0)
    actions = {a: int(MacroAction.DEFEND_POSITION) for a in env.agents}
    actions["blue_0"] = int(MacroAction.FLANK_RIGHT)
    _, rewards, _, _, infos = env.step(actions)
    assert infos["blue_0"]["temporal_abstraction"]["option_steps"] == 4
    assert infos["blue_1"]["temporal_abstraction"]["option_steps"] == 8
    assert infos["blue_1"]["temporal_abstraction"]["primitive_steps"] == 8
    assert env.temporal_abstraction_ratio == pytest.approx(1 / 8)
    assert all(np.isfinite(r) for r in rewards.values())


def test_a_refused_drill_holds_and_bad_actions_are_refused():
    options = make_default_options(5)
    never = Option("never", lambda o: False, options[0].policy, lambda o, t: False, 5)
    env = SMDPWrapper(MultiBattalionEnv(1, 1), [never, *options[1:]])
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"blue_0": 0, "red_0": 1})
    assert infos["blue_0"]["temporal_abstraction"]["refused"]
    assert infos["blue_0"]["temporal_abstraction"]["option_name"] == "defend_position"
    with pytest.raises(ValueError, match="option index"):
        env.step({"blue_0": 9})
    with pytest.raises(ValueError, match="no such agent"):
        env.step({"green_0": 0})


def test_battles_end():
    env = SMDPWrapper(MultiBattalionEnv(2, 2, max_steps=120))
    env.reset(seed=3)
    for _ in range(200):
        if not env.agents:
            break
        env.step({a: int(MacroAction.ADVANCE_SECTOR) for a in env.agents})
    assert not env.agents
