"""Orders as choices: a battalion's march and fire picked from their values, its wheel Gaussian.

The doctrines a commander imitates give bang-bang orders: march, halt or fall back
(``move`` 1, 0 or -1); fire or hold (``fire`` 1 or 0). A Gaussian policy fitted to them
by regression puts a smooth mean through each step, so near the halt and the volley it
gives a trickle of fire and half a march. Chosen as categories instead, the clone's most
likely order is exactly the teacher's on either side of the step, and PPO's samples cross
a step only where the choice is close: where a better halt or volley is to be found.

:class:`OrderChoices` is an SB3 distribution for the ``[move, rotate, fire]`` Box action:
categorical ``move`` over :data:`MOVE_CHOICES`, Gaussian ``rotate`` (the
``DiagGaussianDistribution`` it extends, with one log std), categorical ``fire`` over
:data:`FIRE_CHOICES`. Its samples lie in the Box, so the env, the rollout buffer and
``predict`` see the usual three numbers. The action head gives
``len(MOVE_CHOICES) + 1 + len(FIRE_CHOICES)`` outputs: the move logits, the wheel's mean,
the fire logits.
"""

from __future__ import annotations

import torch
from stable_baselines3.common.distributions import DiagGaussianDistribution
from torch import nn
from torch.distributions import Categorical, Normal

MOVE_CHOICES = (-1.0, 0.0, 1.0)
"""The ``move`` orders a battalion chooses from: fall back, halt, march."""

FIRE_CHOICES = (0.0, 1.0)
"""The ``fire`` orders a battalion chooses from: hold, fire."""

HEAD_SIZE = len(MOVE_CHOICES) + 1 + len(FIRE_CHOICES)
"""Outputs of the action head: move logits, the wheel's mean, fire logits."""


def choice_index(orders: torch.Tensor, choices: tuple[float, ...]) -> torch.Tensor:
    """(N,) index of the choice nearest to each of ``orders`` (N,)."""
    values = torch.as_tensor(choices, dtype=orders.dtype, device=orders.device)
    return (orders.unsqueeze(-1) - values).abs().argmin(dim=-1)


def split_head(out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The action head's (N, HEAD_SIZE) output as move logits, wheel mean (N,), fire logits."""
    moves = len(MOVE_CHOICES)
    return out[:, :moves], out[:, moves], out[:, moves + 1:]


def most_likely_orders(out: torch.Tensor) -> torch.Tensor:
    """(N, 3) orders of the action head's output ``out``: the likeliest move and fire,
    the wheel's mean (an exported commander's graph uses this)."""
    move_logits, turn, fire_logits = split_head(out)
    move = torch.as_tensor(MOVE_CHOICES, dtype=out.dtype, device=out.device)
    fire = torch.as_tensor(FIRE_CHOICES, dtype=out.dtype, device=out.device)
    return torch.stack([move[move_logits.argmax(dim=1)], turn,
                        fire[fire_logits.argmax(dim=1)]], dim=1)


class OrderChoices(DiagGaussianDistribution):
    """Categorical march and fire, Gaussian wheel, for a ``[move, rotate, fire]`` action.

    It extends SB3's ``DiagGaussianDistribution`` so that an ``ActorCriticPolicy``
    builds its head and its ``log_std`` (the wheel's) through the same calls.
    """

    def __init__(self) -> None:
        super().__init__(action_dim=3)
        self.move: Categorical | None = None
        self.turn: Normal | None = None
        self.fire: Categorical | None = None

    def proba_distribution_net(self, latent_dim: int,
                               log_std_init: float = 0.0) -> tuple[nn.Module, nn.Parameter]:
        """The head (``HEAD_SIZE`` outputs) and the wheel's log std."""
        return nn.Linear(latent_dim, HEAD_SIZE), nn.Parameter(torch.full((1,), log_std_init),
                                                              requires_grad=True)

    def proba_distribution(self, mean_actions: torch.Tensor,
                           log_std: torch.Tensor) -> OrderChoices:
        move_logits, turn, fire_logits = split_head(mean_actions)
        self.move = Categorical(logits=move_logits)
        self.turn = Normal(turn, log_std.exp().expand_as(turn))
        self.fire = Categorical(logits=fire_logits)
        return self

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return (self.move.log_prob(choice_index(actions[:, 0], MOVE_CHOICES))
                + self.turn.log_prob(actions[:, 1])
                + self.fire.log_prob(choice_index(actions[:, 2], FIRE_CHOICES)))

    def entropy(self) -> torch.Tensor:
        return self.move.entropy() + self.turn.entropy() + self.fire.entropy()

    def _orders(self, move: torch.Tensor, turn: torch.Tensor, fire: torch.Tensor) -> torch.Tensor:
        moves = torch.as_tensor(MOVE_CHOICES, dtype=turn.dtype, device=turn.device)
        fires = torch.as_tensor(FIRE_CHOICES, dtype=turn.dtype, device=turn.device)
        return torch.stack([moves[move], turn, fires[fire]], dim=1)

    def sample(self) -> torch.Tensor:
        return self._orders(self.move.sample(), self.turn.rsample(), self.fire.sample())

    def mode(self) -> torch.Tensor:
        return self._orders(self.move.logits.argmax(dim=1), self.turn.mean,
                            self.fire.logits.argmax(dim=1))

    def imitation_loss(self, orders: torch.Tensor) -> torch.Tensor:
        """Negative log-likelihood of a teacher's (N, 3) ``orders`` (the nearest move and
        fire choices), the wheel's spread held where it is: the spread is PPO's to move,
        and fitted here it would shrink to the clone's error. Scored at that spread, a
        wheel 0.025 off (a third of the doctrine's mean turn) weighs as much as a wrong
        choice, where a plain squared error would let the choices drown it."""
        move = nn.functional.cross_entropy(self.move.logits,
                                           choice_index(orders[:, 0], MOVE_CHOICES))
        fire = nn.functional.cross_entropy(self.fire.logits,
                                           choice_index(orders[:, 2], FIRE_CHOICES))
        turn = ((self.turn.mean - orders[:, 1]) / self.turn.stddev.detach()).pow(2).mean() / 2
        return move + turn + fire


__all__ = ["FIRE_CHOICES", "HEAD_SIZE", "MOVE_CHOICES", "OrderChoices", "choice_index",
           "most_likely_orders", "split_head"]
