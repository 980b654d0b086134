"""What the warm starts share: the doctrines a run can imitate, returns discounted within
the episodes of a recording, and the fitting loop of behaviour cloning."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable

import numpy as np
import torch

from envs.commanders.doctrine import (
    HOLD_RANGE,
    ConcentratingCommander,
    DisciplinedCommander,
    InStepCommander,
)
from envs.echelons.doctrine import InStepBrigadier
from models.order_choices import OrderChoices
from training.common.ppo_math import shuffled_minibatches

DOCTRINES = ("disciplined",)
"""Doctrines a duel's battalion can imitate (they read the duel's observation)."""
TEAM_DOCTRINES = ("disciplined", "in_step", "concentrated")
"""Doctrines a team can imitate: ``in_step`` (:class:`InStepCommander`) also reads
where the allies stand, ``concentrated`` (:class:`ConcentratingCommander`) where the
allies and every reported enemy stand."""
BRIGADE_DOCTRINES = ("in_step",)
"""Doctrines a brigadier can imitate: ``in_step`` (:class:`InStepBrigadier`) holds the
battalions ahead until the last one comes up."""


def make_doctrine(name: str, map_width: float, map_height: float,
                  hold_range: float = HOLD_RANGE, exposed_range: float | None = None,
                  fall_back_uphill: bool = False, spent_hold_range: float | None = None):
    """The hand-written commander called ``name`` (of :data:`TEAM_DOCTRINES`) for a map
    of the given size, halting at ``hold_range`` metres and, with ``fall_back_uphill``,
    falling back from a hidden enemy that stands higher; the in-step doctrines march on
    within ``exposed_range`` of an enemy in sight (None: they wait wherever they lead).
    The disciplined doctrine halts at ``spent_hold_range`` from an enemy in sight that has
    spent its volley, if given; the team doctrines take no such halt (in 2v2 it gained
    nothing, ``docs/training.md``), and a ``spent_hold_range`` for them is refused."""
    diagonal = math.hypot(map_width, map_height)
    if name != "disciplined" and spent_hold_range is not None:
        raise ValueError(f"spent_hold_range={spent_hold_range!r} is invalid for doctrine="
                         f"{name!r}: only the disciplined doctrine takes it")
    common = dict(hold_range=hold_range, map_diagonal=diagonal,
                  fall_back_uphill=fall_back_uphill)
    if name == "disciplined":
        return DisciplinedCommander(spent_hold_range=spent_hold_range, **common)
    if name == "in_step":
        return InStepCommander(exposed_range=exposed_range, **common)
    if name == "concentrated":
        return ConcentratingCommander(exposed_range=exposed_range, **common)
    raise ValueError(f"doctrine={name!r} is invalid: expected one of "
                     f"{', '.join(TEAM_DOCTRINES)}")


def make_brigade_doctrine(name: str, n_units: int, map_width: float, map_height: float):
    """The hand-written brigadier called ``name`` (of :data:`BRIGADE_DOCTRINES`) of
    ``n_units`` battalions on a map of the given size."""
    if name == "in_step":
        return InStepBrigadier(n_units, math.hypot(map_width, map_height))
    raise ValueError(f"doctrine={name!r} is invalid: expected one of "
                     f"{', '.join(BRIGADE_DOCTRINES)}")


def discounted_returns(rewards: np.ndarray, dones: np.ndarray,
                       gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Returns discounted within episodes, over the first (time) axis of (T, ...) arrays.

    Returns:
        ``(returns, known)``: a step's return is known once an episode end follows
        it in the recording; the others are cut short and should not be used.
    """
    returns = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[1:], np.float32)
    seen_end = np.zeros(rewards.shape[1:], bool)
    known = np.zeros(rewards.shape, bool)
    for t in range(len(rewards) - 1, -1, -1):
        seen_end |= dones[t]
        running = rewards[t] + gamma * running * ~dones[t]
        returns[t] = running
        known[t] = seen_end
    return returns, known


ORDER_MARGIN = 0.0
"""How far past a bound of the order space an imitated order at that bound is aimed
(:func:`order_loss`) unless told otherwise: at the bound itself, so that PPO's
samples around the fitted mean cross it and learn what an earlier volley or halt is
worth (measured in ``docs/training.md``, "Fine-tuning after imitation")."""


