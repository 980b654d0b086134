"""The tutorial (docs/tutorial.md) runs as written, in order, in one folder.

``tests/test_doc_examples.py`` runs the page's Python blocks on their own; this test runs
the whole page as a reader does: its shell and Python blocks in the order they come, in
one fresh working folder, so that each step finds the files the steps before it wrote.
Budgets are scaled down by the rule of :mod:`tests.doc_examples` (a shell command's by
:data:`~tests.doc_examples.SHELL_BUDGET_DIVISOR`, a Python block's by
:data:`~tests.doc_examples.BUDGET_DIVISOR`). A block marked
``<!-- example: skip REASON -->`` is not run; the tutorial's one such block,
``wargames-play``, serves a battle until a person has played it, so its command line is
only built (Red resolved, the field built, the server bound) and closed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.doc_examples import ROOT, Block, compile_block, markdown_blocks, shell_script
from tests.forked import run_module

TUTORIAL = ROOT / "docs" / "tutorial.md"

def tutorial_blocks(path: Path = TUTORIAL) -> list[tuple[str, Block]]:
    """The page's ``bash`` and ``python`` blocks in order, each with its language."""
    return [(block.language, block) for block in markdown_blocks(path, ("bash", "python"))]


def _check_play_command(code: str) -> None:
    """Build the server of a ``wargames-play`` block's command line, then close it."""
    from training.play import build_server

    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["wargames-play"]:
            server, _ = build_server(words[1:])
            server.close()


def run_tutorial(workdir: Path) -> int:
    """Run the tutorial's blocks in ``workdir``; the number of blocks run."""
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    for folder in ("configs", "training"):  # as tests/doc_examples.py does for shell examples
        if not (workdir / folder).exists():
            (workdir / folder).symlink_to(ROOT / folder, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    namespace, ran = {"__name__": "__main__"}, 0
    for language, block in tutorial_blocks():
        if block.skip is not None:
            _check_play_command(block.code)
            continue
        print(f"--- {block.where} ({language})", flush=True)
        if language == "python":
            exec(compile_block(block), namespace)  # noqa: S102 - the documentation's code
        else:
            subprocess.run(["bash", "-euo", "pipefail", "-c", shell_script(block.code)],
                           cwd=workdir, env=env, check=True)
        ran += 1
    return ran


def test_the_tutorial_runs_in_order(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8",
           "WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(tmp_path),
           "WANDB_CONFIG_DIR": str(tmp_path / "wandb_config"),
           "WANDB_CACHE_DIR": str(tmp_path / "wandb_cache")}
    log = tmp_path / "output.txt"
    code = run_module("tests.test_tutorial", [str(tmp_path / "w")], cwd=ROOT, env=env,
                      log=log, timeout=600)
    output = log.read_text(encoding="utf-8")
    assert code == 0, f"the tutorial failed:\n{output[-4000:]}"
    work = tmp_path / "w"
    for made in ("checkpoints/ppo_battalion_s42_c5_final.zip", "checkpoints/elo_registry.json",
                 "replays/tutorial_vs_l5.npz", "replays/tutorial_vs_l5.html", "commander.onnx"):
        assert (work / made).is_file(), f"the tutorial did not write {made}"
    assert "vs scripted_l5 over 100 battles:" in output


def test_the_tutorial_has_shell_and_python_blocks_and_marks_the_server() -> None:
    blocks = tutorial_blocks()
    assert {language for language, _ in blocks} == {"bash", "python"}
    skipped = [block for _, block in blocks if block.skip is not None]
    assert len(skipped) == 1 and "wargames-play" in skipped[0].code


if __name__ == "__main__":
    print(f"{run_tutorial(Path(sys.argv[1]).resolve())} block(s) ran", flush=True)
