"""The replay viewer: one self-contained HTML page that plays a recorded battle.

:func:`write_replay_html` turns a :class:`~envs.rendering.replay.Replay` (or a replay
file) into a single HTML file with everything inlined (the script, the style sheet and
the battle's data as base64 typed arrays), so it opens from disk in any modern browser
with no network. Melee is not recorded in a replay, so the page infers it from where the
units stand, a few steps at a time (:data:`MELEE_CHUNK_PAIRS`), and refuses before any
work a replay too big to infer (:data:`MAX_MELEE_PAIR_STEPS`, :data:`MAX_MELEE_ROWS`).
The scripts and the style sheet are package data next to this module (``battle_draw.js``,
shared with the play page of :mod:`envs.play`, ``viewer.js`` and ``viewer.css``); the
command line is :mod:`envs.rendering.view`. ``docs/replays.md`` describes the page.
"""

from __future__ import annotations

import base64
import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from envs.rendering import draw
from envs.rendering.replay import MAX_REPLAY_STEPS, MAX_REPLAY_UNITS, Replay, load_replay
from envs.sim import constants as C
from envs.sim.config import BattleConfig
from storage.files import atomic_write_text

VIEWER_DATA_FORMAT = 1
"""Version of the JSON block the page's script reads."""
MELEE_TOLERANCE_M = 0.5
"""Slack in metres on the touching distance when melee is inferred: replay files keep
positions as 32-bit floats and units pushed apart stand exactly touching."""
MELEE_CHUNK_PAIRS = 2**22
"""Enemy pairs times steps the melee inference holds at once: some 100 MB of
temporaries whatever the battle's length."""
MAX_MELEE_PAIR_STEPS = 2**26
"""Most steps times enemy pairs the melee inference examines (each costs 10 to 80 ns, so
a few seconds at most): a million-step duel is 10**6, an 18 against 18 battle of 50,000
steps 1.6 x 10**7."""
MAX_MELEE_ROWS = 2**20
"""Most (step, unit, unit) melee rows a page may carry (each becomes three numbers of
the page's JSON)."""
_FRACTION_TRACKS = ("strength", "morale", "readiness", "volley")
_FLOAT_TRACKS = ("x", "y", "theta")
_BYTE_TRACKS = ("routed", "destroyed", "formation")


def _encode(array: np.ndarray, dtype: str) -> dict[str, str]:
    """A typed array for the page: its dtype code (``f4``, ``u2``, ``u1``, ``i1``) and
    its little-endian bytes in base64."""
    data = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
    return {"dtype": dtype, "data": base64.b64encode(data.tobytes()).decode("ascii")}


def _fraction(array: np.ndarray) -> np.ndarray:
    """Values in [0, 1] as 16-bit fractions (NaN as 0)."""
    clean = np.nan_to_num(np.asarray(array, np.float64), nan=0.0)
    return np.round(np.clip(clean, 0.0, 1.0) * 65535).astype(np.uint16)


def check_replay(replay: Replay) -> None:
    """Raise ``ValueError`` unless ``replay``'s arrays agree with each other.

    Every track must be a (T, U) array with T >= 1 and U >= 1 the length of ``team``;
    ``arm`` (when given) has U arm codes; ``cover`` and ``going`` (when given) have
    ``elevation``'s shape; the map's size is positive; at most
    :data:`~envs.rendering.replay.MAX_REPLAY_UNITS` units and
    :data:`~envs.rendering.replay.MAX_REPLAY_STEPS` steps.
    """
    if not isinstance(replay, Replay):
        raise ValueError(f"replay={type(replay).__name__} is invalid: expected a Replay or "
                         "the path of a replay file")
    if not (np.isfinite(replay.width) and np.isfinite(replay.height)
            and replay.width > 0 and replay.height > 0):
        raise ValueError(f"replay map size {replay.width} x {replay.height} is invalid: "
                         "expected positive metres")
    n_units = len(replay.team)
    missing = [name for name in (*_FLOAT_TRACKS, *_FRACTION_TRACKS, *_BYTE_TRACKS, "target")
               if name not in replay.tracks]
    if missing:
        raise ValueError(f"replay is missing the tracks {missing}")
    shape = np.shape(replay.tracks["x"])
    if len(shape) != 2 or shape[0] < 1 or shape[1] != n_units or n_units < 1:
        raise ValueError(f"replay track x has shape {shape}: expected (steps + 1, "
                         f"{n_units}) for {n_units} units")
    if n_units > MAX_REPLAY_UNITS or shape[0] - 1 > MAX_REPLAY_STEPS:
        raise ValueError(f"replay track x has shape {shape}: expected at most "
                         f"{MAX_REPLAY_UNITS:,} units (MAX_REPLAY_UNITS) and "
                         f"{MAX_REPLAY_STEPS:,} steps (MAX_REPLAY_STEPS)")
    for name, track in replay.tracks.items():
        if np.shape(track) != shape:
            raise ValueError(f"replay track {name} has shape {np.shape(track)}: expected "
                             f"{shape} like track x")
    if replay.arm is not None and np.shape(replay.arm) != (n_units,):
        raise ValueError(f"replay arm has shape {np.shape(replay.arm)}: expected ({n_units},)")
    if replay.arm is not None and not np.isin(replay.arm, range(len(C.ARM_NAMES))).all():
        raise ValueError(f"replay arm holds {sorted(set(np.asarray(replay.arm).tolist()))}: "
                         f"expected arm codes 0 to {len(C.ARM_NAMES) - 1} ({C.ARM_NAMES})")
    grid = np.shape(replay.elevation)
    if len(grid) != 2 or min(grid) < 1:
        raise ValueError(f"replay elevation has shape {grid}: expected a (rows, cols) grid")
    for name in ("cover", "going"):
        value = getattr(replay, name)
        if value is not None and np.shape(value) != grid:
            raise ValueError(f"replay {name} has shape {np.shape(value)}: expected {grid} "
                             "like the elevation")


