"""``python -m envs.precompile`` runs on what the kernels need alone.

``make test`` compiles the kernels while the rest of the environment installs (its
``kernels`` target needs only NumPy, Numba, SciPy, filelock and PyYAML), so the module must not
import Gymnasium, Stable-Baselines3 or torch.
"""

from __future__ import annotations

from tests.fresh import run_python


def test_the_precompile_module_imports_no_env_library() -> None:
    code = ("import sys\n"
            "import envs.precompile\n"
            "print(sorted(m for m in ('gymnasium', 'pettingzoo', 'stable_baselines3', 'torch')"
            " if m in sys.modules))\n")
    assert run_python(["-c", code], timeout=120).strip() == "[]"
