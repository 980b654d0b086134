"""One source for every result: ``docs/results.md``, and the pages that quote it.

The convention the user pages follow (README.md and ``docs/*.md`` but the research notes,
the generated reports and the generated reference pages):

- A result a user page states (a win rate, a speed, a compile time) is quoted inside a
  results block, between ``<!-- results -->`` and ``<!-- /results -->``. Every
  percentage in a block, and every number with a decimal point, a thousands separator,
  an ``x`` (a speed-up) or seconds, appears on ``docs/results.md`` (a percentage as a
  percentage).
- Outside the blocks, a sentence (or table row) that states a percentage beside a word of
  winning (won, wins, lost, beats...) is the reasoning behind a default: its section links
  the research note it comes from (``docs/research/``), and each of those percentages
  appears in a note the section links.
- ``docs/results.md`` is what ``python -m benchmarks.results_page`` writes from
  ``benchmarks/results.yaml`` and the benchmarks' reports, and each record's numbers
  appear in the section of the research note it names as its source.

Beside the numbers, the examples' paths and the settings tables: every ``checkpoints/``
path a user page names lies in a folder some trainer's config declares (or that the page
sets itself), and every table marked ``<!-- settings: module.Class -->`` gives each
setting its declared default.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest
import yaml

from benchmarks import results_page

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results.md"

GENERATED = {"results.md", "configuration.md"}
"""Pages written by a script: the results and the configuration reference."""


def user_pages() -> list[Path]:
    """README.md and the site's pages a user reads (not the research notes, the reports
    the benchmarks write, nor the generated pages)."""
    return [ROOT / "README.md", *(page for page in sorted(DOCS.glob("*.md"))
                                  if "_benchmark" not in page.name
                                  and page.name not in GENERATED)]


_NUMBER = re.compile(r"(?<![\w.,/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:(\s?%)|(x)\b|(\s?s)\b)?"
                     r"(?![\w])")
_BLOCK = re.compile(r"<!-- results -->(.*?)<!-- /results -->", re.S)
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_WIN = re.compile(r"\b(won|win|wins|winning|lost|loses|lose|beats?)\b", re.I)
_RESEARCH_LINK = re.compile(r"\]\((?:\.\./)?(research/[\w-]+\.md)")


def numbers(text: str) -> set[tuple[str, bool]]:
    """The significant numbers of ``text`` as ``(value, is_percentage)``: percentages, and
    numbers with a decimal point, a thousands separator, an ``x`` or seconds (plain
    integers, as in "L5", "2v2", "five seeds" or "200 battles", are not results)."""
    found = set()
    for match in _NUMBER.finditer(text):
        whole, decimal, percent, times, seconds = match.groups()
        if percent or decimal or "," in whole or times or seconds:
            found.add((whole + (decimal or ""), bool(percent)))
    return found


def results_numbers() -> tuple[set[str], set[str]]:
    """Every number on the results page, and those written as percentages."""
    found = numbers(RESULTS.read_text(encoding="utf-8"))
    plain = {value for value, _ in found}
    # Plain integers count too, for a quoted "100 %" of a table cell written "100 %".
    for match in _NUMBER.finditer(RESULTS.read_text(encoding="utf-8")):
        plain.add(match.group(1) + (match.group(2) or ""))
    return plain, {value for value, percent in found if percent}


def test_results_page_is_what_the_records_give():
    expected = results_page.render(results_page.load_records())
    assert RESULTS.read_text(encoding="utf-8") == expected, (
        "docs/results.md is out of date: run python -m benchmarks.results_page")


def _section(note: Path, anchor: str) -> str:
    """The text of the section of ``note`` whose heading's slug is ``anchor``, to the next
    heading of the same or a higher level."""
    lines = note.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        heading = re.match(r"^(#+)\s+(.*)$", line)
        if heading and _slug(heading.group(2)) == anchor:
            level = len(heading.group(1))
            end = next((j for j in range(i + 1, len(lines))
                        if re.match(rf"^#{{1,{level}}}\s", lines[j])), len(lines))
            return "\n".join(lines[i:end])
    raise AssertionError(f"{note.name} has no section #{anchor}")


def _slug(heading: str) -> str:
    """Python-Markdown's default slug of a heading (the anchors mkdocs links to)."""
    text = re.sub(r"[`*]", "", heading)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _records() -> list[dict]:
    return [record for section in results_page.load_records()["sections"]
            for record in section["records"]]


