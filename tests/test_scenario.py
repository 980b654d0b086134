"""Scenarios: the format's checks, the ground drawn from features, battles played out,
and the combined-arms doctrine's choices."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import yaml

from envs.commanders.arms_doctrine import SQUARE_WITHIN, CombinedArmsDoctrine
from envs.rendering.replay import load_replay, render_gif, save_replay
from envs.scenario import (
    FORD_GOING,
    ROAD_GOING,
    VILLAGE_COVER,
    ScenarioError,
    load_scenario_file,
    load_scenarios,
    rasterise_features,
    scenario_from_dict,
)
from envs.scenario_battle import NO_WINNER, deploy_scenario, play_scenario
from envs.sim import constants as C
from envs.sim import engine

SCENARIO = {
    "id": "ridge_defence",
    "field": {"width_m": 2000, "height_m": 1500, "rows": 30, "cols": 40, "max_steps": 1200},
    "terrain": [
        {"kind": "ridge", "points": [[1500, 200], [1500, 1300]], "width_m": 300, "height": 0.6},
        {"kind": "village", "x": 1400, "y": 750, "radius_m": 100},
        {"kind": "river", "points": [[0, 100], [2000, 100]], "width_m": 30,
         "fords": [[500, 100]]},
        {"kind": "road", "points": [[1000, 0], [1000, 1500]]},
    ],
    "units": {
        "blue": [{"type": "infantry", "x": 400, "y": 500, "formation": "column"},
                 {"type": "infantry", "x": 400, "y": 900, "formation": "column"},
                 {"type": "cavalry", "x": 300, "y": 1200},
                 {"type": "artillery", "x": 500, "y": 700, "formation": "limbered"}],
        "red": [{"type": "infantry", "x": 1550, "y": 600, "quality": 1.2},
                {"type": "infantry", "x": 1550, "y": 900},
                {"type": "artillery", "x": 1600, "y": 750, "formation": "unlimbered"}],
    },
    "date": "1815-06-18",
}


def edited(path: str, value):
    """SCENARIO with the entry at the dotted ``path`` replaced by ``value``."""
    data = copy.deepcopy(SCENARIO)
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


def test_a_scenario_reads_from_yaml_and_json_alike(tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(SCENARIO))
    (tmp_path / "a.json").write_text(json.dumps(SCENARIO))
    a, b = load_scenario_file(tmp_path / "a.yaml"), load_scenario_file(tmp_path / "a.json")
    assert a == b
    assert (a.n_blue, a.n_red) == (4, 3)
    assert list(a.array("arm", np.int8)) == [C.INFANTRY] * 2 + [C.CAVALRY, C.ARTILLERY] + \
        [C.INFANTRY] * 2 + [C.ARTILLERY]
    assert list(a.array("formation", np.int8)) == [C.COLUMN, C.COLUMN, C.LINE, C.LIMBERED,
                                                    C.LINE, C.LINE, C.LINE]
    assert a.units[4].quality == 1.2 and a.units[4].theta == pytest.approx(np.pi)
    assert a.extra == {"date": "1815-06-18"}  # kept, unread


@pytest.mark.parametrize("path, value, names", [
    ("units.blue.0.type", "dragoons", "units.blue[0].type"),
    ("units.blue.2.formation", "square", "units.blue[2].formation"),  # horse cannot
    ("units.red.0.x", 5000, "units.red[0].x"),
    ("units.red.0.strength", 0, "units.red[0].strength"),
    ("units.red", [], "units.red"),
    ("field.width_m", -1, "field.width_m"),
    ("terrain.0.kind", "volcano", "terrain[0].kind"),
    ("terrain.2.fords", [[5000, 0]], "terrain[2].fords[0]"),
    ("id", "no spaces", "id"),
])
def test_invalid_fields_are_refused_with_their_name(path, value, names):
    with pytest.raises(ScenarioError, match=names.replace("[", r"\[").replace("]", r"\]")):
        scenario_from_dict(edited(path, value), "here")


def test_a_unit_may_not_start_in_a_river_nor_two_share_an_id():
    with pytest.raises(ScenarioError, match="impassable"):
        scenario_from_dict(edited("units.blue.0", {"x": 800, "y": 100}))
    with pytest.raises(ScenarioError, match="used more than once"):
        scenario_from_dict(edited("units.red.1", {"id": "r1", "x": 1550, "y": 900}))


def test_a_list_of_scenarios_refuses_a_repeated_id(tmp_path):
    path = tmp_path / "battles.json"
    path.write_text(json.dumps([SCENARIO, SCENARIO]))
    with pytest.raises(ScenarioError, match="used twice"):
        load_scenarios(path)
    path.write_text(json.dumps([SCENARIO]))
    assert [s.id for s in load_scenarios(path)] == ["ridge_defence"]


def test_the_ground_is_drawn_from_the_features():
    scenario = scenario_from_dict(SCENARIO)
    ground = scenario.terrain_map()
    rows, cols = ground.shape
    cell = lambda x, y: (int(y * rows / 1500), int(x * cols / 2000))  # noqa: E731
    elevation = ground.relative_elevation()
    assert elevation[cell(1500, 750)] == elevation.max() == 1.0  # the crest
    assert elevation[cell(1500, 750)] > elevation[cell(1100, 750)]
    assert ground.cover[cell(1400, 750)] == pytest.approx(VILLAGE_COVER)
    assert ground.going[cell(800, 100)] == 0  # the river
    assert ground.going[cell(500, 100)] == pytest.approx(FORD_GOING)
    assert ground.going[cell(1000, 100)] == pytest.approx(FORD_GOING)  # the road's bridge
    assert ground.going[cell(1000, 700)] == pytest.approx(ROAD_GOING)
    assert ground.going[cell(300, 700)] == 1


def test_a_river_has_no_gaps_on_a_coarse_grid():
    going = rasterise_features([{"kind": "river", "points": [[0, 0], [1000, 1000]],
                                 "width_m": 2, "fords": []}], 1000, 1000, 10, 10).going
    # every cell of the diagonal and one of its neighbours each way is wet
    assert all(going[i, i] == 0 for i in range(10))
    assert all(going[i, i + 1] == 0 or going[i + 1, i] == 0 for i in range(9))


def test_battles_are_reproducible_and_do_not_depend_on_their_batch():
    scenario = scenario_from_dict(SCENARIO)
    a = play_scenario(scenario, 4, seed=7)
    b = play_scenario(scenario, 4, seed=7)
    alone = play_scenario(scenario, 1, seed=9)
    assert np.array_equal(a.winner, b.winner) and np.array_equal(a.steps, b.steps)
    assert a.winner[2] == alone.winner[0] and a.steps[2] == alone.steps[0]
    assert np.allclose(a.casualties[2], alone.casualties[0])
    decided = a.winner != NO_WINNER
    assert (a.losses[decided].max(axis=1) >= scenario.break_fraction).all()


def test_a_replay_records_battle_zero_to_its_end_with_arms_and_ground(tmp_path):
    scenario = scenario_from_dict(SCENARIO)
    outcome = play_scenario(scenario, 2, seed=0, record=True)
    replay = outcome.replay
    assert replay.n_steps == outcome.steps[0]
    assert list(replay.arm) == list(scenario.array("arm", np.int8))
    assert replay.tracks["formation"][0, 3] == C.LIMBERED
    assert (replay.going == 0).any()  # the river
    again = load_replay(save_replay(replay, tmp_path / "battle.npz"))
    assert np.array_equal(again.tracks["formation"], replay.tracks["formation"])
    assert np.array_equal(again.going, replay.going) and np.array_equal(again.arm, replay.arm)
    gif = render_gif(again, tmp_path / "battle.gif", size=160, frame_stride=50)
    assert gif.stat().st_size > 0


def test_a_randomly_deployed_scenario_cannot_be_played_placed():
    data = {"id": "nvm", "deployment": "random",
            "units": {"blue": [{"type": "infantry"}], "red": [{"type": "infantry"}]}}
    scenario = scenario_from_dict(data)
    assert scenario.random_deployment and scenario.terrain_map() is None
    with pytest.raises(ValueError, match="deploys at random"):
        play_scenario(scenario)
    with pytest.raises(ScenarioError, match="no position"):
        scenario_from_dict({**data, "units": {"blue": [{"x": 1}], "red": [{}]}})


def test_the_doctrine_forms_square_against_horse_and_unlimbers_in_range():
    data = {"id": "drill", "terrain": "flat", "field": {"width_m": 2000, "height_m": 1000},
            "units": {"blue": [{"type": "infantry", "x": 500, "y": 500},
                               {"type": "artillery", "x": 500, "y": 800,
                                "formation": "limbered"}],
                      "red": [{"type": "cavalry", "x": 500 + SQUARE_WITHIN - 50, "y": 500},
                              {"type": "infantry", "x": 1000, "y": 800}]}}
    scenario = scenario_from_dict(data)
    state = deploy_scenario(scenario, 1, 0)
    doctrine = CombinedArmsDoctrine(scenario.config())
    actions, formations = doctrine.orders(state, engine.sense(state, scenario.config()))
    assert formations[0, 0] == C.SQUARE
    assert formations[0, 1] == C.LINE  # the enemy is within unlimbering range
    assert actions[0, 2, 2] == 1.0  # the cavalry charges the infantry


def test_the_multi_unit_envs_take_an_order_of_battle():
    from envs.multi_battalion_env import MultiBattalionEnv

    env = MultiBattalionEnv(2, 2, order_of_battle={
        "blue": ["infantry", {"type": "artillery", "formation": "limbered", "quality": 1.2}],
        "red": ["cavalry", "infantry"]})
    env.reset(seed=0)
    state = env._battle.state
    assert list(state.arm) == [C.INFANTRY, C.ARTILLERY, C.CAVALRY, C.INFANTRY]
    assert list(state.formation[0]) == [C.LINE, C.LIMBERED, C.LINE, C.LINE]
    assert state.quality[1] == pytest.approx(1.2)
    for _ in range(3):
        env.step(env.scripted_actions(5))
    with pytest.raises(ValueError, match="order_of_battle"):
        MultiBattalionEnv(2, 2, order_of_battle={"blue": ["infantry"], "red": ["cavalry"]})
    with pytest.raises(ScenarioError, match="order_of_battle"):
        MultiBattalionEnv(1, 1, order_of_battle={"blue": ["dragoons"], "red": ["cavalry"]})


def test_the_batch_takes_formation_orders():
    from envs.battles.multi_battalion_batch import MultiBattalionBatch
    from envs.sim.config import BattleConfig

    batch = MultiBattalionBatch(2, 1, 1, config=BattleConfig(), terrain=None,
                                randomize_terrain=False, visibility_radius=600.0,
                                reward_weights=None)
    batch.reset(np.arange(2), [0, 1], np.zeros(2, np.int64))
    batch.step(np.zeros((2, 2, 3), np.float32), np.array([[C.SQUARE, -1], [-1, -1]]))
    assert list(batch.state.formation[:, 0]) == [C.SQUARE, C.LINE]
    with pytest.raises(ValueError, match="formations"):
        batch.step(np.zeros((2, 2, 3), np.float32), np.full((2, 2), 9))
