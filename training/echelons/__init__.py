"""The chain of command: brigade and division commanders over frozen lower echelons.

- :mod:`~training.echelons.config`: the commanders' settings, each declared once
  (``configs/experiment_brigade.yaml``, ``configs/experiment_division.yaml``);
- :mod:`~training.echelons.trainer`: what both runs share (SB3 PPO over an echelon's
  battles, evaluation, checkpoints, the frozen lower echelons' loaders);
- :mod:`~training.echelons.brigade` and :mod:`~training.echelons.division`: each
  commander's battles and run (``python -m training.train_brigade``,
  ``python -m training.train_division``);
- :mod:`~training.echelons.order_following`: how well battalions follow orders;
- :mod:`~training.echelons.curriculum`: the battalion, brigade, division curriculum and
  its phase files (``configs/hrl/``);
- :mod:`~training.echelons.pipeline`: the three phases in one command
  (``python -m training.echelons.pipeline``).

``training.train_brigade``, ``training.train_division`` and ``training.hrl_curriculum``
(the paths the reference design documents) and ``training.echelon_config`` (the one the
earlier docs imported) hand the names on from here. Importing this package loads
nothing.
"""
