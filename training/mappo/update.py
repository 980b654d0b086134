"""MAPPO's learning step: advantages by GAE, then clipped-PPO epochs.

Both read a :class:`~training.mappo.rollout.Rollout`; neither knows about
battles, opponents or logging.
"""

from __future__ import annotations

import numpy as np
import torch

from models.formation_orders import formation_kl
from models.mappo_policy import MAPPOPolicy
from training.common.on_policy import ppo_epochs
from training.common.ppo_math import (
    AuxiliaryLoss,
    PPOLoss,
    gae,
    normalize_advantages,
    ppo_loss,
    rollout_diagnostics,
    shuffled_minibatches,
)
from training.mappo.config import MAPPOConfig
from training.mappo.rollout import Rollout


def advantages_and_returns(rollout: Rollout, gamma: float,
                           gae_lambda: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE per battalion with its own value and its own episode ends
    (:func:`training.common.ppo_math.gae`).

    A battalion's episode ends when it leaves the fight or the battle ends; the
    steps after it left (until the battle restarts) are not samples.
    """
    advantages, returns = gae(torch.from_numpy(rollout.rewards), rollout.values,
                              torch.from_numpy(rollout.dones),
                              torch.from_numpy(rollout.last_values), gamma, gae_lambda)
    return advantages.numpy(), returns.numpy()


def update(policy: MAPPOPolicy, optimizer: torch.optim.Optimizer, rollout: Rollout,
           advantages: np.ndarray, returns: np.ndarray, config: MAPPOConfig,
           generator: torch.Generator, train_actor: bool = True,
           reference: MAPPOPolicy | None = None) -> dict[str, float]:
    """Clipped-PPO epochs over the rollout's valid samples
    (:func:`training.common.ppo_math.ppo_loss`); mean losses and statistics, and the
    diagnostics of the rollout the update starts from: the critic's explained variance,
    the advantages' spread before normalisation and the returns' mean and spread.
    ``train_actor`` False trains the critic alone (the actor's weights do not move).
    With a ``reference`` policy (one with a formation head), each minibatch's loss adds
    ``config.formation_pull`` times the mean KL from the reference's formation choices
    to the policy's on the same observations (``formation_kl`` among the statistics)."""
    device = policy.device
    valid = torch.from_numpy(rollout.valid)
    nb = rollout.valid.shape[2]
    agent_of = (torch.arange(nb).expand(rollout.valid.shape) % policy.n_agents)[valid].to(device)
    obs, state = rollout.obs[valid].to(device), rollout.critic_state[valid].to(device)
    actions = rollout.actions[valid].to(device)
    old_log_probs = rollout.log_probs[valid].to(device)
    # MAPPO normalises over the whole rollout, once (WFM-1 per minibatch).
    raw_adv = torch.from_numpy(advantages)[valid].to(device)
    adv = normalize_advantages(raw_adv)
    ret = torch.from_numpy(returns)[valid].to(device)
    diagnostics = rollout_diagnostics(rollout.values[valid].to(device), raw_adv, ret)
    reference_logits = None if reference is None else reference.formation_logits(obs, agent_of)
    batch_size = config.minibatch_size(len(adv))

    def loss(mb: torch.Tensor) -> PPOLoss:
        log_prob, entropy, value, orders = policy.evaluate_actions(
            obs[mb], actions[mb], state[mb], agent_idx=agent_of[mb], return_orders=True)
        pull = None if reference_logits is None else AuxiliaryLoss(
            "formation_kl", formation_kl(reference_logits[mb], orders.formation_logits).mean(),
            config.formation_pull)
        return ppo_loss(log_prob, old_log_probs[mb], adv[mb], value, ret[mb], entropy,
                        clip_range=config.clip_range, vf_coef=config.vf_coef,
                        ent_coef=config.ent_coef, auxiliary=pull, train_actor=train_actor)

    policy.train()
    statistics = ppo_epochs(
        config.n_epochs, lambda: shuffled_minibatches(len(adv), batch_size, generator,
                                                      device=device),
        loss, optimizer, list(policy.parameters()), config.max_grad_norm, config.target_kl)
    policy.eval()
    names = ["policy_loss", "value_loss", "entropy", "total_loss", "approx_kl",
             "clip_fraction", *([] if reference is None else ["formation_kl"])]
    means = statistics.means(names)
    return {f"train/{name}": value for name, value in {**means, **diagnostics}.items()}


__all__ = ["advantages_and_returns", "update"]
