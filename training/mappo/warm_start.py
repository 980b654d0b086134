"""Warm start for MAPPO: every Blue battalion imitates a doctrine before PPO.

The doctrine (:class:`~envs.commanders.doctrine.DisciplinedCommander`) commands each
battalion from the first 25 features of its observation, the duel's view of its focus
enemy; by default a team imitates it marching in step
(:class:`~envs.commanders.doctrine.InStepCommander`, which also reads where the allies
stand). The policy's actor learns the orders and the critic the returns they earned, then
MAPPO improves on it; a trained v1 commander (``v1_checkpoint``) is the other way in and
takes precedence. In battles with an order of battle the teacher is the combined-arms
doctrine (:class:`~envs.play.commanders.CombinedArmsRed`, which reads the field),
formations included: the formation head learns its formation orders by cross-entropy
beside the mean orders. ``docs/mappo.md`` ("Where a run starts") says why a run
starts this way.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from envs.commanders.arms_doctrine import ARMS_PLANS
from envs.commanders.orders import OrderFollower
from envs.play.commanders import CombinedArmsRed
from envs.sim.constants import ACTION_DIM
from envs.sim.validation import check_int, check_positive
from models.formation_orders import FORMATION_CHOICES, formation_choices
from models.mappo_policy import MAPPOPolicy
from training.common.imitation import (
    clone_policy,
    discounted_returns,
    make_doctrine,
)
from training.mappo.battles import order_noise, put_orders, step_team

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TeamDemonstrations:
    """Recorded play of every Blue battalion: observations (N, obs_dim), critic inputs
    (N, critic_dim), orders (N, 3, or 4 with the formation code of a combined-arms
    teacher), discounted returns (N,), battalion index (N,)."""

    observations: np.ndarray
    critic_states: np.ndarray
    actions: np.ndarray
    returns: np.ndarray
    agents: np.ndarray


def collect_team_demonstrations(battles, teacher, n_steps: int,
                                gamma: float) -> tuple[TeamDemonstrations, int]:
    """Let ``teacher`` command every Blue battalion of ``battles`` for ``n_steps`` env-steps.

    Args:
        battles: :class:`~training.train_mappo.TrainingBattles` (Red as configured there).
        teacher: a battalion commander (``predict(observations) -> (orders, _)`` on
            each battalion's team observation, as :func:`~training.mappo.battles.team_actions`
            hands it: the disciplined doctrine reads the duel's features at its head, the
            in-step doctrine the allies too, an order follower the order at its end), or the
            combined-arms doctrine (:class:`~envs.play.commanders.CombinedArmsRed`), whose
            formation orders are recorded after its orders.
        n_steps: env-steps to play, summed over battles (>= 1).
        gamma: discount of the returns.

    Returns:
        The demonstrations and the env-steps played. A battalion's steps after its
        last episode end in the recording are dropped, since their return is unknown.
    """
    n_steps = check_int("n_steps", n_steps, minimum=1)
    batch, nb, n_envs = battles.batch, battles.n_blue, battles.config.n_envs
    rounds = max(1, n_steps // n_envs)
    shape = (rounds, n_envs, nb)
    # Battalions that follow orders (envs.commanders.orders) see them after their observation.
    obs_dim = batch.observation.shape[-1]
    critic_dim = obs_dim + batch.global_state.shape[-1]
    arms = isinstance(teacher, CombinedArmsRed)
    observations = np.zeros(shape + (obs_dim,), np.float32)
    critic_states = np.zeros(shape + (critic_dim,), np.float32)
    actions = np.zeros(shape + (ACTION_DIM + arms,), np.float32)
    rewards = np.zeros(shape, np.float32)
    dones, valid = np.zeros(shape, bool), np.zeros(shape, bool)
    blue = np.arange(nb)
    for t in range(rounds):
        observations[t] = batch.observation[:, :nb]
        critic_states[t] = batch.critic_state[:, :nb]
        valid[t] = batch.in_fight[:, :nb]
        if arms:
            taught, formations = teacher.orders(batch, blue)
            actions[t, :, :, :ACTION_DIM] = taught
            actions[t, :, :, ACTION_DIM] = formations
        else:
            view = observations[t].reshape(-1, obs_dim)
            taught = np.asarray(teacher.predict(view, deterministic=True)[0], np.float32)
            actions[t] = taught.reshape(n_envs, nb, ACTION_DIM)
        put_orders(battles.orders, battles.formations, (slice(None), blue), actions[t])
        battles.set_red_orders(order_noise(batch, battles.formation_heads))
        result = step_team(batch, battles.orders, battles.formations)
        rewards[t] = result.reward[:, :nb]
        dones[t] = result.terminated[:, :nb] | result.truncated[:, :nb]
        over = np.flatnonzero(result.battle_over)
        if len(over):
            batch.next_episode(over)
    returns, known = discounted_returns(rewards, dones, gamma)
    keep = known & valid
    agents = np.broadcast_to(np.arange(nb), shape)
    return TeamDemonstrations(observations[keep], critic_states[keep], actions[keep],
                              returns[keep], agents[keep]), rounds * n_envs


def clone_team(policy: MAPPOPolicy, demonstrations: TeamDemonstrations, *, epochs: int = 10,
               batch_size: int = 1024, learning_rate: float = 1e-3,
               seed: int = 0) -> dict[str, float]:
    """Fit the actors' mean orders to the demonstrations and the critic to their returns;
    with a formation head and demonstrations that carry formation codes, the head's
    choice too (cross-entropy, added to the action loss).

    Returns:
        The final epoch's mean action and value losses.

    Raises:
        ValueError: if the demonstrations carry formation codes and the policy has no
            formation head, or the other way round.
    """
    epochs = check_int("epochs", epochs, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    check_positive("learning_rate", learning_rate)
    width = demonstrations.actions.shape[-1]
    if width != policy.order_width:
        raise ValueError(f"demonstrations hold orders of {width} numbers: expected the "
                         f"policy's order_width={policy.order_width} (a formation head learns "
                         "from a combined-arms teacher, and only a formation head does)")
    if len(demonstrations.observations) == 0:
        # Only steps whose return is known are kept: no battle ended within the steps.
        logger.warning("MAPPO behaviour cloning skipped: no battle ended within the "
                       "imitation steps, so no return is known; give more warm-start steps")
        return {"action": math.nan, "value": math.nan}
    device = policy.device
    observations = torch.as_tensor(demonstrations.observations, device=device)
    states = torch.as_tensor(demonstrations.critic_states, device=device)
    actions = torch.as_tensor(demonstrations.actions, device=device)
    returns = torch.as_tensor(demonstrations.returns, device=device)
    agents = torch.as_tensor(demonstrations.agents % policy.n_agents, device=device)
    # Scale the value loss so that both terms weigh alike whatever the reward scale.
    value_scale = max(1.0, float(returns.var()))

    def batch_losses(index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        heads = _mean_orders(policy, observations[index], agents[index])
        taught = actions[index]
        action_loss = ((heads[:, :ACTION_DIM] - taught[:, :ACTION_DIM]) ** 2).mean()
        if policy.formation_orders:
            choice = formation_choices(taught[:, ACTION_DIM])
            action_loss = action_loss + F.cross_entropy(heads[:, ACTION_DIM:], choice)
        value_loss = ((policy.critic(states[index]) - returns[index]) ** 2).mean() / value_scale
        return action_loss, value_loss

    return clone_policy(policy, len(observations), batch_losses, epochs=epochs,
                        batch_size=batch_size, learning_rate=learning_rate, seed=seed,
                        log=logger, name="MAPPO")


def _mean_orders(policy: MAPPOPolicy, observations: torch.Tensor,
                 agents: torch.Tensor) -> torch.Tensor:
    """Each sample's mean order under its own battalion's actor (with gradients), then
    its formation logits when the actors have a formation head."""
    def heads(actor: Any, obs: torch.Tensor) -> torch.Tensor:
        return actor.heads(obs) if policy.formation_orders else actor(obs)[0]

    if policy.share_parameters:
        return heads(policy.actor, observations)
    width = policy.action_dim + (FORMATION_CHOICES if policy.formation_orders else 0)
    out = observations.new_zeros(len(observations), width)
    for k in torch.unique(agents).tolist():
        mask = agents == k
        out = out.index_put((mask,), heads(policy.get_actor(k), observations[mask]))
    return out


def warm_start_team(policy: MAPPOPolicy, battles, n_steps: int) -> tuple[int, dict[str, float]]:
    """Imitate the warm start ``battles.config`` declares (its doctrine, halting at
    ``warm_start_hold_range`` metres, an in-step doctrine marching on within
    ``warm_start_exposed_range`` of an enemy in sight) in ``battles`` for ``n_steps``
    env-steps (:func:`clone_team` with ``warm_start_epochs`` at
    ``warm_start_learning_rate``); battles with orders imitate the
    :class:`~envs.commanders.orders.OrderFollower`, its attacks halting at the hold range,
    and battles with an order of battle the combined-arms doctrine playing
    ``warm_start_arms_plan``. A policy that normalises its observations fits their
    statistics to the demonstrations first.

    Returns:
        The env-steps used, and the fit: the final epoch's action and value losses
        (:func:`clone_team`) and the number of samples it learnt from.
    """
    config = battles.config
    hold_range = config.warm_start_hold_range
    # Battalions that follow orders learn from one that does, and battalions of several
    # arms from the combined-arms doctrine, not from the disciplined doctrine.
    if config.order_period:
        teacher = OrderFollower(map_diagonal=math.hypot(config.map_width, config.map_height),
                                hold_range=hold_range)
    elif config.order_of_battle is not None:
        teacher = CombinedArmsRed(ARMS_PLANS[config.warm_start_arms_plan])
    else:
        teacher = make_doctrine(config.warm_start_doctrine, config.map_width,
                                config.map_height, hold_range, config.warm_start_exposed_range)
    demonstrations, used = collect_team_demonstrations(battles, teacher, n_steps,
                                                       config.gamma)
    if policy.normalize_observations:
        if len(demonstrations.observations):
            policy.fit_observation_statistics(
                torch.as_tensor(demonstrations.observations, device=policy.device),
                torch.as_tensor(demonstrations.critic_states, device=policy.device))
        else:  # clone_team says why it skips too
            logger.warning("observation statistics not fitted: no battle ended within the "
                           "imitation steps; the policy sees its observations unscaled")
    losses = clone_team(policy, demonstrations, epochs=config.warm_start_epochs,
                        learning_rate=config.warm_start_learning_rate, seed=config.seed)
    return used, {**losses, "samples": float(len(demonstrations.observations))}


__all__ = ["TeamDemonstrations", "clone_team", "collect_team_demonstrations", "warm_start_team"]
