"""Write ``docs/results.md``, the one page of results, from the benchmarks' records.

The page is built from ``benchmarks/results.yaml`` (each benchmark's recorded result:
what was trained, the command, the protocol, the seeds, the commit that recorded it, its
date and machine, and whether it still measures the shipped defaults) and from the
reports the benchmarks write themselves, read as they are: ``docs/wfm1_benchmark.md``,
``docs/historical_benchmark.md`` and ``docs/transfer_benchmark_<site>.md``. User pages
quote their numbers from it (``tests/test_results_page.py`` says how, and checks it).

Usage::

    python -m benchmarks.results_page            # write docs/results.md
    python -m benchmarks.results_page --check    # exit 1 if docs/results.md is not up to date
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchmarks import argument_parser

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "benchmarks" / "results.yaml"
"""The recorded results."""
PAGE = ROOT / "docs" / "results.md"
"""The page this module writes."""

STATUS = {
    "default": "default",
    "recipe": "other recipe",
    "stale": "**stale**",
}
"""How each record's status reads on the page."""


@dataclass(frozen=True)
class Table:
    """A table of a record: its header and its rows of cells."""

    columns: list[str]
    rows: list[list[str]]


def load_records(path: Path = RECORDS) -> dict[str, Any]:
    """The records file, parsed (``machines`` and ``sections``)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _cells(line: str) -> list[str]:
    """The cells of one Markdown table line."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table_after(text: str, first_cell: str) -> list[list[str]]:
    """The rows (header included) of the first Markdown table whose header starts with
    ``first_cell``."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and _cells(line)[0] == first_cell:
            rows = [_cells(line)]
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(_cells(row))
            return rows
    raise ValueError(f"no table starting with {first_cell!r}")


def _plain(cell: str) -> str:
    return cell.replace("**", "").strip()


def wfm1_report(path: Path) -> tuple[Table, list[list[str]]]:
    """The WFM-1 benchmark report's mean win rate per condition."""
    rows = _table_after(path.read_text(encoding="utf-8"), "scenario")
    header, means = rows[0], next(r for r in rows if _plain(r[0]) == "mean win rate")
    names = {"zero-shot": "zero-shot", "fine-tuned": "fine-tuned (card adapter)",
             "specialist": "specialists", "doctrine (reference)": "the doctrine commanding Blue"}
    pairs = zip(header[1:], means[1:], strict=True)
    table = Table(["condition", "mean win rate"], [[names.get(h, h), _plain(v)] for h, v in pairs])
    return table, [["held-out scenarios, zero-shot", _plain(means[1])]]


def historical_report(path: Path) -> tuple[Table, list[list[str]]]:
    """The historical benchmark's headline measures (held out, in sample, all battles)."""
    rows = _table_after(path.read_text(encoding="utf-8"), "measure")
    table = Table(["measure", "held out (headline)", "training split", "all battles"],
                  [[_plain(c) for c in row] for row in rows[1:]])
    match = next(r for r in table.rows if r[0].startswith("winner match"))
    return table, [["history's winner, held-out battles", match[1]]]


def transfer_reports(pattern: str, sites: list[str]) -> tuple[Table, list[list[str]]]:
    """Won / drawn / lost of each transfer report's conditions, a row per site."""
    conditions = ("procedural_baseline", "zero_shot_gis", "finetuned_gis")
    table = Table(["site", "procedural field", "the site's ground, zero-shot",
                   "the site's ground, fine-tuned"], [])
    zero_shot = []
    for site in sites:
        rows = _table_after((ROOT / pattern.format(site=site)).read_text(encoding="utf-8"),
                            "condition")
        by_name = {row[0]: row for row in rows[1:]}
        table.rows.append([site] + [" / ".join(by_name[c][1:4]) for c in conditions])
        zero_shot.append(by_name["zero_shot_gis"][1])
    low, high = min(zero_shot, key=_percent), max(zero_shot, key=_percent)
    won = low if low == high else f"{low}-{high}"
    return table, [["won on the sites' ground, zero-shot", won]]


def _percent(cell: str) -> float:
    return float(cell.rstrip("%").strip())


REPORTS = {"wfm1": wfm1_report, "historical": historical_report}


def record_table(record: dict[str, Any]) -> tuple[Table | None, list[list[str]]]:
    """A record's table and headline: its own, or read from its report."""
    report = record.get("report")
    if report is None:
        table = record.get("table")
        return (Table(table["columns"], table["rows"]) if table else None,
                record.get("headline", []))
    if report["kind"] == "transfer":
        return transfer_reports(report["path"], report["sites"])
    return REPORTS[report["kind"]](ROOT / report["path"])


def _markdown_table(table: Table) -> list[str]:
    lines = ["| " + " | ".join(table.columns) + " |",
             "|" + "|".join("---" for _ in table.columns) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in table.rows]
    return lines


