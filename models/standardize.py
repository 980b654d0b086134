"""Fixed standardisation of a network's inputs: each feature centred and scaled by its mean
and spread over recorded play, the statistics kept as buffers (saved with the weights, never
moved by the optimiser). The v1 policy (:mod:`models.battalion_policy`), the echelon
commanders' (:mod:`models.echelon_policy`) and the MAPPO actors and critic
(:mod:`models.mappo_policy`) use it."""

from __future__ import annotations

import torch
from stable_baselines3.common.preprocessing import get_flattened_obs_dim
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

MIN_FEATURE_STD = 1e-2
"""Smallest spread a feature is divided by: one that hardly varies in the recorded
observations is centred, not magnified."""


class Standardize(nn.Module):
    """``(x - mean) / std`` over the last axis; the identity (0 and 1) until :meth:`fit`.

    Args:
        dim: the number of features.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))

    def fit(self, observations: torch.Tensor) -> None:
        """Take the mean and spread (floored at :data:`MIN_FEATURE_STD`) of
        ``observations`` (N, dim) over their first axis."""
        flat = observations.reshape(len(observations), -1).to(self.mean)
        with torch.no_grad():
            self.mean.copy_(flat.mean(0))
            self.std.copy_(flat.std(0).clamp_min(MIN_FEATURE_STD))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class StandardizedFlatten(BaseFeaturesExtractor):
    """Flatten the observation and standardise each feature by a fixed mean and spread
    (:class:`~models.standardize.Standardize`: the identity until :meth:`fit`, the
    statistics saved with the weights, never moved by the optimiser).

    Args:
        observation_space: the policy's observation space.
    """

    def __init__(self, observation_space) -> None:
        super().__init__(observation_space, get_flattened_obs_dim(observation_space))
        self.standardize = Standardize(self.features_dim)

    def fit(self, observations: torch.Tensor) -> None:
        """Take the mean and spread of ``observations`` (N, obs_dim)."""
        self.standardize.fit(observations)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.standardize(observations.flatten(1))


def fit_policy_inputs(policy: nn.Module, observations: torch.Tensor) -> None:
    """Fit every :class:`StandardizedFlatten` of an SB3 actor-critic ``policy`` (its shared,
    actor's and critic's features extractors, each once) to ``observations`` (N, obs_dim)."""
    extractors = {id(m): m for m in (policy.features_extractor, policy.pi_features_extractor,
                                     policy.vf_features_extractor)}
    for extractor in extractors.values():
        extractor.fit(observations)


__all__ = ["MIN_FEATURE_STD", "Standardize", "StandardizedFlatten", "fit_policy_inputs"]
