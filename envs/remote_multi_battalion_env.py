"""The reference API's ``RemoteMultiBattalionEnv``: a batch of N-vs-M battles as a Ray actor.

A face over the project's one Ray stack (:mod:`envs.remote`): the battles live in
:class:`~envs.remote.batch_env.MultiBattalionBatchEnv` (REFERENCE §I.7's methods on a
whole batch), and :data:`RemoteMultiBattalionEnv` is that class made a Ray actor by
:func:`envs.remote.workers.remote_class` on first use, so that this module imports
without Ray.
"""

from __future__ import annotations

from typing import Any

from envs.remote.batch_env import EPISODE_KEYS, Commander, MultiBattalionBatchEnv, random_orders
from envs.remote.cluster import INSTALL_HINT
from envs.remote.workers import remote_class

RemoteMultiBattalionEnv: Any
"""``ray.remote(MultiBattalionBatchEnv)``: the Ray actor class (made on first use;
``ImportError`` with the install hint when Ray is missing)."""


def __getattr__(name: str) -> Any:
    # RemoteMultiBattalionEnv is made on first use, so this module imports without Ray.
    if name == "RemoteMultiBattalionEnv":
        return remote_class(MultiBattalionBatchEnv)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EPISODE_KEYS", "INSTALL_HINT", "Commander", "MultiBattalionBatchEnv",
           "RemoteMultiBattalionEnv", "random_orders"]
