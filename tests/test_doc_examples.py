"""Every Python example of the README, the docs and the seeds runs as written.

See :mod:`tests.doc_examples` for what runs, how blocks are skipped and the one
rule that scales training budgets down.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from tests.doc_examples import (
    BUDGET_DIVISOR,
    FREQUENCY_DIVISOR,
    ROOT,
    SHELL_BUDGET_DIVISOR,
    Block,
    compile_block,
    markdown_blocks,
    shell_script,
    sources,
)
from tests.forked import run_module

SOURCES = sources()
RUNNABLE = [name for name, blocks in SOURCES.items() if any(b.skip is None for b in blocks)]
SKIPPED = [b for blocks in SOURCES.values() for b in blocks if b.skip is not None]
SEEDS = ROOT.parent / "shared" / "spec" / "seeds"


@pytest.mark.parametrize("name", RUNNABLE)
def test_examples_run_as_written(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8",
           "WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DIR": str(tmp_path),
           "WANDB_CONFIG_DIR": str(tmp_path / "wandb_config"),
           "WANDB_CACHE_DIR": str(tmp_path / "wandb_cache")}
    # A new process, forked from a server that has the imports (tests/forked.py).
    log = tmp_path / "output.txt"
    code = run_module("tests.doc_examples", ["run", name, "--dir", str(tmp_path / "w")],
                      cwd=ROOT, env=env, log=log, timeout=600)
    assert code == 0, f"{name} failed:\n{log.read_text(encoding='utf-8')[-4000:]}"


@pytest.mark.parametrize("block", [pytest.param(b, id=b.where) for b in SKIPPED] or [
    pytest.param(None, id="none", marks=pytest.mark.skip(reason="no block is marked to skip"))])
def test_skipped_blocks_say_why(block: Block) -> None:
    pytest.skip(f"{block.where}: {block.skip}")


def test_markdown_blocks_and_skip_markers_are_found(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n\n```python\nx = 1\n```\n\n<!-- example: skip needs a GPU -->\n"
                   "```python\ny = x\n```\n\n```bash\nmake test\n```\n", encoding="utf-8")
    first, second = markdown_blocks(doc)
    assert (first.line, first.code, first.skip) == (4, "x = 1\n", None)
    assert (second.line, second.code, second.skip) == (9, "y = x\n", "needs a GPU")


def test_only_budget_keywords_are_scaled_and_errors_point_at_the_doc_line(tmp_path) -> None:
    code = ("def f(**kw):\n    return kw\n"
            "got = f(total_timesteps=1_000_000, snapshot_freq=50_000, n_envs=4, seed=300,\n"
            "        eval_freq=5, n_episodes=100)\n"
            "raise RuntimeError('here')\n")
    block = Block(tmp_path / "doc.md", 40, code)
    namespace: dict = {}
    with pytest.raises(RuntimeError) as info:
        exec(compile_block(block), namespace)  # noqa: S102
    assert namespace["got"] == dict(total_timesteps=1_000_000 // BUDGET_DIVISOR,
                                    snapshot_freq=50_000 // FREQUENCY_DIVISOR, n_envs=4,
                                    seed=300,
                                    eval_freq=1, n_episodes=100)
    assert info.traceback[-1].lineno + 1 == 44  # the raise is the block's fifth line
    namespace = {}
    with pytest.raises(RuntimeError):
        exec(compile_block(block, full=True), namespace)  # noqa: S102
    assert namespace["got"]["total_timesteps"] == 1_000_000


def test_a_shell_command_s_budgets_are_scaled_and_its_config_s_added() -> None:
    text = ("python training/league/train_main_agent.py \\\n"
            "  training.total_timesteps=5_000_000 league.pfsp_temperature=1.0\n"
            "echo done\n")
    script = shell_script(text)
    words = script.splitlines()[0].split()
    assert f"training.total_timesteps={5_000_000 // SHELL_BUDGET_DIVISOR}" in words
    assert "league.pfsp_temperature=1.0" in words
    assert f"league.snapshot_freq={100_000 // SHELL_BUDGET_DIVISOR}" in words  # the file's
    assert script.splitlines()[1] == "echo done"
    assert "training.total_timesteps=5_000_000" in shell_script(text, full=True)


def _seed_lines() -> list[str]:
    return [line.strip() for path in sorted(SEEDS.glob("*.txt"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seeds are not beside this checkout")
@pytest.mark.parametrize("name", [n for n in SOURCES if n.startswith("tests/examples/")])
def test_seed_sections_are_copied_as_written(name: str) -> None:
    """Each '# --- seed ...' section equals a run of the seed's lines (the seeds' text
    lost its indentation, so lines compare stripped)."""
    seed = "\n".join(_seed_lines())
    text = (ROOT / name).read_text(encoding="utf-8")
    sections = re.split(r"^# --- (.*?) ---\n", text, flags=re.M)[1:]
    copied = [body for title, body in zip(sections[::2], sections[1::2], strict=True)
              if title.startswith("seed")]
    assert copied, f"{name} has no '# --- seed ...' section"
    for body in copied:
        lines = "\n".join(line.strip() for line in body.splitlines() if line.strip())
        assert lines in seed, f"{name}: a seed section differs from the seed:\n{lines}"
        if name.endswith(".py"):
            ast.parse(body)
