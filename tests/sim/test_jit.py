"""The kernels' on-disk cache: one process at a time reads or writes a cache directory."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from envs.sim import jit
from envs.sim.terrain import normalise_elevation


def test_a_kernel_outside_the_kernel_sources_is_refused():
    with pytest.raises(ValueError, match="expected one of envs/"):
        jit.kernel()(lambda x: x)


def test_cache_entries_are_read_while_no_one_writes_them(monkeypatch):
    """A load waits for a save in progress (a save reads the index, picks a data file and
    writes both: interleaved with another process's save, an index entry could point at
    another signature's machine code)."""
    normalise_elevation(np.ones((1, 2, 2)))  # the kernel compiled or loaded
    dispatcher = jit_dispatcher()
    signature = dispatcher.signatures[0]
    cache = dispatcher._cache
    inside, release, loaded = threading.Event(), threading.Event(), threading.Event()

    def slow_save(sig, data):  # Numba's save, stopped half-way
        inside.set()
        release.wait(30)

    monkeypatch.setattr(cache, "_save_overload", slow_save)
    saving = threading.Thread(target=cache.save_overload, args=(signature, None))
    loading = threading.Thread(target=lambda: (
        cache.load_overload(signature, dispatcher.targetctx), loaded.set()))
    saving.start()
    assert inside.wait(30)
    loading.start()
    assert not loaded.wait(0.5)  # the save holds the directory's lock
    release.set()
    saving.join(30)
    loading.join(30)
    assert loaded.is_set()
    assert (jit.Path(cache._cache_path) / jit.CACHE_LOCK).exists()


def jit_dispatcher():
    from envs.sim import terrain

    return terrain._normalise_maps


@pytest.mark.parametrize("given", [None, "ACTIVE"])
def test_openmp_threads_wait_asleep_unless_the_environment_says_otherwise(given):
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    # The C environment, which OpenMP's runtime reads when the first parallel kernel
    # starts it.
    read = ("import ctypes, envs.sim.jit; getenv = ctypes.CDLL(None).getenv; "
            "getenv.restype = ctypes.c_char_p; print(getenv(b'OMP_WAIT_POLICY').decode())")
    out = subprocess.run([sys.executable, "-c", read], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == (given or "PASSIVE") and jit.WAIT_POLICY == "PASSIVE"
