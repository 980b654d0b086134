"""One local Ray cluster (on loopback: envs.remote.cluster) for the test modules that use
it one after another in a test process, started again only when needed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

CLUSTER_CPUS = 4
_started: dict[str, str | None] = {"address": None}
"""The address of the cluster :func:`ray_cluster` last started in this process."""


def _ours_and_idle(ray) -> bool:
    """Whether Ray runs the cluster this fixture started, with every CPU free (the last
    module's actors gone: their release reaches the cluster's view within a moment)."""
    if not ray.is_initialized() or \
            ray.get_runtime_context().gcs_address != _started["address"]:
        return False
    deadline = time.monotonic() + 10
    while ray.available_resources().get("CPU", 0) < CLUSTER_CPUS:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of 4 logical CPUs, all free, for the module's tests; the ``ray``
    module.

    Starting one (its head processes and idle workers) costs some 10 CPU-seconds, so a
    module after another that used it gets the same cluster when nothing of the last
    module is left on it; otherwise (a first module, a cluster shut down or replaced by a
    test that starts its own, CPUs still held) it gets a new one. It is shut down when
    the tests leave this folder (:func:`pytest_runtest_teardown`).
    """
    import ray

    from envs.remote.cluster import connect

    if not _ours_and_idle(ray):
        if ray.is_initialized():
            ray.shutdown()
        connect(num_cpus=CLUSTER_CPUS)
        _started["address"] = ray.get_runtime_context().gcs_address
    yield ray


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of this folder (its fixtures torn down), shut down the cluster
    :func:`ray_cluster` started, so that none runs idle beside the rest of the suite."""
    if _started["address"] is None or \
            (nextitem is not None and nextitem.path.is_relative_to(Path(__file__).parent)):
        return
    import ray

    if ray.is_initialized() and ray.get_runtime_context().gcs_address == _started["address"]:
        ray.shutdown()
    _started["address"] = None


@pytest.fixture
def one_torch_thread():
    """Torch on one thread, as on the workers (and much faster for these small batches)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
