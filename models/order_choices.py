"""Orders as choices: a battalion's march and fire chosen together, its wheel Gaussian.

The doctrines a commander imitates give bang-bang orders (march, halt or fall back; fire
or hold). Chosen as categories instead of regressed by a Gaussian, the clone's most
likely order is exactly the teacher's on either side of the step; the march and the fire
are one choice of a pair (:data:`ORDER_CHOICES`), so halting and firing share one
boundary. :class:`OrderChoices` is an SB3 distribution for the ``[move, rotate, fire]``
Box action: a categorical choice of ``(move, fire)`` and a Gaussian ``rotate`` (the
``DiagGaussianDistribution`` it extends, with one log std); its samples lie in the Box,
and the action head gives :data:`HEAD_SIZE` outputs, the choices' logits then the wheel's
mean. :class:`VolleyChoices` bars the firing pairs until the battalion is loaded (its
``own_readiness`` at least :data:`VOLLEY_READINESS`). ``docs/training.md`` ("Orders as
choices", "From scratch: volleys") gives the reasons.
"""

from __future__ import annotations

import torch
from stable_baselines3.common.distributions import DiagGaussianDistribution
from torch import nn
from torch.distributions import Categorical, Normal

from envs.battles.observation import OBSERVATION_FEATURES

MOVE_CHOICES = (-1.0, 0.0, 1.0)
"""The ``move`` orders a battalion chooses from: fall back, halt, march."""

FIRE_CHOICES = (0.0, 1.0)
"""The ``fire`` orders a battalion chooses from: hold, fire."""

ORDER_CHOICES = tuple((move, fire) for move in MOVE_CHOICES for fire in FIRE_CHOICES)
"""The ``(move, fire)`` pairs a battalion chooses from, move-major."""

HEAD_SIZE = len(ORDER_CHOICES) + 1
"""Outputs of the action head: the choices' logits, then the wheel's mean."""

FIRING = tuple(fire > 0.0 for _, fire in ORDER_CHOICES)
"""Whether each of :data:`ORDER_CHOICES` fires."""

VOLLEY_READINESS = 0.95
"""The readiness from which a battalion that fires only volleys may fire: loaded (from a
spent volley it reloads to this in 18 steps, and to full in 19)."""

READINESS_FEATURE = OBSERVATION_FEATURES.index("own_readiness")
"""Index of the battalion's own readiness in an observation (every env's observation
starts with :data:`~envs.battles.observation.OBSERVATION_FEATURES`)."""

BARRED = -1.0e9
"""The logit of a barred choice: its probability is exactly 0 in float32."""


def choice_index(orders: torch.Tensor) -> torch.Tensor:
    """(N,) index in :data:`ORDER_CHOICES` of the pair nearest to each ``(move, fire)`` of
    ``orders`` (N, 3)."""
    moves = torch.as_tensor(MOVE_CHOICES, dtype=orders.dtype, device=orders.device)
    fires = torch.as_tensor(FIRE_CHOICES, dtype=orders.dtype, device=orders.device)
    move = (orders[:, :1] - moves).abs().argmin(dim=1)
    fire = (orders[:, 2:] - fires).abs().argmin(dim=1)
    return move * len(FIRE_CHOICES) + fire


def bar_unloaded_fire(out: torch.Tensor, observation: torch.Tensor) -> torch.Tensor:
    """The action head's output ``out`` (N, HEAD_SIZE) with the firing pairs barred for the
    battalions of ``observation`` (N, obs_dim) that are not loaded
    (:data:`VOLLEY_READINESS`)."""
    unloaded = observation[:, READINESS_FEATURE] < VOLLEY_READINESS
    firing = torch.as_tensor(FIRING, device=out.device)
    logits = out[:, :-1].masked_fill(unloaded[:, None] & firing, BARRED)
    return torch.cat([logits, out[:, -1:]], dim=1)


