"""The documentation stays in step with the code."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_model_constant_is_documented_in_simulation_md():
    source = (ROOT / "envs/sim/constants.py").read_text()
    names = [node.targets[0].id for node in ast.parse(source).body
             if isinstance(node, ast.Assign)]
    doc = (ROOT / "docs/simulation.md").read_text()
    missing = [name for name in names if f"`{name}`" not in doc]
    assert not missing, f"constants missing from docs/simulation.md: {missing}"


def test_simulation_md_states_the_kernels_chunking_and_threading():
    from envs.sim import kernels

    doc = " ".join((ROOT / "docs/simulation.md").read_text().split())
    assert f"chunks of {kernels.CHUNK} battles" in doc
    assert f"Batches of {kernels.PARALLEL_MIN_BATTLES} battles or more" in doc


def test_research_pages_state_their_date_commit_and_machine_and_are_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in sorted((ROOT / "docs" / "research").glob("*.md")):
        assert f"research/{page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"
        if page.name == "design-notes.md":  # dated per entry
            continue
        head = page.read_text()[:1500]
        for field in ("- Date:", "- Commit:", "- Machine:"):
            assert field in head, f"docs/research/{page.name} does not state {field!r}"


def test_guides_leave_work_log_labels_to_the_research_notes():
    """Experiment logs (per-issue and per-session studies) live in docs/research/."""
    import re

    label = re.compile(r"\b(issue|session)s? [0-9]", re.IGNORECASE)
    found = [f"{page.name}:{n}" for page in sorted((ROOT / "docs").glob("*.md"))
             if "_benchmark" not in page.name
             for n, line in enumerate(page.read_text().splitlines(), 1) if label.search(line)]
    assert not found, f"work-log labels in guides (move the log to docs/research/): {found}"


def _user_pages() -> list[Path]:
    """README.md and the site's pages a user reads (the research notes and the reports the
    benchmarks write are not among them)."""
    return [ROOT / "README.md", *(page for page in sorted((ROOT / "docs").glob("*.md"))
                                  if "_benchmark" not in page.name)]


def test_guides_hold_no_tried_headings():
    """What was tried and dropped is an experiment log: it lives in docs/research/."""
    import re

    heading = re.compile(r"^#+ .*\btried\b|^\*\*[^*]*\btried\b[^*]*\*\*", re.IGNORECASE)
    found = [f"{page.name}:{n}" for page in _user_pages()
             for n, line in enumerate(page.read_text().splitlines(), 1) if heading.search(line)]
    assert not found, f"'tried' headings in guides (move the log to docs/research/): {found}"


def test_user_pages_speak_the_users_words():
    """The project's working documents (its seeds, their tutorial) are not the user's."""
    import re

    internal = re.compile(r"\bthe seeds?'|\bseed tutorial\b|\bleague tutorial\b",
                          re.IGNORECASE)
    found = [f"{page.name}:{n}: {match.group(0)!r}" for page in _user_pages()
             for n, line in enumerate(page.read_text().splitlines(), 1)
             for match in [internal.search(line)] if match]
    assert not found, f"internal words on user pages: {found}"
