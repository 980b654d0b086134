"""Fuzz of the public API (silent acceptance): every invalid call raises a named
error from our code; none is accepted, none fails inside NumPy, torch or pathlib, none hangs.

``benchmarks/fuzz.py`` runs the same fuzz with 10,000 calls and more.
"""

from __future__ import annotations

import time

import numpy as np

from envs.sim.validation import check_int
from tests.reliability import fuzz
from tests.reliability.fuzz import Boundary, baseline_errors, judge_call, run_fuzz

N_CALLS = 1500


def test_every_baseline_call_is_valid(tmp_path):
    # A fuzz that changes one argument of a call only means something if the call
    # without the change works.
    errors = baseline_errors(tmp_path)
    assert errors == dict.fromkeys(errors)


def test_every_invalid_call_raises_a_named_error(tmp_path):
    report = run_fuzz(N_CALLS, seed=0, workdir=tmp_path)
    assert report.total("calls") == N_CALLS
    assert all(c.calls >= N_CALLS // len(report.counts) for c in report.counts.values())
    shown = "\n".join(f"{f.boundary} {f.argument}={f.value}: {f.kind}: {f.detail}"
                      for f in report.failures[:20])
    assert not report.failures, (f"{len(report.failures)} calls were not refused by a named "
                                 f"error:\n{shown}")
    assert report.total("named") == N_CALLS


def test_the_judge_sees_silence_raw_errors_unclear_errors_and_hangs(monkeypatch):
    def accepts(ctx, x=0):
        return x

    def numpy_fails(ctx, x=0):
        np.ones(2).reshape(x)

    def unnamed(ctx, x=0):
        raise ValueError("something is wrong")

    def unclear(ctx, count=0):
        check_int("other", count, maximum=1)  # from our code, but naming another argument

    def named(ctx, x=0):
        check_int("x", x, maximum=1)  # raised from our code, naming x

    def slow(ctx, x=0):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pass

    def check(function):
        return judge_call(Boundary("b", function, {"x": [5]}), "x", 5)[0]

    monkeypatch.setattr(fuzz, "HANG_S", 0.2)
    assert check(accepts) == "silent"
    assert check(numpy_fails) == "raw"
    assert check(unnamed) == "raw"  # raised outside our code
    assert judge_call(Boundary("b", unclear, {"count": [5]}), "count", 5)[0] == "unclear"
    assert check(named) == "named"
    assert check(slow) == "hang"
    missing = Boundary("b", lambda ctx, x=0: open("/nonexistent/x"), {"x": [5]},
                       baseline_error=FileNotFoundError)
    assert judge_call(missing, "x", 5)[0] == "silent"
