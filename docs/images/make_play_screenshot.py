"""A screenshot of a battle in progress on the play page for the docs: ``docs/images/play.png``.

Starts the play command line's server (:mod:`training.play`: three battalions a side on
the Waterloo sector, Red under the disciplined doctrine), gives Blue's battalions their
orders by clicks in Debian's chromium driven by Playwright (``pip install -e '.[dev]'``;
``apt-get install chromium``), runs the clock until the lines are firing, pauses it with
a battalion selected and photographs the page. The replay and the Elo file go to a
temporary folder::

    python docs/images/make_play_screenshot.py [--out docs/images/play.png]
"""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

from envs.rendering.draw import palette_for
from storage.files import atomic_write_bytes
from training.play import build_server

CHROMIUM = "/usr/bin/chromium"
ADVANCE_M = 220.0
"""How far east each Blue battalion is sent."""
FIRING_STEPS = 25
"""Steps of fire to wait for before the picture (the volleys on screen)."""


def click(page, x: float, y: float, button: str = "left") -> None:
    """Click the map at map metres ``(x, y)``."""
    px, py = page.evaluate("([x, y]) => window.play.toPx(x, y)", [x, y])
    box = page.locator("#map").bounding_box()
    page.mouse.click(box["x"] + 1 + px, box["y"] + 1 + py, button=button)


def until(page, condition: str, timeout_s: float = 60.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if page.evaluate(condition):
            return
        page.wait_for_timeout(50)
    raise RuntimeError(f"{condition} still false after {timeout_s} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "play.png")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        server, _ = build_server([
            "--name", "you", "--red", "doctrine", "--field", "site:waterloo", "--size", "3v3",
            "--seed", "5", "--speed", "50", "--out", tmp, "--elo", f"{tmp}/elo.json",
            "--no-browser"])
        with server:
            browser = playwright.chromium.launch(executable_path=CHROMIUM)
            page = browser.new_page(viewport={"width": 940, "height": 980})
            page.goto(server.url)
            until(page, "document.body.dataset.ready === 'true'")
            units = page.evaluate("window.play.state()")["units"]
            for unit in (0, 1, 2):
                x, y = units[unit]["x"], units[unit]["y"]
                click(page, x, y)
                click(page, x + ADVANCE_M, y)
                click(page, x + ADVANCE_M + 100.0, y, button="right")  # face east there
            page.locator("#run").click()
            # Until a volley has been fired for a few steps (or the battle nears its end).
            until(page, "(s => s.fire.length > 0 || s.step > 400)(window.play.state())")
            page.wait_for_timeout(FIRING_STEPS * 1000 / 50)
            page.locator("#run").click()
            until(page, "!window.play.state().running")
            middle = page.evaluate("window.play.state()")["units"][1]
            click(page, middle["x"], middle["y"])  # selected: its orders are drawn
            page.wait_for_timeout(300)
            box = page.locator("main").bounding_box()
            png = page.screenshot(clip={"x": 0, "y": 0, "width": box["x"] + box["width"] + 16,
                                        "height": box["y"] + box["height"] + 12})
            browser.close()
            step = server.state()["step"]
    # 256 colours keep the file small; the GIFs' palette keeps the team and fire colours.
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image = image.quantize(palette=palette_for(image), dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    atomic_write_bytes(args.out, buffer.getvalue())
    print(f"{args.out}: step {step}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
