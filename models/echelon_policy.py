"""The brigade and division commanders' network: SB3's actor-critic MLP, inputs standardised.

As SB3's ``MlpPolicy`` (separate 64-64 Tanh actor and critic), with each observed feature
standardised by a fixed mean and spread (:class:`~models.standardize.StandardizedFlatten`):
the identity until :meth:`EchelonMlpPolicy.fit_observation_statistics`, which a warm start
calls on its demonstrations. The brigade observation gives each battalion's distance to its
enemy as a share of the map's diagonal: the 20 m by which the in-step brigadier
(:class:`~envs.echelons.doctrine.InStepBrigadier`) tells a battalion ahead from one in line
is 0.03 of that input, and a clone on raw inputs never learns to hold (``docs/performance.md``).

Constructor arguments are plain JSON values, so a checkpoint loads without unpickling
(:func:`training.ppo.checkpoints.load_ppo`).
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.policies import ActorCriticPolicy

from models.standardize import StandardizedFlatten, fit_policy_inputs


class EchelonMlpPolicy(ActorCriticPolicy):
    """SB3's ``ActorCriticPolicy`` whose features extractor standardises the observation.

    Args:
        observation_space, action_space, lr_schedule, **kwargs: as for SB3's
            ``ActorCriticPolicy`` (``features_extractor_class`` excepted).

    Raises:
        ValueError: for a ``features_extractor_class`` (it would be pickled into
            checkpoints).
    """

    normalize_observations = True
    """Read by :func:`training.ppo.warm_start.imitate`: fit the statistics to the
    demonstrations."""

    def __init__(self, observation_space, action_space, lr_schedule, **kwargs: Any) -> None:
        if "features_extractor_class" in kwargs:
            raise ValueError("features_extractor_class is not accepted: the echelon policy "
                             "standardises its inputs itself")
        super().__init__(observation_space, action_space, lr_schedule,
                         features_extractor_class=StandardizedFlatten, **kwargs)

    def fit_observation_statistics(self, observations: torch.Tensor) -> None:
        """Standardise each feature by its mean and spread over ``observations``
        (N, obs_dim) from now on."""
        fit_policy_inputs(self, observations)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        parameters = super()._get_constructor_parameters()
        parameters.pop("features_extractor_class", None)
        return parameters


__all__ = ["EchelonMlpPolicy"]
