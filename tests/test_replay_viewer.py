"""The replay viewer: a self-contained HTML page that plays a recorded battle in a browser.

The browser tests drive Debian's chromium (``/usr/bin/chromium``, or the path in
``WARGAMES_CHROMIUM``; ``make test`` installs it) with Playwright. Without them the
browser tests skip, except under ``CI=true``, where they fail: CI must run them.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from data.historical import BATTLES_JSON
from envs.battalion_env import BattalionEnv
from envs.rendering import Replay, record_episode, save_replay, write_replay_html
from envs.rendering.draw import FIRE_COLOUR, ROUTED_COLOURS, TEAM_COLOURS
from envs.rendering.view import main as view_main
from envs.rendering.viewer import check_replay, melee_pairs, viewer_payload
from envs.scenario import load_scenarios
from envs.scenario_battle import play_scenario
from envs.sim import constants as C

CHROMIUM = Path(os.environ.get("WARGAMES_CHROMIUM", "/usr/bin/chromium"))
"""The browser the tests drive (Playwright's own download cannot work offline)."""


def advance_and_fire(obs):
    return np.array([1.0, 0.0, 1.0], np.float32)


@pytest.fixture(scope="module")
def replay() -> Replay:
    return record_episode(BattalionEnv(max_steps=120), advance_and_fire, seed=3,
                          metadata={"blue": "advance_and_fire", "red": "scripted_l5"})


@pytest.fixture(scope="module")
def page_path(replay, tmp_path_factory) -> Path:
    return write_replay_html(replay, tmp_path_factory.mktemp("viewer") / "battle.html")


# --- the page, without a browser --------------------------------------------------------

def test_page_is_one_self_contained_file(replay, tmp_path):
    path = write_replay_html(replay, tmp_path / "out" / "battle.html")
    assert [p.name for p in path.parent.iterdir()] == ["battle.html"]  # no temp files left
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    # Nothing is fetched: no external scripts, styles, images or links.
    assert not re.search(r"\b(src|href)\s*=", text)
    assert "<link" not in text and "http://" not in text and "https://" not in text
    assert "default-src 'none'" in text  # the page may not fetch anything either
    assert '<input id="scrubber" type="range"' in text
    assert text.count("</script>") == 2  # the data block and the script, both closed


def test_data_block_cannot_end_the_script_early(replay, tmp_path):
    notes = {"blue": "</script><script>alert(1)", "red": "a <!-- note & more"}
    hostile = dataclasses.replace(replay, metadata=notes)
    text = write_replay_html(hostile, tmp_path / "battle.html").read_text(encoding="utf-8")
    assert text.count("</script>") == 2 and "<!-- note" not in text
    block = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>',
                      text, re.S).group(1)
    assert json.loads(block)["metadata"] == notes  # the escapes are still the same JSON


def test_payload_round_trips_the_tracks(replay):
    payload = viewer_payload(replay)
    assert payload["nSteps"] == replay.n_steps and payload["nUnits"] == 2
    x = np.frombuffer(base64.b64decode(payload["tracks"]["x"]["data"]), "<f4")
    assert np.allclose(x.reshape(-1, 2), replay.tracks["x"])
    morale = np.frombuffer(base64.b64decode(payload["tracks"]["morale"]["data"]), "<u2")
    assert np.allclose(morale.reshape(-1, 2) / 65535, replay.tracks["morale"], atol=1e-4)


