"""Torch networks for the commanders.

Names load on first use (``from models import MAPPOPolicy``), so importing the
package does not pay for torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envs.lazy import lazy_getattr

_EXPORTS = {
    "MAPPOActor": "models.mappo_policy",
    "MAPPOCritic": "models.mappo_policy",
    "MAPPOPolicy": "models.mappo_policy",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from models.mappo_policy import MAPPOActor, MAPPOCritic, MAPPOPolicy  # noqa: F401

__getattr__ = lazy_getattr("models", _EXPORTS, globals())
