"""The documented paths whose modules moved to their rooms hand the same objects on, run
the same command lines, and nothing else in ``training`` leans on them."""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FACES = {
    "training.historical_benchmark": "benchmarks.historical",
    "training.transfer_benchmark": "benchmarks.transfer",
    "training.wfm1_benchmark": "benchmarks.wfm1",
    "training.train_brigade": "training.echelons.brigade",
    "training.train_division": "training.echelons.division",
    "training.hrl_curriculum": "training.echelons.curriculum",
}
"""Each face and the module that holds what it hands on."""


@pytest.mark.parametrize("face, home", sorted(FACES.items()))
def test_a_face_hands_on_its_home_modules_objects(face, home):
    face_module, home_module = importlib.import_module(face), importlib.import_module(home)
    assert face_module.__all__, face
    for name in face_module.__all__:
        assert getattr(face_module, name) is getattr(home_module, name), f"{face}.{name}"


@pytest.mark.parametrize("face", ["training.historical_benchmark",
                                  "training.transfer_benchmark", "training.wfm1_benchmark"])
def test_a_documented_benchmark_command_line_runs_from_its_face(face):
    result = subprocess.run([sys.executable, "-m", face, "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    home = importlib.import_module(FACES[face])
    expected = io.StringIO()
    with contextlib.redirect_stdout(expected), pytest.raises(SystemExit):
        home.main(["--help"])
    assert result.stdout == expected.getvalue()
    assert result.stdout.startswith(f"usage: python -m {face}")


def _imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_only_the_faces_import_them_or_the_benchmarks_from_training():
    faces = {ROOT / (face.replace(".", "/") + ".py") for face in FACES}
    offenders = []
    for path in sorted((ROOT / "training").rglob("*.py")):
        if path in faces:
            continue
        for module in _imported_modules(path):
            if module in FACES or module == "benchmarks" or module.startswith("benchmarks."):
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not offenders, offenders
