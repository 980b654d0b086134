"""WFM-1 model: the default WFM1Policy's size and its CPU cost per decision.

Rows: the parameter count (total, the card adapter's, the rest), then the time one
decision takes (``act()`` on one battle, deterministic, without gradients, one torch
thread) with 8, 32 and 64 entity tokens (half the side's own units, half enemy units),
and the throughput of a batch of 256 battles of 16 tokens each. A decision is one
battle's orders: an action for every own unit. Each configuration is warmed up, then
timed ``--repeats`` times (each repeat a fixed number of calls) and the median repeat
is reported. The tokens are random but well formed (one-hot arms and formations,
positions on the map, unit headings).

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
from models.wfm1 import WFM1Policy

LATENCY_TOKENS = (8, 32, 64)
THROUGHPUT_BATTLES = 256
THROUGHPUT_TOKENS = 16
CALLS = {True: 20, False: 3}
"""Calls per timed repeat: for one battle (latency) and for the batch (throughput)."""


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


if __name__ == "__main__":
    main()
