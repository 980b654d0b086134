"""One local Ray cluster per test module (on loopback: envs.remote.cluster)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of 4 logical CPUs for the module's tests; the ``ray`` module."""
    import ray

    from envs.remote.cluster import connect

    if ray.is_initialized():  # left over by a test that failed half-way
        ray.shutdown()
    connect(num_cpus=4)
    yield ray
    ray.shutdown()


@pytest.fixture
def one_torch_thread():
    """Torch on one thread, as on the workers (and much faster for these small batches)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
