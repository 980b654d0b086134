"""Replays: record, save, load and animate a battle."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from envs.battalion_env import BattalionEnv
from envs.rendering import load_replay, record_episode, render_gif, save_replay
from envs.rendering.replay import ReplayRecorder
from envs.sim import constants as C
from envs.sim import engine
from envs.sim.config import BattleConfig
from envs.sim.state import BattleState


def advance_and_fire(obs):
    return np.array([1.0, 0.0, 1.0], np.float32)


@pytest.fixture(scope="module")
def replay():
    return record_episode(BattalionEnv(max_steps=120), advance_and_fire, seed=3,
                          metadata={"blue": "advance_and_fire", "red": "scripted_l5"})


def test_recording_matches_the_played_battle(replay):
    env = BattalionEnv(max_steps=120)
    env.reset(seed=3)
    xs = [env.battle_state.x[0].copy()]
    while True:
        _, _, terminated, truncated, _ = env.step(advance_and_fire(None))
        xs.append(env.battle_state.x[0].copy())
        if terminated or truncated:
            break
    assert replay.n_steps == len(xs) - 1 == replay.metadata["steps"]
    assert np.array_equal(replay.tracks["x"], np.array(xs))
    assert replay.metadata["outcome"] in ("blue", "red", "draw")
    assert replay.metadata["red"] == "scripted_l5"


def test_save_and_load_round_trip(replay, tmp_path):
    path = save_replay(replay, tmp_path / "battle.npz")
    loaded = load_replay(path)
    assert loaded.metadata == replay.metadata and loaded.n_steps == replay.n_steps
    assert np.allclose(loaded.tracks["x"], replay.tracks["x"])
    assert np.allclose(loaded.tracks["strength"], replay.tracks["strength"], atol=1e-3)
    assert np.array_equal(loaded.tracks["routed"], replay.tracks["routed"])
    assert path.stat().st_size < 60_000
    assert [p.name for p in tmp_path.iterdir()] == ["battle.npz"]  # no temp files left


def test_gif_animates_the_battle(replay, tmp_path):
    path = render_gif(replay, tmp_path / "battle.gif", frame_stride=4, size=200)
    with Image.open(path) as gif:
        assert gif.format == "GIF" and gif.size == (200, 216)
        assert gif.n_frames == len(range(0, replay.n_steps + 1, 4)) + (
            replay.n_steps % 4 != 0)
        gif.seek(0)
        first = np.asarray(gif.convert("RGB")).copy()
        gif.seek(gif.n_frames - 1)
        last = np.asarray(gif.convert("RGB"))
    assert not np.array_equal(first, last)  # something moved


def test_loading_rejects_missing_and_foreign_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.npz"):
        load_replay(tmp_path / "nope.npz")
    np.savez(tmp_path / "other.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a replay"):
        load_replay(tmp_path / "other.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.npz"):
        load_replay(tmp_path / "junk.npz")


def test_a_replay_of_format_1_loads_as_infantry_in_line_on_open_going(replay, tmp_path):
    path = save_replay(replay, tmp_path / "new.npz")
    with np.load(path) as data:
        old = {k: data[k] for k in data.files if k not in ("formation", "arm", "going")}
    old["version"] = np.int32(1)
    np.savez_compressed(tmp_path / "old.npz", **old)
    loaded = load_replay(tmp_path / "old.npz")
    assert (loaded.arm == 0).all() and (loaded.going == 1).all()
    assert loaded.tracks["formation"].shape == loaded.tracks["x"].shape
    assert (loaded.tracks["formation"] == 0).all()
    assert np.allclose(loaded.tracks["x"], replay.tracks["x"])


def _forge(path, source, **members):
    """A copy of the replay ``source`` whose named members are replaced by raw bytes."""
    import zipfile

    with zipfile.ZipFile(source) as old, zipfile.ZipFile(path, "w") as new:
        for item in old.infolist():
            name = item.filename[:-4]
            new.writestr(item.filename, members.get(name, old.read(item)))
    return path


def _npy(shape, descr="<f4", data=b""):
    import io

    from numpy.lib import format as npy_format

    buffer = io.BytesIO()
    npy_format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False,
                                               "shape": shape})
    return buffer.getvalue() + data


def test_loading_checks_declared_sizes_before_reading(replay, tmp_path, monkeypatch):
    import envs.rendering.replay as module

    path = save_replay(replay, tmp_path / "battle.npz")
    forged = _forge(tmp_path / "forged.npz", path, x=_npy((400_000, 2_000), data=bytes(64)))
    with pytest.raises(ValueError, match=r"forged\.npz: array 'x' declares 3,200,000,000 "
                                         "bytes"):
        load_replay(forged)
    pickled = _forge(tmp_path / "pickled.npz", path, team=_npy((2,), descr="|O"))
    with pytest.raises(ValueError, match="array 'team' has dtype object"):
        load_replay(pickled)
    ragged = _forge(tmp_path / "ragged.npz", path, y=_npy((3, 2), data=bytes(24)))
    with pytest.raises(ValueError, match=r"array 'y' has shape \(3, 2\)"):
        load_replay(ragged)
    crowd = _forge(tmp_path / "crowd.npz", path,
                   team=_npy((5_000,), descr="|i1", data=bytes(5_000)))
    with pytest.raises(ValueError, match="5,000 units.*MAX_REPLAY_UNITS"):
        load_replay(crowd)
    monkeypatch.setattr(module, "MAX_REPLAY_BYTES", 1_000)
    with pytest.raises(ValueError, match="battle.npz would expand to .* more than the 1,000"):
        load_replay(path)


@pytest.mark.parametrize("formation, shown", [(C.LIMBERED, False), (C.LINE, True)])
def test_only_fire_that_can_hurt_is_recorded(formation, shown):
    # A battery 100 m west of a battalion, facing it, ordered to fire: limbered, its
    # order spends readiness in the engine but hits nothing, so no fire is recorded.
    config = BattleConfig()
    state = BattleState.empty(1, np.array([0, 1]), 1, 1, arm=np.array([C.ARTILLERY,
                                                                      C.INFANTRY]))
    state.x[:] = [[400.0, 500.0]]
    state.y[:] = [[500.0, 500.0]]
    state.theta[:] = [[0.0, np.pi]]
    state.strength[:] = state.morale[:] = state.readiness[:] = 1.0
    state.formation[:] = [[formation, C.LINE]]
    recorder = ReplayRecorder(state, 0, config.map_width, config.map_height)
    orders = np.array([[[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]], np.float32)
    after, events = engine.step(state, orders, config)
    recorder.record(after, events)
    assert events.volley[0, 0] > 0  # the order was given either way
    track = recorder.finish().tracks
    assert (track["volley"][1, 0] > 0) == shown
    assert track["target"][1, 0] == (1 if shown else -1)
    assert (after.strength[0, 1] < 1.0) == shown