def test_missing_replay_file_is_named(tmp_path, capsys):
    missing = tmp_path / "nowhere" / "battle.npz"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        write_replay_html(missing, tmp_path / "battle.html")
    assert view_main([str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    assert not (tmp_path / "battle.html").exists()


def test_not_a_replay_is_refused(tmp_path, replay):
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="bogus.npz"):
        write_replay_html(bogus, tmp_path / "battle.html")
    with pytest.raises(ValueError, match="expected a Replay"):
        write_replay_html({"x": 1}, tmp_path / "battle.html")
    with pytest.raises(ValueError, match="is a folder"):
        write_replay_html(replay, tmp_path)


def test_inconsistent_replay_is_refused(replay):
    tracks = dict(replay.tracks, strength=replay.tracks["strength"][:-1])
    with pytest.raises(ValueError, match="track strength has shape"):
        check_replay(dataclasses.replace(replay, tracks=tracks))
    with pytest.raises(ValueError, match="cover has shape"):
        check_replay(dataclasses.replace(replay, cover=replay.cover[:-1]))
    with pytest.raises(ValueError, match="expected arm codes 0 to 2"):
        check_replay(dataclasses.replace(replay, arm=np.array([0, 7], np.int8)))


def test_command_line_writes_the_page_beside_the_replay(replay, tmp_path, capsys):
    source = save_replay(replay, tmp_path / "battle.npz")
    assert view_main([str(source)]) == 0
    assert (tmp_path / "battle.html").is_file()
    assert "Replay in the browser:" in capsys.readouterr().out
    assert view_main([str(source), "-o", str(tmp_path / "b" / "x.html")]) == 0
    assert (tmp_path / "b" / "x.html").is_file()


def _duel(x_red: float, routed_red: bool = False, team_red: int = 1) -> Replay:
    """Two infantry units 100 m apart at step 0, ``x_red`` apart at step 1."""
    tracks = {name: np.zeros((2, 2), np.float32) for name in
              ("theta", "strength", "morale", "readiness", "volley")}
    tracks["x"] = np.array([[100.0, 200.0], [100.0, 100.0 + x_red]], np.float32)
    tracks["y"] = np.full((2, 2), 100.0, np.float32)
    tracks["routed"] = np.array([[False, routed_red], [False, routed_red]])
    tracks["destroyed"] = np.zeros((2, 2), bool)
    tracks["target"] = np.full((2, 2), -1, np.int8)
    tracks["formation"] = np.zeros((2, 2), np.int8)
    return Replay(1000.0, 1000.0, np.array([0, team_red], np.int8), np.zeros((4, 4)),
                  np.zeros((4, 4)), tracks, {}, np.zeros(2, np.int8), np.ones((4, 4)))


def test_melee_is_shown_where_the_model_fights_it():
    touching = 2 * C.ARM_RADIUS[C.INFANTRY] + C.MELEE_REACH
    assert melee_pairs(_duel(touching)).tolist() == [[1, 0, 1]]
    assert melee_pairs(_duel(touching + 5)).tolist() == []
    assert melee_pairs(_duel(touching, routed_red=True)).tolist() == []  # a rout flees
    assert melee_pairs(_duel(touching, team_red=0)).tolist() == []  # friends


def _crowd(steps: int, units: int, seed: int = 0) -> Replay:
    """``units`` units of interleaved teams and mixed arms milling about a 60 m square,
    some routed or destroyed, for ``steps`` steps."""
    rng = np.random.default_rng(seed)
    shape = (steps + 1, units)
    tracks = {name: np.zeros(shape, np.float32) for name in
              ("theta", "strength", "morale", "readiness", "volley")}
    tracks["x"] = rng.uniform(0, 60, shape).astype(np.float32)
    tracks["y"] = rng.uniform(0, 60, shape).astype(np.float32)
    tracks["routed"] = rng.random(shape) < 0.1
    tracks["destroyed"] = rng.random(shape) < 0.05
    tracks["target"] = np.full(shape, -1, np.int8)
    tracks["formation"] = np.zeros(shape, np.int8)
    return Replay(60.0, 60.0, rng.integers(0, 2, units).astype(np.int8), np.zeros((4, 4)),
                  np.zeros((4, 4)), tracks, {}, rng.integers(0, 3, units).astype(np.int8),
                  None)


def test_melee_inferred_in_chunks_is_every_touching_pair_in_order(monkeypatch):
    import envs.rendering.viewer as viewer
    from envs.sim.config import BattleConfig

    replay = _crowd(120, 11)
    tracks = replay.tracks
    reach = BattleConfig().melee_distance(replay.arm) + viewer.MELEE_TOLERANCE_M
    expected = []  # one pair at a time, as the module docstring defines melee
    for step in range(1, 121):
        for i in range(11):
            for j in range(i + 1, 11):
                out = tracks["routed"][step - 1] | tracks["destroyed"][step - 1]
                dist = np.hypot(tracks["x"][step, i] - tracks["x"][step, j],
                                tracks["y"][step, i] - tracks["y"][step, j])
                if replay.team[i] != replay.team[j] and not (out[i] or out[j]) \
                        and dist <= reach[i, j]:
                    expected.append([step, i, j])
    assert len(expected) > 100
    for chunk in (viewer.MELEE_CHUNK_PAIRS, 7, 1):  # many steps at once, a few, one
        monkeypatch.setattr(viewer, "MELEE_CHUNK_PAIRS", chunk)
        pairs = melee_pairs(replay)
        assert pairs.dtype == np.int32 and pairs.tolist() == expected


def test_melee_inference_is_bounded_before_any_work(monkeypatch):
    import envs.rendering.viewer as viewer

    replay = _crowd(50, 10)  # 5 x 5 = 25 enemy pairs at most, 50 steps
    monkeypatch.setattr(viewer, "MAX_MELEE_PAIR_STEPS", 10)
    with pytest.raises(ValueError, match="MAX_MELEE_PAIR_STEPS"):
        melee_pairs(replay)
    monkeypatch.setattr(viewer, "MAX_MELEE_PAIR_STEPS", 2**26)
    monkeypatch.setattr(viewer, "MAX_MELEE_ROWS", 5)
    with pytest.raises(ValueError, match="MAX_MELEE_ROWS"):
        melee_pairs(replay)


# --- the page in a browser ---------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    missing = []
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("Playwright (pip install -e '.[dev]')")
    if not CHROMIUM.is_file():
        missing.append(f"{CHROMIUM} (apt-get install -y chromium; `make test` installs it)")
    if missing:
        message = "the browser tests need " + " and ".join(missing)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


class Page:
    """A browser tab on a viewer page, collecting its console errors and page errors."""

    def __init__(self, browser, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1000, "height": 1000})
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.resolve().as_uri())  # waits for the load event: the page's
        # script is inline, so the viewer is ready or has failed
        assert self.page.evaluate("document.body.dataset.ready") == "true", self.errors

    def state(self) -> dict:
        return self.page.evaluate("window.viewer.state()")

    def seek(self, step: int) -> dict:
        self.page.evaluate("t => window.viewer.seek(t)", step)
        return self.state()

    def canvas_image(self, selector: str) -> np.ndarray:
        """A screenshot of a canvas's drawing (inside its border), as (H, W, 3) ints."""
        box = self.page.evaluate("""s => {
            const c = document.querySelector(s), r = c.getBoundingClientRect();
            return {x: r.left + c.clientLeft, y: r.top + c.clientTop,
                    width: c.clientWidth, height: c.clientHeight};
        }""", selector)
        png = self.page.screenshot(clip=box)
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)

    def map_image(self) -> np.ndarray:
        return self.canvas_image("#map")

    def wait_until(self, condition: str, timeout_s: float = 10.0) -> None:
        # The page's Content-Security-Policy forbids eval, which wait_for_function uses.
        for _ in range(int(timeout_s / 0.05)):
            if self.page.evaluate(condition):
                return
            self.page.wait_for_timeout(50)
        raise AssertionError(f"{condition} still false after {timeout_s} s")


