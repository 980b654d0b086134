"""Fault and fuzz campaign: concurrency, SIGKILL at every kind of file event, hostile files.

Runs, at the issue's sizes, what ``tests/reliability/`` runs small:

- 4 processes x 200 Elo updates of one agent; 4 x 200 registrations of the same
  artifacts in one manifest; 4 x 200 recordings of the same match ids;
- SIGKILL at 20 file events of a PPO run (self-play, Elo, manifest) and of a
  MAPPO run, each followed by ``resume.auto``;
- the hostile files through every loader, with the real archive limit and a
  3 GiB zip bomb.

- the fuzz of the public API (``benchmarks/fuzz.py``, which runs it alone).

Prints Markdown tables.

Usage::

    python -m benchmarks.reliability [--kills 20] [--updates 200] [--fuzz-calls 10000]
        [--out DIR]
"""

from __future__ import annotations

import collections
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import argument_parser
from tests.reliability import concurrency, kills
from tests.reliability.fuzz import run_fuzz

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--bomb-mib", type=int, default=3 * 1024)
    parser.add_argument("--fuzz-calls", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = (args.out or Path(tempfile.mkdtemp(prefix="reliability_"))).resolve()
    out.mkdir(parents=True, exist_ok=True)

    print("## Concurrent writers (4 processes)\n")
    print("| scenario | expected | found |")
    print("|---|---:|---:|")
    for label, run in (
            (f"{args.updates} Elo updates of one agent each", concurrency.elo_updates),
            (f"{args.updates} registrations of the same artifacts each",
             concurrency.manifest_registrations),
            (f"{args.updates} recordings of the same match ids each",
             concurrency.duplicate_matches)):
        folder = out / run.__name__
        folder.mkdir()
        counts = run(folder, args.updates)
        print(f"| {label} | {counts.expected} | {counts.found} |")

    print(f"\n## SIGKILL at file events, then resume.auto ({args.kills} per trainer)\n")
    print("| trainer | kills | by event kind | resumed from newest complete checkpoint | "
          "temp files left after resume | snapshots without a rating |")
    print("|---|---:|---|---:|---:|---:|")
    for algo in ("ppo", "mappo"):
        started = time.perf_counter()
        results = kills.trials(algo, out / f"kills_{algo}", args.kills)
        kinds = collections.Counter(r.event.split()[0] for r in results)
        newest = sum(r.resumed_from == r.newest_on_disk for r in results)
        print(f"| {algo} | {sum(r.killed for r in results)} | "
              + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
              + f" | {newest}/{len(results)} | "
              f"{sum(len(r.temporaries_left) for r in results)} | "
              f"{sum(len(r.unrated) for r in results)} |")
        print(f"<!-- {algo}: {time.perf_counter() - started:.0f} s -->")

    print(f"\n## Hostile files (real archive limit, {args.bomb_mib:,} MiB zip bomb)\n")
    result = subprocess.run(
        [sys.executable, "-m", "tests.reliability.hostile", str(out / "hostile"),
         "--bomb-mib", str(args.bomb_mib)], cwd=ROOT, capture_output=True, text=True,
        timeout=3600)
    if result.returncode != 0:
        raise SystemExit(result.stderr[-3000:])
    cases = [json.loads(line) for line in result.stdout.splitlines()]
    by_loader: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for case in cases:
        by_loader[case["loader"]][case["outcome"]] += 1
        by_loader[case["loader"]]["payload"] += case["payload_ran"]
    print("| loader | hostile files | refused by a named error | bad line skipped | "
          "loaded | raw error | hung | payload ran |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for loader, c in by_loader.items():
        total = sum(v for k, v in c.items() if k != "payload")
        print(f"| {loader} | {total} | {c['refused']} | {c['skipped']} | {c['loaded']} | "
              f"{c['raw']} | {c['hung']} | {c['payload']} |")
    print(f"\nkinds: {', '.join(sorted({c['kind'] for c in cases}))}; files: {out}")

    (out / "fuzz").mkdir(exist_ok=True)
    logging.disable(logging.WARNING)  # pools and solvers log what they refuse
    report = run_fuzz(args.fuzz_calls, 0, out / "fuzz")
    print(f"\n## Fuzz of the public API ({report.n_calls:,} invalid calls, "
          f"{report.seconds:.0f} s)\n")
    print(report.markdown())


if __name__ == "__main__":
    main()
