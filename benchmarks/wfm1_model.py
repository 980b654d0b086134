"""WFM-1 model: the default WFM1Policy's size and its CPU cost per decision.

Rows: the parameter count (total, the card adapter's, the rest), then the time one
decision takes (``act()`` on one battle, deterministic, without gradients, one torch
thread) with 8, 32 and 64 entity tokens (half the side's own units, half enemy units),
and the throughput of a batch of 256 battles of 16 tokens each. A decision is one
battle's orders: an action for every own unit. Last, one behaviour-cloning step
(forward, backward, Adam) on a minibatch of 1,024 battles of 1-16 units a side padded to
32 tokens, as WFM-1's training pads its battles, run whole and in groups of similar size
(:func:`training.wfm1.minibatches.in_length_groups`), and their ratio. Each
configuration is warmed up, then timed ``--repeats`` times (each repeat a fixed number
of calls, or one training step) and the median repeat is reported. The tokens are
random but well formed (one-hot arms and formations, positions on the map, unit
headings).

Usage::

    python -m benchmarks.wfm1_model [--repeats 7]
"""

from __future__ import annotations

import platform
import statistics
import time

import numpy as np
import torch

from benchmarks import argument_parser
from envs.battles.entity_tokens import ENTITY_TOKEN_DIM, TOKEN
from envs.sim.constants import ARM_NAMES, FORMATION_NAMES
from models.wfm1 import WFM1Batch, WFM1Policy, own_order_error
from training.wfm1.minibatches import LENGTH_GROUPS, in_length_groups

LATENCY_TOKENS = (8, 32, 64)
THROUGHPUT_BATTLES = 256
THROUGHPUT_TOKENS = 16
CALLS = {True: 20, False: 3}
"""Calls per timed repeat: for one battle (latency) and for the batch (throughput)."""
TRAIN_BATTLES = 1024
TRAIN_SIDE = 16
"""A training minibatch: battles of 1 to ``TRAIN_SIDE`` units a side, padded to
``2 * TRAIN_SIDE`` tokens (WFM-1's largest side)."""


