"""WFM-1's self-play pool: frozen past snapshots of the generalist, to command Red."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from models.wfm1 import WFM1Policy
from training.common.pools import DevicePool

WFM1_SNAPSHOT_PATTERN = re.compile(r"^wfm1_snapshot_v(\d{6,})\.pt$")


class WFM1OpponentPool(DevicePool):
    """Fixed-size pool of frozen WFM-1 generalists, oldest evicted first.

    Each snapshot is a :meth:`models.wfm1.WFM1Policy.save_checkpoint` file
    ``wfm1_snapshot_v{version:06d}.pt`` (``{"config", "state_dict"}``), written
    atomically; loading goes through :meth:`~models.wfm1.WFM1Policy.load_checkpoint`
    (tensors and plain values only, ``weights_only=True``, the architecture bounded
    before anything is built).

    An existing folder is reloaded as :class:`~training.common.pools.SnapshotPool` says:
    its snapshots in version order, the newest ``max_size`` in the pool, older ones left
    on disk outside it (only :meth:`add` evicts). A file there that is not a snapshot is
    reported (logged) and left alone; a kept snapshot that is not a readable archive, or
    that links out of the folder, is refused naming it; one that is readable but not a
    WFM-1 policy raises ``ValueError`` when it is loaded.

    A snapshot is read once and then kept while it is in the pool (on each device asked
    for), frozen (eval mode, no gradients): every battle that draws it shares the one
    policy, so a caller must not train or modify it.

    Args and attributes as :class:`~training.common.pools.SnapshotPool`'s.
    """

    pattern = WFM1_SNAPSHOT_PATTERN
    policy_type = WFM1Policy
    kind = "WFM-1 pool"

    def __init__(self, pool_dir: str | Path, max_size: int = 10) -> None:
        super().__init__(pool_dir, max_size)
        self._loaded: dict[tuple[Path, str], WFM1Policy] = {}

    @classmethod
    def file_name(cls, version: int) -> str:
        return f"wfm1_snapshot_v{version:06d}.pt"

    def _write(self, policy: WFM1Policy, path: Path, version: int) -> Path:
        return policy.save_checkpoint(path)

    def _forget(self, path: Path) -> None:
        for key in [key for key in self._loaded if key[0] == path]:
            del self._loaded[key]

    def load(self, path: str | Path, device: str | torch.device | None = None) -> WFM1Policy:
        """The frozen policy of snapshot ``path`` on ``device`` (default: the CPU), read
        on first use and then kept while the snapshot is in the pool.

        Raises:
            KeyError: if ``path`` is not in the pool.
            FileNotFoundError: if its file has disappeared.
            ValueError: if the file is not a readable WFM-1 policy (the message names it).
        """
        path = self._member(path)
        key = (path, str(torch.device(device if device is not None else "cpu")))
        policy = self._loaded.get(key)
        if policy is None:
            policy = WFM1Policy.load_checkpoint(path).to(key[1]).eval().requires_grad_(False)
            self._loaded[key] = policy
        return policy


__all__ = ["WFM1OpponentPool", "WFM1_SNAPSHOT_PATTERN"]
