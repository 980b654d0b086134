"""The documentation's Python examples, run as written.

What runs:

- every ```` ```python ```` block of ``README.md`` and ``docs/*.md``. The blocks of
  one Markdown file run in order in one namespace, like a notebook, so a block
  may use what an earlier one defined;
- every script in ``tests/examples/``: the seeds' own examples, copied as
  written, with the setup they assume and the checks that show they worked in
  sections marked "not in the seed". A ``.sh`` script holds a seed's command
  lines; it runs with bash in a working folder that links the checkout's
  ``configs`` and ``training`` folders, as the seeds' relative paths expect.

Each source runs in a fresh, empty working folder, with W&B offline.

Skipping: a block that cannot run by nature (a sketch, a recovery step that
needs a damaged file) is preceded by ``<!-- example: skip REASON -->``; it is
not run and the test suite reports it as skipped with ``REASON``.

Budgets, the one thing the harness changes: every integer literal given as a
keyword argument named in :data:`BUDGET_KEYWORDS` is divided by
:data:`BUDGET_DIVISOR` (a frequency of :data:`FREQUENCY_KEYWORDS` by
:data:`FREQUENCY_DIVISOR`; each kept at least 1) in the parsed source, so the text
that runs is the documentation's while a 1M-step example trains for 10k steps.
``--full`` runs the budgets as written (``benchmarks/quick_start.py`` does).
In a shell script the same rule applies to Hydra overrides (``key=value``
whose last dotted part is a budget keyword), divided by
:data:`SHELL_BUDGET_DIVISOR`, and a training CLI of :data:`CLI_CONFIGS` also
gets, for each budget key of its config file that the command does not set,
the file's default divided likewise.

Command line::

    python -m tests.doc_examples list                  # every block: run or skipped, and why
    python -m tests.doc_examples run README.md         # in a new temporary folder
    python -m tests.doc_examples run tests/examples/quick_start.py --full --dir runs/qs
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BUDGET_KEYWORDS = frozenset({"total_timesteps", "warm_start_steps", "snapshot_freq",
                             "eval_freq", "checkpoint_freq"})
"""Keyword arguments that hold a training budget (env-steps), or a frequency
within one (scaled too, so a snapshot still comes before the end)."""

FREQUENCY_KEYWORDS = frozenset({"snapshot_freq", "eval_freq", "checkpoint_freq"})
"""The budget keywords that are a frequency within a run, not its length."""

BUDGET_DIVISOR = 100
FREQUENCY_DIVISOR = 25
"""A Python example's frequencies are divided by a quarter of :data:`BUDGET_DIVISOR`. The
scaled run overshoots its scaled budget (Stable-Baselines3's first rollout keeps its 2,048
steps per env: the seed's self-play example asks for 10k steps and trains 16,384), and
frequencies divided as much as the budget would multiply the snapshots and evaluations
within it (32 of each there, 8 with this divisor). A run that ends before its first
scaled frequency still takes what it takes at its end (a final evaluation, a checkpoint)."""
SHELL_BUDGET_DIVISOR = 1000
"""The shell examples' divisor: each of their commands is a whole training run in a
process of its own (the league tutorial starts four, of 3M-5M env-steps as written),
and a thousandth still takes every snapshot and evaluation its checks look for. A
Python example keeps :data:`BUDGET_DIVISOR`: a smaller budget would not shrink
Stable-Baselines3's first rollout (2,048 steps per env), only multiply the
evaluations and snapshots within it."""

CLI_CONFIGS = {
    "training.league.train_main_agent": "configs/league/main_agent.yaml",
    "training.league.train_exploiter": "configs/league/main_exploiter.yaml",
    "training.league.train_league_exploiter": "configs/league/league_exploiter.yaml",
}
"""The training CLIs the shell examples run (module name -> its config file)."""
SHELL_LINKS = ("configs", "training")
"""The checkout's folders a shell example's working folder links."""

_FENCE = re.compile(r"^```(\w*)\s*$")
_SKIP = re.compile(r"^<!--\s*example:\s*skip\s+(.+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One piece of example code: where it is, its text, and why it is skipped (if so)."""

    path: Path
    line: int  # 1-based line of the code's first line in ``path``
    code: str
    skip: str | None = None
    language: str = "python"  # the fence's language in a Markdown file

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def markdown_blocks(path: Path, languages: tuple[str, ...] = ("python",)) -> list[Block]:
    """The fenced blocks of a Markdown file in ``languages`` (```` ```python ```` ones by
    default), in page order, with their skip markers."""
    found, lines = [], path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if fence.group(1) in languages:
            previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marker = _SKIP.match(previous)
            found.append(Block(path, i + 2, "\n".join(lines[i + 1:end]) + "\n",
                               marker.group(1) if marker else None, fence.group(1)))
        i = end + 1
    return found


def sources() -> dict[str, list[Block]]:
    """Every source of examples (repo-relative name -> its blocks), in a stable order."""
    found = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        blocks = markdown_blocks(path)
        if blocks:
            found[str(path.relative_to(ROOT))] = blocks
    for path in sorted([*(ROOT / "tests" / "examples").glob("*.py"),
                        *(ROOT / "tests" / "examples").glob("*.sh")]):
        found[str(path.relative_to(ROOT))] = [Block(path, 1, path.read_text(encoding="utf-8"))]
    return found


class _ScaleBudgets(ast.NodeTransformer):
    def visit_keyword(self, node: ast.keyword) -> ast.keyword:
        value = node.value
        if (node.arg in BUDGET_KEYWORDS and isinstance(value, ast.Constant)
                and type(value.value) is int):
            divisor = FREQUENCY_DIVISOR if node.arg in FREQUENCY_KEYWORDS else BUDGET_DIVISOR
            scaled = ast.Constant(max(1, value.value // divisor))
            node.value = ast.copy_location(scaled, value)
        return node


def compile_block(block: Block, full: bool = False):
    """The block's code object, budgets scaled unless ``full``; tracebacks name the doc line."""
    tree = ast.parse(block.code, filename=str(block.path))
    ast.increment_lineno(tree, block.line - 1)
    if not full:
        tree = ast.fix_missing_locations(_ScaleBudgets().visit(tree))
    return compile(tree, str(block.path), "exec")


def _budget_args(args: list[str]) -> list[str]:
    """A command line's words with its budget overrides divided and, for a training CLI
    of :data:`CLI_CONFIGS`, the missing budget keys of its config added."""
    def scaled(value: int) -> str:
        return str(max(1, value // SHELL_BUDGET_DIVISOR))

    given, out = set(), []
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and key.rsplit(".", 1)[-1] in BUDGET_KEYWORDS and \
                re.fullmatch(r"[0-9][0-9_]*", value):
            given.add(key)
            arg = f"{key}={scaled(int(value))}"
        out.append(arg)
    module = args[2] if args[1:2] == ["-m"] else \
        args[1].removesuffix(".py").replace("/", ".") if len(args) > 1 else ""
    if module in CLI_CONFIGS:
        import yaml

        config = yaml.safe_load((ROOT / CLI_CONFIGS[module]).read_text(encoding="utf-8"))
        for section, values in config.items():
            for key, value in (values.items() if isinstance(values, dict) else ()):
                dotted = f"{section}.{key}"
                if key in BUDGET_KEYWORDS and dotted not in given and type(value) is int:
                    out.append(f"{dotted}={scaled(value)}")
    return out


def shell_script(text: str, full: bool = False) -> str:
    """A shell example's text, each ``python`` command's budgets scaled unless ``full``."""
    lines = text.replace("\\\n", " ").splitlines()
    if full:
        return "\n".join(lines) + "\n"
    out = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("python ") and "<<" not in stripped:
            background = stripped.endswith("&")
            words = _budget_args(shlex.split(stripped.rstrip("&")))
            line = " ".join(shlex.quote(w) for w in words) + (" &" if background else "")
        out.append(line)
    return "\n".join(out) + "\n"


def run_source(name: str, workdir: Path, full: bool = False) -> int:
    """Run one source's blocks in ``workdir`` (in this process; a shell script with bash);
    the number of blocks run."""
    blocks = sources()[name]
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("WANDB_SILENT", "true")
    os.environ.setdefault("WANDB_DIR", str(workdir))
    if name.endswith(".sh"):
        for folder in SHELL_LINKS:
            if not (workdir / folder).exists():
                (workdir / folder).symlink_to(ROOT / folder, target_is_directory=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        python = Path(sys.executable).parent  # "python" is this interpreter
        env["PATH"] = f"{python}{os.pathsep}{env.get('PATH', '')}"
        subprocess.run(["bash", "-c", shell_script(blocks[0].code, full)], cwd=workdir,
                       env=env, check=True)
        return 1
    namespace = {"__name__": "__main__"}
    ran = 0
    for block in blocks:
        if block.skip is None:
            exec(compile_block(block, full), namespace)  # noqa: S102 - the documentation's code
            ran += 1
    return ran


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.doc_examples",
                                     description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list every block and whether it runs")
    run = commands.add_parser("run", help="run one source's blocks")
    run.add_argument("source", choices=sorted(sources()))
    run.add_argument("--full", action="store_true", help="budgets as written")
    run.add_argument("--dir", type=Path, default=None, help="working folder (default: new)")
    args = parser.parse_args(argv)
    if args.command == "list":
        everything = [b for blocks in sources().values() for b in blocks]
        for block in everything:
            print(f"{block.where}: {'skipped: ' + block.skip if block.skip else 'runs'}")
        skipped = sum(b.skip is not None for b in everything)
        print(f"{len(everything) - skipped} blocks run, {skipped} skipped")
        return
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="doc_examples_"))
    ran = run_source(args.source, workdir.resolve(), args.full)
    print(f"{args.source}: {ran} block(s) ran in {workdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
