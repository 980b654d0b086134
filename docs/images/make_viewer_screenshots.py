"""Screenshots of the replay viewer for the docs: ``docs/images/viewer_*.png``.

Records the demo's battle (``training/demo.py``: Blue against scripted level 5, on the
demo's evaluation seed; here Blue is the scripted disciplined commander, so no training
is needed) and a battle of many units of all arms (Austerlitz from the historical
benchmark), writes their viewer pages, and photographs them in Debian's chromium driven
by Playwright (``pip install -e '.[dev]'``; ``apt-get install chromium``). Given a policy
file of MAPPO with arms trained on the ``combined_arms`` scenario (``python -m
benchmarks.learning --stack mappo_arms --seeds 1 --out DIR`` leaves one in
``DIR/mappo_arms_seed0/checkpoints``), it also records that commander against scripted
L5 and photographs the battle (``viewer_learned_arms.png``)::

    python docs/images/make_viewer_screenshots.py [--out docs/images] [--arms-policy FILE]
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
from envs.sim import constants as C
from storage.files import atomic_write_bytes

CHROMIUM = "/usr/bin/chromium"
DEMO_SEED = 100_000
"""The demo's evaluation seed (``training.demo.EVAL_SEED``)."""
MULTI_UNIT_BATTLE = "austerlitz_1805"
ARMS_SEEDS = range(100_000, 100_016)
"""The test split's first battles, among which the learned combined-arms battle is chosen."""


def demo_battle() -> Replay:
    return record_episode(BattalionEnv(curriculum_level=5), DisciplinedCommander(),
                          seed=DEMO_SEED, metadata={"blue": "DisciplinedCommander",
                                                    "red": "scripted_l5"})


def multi_unit_battle() -> Replay:
    battles = {battle.id: battle for battle in load_scenarios(BATTLES_JSON)}
    return play_scenario(battles[MULTI_UNIT_BATTLE], n_battles=1, seed=0, record=True).replay


def learned_arms_battle(policy_file: Path) -> Replay:
    """The battle the MAPPO training checkpoint ``policy_file`` was trained on (its
    config's field and order of battle), its policy commanding Blue on its mean against
    scripted L5: of the battles of :data:`ARMS_SEEDS`, the one that shows the most of the
    arms (a square, a melee and guns firing; a battle Blue won if there is one)."""
    from training.mappo.battles import record_team_battle
    from training.mappo.checkpoints import load_checkpoint, policy_from_checkpoint
    from training.mappo.config import MAPPOConfig

    config = MAPPOConfig(**load_checkpoint(policy_file).extras["config"])
    policy = policy_from_checkpoint(policy_file)
    replays = [record_team_battle(
        policy, 5, n_blue=config.n_blue, n_red=config.n_red, seed=seed,
        env_kwargs=config.field_kwargs(), order_of_battle=config.forces(),
        metadata={"blue": f"MAPPO with arms ({policy_file.name})", "red": "scripted_l5"})
        for seed in ARMS_SEEDS]
    won = [replay for replay in replays if replay.metadata["outcome"] == "blue"]

    def shows(replay: Replay) -> tuple[int, float]:
        """How many of a square, a melee and guns firing the battle shows, then the most
        its liveliest step shows at once."""
        shown = arms_shown(replay)
        return int(shown.any(axis=0).sum()), float((shown @ ARMS_WEIGHTS).max())

    return max(won or replays, key=shows)


ARMS_WEIGHTS = np.array([1.0, 1.0, 3.0])
"""What a square, a firing gun and a unit in melee are worth to a picture."""


def arms_shown(replay: Replay) -> np.ndarray:
    """Per step (rows), how many squares stand, guns fire and units fight in melee."""
    tracks = replay.tracks
    shown = np.zeros((replay.n_steps + 1, 3))
    shown[:, 0] = (tracks["formation"] == C.SQUARE).sum(axis=1)
    shown[:, 1] = (tracks["volley"][:, replay.arm == C.ARTILLERY] > 1e-3).sum(axis=1)
    np.add.at(shown[:, 2], melee_pairs(replay)[:, 0], 1.0)
    return shown


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
    parser.add_argument("--arms-policy", type=Path, default=None,
                        help="a mappo_arms policy file: also photograph its battle")
    args = parser.parse_args(argv)
    demo, multi = demo_battle(), multi_unit_battle()
    shots = [(demo, "viewer_start.png", 0),
             (demo, "viewer_middle.png", firing_step(demo, demo.n_steps // 2)),
             (demo, "viewer_end.png", demo.n_steps),
             (multi, "viewer_multi_unit.png", liveliest_step(multi))]
    titles = {id(multi): "Austerlitz, 1805 (historical benchmark)"}
    if args.arms_policy is not None:
        arms = learned_arms_battle(args.arms_policy)
        shots.append((arms, "viewer_learned_arms.png",
                      int(np.argmax(arms_shown(arms) @ ARMS_WEIGHTS))))
        result = {"blue": "Blue won", "red": "Red won", "draw": "drawn"}[arms.metadata["outcome"]]
        titles[id(arms)] = (f"MAPPO with arms against scripted L5, combined_arms, seed "
                            f"{arms.metadata['seed']} ({result})")
    else:
        print("viewer_learned_arms.png not taken: no --arms-policy given")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page(viewport={"width": 940, "height": 800})
        pages = {id(replay): write_replay_html(replay, Path(tmp) / f"{k}.html",
                                               title=titles.get(id(replay)))
                 for k, replay in enumerate({id(r): r for r, _, _ in shots}.values())}
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
