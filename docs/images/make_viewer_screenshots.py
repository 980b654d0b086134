"""Screenshots of the replay viewer for the docs: ``docs/images/viewer_*.png``.

Records the demo's battle (``training/demo.py``: Blue against scripted level 5, on the
demo's evaluation seed; here Blue is the scripted disciplined commander, so no training
is needed) and a battle of many units of all arms (Austerlitz from the historical
benchmark), writes their viewer pages, and photographs them in Debian's chromium driven
by Playwright (``pip install -e '.[dev]'``; ``apt-get install chromium``)::

    python docs/images/make_viewer_screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image
from playwright.sync_api import sync_playwright

from data.historical import BATTLES_JSON
from envs.battalion_env import BattalionEnv
from envs.commanders.doctrine import DisciplinedCommander
from envs.rendering import Replay, record_episode, write_replay_html
from envs.rendering.draw import palette_for
from envs.rendering.viewer import melee_pairs
from envs.scenario import load_scenarios
from envs.scenario_battle import play_scenario
from storage.files import atomic_write_bytes

CHROMIUM = "/usr/bin/chromium"
DEMO_SEED = 100_000
"""The demo's evaluation seed (``training.demo.EVAL_SEED``)."""
MULTI_UNIT_BATTLE = "austerlitz_1805"


def demo_battle() -> Replay:
    return record_episode(BattalionEnv(curriculum_level=5), DisciplinedCommander(),
                          seed=DEMO_SEED, metadata={"blue": "DisciplinedCommander",
                                                    "red": "scripted_l5"})


def multi_unit_battle() -> Replay:
    battles = {battle.id: battle for battle in load_scenarios(BATTLES_JSON)}
    return play_scenario(battles[MULTI_UNIT_BATTLE], n_battles=1, seed=0, record=True).replay


def firing_step(replay: Replay, around: int) -> int:
    """The step nearest ``around`` where someone fires (``around`` if nobody does)."""
    firing = np.nonzero((replay.tracks["volley"] > 1e-3).any(axis=1))[0]
    return int(firing[np.argmin(np.abs(firing - around))]) if len(firing) else around


def liveliest_step(replay: Replay) -> int:
    """The step of the battle's second half (before the very end) that shows the most:
    units firing, in melee, routed or destroyed."""
    tracks = replay.tracks
    activity = ((tracks["volley"] > 1e-3).sum(axis=1)
                + (tracks["routed"] | tracks["destroyed"]).sum(axis=1)).astype(float)
    np.add.at(activity, melee_pairs(replay)[:, 0], 3.0)
    lo, hi = replay.n_steps // 2, max(replay.n_steps * 17 // 20, replay.n_steps // 2 + 1)
    return lo + int(np.argmax(activity[lo:hi]))


def shoot(page, step: int) -> bytes:
    page.evaluate("t => window.viewer.seek(t)", step)
    box = page.locator("main").bounding_box()
    png = page.screenshot(full_page=True, clip={
        "x": 0, "y": 0, "width": box["x"] + box["width"] + 16,
        "height": box["y"] + box["height"] + 12})
    # 256 colours keep the files small; the GIFs' palette keeps the team, rout and fire
    # colours exact (a fitted palette alone would lose such small patches).
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image = image.quantize(palette=palette_for(image), dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args(argv)
    demo, multi = demo_battle(), multi_unit_battle()
    shots = [(demo, "viewer_start.png", 0),
             (demo, "viewer_middle.png", firing_step(demo, demo.n_steps // 2)),
             (demo, "viewer_end.png", demo.n_steps),
             (multi, "viewer_multi_unit.png", liveliest_step(multi))]
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page(viewport={"width": 940, "height": 800})
        pages = {id(demo): write_replay_html(demo, Path(tmp) / "demo.html"),
                 id(multi): write_replay_html(multi, Path(tmp) / "multi.html",
                                              title="Austerlitz, 1805 (historical benchmark)")}
        for replay, name, step in shots:
            page.goto(pages[id(replay)].as_uri())
            if page.evaluate("document.body.dataset.ready") != "true":
                raise RuntimeError(f"the viewer of {pages[id(replay)]} did not start")
            atomic_write_bytes(args.out / name, shoot(page, step))
            print(f"{args.out / name}: step {step} of {replay.n_steps}")
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
