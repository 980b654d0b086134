"""The brigade commander's training, where the reference documents it:
:mod:`training.echelons.brigade` holds it, and this module hands its names on.

``python -m training.train_brigade key=value ...`` runs its Hydra command line
(``configs/experiment_brigade.yaml``), as ``python -m training.echelons.brigade`` does.
The project itself imports :mod:`training.echelons.brigade`.
"""

from __future__ import annotations

from training.echelons.brigade import (
    CHECKPOINT_PREFIX,
    BrigadeConfig,
    BrigadeWinRateCallback,
    brigade_battles,
    load_frozen_battalion_policy,
    main,
    train_brigade,
)

__all__ = ["BrigadeConfig", "BrigadeWinRateCallback", "CHECKPOINT_PREFIX", "brigade_battles",
           "load_frozen_battalion_policy", "main", "train_brigade"]

if __name__ == "__main__":
    main()
