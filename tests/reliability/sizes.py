"""Oversize inputs through every loader with a size limit: each refused by name, bounded.

Each case writes a small file (or builds a small input) that declares, or would make
the loader build, something huge: a replay archive that expands to gigabytes or whose
array headers lie, a replay whose melee inference is quadratic in its units, a
GeoTIFF whose sides, blocks or needed window are huge, a grid too large, a YAML alias
bomb in a checked field, a scenario with too many units, features or road points, or
whose ground would take hours to rasterise, and a historical battle whose outcome is
invalid. What counts:

- ``refused``: it raised a ``ValueError`` (all our limit errors are) whose message
  holds the case's expected words (the limit's name, or the field);
- anything else (it loaded, raised something else such as ``MemoryError`` or
  ``KeyError``, or ran past :data:`HANG_S`) is a failure.

Every case reports its wall time and its peak memory above the process's memory when
it started (resident set, from ``VmHWM`` reset through ``/proc/self/clear_refs``, so
GDAL's allocations count too; Python's traced peak where ``/proc`` is not there).

Run it in its own process (``python -m tests.reliability.sizes FOLDER [--bomb-mib N]
[--replay-limit-mib N] [--only CASE]``): it prints one JSON line per case.
``test_bounded_sizes.py`` runs it with a small replay limit and bomb;
``benchmarks/reliability.py``-style runs use the real limit and a 3 GiB bomb.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import signal
import sys
import time
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

HANG_S = 60
MIB = 2**20


# --- measuring ----------------------------------------------------------------------------

def _status_mib(key: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{key}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) // 1024 if found else None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


# --- writers of oversize files ------------------------------------------------------------

def _replay_arrays(steps: int, units: int) -> dict[str, np.ndarray]:
    """The arrays of a replay of ``steps`` steps of ``units`` units, every unit at the
    map's centre (so the archive compresses to almost nothing)."""
    shape = (steps + 1, units)
    arrays = {name: np.full(shape, 500.0, np.float32) for name in ("x", "y")}
    arrays.update({name: np.zeros(shape, np.float32) for name in ("theta", "readiness")})
    arrays.update({name: np.ones(shape, np.float16) for name in ("strength", "morale")})
    arrays["volley"] = np.zeros(shape, np.float16)
    arrays.update({name: np.zeros(shape, np.int8) for name in ("routed", "destroyed",
                                                                 "formation")})
    arrays["target"] = np.full(shape, -1, np.int8)
    arrays.update(version=np.int32(2), width=np.float64(1000.0), height=np.float64(1000.0),
                  team=(np.arange(units) % 2).astype(np.int8), arm=np.zeros(units, np.int8),
                  elevation=np.zeros((4, 4), np.float32), cover=np.zeros((4, 4), np.float32),
                  going=np.ones((4, 4), np.float32), metadata=np.array(json.dumps({})))
    return arrays


def replay_file(path: Path, steps: int, units: int) -> Path:
    np.savez_compressed(path, **_replay_arrays(steps, units))
    return path


def replay_zip_bomb(path: Path, mib: int) -> Path:
    """A small valid replay whose ``x`` array really expands to ``mib`` MiB of zeros."""
    from numpy.lib import format as npy_format

    arrays = _replay_arrays(1, 2)
    rows = mib * MIB // (4 * 2)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                if name != "x":
                    npy_format.write_array(member, np.asanyarray(array))
                    continue
                header = {"descr": "<f4", "fortran_order": False, "shape": (rows, 2)}
                npy_format.write_array_header_1_0(member, header)
                chunk = bytes(MIB)
                for _ in range(mib):
                    member.write(chunk)
    return path


def replay_forged_header(path: Path) -> Path:
    """A small replay whose ``x`` header declares 3 GiB (400,000 steps of 2,000 units)
    though its zip entry holds a few bytes."""
    from numpy.lib import format as npy_format

    arrays = _replay_arrays(1, 2)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w") as member:
                if name == "x":
                    header = {"descr": "<f4", "fortran_order": False,
                              "shape": (400_000, 2_000)}
                    npy_format.write_array_header_1_0(member, header)
                    member.write(bytes(64))
                else:
                    npy_format.write_array(member, np.asanyarray(array))
    return path


def geotiff(path: Path, width: int, height: int, *, dtype: str = "int16",
            strip_rows: int | None = None, cover_box: bool = True) -> Path:
    """A GeoTIFF of ``width x height`` pixels whose blocks are never written (GDAL's
    sparse files): a few kB on disk whatever it declares. Tiled 256 x 256, or in strips
    of ``strip_rows`` rows. With ``cover_box`` its geotransform spans the Waterloo
    site's box exactly, so the whole raster is needed."""
    import rasterio
    from rasterio.transform import from_bounds

    from data.gis.terrain_importer import BATTLE_SITES

    site = BATTLE_SITES["waterloo"]
    bounds = (site.lon_min, site.lat_min, site.lon_max, site.lat_max) if cover_box else (
        site.lon_min - 0.01, site.lat_min - 0.01, site.lon_max + 0.01, site.lat_max + 0.01)
    layout = {"blockysize": strip_rows} if strip_rows else {
        "tiled": True, "blockxsize": 256, "blockysize": 256}
    with rasterio.open(path, "w", driver="GTiff", width=width, height=height, count=1,
                       dtype=dtype, crs="EPSG:4326",
                       transform=from_bounds(*bounds, width, height), sparse_ok=True,
                       compress="deflate", **layout):
        pass
    return path