def order_loss(policy, observations: torch.Tensor, orders: torch.Tensor,
               margin: float = ORDER_MARGIN) -> torch.Tensor:
    """How far an SB3 policy's orders on ``observations`` (N, obs_dim) are from a
    teacher's ``orders`` (N, D): behaviour cloning's action loss, and the pull toward the
    teacher during PPO.

    A policy whose march and fire are choices
    (:class:`~models.order_choices.OrderChoices`) is scored by its negative
    log-likelihood of the orders, the wheel's spread held
    (:meth:`~models.order_choices.OrderChoices.imitation_loss`); ``margin`` is not used.
    A Gaussian policy's mean is regressed onto the orders, an order at a bound of the
    order space (``fire`` 0: hold fire) aimed ``margin`` past it: the mean is clipped to
    the bounds when it acts, so a mean fitted to the bound itself ends up a little inside
    on some states (a trickle of fire while the teacher holds it), and half of the samples
    around it during PPO cross the bound. That crossing is what lets PPO find a better
    halt or volley, so the default margin is 0. Orders inside the bounds are aimed at as
    they are.
    """
    distribution = policy.get_distribution(observations)
    if isinstance(distribution, OrderChoices):
        return distribution.imitation_loss(orders)
    space = policy.action_space
    low = torch.as_tensor(space.low, dtype=orders.dtype, device=orders.device)
    high = torch.as_tensor(space.high, dtype=orders.dtype, device=orders.device)
    target = torch.where(orders <= low, low - margin,
                         torch.where(orders >= high, high + margin, orders))
    return (distribution.distribution.mean - target).pow(2).mean()


def fit_minibatches(parameters: Iterable[torch.nn.Parameter], n_samples: int,
                    losses: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]], *,
                    epochs: int, batch_size: int, learning_rate: float,
                    seed: int | np.random.Generator,
                    device: torch.device | str = "cpu") -> dict[str, float]:
    """Adam on ``losses(index) -> (action loss, value loss)`` of shuffled minibatches of
    ``n_samples`` samples (``index``: their positions, on ``device``), ``epochs`` passes:
    the one behaviour-cloning loop of the warm starts.

    Parameters:
        seed: draws the minibatch orders: an int seeds a :class:`torch.Generator`
            (``torch.randperm``, the MAPPO and WFM-1 warm starts); a NumPy generator
            draws them with its ``permutation`` (the SB3 warm start's draws).

    Returns:
        The last pass's mean ``action`` and ``value`` losses.
    """
    optimizer = torch.optim.Adam(parameters, lr=learning_rate)
    generator = seed if isinstance(seed, np.random.Generator) else \
        torch.Generator().manual_seed(seed)
    result = {"action": math.nan, "value": math.nan}
    for _ in range(epochs):
        totals, batches = np.zeros(2), 0
        for index in shuffled_minibatches(n_samples, batch_size, generator, device=device):
            action_loss, value_loss = losses(index)
            optimizer.zero_grad(set_to_none=True)
            (action_loss + value_loss).backward()
            optimizer.step()
            totals += (action_loss.item(), value_loss.item())
            batches += 1
        result = {"action": totals[0] / batches, "value": totals[1] / batches}
    return result


def clone_policy(policy: torch.nn.Module, n_samples: int,
                 losses: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]], *,
                 epochs: int, batch_size: int, learning_rate: float, seed: int,
                 log: logging.Logger, name: str) -> dict[str, float]:
    """Behaviour cloning of a torch policy of our own (MAPPO's, WFM-1's):
    :func:`fit_minibatches` over its parameters in train mode, on its ``device``, then
    eval mode, and an info line with the final losses.

    Args:
        policy: the policy fitted; it has a ``device``.
        n_samples: the demonstrations' samples.
        losses: ``losses(index) -> (action loss, value loss)`` of a minibatch.
        epochs: passes over the samples.
        batch_size: samples per minibatch.
        learning_rate: Adam's step size.
        seed: seeds the minibatch orders.
        log: the caller's logger, which the info line goes to.
        name: the policy's name in the info line (``"MAPPO"``).

    Returns:
        The last pass's mean ``action`` and ``value`` losses.
    """
    policy.train()
    result = fit_minibatches(policy.parameters(), n_samples, losses, epochs=epochs,
                             batch_size=batch_size, learning_rate=learning_rate, seed=seed,
                             device=policy.device)
    policy.eval()
    log.info("%s behaviour cloning on %d samples: action loss %.4f, value loss %.4f", name,
             n_samples, result["action"], result["value"])
    return result
