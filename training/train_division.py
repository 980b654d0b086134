"""The division commander's training, where the reference documents it:
:mod:`training.echelons.division` holds it, and this module hands its names on.

``python -m training.train_division key=value ...`` runs its Hydra command line
(``configs/experiment_division.yaml``), as ``python -m training.echelons.division`` does.
The project itself imports :mod:`training.echelons.division`.
"""

from __future__ import annotations

from training.echelons.division import (
    CHECKPOINT_PREFIX,
    DivisionConfig,
    DivisionWinRateCallback,
    division_battles,
    load_frozen_battalion_policy,
    load_frozen_brigade_policy,
    main,
    train_division,
)

__all__ = ["CHECKPOINT_PREFIX", "DivisionConfig", "DivisionWinRateCallback", "division_battles",
           "load_frozen_battalion_policy", "load_frozen_brigade_policy", "main",
           "train_division"]

if __name__ == "__main__":
    main()
