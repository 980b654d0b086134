"""Connecting to Ray: an existing cluster, or a local one that listens and connects on
loopback only.

:func:`connect` uses a cluster reached through an address as it is (its owner chose how
it listens), or starts a local one with no dashboard, no usage statistics, no metrics
collection and no cloud-metadata probes, every Ray process binding and connecting to
127.0.0.1 or to Unix sockets (``tests/distributed/test_loopback.py`` checks it with
``strace``). Two of those need more than Ray's own switches, which
:func:`loopback_environment` and :func:`private_home` supply: the node address
(``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``) and the cloud probe (``HOME`` pointing at a
folder of ours that names a local provider). ``docs/distributed.md`` ("A local cluster
stays on loopback") says why each is needed.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

logger = logging.getLogger(__name__)

INSTALL_HINT = 'pip install -e ".[distributed]"'
"""How to install Ray for this project (the optional extra)."""

LOOPBACK_ENVIRONMENT = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # Ray's switch for single-machine clusters: the node address becomes loopback.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
}
"""Environment variables set before a local cluster starts (its processes inherit them)."""

BOOTSTRAP_CONFIG = "ray_bootstrap_config.yaml"
LOCAL_INIT_KWARGS: dict[str, Any] = {
    "include_dashboard": False,
    "_node_ip_address": "127.0.0.1",
    "_system_config": {"enable_metrics_collection": False},
}
"""``ray.init`` arguments of a local cluster (a caller's ``init_kwargs`` win)."""


def import_ray() -> ModuleType:
    """The ``ray`` module.

    Raises:
        ImportError: if Ray is not installed, saying how to install it.
    """
    try:
        import ray
    except ImportError as error:  # pragma: no cover - the test environment has Ray
        raise ImportError(f"Ray is not installed; distributed runs need it: {INSTALL_HINT}"
                          ) from error
    return ray


def private_home() -> Path:
    """The folder a local head starts in as ``HOME``: it holds a bootstrap config that
    names the provider ``local``, so the head does not probe cloud metadata."""
    home = Path(tempfile.gettempdir()) / f"wargames-ray-{os.getuid()}" / "home"
    home.mkdir(parents=True, exist_ok=True)
    config = home / BOOTSTRAP_CONFIG
    if not config.exists():
        config.write_text("provider: {type: local}\n")
    return home


@contextmanager
def loopback_environment() -> Iterator[None]:
    """Start Ray processes inside this block to keep them on loopback (see the module).

    The variables of :data:`LOOPBACK_ENVIRONMENT` stay set afterwards (worker processes
    started later inherit them from the cluster anyway); ``HOME`` is restored.
    """
    os.environ.update(LOOPBACK_ENVIRONMENT)
    constants = _loaded_ray_constants()
    if constants is not None:
        # Ray was imported before the variable was set: its constant is already read.
        constants.ENABLE_RAY_CLUSTER = False
    home = os.environ.get("HOME")
    os.environ["HOME"] = str(private_home())
    try:
        yield
    finally:
        if home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = home


def _loaded_ray_constants() -> Any:
    return sys.modules.get("ray._private.ray_constants")


def connect(address: str | None = None, *, num_cpus: int | None = None,
            min_cpus: float = 0.0, init_kwargs: Mapping[str, Any] | None = None) -> bool:
    """Make sure Ray is initialised in this process.

    Args:
        address: a running cluster (``"auto"``, ``"host:port"``, ``"ray://..."``), or
            None to start a local cluster on loopback.
        num_cpus: logical CPUs of a local cluster; None: this machine's cores.
        min_cpus: CPUs the caller's workers will ask for. A local cluster gets at
            least that many logical CPUs, so that 4 workers of one CPU run (more slowly)
            on a 2-core laptop rather than waiting forever.
        init_kwargs: further ``ray.init`` arguments.

    Returns:
        True if this call started or joined Ray, False if it was already initialised
        (then ``address`` and the rest are not used).

    Raises:
        ImportError: if Ray is not installed.
        ValueError: for ``num_cpus`` < 1.
    """
    ray = import_ray()
    if ray.is_initialized():
        return False
    kwargs = dict(init_kwargs or {})
    kwargs.setdefault("configure_logging", False)
    if num_cpus is None:
        num_cpus = kwargs.pop("num_cpus", None)  # also accepted among ray.init's arguments
    else:
        kwargs.pop("num_cpus", None)
    if address is not None:
        ray.init(address=address, **kwargs)
        logger.info("joined the Ray cluster at %s", address)
        return True
    if num_cpus is not None and (not isinstance(num_cpus, int) or num_cpus < 1):
        raise ValueError(f"ray.num_cpus={num_cpus!r} is invalid: expected null or an integer "
                         ">= 1")
    cpus = num_cpus or os.cpu_count() or 1
    if cpus < min_cpus:
        logger.warning("the local Ray cluster gets %d logical CPUs for workers asking for %g "
                       "on %d cores: they share the cores", math.ceil(min_cpus), min_cpus, cpus)
        cpus = math.ceil(min_cpus)
    for key, value in LOCAL_INIT_KWARGS.items():
        kwargs.setdefault(key, value)
    with loopback_environment():
        # "local": always a new cluster (without it Ray joins the latest one started on
        # this machine, say by another process's tests, which owns its resources).
        ray.init(address="local", num_cpus=cpus, **kwargs)
    logger.info("started a local Ray cluster with %d CPUs on loopback", cpus)
    return True


def disconnect(started: bool) -> None:
    """``ray.shutdown()`` if ``started`` (the value :func:`connect` returned)."""
    if started:
        import_ray().shutdown()


__all__ = ["BOOTSTRAP_CONFIG", "INSTALL_HINT", "LOCAL_INIT_KWARGS", "LOOPBACK_ENVIRONMENT",
           "connect", "disconnect", "import_ray", "loopback_environment", "private_home"]
