"""Replays: record a battle step by step, save it compactly, play it back as a GIF.

A replay file is a compressed NumPy archive (``.npz``) holding the map (elevation,
cover and going) and each unit's side and arm once and, for every step, each unit's
position, heading, strength, morale, readiness, status, fire and formation: a
500-step 1v1 battle takes a few tens of kilobytes. Files of format 1 (before arms and
formations) still load, as infantry in line on open going.

A replay file may come from elsewhere, so :func:`load_replay` checks the sizes it
declares before reading anything: the zip's expanded size (:data:`MAX_REPLAY_BYTES`),
and each array's shape and type from its header (at most :data:`MAX_REPLAY_UNITS`
units and :data:`MAX_REPLAY_STEPS` steps, arrays no larger than the zip entry that
holds them, numbers only); nothing is unpickled.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npy_format
from PIL import Image

from envs.rendering.draw import Frame, delivered_fire, draw_frame, palette_for, terrain_image
from envs.sim import constants as C
from envs.sim.engine import StepEvents
from envs.sim.state import BattleState
from storage.files import atomic_write_bytes, check_archive, loads_json

REPLAY_FORMAT_VERSION = 2
_TRACKS = ("x", "y", "theta", "strength", "morale", "readiness", "routed", "destroyed",
           "volley", "target", "formation")
_STATE_TRACKS = ("x", "y", "theta", "strength", "morale", "readiness", "routed",
                 "destroyed", "formation")
"""The tracks read from the state (the others come from the step's events)."""
MAX_REPLAY_BYTES = 512 * 2**20
"""Most bytes a replay file may expand to (the zip's declared sizes): a 500-step duel
takes some 100 kB, a million-step one some 60 MB."""
MAX_REPLAY_UNITS = 2048
"""Most units a replay may hold (the viewer's melee inference is quadratic in them)."""
MAX_REPLAY_STEPS = C.MAX_STEPS_LIMIT
"""Most steps a replay may hold: the longest battle allowed."""
_SCALARS = ("version", "width", "height")
_GRIDS = ("elevation", "cover", "going")
_UNIT_ARRAYS = ("team", "arm")


@dataclass(frozen=True, eq=False)
class Replay:
    """A recorded battle. Tracks are (T, U) arrays, one row per step (row 0 is the start)."""

    width: float
    height: float
    team: np.ndarray
    elevation: np.ndarray
    cover: np.ndarray
    tracks: dict[str, np.ndarray]
    metadata: dict[str, Any] = field(default_factory=dict)
    arm: np.ndarray | None = None
    """(U,) each unit's arm code; None for a replay of infantry only."""
    going: np.ndarray | None = None
    """(rows, cols) the going of the map; None for open going everywhere."""

    @property
    def n_steps(self) -> int:
        """Steps played (the number of frames minus the starting one)."""
        return len(self.tracks["x"]) - 1

    def frame(self, t: int) -> Frame:
        """The battle after step ``t`` (0 is the deployment)."""
        tr = self.tracks
        return Frame(x=tr["x"][t], y=tr["y"][t], theta=tr["theta"][t],
                     strength=tr["strength"][t], morale=tr["morale"][t],
                     routed=tr["routed"][t], destroyed=tr["destroyed"][t], team=self.team,
                     step=t, volley=tr["volley"][t], target=tr["target"][t], arm=self.arm,
                     formation=tr["formation"][t])


class ReplayRecorder:
    """Records one battle of a batch, step by step.

    Args:
        state: the batch just after deployment.
        battle: which battle of the batch to record.
        width: the map's width in metres.
        height: the map's height in metres.
        metadata: JSON-serialisable notes (who commanded each side, the seed...).
    """

    def __init__(self, state: BattleState, battle: int, width: float, height: float,
                 metadata: dict[str, Any] | None = None) -> None:
        if not 0 <= battle < state.batch_size:
            raise IndexError(f"battle={battle} is invalid: expected an index in "
                             f"[0, {state.batch_size})")
        self.battle = battle
        self.width, self.height = float(width), float(height)
        self.team = state.team.copy()
        self.elevation = state.elevation[battle].copy()
        self.cover = state.cover[battle].copy()
        self.arm = state.arm.copy()
        self.going = state.going[battle].copy()
        self.metadata = dict(metadata or {})
        json.dumps(self.metadata)  # fail now, not at save time
        self._rows: dict[str, list[np.ndarray]] = {name: [] for name in _TRACKS}
        n_units = state.n_units
        self._append(state, np.zeros(n_units, np.float32), np.full(n_units, -1, np.int8))

    def record(self, state: BattleState, events: StepEvents) -> None:
        """Add the state after a step and that step's fire (the fire that removed
        strength: :func:`~envs.rendering.draw.delivered_fire`)."""
        self._append(state, *delivered_fire(events, self.battle))

    def _append(self, state: BattleState, volley: np.ndarray, target: np.ndarray) -> None:
        b = self.battle
        for name in _STATE_TRACKS:
            self._rows[name].append(np.array(getattr(state, name)[b]))
        self._rows["volley"].append(np.asarray(volley, np.float32).copy())
        self._rows["target"].append(np.asarray(target, np.int8).copy())

    @property
    def n_steps(self) -> int:
        """Steps recorded after the deployment."""
        return len(self._rows["x"]) - 1

    def finish(self, **metadata: Any) -> Replay:
        """The replay so far, with ``metadata`` added to the notes."""
        notes = {**self.metadata, **metadata}
        json.dumps(notes)
        tracks = {name: np.stack(rows) for name, rows in self._rows.items()}
        return Replay(self.width, self.height, self.team, self.elevation, self.cover, tracks,
                      notes, self.arm, self.going)


def record_episode(env, policy=None, *, seed: int | None = None,
                   deterministic: bool = True, metadata: dict[str, Any] | None = None) -> Replay:
    """Play one battle of a :class:`~envs.battalion_env.BattalionEnv` and record it.

    Args:
        env: the env to play in (it is reset).
        policy: commands Blue: an object with ``predict(obs, deterministic)`` (an
            SB3 model), a callable ``obs -> action``, or None to hold position.
        seed: seed of the battle.
        deterministic: passed to ``predict``.
        metadata: notes stored with the replay; the outcome is added.
    """
    obs, _ = env.reset(seed=seed)
    recorder = ReplayRecorder(env.battle_state, 0, env.map_width, env.map_height,
                              {"seed": seed, **(metadata or {})})
    while True:
        if policy is None:
            action = np.zeros(3, np.float32)
        elif hasattr(policy, "predict"):
            action = policy.predict(obs, deterministic=deterministic)[0]
        else:
            action = policy(obs)
        obs, _, terminated, truncated, info = env.step(action)
        recorder.record(env.battle_state, env.last_events)
        if terminated or truncated:
            break
    blue_out = info["blue_routed"] or bool(env.battle_state.destroyed[0, 0])
    red_out = info["red_routed"] or bool(env.battle_state.destroyed[0, 1])
    outcome = "blue" if red_out and not blue_out else "red" if blue_out and not red_out \
        else "draw"
    return recorder.finish(outcome=outcome, steps=int(info["step_count"]))


def record_echelon_episode(env, policy=None, *, seed: int | None = None,
                           deterministic: bool = True,
                           metadata: dict[str, Any] | None = None) -> Replay:
    """Play one battle of a :class:`~envs.echelons.brigade_env.BrigadeEnv` or
    :class:`~envs.echelons.division_env.DivisionEnv` and record every battle step of it (each
    command step lasts ``temporal_ratio`` of them).

    Args:
        env: the env to play in (it is reset).
        policy: the commander: an object with ``predict(obs, deterministic)`` (an SB3
            model), a callable ``obs -> action``, or None for the first choice of every
            commanded unit each step.
        seed: seed of the battle.
        deterministic: passed to ``predict``.
        metadata: notes stored with the replay; the winner and the step counts are added.

    Raises:
        TypeError: for an env that is not an echelon env.
    """
    batch = getattr(env, "batch", None)
    battles = getattr(getattr(batch, "brigades", batch), "battles", None)
    if battles is None or not hasattr(battles, "step_observers"):
        raise TypeError(f"env={env!r} is invalid: expected a BrigadeEnv or a DivisionEnv")
    obs, _ = env.reset(seed=seed)
    config = battles.config
    recorder = ReplayRecorder(battles.state, 0, config.map_width, config.map_height,
                              {"seed": seed, **(metadata or {})})

    def watch(stepped) -> None:
        recorder.record(stepped.state, stepped.last_events)

    battles.step_observers.append(watch)
    try:
        info, steps = {}, 0
        while "winner" not in info:
            if policy is None:
                action = np.zeros(env.action_space.shape, np.int64)
            elif hasattr(policy, "predict"):
                action = policy.predict(obs, deterministic=deterministic)[0]
            else:
                action = policy(obs)
            obs, _, _, _, info = env.step(action)
            steps += 1
    finally:
        battles.step_observers.remove(watch)
    winner = info["winner"]
    return recorder.finish(outcome=winner, steps=recorder.n_steps, command_steps=steps)


def save_replay(replay: Replay, path: str | Path) -> Path:
    """Write ``replay`` to ``path`` (``.npz``) atomically; returns the path."""
    path = Path(path)
    buffer = io.BytesIO()
    floats = {name: replay.tracks[name].astype(np.float16 if name in (
        "strength", "morale", "volley") else np.float32)
        for name in ("x", "y", "theta", "strength", "morale", "readiness", "volley")}
    np.savez_compressed(
        buffer, version=np.int32(REPLAY_FORMAT_VERSION), width=np.float64(replay.width),
        height=np.float64(replay.height), team=replay.team, elevation=replay.elevation,
        cover=replay.cover, routed=replay.tracks["routed"],
        destroyed=replay.tracks["destroyed"], target=replay.tracks["target"],
        formation=replay.tracks["formation"].astype(np.int8),
        arm=np.zeros(len(replay.team), np.int8) if replay.arm is None else replay.arm,
        going=np.ones_like(replay.elevation) if replay.going is None else replay.going,
        metadata=np.array(json.dumps(replay.metadata)), **floats)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _declared_arrays(path: Path, names: set[str]) -> None:
    """Check the arrays ``names`` of the replay archive ``path`` from what their headers
    and the zip declare, reading no array data (module docstring).

    Raises:
        ValueError: naming the file, the array, the value and the limit.
    """
    shapes: dict[str, tuple[int, ...]] = {}
    with zipfile.ZipFile(path) as archive:
        entries = {info.filename: info for info in archive.infolist()}
        for name in sorted(names):
            info = entries[f"{name}.npy"]
            where = f"replay file {path}: array {name!r}"
            try:
                with archive.open(info) as member:
                    version = npy_format.read_magic(member)
                    if version not in ((1, 0), (2, 0)):
                        raise ValueError(f"{where} has .npy format {version}: expected "
                                         "(1, 0) or (2, 0)")
                    read_header = (npy_format.read_array_header_1_0 if version == (1, 0)
                                   else npy_format.read_array_header_2_0)
                    shape, _, dtype = read_header(member)
            except (OSError, EOFError, ValueError, SyntaxError, zipfile.BadZipFile) as error:
                raise ValueError(f"{where} has no readable .npy header: {error}") from None
            wanted = "U" if name == "metadata" else "biuf"
            if dtype.hasobject or dtype.kind not in wanted:
                raise ValueError(f"{where} has dtype {dtype}: expected "
                                 + ("text" if name == "metadata" else "numbers"))
            rank = 0 if name in (*_SCALARS, "metadata") else 1 if name in _UNIT_ARRAYS \
                else 2
            if len(shape) != rank:
                raise ValueError(f"{where} has shape {shape}: expected {rank} dimensions")
            nbytes = dtype.itemsize * int(np.prod(shape, dtype=object))
            if nbytes > info.file_size:
                raise ValueError(f"{where} declares {nbytes:,} bytes of data in an entry of "
                                 f"{info.file_size:,}: the file is corrupt or forged")
            shapes[name] = shape
    units = shapes["team"][0]
    if not 1 <= units <= MAX_REPLAY_UNITS:
        raise ValueError(f"replay file {path}: array 'team' holds {units:,} units: expected "
                         f"1 to {MAX_REPLAY_UNITS:,} (MAX_REPLAY_UNITS)")
    steps = shapes["x"][0] - 1
    if not 0 <= steps <= MAX_REPLAY_STEPS:
        raise ValueError(f"replay file {path}: array 'x' holds {steps:,} steps: expected 0 "
                         f"to {MAX_REPLAY_STEPS:,} (MAX_REPLAY_STEPS)")
    for name in names & {*_TRACKS, *_UNIT_ARRAYS, *_GRIDS}:
        expected = (shapes["x"] if name in _TRACKS else (units,) if name in _UNIT_ARRAYS
                    else shapes["elevation"])
        if shapes[name] != expected:
            raise ValueError(f"replay file {path}: array {name!r} has shape {shapes[name]}: "
                             f"expected {expected}")


def load_replay(path: str | Path) -> Replay:
    """Read a replay written by :func:`save_replay`.

    Sizes are checked before anything is read (module docstring) and nothing is
    unpickled.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if the file is not a replay of a supported version, or declares
            more than :data:`MAX_REPLAY_BYTES`, :data:`MAX_REPLAY_UNITS` or
            :data:`MAX_REPLAY_STEPS` (the message names the file, the array, the value
            and the limit).
    """
    path = Path(path)
    check_archive(path, "replay file", MAX_REPLAY_BYTES)
    with zipfile.ZipFile(path) as archive:
        stored = {name[:-4] for name in archive.namelist() if name.endswith(".npy")}
    missing = {"version", "width", "height", "team", "elevation", "cover", "metadata",
               *_TRACKS[:-1]} - stored
    if missing:
        raise ValueError(f"{path} is not a replay: missing {sorted(missing)}")
    names = stored & {*_SCALARS, *_GRIDS, *_UNIT_ARRAYS, *_TRACKS, "metadata"}
    _declared_arrays(path, names)
    try:
        with np.load(path, allow_pickle=False) as data:
            contents = {name: data[name] for name in sorted(names)}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError(f"{path} is not a readable replay archive: {error}") from error
    version = int(contents["version"])
    if version not in (1, REPLAY_FORMAT_VERSION):
        raise ValueError(f"{path} has replay format {version}: expected 1 or "
                         f"{REPLAY_FORMAT_VERSION}")
    if version == 1:  # before arms and formations: infantry in line on open going
        contents["formation"] = np.zeros(contents["routed"].shape, np.int8)
        contents["arm"] = np.zeros(len(contents["team"]), np.int8)
        contents["going"] = np.ones_like(contents["elevation"])
    missing = {"formation", "arm", "going"} - set(contents)
    if missing:
        raise ValueError(f"{path} is not a replay of format {version}: missing "
                         f"{sorted(missing)}")
    tracks = {name: contents[name].astype(np.float32) if contents[name].dtype.kind == "f"
              else contents[name] for name in _TRACKS}
    metadata = loads_json(str(contents["metadata"]), f"replay file {path}: metadata")
    if not isinstance(metadata, dict):
        raise ValueError(f"replay file {path}: metadata is {type(metadata).__name__}: "
                         "expected a JSON object")
    return Replay(float(contents["width"]), float(contents["height"]), contents["team"],
                  contents["elevation"], contents["cover"], tracks, metadata,
                  contents["arm"], contents["going"])


def render_gif(replay: Replay, path: str | Path, *, size: int = 480, fps: int = 25,
               frame_stride: int = 2, unit_scale: float | None = None) -> Path:
    """Animate ``replay`` to a GIF at ``path`` (written atomically); returns the path.

    Args:
        size: image width in pixels (height follows the map's aspect ratio).
        fps: frames per second of the animation.
        frame_stride: draw every n-th step (the last step is always drawn).
        unit_scale: how much larger than a battalion units are drawn; by default one
            per kilometre of map width (at least 1), so that a whole battlefield's
            brigades stay visible.
    """
    if size < 64 or fps < 1 or frame_stride < 1:
        raise ValueError(f"size={size}, fps={fps}, frame_stride={frame_stride} are invalid: "
                         "expected size >= 64, fps >= 1 and frame_stride >= 1")
    height = max(1, int(round(size * replay.height / replay.width)))
    background = terrain_image(replay.elevation, replay.cover, (size, height), replay.going)
    steps = list(range(0, replay.n_steps + 1, frame_stride))
    if steps[-1] != replay.n_steps:
        steps.append(replay.n_steps)
    palette = palette_for(background)
    scale = max(1.0, replay.width / 1000.0) if unit_scale is None else unit_scale
    frames = [Image.fromarray(draw_frame(background, replay.frame(t), replay.width,
                                         replay.height, scale)).quantize(
                  palette=palette, dither=Image.Dither.NONE) for t in steps]
    # Hold the final frame so the outcome can be read.
    durations = [int(1000 / fps)] * (len(frames) - 1) + [2000]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:],
                   duration=durations, loop=0, optimize=False)
    path = Path(path)
    atomic_write_bytes(path, buffer.getvalue())
    return path
