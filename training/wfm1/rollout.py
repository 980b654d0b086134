"""A WFM-1 rollout: ``n_steps`` of every battle, each Blue unit sampling its order."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from models.wfm1 import WFM1Batch, WFM1Policy
from training.common.play import team_outcomes
from training.wfm1.battles import ECHELON_KEYS, ScenarioBattles


@dataclass
class WFMRollout:
    """``n_steps`` of every battle: (T, B, ...) tensors, and the battles that ended."""

    tokens: torch.Tensor
    pad_mask: torch.Tensor
    own_mask: torch.Tensor
    cards: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    teacher: torch.Tensor
    """The doctrine's order for each own token in the state reached (with a formation
    head, its formation code last)."""
    rewards: torch.Tensor
    dones: torch.Tensor
    last_values: torch.Tensor
    outcomes: list[int]
    """1 won, 0 drawn, -1 lost, for each battle that ended."""
    snapshot_red: list[bool] = field(default_factory=list)
    """For each of :attr:`outcomes`, whether that battle's Red was a self-play snapshot
    (else the doctrine)."""
    snapshot_share: float = 0.0
    """Share of the rollout's battles whose Red was a self-play snapshot."""
    echelons: dict[str, torch.Tensor] = field(default_factory=dict)
    """With a policy that reads ``echelon_tokens``: Blue's brigade and division tokens of
    each step and their masks (:data:`ECHELON_KEYS`, (T, B, ...)); else empty."""


def collect(policy: WFM1Policy, battles: ScenarioBattles, n_steps: int,
            device: torch.device) -> WFMRollout:
    """``n_steps`` of every battle of ``battles``, each Blue unit sampling its order from
    ``policy``; every tensor on ``device``."""
    cards = torch.from_numpy(battles.cards).to(device)
    keys = ("tokens", "pad_mask", "own_mask", "actions", "log_probs", "values", "teacher",
            "rewards", "dones")
    if policy.echelon_tokens:
        keys += ECHELON_KEYS
    steps: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
    ended: list[int] = []
    snapshot_red: list[bool] = []
    red_is_policy = battles.red_is_policy
    policy.eval()
    with torch.no_grad():
        for _ in range(n_steps):
            view = battles.observe()
            echelons = battles.echelons(policy)
            tokens, pad, own = (torch.from_numpy(a).to(device) for a in (
                view.tokens, view.pad_mask, view.own_mask))
            actions, log_probs, values = policy.act_and_value(
                WFM1Batch.trusted(tokens, pad, own, cards, echelons))
            if echelons is not None:
                for key in ECHELON_KEYS:
                    steps[key].append(torch.from_numpy(getattr(echelons, key)).to(device))
            result = battles.step(actions.cpu().numpy())
            for key, value in (("tokens", tokens), ("pad_mask", pad), ("own_mask", own),
                               ("actions", actions), ("log_probs", log_probs),
                               ("values", values),
                               ("teacher", torch.from_numpy(result.doctrine_actions)),
                               ("rewards", torch.from_numpy(result.reward)),
                               ("dones", torch.from_numpy(result.done))):
                steps[key].append(value.to(device))
            ended.extend(team_outcomes(result.winner[result.done]).tolist())
            snapshot_red.extend(red_is_policy[result.done].tolist())
        view = battles.observe()
        last = policy.get_value(WFM1Batch.trusted(
            torch.from_numpy(view.tokens).to(device), torch.from_numpy(view.pad_mask).to(device),
            card=cards, echelons=battles.echelons(policy)))
    stacked = {key: torch.stack(value) for key, value in steps.items()}
    echelons = {key: stacked.pop(key) for key in ECHELON_KEYS if key in stacked}
    return WFMRollout(**stacked, cards=cards, last_values=last, outcomes=ended,
                      snapshot_red=snapshot_red,
                      snapshot_share=float(red_is_policy.mean()), echelons=echelons)


__all__ = ["WFMRollout", "collect"]
