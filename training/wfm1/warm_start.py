"""WFM-1's warm start: imitate the combined-arms doctrine before PPO.

A policy that starts at random against the doctrine loses nearly every battle, so the
reward for winning is rarely seen. :func:`collect_demonstrations` plays ``n_steps``
battle steps of training scenarios with the doctrine commanding Red and Blue's teacher
(the doctrine, the doctrine playing the run's ``warm_start_arms_plan``, or the lookahead
teacher of its ``warm_start_lookahead``) commanding Blue, and records Blue's tokens and the
teacher's order for each of its units (:attr:`BattlesStep.doctrine_actions`); the policy
is then fitted to them: each own token's action mean to its order, the value to the
discounted return of its battle, and a formation head, if any, to the teacher's
formation orders by cross-entropy. The teacher reads the whole field; the policy imitates
it from its fogged tokens. With ``warm_start_dagger_rounds``, each round lets the policy
command Blue, labels the states it reached with the teacher's orders and fits again
(DAgger: Ross, Gordon and Bagnell, 2011). ``docs/wfm1.md`` ("Training") has the details.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from envs.battles.echelon_tokens import echelon_tokens
from models.wfm1 import WFM1Batch, WFM1Policy, own_order_error
from training.common.imitation import clone_policy, discounted_returns
from training.wfm1.battles import (
    ECHELON_KEYS,
    ScenarioBattles,
    echelon_rows,
    mean_orders,
)
from training.wfm1.minibatches import Outputs, in_length_groups

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
    echelons: dict[str, np.ndarray] = field(default_factory=dict)
    """Blue's brigade and division tokens and their masks of each sample
    (:data:`~training.wfm1.battles.ECHELON_KEYS`), when collected with a ``brigade_size``;
    else empty."""

    def __len__(self) -> int:
        return len(self.tokens)


def collect_demonstrations(draw_battles, n_steps: int, gamma: float,
                           steps_per_draw: int, brigade_size: int | None = None,
                           policy: WFM1Policy | None = None) -> tuple[Demonstrations, int]:
    """Play Blue's teacher against the doctrine in battles ``draw_battles()`` gives (a new
    :class:`~training.wfm1.battles.ScenarioBattles` each ``steps_per_draw`` steps)
    until ``n_steps`` battle steps are played; with a ``brigade_size``, Blue's brigade and
    division tokens of brigades of that many battalions are kept too
    (:func:`~envs.battles.echelon_tokens.echelon_tokens`, for a policy with
    ``echelon_tokens``). With a ``policy``, Blue plays the policy's means instead (its
    likeliest formations with a formation head) and the teacher labels the states the
    policy reached (DAgger's data).

    Returns:
        The demonstrations and the battle steps played.
    """
    parts, used, followed = [], 0, {}
    while used < n_steps:
        battles: ScenarioBattles = draw_battles()
        keys = ("tokens", "pad_mask", "own_mask", "actions", "rewards", "dones")
        record: dict[str, list[np.ndarray]] = {k: [] for k in keys + (
            ECHELON_KEYS if brigade_size is not None else ())}
        for _ in range(min(steps_per_draw, -(-(n_steps - used) // battles.n_battles))):
            view = battles.observe()
            if brigade_size is not None:
                echelons = echelon_tokens(view, brigade_size)
                for key in ECHELON_KEYS:
                    record[key].append(getattr(echelons, key))
            actions = None if policy is None else mean_orders(battles, view, policy)
            result = battles.step(actions)
            for key, value in (("tokens", view.tokens), ("pad_mask", view.pad_mask),
                               ("own_mask", view.own_mask),
                               ("actions", result.doctrine_actions),
                               ("rewards", result.reward), ("dones", result.done)):
                record[key].append(value)
            used += battles.n_battles
        if battles.lookahead is not None:
            for name, count in zip(battles.lookahead.plans, battles.choice_steps, strict=True):
                followed[name] = followed.get(name, 0) + int(count)
        returns, known = discounted_returns(np.array(record["rewards"]),
                                            np.array(record["dones"]), gamma)
        cards = np.broadcast_to(battles.cards, known.shape + battles.cards.shape[1:])
        parts.append(Demonstrations(*(np.array(record[k])[known] for k in (
            "tokens", "pad_mask", "own_mask")), cards[known],
            np.array(record["actions"])[known], returns[known],
            {k: np.array(record[k])[known] for k in ECHELON_KEYS if k in record}))
    if followed:
        total = max(sum(followed.values()), 1)
        logger.info("WFM-1 lookahead teacher followed %s", ", ".join(
            f"{name} {count / total:.0%}" for name, count in followed.items()))
    return join_demonstrations(parts), used


def join_demonstrations(parts: list[Demonstrations]) -> Demonstrations:
    """Several collections' samples as one, their tokens (and echelon tokens) padded to
    the widest."""
    width = max(part.tokens.shape[1] for part in parts)

    def joined(key: str, fill=None) -> np.ndarray:
        arrays = [getattr(part, key) for part in parts]
        return np.concatenate(arrays) if fill is None else _padded(arrays, width, fill)

    echelons = {}
    if parts[0].echelons:  # a row's brigades follow its token count: padded apart
        fills = {"brigade": 0.0, "brigade_pad": True, "division": 0.0, "division_pad": True}
        echelons = {key: _padded([part.echelons[key] for part in parts],
                                 max(part.echelons[key].shape[1] for part in parts), fill)
                    for key, fill in fills.items()}
    return Demonstrations(joined("tokens", 0.0), joined("pad_mask", True),
                          joined("own_mask", False), joined("cards"), joined("actions", 0.0),
                          joined("returns").astype(np.float32), echelons)


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
    if policy.echelon_tokens and not demonstrations.echelons:
        raise ValueError("demonstrations hold no brigade and division tokens: the policy has "
                         "echelon_tokens=True (collect them with brigade_size="
                         f"{policy.brigade_size})")
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
    if policy.echelon_tokens:
        data.update({key: torch.from_numpy(np.ascontiguousarray(value)).to(device)
                     for key, value in demonstrations.echelons.items()})
    value_scale = max(1.0, float(data["returns"].var()))

    def forward(rows: dict[str, torch.Tensor]) -> Outputs:
        mean, logits, value = policy.heads(WFM1Batch.trusted(
            rows["tokens"], rows["pad_mask"], card=rows["cards"],
            echelons=echelon_rows(rows, policy.brigade_size)))
        return (mean, logits), (value,)

    def batch_losses(index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b = {key: value[index] for key, value in data.items()}
        (mean, logits), (value,) = in_length_groups(
            forward, {key: b[key] for key in ("tokens", "pad_mask", "cards", *ECHELON_KEYS)
                      if key in b}, ("tokens", "pad_mask"))
        return (own_order_error(mean, logits, b["actions"], b["own_mask"]),
                ((value - b["returns"]) ** 2).mean() / value_scale)

    return clone_policy(policy, len(demonstrations), batch_losses, epochs=epochs,
                        batch_size=batch_size, learning_rate=learning_rate, seed=seed,
                        log=logger, name="WFM-1")


def _padded(arrays: list[np.ndarray], width: int, fill) -> np.ndarray:
    """Arrays of (n, N_i, ...) padded along axis 1 to ``width`` with ``fill``, stacked."""
    out = []
    for a in arrays:
        pad = [(0, 0)] * a.ndim
        pad[1] = (0, width - a.shape[1])
        out.append(np.pad(a, pad, constant_values=fill))
    return np.concatenate(out)


__all__ = ["Demonstrations", "clone", "collect_demonstrations", "join_demonstrations"]
