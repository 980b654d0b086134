"""Hand-written commanders."""

from __future__ import annotations

import numpy as np
import pytest

from envs.battalion_env import BattalionEnv
from envs.battles.observation import ROTATE_SIGN
from envs.commanders.doctrine import DisciplinedCommander, ScriptedCommander
from envs.sim.scripted import scripted_actions


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_scripted_commander_gives_the_built_in_scripts_orders(level):
    env = BattalionEnv(curriculum_level=level)
    commander = ScriptedCommander(level)
    for seed in range(20):
        env.reset(seed=seed)
        battle = env._battle
        expected = scripted_actions(battle.state, battle.geometry, np.array([1]),
                                    battle.levels, battle.config)[0, 0]
        action, _ = commander.predict(env._get_red_obs())  # in Red's mirrored frame
        on_map = action * np.array([1, ROTATE_SIGN[1], 1])
        assert on_map == pytest.approx(expected, abs=1e-5)


def test_commanders_accept_one_observation_or_a_batch():
    env = BattalionEnv()
    obs, _ = env.reset(seed=0)
    for commander in (DisciplinedCommander(), ScriptedCommander(5)):
        single, _ = commander.predict(obs)
        batch, _ = commander.predict(np.stack([obs, obs]))
        assert single.shape == (3,) and batch.shape == (2, 3)
        assert np.array_equal(batch[0], single)


def test_invalid_settings_are_rejected():
    with pytest.raises(ValueError, match="hold_range"):
        DisciplinedCommander(hold_range=0)
    with pytest.raises(ValueError, match="level"):
        ScriptedCommander(6)