@pytest.fixture
def page(browser, page_path):
    tab = Page(browser, page_path)
    yield tab
    tab.page.close()
    assert tab.errors == []


def _pixel(image: np.ndarray, x: float, y: float) -> np.ndarray:
    return image[int(round(y)), int(round(x))]


def _close(colour: np.ndarray, expected, tolerance: int = 25) -> bool:
    return bool(np.abs(colour - np.array(expected)).max() <= tolerance)


def test_page_loads_without_errors_and_shows_the_start(page, replay):
    state = page.state()
    assert state["step"] == 0 and state["nSteps"] == replay.n_steps
    assert page.page.locator("#counter").inner_text() == f"step 0 / {replay.n_steps}"
    width, height = state["canvas"]["width"], state["canvas"]["height"]
    for unit, x, y in zip(state["units"], replay.tracks["x"][0], replay.tracks["y"][0],
                          strict=True):
        assert unit["x"] == pytest.approx(x / replay.width * width, abs=0.01)
        assert unit["y"] == pytest.approx(height - y / replay.height * height, abs=0.01)
    assert page.page.locator("#title").inner_text() == \
        "advance_and_fire (Blue) against scripted_l5 (Red)"
    assert page.errors == []


def test_scrubber_moves_the_units(page, replay):
    before = page.state()["units"]
    page.page.locator("#scrubber").fill("60")
    state = page.state()
    assert state["step"] == 60
    assert page.page.locator("#counter").inner_text() == f"step 60 / {replay.n_steps}"
    for unit, x, y in zip(state["units"], replay.tracks["x"][60], replay.tracks["y"][60],
                          strict=True):
        assert (unit["mapX"], unit["mapY"]) == pytest.approx((x, y), abs=1e-3)
    moved = [np.hypot(a["x"] - b["x"], a["y"] - b["y"]) for a, b in
             zip(before, state["units"], strict=True)]
    assert max(moved) > 20  # pixels


