"""The historical benchmark, where the seeds document it: :mod:`benchmarks.historical`
holds it (with :mod:`benchmarks.historical_scoring` and
:mod:`benchmarks.historical_baselines`), and this module hands its names on.

``python -m training.historical_benchmark`` runs its command line (the same flags and
output as ``python -m benchmarks.historical``). Nothing in the project imports this
module: benchmarks sit above training, and only the seeds' documented path points up.
"""

from __future__ import annotations

# Every public name of benchmarks.historical, and its __all__: one list, kept there.
from benchmarks.historical import *  # noqa: F403
from benchmarks.historical import __all__, main  # noqa: F401

if __name__ == "__main__":
    main()