def melee_pairs(replay: Replay) -> np.ndarray:
    """The melee of every step, as inferred from the tracks (module docstring).

    Returns:
        (N, 3) int32 rows ``(step, i, j)`` with ``i < j`` enemies fighting hand to hand
        during ``step`` (steps from 1; step 0 is the deployment), by step, then ``i``,
        then ``j``.

    Raises:
        ValueError: for a replay of more than
            :data:`~envs.rendering.replay.MAX_REPLAY_UNITS` units or
            :data:`MAX_MELEE_PAIR_STEPS` steps times enemy pairs, or whose melee would
            list more than :data:`MAX_MELEE_ROWS` rows.
    """
    tracks = replay.tracks
    n_units = len(replay.team)
    if n_units > MAX_REPLAY_UNITS:
        raise ValueError(f"replay holds {n_units:,} units: more than the "
                         f"{MAX_REPLAY_UNITS:,} allowed (MAX_REPLAY_UNITS)")
    arm = np.zeros(n_units, np.int64) if replay.arm is None else replay.arm
    reach = BattleConfig().melee_distance(arm) + MELEE_TOLERANCE_M
    team = np.asarray(replay.team)
    # Enemies are units of two different teams: one block of pairs per two teams.
    codes = np.unique(team)
    blocks = [(np.flatnonzero(team == a), np.flatnonzero(team == b))
              for n, a in enumerate(codes) for b in codes[n + 1:]]
    n_pairs = sum(len(a) * len(b) for a, b in blocks)
    n_steps = len(tracks["x"]) - 1
    if n_steps * n_pairs > MAX_MELEE_PAIR_STEPS:
        raise ValueError(f"replay of {n_steps:,} steps and {n_pairs:,} enemy pairs needs "
                         f"{n_steps * n_pairs:,} pair-steps of melee inference: more than "
                         f"the {MAX_MELEE_PAIR_STEPS:,} allowed (MAX_MELEE_PAIR_STEPS)")
    x = np.asarray(tracks["x"], np.float32)
    y = np.asarray(tracks["y"], np.float32)
    out = np.asarray(tracks["routed"], bool) | np.asarray(tracks["destroyed"], bool)
    active = ~out[:-1]  # in the fight at the start of steps 1..T
    steps, firsts, seconds, rows = [], [], [], 0
    for a, b in blocks:
        block_reach = reach[np.ix_(a, b)]
        # A few steps at a time: (steps, units, units) arrays of a whole long battle
        # of many units would take gigabytes.
        chunk = max(1, MELEE_CHUNK_PAIRS // (len(a) * len(b)))
        for start in range(0, n_steps, chunk):
            stop = min(start + chunk, n_steps)
            xs, ys, act = x[1 + start:1 + stop], y[1 + start:1 + stop], active[start:stop]
            # The distance from a to b is the distance from b to a to the last bit
            # (a float difference only changes sign), and the reach is symmetric.
            dist = np.hypot(xs[:, a, None] - xs[:, None, b], ys[:, a, None] - ys[:, None, b])
            step, p, q = np.nonzero(act[:, a, None] & act[:, None, b] & (dist <= block_reach))
            rows += len(step)
            if rows > MAX_MELEE_ROWS:
                raise ValueError(f"replay's melee lists more than {MAX_MELEE_ROWS:,} (step, "
                                 f"unit, unit) rows by step {start + int(step[-1]) + 1:,} of "
                                 f"{n_steps:,}: more than allowed (MAX_MELEE_ROWS)")
            steps.append(step + 1 + start)
            firsts.append(np.minimum(a[p], b[q]))
            seconds.append(np.maximum(a[p], b[q]))
    if not steps:
        return np.zeros((0, 3), np.int32)
    step, i, j = np.concatenate(steps), np.concatenate(firsts), np.concatenate(seconds)
    order = np.lexsort((j, i, step))
    return np.stack([step[order], i[order], j[order]], axis=1).astype(np.int32)


def _json_safe(value: Any) -> Any:
    """``value`` with anything JSON cannot hold (NumPy scalars, paths...) as text."""
    return json.loads(json.dumps(value, default=str))


def viewer_payload(replay: Replay) -> dict[str, Any]:
    """The JSON block the page reads: the map, the units, their tracks and the drawing
    conventions of :mod:`envs.rendering.draw` (colours, shapes)."""
    check_replay(replay)
    tracks = replay.tracks
    n_steps_1, n_units = np.shape(tracks["x"])
    elevation = np.nan_to_num(np.asarray(replay.elevation, np.float64))
    cover = np.zeros_like(elevation) if replay.cover is None else np.asarray(replay.cover)
    going = np.ones_like(elevation) if replay.going is None else np.asarray(replay.going)
    arm = np.zeros(n_units, np.int64) if replay.arm is None else np.asarray(replay.arm)
    encoded: dict[str, dict[str, str]] = {}
    for name in _FLOAT_TRACKS:
        encoded[name] = _encode(np.nan_to_num(np.asarray(tracks[name], np.float64)), "f4")
    for name in _FRACTION_TRACKS:
        encoded[name] = _encode(_fraction(tracks[name]), "u2")
    for name in _BYTE_TRACKS:
        encoded[name] = _encode(np.asarray(tracks[name]).astype(np.uint8), "u1")
    encoded["target"] = _encode(np.asarray(tracks["target"]).astype(np.int8), "i1")
    return {
        "format": VIEWER_DATA_FORMAT,
        "width": float(replay.width),
        "height": float(replay.height),
        "nSteps": int(n_steps_1 - 1),
        "nUnits": int(n_units),
        "team": np.asarray(replay.team).astype(int).tolist(),
        "arm": arm.astype(int).tolist(),
        "grid": {
            "rows": int(elevation.shape[0]), "cols": int(elevation.shape[1]),
            "elevation": _encode(elevation, "f4"), "cover": _encode(cover, "f4"),
            "going": _encode(going, "f4"),
        },
        "tracks": encoded,
        "melee": melee_pairs(replay).ravel().tolist(),
        "metadata": _json_safe(replay.metadata),
        "unitScale": max(1.0, float(replay.width) / 1000.0),
        "names": {"arms": list(C.ARM_NAMES), "formations": list(C.FORMATION_NAMES),
                  "teams": ["Blue", "Red"]},
        "style": {
            "team": [list(c) for c in draw.TEAM_COLOURS],
            "routed": [list(c) for c in draw.ROUTED_COLOURS],
            "destroyed": list(draw.DESTROYED_COLOUR),
            "fire": list(draw.FIRE_COLOUR),
            "marking": list(draw.MARKING),
            "lowGround": draw.LOW_GROUND.tolist(), "highGround": draw.HIGH_GROUND.tolist(),
            "woods": draw.WOODS.tolist(), "water": draw.WATER.tolist(),
            "road": draw.ROAD.tolist(),
            "shapes": [[arm_, formation, front, depth]
                       for (arm_, formation), (front, depth) in draw.SHAPES.items()],
            "defaultShape": [draw.FRONTAGE_M, draw.DEPTH_M],
            "hollow": [[C.INFANTRY, C.SQUARE], [C.ARTILLERY, C.LIMBERED]],
            "arms": {"infantry": C.INFANTRY, "cavalry": C.CAVALRY,
                     "artillery": C.ARTILLERY},
        },
    }


def _asset(name: str) -> str:
    return resources.files("envs.rendering").joinpath(name).read_text(encoding="utf-8")


def _title(replay: Replay) -> str:
    notes = replay.metadata
    if "blue" in notes and "red" in notes:
        return f"{notes['blue']} (Blue) against {notes['red']} (Red)"
    if "scenario" in notes:
        return str(notes["scenario"]).replace("_", " ")
    return "Battle replay"


def _inline_json(text: str) -> str:
    """JSON ``text`` safe inside a ``<script>`` element and still the same JSON: ``<``,
    ``>`` and ``&`` (found only inside its strings) become ``\\u`` escapes, so no
    ``</script>`` or ``<!--`` in a name or a note can end or bend the element."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def viewer_html(replay: Replay, title: str | None = None) -> str:
    """The viewer page for ``replay`` as one HTML document (nothing loaded from outside).

    Args:
        replay: the battle to play.
        title: the page's heading; by default who fought whom, or the scenario.
    """
    payload = json.dumps(viewer_payload(replay), separators=(",", ":"), allow_nan=False)
    heading = html.escape(title if title is not None else _title(replay))
    script = _asset("battle_draw.js") + _asset("viewer.js")
    if "</script" in script.lower():
        raise RuntimeError("battle_draw.js and viewer.js must not contain '</script'")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:\">\n"
        f"<title>{heading}</title>\n<style>\n{_asset('viewer.css')}</style>\n</head>\n<body>\n"
        f"<header><h1 id=\"title\">{heading}</h1><p id=\"notes\"></p></header>\n"
        "<main>\n"
        "<div id=\"stage\"><canvas id=\"map\" aria-label=\"battle map\"></canvas>"
        "<div id=\"tooltip\" hidden></div></div>\n"
        "<div id=\"controls\">\n"
        "<button id=\"play\" type=\"button\" title=\"play or pause (space)\">Play</button>\n"
        "<input id=\"scrubber\" type=\"range\" min=\"0\" max=\"0\" step=\"1\" value=\"0\" "
        "aria-label=\"step\">\n"
        "<span id=\"counter\">step 0 / 0</span>\n"
        "<label>speed <select id=\"speed\">"
        "<option value=\"5\">5 steps/s</option><option value=\"10\">10 steps/s</option>"
        "<option value=\"25\">25 steps/s</option>"
        "<option value=\"50\" selected>50 steps/s</option>"
        "<option value=\"100\">100 steps/s</option><option value=\"200\">200 steps/s</option>"
        "</select></label>\n</div>\n"
        "<canvas id=\"chart\" aria-label=\"strength and morale of each side\"></canvas>\n"
        "<div id=\"status\"></div>\n"
        "<ul id=\"legend\"></ul>\n"
        "</main>\n"
        f"<script id=\"replay-data\" type=\"application/json\">{_inline_json(payload)}"
        "</script>\n"
        f"<script>\n{script}</script>\n</body>\n</html>\n"
    )


def write_replay_html(replay_or_path: Replay | str | Path, out_path: str | Path, *,
                      title: str | None = None) -> Path:
    """Write the viewer page of a battle to ``out_path`` (atomically); returns the path.

    Args:
        replay_or_path: a :class:`~envs.rendering.replay.Replay`, or the path of a replay
            file written by :func:`~envs.rendering.replay.save_replay`.
        out_path: the HTML file to write (its folder is created).
        title: the page's heading; by default who fought whom, or the scenario.

    Raises:
        FileNotFoundError: if ``replay_or_path`` is a path that does not exist.
        ValueError: if the file is not a replay, or the replay's arrays disagree.
    """
    if isinstance(replay_or_path, (str, Path)):
        replay = load_replay(replay_or_path)
    elif isinstance(replay_or_path, Replay):
        replay = replay_or_path
    else:
        raise ValueError(f"replay_or_path={type(replay_or_path).__name__} is invalid: "
                         "expected a Replay or the path of a replay file")
    out = Path(out_path)
    if out.is_dir():
        raise ValueError(f"out_path={out} is a folder: expected the path of an HTML file")
    atomic_write_text(out, viewer_html(replay, title))
    return out


__all__ = ["MAX_MELEE_PAIR_STEPS", "MAX_MELEE_ROWS", "MELEE_CHUNK_PAIRS", "MELEE_TOLERANCE_M",
           "VIEWER_DATA_FORMAT", "check_replay", "melee_pairs", "viewer_html", "viewer_payload",
           "write_replay_html"]
