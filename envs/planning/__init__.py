"""Commanders that plan with the simulator: belief states under fog, a belief over the
enemy, and the planner that plays its candidates ahead (``docs/planning.md``)."""

from envs.planning.belief import belief_states, hidden_enemies
from envs.planning.opponent import EnemyBelief, Misses
from envs.planning.planner import PlanningCommander, Search, SearchCost

__all__ = ["EnemyBelief", "Misses", "PlanningCommander", "Search", "SearchCost",
           "belief_states", "hidden_enemies"]
