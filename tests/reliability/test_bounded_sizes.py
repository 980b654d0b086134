"""Oversize inputs (replays, rasters, grids, scenarios, alias bombs, historical outcomes)
through every loader with a size limit: each refused by name, in bounded memory."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fresh import run_python

ROOT = Path(__file__).resolve().parents[2]
EXTRA_MEMORY_MIB = 1024
"""The issue's bound on the memory a refusal may take above the process's start."""


def test_every_oversize_input_is_refused_by_name_in_bounded_memory(tmp_path):
    # A small replay limit keeps the zip bomb small here; the same module run without
    # --replay-limit-mib uses the real limit against a multi-GB bomb.
    output = run_python(["-m", "tests.reliability.sizes", str(tmp_path / "campaign"),
                         "--bomb-mib", "40", "--replay-limit-mib", "16"], timeout=900)
    cases = {c["case"]: c for c in map(json.loads, output.splitlines())}
    assert set(cases) >= {
        "replay_zip_bomb", "replay_forged_header", "replay_100k_units",
        "viewer_melee_pair_steps", "viewer_melee_rows", "raster_window_3.6G_pixels",
        "raster_side_200k", "raster_one_huge_strip", "raster_complex_pixels",
        "gis_grid_1M_rows", "yaml_alias_bomb", "scenario_100k_units_same_id",
        "scenario_2k_units_one_repeated_id", "scenario_10k_features",
        "scenario_100k_point_road", "scenario_ground_too_costly",
        "rasterise_features_too_costly", "scenario_fifo", "historical_winner_green",
        "historical_nan_casualties", "historical_negative_casualties"}
    failures = [c for c in cases.values() if c["outcome"] != "refused"]
    assert not failures, failures
    heavy = [c for c in cases.values() if c["peak_extra_mib"] >= EXTRA_MEMORY_MIB]
    assert not heavy, heavy
    # Each refusal names its file or field.
    for name in ("replay_forged_header", "raster_window_3.6G_pixels", "yaml_alias_bomb",
                 "historical_winner_green"):
        assert str(tmp_path / "campaign" / name) in cases[name]["detail"], cases[name]


def test_error_messages_never_expand_a_value_whole():
    from envs.scenario import MAX_REPR_CHARS, short_repr

    bomb: list = ["x"] * 9
    for _ in range(9):
        bomb = [bomb] * 9  # 9**10 strings by reference, a few kB in memory
    assert len(short_repr(bomb)) <= MAX_REPR_CHARS
    assert len(short_repr("y" * 10**7)) <= MAX_REPR_CHARS
    assert short_repr("green") == "'green'" and short_repr([1, 2]) == "[1, 2]"


def test_the_declared_limits_are_the_documented_ones():
    from data.gis import terrain_importer as gis
    from envs import scenario
    from envs.rendering import replay, viewer
    from envs.sim import constants as C

    text = (ROOT / "docs" / "reliability.md").read_text()
    for module, names in ((replay, ("MAX_REPLAY_BYTES", "MAX_REPLAY_UNITS")),
                          (viewer, ("MAX_MELEE_PAIR_STEPS", "MAX_MELEE_ROWS")),
                          (gis, ("MAX_GRID_SIDE", "MAX_RASTER_SIDE", "MAX_RASTER_READ_PIXELS",
                                 "MAX_OSM_BYTES")),
                          (scenario, ("MAX_SIDE_UNITS", "MAX_FEATURES", "MAX_FEATURE_POINTS",
                                      "MAX_RASTER_WORK", "MAX_SCENARIO_BYTES"))):
        for name in names:
            assert f"`{name}`" in text, name
            assert 0 < getattr(module, name)
    assert replay.MAX_REPLAY_STEPS == C.MAX_STEPS_LIMIT
    # The scenario grid and the GIS grid share one bound.
    assert scenario.MAX_GRID_SIDE == gis.MAX_GRID_SIDE
