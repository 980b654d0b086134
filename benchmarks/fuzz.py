"""Fuzz of the public API at the issue's size: at least 10,000 invalid calls.

Every call passes one invalid argument (wrong type, non-finite or huge number,
out-of-range value, seed that would wrap, array of strings, objects, complex
numbers or booleans, wrong shape, id with a control character, path with a NUL,
misspelt nested key, file nested too deep) to one public entry point (the envs,
echelon envs and SMDP wrapper, batches, configs, trainers' overrides,
``evaluate``, the league, ``entity_tokens``, ``play_scenario``, WFM-1's ``act``,
the scenario, replay and config loaders), and must raise a ``ValueError``,
``TypeError`` or ``KeyError`` from our code that names the argument. See
``tests/reliability/fuzz.py`` for the boundaries, the values and how a call is
judged; a call running over 5 s is a hang.

Prints a Markdown table (boundary, calls, named, unclear, raw, silent, hang) and
every call that was not refused by a named error. Exits 1 if there is any.

Usage::

    python -m benchmarks.fuzz [--calls 10000] [--seed 0]
"""

from __future__ import annotations

import logging

from benchmarks import argument_parser
from tests.reliability.fuzz import run_fuzz


def main(argv: list[str] | None = None) -> int:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # pools and solvers log what they refuse

    report = run_fuzz(args.calls, args.seed)
    print(f"Fuzz of the public API: {report.n_calls:,} invalid calls over "
          f"{len(report.counts)} boundaries, seed {report.seed}, {report.seconds:.1f} s\n")
    print(report.markdown())
    if report.failures:
        print(f"\n{len(report.failures)} failures (first 30):")
        for f in report.failures[:30]:
            print(f"- {f.boundary} {f.argument}={f.value}: {f.kind}: {f.detail}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