def _source_link(source: str) -> str:
    if source == "report":
        return "the report itself"
    if source.startswith("research/"):
        path, _, anchor = source.partition("#")
        return f"[{path.split('/')[-1].removesuffix('.md').replace('-', ' ')}]({source})"
    return source


def _report_link(record: dict[str, Any]) -> str:
    report = record["report"]
    if report["kind"] == "transfer":
        links = [f"[{site}]({Path(report['path'].format(site=site)).name})"
                 for site in report["sites"]]
        return ", ".join(links)
    return f"[`{Path(report['path']).name}`]({Path(report['path']).name})"


def render(records: dict[str, Any]) -> str:
    """The page's Markdown."""
    machines = records["machines"]
    out = [
        "# Results",
        "",
        "<!-- Generated by `python -m benchmarks.results_page` from "
        "benchmarks/results.yaml and the benchmarks' reports: edit those, not this page. -->",
        "",
        "Every result the documentation states, in one place: what was trained, the command "
        "that reproduces it, the battles it was measured on, the seeds, the commit that "
        "recorded it, its date and its machine. The other pages quote their numbers from "
        "here, and the test suite checks that they do (`tests/test_results_page.py`). The "
        "runs, curves and ablations behind each row are in the [research notes](#research-notes).",
        "",
        "A row's **status** says what it measures today:",
        "",
        "- **default**: the stack's shipped defaults, as they were at the recorded commit;",
        "- **other recipe**: a recipe other than the shipped default (it is named);",
        "- **stale**: the defaults it claims to measure have changed since it was recorded; "
        "the command beside it measures them again.",
        "",
        "Rows are not re-run at every commit: a row holds for the recorded commit. Changes "
        "that should not move a trainer's results are checked with "
        "`python -m benchmarks.fingerprints` (digests of short runs) instead.",
        "",
        "Machines: " + "; ".join(f"**{key}**, {text}" for key, text in machines.items()) + ".",
        "",
        "## Summary",
        "",
        "| stack | result (mean / min over seeds) | seeds | recorded | machine | status |",
        "|---|---|---|---|---|---|",
    ]
    sections = records["sections"]
    for section in sections:
        for record in section["records"]:
            _, headline = record_table(record)
            result = "; ".join(f"{against}: {value}" for against, value in headline)
            seeds = str(record["seeds"]).split(",")[0]
            rec = record["recorded"]
            out.append(f"| [{record['name']}](#{record['id'].replace('_', '-')}) | {result} | "
                       f"{seeds} | {rec['commit']}, {rec['date']} | {record['machine']} | "
                       f"{STATUS[record['status']]} |")
    for section in sections:
        out += ["", f"## {section['title']} {{ #{section['anchor']} }}", "",
                section["intro"].strip()]
        for record in section["records"]:
            table, _ = record_table(record)
            rec = record["recorded"]
            out += ["", f"### {record['name']} {{ #{record['id'].replace('_', '-')} }}", ""]
            status = STATUS[record["status"]]
            if record.get("status_note"):
                status += f": {record['status_note'].strip()}"
            facts = [
                f"- **Status**: {status}.",
                f"- **Recipe**: {record['recipe'].strip()}.",
                f"- **Command**: `{record['command']}`",
                f"- **Protocol**: {record['protocol']}.",
                f"- **Recorded**: commit {rec['commit']}, {rec['date']}, on the "
                f"{record['machine']} machine.",
            ]
            if record["seeds"] != "-":
                facts.insert(4, f"- **Seeds**: {record['seeds']}.")
            if record["source"] == "report":
                facts.append(f"- **Source**: {_report_link(record)}, as the benchmark wrote it.")
            else:
                facts.append(f"- **Source**: {_source_link(record['source'])}.")
            out += facts
            if table is not None:
                out += [""] + _markdown_table(table)
            for note in record.get("notes", []):
                out += ["", note.strip()]
    out += ["", "## Research notes", "",
            "The experiment logs behind these rows, dated, with their commits and machines:",
            "", "- [Performance log](research/performance-log.md): every benchmark table, "
            "its curves and the runs before the current defaults;",
            "- [PPO duel ablations](research/ppo-duel-ablations.md) and "
            "[MAPPO studies](research/mappo-studies.md): how each default was chosen, on the "
            "validation split;",
            "- [Distributed measurements](research/distributed-measurements.md), "
            "[reliability campaigns](research/reliability-campaigns.md), "
            "[scripted levels: calibration](research/scripted-levels-calibration.md).", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/results.md is not what the records give")
    args = parser.parse_args(argv)
    text = render(load_records())
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python -m {__spec__.name}")
            sys.exit(1)
        print(f"{PAGE.relative_to(ROOT)} is up to date")
        return
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
