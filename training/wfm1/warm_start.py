"""WFM-1's warm start: imitate the combined-arms doctrine before PPO.

A policy that starts at random against the doctrine loses nearly every battle, so the
reward for winning is rarely seen. The warm start plays ``n_steps`` battle steps of
training scenarios with the doctrine commanding both sides, records Blue's tokens and
the doctrine's order for each of its units (:attr:`BattlesStep.doctrine_actions`), and
fits the policy to them: each own token's action mean to its order, and the value to
the discounted return of its battle (steps whose return is known: a battle ended
after them). A policy with a formation head (``WFM1Policy(formation_orders=True)``)
learns the doctrine's formation orders too, by cross-entropy, from battles that label
them (``ScenarioBattles(formation_orders=True)``). The doctrine reads the whole field;
the policy imitates it from its fogged tokens.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import torch

from models.wfm1 import WFM1Policy, own_order_error
from training.common.imitation import discounted_returns, fit_minibatches
from training.wfm1.battles import ScenarioBattles

logger = logging.getLogger(__name__)


@dataclass
class Demonstrations:
    """The doctrine's battles as samples (one per battle step with a known return)."""

    tokens: np.ndarray
    pad_mask: np.ndarray
    own_mask: np.ndarray
    cards: np.ndarray
    actions: np.ndarray
    returns: np.ndarray

    def __len__(self) -> int:
        return len(self.tokens)


def collect_demonstrations(draw_battles, n_steps: int, gamma: float,
                           steps_per_draw: int) -> tuple[Demonstrations, int]:
    """Play the doctrine on both sides of battles ``draw_battles()`` gives (a new
    :class:`~training.wfm1.battles.ScenarioBattles` each ``steps_per_draw`` steps)
    until ``n_steps`` battle steps are played.

    Returns:
        The demonstrations and the battle steps played.
    """
    parts, used = [], 0
    while used < n_steps:
        battles: ScenarioBattles = draw_battles()
        record: dict[str, list[np.ndarray]] = {k: [] for k in (
            "tokens", "pad_mask", "own_mask", "actions", "rewards", "dones")}
        for _ in range(min(steps_per_draw, -(-(n_steps - used) // battles.n_battles))):
            view = battles.observe()
            result = battles.step(None)
            for key, value in (("tokens", view.tokens), ("pad_mask", view.pad_mask),
                               ("own_mask", view.own_mask),
                               ("actions", result.doctrine_actions),
                               ("rewards", result.reward), ("dones", result.done)):
                record[key].append(value)
            used += battles.n_battles
        returns, known = discounted_returns(np.array(record["rewards"]),
                                            np.array(record["dones"]), gamma)
        cards = np.broadcast_to(battles.cards, known.shape + battles.cards.shape[1:])
        parts.append(Demonstrations(*(np.array(record[k])[known] for k in (
            "tokens", "pad_mask", "own_mask")), cards[known],
            np.array(record["actions"])[known], returns[known]))
    width = max(part.tokens.shape[1] for part in parts)

    def joined(key: str, fill=None) -> np.ndarray:
        arrays = [getattr(part, key) for part in parts]
        return np.concatenate(arrays) if fill is None else _padded(arrays, width, fill)

    return Demonstrations(joined("tokens", 0.0), joined("pad_mask", True),
                          joined("own_mask", False), joined("cards"), joined("actions", 0.0),
                          joined("returns").astype(np.float32)), used


def clone(policy: WFM1Policy, demonstrations: Demonstrations, *, epochs: int,
          batch_size: int = 1024, learning_rate: float = 1e-3, seed: int = 0) -> dict[str, float]:
    """Fit the action means of own tokens to the doctrine's orders and the value to the
    returns (module docstring), on the policy's device; with a formation head, its
    choices to the doctrine's formation orders too (cross-entropy, added to the action
    loss). Returns the final epoch's mean losses.

    Raises:
        ValueError: if the demonstrations' orders are not :attr:`WFM1Policy.order_width`
            numbers (formation labels for a policy with a formation head, none without).
    """
    width = demonstrations.actions.shape[-1]
    if width != policy.order_width:
        raise ValueError(f"demonstrations hold orders of {width} numbers: expected the "
                         f"policy's order_width={policy.order_width} (battles built with "
                         "formation_orders=True label the doctrine's formations, which only "
                         "a policy with a formation head learns)")
    if len(demonstrations) == 0:
        logger.warning("WFM-1 warm start skipped: no battle ended within the imitation steps, "
                       "so no return is known; give more warm-start steps")
        return {"action": math.nan, "value": math.nan}
    device = policy.device
    data = {key: torch.from_numpy(np.ascontiguousarray(getattr(demonstrations, key))).to(device)
            for key in ("tokens", "pad_mask", "own_mask", "cards", "actions", "returns")}
    value_scale = max(1.0, float(data["returns"].var()))

    def batch_losses(index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b = {key: value[index] for key, value in data.items()}
        mean, logits, value = policy.heads(b["tokens"], b["pad_mask"], card_vec=b["cards"])
        taught, own = b["actions"], b["own_mask"]
        return (own_order_error(mean, logits, taught, own),
                ((value - b["returns"]) ** 2).mean() / value_scale)

    policy.train()
    losses = fit_minibatches(policy.parameters(), len(demonstrations), batch_losses,
                             epochs=epochs, batch_size=batch_size,
                             learning_rate=learning_rate, seed=seed, device=device)
    policy.eval()
    logger.info("WFM-1 behaviour cloning on %d samples: action loss %.4f, value loss %.4f",
                len(demonstrations), losses["action"], losses["value"])
    return losses


def _padded(arrays: list[np.ndarray], width: int, fill) -> np.ndarray:
    """Arrays of (n, N_i, ...) padded along axis 1 to ``width`` with ``fill``, stacked."""
    out = []
    for a in arrays:
        pad = [(0, 0)] * a.ndim
        pad[1] = (0, width - a.shape[1])
        out.append(np.pad(a, pad, constant_values=fill))
    return np.concatenate(out)


__all__ = ["Demonstrations", "clone", "collect_demonstrations"]
