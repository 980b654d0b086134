"""WFM-1's minibatches run in groups of battles of similar size.

A battle of WFM-1 holds from 2 to 32 tokens, and a rollout or a set of demonstrations
pads every battle to its widest. Run whole, a minibatch pays for that padding in every
layer; :func:`in_length_groups` sorts its rows by their count of real tokens, runs the
policy on a few groups of them, each cut to its fullest row's count, and lays the
outputs back out as if the minibatch had been run whole. The policy reads a battle as a
set of tokens (no position is encoded), so the numbers are the same, less the padding's
cost; the losses are then computed once, on the whole minibatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch

LENGTH_GROUPS = 4
"""Groups a minibatch runs in: on the 2-core machine, 4 ran behaviour cloning 1.7 times
as fast as 1 (2: 1.45 times, 8: 1.6 times; ``docs/performance.md``)."""

Outputs = tuple[Sequence[torch.Tensor | None], Sequence[torch.Tensor]]
"""What a forward gives :func:`in_length_groups`: ``(per_token, per_row)`` tensors,
``(b, w, ...)`` along the group's ``w`` tokens and ``(b, ...)``; None where an output
is absent (a policy without a formation head has no formation logits)."""


def in_length_groups(forward: Callable[[dict[str, torch.Tensor]], Outputs],
                     rows: Mapping[str, torch.Tensor], token_keys: Sequence[str],
                     n_groups: int = LENGTH_GROUPS
                     ) -> tuple[list[torch.Tensor | None], list[torch.Tensor]]:
    """``forward`` run on ``rows`` in at most ``n_groups`` groups of similar token count.

    Parameters:
        forward: the minibatch's forward pass: a group's rows -> :data:`Outputs`.
        rows: the minibatch: key -> ``(B, N, ...)`` tensors along the tokens for the
            ``token_keys`` (``pad_mask`` among them, True at padding), ``(B, ...)`` for
            the others.
        token_keys: the keys of ``rows`` along the tokens.
        n_groups: how many groups at most (1: the whole minibatch, cut to its fullest
            row).

    Returns:
        ``(per_token, per_row)``: ``forward``'s outputs for the whole minibatch, ``(B, N,
        ...)`` and ``(B, ...)`` in the rows' order. Padding positions hold nothing to
        read (what ``forward`` gave there, or zero): losses mask them, as they do when a
        minibatch runs whole.
    """
    pad = rows["pad_mask"]
    n_rows, n_tokens = pad.shape
    counts = (~pad).sum(dim=1)
    by_count = torch.argsort(counts, stable=True)
    per_token: list[list] = []
    per_row: list[list] = []
    places = []
    for part in by_count.tensor_split(min(n_groups, n_rows)):
        width = int(counts[part[-1]].clamp(min=1))
        # Each row's real tokens first (stable: in their order), then its padding.
        tokens_at = torch.argsort(pad[part].to(torch.uint8), dim=1, stable=True)[:, :width]
        group = {key: value[part] for key, value in rows.items()}
        for key in token_keys:
            value = group[key]
            index = tokens_at.reshape(tokens_at.shape + (1,) * (value.dim() - 2))
            group[key] = value.gather(1, index.expand(tokens_at.shape + value.shape[2:]))
        token_out, row_out = forward(group)
        per_token.append(list(token_out))
        per_row.append(list(row_out))
        places.append((part, tokens_at))

    def laid_out(outputs: list, whole: tuple[int, ...], along_tokens: bool):
        if outputs[0] is None:
            return None
        out = outputs[0].new_zeros(whole + outputs[0].shape[len(whole):])
        for value, (part, tokens_at) in zip(outputs, places, strict=True):
            where = (part[:, None].expand_as(tokens_at), tokens_at) if along_tokens else (part,)
            out = out.index_put(where, value)
        return out

    return ([laid_out([group[k] for group in per_token], (n_rows, n_tokens), True)
             for k in range(len(per_token[0]))],
            [laid_out([group[k] for group in per_row], (n_rows,), False)
             for k in range(len(per_row[0]))])


__all__ = ["LENGTH_GROUPS", "Outputs", "in_length_groups"]
