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


def _duel_observation(distance, sight, own_elevation, enemy_elevation, diagonal=1000.0):
    """A duel observation with the enemy dead ahead at ``distance`` metres."""
    from envs.battles.observation import OBS_DIM, OBSERVATION_FEATURES
    at = {name: i for i, name in enumerate(OBSERVATION_FEATURES)}
    obs = np.zeros(OBS_DIM, np.float32)
    obs[at["enemy_distance"]] = distance / diagonal
    obs[at["enemy_relative_bearing_cos"]] = 1.0
    obs[at["line_of_sight"]] = float(sight)
    obs[at["own_elevation"]], obs[at["enemy_elevation"]] = own_elevation, enemy_elevation
    return obs


def test_falling_back_uphill_backs_off_only_from_a_hidden_enemy_above():
    falling = DisciplinedCommander(map_diagonal=1000.0, fall_back_uphill=True)
    climbing = DisciplinedCommander(map_diagonal=1000.0)
    hidden_above = _duel_observation(150.0, False, 0.2, 0.5)
    assert climbing.predict(hidden_above)[0][0] == 1.0  # closes blind
    assert falling.predict(hidden_above)[0][0] == -1.0  # falls back, still facing it
    assert falling.predict(hidden_above)[0][1] == climbing.predict(hidden_above)[0][1]
    for obs in (_duel_observation(150.0, True, 0.2, 0.5),    # in sight
                _duel_observation(150.0, False, 0.5, 0.2),   # hidden, but below
                _duel_observation(50.0, True, 0.2, 0.5)):    # in sight at the halt: fire
        assert np.array_equal(falling.predict(obs)[0], climbing.predict(obs)[0])
    # Late in the battle it climbs after all: an enemy that stands its ground would
    # otherwise hold it to a draw.
    from envs.battles.observation import OBSERVATION_FEATURES
    from envs.commanders.doctrine import FALL_BACK_UNTIL
    late = hidden_above.copy()
    late[OBSERVATION_FEATURES.index("time_fraction")] = FALL_BACK_UNTIL
    assert np.array_equal(falling.predict(late)[0], climbing.predict(late)[0])
    with pytest.raises(ValueError, match="fall_back_uphill"):
        DisciplinedCommander(fall_back_uphill="yes")


def test_a_spent_enemy_is_closed_on_to_the_spent_hold_range():
    from envs.battles.observation import OBSERVATION_FEATURES
    from envs.commanders.doctrine import SPENT_READINESS
    readiness = OBSERVATION_FEATURES.index("enemy_readiness")
    closing = DisciplinedCommander(hold_range=70.0, map_diagonal=1000.0, spent_hold_range=60.0)
    halting = DisciplinedCommander(hold_range=70.0, map_diagonal=1000.0)
    at_65 = _duel_observation(65.0, True, 0.2, 0.2)
    at_65[readiness] = SPENT_READINESS - 0.01
    assert np.array_equal(closing.predict(at_65)[0], [1.0, 0.0, 0.0])  # marches on, silent
    assert np.array_equal(halting.predict(at_65)[0], [0.0, 0.0, 1.0])
    at_55 = _duel_observation(55.0, True, 0.2, 0.2)
    at_55[readiness] = SPENT_READINESS - 0.01
    assert np.array_equal(closing.predict(at_55)[0], [0.0, 0.0, 1.0])  # its halt: volley
    loaded, hidden = at_65.copy(), at_65.copy()
    loaded[readiness] = SPENT_READINESS
    hidden[OBSERVATION_FEATURES.index("line_of_sight")] = 0.0
    for obs in (loaded, hidden):  # a loaded enemy, or one out of sight: the usual halt
        assert np.array_equal(closing.predict(obs)[0], halting.predict(obs)[0])
    with pytest.raises(ValueError, match="spent_hold_range"):
        DisciplinedCommander(spent_hold_range=0.0)