def test_screenshot_shows_each_side_at_its_place(page, replay):
    for step in (0, replay.n_steps):
        state = page.seek(step)
        image = page.map_image()
        assert image.shape[:2] == (state["canvas"]["height"], state["canvas"]["width"])
        for unit in state["units"]:
            assert _close(_pixel(image, unit["x"], unit["y"]), TEAM_COLOURS[unit["team"]]), \
                (step, unit)
    # Away from the units the map shows ground, not a unit's colour.
    corner = _pixel(image, 3, 3)
    assert not any(_close(corner, colour, 60) for colour in TEAM_COLOURS)


def test_fire_is_drawn_from_shooter_to_target(page, replay):
    volleys = replay.tracks["volley"] > 1e-3
    x, y = replay.tracks["x"], replay.tracks["y"]
    distance = np.hypot(x[:, 0] - x[:, 1], y[:, 0] - y[:, 1])
    step = int(np.nonzero(volleys.any(axis=1) & (distance > 120))[0][0])
    state = page.seek(step)
    shooter, target = state["fire"][0]
    a, b = state["units"][shooter], state["units"][target]
    middle = ((a["x"] + b["x"]) / 2, (a["y"] + b["y"]) / 2)
    firing = _pixel(page.map_image(), *middle)
    page.seek(0)
    quiet = _pixel(page.map_image(), *middle)
    assert np.abs(firing - FIRE_COLOUR).sum() < np.abs(quiet - FIRE_COLOUR).sum() - 60


def test_routed_and_destroyed_units_look_different(browser, replay, tmp_path):
    routed = replay.tracks["routed"].copy()
    destroyed = replay.tracks["destroyed"].copy()
    routed[-1, 1] = True
    destroyed[-1, 0] = True
    fallen = dataclasses.replace(replay, tracks=dict(replay.tracks, routed=routed,
                                                     destroyed=destroyed))
    tab = Page(browser, write_replay_html(fallen, tmp_path / "fallen.html"))
    state = tab.seek(replay.n_steps)
    blue, red = state["units"]
    assert blue["destroyed"] and red["routed"] and not red["destroyed"]
    image = tab.map_image()
    assert _close(_pixel(image, red["x"], red["y"]), ROUTED_COLOURS[1])
    # A destroyed unit is grey, crossed out in black.
    assert not any(_close(_pixel(image, blue["x"], blue["y"]), c, 60) for c in TEAM_COLOURS)
    assert tab.errors == []


