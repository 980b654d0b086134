"""Red's echelon under frozen commanders (envs.echelons.brigade_batch.RedCommanders): each in its
own battles, in Red's own frame, over the same lower echelon as Blue's."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from envs.battles.multi_battalion_batch import BLUE, RED
from envs.echelons.brigade_batch import RedCommanders, brigade_obs_dim
from envs.echelons.brigade_env import make_brigade_batch
from envs.echelons.division_batch import DIVISION_COMMANDS, division_obs_dim
from envs.echelons.division_env import make_division_batch
from envs.options import MacroAction

FIELD = dict(map_width=600.0, map_height=600.0, max_steps=120, temporal_ratio=5,
             randomize_terrain=False)


class FixedCommander:
    """Gives every commanded unit the same choice (a real, if simple, commander)."""

    def __init__(self, choice: int, n_choices: int, n_commanded: int, obs_dim: int) -> None:
        self.choice, self.n_commanded = choice, n_commanded
        self.action_space = spaces.MultiDiscrete([n_choices] * n_commanded)
        self.observation_space = spaces.Box(-1.0, 1.0, (obs_dim,), np.float32)
        self.seen: list[np.ndarray] = []

    def predict(self, observation, deterministic=False):
        self.seen.append(np.array(observation))
        return np.full((len(observation), self.n_commanded), self.choice), None


def brigades(n=4, **kw):
    batch = make_brigade_batch(n, 2, 2, **FIELD, **kw)
    batch.reset(np.arange(n), [10 + i for i in range(n)], np.zeros(n, np.int64))
    return batch


def advance(batch):
    return np.full((batch.n_battles, batch.n_blue), MacroAction.ADVANCE_SECTOR)


def test_a_side_sees_itself_in_the_west_red_mirrored():
    batch = brigades(2)
    state = batch.battles.state
    blue, red = batch.blue, batch.red
    # Put Red where Blue's mirror image stands, as strong and steady.
    state.x[:, red] = batch.config.map_width - state.x[:, blue]
    state.y[:, red] = state.y[:, blue]
    state.strength[:, red] = state.strength[:, blue]
    state.morale[:, red] = state.morale[:, blue]
    np.testing.assert_allclose(batch.side_view(RED), batch.side_view(BLUE), atol=1e-6)
    np.testing.assert_array_equal(batch.side_view(BLUE), batch.observe())


def test_a_dealt_brigadier_commands_red_in_his_battles_only():
    plain, dealt = brigades(), brigades()
    withdraw = FixedCommander(MacroAction.WITHDRAW, len(MacroAction), 2, brigade_obs_dim(2))
    dealt.red_commanders.deal([(withdraw, np.array([1, 3]))])
    for _ in range(3):
        plain.step(advance(plain))
        dealt.step(advance(dealt))
    # His view is Red's brigade observation of his battles, in Red's frame.
    assert all(seen.shape == (2, brigade_obs_dim(2)) for seen in withdraw.seen)
    mine, theirs = plain.battles.state, dealt.battles.state
    same = np.array([0, 2])
    np.testing.assert_array_equal(theirs.x[same], mine.x[same])
    # Withdrawing, Red's battalions end further east (Red deploys in the east) than under
    # scripted L5, which closes.
    red = dealt.red
    assert (theirs.x[[1, 3]][:, red] > mine.x[[1, 3]][:, red]).all()


def test_red_drills_run_in_reds_own_frame():
    """Both sides given the advance: each side's battalions march on the other (Red's
    drill, read in its mirrored frame, takes it west)."""
    batch = brigades(2)
    forward = FixedCommander(MacroAction.ADVANCE_SECTOR, len(MacroAction), 2, brigade_obs_dim(2))
    batch.red_commanders.deal([(forward, np.array([0, 1]))])
    state = batch.battles.state
    blue_x, red_x = state.x[:, batch.blue].copy(), state.x[:, batch.red].copy()
    result = batch.step(advance(batch))
    after = batch.battles.state
    assert (result.primitive_steps == FIELD["temporal_ratio"]).all()
    assert (after.x[:, batch.blue] > blue_x + 1.0).all()
    assert (after.x[:, batch.red] < red_x - 1.0).all()


def test_a_dealt_division_commander_passes_his_commands_down_reds_brigades():
    n = 3
    batch = make_division_batch(n, 2, 2, 2, 2, **FIELD)
    batch.reset(np.arange(n), [5 + i for i in range(n)], np.zeros(n, np.int64))
    withdrawal = list(DIVISION_COMMANDS).index("strategic_withdrawal")
    commander = FixedCommander(withdrawal, len(DIVISION_COMMANDS), 2, division_obs_dim(2))
    batch.red_commanders.deal([(commander, np.array([2]))])
    drills, drilled = batch.red_drills()
    np.testing.assert_array_equal(drilled, [False, False, True])
    assert (drills[2] == MacroAction.WITHDRAW).all()
    assert commander.seen[0].shape == (1, division_obs_dim(2))
    # Red's division view mirrors Blue's when the battle does.
    state = batch.brigades.battles.state
    blue, red = batch.brigades.blue, batch.brigades.red
    state.x[:, red] = batch.brigades.config.map_width - state.x[:, blue]
    state.y[:, red], state.strength[:, red] = state.y[:, blue], state.strength[:, blue]
    state.morale[:, red] = state.morale[:, blue]
    np.testing.assert_allclose(batch.side_view(RED), batch.side_view(BLUE), atol=1e-6)
    batch.step(np.zeros((n, 2), np.int64))


@pytest.mark.parametrize(("battles", "match"), [
    ([4], r"battles=\[4\]"), ([0, 0], "each dealt once"),
])
def test_dealing_checks_the_battles(battles, match):
    commanders = RedCommanders(4, 6, 2, brigade_obs_dim(2))
    commander = FixedCommander(0, 6, 2, brigade_obs_dim(2))
    with pytest.raises(ValueError, match=match):
        commanders.deal([(commander, np.array(battles))])


def test_dealing_checks_the_commanders_spaces():
    batch = brigades(2)
    wrong = FixedCommander(0, len(MacroAction), 3, brigade_obs_dim(3))
    with pytest.raises(ValueError, match=r"commands \[6, 6, 6\].*MultiDiscrete \[6\] \* 2"):
        batch.red_commanders.deal([(wrong, np.array([0]))])
    assert not batch.red_commanders.assigned


def test_no_red_division_commander_over_brigades_a_brigadier_cannot_command():
    from stable_baselines3 import PPO

    from envs.echelons.brigade_env import BrigadeEnv

    brigadier = PPO("MlpPolicy", BrigadeEnv(n_blue=2, n_red=2), n_steps=8, batch_size=8)
    batch = make_division_batch(2, 2, 2, 2, 3, blue_brigade_policy=brigadier, **FIELD)
    commander = FixedCommander(0, len(DIVISION_COMMANDS), 2, division_obs_dim(2))
    with pytest.raises(ValueError, match="Red's brigades of 3 cannot be commanded"):
        batch.red_commanders.deal([(commander, np.array([0]))])
