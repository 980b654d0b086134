"""The docs site (mkdocs.yml) builds strictly, and its API reference shows ``train``."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed")

ROOT = Path(__file__).resolve().parents[1]


def _text(page: str) -> str:
    """The page's text: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _build(config: Path, site_dir: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` (never with --quiet, which hides the warnings that
    --strict counts, so that nothing fails)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "--config-file", str(config), "--site-dir", str(site_dir)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site_dir = tmp_path_factory.mktemp("site")
    built = _build(ROOT / "mkdocs.yml", site_dir)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stdout + built.stderr
    return site_dir


@pytest.mark.parametrize("link", ["nowhere.md", "index.md#no-such-section"])
def test_a_broken_link_fails_the_build(tmp_path: Path, link: str) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(f"# Home\n\nA [link]({link}).\n")
    (tmp_path / "mkdocs.yml").write_text(
        f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: docs\nnav:\n  - index.md\n")
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert link in built.stdout + built.stderr


@pytest.mark.slow
def test_every_page_is_built(site: Path) -> None:
    for page in ["index.html", "training/index.html", "performance/index.html",
                 "api/training/index.html", "api/training_league/index.html",
                 "api/envs/index.html", "api/models/index.html"]:
        assert (site / page).is_file(), page


@pytest.mark.slow
def test_train_api_page_shows_signature_docstring_and_source(site: Path) -> None:
    page = (site / "api/training/index.html").read_text(encoding="utf-8")
    assert 'id="training.train.train"' in page
    text = _text(page)
    signature = re.sub(r"\s+", " ", text[text.index("training.train.train"):])
    assert "train( config: TrainingConfig | None = None, *," in signature
    assert "resume: str | Path | None = None" in signature
    assert "Train a PPO policy on BattalionEnv." in text
    assert "Source code in training/train.py" in text
    # The source block holds the function's code, docstring included.
    assert "def train(config: TrainingConfig | None = None, *," in text
    assert '"""Train a PPO policy on :class:`~envs.battalion_env.BattalionEnv`.' in text


@pytest.mark.slow
def test_sphinx_roles_become_links(site: Path) -> None:
    page = (site / "api/training/index.html").read_text(encoding="utf-8")
    # ":class:`~envs.battalion_env.BattalionEnv`" in train's docstring links to the envs page.
    assert re.search(r'<a [^>]*href="../envs/#envs\.battalion_env\.BattalionEnv"[^>]*>'
                     r"<code>BattalionEnv</code></a>", page)
    prose = re.sub(r"<pre.*?</pre>", "", page, flags=re.S)
    assert not re.search(r":(class|func|meth|mod|data|attr):", _text(prose))


def test_role_rewriting() -> None:
    spec = importlib.util.spec_from_file_location(
        "griffe_sphinx_roles", ROOT / "docs" / "griffe_sphinx_roles.py")
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    griffe = pytest.importorskip("griffe")
    module = griffe.Module("pkg")
    module.set_member("Thing", griffe.Class("Thing"))
    func = griffe.Function("use")
    module.set_member("use", func)
    rewritten = roles.rewrite_roles(
        "See :class:`~a.b.C`, :func:`x.y` and :class:`Thing`; ``:mod:`` alone stays.", func)
    assert rewritten == (
        'See <autoref identifier="a.b.C" optional><code>C</code></autoref>, '
        '<autoref identifier="x.y" optional><code>x.y</code></autoref> and '
        '<autoref identifier="pkg.Thing" optional><code>Thing</code></autoref>; '
        "``:mod:`` alone stays.")
