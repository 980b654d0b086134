"""Historical battles: 61 engagements of 1796-1815 as scenarios (``battles.json``, in the
scenario format of ``docs/scenarios.md`` with each battle's history beside it), read by
:func:`envs.scenario.load_scenarios` and fought by :mod:`training.historical_benchmark`."""

from pathlib import Path

BATTLES_JSON = Path(__file__).resolve().parent / "battles.json"
"""The battle database."""
