"""envs.commanders.arms_doctrine.ArmsPlan: each option changes the orders it names, the
default plan is the doctrine, the searched plan beats the doctrine's own against L5 and
the line plan beats the doctrine's own against the doctrine on WFM-1's battles."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from benchmarks.arms_plans import play_plan
from envs.commanders.arms_doctrine import (
    ARMS_PLANS,
    LINE_PLAN,
    SQUARE_WITHIN,
    VOLLEY_RANGE,
    ArmsPlan,
    CombinedArmsDoctrine,
)
from envs.play.commanders import CombinedArmsRed
from envs.scenario import scenario_from_dict
from envs.scenario_battle import deploy_scenario
from envs.sim import constants as C
from envs.sim import engine
from training.wfm1.battles import ScenarioBattles, play_out
from training.wfm1.scenarios import sample_training_scenario


def orders(units: dict, plan: ArmsPlan | None):
    """The doctrine's orders (actions, formations) of battle 0 on a flat 2 km field."""
    scenario = scenario_from_dict({"id": "plan", "terrain": "flat",
                                   "field": {"width_m": 2000, "height_m": 1000},
                                   "units": units})
    state = deploy_scenario(scenario, 1, 0)
    doctrine = CombinedArmsDoctrine(scenario.config(), plan=plan)
    actions, formations = doctrine.orders(state, engine.sense(state, scenario.config()))
    return actions[0], formations[0]


def test_with_fire_discipline_infantry_opens_fire_only_once_halted():
    gap = VOLLEY_RANGE * 1.1  # beyond the volley range, within 1.2 times it
    units = {"blue": [{"type": "infantry", "x": 500, "y": 500}],
             "red": [{"type": "infantry", "x": 500 + gap, "y": 500}]}
    loose, _ = orders(units, None)
    disciplined, _ = orders(units, ArmsPlan(fire_discipline=True))
    assert loose[0, 0] == disciplined[0, 0] == 1.0  # both still close in
    assert loose[0, 2] == 1.0 and disciplined[0, 2] == 0.0


def test_marching_in_step_holds_the_battalion_ahead_until_the_other_comes_up():
    units = {"blue": [{"type": "infantry", "x": 500, "y": 300},
                      {"type": "infantry", "x": 450, "y": 700}],
             "red": [{"type": "infantry", "x": 800, "y": 300},
                     {"type": "infantry", "x": 800, "y": 700}]}
    alone, _ = orders(units, None)
    in_step, _ = orders(units, ArmsPlan(step_tolerance=20.0))
    assert alone[0, 0] == alone[1, 0] == 1.0
    assert in_step[0, 0] == 0.0 and in_step[1, 0] == 1.0  # 50 m ahead: it waits
    assert orders(units, ArmsPlan(step_tolerance=60.0))[0][0, 0] == 1.0


def test_guns_can_turn_on_the_enemy_horse_in_range():
    units = {"blue": [{"type": "artillery", "x": 500, "y": 500}],
             "red": [{"type": "infantry", "x": 800, "y": 500},  # nearest, due east
                     {"type": "cavalry", "x": 500, "y": 900}]}  # 400 m north
    nearest, _ = orders(units, None)
    horse, _ = orders(units, ArmsPlan(gun_target="cavalry"))
    assert nearest[0, 2] == horse[0, 2] == 1.0
    assert horse[0, 1] > nearest[0, 1]  # wheels further round, to the north


def test_distances_of_the_plan_move_the_columns_the_charge_and_the_guns():
    units = {"blue": [{"type": "infantry", "x": 500, "y": 300, "formation": "column"},
                      {"type": "cavalry", "x": 500, "y": 500},
                      {"type": "artillery", "x": 500, "y": 900, "formation": "limbered"}],
             "red": [{"type": "infantry", "x": 1000, "y": 300},
                     {"type": "infantry", "x": 1000, "y": 500},
                     {"type": "infantry", "x": 1080, "y": 900}]}
    # Every Blue unit 500-580 m from its nearest enemy: the doctrine's own plan keeps the
    # column (beyond 450 m), holds the charge (250 m) and the guns limbered (550 m).
    actions, formations = orders(units, None)
    assert formations[0] == formations[2] == C.KEEP_FORMATION and actions[1, 2] == 0.0
    actions, formations = orders(units, ArmsPlan(column_beyond=600.0, charge_within=550.0,
                                                 unlimber_within=600.0))
    assert formations[0] == C.LINE and actions[1, 2] == 1.0 and formations[2] == C.LINE


def test_a_square_deploys_once_the_horse_is_beyond_unsquare_beyond():
    units = {"blue": [{"type": "infantry", "x": 500, "y": 500, "formation": "square"}],
             "red": [{"type": "cavalry", "x": 800, "y": 500}]}  # 300 m off
    _, kept = orders(units, None)  # the doctrine's own: in square until the horse is 400 m off
    _, deployed = orders(units, ArmsPlan(unsquare_beyond=290.0))
    assert kept[0] == C.KEEP_FORMATION and deployed[0] == C.LINE
    assert orders(units, ArmsPlan(unsquare_beyond=310.0))[1][0] == C.KEEP_FORMATION