@pytest.mark.parametrize("record", _records(), ids=lambda record: record["id"])
def test_each_record_says_where_when_and_on_what_it_was_measured(record):
    for field in ("name", "status", "recipe", "command", "protocol", "seeds", "recorded",
                  "machine", "source"):
        assert record.get(field) not in (None, ""), f"{record['id']} has no {field}"
    assert record["status"] in results_page.STATUS
    assert record["status"] == "default" or record.get("status_note"), (
        f"{record['id']}: a status other than default says why (status_note)")
    assert re.fullmatch(r"[0-9a-f]{7,40}", str(record["recorded"]["commit"]))
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(record["recorded"]["date"]))
    assert record["machine"] in results_page.load_records()["machines"]


@pytest.mark.parametrize("record", [r for r in _records() if r["source"].startswith("research/")],
                         ids=lambda record: record["id"])
def test_each_record_is_what_its_research_note_recorded(record):
    path, _, anchor = record["source"].partition("#")
    section = _section(DOCS / path, anchor)
    in_note = {(match.group(1) + (match.group(2) or "")).replace(",", "")
               for match in _NUMBER.finditer(section)}
    cells = [value for _, value in record.get("headline", [])]
    cells += [cell for row in record.get("table", {}).get("rows", []) for cell in row[1:]]
    missing = sorted({value.replace(",", "") for cell in cells for value, _ in numbers(str(cell))}
                     - in_note)
    assert not missing, f"{record['id']}: not in {record['source']}: {missing}"


def _blocks(text: str) -> list[str]:
    return _BLOCK.findall(text)


@pytest.mark.parametrize("page", user_pages(), ids=lambda page: page.name)
def test_quoted_results_are_on_the_results_page(page):
    plain, percent = results_numbers()
    text = page.read_text(encoding="utf-8")
    assert text.count("<!-- results -->") == text.count("<!-- /results -->"), (
        f"{page.name}: a results block is not closed")
    missing = sorted(f"{value}{' %' if is_percent else ''}"
                     for block in _blocks(text) for value, is_percent in numbers(block)
                     if value not in (percent if is_percent else plain))
    assert not missing, (f"{page.name} quotes results that docs/results.md does not hold: "
                         f"{missing}")


def _sections(text: str) -> list[str]:
    """The page's sections (each from a heading to the next), code blocks removed."""
    text = _FENCE.sub("", _BLOCK.sub("", text))
    return re.split(r"(?m)^#{1,6} ", text)


@pytest.mark.parametrize("page", user_pages(), ids=lambda page: page.name)
def test_results_outside_quotes_come_from_the_research_notes_they_link(page):
    problems = []
    for section in _sections(page.read_text(encoding="utf-8")):
        notes = {DOCS / link for link in _RESEARCH_LINK.findall(section)}
        known = set()
        for note in notes:
            known |= {m.group(1) + (m.group(2) or "")
                      for m in _NUMBER.finditer(note.read_text(encoding="utf-8"))}
        for paragraph in re.split(r"\n\s*\n", section):
            # A percentage beside a word of winning in one sentence (or table row).
            stated = {value for sentence in re.split(r"(?<=[.;])\s+|\n(?=\|)", paragraph)
                      if _WIN.search(sentence)
                      for value, percent in numbers(sentence) if percent}
            if not stated:
                continue
            head = " ".join(paragraph.split())[:60] + f"... ({sorted(stated)})"
            if not notes:
                problems.append(f"{head!r}: quote it from results.md in a results block, or "
                                "link the research note it comes from")
            elif stated - known:
                problems.append(f"{head!r}: {sorted(stated - known)} not in "
                                f"{sorted(n.name for n in notes)}")
    assert not problems, f"{page.name}:\n" + "\n".join(problems)


