"""The chain of command: brigade and division commanders over frozen lower echelons.

- :mod:`~training.echelons.config`: the commanders' settings, each declared once;
- :mod:`~training.echelons.trainer`: what both runs share (SB3 PPO over an echelon's
  battles, evaluation, checkpoints, the frozen lower echelons' loaders);
- :mod:`~training.echelons.brigade` and :mod:`~training.echelons.division`: each
  commander's battles and run;
- :mod:`~training.echelons.order_following`: how well battalions follow orders;
- :mod:`~training.echelons.curriculum`: the HRL curriculum and its phase files;
- :mod:`~training.echelons.pipeline`: the three phases in one command.

``training.train_brigade``, ``training.train_division`` and ``training.hrl_curriculum``
(the paths the reference design documents) hand the names on from here. Importing this
package loads nothing. ``docs/echelons.md`` has the guide.
"""
