"""Terrain maps: validation, seeded generation, lookups and line of sight."""

from __future__ import annotations

import numpy as np
import pytest

from envs.sim import random as rnd
from envs.sim.terrain import TerrainMap, generate_terrain
from tests.sim.scenario import ridge


def test_same_seed_same_map_and_different_seeds_differ():
    a = TerrainMap.generate_random(seed=11)
    b = TerrainMap.generate_random(seed=11)
    c = TerrainMap.generate_random(seed=12)
    assert np.array_equal(a.elevation, b.elevation) and np.array_equal(a.cover, b.cover)
    assert not np.array_equal(a.elevation, c.elevation)


def test_batched_generation_matches_one_at_a_time():
    keys = rnd.seed_keys(np.arange(5))
    elevation, cover = generate_terrain(keys)
    for i in range(5):
        e1, c1 = generate_terrain(keys[i:i + 1])
        assert np.array_equal(e1[0], elevation[i]) and np.array_equal(c1[0], cover[i])


def test_generated_maps_span_zero_to_one_with_cover_in_range():
    elevation, cover = generate_terrain(rnd.seed_keys(np.arange(50)))
    assert np.allclose(elevation.min(axis=(1, 2)), 0) and np.allclose(
        elevation.max(axis=(1, 2)), 1)
    assert cover.min() >= 0 and cover.max() <= 1 and cover.max() > 0.2


def test_elevation_is_bilinear_between_cell_centres():
    terrain = TerrainMap(np.arange(16, dtype=np.float32).reshape(4, 4),
                         np.zeros((4, 4), np.float32), 400.0, 400.0)
    relative = terrain.relative_elevation()
    assert terrain.elevation_at(50.0, 50.0) == pytest.approx(relative[0, 0])
    assert terrain.elevation_at(100.0, 50.0) == pytest.approx(
        (relative[0, 0] + relative[0, 1]) / 2)
    # Beyond the outer centres the edge extends flat.
    assert terrain.elevation_at(0.0, 0.0) == pytest.approx(relative[0, 0])


def test_line_of_sight_clear_on_level_ground_and_blocked_by_a_ridge():
    assert TerrainMap.flat().line_of_sight(10, 10, 990, 990)
    terrain = ridge()
    assert not terrain.line_of_sight(300, 500, 700, 500)
    assert not terrain.line_of_sight(700, 500, 300, 500)  # symmetric
    assert terrain.line_of_sight(300, 100, 300, 900)  # along the valley


@pytest.mark.parametrize("kwargs, field", [
    (dict(elevation=np.zeros((3, 3)), cover=np.zeros((3, 4))), "cover"),
    (dict(elevation=np.zeros(5), cover=np.zeros(5)), "elevation"),
    (dict(elevation=np.zeros((2, 2)), cover=np.full((2, 2), 1.5)), "cover"),
    (dict(elevation=np.full((2, 2), np.nan), cover=np.zeros((2, 2))), "finite"),
    (dict(elevation=np.zeros((2, 2)), cover=np.zeros((2, 2)), width=0), "width"),
])
def test_invalid_maps_are_rejected_with_a_clear_message(kwargs, field):
    with pytest.raises(ValueError, match=field):
        TerrainMap(**kwargs)


def test_negative_seed_is_rejected():
    with pytest.raises(ValueError, match="seed"):
        TerrainMap.generate_random(seed=-1)