def test_falling_back_uphill_wins_more_duels_against_l5():
    # 95.5 % against 88.7 % on the test split's 400 battles, 95.5 % against 87.4 % on the
    # validation split's 800 (docs/training.md, "Falling back uphill").
    from training.ppo.evaluation import play_duels
    won = {fall_back: (play_duels(DisciplinedCommander(fall_back_uphill=fall_back),
                                  "scripted_l5", 200, seed=0) == 1).mean()
           for fall_back in (True, False)}
    assert won[True] >= won[False] + 0.03, won


def _team_observation(enemy, ally=None, other_enemy=None, diagonal=1000.0):
    """A team observation (OBS_DIM,) with the focus enemy, one ally and one more enemy at
    ``(ahead, left)`` metres in the battalion's own frame, the enemy in sight."""
    from envs.battles.multi_observation import OBS_DIM, OBSERVATION_FEATURES
    at = {name: i for i, name in enumerate(OBSERVATION_FEATURES)}
    obs = np.zeros(OBS_DIM, np.float32)

    def place(distance_key, bearing_key, point):
        distance = np.hypot(*point)
        obs[at[distance_key]] = distance / diagonal
        obs[at[f"{bearing_key}_cos"]] = point[0] / distance
        obs[at[f"{bearing_key}_sin"]] = point[1] / distance

    place("enemy_distance", "enemy_relative_bearing", enemy)
    obs[at["line_of_sight"]] = 1.0
    if ally is not None:
        obs[at["ally_0_present"]] = 1.0
        place("ally_0_distance", "ally_0_bearing", ally)
    if other_enemy is not None:
        obs[at["enemy_0_present"]] = obs[at["enemy_0_visible"]] = 1.0
        place("enemy_0_distance", "enemy_0_bearing", other_enemy)
    return obs


def test_the_in_step_doctrine_waits_while_it_leads_its_laggard_ally():
    from envs.commanders.doctrine import InStepCommander
    commander = InStepCommander(map_diagonal=1000.0)
    march = lambda obs: commander.predict(obs)[0][0]  # noqa: E731
    assert march(_team_observation((300, 0))) == 1.0  # no ally: the disciplined doctrine
    assert march(_team_observation((300, 0), ally=(-50, 0))) == 0.0  # 50 m ahead: waits
    assert march(_team_observation((300, 0), ally=(0, 50))) == 1.0  # 4 m ahead: marches
    # The ally is measured against the enemy nearest it, not against this one's.
    assert march(_team_observation((300, 0), ally=(-50, 0), other_enemy=(-50, 300))) == 1.0
    # Within its halt it volleys as the doctrine does, whatever the ally does.
    orders = commander.predict(_team_observation((50, 0), ally=(-200, 0)))[0]
    assert orders.tolist() == [0.0, 0.0, 1.0]


def test_the_in_step_doctrine_does_not_wait_under_fire_within_its_exposed_range():
    from envs.battles.multi_observation import OBSERVATION_FEATURES
    from envs.commanders.doctrine import InStepCommander
    exposed = InStepCommander(hold_range=75, map_diagonal=1000.0, exposed_range=100)
    march = lambda obs: exposed.predict(obs)[0][0]  # noqa: E731
    # 50 m ahead of its ally: beyond 100 m it waits, within it (seen) it marches on.
    assert march(_team_observation((150, 0), ally=(-50, 0))) == 0.0
    assert march(_team_observation((95, 0), ally=(-50, 0))) == 1.0
    assert InStepCommander(hold_range=75, map_diagonal=1000.0).predict(
        _team_observation((95, 0), ally=(-50, 0)))[0][0] == 0.0
    # Hidden from the enemy, it waits within the range too.
    hidden = _team_observation((95, 0), ally=(-50, 0))
    hidden[OBSERVATION_FEATURES.index("line_of_sight")] = 0.0
    assert march(hidden) == 0.0
    with pytest.raises(ValueError, match="exposed_range"):
        InStepCommander(exposed_range=0)


def _alone_observations():
    """200 random team observations of battalions with no ally present."""
    from envs.battles.multi_observation import OBS_DIM, OBSERVATION_FEATURES
    obs = np.random.default_rng(0).uniform(-1, 1, (200, OBS_DIM)).astype(np.float32)
    obs[:, [i for i, name in enumerate(OBSERVATION_FEATURES)
            if name.startswith("ally_") and name.endswith("_present")]] = 0.0
    return obs


