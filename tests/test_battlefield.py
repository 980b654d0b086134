"""The battlefield is one checked value that every env and batch takes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from envs.battlefield import CONFIG_FIELDS, FIELDS, Battlefield
from envs.sim.config import BattleConfig
from envs.sim.constants import MAP_WIDTH, MAX_STEPS_LIMIT, VISIBILITY_RADIUS
from envs.sim.terrain import TerrainMap


def flat_terrain(width: float = 600.0, height: float = 400.0) -> TerrainMap:
    return TerrainMap(np.zeros((4, 6)), np.zeros((4, 6)), width=width, height=height)


def test_defaults_build_the_default_battle_model():
    field = Battlefield()
    assert field.battle_config() == BattleConfig()
    assert field.procedural and field.terrain is None
    assert field.visibility_radius == VISIBILITY_RADIUS
    assert FIELDS == ("map_width", "map_height", "max_steps", "hill_speed_factor", "terrain",
                      "randomize_terrain", "visibility_radius")


def test_battle_config_carries_the_map_clock_and_hill_speed():
    config = Battlefield(map_width=600.0, map_height=400.0, max_steps=90,
                         hill_speed_factor=0.25).battle_config()
    assert (config.map_width, config.map_height, config.max_steps,
            config.hill_speed_factor) == (600.0, 400.0, 90, 0.25)
    assert config.replace(map_width=MAP_WIDTH, map_height=MAP_WIDTH, max_steps=500,
                          hill_speed_factor=0.5) == BattleConfig()


@pytest.mark.parametrize(("field", "value", "allowed"), [
    ("map_width", 5.0, "a map side in metres in [10, 100000]"),
    ("map_height", float("nan"), "a finite number"),
    ("max_steps", 0, "an integer >= 1"),
    ("max_steps", MAX_STEPS_LIMIT + 1, f"an integer <= {MAX_STEPS_LIMIT}"),
    ("max_steps", 2.5, "an integer"),
    ("hill_speed_factor", 0.0, "a number in (0.0, 1.0]"),
    ("randomize_terrain", "false", "true or false"),
    ("visibility_radius", -1.0, "a number > 0"),
])
def test_a_bad_value_is_refused_naming_field_value_and_what_is_allowed(field, value, allowed):
    with pytest.raises(ValueError, match=rf"{field}=.* is invalid: expected {re.escape(allowed)}"):
        Battlefield(**{field: value})


def test_a_terrain_must_be_a_terrain_map_of_the_map_size():
    with pytest.raises(TypeError, match="terrain='hills' is invalid: expected a TerrainMap"):
        Battlefield(terrain="hills")
    with pytest.raises(ValueError, match="terrain covers 600.0 x 400.0 m but the map is"):
        Battlefield(terrain=flat_terrain())
    field = Battlefield(map_width=600.0, map_height=400.0, terrain=flat_terrain())
    assert not field.procedural


def test_a_battlefield_is_frozen_and_replace_checks():
    field = Battlefield()
    with pytest.raises(AttributeError):
        field.max_steps = 3  # type: ignore[misc]
    assert field.replace(max_steps=40).max_steps == 40
    with pytest.raises(ValueError, match="max_steps=-4 is invalid"):
        field.replace(max_steps=-4)


def test_from_kwargs_builds_from_the_given_settings_and_ignores_none():
    field = Battlefield.from_kwargs(None, map_width=700.0, max_steps=None, terrain=None)
    assert field == Battlefield(map_width=700.0)
    with pytest.raises(ValueError, match="battlefield setting 'curriculum_level' is invalid"):
        Battlefield.from_kwargs(None, curriculum_level=3)
    with pytest.raises(TypeError, match="battlefield=.* is invalid: expected a Battlefield"):
        Battlefield.from_kwargs(BattleConfig(), max_steps=10)


def test_from_kwargs_with_a_battlefield_accepts_agreeing_settings_and_refuses_others():
    terrain = flat_terrain()
    field = Battlefield(map_width=600.0, map_height=400.0, terrain=terrain, max_steps=80)
    assert Battlefield.from_kwargs(field, max_steps=80, map_width=600, terrain=terrain) is field
    with pytest.raises(ValueError, match=r"max_steps=81 contradicts battlefield.max_steps=80"):
        Battlefield.from_kwargs(field, max_steps=81)
    with pytest.raises(ValueError, match="terrain=.* contradicts battlefield.terrain"):
        Battlefield.from_kwargs(field, terrain=flat_terrain())
    with pytest.raises(ValueError, match="randomize_terrain=1 contradicts"):
        Battlefield.from_kwargs(field, randomize_terrain=1)
    with pytest.raises(ValueError, match="max_steps=True contradicts"):
        Battlefield.from_kwargs(Battlefield(max_steps=1), max_steps=True)


def test_for_batch_keeps_a_full_battle_model_and_checks_it_against_the_battlefield():
    model = BattleConfig(map_width=600.0, map_height=400.0, fire_range=150.0)
    field, config = Battlefield.for_batch(None, model, visibility_radius=200.0,
                                          randomize_terrain=False)
    assert config is model
    assert field == Battlefield(map_width=600.0, map_height=400.0, visibility_radius=200.0,
                                randomize_terrain=False)
    assert Battlefield.for_batch(field, model)[1] is model
    with pytest.raises(ValueError, match="config.map_width=1000.0 contradicts "
                                         "battlefield.map_width=600.0"):
        Battlefield.for_batch(field, BattleConfig())
    with pytest.raises(TypeError, match="config=.* is invalid: expected a BattleConfig"):
        Battlefield.for_batch(None, {"map_width": 600.0})
    built, config = Battlefield.for_batch(field, None)
    assert built is field and config == field.battle_config()
    assert set(CONFIG_FIELDS) <= set(FIELDS)


def test_every_env_takes_a_battlefield_and_refuses_a_contradicting_keyword():
    from envs.battalion_env import BattalionEnv
    from envs.echelons.brigade_env import BrigadeEnv, make_brigade_batch
    from envs.echelons.division_env import DivisionEnv, make_division_batch
    from envs.multi_battalion_env import MultiBattalionEnv
    from envs.vec_env import BattalionVecEnv
    from training.mappo.battles import make_team_battles

    field = Battlefield(map_width=600.0, map_height=500.0, max_steps=70,
                        hill_speed_factor=0.3, randomize_terrain=False)
    duel = BattalionEnv(battlefield=field)
    assert duel.battlefield is field and duel.config == field.battle_config()
    assert (duel.map_width, duel.max_steps, duel.randomize_terrain) == (600.0, 70, False)
    assert BattalionVecEnv(2, battlefield=field).get_attr("battlefield") == [field, field]
    team = MultiBattalionEnv(battlefield=field.replace(visibility_radius=250.0))
    assert team.visibility_radius == 250.0 and team.config.max_steps == 70
    assert BrigadeEnv(battlefield=field).config == field.battle_config()
    assert DivisionEnv(battlefield=field).battlefield is field
    assert make_brigade_batch(2, battlefield=field).battles.battlefield is field
    assert make_division_batch(2, battlefield=field).brigades.battlefield is field
    assert make_team_battles(2, 2, 2, {"max_steps": 70}, battlefield=field).battlefield is field

    for make in (lambda: BattalionEnv(max_steps=71, battlefield=field),
                 lambda: BattalionVecEnv(2, max_steps=71, battlefield=field),
                 lambda: MultiBattalionEnv(max_steps=71, battlefield=field),
                 lambda: BrigadeEnv(max_steps=71, battlefield=field),
                 lambda: DivisionEnv(max_steps=71, battlefield=field),
                 lambda: make_team_battles(2, 2, 2, {"max_steps": 71}, battlefield=field)):
        with pytest.raises(ValueError, match="max_steps=71 contradicts battlefield.max_steps=70"):
            make()


def test_the_duel_refuses_a_fog_of_war_it_does_not_have():
    from envs.battalion_env import BattalionEnv

    with pytest.raises(ValueError, match="battlefield.visibility_radius=250.0 is invalid for "
                                         "a duel"):
        BattalionEnv(battlefield=Battlefield(visibility_radius=250.0))


def test_the_keywords_and_the_battlefield_build_the_same_battles():
    from envs.multi_battalion_env import MultiBattalionEnv

    settings = dict(map_width=600.0, map_height=500.0, max_steps=60, visibility_radius=300.0)
    by_keywords = MultiBattalionEnv(**settings)
    by_value = MultiBattalionEnv(battlefield=Battlefield(**settings))
    first, _ = by_keywords.reset(seed=4)
    second, _ = by_value.reset(seed=4)
    for agent in first:
        np.testing.assert_array_equal(first[agent], second[agent])
    orders = {agent: np.array([1.0, 0.2, 1.0], np.float32) for agent in first}
    for _ in range(5):
        a, b = by_keywords.step(orders)[1], by_value.step(orders)[1]
        assert a == b


def test_battlefield_is_exported_from_envs():
    import envs

    assert envs.Battlefield is Battlefield
    assert "Battlefield" in envs.__all__