def test_play_pause_and_speed(page, replay):
    # Slow enough that the replay is still playing when the pause click lands on a
    # loaded machine (at 200 steps/s it could end first, and the click replay it).
    page.page.select_option("#speed", "25")
    page.page.locator("#play").click()
    assert page.page.locator("#play").inner_text() == "Pause"
    page.wait_until("window.viewer.state().step >= 5")
    page.page.locator("#play").click()
    stopped = page.state()
    assert not stopped["playing"] and stopped["speed"] == 25
    assert 5 <= stopped["step"] < replay.n_steps
    page.page.select_option("#speed", "200")
    assert page.state()["speed"] == 200
    page.page.wait_for_timeout(200)
    assert page.state()["step"] == stopped["step"]
    page.page.keyboard.press("End")
    assert page.state()["step"] == replay.n_steps


def test_chart_cursor_follows_the_step(page, replay):
    def cursor_column() -> int:
        image = page.canvas_image("#chart").mean(axis=2)
        # The cursor is the one dark column running the plot's height.
        dark = (image[40:120] < 120).sum(axis=0)
        assert dark.max() > 70
        return int(np.argmax(dark))

    page.seek(0)
    start = cursor_column()
    page.seek(replay.n_steps)
    end = cursor_column()
    width = page.state()["canvas"]["width"]
    assert end - start > 0.8 * (width - 60)


def test_battle_of_many_units_and_all_arms(browser, tmp_path):
    battles = {battle.id: battle for battle in load_scenarios(BATTLES_JSON)}
    replay = play_scenario(battles["austerlitz_1805"], n_battles=1, seed=0,
                           record=True).replay
    assert set(replay.arm.tolist()) == {C.INFANTRY, C.CAVALRY, C.ARTILLERY}
    tab = Page(browser, write_replay_html(replay, tmp_path / "austerlitz.html"))
    assert tab.state()["nSteps"] == replay.n_steps
    assert len(tab.state()["units"]) == len(replay.team) >= 20
    pairs = melee_pairs(replay)
    for step in (replay.n_steps // 2, replay.n_steps):
        state = tab.seek(step)
        assert {u["formationName"] for u in state["units"]} <= set(C.FORMATION_NAMES)
        assert sorted(map(tuple, state["melee"])) == sorted(
            (int(i), int(j)) for t, i, j in pairs if t == step)
        assert state["sides"][0]["broken"] == int(
            (replay.tracks["routed"][step] | replay.tracks["destroyed"][step])[
                replay.team == 0].sum())
    if len(pairs):
        state = tab.seek(int(pairs[0, 0]))
        assert [int(pairs[0, 1]), int(pairs[0, 2])] in state["melee"]
    assert tab.errors == []


def test_a_division_battle_is_recorded_step_by_step_and_played(browser, tmp_path):
    from envs.echelons.division_env import DivisionEnv
    from envs.rendering import record_echelon_episode

    env = DivisionEnv(n_brigades=3, n_blue_per_brigade=3, max_steps=120, temporal_ratio=10)
    seen = []
    replay = record_echelon_episode(env, lambda obs: seen.append(obs) or
                                    env.action_space.sample(), seed=3)
    battles = env.batch.brigades.battles
    assert battles.step_observers == []  # the recorder let go of the battles
    assert len(replay.team) == battles.n_units == 18
    assert replay.metadata["command_steps"] == len(seen)
    assert replay.n_steps == replay.metadata["steps"] == int(battles.state.step[0])
    assert np.allclose(replay.tracks["x"][-1], battles.state.x[0])
    assert replay.metadata["outcome"] in ("blue", "red", "draw")
    tab = Page(browser, write_replay_html(replay, tmp_path / "division.html"))
    assert tab.seek(replay.n_steps)["step"] == replay.n_steps
    assert len(tab.state()["units"]) == 18 and tab.errors == []
    with pytest.raises(TypeError, match="BrigadeEnv or a DivisionEnv"):
        record_echelon_episode(BattalionEnv())