def test_the_in_step_doctrine_without_allies_is_the_disciplined_doctrine():
    from envs.commanders.doctrine import InStepCommander
    obs = _alone_observations()
    assert np.array_equal(InStepCommander(hold_range=70).predict(obs)[0],
                          DisciplinedCommander(hold_range=70).predict(obs)[0])


def test_the_in_step_doctrine_reads_team_observations_only():
    from envs.commanders.doctrine import InStepCommander
    obs, _ = BattalionEnv().reset(seed=0)
    with pytest.raises(ValueError, match="team observation"):
        InStepCommander().predict(obs)
    with pytest.raises(ValueError, match="step_tolerance"):
        InStepCommander(step_tolerance=0)


def test_the_concentrating_doctrine_marches_on_the_enemy_nearest_the_team():
    from envs.commanders.doctrine import ConcentratingCommander, InStepCommander
    concentrating, in_step = ConcentratingCommander(map_diagonal=1000.0), InStepCommander(
        map_diagonal=1000.0)
    turn = lambda commander, obs: commander.predict(obs)[0][1]  # noqa: E731
    # Its nearest enemy is 316 m off to the right; the other, 390 m off to the left, is
    # 304 m from the ally on the left: 694 m from the two together against 816 m.
    obs = _team_observation((300, -100), ally=(0, 300), other_enemy=(300, 250))
    assert turn(in_step, obs) < 0 < turn(concentrating, obs)
    # An enemy within guard_range (150 m) is faced, whatever the team's target.
    obs = _team_observation((140, -20), ally=(0, 300), other_enemy=(150, 250))
    assert turn(concentrating, obs) < 0
    assert turn(ConcentratingCommander(map_diagonal=1000.0, guard_range=100), obs) > 0
    # It keeps the in-step rule: 50 m ahead of its ally, it waits.
    obs = _team_observation((300, 0), ally=(-50, 0), other_enemy=(300, 60))
    assert concentrating.predict(obs)[0][0] == 0.0
    with pytest.raises(ValueError, match="guard_range"):
        ConcentratingCommander(guard_range=0)


def test_the_concentrating_doctrine_without_allies_is_the_disciplined_doctrine():
    from envs.battles.multi_observation import OBSERVATION_FEATURES
    from envs.commanders.doctrine import ConcentratingCommander
    obs = _alone_observations()
    # The focus is the nearest enemy: every other slot lies farther off.
    focus = obs[:, OBSERVATION_FEATURES.index("enemy_distance")].copy()
    for i, name in enumerate(OBSERVATION_FEATURES):
        if name.startswith("enemy_") and name[6].isdigit() and name.endswith("_distance"):
            obs[:, i] = np.abs(focus) + np.abs(obs[:, i]) + 0.01
    assert np.array_equal(ConcentratingCommander(hold_range=70).predict(obs)[0],
                          DisciplinedCommander(hold_range=70).predict(obs)[0])


def test_concentrating_fire_wins_more_2v2_battles_against_l5_than_marching_in_step():
    # 94 % against 88.5 % on these 200 battles; 93.2 % against 90.2 % on the validation
    # split's 400 (docs/training.md, "Concentrating fire").
    from envs.commanders.doctrine import ConcentratingCommander, InStepCommander
    from training.mappo.battles import play_team_battles
    won = {name: (play_team_battles(commander, 5, n_episodes=200, seed=0) == 1).mean()
           for name, commander in (("concentrating", ConcentratingCommander(hold_range=80.0)),
                                   ("in step", InStepCommander(hold_range=80.0)))}
    assert won["concentrating"] >= won["in step"] + 0.03, won


def test_marching_in_step_wins_more_2v2_battles_against_l5():
    from envs.commanders.doctrine import InStepCommander
    from training.mappo.battles import play_team_battles
    won = {name: (play_team_battles(commander, 5, n_episodes=200, seed=0) == 1).mean()
           for name, commander in (("in step", InStepCommander(hold_range=80.0)),
                                   ("disciplined", DisciplinedCommander(hold_range=80.0)))}
    assert won["in step"] >= won["disciplined"] + 0.05, won