@pytest.mark.parametrize("field,value", [("volley_range", 0.0), ("charge_within", -1.0),
                                         ("step_tolerance", 0.0), ("unlimber_within", "far"),
                                         ("column_beyond", True), ("gun_target", "guns"),
                                         ("unsquare_beyond", SQUARE_WITHIN - 1)])
def test_a_bad_plan_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        ArmsPlan(**{field: value})


def test_a_plan_must_be_an_arms_plan():
    with pytest.raises(TypeError, match="plan"):
        CombinedArmsDoctrine(None, plan={"volley_range": 60.0})
    with pytest.raises(TypeError, match="plan"):
        CombinedArmsRed({"volley_range": 60.0})


def test_the_searched_plan_beats_the_doctrines_own_against_l5_on_all_arms():
    # 200 battles: 108 won against 83 (on 400, 52.0 % against 41.2 %).
    won = {name: int((play_plan(ARMS_PLANS[name], "scripted_l5", 200, 300000) == 1).sum())
           for name in ("standard", "searched")}
    assert won["searched"] >= won["standard"] + 16, won


def test_the_line_plan_beats_the_doctrines_own_against_the_doctrine_on_wfm1_battles():
    # Training scenarios of even-ish sides (as the plan was searched on, other draws):
    # 29 battles of 48 won against 19.
    rng, scenarios = np.random.default_rng(21), []
    while len(scenarios) < 6:
        scenario = sample_training_scenario(rng)
        if min(scenario.n_blue, scenario.n_red) >= 4 and \
                2 / 3 <= scenario.n_red / scenario.n_blue <= 3 / 2:
            scenarios.append(scenario)
    won = {name: int((play_out(ScenarioBattles(scenarios, 8, 500, seed=40, blue_plan=plan),
                               None) == 1).sum())
           for name, plan in (("standard", None), ("line", LINE_PLAN))}
    assert won["line"] >= won["standard"] + 6, won


def test_the_benchmark_searches_and_prints_the_plans():
    result = subprocess.run([sys.executable, "-m", "benchmarks.arms_plans", "--battles", "4",
                             "--search", "1", "--split", "validation"],
                            capture_output=True, text=True, check=True)
    assert "best plan of the search" in result.stdout
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0] for row in rows] == ["| standard", "| searched", "| line",
                                                    "| found by this search"]
    assert all(row.count("/") == 4 for row in rows)  # won/drawn/lost against both


def test_the_teachers_reach_together_chooses_per_scenario_and_per_battle():
    from benchmarks.wfm1_teachers import family_reach

    # Two teachers, two scenarios of two battles: A wins scenario 0's first battle,
    # B both of scenario 1's and scenario 0's second; nobody wins more than that.
    outcomes = np.array([[[1, 0], [-1, 0]],
                         [[0, 1], [1, 1]]])
    specialist, oracle = family_reach(outcomes)
    assert specialist == pytest.approx((0.5 + 1.0) / 2)
    assert oracle == pytest.approx(1.0)
    specialist, oracle = family_reach(outcomes[:1])
    assert (specialist, oracle) == (pytest.approx(0.25), pytest.approx(0.25))


def test_the_teachers_benchmark_prints_every_plan_on_wfm1s_battles(monkeypatch, capsys):
    from benchmarks import wfm1_teachers

    assert all(min(s.n_blue, s.n_red) >= 4 and 0.67 <= s.n_red / s.n_blue <= 1.5
               for s in wfm1_teachers.even_scenarios(5, 6))
    monkeypatch.setattr(wfm1_teachers, "HELD_OUT_SCENARIOS", wfm1_teachers.HELD_OUT_SCENARIOS[:2])
    wfm1_teachers.main(["--scenarios", "1", "--battles", "2", "--held-out", "1",
                        "--lookahead", "line", "standard+never", "--horizon", "5"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0] for row in rows] == [
        "| standard", "| searched", "| line",
        "| lookahead (line, standard+never; every 25, horizon 5)"]
    assert all(row.count("/") == 6 for row in rows)  # won/drawn/lost on two splits, held out
    assert "Held out, the 4 teachers together: " in out
    wfm1_teachers.main(["--scenarios", "1", "--battles", "2", "--held-out", "0",
                        "--teachers", "line", "line+always"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0] for row in rows] == ["| line", "| line+always"]
    assert "together" not in out  # no held-out battles to take together
    assert all(row.count("/") == 4 for row in rows)  # two splits, no held-out column
    for wrong in (["--battles", "0"], ["--lookahead", "line"],  # one candidate: no choice
                  ["--teachers", "line+bold"]):
        with pytest.raises(SystemExit):
            wfm1_teachers.main(wrong)