def _orders(index: torch.Tensor, turn: torch.Tensor) -> torch.Tensor:
    """(N, 3) orders of the choices ``index`` (N,) and the wheel ``turn`` (N,)."""
    moves = torch.as_tensor(MOVE_CHOICES, dtype=turn.dtype, device=turn.device)
    fires = torch.as_tensor(FIRE_CHOICES, dtype=turn.dtype, device=turn.device)
    return torch.stack([moves[index // len(FIRE_CHOICES)], turn,
                        fires[index % len(FIRE_CHOICES)]], dim=1)


def most_likely_orders(out: torch.Tensor) -> torch.Tensor:
    """(N, 3) orders of the action head's output ``out`` (N, HEAD_SIZE): the likeliest
    pair and the wheel's mean (an exported commander's graph uses this)."""
    return _orders(out[:, :-1].argmax(dim=1), out[:, -1])


class OrderChoices(DiagGaussianDistribution):
    """A categorical (march, fire) pair and a Gaussian wheel, for a ``[move, rotate, fire]``
    action.

    It extends SB3's ``DiagGaussianDistribution`` so that an ``ActorCriticPolicy``
    builds its head and its ``log_std`` (the wheel's) through the same calls.
    """

    def __init__(self) -> None:
        super().__init__(action_dim=3)
        self.choice: Categorical | None = None
        self.turn: Normal | None = None

    def proba_distribution_net(self, latent_dim: int,
                               log_std_init: float = 0.0) -> tuple[nn.Module, nn.Parameter]:
        """The head (:data:`HEAD_SIZE` outputs) and the wheel's log std."""
        return nn.Linear(latent_dim, HEAD_SIZE), nn.Parameter(torch.full((1,), log_std_init),
                                                              requires_grad=True)

    def proba_distribution(self, mean_actions: torch.Tensor,
                           log_std: torch.Tensor) -> OrderChoices:
        self.choice = Categorical(logits=mean_actions[:, :-1])
        turn = mean_actions[:, -1]
        self.turn = Normal(turn, log_std.exp().expand_as(turn))
        return self

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.choice.log_prob(choice_index(actions)) + self.turn.log_prob(actions[:, 1])

    def entropy(self) -> torch.Tensor:
        return self.choice.entropy() + self.turn.entropy()

    def sample(self) -> torch.Tensor:
        return _orders(self.choice.sample(), self.turn.rsample())

    def mode(self) -> torch.Tensor:
        return _orders(self.choice.logits.argmax(dim=1), self.turn.mean)

    def imitation_loss(self, orders: torch.Tensor) -> torch.Tensor:
        """Negative log-likelihood of a teacher's (N, 3) ``orders`` (the nearest pair of
        choices), the wheel's spread held where it is: the spread is PPO's to move, and
        fitted here it would shrink to the clone's error. Scored at that spread, a wheel
        0.025 off (a third of the doctrine's mean turn) weighs as much as a wrong choice,
        where a plain squared error would let the choice drown it."""
        choice = nn.functional.cross_entropy(self.choice.logits, choice_index(orders))
        turn = ((self.turn.mean - orders[:, 1]) / self.turn.stddev.detach()).pow(2).mean() / 2
        return choice + turn


class VolleyChoices(OrderChoices):
    """:class:`OrderChoices` for a battalion that fires only volleys: the firing pairs
    are barred while it is not loaded (:func:`bar_unloaded_fire`).

    Which battalions are loaded is read from their observation, which a distribution
    does not see: the policy sets :attr:`observation` before each use
    (:class:`~models.battalion_policy.BattalionMlpPolicy` does).
    """

    def __init__(self) -> None:
        super().__init__()
        self.observation: torch.Tensor | None = None

    def proba_distribution(self, mean_actions: torch.Tensor,
                           log_std: torch.Tensor) -> VolleyChoices:
        if self.observation is None:
            raise RuntimeError("VolleyChoices needs the observation of the battalions "
                               "(set .observation before proba_distribution)")
        return super().proba_distribution(bar_unloaded_fire(mean_actions, self.observation),
                                          log_std)

    def imitation_loss(self, orders: torch.Tensor) -> torch.Tensor:
        """As :meth:`OrderChoices.imitation_loss`, a teacher's fire by a battalion that is
        not loaded counted as the pair it can carry out: the same march, holding fire."""
        index = choice_index(orders)
        firing = torch.as_tensor(FIRING, device=index.device)[index]
        unloaded = self.observation[:, READINESS_FEATURE] < VOLLEY_READINESS
        held = torch.where(firing & unloaded, index - 1, index)  # fire is the minor index
        return super().imitation_loss(_orders(held, orders[:, 1]))


__all__ = ["BARRED", "FIRE_CHOICES", "FIRING", "HEAD_SIZE", "MOVE_CHOICES", "ORDER_CHOICES",
           "OrderChoices", "READINESS_FEATURE", "VOLLEY_READINESS", "VolleyChoices",
           "bar_unloaded_fire", "choice_index", "most_likely_orders"]