# --- paths and defaults ---------------------------------------------------------------

def _declared_paths() -> set[str]:
    """Every path under ``checkpoints/`` that a trainer's config declares as a default,
    and the folders above them."""
    from training.echelons.config import CONFIG_FILES as ECHELONS
    from training.league.config import CONFIG_FILES as LEAGUE
    from training.mappo.config import CONFIG_FILE as MAPPO
    from training.ppo.config import CONFIG_FILE as PPO
    from training.wfm1.config import CONFIG_FILE as WFM1

    found = set()
    for config_file in [PPO, MAPPO, WFM1, *ECHELONS.values(), *LEAGUE.values()]:
        for settings in config_file.settings:
            for spec in dataclasses.fields(settings):
                value = (spec.default_factory() if spec.default is dataclasses.MISSING
                         else spec.default)
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str) and item.startswith("checkpoints/"):
                        found.add(item)
    from training.echelons.pipeline import run_hrl
    from training.policy_registry import DEFAULT_REGISTRY_PATH

    found.add(inspect.signature(run_hrl).parameters["root"].default)
    found.add(str(DEFAULT_REGISTRY_PATH))
    folders = set()
    for path in found:
        parts = Path(path).parts
        folders |= {"/".join(parts[:i]) for i in range(2, len(parts) + 1)}
    return folders


_PATH = re.compile(r"(?<![\w/.-])checkpoints/[\w./{}<>*-]*")


@pytest.mark.parametrize("page", user_pages(), ids=lambda page: page.name)
def test_example_checkpoint_paths_are_the_configs_defaults(page):
    declared = _declared_paths() | {"checkpoints/best"}  # SB3's best model, in checkpoint_dir
    text = page.read_text(encoding="utf-8")
    set_here = set(re.findall(r"""=\s*["'](checkpoints/[\w./-]+)["']""", text))
    wrong = []
    def known(folder: str) -> bool:
        return (folder == "checkpoints" or folder in declared
                or any(folder.startswith(d + "/") for d in declared))

    for found in sorted(set(_PATH.findall(text))):
        path = found.rstrip("/.")
        if any(mark in path for mark in "{<*") or path.endswith("..."):
            path = str(Path(path).parent)
        # A folder (written with its slash) must be known; a file may lie in a known one.
        ok = (known(path) or (not found.endswith("/") and known(str(Path(path).parent)))
              or any(path.startswith(s) for s in set_here))
        if not ok:
            wrong.append(found)
    assert not wrong, (f"{page.name} names checkpoint paths no config declares: {wrong} "
                       f"(declared folders: {sorted(declared)})")


_SETTINGS = re.compile(r"<!-- settings: ([\w.]+) -->\n((?:\|.*\n)+)")


def _settings_tables() -> list[tuple[Path, str, str]]:
    return [(page, cls, table) for page in user_pages()
            for cls, table in _SETTINGS.findall(page.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("page, cls, table", _settings_tables(),
                         ids=lambda x: x.name if isinstance(x, Path) else "")
def test_settings_tables_give_the_declared_defaults(page, cls, table):
    module, _, name = cls.rpartition(".")
    config = getattr(importlib.import_module(module), name)
    defaults = {spec.metadata["yaml"]: (spec.default_factory() if spec.default is
                                        dataclasses.MISSING else spec.default)
                for spec in dataclasses.fields(config)}
    wrong = []
    for row in table.strip().splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        key, shown = cells[0].strip("`"), cells[1].strip("`")
        assert key in defaults, f"{page.name}: {key} is not a setting of {name}"
        value = yaml.safe_load(shown)
        if value != defaults[key]:
            wrong.append(f"{key}: page {shown!r}, declared {defaults[key]!r}")
    assert not wrong, f"{page.name} ({name}): " + "; ".join(wrong)
