"""MAPPO's learning step: advantages by GAE, then clipped-PPO epochs.

Both read a :class:`~training.mappo.rollout.Rollout`; neither knows about
battles, opponents or logging.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from models.mappo_policy import MAPPOPolicy
from training.mappo.config import MAPPOConfig
from training.mappo.rollout import Rollout


def advantages_and_returns(rollout: Rollout, gamma: float,
                           gae_lambda: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE per battalion with its own value and its own episode ends.

    A battalion's episode ends when it leaves the fight or the battle ends; the
    steps after it left (until the battle restarts) are not samples.
    """
    values = rollout.values.numpy()
    advantages = np.zeros_like(values)
    running = np.zeros(values.shape[1:], np.float32)
    for t in reversed(range(len(values))):
        next_values = rollout.last_values if t == len(values) - 1 else values[t + 1]
        carry = 1.0 - rollout.dones[t]
        delta = rollout.rewards[t] + gamma * next_values * carry - values[t]
        running = delta + gamma * gae_lambda * carry * running
        advantages[t] = running
    return advantages, advantages + values


def update(policy: MAPPOPolicy, optimizer: torch.optim.Optimizer, rollout: Rollout,
           advantages: np.ndarray, returns: np.ndarray, config: MAPPOConfig,
           generator: torch.Generator) -> dict[str, float]:
    """Clipped-PPO epochs over the rollout's valid samples; mean losses."""
    device = policy.device
    valid = torch.from_numpy(rollout.valid)
    nb = rollout.valid.shape[2]
    agent_of = (torch.arange(nb).expand(rollout.valid.shape) % policy.n_agents)[valid].to(device)
    obs, state = rollout.obs[valid].to(device), rollout.critic_state[valid].to(device)
    actions = rollout.actions[valid].to(device)
    old_log_probs = rollout.log_probs[valid].to(device)
    adv = torch.from_numpy(advantages)[valid].to(device)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    ret = torch.from_numpy(returns)[valid].to(device)
    n = len(adv)
    sums = dict(policy_loss=0.0, value_loss=0.0, entropy=0.0, total_loss=0.0, approx_kl=0.0,
                clip_fraction=0.0)
    n_batches = 0
    batch_size = config.minibatch_size(n)
    policy.train()
    for _ in range(config.n_epochs):
        order = torch.randperm(n, generator=generator).to(device)
        for start in range(0, n, batch_size):
            mb = order[start:start + batch_size]
            log_prob, entropy, value = policy.evaluate_actions(obs[mb], actions[mb], state[mb],
                                                               agent_idx=agent_of[mb])
            log_ratio = log_prob - old_log_probs[mb]
            ratio = log_ratio.exp()
            clipped = ratio.clamp(1 - config.clip_range, 1 + config.clip_range)
            policy_loss = -torch.min(ratio * adv[mb], clipped * adv[mb]).mean()
            value_loss = (value - ret[mb]).pow(2).mean()
            entropy_mean = entropy.mean()
            loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy_mean
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                sums["approx_kl"] += float(((ratio - 1) - log_ratio).mean())
                sums["clip_fraction"] += float(((ratio - 1).abs() > config.clip_range)
                                               .float().mean())
            sums["policy_loss"] += policy_loss.item()
            sums["value_loss"] += value_loss.item()
            sums["entropy"] += entropy_mean.item()
            sums["total_loss"] += loss.item()
            n_batches += 1
    policy.eval()
    return {f"train/{name}": value / max(n_batches, 1) for name, value in sums.items()}


__all__ = ["advantages_and_returns", "update"]
