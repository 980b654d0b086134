"""Ray for this project: a cluster that stays on loopback when we start it, and groups of
workers whose calls are bounded in time and survive a dead worker.

Ray is an optional extra (``pip install -e ".[distributed]"``); nothing here imports it
until it is used. The jobs run on these workers live with their algorithms:
:mod:`training.mappo.distributed` (MAPPO rollouts and evaluation matches, the league's
included) and :mod:`training.league.distributed_runner` (whole episodes, the seed's
runner).
"""
