"""WFM-1's minibatches run in groups of similar size give the numbers of the whole."""

from __future__ import annotations

import pytest
import torch

from envs.battles.entity_tokens import ENTITY_TOKEN_DIM
from models.wfm1 import CARD_DIM, WFM1Batch, WFM1Policy, own_order_error
from training.wfm1.minibatches import in_length_groups


def minibatch(n_rows: int = 12, n_tokens: int = 9, seed: int = 0) -> dict[str, torch.Tensor]:
    """Rows of 1 to ``n_tokens`` real tokens, their padding scattered among them (the
    groups must gather each row's real tokens wherever they stand)."""
    generator = torch.Generator().manual_seed(seed)
    counts = torch.randint(1, n_tokens + 1, (n_rows,), generator=generator)
    counts[0] = n_tokens  # one full row
    pad = torch.ones(n_rows, n_tokens, dtype=torch.bool)
    for row, count in enumerate(counts.tolist()):
        pad[row, torch.randperm(n_tokens, generator=generator)[:count]] = False
    own = ~pad & (torch.rand(n_rows, n_tokens, generator=generator) < 0.6)
    return {"tokens": torch.rand(n_rows, n_tokens, ENTITY_TOKEN_DIM, generator=generator),
            "pad_mask": pad, "own_mask": own,
            "cards": torch.rand(n_rows, CARD_DIM, generator=generator),
            "actions": torch.rand(n_rows, n_tokens, 4, generator=generator) * 2 - 1}


@pytest.mark.parametrize("n_groups", [1, 3, 12, 40])
def test_groups_give_the_outputs_and_gradients_of_the_whole_minibatch(n_groups):
    torch.manual_seed(0)
    policy = WFM1Policy(d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1,
                        formation_orders=True)
    rows = minibatch()
    rows["actions"][..., 3] = torch.randint(-1, 3, rows["actions"].shape[:2]).float()

    def evaluate(b):
        log_prob, entropy, value, orders = policy.evaluate_actions(
            WFM1Batch.trusted(b["tokens"], b["pad_mask"], b["own_mask"], b["cards"]),
            b["actions"], return_orders=True)
        return (log_prob, entropy, orders.gaussian.mean, orders.formation_logits), (value,)

    def loss(outputs):
        (log_prob, entropy, mean, logits), (value,) = outputs
        return (log_prob.sum() + entropy.sum() + value.sum()
                + own_order_error(mean, logits, rows["actions"], rows["own_mask"]))

    whole = evaluate(rows)
    grouped = in_length_groups(evaluate, rows, ("tokens", "actions", "pad_mask", "own_mask"),
                               n_groups)
    real = ~rows["pad_mask"]
    for a, b in zip(whole[0], grouped[0], strict=True):
        torch.testing.assert_close(b[real], a[real], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grouped[1][0], whole[1][0], rtol=1e-5, atol=1e-5)

    gradients = []
    for outputs in (whole, grouped):
        policy.zero_grad()
        loss(outputs).backward()
        gradients.append([p.grad.clone() for p in policy.parameters() if p.grad is not None])
    for a, b in zip(*gradients, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


def test_a_policy_without_a_formation_head_gets_none_back():
    policy = WFM1Policy(d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1)
    rows = minibatch(seed=1)

    def heads(b):
        mean, logits, value = policy.heads(WFM1Batch.trusted(b["tokens"], b["pad_mask"],
                                                             card=b["cards"]))
        return (mean, logits), (value,)

    (mean, logits), (value,) = in_length_groups(heads, rows, ("tokens", "pad_mask"))
    assert logits is None and mean.shape == (12, 9, 3) and value.shape == (12,)


def test_groups_are_cut_to_their_fullest_row():
    rows = minibatch(n_rows=8, n_tokens=10, seed=2)
    seen = []

    def record(b):
        seen.append((len(b["tokens"]), b["tokens"].shape[1], int((~b["pad_mask"]).sum(1).max())))
        return (b["tokens"][..., 0],), (b["cards"][:, 0],)

    (first,), (card,) = in_length_groups(record, rows, ("tokens", "pad_mask"), 4)
    assert [n for n, _, _ in seen] == [2, 2, 2, 2]
    assert all(width == fullest for _, width, fullest in seen)
    assert [width for _, width, _ in seen] == sorted(width for _, width, _ in seen)
    real = ~rows["pad_mask"]
    torch.testing.assert_close(first[real], rows["tokens"][..., 0][real])
    torch.testing.assert_close(card, rows["cards"][:, 0])
