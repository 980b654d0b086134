"""The play page in a browser: a short battle played by clicks.

Like the replay viewer's browser tests (whose ``browser`` fixture this module uses), it
drives Debian's chromium with Playwright, and skips without them except under ``CI=true``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from envs.play.orders import ARRIVED
from envs.rendering.replay import load_replay
from envs.sim import constants as C
from tests.test_replay_viewer import browser  # noqa: F401 (the fixture: chromium)
from training.elo import TeamEloRegistry
from training.play import build_server


def wait_until(page, condition: str, timeout_s: float = 20.0) -> None:
    # The page's Content-Security-Policy forbids eval, which wait_for_function uses.
    for _ in range(int(timeout_s / 0.05)):
        if page.evaluate(condition):
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"{condition} still false after {timeout_s} s")


def click_map(page, x: float, y: float, **options) -> None:
    """Click the map at map metres ``(x, y)``."""
    px, py = page.evaluate("([x, y]) => window.play.toPx(x, y)", [x, y])
    box = page.evaluate("""() => {
        const c = document.getElementById("map"), r = c.getBoundingClientRect();
        return {x: r.left + c.clientLeft, y: r.top + c.clientTop};
    }""")
    page.mouse.click(box["x"] + px, box["y"] + py, **options)


def test_a_short_battle_played_by_clicks(browser, tmp_path):  # noqa: F811
    elo = tmp_path / "elo.json"
    server, _ = build_server([
        "--name", "tester", "--red", "L1", "--size", "2v1", "--seed", "0", "--max-steps",
        "150", "--out", str(tmp_path / "plays"), "--elo", str(elo), "--no-browser"])
    errors: list[str] = []
    with server:
        page = browser.new_page(viewport={"width": 1000, "height": 1000})
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server.url)
        wait_until(page, "document.body.dataset.ready === 'true'")
        start = page.evaluate("window.play.state()")["units"][0]
        assert page.locator("#title").inner_text() == "tester (Blue) against scripted_l1 (Red)"

        # Select Blue's first battalion, send it 60 m east and 40 m north, and have it
        # face north when it gets there, in column, holding its fire.
        click_map(page, start["x"], start["y"])
        assert page.evaluate("window.play.selected()") == 0
        goal = (start["x"] + 60.0, start["y"] + 40.0)
        click_map(page, *goal)
        wait_until(page, "window.play.state().orders['0'].move !== null")
        page.locator("#mode-face").check()
        click_map(page, goal[0], goal[1] + 150.0)
        wait_until(page, "window.play.state().orders['0'].face !== null")
        page.select_option("#formation", "column")
        page.locator("#hold").click()
        wait_until(page, "!window.play.state().orders['0'].fire")
        orders = page.evaluate("window.play.state()")["orders"]["0"]
        assert orders["formation"] == "column"
        # The click's pixel, read back in metres: within a pixel of where it was aimed.
        metres_per_px = 1000 / page.evaluate("window.play.canvas()")["width"]
        assert orders["move"] == pytest.approx(goal, abs=metres_per_px)
        assert orders["face"] == pytest.approx(math.pi / 2, abs=0.02)

        # One step, then run the clock fast, pause it, and run it to the end.
        page.locator("#step").click()
        wait_until(page, "window.play.state().step === 1")
        page.select_option("#speed", "50")
        page.locator("#run").click()
        wait_until(page, "window.play.state().step >= 20")
        page.locator("#run").click()  # now "Pause"
        wait_until(page, "!window.play.state().running")
        paused = page.evaluate("window.play.state().step")
        page.wait_for_timeout(200)
        assert page.evaluate("window.play.state().step") == paused < 150
        page.locator("#run").click()
        wait_until(page, "window.play.state().result !== null")
        state = page.evaluate("window.play.state()")
        assert page.locator("#run").is_disabled()
        assert "A draw after 150 steps." in page.locator("#result").inner_text()
        page.close()
    assert errors == []

    # The ordered battalion stands on its point, facing as ordered, in column.
    unit = state["units"][0]
    assert math.hypot(unit["x"] - orders["move"][0], unit["y"] - orders["move"][1]) <= ARRIVED
    assert unit["theta"] == pytest.approx(orders["face"] % (2 * math.pi), abs=1e-3)
    assert unit["formation"] == C.COLUMN and not unit["routed"]
    # The replay file holds the battle the page showed, and the Elo file the player's game.
    result = state["result"]
    replay = load_replay(result["replay"])
    assert replay.n_steps == 150 == state["step"]
    assert np.allclose(replay.tracks["x"][-1], [u["x"] for u in state["units"]])
    assert replay.metadata["outcome"] == "draw" and replay.metadata["blue"] == "tester"
    assert (tmp_path / "plays" / result["page"].split("/")[-1]).is_file()
    registry = TeamEloRegistry(elo)
    assert registry.get_game_count("tester") == 1
    assert json.loads(elo.read_text())["ratings"]["tester"] == registry.get_rating("tester")


def test_a_battle_against_the_planning_commander_runs_to_its_end(browser, tmp_path):  # noqa: F811
    server, _ = build_server([
        "--name", "tester", "--red", "planner", "--size", "2v2", "--seed", "3",
        "--max-steps", "60", "--out", str(tmp_path / "plays"), "--no-browser"])
    errors: list[str] = []
    with server:
        page = browser.new_page(viewport={"width": 1000, "height": 1000})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server.url)
        wait_until(page, "document.body.dataset.ready === 'true'")
        assert page.locator("#title").inner_text() == "tester (Blue) against planner (Red)"
        start = page.evaluate("window.play.state()")["units"]
        page.select_option("#speed", "50")
        page.locator("#run").click()
        wait_until(page, "window.play.state().result !== null", timeout_s=120.0)
        state = page.evaluate("window.play.state()")
        page.close()
    assert errors == []
    assert state["step"] == 60
    # Red's battalions (after Blue's two) moved under the planner's orders.
    red = zip(start[2:], state["units"][2:], strict=True)
    assert max(math.hypot(b["x"] - a["x"], b["y"] - a["y"]) for a, b in red) > 1.0


def test_an_answer_that_arrives_late_does_not_undo_an_order(browser, tmp_path):  # noqa: F811
    # Each request runs on a thread of its own, so a poll sent before an order can be
    # answered after it (seen in CI: the face was then taken from the unit, not its goal).
    # Here every later poll is answered with a state older than the order.
    server, _ = build_server([
        "--name", "tester", "--red", "L1", "--size", "2v1", "--seed", "0",
        "--out", str(tmp_path / "plays"), "--elo", str(tmp_path / "elo.json"), "--no-browser"])
    with server:
        page = browser.new_page(viewport={"width": 1000, "height": 1000})
        page.goto(server.url)
        wait_until(page, "document.body.dataset.ready === 'true'")
        stale = server.state()
        start = stale["units"][0]
        click_map(page, start["x"], start["y"])
        click_map(page, start["x"] + 60.0, start["y"] + 40.0)
        wait_until(page, "window.play.state().orders['0'].move !== null")
        assert page.evaluate("window.play.state().revision") > stale["revision"]
        served = []
        page.route("**/api/state", lambda route: served.append(1) or route.fulfill(
            status=200, content_type="application/json", body=json.dumps(stale)))
        page.wait_for_timeout(500)  # about five polls at the page's 100 ms
        assert len(served) >= 3
        assert page.evaluate("window.play.state().orders['0'].move") is not None
        page.close()
