"""The brigade and division commanders' settings under a second import path:
:mod:`training.echelons.config` holds them, and this module hands their names on.

The project itself imports :mod:`training.echelons.config`; ``python -m
training.echelons.config`` rewrites the YAML files made from the declarations.
"""

from __future__ import annotations

from training.echelons.config import (
    BRIGADE_FILE,
    CONFIG_FILES,
    DIVISION_FILE,
    BrigadeConfig,
    DivisionConfig,
    EchelonConfig,
)

__all__ = ["BRIGADE_FILE", "BrigadeConfig", "CONFIG_FILES", "DIVISION_FILE", "DivisionConfig",
           "EchelonConfig"]
