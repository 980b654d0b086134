"""Ray for this project: a cluster that stays on loopback when we start it, and groups of
workers whose calls are bounded in time and survive a dead worker.

Ray is an optional extra (``pip install -e ".[distributed]"``); nothing here imports it
until it is used. The jobs run on these workers live with their algorithms:
:mod:`training.mappo.distributed` (MAPPO rollouts), :mod:`training.league.distributed_runner`
(whole episodes, the seed's runner) and :mod:`training.league.remote_matches` (league
evaluation matches).
"""
