"""benchmarks.plan_ceiling: the doctrine's plan family and its per-battle best."""

from __future__ import annotations

import numpy as np

from benchmarks.plan_ceiling import (
    _COS,
    _DISTANCE,
    _SIGHT,
    TEAM_OPPONENTS,
    Plan,
    play_plan,
    share,
)
from envs.battles.observation import OBSERVATION_FEATURES
from envs.commanders.doctrine import ConcentratingCommander, DisciplinedCommander, InStepCommander
from training.mappo.battles import DOCTRINE_TEAM, play_team_battles


def test_a_plan_changes_only_what_it_does_while_the_enemy_is_hidden():
    doctrine = DisciplinedCommander(hold_range=70)
    obs = np.zeros((2, len(OBSERVATION_FEATURES)), np.float32)
    obs[:, _DISTANCE] = 60 / doctrine.map_diagonal  # 60 m, dead ahead
    obs[:, _COS] = 1.0
    obs[0, _SIGHT] = 1.0  # row 0 sees the enemy, a crest hides it from row 1
    expected = doctrine.predict(obs)[0]
    assert expected[1, 0] == 1.0  # the doctrine marches on a hidden enemy
    for when_hidden in ("march on", "halt", "wheel left", "wheel right"):
        orders = Plan(70, when_hidden).predict(obs)[0]
        assert np.array_equal(orders[0], expected[0]), when_hidden
    assert np.array_equal(Plan(70, "march on").predict(obs)[0], expected)
    # Falling back uphill marches on a hidden enemy on level ground, and falls back from
    # one that stands higher.
    assert np.array_equal(Plan(70, "fall back uphill").predict(obs)[0], expected)
    obs[:, OBSERVATION_FEATURES.index("enemy_elevation")] = 0.5
    assert Plan(70, "fall back uphill").predict(obs)[0][1, 0] == -1.0
    assert Plan(70, "halt").predict(obs)[0][1, 0] == 0.0
    left = Plan(70, "wheel left").predict(obs)[0][1]
    right = Plan(70, "wheel right").predict(obs)[0][1]
    # It wheels until the enemy lies WHEEL off its front, and halts while it wheels.
    assert left[1] < 0 < right[1] and left[0] == right[0] == 0.0


def test_share_is_won_drawn_lost_in_percent():
    assert share(np.array([1, 1, 0, -1], np.int8)) == "50.0/25.0/25.0"


def test_the_team_family_starts_with_the_doctrine_team():
    # Marching on at 60 m is the doctrine itself: its 2v2 battles are the doctrine team's.
    for opponent in TEAM_OPPONENTS:
        outcomes = play_plan(Plan(60, "march on"), opponent, 8, 300_000, team=True)
        assert np.array_equal(outcomes, play_team_battles(
            DOCTRINE_TEAM, TEAM_OPPONENTS[opponent], n_episodes=8, seed=300_000))
    assert not np.array_equal(play_plan(Plan(130, "halt"), "scripted_l5", 8, 300_000, True),
                              play_plan(Plan(60, "march on"), "scripted_l5", 8, 300_000, True))


def test_the_team_table_has_the_columns_outside_the_family(monkeypatch, capsys):
    import sys

    from benchmarks import plan_ceiling
    monkeypatch.setattr(plan_ceiling, "HOLD_RANGES", (80,))
    monkeypatch.setattr(sys, "argv", ["plan_ceiling", "--team", "--battles", "8",
                                      "--split", "validation"])
    plan_ceiling.main()
    out = capsys.readouterr().out
    assert "in step (outside the family)" in out
    assert "with the 3 plans outside the family too" in out
    row = next(line for line in out.splitlines() if line.startswith("| 80 m"))
    cells = [cell.strip() for cell in row.strip(" |").split("|")]
    assert cells[-3:] == [share(play_plan(commander, "scripted_l5", 8, 300_000, True))
                          for commander in (InStepCommander(hold_range=80),
                                            InStepCommander(hold_range=80, exposed_range=100),
                                            ConcentratingCommander(hold_range=80))]
