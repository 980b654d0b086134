"""Formation orders: the categorical head that MAPPO's actors and WFM-1 share.

A commander with a formation head orders each unit's formation beside its continuous
``[move, rotate, fire]``: a choice of :data:`FORMATION_CHOICES`, keep the formation or
order one of :data:`~envs.sim.constants.FORMATION_NAMES`. Choice ``c`` is the engine's
formation code ``c + KEEP_FORMATION`` (-1 keep, 0 line, ...). An order vector is the
continuous orders, then the formation code as a float; :class:`Orders` is the
distribution of such vectors, and :func:`make_formation_head` the head's starting layer.
:class:`models.mappo_policy.MAPPOPolicy` and :class:`models.wfm1.WFM1Policy` build theirs
with ``formation_orders=True``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.distributions import Categorical, Normal, kl_divergence

from envs.sim.constants import FORMATION_NAMES, KEEP_FORMATION

__all__ = ["FORMATION_CHOICES", "KEEP_CHOICE", "KEEP_LOGIT", "Orders", "check_formation_codes",
           "formation_choices", "formation_kl", "likeliest_codes", "make_formation_head"]

FORMATION_CHOICES = len(FORMATION_NAMES) + 1
"""Choices of the formation head: keep the formation, or order one of
:data:`~envs.sim.constants.FORMATION_NAMES`; choice ``c`` is the engine's formation
code ``c + KEEP_FORMATION`` (-1 keep, 0 line, ...)."""
KEEP_CHOICE = 0
"""The keep choice's index among the :data:`FORMATION_CHOICES` (its code
``KEEP_FORMATION`` less ``KEEP_FORMATION``)."""
KEEP_LOGIT = 4.0
"""The keep choice's starting logit (the others start at 0): a fresh head keeps the
formation 93 % of the time, since every change costs drill steps in disorder."""
_HEAD_GAIN = 0.01
"""Orthogonal gain of the head's weights (the action heads' gain): small logits at first."""


def make_formation_head(in_features: int) -> nn.Linear:
    """A fresh formation head: a Linear layer from ``in_features`` to the
    :data:`FORMATION_CHOICES` logits, orthogonally initialised with small weights and
    zero biases but the keep choice's, :data:`KEEP_LOGIT`."""
    head = nn.Linear(in_features, FORMATION_CHOICES)
    nn.init.orthogonal_(head.weight, gain=_HEAD_GAIN)
    nn.init.zeros_(head.bias)
    with torch.no_grad():
        head.bias[KEEP_CHOICE] = KEEP_LOGIT
    return head


def formation_choices(codes: torch.Tensor) -> torch.Tensor:
    """The head's choice (long) for each formation code of ``codes`` (floats, -1 keep,
    0 line, ...), rounded; unchecked (:func:`check_formation_codes` checks)."""
    return (codes - KEEP_FORMATION).round().long()


def likeliest_codes(logits: torch.Tensor) -> torch.Tensor:
    """The formation codes (long: -1 keep, 0 line, ...) of the likeliest choices of
    ``logits`` (..., FORMATION_CHOICES): a formation head's deterministic order."""
    return logits.argmax(-1) + KEEP_FORMATION


def formation_kl(reference_logits: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """(...) KL(reference || policy) between two formation heads' choices, from their
    (..., FORMATION_CHOICES) logits: what a policy pays for giving up a formation order
    the reference gives (MAPPO's ``formation_pull``)."""
    return kl_divergence(Categorical(logits=reference_logits), Categorical(logits=logits))


def check_formation_codes(name: str, codes: torch.Tensor) -> None:
    """Refuse formation codes that are not whole numbers from ``KEEP_FORMATION`` (-1,
    keep) to the last formation's.

    Raises:
        ValueError: naming ``name``, the codes found and the codes allowed.
    """
    last = len(FORMATION_NAMES) - 1
    bad = (codes != codes.round()) | (codes < KEEP_FORMATION) | (codes > last)
    if bool(bad.any()):
        found = torch.unique(codes[bad])[:8].tolist()
        raise ValueError(f"{name} holds formation codes {found}: expected whole numbers "
                         f"{KEEP_FORMATION} (keep) to {last} ({', '.join(FORMATION_NAMES)})")


class Orders:
    """The distribution of a unit's orders: a diagonal Gaussian over the continuous
    orders and, for a policy with a formation head, a categorical over
    :data:`FORMATION_CHOICES` (independent given the observation). An order vector is
    the continuous orders, then the formation code as a float (-1 keep, 0 line, ...).

    Orders may have any leading shape (MAPPO's ``(B, width)``, WFM-1's ``(B, N,
    width)``). Log-probabilities and entropies are summed over the parts, so PPO's ratio
    is that of the whole order.
    """

    def __init__(self, gaussian: Normal, formation: Categorical | None = None) -> None:
        self.gaussian, self.formation = gaussian, formation
        self.width = gaussian.mean.shape[-1] + (formation is not None)

    def log_prob(self, orders: torch.Tensor) -> torch.Tensor:
        """(...) log-probability of (..., width) orders."""
        width = self.gaussian.mean.shape[-1]
        log_prob = self.gaussian.log_prob(orders[..., :width]).sum(-1)
        if self.formation is None:
            return log_prob
        return log_prob + self.formation.log_prob(formation_choices(orders[..., width]))

    @property
    def formation_logits(self) -> torch.Tensor | None:
        """(..., FORMATION_CHOICES) the formation head's logits; None without one."""
        return None if self.formation is None else self.formation.logits

    def entropy(self) -> torch.Tensor:
        """(...) entropy, summed over the parts."""
        entropy = self.gaussian.entropy().sum(-1)
        return entropy if self.formation is None else entropy + self.formation.entropy()

    def mode(self) -> torch.Tensor:
        """(..., width) the most likely orders: the Gaussian's mean and the likeliest
        formation choice."""
        if self.formation is None:
            return self.gaussian.mean
        codes = likeliest_codes(self.formation.logits).to(torch.float32).unsqueeze(-1)
        return torch.cat((self.gaussian.mean, codes), -1)

    def sample(self, noise: torch.Tensor | None = None) -> torch.Tensor:
        """(..., width) sampled orders; with ``noise`` ((..., width) standard normal draws)
        the Gaussian part is ``mean + std * noise`` and the formation choice is the one
        whose cumulative probability first exceeds the normal CDF of the last draw (so a
        keyed draw decides it), else torch's generator draws."""
        width = self.gaussian.mean.shape[-1]
        if noise is None:
            continuous = self.gaussian.sample()
            if self.formation is None:
                return continuous
            return torch.cat((continuous, self._code(self.formation.sample())), -1)
        continuous = self.gaussian.mean + self.gaussian.stddev * noise[..., :width]
        if self.formation is None:
            return continuous
        uniform = torch.special.ndtr(noise[..., width:width + 1])
        cumulative = self.formation.probs.cumsum(-1)
        choice = (cumulative < uniform).sum(-1).clamp_(max=FORMATION_CHOICES - 1)
        return torch.cat((continuous, self._code(choice)), -1)

    @staticmethod
    def _code(choice: torch.Tensor) -> torch.Tensor:
        return (choice.to(torch.float32) + KEEP_FORMATION).unsqueeze(-1)
