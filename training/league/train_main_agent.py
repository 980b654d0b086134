"""The main agent: the league's primary policy, trained against every member.

Run it as the league tutorial shows::

    python -m training.league.train_main_agent \
        --config-path configs/league --config-name main_agent
    python training/league/train_main_agent.py \
        training.total_timesteps=5_000_000 league.pfsp_temperature=1.0

or all three roles at once with ``python -m training.league``. The class lives in
:mod:`training.league.roles` and the command line in :mod:`training.league.launch`;
this module is their documented home and the command's entry point.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from training.league.launch import run_role_cli  # noqa: E402
from training.league.pfsp import make_pfsp_weight_fn  # noqa: E402
from training.league.roles import MainAgentTrainer  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    """The Hydra command line of ``configs/league/main_agent.yaml``."""
    run_role_cli("main_agent", argv)


__all__ = ["MainAgentTrainer", "main", "make_pfsp_weight_fn"]

if __name__ == "__main__":
    main()
