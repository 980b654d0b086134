"""The reference pages say what the code declares: the configuration reference is what the
settings' declarations give, the console scripts page lists every option of every
command, and every page of the site is one click from its index."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _config_reference():
    spec = importlib.util.spec_from_file_location("make_config_reference",
                                                  DOCS / "make_config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_page_is_what_the_declarations_give():
    expected = _config_reference().render()
    assert (DOCS / "configuration.md").read_text(encoding="utf-8") == expected, (
        "docs/configuration.md is out of date: run python docs/make_config_reference.py")


def test_configuration_page_lists_every_setting_of_every_trainer():
    import dataclasses

    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for config_file, _, _ in _config_reference().config_files():
        if config_file.name.startswith("league/"):
            continue  # the roles list what differs from MAPPOConfig
        for spec in dataclasses.fields(config_file.settings[0]):
            key = spec.metadata["yaml"].split(".")[1]
            assert f"| `{key}` |" in page, f"{spec.metadata['yaml']} is not on the page"


SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
ARGPARSE_SCRIPTS = {"wargames-evaluate", "wargames-demo", "wargames-export", "wargames-play"}
"""The scripts with options of their own; the two trainers are Hydra command lines."""


def _section(page: str, script: str) -> str:
    start = page.index(f"## {script}\n")
    end = page.find("\n## ", start + 1)
    return page[start:end if end > 0 else None]


def test_every_console_script_has_a_section():
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    for script, target in SCRIPTS.items():
        assert f"## {script}\n" in page, f"docs/cli.md has no section for {script}"
        assert f"`{target.split(':')[0]}`" in page, f"docs/cli.md does not name {target}"


@pytest.mark.parametrize("script", sorted(ARGPARSE_SCRIPTS))
def test_cli_page_lists_every_option_help_prints(script):
    module, _, function = SCRIPTS[script].partition(":")
    main = getattr(importlib.import_module(module), function)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["--help"])
    printed = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", out.getvalue())) - {"--help"}
    section = _section((DOCS / "cli.md").read_text(encoding="utf-8"), script)
    missing = sorted(option for option in printed if f"`{option}`" not in section)
    assert not missing, f"docs/cli.md's {script} section lacks {missing}"
    listed = set(re.findall(r"^\| `(--[a-z][\w-]*)`", section, re.M))
    assert not listed - printed, f"{script} has no option {sorted(listed - printed)}"


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return [page for item in node for page in _nav_pages(item)]


def test_every_page_of_the_nav_is_one_click_from_the_index():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))
    pages = _nav_pages(config["nav"])
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w/.-]+\.md)", index))
    missing = [page for page in pages if page != "index.md" and page not in linked]
    assert not missing, f"docs/index.md does not link {missing}"
    files = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert not files - set(pages), f"pages outside the nav: {sorted(files - set(pages))}"
