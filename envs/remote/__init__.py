"""Ray for this project, the one stack every distributed job runs on: a cluster that
stays on loopback when we start it (:mod:`envs.remote.cluster`), groups of worker actors
whose calls are bounded in time and survive a dead worker, with seeds dealt to them and
their answers gathered (:mod:`envs.remote.workers`), and the worker that owns batches of
battles (:mod:`envs.remote.battles`).

It lives with the envs because ``RemoteMultiBattalionEnv`` is one of its actors and
``envs`` never imports ``training``. The jobs that need policies build on it from
``training``: :mod:`training.mappo.distributed` (MAPPO rollouts and evaluation matches,
the league's included) and :mod:`training.league.distributed_runner` (whole episodes,
the reference API's runner).

Ray is an optional extra (``pip install -e ".[distributed]"``); nothing here imports it
until it is used.
"""
