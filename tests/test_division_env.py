"""The division env: commands reach every battalion of a brigade, Red under a frozen
brigade policy."""

from __future__ import annotations

import numpy as np
import pytest

from envs.echelons.division_env import DIVISION_COMMANDS, DivisionEnv
from envs.options import MacroAction


def test_a_brigade_command_becomes_every_battalion_drill():
    env = DivisionEnv()
    env.reset(seed=0)
    commands = list(DIVISION_COMMANDS)
    action = np.array([commands.index("hold_position"), commands.index("mass_fires")])
    _, _, _, _, info = env.step(action)
    assert info["brigade_action"] == ["hold_position", "mass_fires"]
    assert info["option_names"] == {"blue_0": "defend_position", "blue_1": "defend_position",
                                    "blue_2": "concentrate_fire", "blue_3": "concentrate_fire"}
    assert info["div_steps"] == 1


def test_red_brigades_follow_a_frozen_brigade_policy():
    class AlwaysWithdraw:
        seen = []

        def predict(self, observation, deterministic=False):
            AlwaysWithdraw.seen.append(observation.shape)
            return np.full(4, int(MacroAction.WITHDRAW)), None

    env = DivisionEnv(brigade_policy=AlwaysWithdraw())
    env.reset(seed=0)
    x0 = env._state().x[0, 4:].copy()
    env.step(np.zeros(2, int))
    assert AlwaysWithdraw.seen == [(1, 3 + 7 * 4 + 1)]  # one battle's Red brigade view
    # Red deploys in the east facing west: stepping back moves it east.
    assert (env._state().x[0, 4:] >= x0 - 1e-3).all()


def test_a_division_battle_ends():
    env = DivisionEnv(max_steps=300)
    env.reset(seed=2)
    for _ in range(100):
        *_, terminated, truncated, info = env.step(np.zeros(2, int))
        if terminated or truncated:
            break
    assert info["winner"] in ("blue", "red", "draw")


def test_bad_actions_are_refused():
    env = DivisionEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(np.array([0, 6]))