def battle_tokens(n_battles: int, n_tokens: int, seed: int = 0
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens of ``n_battles`` battles, the first half of each row own units, the rest
    enemies, and the own-unit mask (no padding)."""
    rng = np.random.default_rng(seed)
    shape = (n_battles, n_tokens)
    tokens = np.zeros((*shape, ENTITY_TOKEN_DIM), np.float32)
    arms = rng.integers(len(ARM_NAMES), size=shape)
    formations = rng.integers(len(FORMATION_NAMES), size=shape)
    tokens[..., TOKEN["arm_infantry"]:TOKEN["arm_infantry"] + len(ARM_NAMES)] = \
        np.eye(len(ARM_NAMES), dtype=np.float32)[arms]
    first_formation = TOKEN[f"formation_{FORMATION_NAMES[0]}"]
    tokens[..., first_formation:first_formation + len(FORMATION_NAMES)] = \
        np.eye(len(FORMATION_NAMES), dtype=np.float32)[formations]
    tokens[..., TOKEN["x"]] = rng.uniform(size=shape)
    tokens[..., TOKEN["y"]] = rng.uniform(size=shape)
    heading = rng.uniform(-np.pi, np.pi, size=shape)
    tokens[..., TOKEN["heading_cos"]] = np.cos(heading)
    tokens[..., TOKEN["heading_sin"]] = np.sin(heading)
    for name in ("strength", "readiness", "morale", "quality"):
        tokens[..., TOKEN[name]] = rng.uniform(0.3, 1.0, size=shape)
    own = np.zeros(shape, bool)
    own[:, : n_tokens // 2] = True
    tokens[..., TOKEN["team_own"]] = own
    tokens[..., TOKEN["team_enemy"]] = ~own
    tokens[..., TOKEN["report_age"]] = np.where(own, 0.0, rng.uniform(0.0, 0.5, size=shape))
    return torch.from_numpy(tokens), torch.from_numpy(own)


def seconds_per_call(policy: WFM1Policy, n_battles: int, n_tokens: int,
                     repeats: int) -> float:
    """Median over ``repeats`` of the mean seconds one ``act()`` call takes."""
    tokens, own = battle_tokens(n_battles, n_tokens)
    pad_mask = torch.zeros_like(own)
    calls = CALLS[n_battles == 1]

    def call() -> None:
        policy.act(tokens, pad_mask, own_mask=own, deterministic=True)

    for _ in range(calls):  # warm-up: first calls allocate and pick kernels
        call()
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        timings.append((time.perf_counter() - start) / calls)
    return statistics.median(timings)


def seconds_per_update(policy: WFM1Policy, n_groups: int, repeats: int) -> float:
    """Median over ``repeats`` of one behaviour-cloning step on a training minibatch
    (:data:`TRAIN_BATTLES`), its battles run in ``n_groups`` groups of similar size."""
    tokens, _ = battle_tokens(TRAIN_BATTLES, 2 * TRAIN_SIDE, seed=1)
    rng = np.random.default_rng(2)
    slots = np.arange(TRAIN_SIDE)
    blue, red = (slots >= rng.integers(1, TRAIN_SIDE + 1, size=(TRAIN_BATTLES, 1))
                 for _ in range(2))
    pad_mask = torch.from_numpy(np.concatenate([blue, red], axis=1))
    own = torch.from_numpy(np.concatenate([~blue, np.zeros_like(red)], axis=1))
    rows = {"tokens": tokens, "pad_mask": pad_mask}
    targets = torch.zeros(TRAIN_BATTLES, 2 * TRAIN_SIDE, policy.order_width)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-4)

    def forward(b):
        mean, logits, value = policy.heads(WFM1Batch.trusted(b["tokens"], b["pad_mask"]))
        return (mean, logits), (value,)

    def step() -> None:
        (mean, logits), (value,) = in_length_groups(forward, rows, ("tokens", "pad_mask"),
                                                    n_groups)
        loss = own_order_error(mean, logits, targets, own) + value.pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    policy.train()
    step()  # warm-up
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        timings.append(time.perf_counter() - start)
    policy.eval()
    return statistics.median(timings)


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats per row")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats={args.repeats} is invalid: expected an integer >= 1")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = WFM1Policy().eval()
    total = policy.n_parameters()
    adapter = sum(p.numel() for p in policy.adapter_parameters())
    base = sum(p.numel() for p in policy.base_parameters())

    print(f"# WFM-1 model ({platform.processor() or platform.machine()}, torch "
          f"{torch.__version__}, 1 thread, median of {args.repeats} repeats)")
    print()
    print("| parameters | count |")
    print("|---|---:|")
    print(f"| total | {total:,} |")
    print(f"| adapter (scenario-card FiLM) | {adapter:,} |")
    print(f"| base (everything else) | {base:,} |")
    print()
    print("| battles per call | tokens per battle (own + enemy) | ms per call "
          "| decisions/s | unit orders/s |")
    print("|---:|---|---:|---:|---:|")
    rows = [(1, n) for n in LATENCY_TOKENS] + [(THROUGHPUT_BATTLES, THROUGHPUT_TOKENS)]
    for n_battles, n_tokens in rows:
        seconds = seconds_per_call(policy, n_battles, n_tokens, args.repeats)
        own = n_tokens // 2
        print(f"| {n_battles} | {n_tokens} ({own} + {n_tokens - own}) | {seconds * 1e3:.2f} "
              f"| {n_battles / seconds:,.0f} | {n_battles * own / seconds:,.0f} |")
    print()
    print(f"| behaviour-cloning step, {TRAIN_BATTLES:,} battles of 1-{TRAIN_SIDE} units a side "
          "| ms per step | battles/s |")
    print("|---|---:|---:|")
    whole = seconds_per_update(policy, 1, args.repeats)
    grouped = seconds_per_update(policy, LENGTH_GROUPS, args.repeats)
    for label, seconds in (("run whole (padded to its fullest battle)", whole),
                           (f"in {LENGTH_GROUPS} groups of similar size", grouped)):
        print(f"| {label} | {seconds * 1e3:,.0f} | {TRAIN_BATTLES / seconds:,.0f} |")
    print(f"| ratio | {whole / grouped:.2f}x | |")


if __name__ == "__main__":
    main()
