"""Torch networks for the commanders.

Names load on first use (``from models import MAPPOPolicy``), so importing the
package does not pay for torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "MAPPOActor": "models.mappo_policy",
    "MAPPOCritic": "models.mappo_policy",
    "MAPPOPolicy": "models.mappo_policy",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from models.mappo_policy import MAPPOActor, MAPPOCritic, MAPPOPolicy  # noqa: F401


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'models' has no attribute {name!r}")