def alias_bomb(path: Path) -> Path:
    """An 800-byte YAML scenario whose ``name`` refers to 9**9 (387 million) strings by
    aliases: parsed, it is small; written out whole, it is gigabytes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 9)]
    lines += ["id: bomb", "name: *a8", "terrain: flat",
              "units: {blue: [{x: 100, y: 100}], red: [{x: 900, y: 900}]}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _units(n: int, side: str, repeated: bool = False) -> list[dict]:
    return [{"id": "same" if repeated else f"{side}{k}", "x": 100.0, "y": 100.0}
            for k in range(n)]


def scenario(units: tuple[list, list] | None = None, terrain: object = "flat",
             grid: int = 40) -> dict:
    blue, red = units or (_units(1, "b"), _units(1, "r"))
    return {"id": "big", "field": {"rows": grid, "cols": grid}, "terrain": terrain,
            "units": {"blue": blue, "red": red}}


def battle_with_outcome(path: Path, **outcome: object) -> Path:
    from data.historical import BATTLES_JSON

    entry = json.loads(BATTLES_JSON.read_text())[0]
    entry["historical_outcome"] = {**entry["historical_outcome"], **outcome}
    path.write_text(json.dumps([entry]))
    return path


# --- the campaign -------------------------------------------------------------------------

Case = tuple[str, str, Callable[[Path], Callable[[], object]], str]
"""(name, loader, build(folder) -> the call to make, words the refusal must hold)."""


def cases(bomb_mib: int) -> list[Case]:
    from data.gis.terrain_importer import BATTLE_SITES, GISTerrainBuilder, read_elevation
    from envs.rendering.replay import load_replay
    from envs.rendering.viewer import write_replay_html
    from envs.scenario import load_scenario_file, rasterise_features, scenario_from_dict
    from training.historical_benchmark import HistoricalBenchmark

    waterloo = BATTLE_SITES["waterloo"]
    road = {"kind": "road", "points": [[float(k % 1000), 500.0] for k in range(100_000)]}
    hill = {"kind": "hill", "x": 500.0, "y": 500.0, "radius_m": 100.0, "height": 0.5}
    ridge = {"kind": "ridge", "points": [[10.0 + k, 500.0] for k in range(200)],
             "width_m": 50.0, "height": 0.5}

    def html(replay: Path) -> Callable[[], object]:
        return lambda: write_replay_html(replay, replay.with_suffix(".html"))

    def elevation(tif: Path, rows: int = 40, cols: int = 40) -> Callable[[], object]:
        return lambda: read_elevation(tif, waterloo, rows, cols)

    def historical(path: Path) -> Callable[[], object]:
        return lambda: HistoricalBenchmark(path, n_seeds=1).run()

    return [
        ("replay_zip_bomb", "load_replay",
         lambda f: functools.partial(load_replay, replay_zip_bomb(f / "bomb.npz", bomb_mib)),
         "allowed"),
        ("replay_forged_header", "load_replay",
         lambda f: functools.partial(load_replay, replay_forged_header(f / "forged.npz")),
         "'x' declares"),
        ("replay_100k_units", "load_replay",
         lambda f: functools.partial(load_replay, replay_file(f / "units.npz", 1, 100_000)),
         "MAX_REPLAY_UNITS"),
        ("viewer_melee_pair_steps", "write_replay_html",
         lambda f: html(replay_file(f / "long.npz", 300, 1_000)), "MAX_MELEE_PAIR_STEPS"),
        ("viewer_melee_rows", "write_replay_html",
         lambda f: html(replay_file(f / "crowd.npz", 2_000, 200)), "MAX_MELEE_ROWS"),
        ("raster_window_3.6G_pixels", "read_elevation",
         lambda f: elevation(geotiff(f / "window.tif", 60_000, 60_000)),
         "MAX_RASTER_READ_PIXELS"),
        ("raster_side_200k", "read_elevation",
         lambda f: elevation(geotiff(f / "side.tif", 200_000, 64, cover_box=False)),
         "MAX_RASTER_SIDE"),
        ("raster_one_huge_strip", "read_elevation",
         lambda f: elevation(geotiff(f / "strip.tif", 20_000, 20_000, strip_rows=20_000,
                                     cover_box=False)),
         "MAX_RASTER_READ_PIXELS"),
        ("raster_complex_pixels", "read_elevation",
         lambda f: elevation(geotiff(f / "complex.tif", 64, 64, dtype="complex64")),
         "complex64"),
        ("gis_grid_1M_rows", "GISTerrainBuilder",
         lambda f: (lambda: GISTerrainBuilder("waterloo", rows=1_000_000, cols=40)), "rows"),
        ("yaml_alias_bomb", "load_scenario_file",
         lambda f: functools.partial(load_scenario_file, alias_bomb(f / "bomb.yaml")), "name"),
        ("scenario_100k_units_same_id", "scenario_from_dict",
         lambda f: functools.partial(scenario_from_dict, scenario((_units(100_000, "b", True),
                                                                   _units(1, "r")))),
         "MAX_SIDE_UNITS"),
        ("scenario_2k_units_one_repeated_id", "scenario_from_dict",
         lambda f: functools.partial(scenario_from_dict, scenario((_units(1_000, "b"), _units(
             999, "r") + [{"id": "b7", "x": 1, "y": 1}]))),
         "used more than once"),
        ("scenario_10k_features", "scenario_from_dict",
         lambda f: (lambda: scenario_from_dict(scenario(terrain=[hill] * 10_000))),
         "MAX_FEATURES"),
        ("scenario_100k_point_road", "scenario_from_dict",
         lambda f: (lambda: scenario_from_dict(scenario(terrain=[road]))),
         "MAX_FEATURE_POINTS"),
        ("scenario_ground_too_costly", "scenario_from_dict",
         lambda f: (lambda: scenario_from_dict(scenario(terrain=[ridge] * 10, grid=1000))),
         "MAX_RASTER_WORK"),
        ("rasterise_features_too_costly", "rasterise_features",
         lambda f: (lambda: rasterise_features([ridge] * 10, 1000.0, 1000.0, 1000, 1000)),
         "MAX_RASTER_WORK"),
        ("scenario_fifo", "load_scenario_file",
         lambda f: (lambda p=f / "pipe.yaml": (os.mkfifo(p), load_scenario_file(p))),
         "not a regular file"),
        ("historical_winner_green", "HistoricalBenchmark.run",
         lambda f: historical(battle_with_outcome(f / "green.json", winner="green")),
         "winner='green'"),
        ("historical_nan_casualties", "HistoricalBenchmark.run",
         lambda f: historical(battle_with_outcome(f / "nan.json", blue_casualties=math.nan)),
         "blue_casualties=nan"),
        ("historical_negative_casualties", "HistoricalBenchmark.run",
         lambda f: historical(battle_with_outcome(f / "neg.json", red_casualties=-0.5)),
         "red_casualties=-0.5"),
    ]


def attempt(name: str, loader: str, call: Callable[[], object], expected: str) -> dict:
    def on_alarm(signum, frame):
        raise TimeoutError("hung")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    rss_start = _status_mib("VmRSS")
    proc = _reset_peak()
    tracemalloc.start()
    signal.alarm(HANG_S)
    started = time.perf_counter()
    outcome, detail = "loaded", ""
    try:
        call()
    except TimeoutError:
        outcome = "hung"
    except ValueError as error:
        detail = f"{type(error).__name__}: {error}"
        outcome = "refused" if expected in str(error) else "unclear"
    except BaseException as error:  # noqa: BLE001 - anything else is a finding
        outcome, detail = "raw", f"{type(error).__name__}: {error}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - started
    traced = tracemalloc.get_traced_memory()[1] / MIB
    tracemalloc.stop()
    peak = _status_mib("VmHWM") if proc else None
    extra = traced if peak is None or rss_start is None else max(peak - rss_start, traced)
    return {"case": name, "loader": loader, "outcome": outcome, "seconds": round(seconds, 3),
            "peak_extra_mib": round(extra, 1), "detail": detail[:300]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--bomb-mib", type=int, default=3 * 1024)
    parser.add_argument("--replay-limit-mib", type=int, default=None,
                        help="lower envs.rendering.replay.MAX_REPLAY_BYTES (tests use a "
                             "small bomb)")
    parser.add_argument("--only", default=None, help="run only this case")
    args = parser.parse_args(argv)
    if args.replay_limit_mib is not None:
        import envs.rendering.replay

        envs.rendering.replay.MAX_REPLAY_BYTES = args.replay_limit_mib * MIB
    args.folder.mkdir(parents=True, exist_ok=True)
    for name, loader, build, expected in cases(args.bomb_mib):
        if args.only not in (None, name):
            continue
        folder = args.folder / name
        folder.mkdir()
        try:
            call = build(folder)
        except BaseException as error:  # noqa: BLE001 - a writer that fails is reported
            result = {"case": name, "loader": loader, "outcome": "not built",
                      "detail": f"{type(error).__name__}: {error}"[:300]}
        else:
            result = attempt(name, loader, call, expected)
        print(json.dumps(result), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
