"""Scenarios: orders of battle on a field read from YAML or JSON, played out in batches,
and the entity tokens that describe a battle to the generalist.
"""
