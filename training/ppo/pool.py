"""The 1v1 self-play pool: frozen Stable-Baselines3 PPO learners for Red."""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

import numpy as np
from stable_baselines3 import PPO

from training.common.pools import SnapshotPool
from training.ppo.checkpoints import load_ppo, save_ppo

SNAPSHOT_PATTERN = re.compile(r"^snapshot_v(\d{6,})\.zip$")


class OpponentPool(SnapshotPool):
    """Fixed-size pool of frozen PPO snapshots, oldest evicted first.

    Args:
        pool_dir: folder of the ``snapshot_v{version:06d}.zip`` files (created).
        max_size: snapshots kept (>= 1).

    An existing folder is reloaded: its snapshots, in version order, the newest
    ``max_size`` of them in the pool. A file there that is not a snapshot is
    reported (logged) and left alone; a snapshot that is not a readable archive
    raises ``ValueError`` naming it. Nothing is deleted except by eviction.

    Attributes:
        pool_dir: the folder.
        max_size: the capacity.
    """

    pattern = SNAPSHOT_PATTERN

    def __init__(self, pool_dir: str | Path, max_size: int = 10) -> None:
        super().__init__(pool_dir, max_size)
        self._loaded: OrderedDict[Path, PPO] = OrderedDict()

    @classmethod
    def file_name(cls, version: int) -> str:
        return f"snapshot_v{version:06d}.zip"

    def add(self, model: PPO, version: int) -> Path:
        """Save ``model`` as snapshot ``version`` and add it, evicting the oldest if full.

        Raises:
            ValueError: if ``version`` is not above every version in the pool.
        """
        return self._add(version, lambda path: save_ppo(model, path))

    def _forget(self, path: Path) -> None:
        self._loaded.pop(path, None)

    def load(self, path: Path) -> PPO:
        """The model of snapshot ``path`` (loaded once, then kept while in the pool)."""
        path = self._member(path)
        model = self._loaded.get(path)
        if model is None:
            model = load_ppo(path, device="cpu")
            self._loaded[path] = model
        return model

    def sample(self, rng: np.random.Generator | None = None) -> PPO | None:
        """A uniformly chosen snapshot, loaded; None if the pool is empty."""
        path = self._pick(rng)
        return None if path is None else self.load(path)

    def sample_latest(self) -> PPO | None:
        """The newest snapshot, loaded; None if the pool is empty."""
        return self.load(self._paths[-1]) if self._paths else None

    def name_of(self, model: PPO) -> str | None:
        """The snapshot name (``snapshot_v000003``) of a model this pool loaded."""
        for path, loaded in self._loaded.items():
            if loaded is model:
                return path.stem
        return None


__all__ = ["OpponentPool", "SNAPSHOT_PATTERN"]
