"""Batches of N-vs-M battles on Ray workers: the worker that owns them, and the actors of
the reference API's ``make_remote_envs``.

:class:`BattleWorker` is a :class:`~envs.remote.batch_env.MultiBattalionBatchEnv`
that plays the seeds it is dealt as one batch, on one thread, and says how long that
took; a :class:`~envs.remote.workers.WorkerGroup` of them is what the reference API's
``DistributedRolloutRunner`` drives (its workers add only the shape of their answer).
:func:`make_remote_envs` starts ``RemoteMultiBattalionEnv`` actors through the same
worker group.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Sequence
from typing import Any

from envs.remote.batch_env import Commander, MultiBattalionBatchEnv
from envs.remote.cluster import import_ray
from envs.remote.workers import WorkerGroup
from envs.sim.kernels import set_num_threads
from envs.sim.validation import check_int, check_keywords, check_positive

ENV_KEYS = tuple(name for name in inspect.signature(MultiBattalionBatchEnv).parameters
                 if name != "n_battles")
"""The keyword arguments a battle worker takes: ``MultiBattalionEnv``'s."""


def check_env_kwargs(env_kwargs: Any) -> dict[str, Any]:
    """``env_kwargs`` as a dict of MultiBattalionEnv keywords, values checked by building
    one battle here (so a mistake is reported in the driver, not by every worker).

    Raises:
        ValueError: for anything but None or a dict, an unknown key or a bad value.
    """
    kwargs = check_keywords("env_kwargs", env_kwargs, ENV_KEYS,
                            "MultiBattalionEnv keyword arguments")
    MultiBattalionBatchEnv(**kwargs)
    return kwargs


class BattleWorker(MultiBattalionBatchEnv):
    """A Ray worker's body: the battles of ``env_kwargs`` (as for ``MultiBattalionEnv``),
    played a dealt share of seeds at a time."""

    def play(self, seeds: Sequence[int], blue: Commander | int | None,
             red: Commander | int | None, record_observations: bool
             ) -> tuple[list[dict[str, Any]], float]:
        """One battle per seed as one batch (:meth:`run_episodes`): the episodes, and the
        seconds they took."""
        torch = sys.modules.get("torch")
        if torch is not None and torch.get_num_threads() != 1:
            # One thread, as in the sequential comparison: a battle's sampled orders are
            # then the same bits on every worker and in the driver. Torch is loaded by
            # the first policy that arrives, hence the check on every call.
            torch.set_num_threads(1)
        set_num_threads(1)  # the simulator's threads: a worker reserves one CPU
        start = time.perf_counter()
        episodes = self.run_episodes(seeds, blue, red, None, record_observations)
        return episodes, time.perf_counter() - start

    def node_id(self) -> str:
        """The Ray node this worker runs on."""
        return import_ray().get_runtime_context().get_node_id()


def make_remote_envs(num_envs: int, num_cpus_per_env: float = 1.0,
                     **env_kwargs: Any) -> list[Any]:
    """``num_envs`` ``RemoteMultiBattalionEnv`` actors, each reserving ``num_cpus_per_env``
    CPUs, spread over the cluster's nodes (the actors of a
    :class:`~envs.remote.workers.WorkerGroup`; killing them is the caller's).

    Args:
        num_envs: how many (>= 1).
        num_cpus_per_env: logical CPUs each reserves (> 0).
        **env_kwargs: MultiBattalionEnv keyword arguments (and ``n_battles``, the batch
            of their ``reset``/``step``).

    Raises:
        RuntimeError: if Ray is not initialised (``ray.init()`` or
            :func:`envs.remote.cluster.connect` first).
        ValueError: for a bad count or keyword, or a cluster with fewer CPUs than the
            actors reserve.
    """
    ray = import_ray()
    if not ray.is_initialized():
        raise RuntimeError("make_remote_envs needs Ray initialised: call ray.init() or "
                           "envs.remote.cluster.connect() first")
    num_envs = check_int("num_envs", num_envs, minimum=1)
    num_cpus = check_positive("num_cpus_per_env", num_cpus_per_env)
    n_battles = env_kwargs.pop("n_battles", 1)
    kwargs = check_env_kwargs(env_kwargs)
    check_int("n_battles", n_battles, minimum=1)
    group = WorkerGroup(MultiBattalionBatchEnv, num_envs, kwargs=dict(kwargs, n_battles=n_battles),
                        num_cpus=num_cpus, name="remote env")
    return group.actors


__all__ = ["ENV_KEYS", "BattleWorker", "check_env_kwargs", "make_remote_envs"]
