"""Warm start: copy a hand-written doctrine into a fresh policy before PPO.

Against an enemy that shoots back, the winning plan (march in silence, halt,
then volley) pays only after a long run of held fire, which random exploration
practically never produces: PPO from scratch settles for trading shots at long
range. Like AlphaStar starting from supervised play, a run can instead begin by
imitating a doctrine (:class:`~envs.commanders.doctrine.DisciplinedCommander`) in its own
training battles, then improve on it with PPO.

1. :func:`collect_demonstrations` plays the doctrine in the training env and
   records observations, its orders and the discounted returns it earned.
2. :func:`behaviour_clone` fits the policy's mean action to the orders and its
   value head to the returns, so PPO starts with an actor and a critic that
   agree. The demonstration steps count towards the run's step budget.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3 import PPO

from envs.sim.validation import check_int, check_positive
from training.common.imitation import (
    ORDER_MARGIN,
    discounted_returns,
    fit_minibatches,
    order_loss,
)

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class Demonstrations:
    """Recorded play: (N, obs_dim) observations, (N, 3) orders (or (N, k) choices of a
    discrete action), (N,) discounted returns."""

    observations: np.ndarray
    actions: np.ndarray
    returns: np.ndarray


def collect_demonstrations(env, teacher, n_steps: int, gamma: float) -> Demonstrations:
    """Play ``teacher`` for ``n_steps`` env-steps (summed over battles) in ``env``.

    Returns are discounted within each episode; steps after the last episode
    end of a battle are dropped, since their return is not known.
    """
    n_steps = check_int("n_steps", n_steps, minimum=1)
    rounds = max(1, n_steps // env.num_envs)
    observations, actions, rewards, dones = [], [], [], []
    obs = env.reset()
    for _ in range(rounds):
        # As the teacher gives them: float orders, or drill indices for an echelon.
        action = np.asarray(teacher.predict(obs, deterministic=True)[0])
        observations.append(obs)
        actions.append(action)
        obs, reward, done, _ = env.step(action)
        rewards.append(reward)
        dones.append(done)
    returns, keep = discounted_returns(np.array(rewards, np.float32), np.array(dones), gamma)
    return Demonstrations(np.array(observations)[keep], np.array(actions)[keep], returns[keep])


def behaviour_clone(model: PPO, demonstrations: Demonstrations, *, epochs: int = 10,
                    batch_size: int = 1024, learning_rate: float = 1e-3,
                    margin: float = ORDER_MARGIN, seed: int = 0) -> dict[str, float]:
    """Fit ``model``'s orders to the demonstrated ones and its value to their returns
    (:func:`training.common.imitation.fit_minibatches`, the minibatch orders drawn by a
    NumPy generator seeded with ``seed``; the orders' loss is
    :func:`~training.common.imitation.order_loss`, which aims a Gaussian's orders at a
    bound ``margin`` past it). For a discrete action (an echelon's drills) the policy's
    log-likelihood of the demonstrated choices is maximised instead, and ``margin`` is
    not used.

    Returns:
        The final epoch's mean action and value losses.
    """
    epochs = check_int("epochs", epochs, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    check_positive("learning_rate", learning_rate)
    if len(demonstrations.observations) == 0:
        # Only steps whose return is known are kept: no battle ended within the steps.
        logger.warning("behaviour cloning skipped: no battle ended within the imitation "
                       "steps, so no return is known; give more warm-start steps")
        return {"action": math.nan, "value": math.nan}
    policy = model.policy
    device = policy.device
    observations = torch.as_tensor(demonstrations.observations, device=device)
    space = model.action_space
    discrete = isinstance(space, (spaces.Discrete, spaces.MultiDiscrete))
    actions = torch.as_tensor(demonstrations.actions, device=device)
    if discrete:
        actions = actions.long()
    returns = torch.as_tensor(demonstrations.returns, device=device)
    # Scale the value loss so that both terms weigh alike whatever the reward scale.
    value_scale = max(1.0, float(returns.var()))

    def batch_losses(index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if discrete:
            values, log_prob, _ = policy.evaluate_actions(observations[index], actions[index])
            action_loss = -log_prob.mean()
        else:
            action_loss = order_loss(policy, observations[index], actions[index], margin)
            values = policy.predict_values(observations[index])
        value_loss = ((values.squeeze(-1) - returns[index]) ** 2).mean() / value_scale
        return action_loss, value_loss

    losses = fit_minibatches(policy.parameters(), len(observations), batch_losses,
                             epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                             seed=np.random.default_rng(seed), device=device)
    logger.info("behaviour cloning on %d samples: action loss %.4f, value loss %.4f",
                len(observations), losses["action"], losses["value"])
    return losses


def imitate(model: PPO, env, teacher, n_steps: int, *, epochs: int = 10,
            learning_rate: float = 1e-3, margin: float = ORDER_MARGIN, seed: int = 0) -> int:
    """Play ``teacher`` in ``env`` for ``n_steps`` steps and clone it into ``model``
    (:func:`collect_demonstrations`, :func:`behaviour_clone` with ``epochs``,
    ``learning_rate`` and ``margin``); returns the steps used. A policy that normalises
    its observations fits their statistics to the demonstrations first."""
    demonstrations = collect_demonstrations(env, teacher, n_steps, model.gamma)
    if getattr(model.policy, "normalize_observations", False):
        if len(demonstrations.observations):
            model.policy.fit_observation_statistics(
                torch.as_tensor(demonstrations.observations, device=model.policy.device))
        else:  # behaviour_clone says why it skips too
            logger.warning("observation statistics not fitted: no battle ended within the "
                           "imitation steps; the policy sees its observations unscaled")
    behaviour_clone(model, demonstrations, epochs=epochs, learning_rate=learning_rate,
                    margin=margin, seed=seed)
    return max(1, n_steps // env.num_envs) * env.num_envs


def fit_on_own_play(model: PPO, env, n_steps: int) -> int:
    """Fit the observation statistics of ``model``'s policy (built with
    ``normalize_observations``) to ``n_steps`` env-steps of its own untrained play in
    ``env``, for a run without imitation; returns the steps used."""
    rounds = max(1, n_steps // env.num_envs)
    observations = []
    obs = env.reset()
    for _ in range(rounds):
        observations.append(obs)
        obs, _, _, _ = env.step(model.predict(obs, deterministic=False)[0])
    model.policy.fit_observation_statistics(
        torch.as_tensor(np.concatenate(observations), device=model.policy.device))
    return rounds * env.num_envs
