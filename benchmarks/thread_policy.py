"""OpenMP's wait policy against a busy core: the batched core and the PPO update, on one
thread and on two, with idle threads spinning (``ACTIVE``) or asleep (``PASSIVE``, the
project's default, :data:`envs.sim.jit.WAIT_POLICY`), on a quiet machine and with one
core held by a busy process.

OpenMP reads the policy when it starts, so each cell is its own Python process. The
core's cell steps a batch of 2v2 battles with scripted Red (Numba's threads); the
update's cell is one PPO update of the default ``train()`` (8,192 samples, 10 passes
over 4 minibatches, torch's threads), after one rollout. Each prints the best of a few
repeats.

Usage::

    python -m benchmarks.thread_policy [--battles 1024] [--seconds 3]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks import argument_parser

POLICIES = ("ACTIVE", "PASSIVE")
LOADS = ("quiet", "one core busy")

_CORE = """
import time, numpy as np
from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.sim.config import BattleConfig
from envs.sim.constants import VISIBILITY_RADIUS
n, seconds = {battles}, {seconds}
battles = MultiBattalionBatch(n, 2, 2, config=BattleConfig(), terrain=None,
                              randomize_terrain=True, visibility_radius=VISIBILITY_RADIUS,
                              reward_weights=None)
battles.reset(np.arange(n), list(range(n)), np.zeros(n, np.int64))
orders = np.zeros((n, 4, 3), np.float32)
def step():
    orders[:, 2:] = battles.scripted_actions(np.arange(2, 4), 5)
    result = battles.step(orders)
    result.observation
    ended = np.flatnonzero(result.battle_over)
    if len(ended):
        battles.next_episode(ended)
for _ in range(5):
    step()
best = float("inf")
for _ in range(3):
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < seconds / 3:
        step()
        count += 1
    best = min(best, (time.perf_counter() - start) / count)
print(best * 1e3)
"""

_UPDATE = """
import time, torch
torch.set_num_threads({threads})
from stable_baselines3.common.utils import configure_logger
from training.ppo.battles import make_training_env
from training.ppo.config import TrainingConfig
from training.train import _new_model
config = TrainingConfig(warm_start_doctrine=None, enable_wandb=False)
model = _new_model(config, make_training_env(config))
model.set_logger(configure_logger(0, None, "", False))
seconds, update = [], model.train
def timed_update():
    start = time.perf_counter()
    update()
    seconds.append(time.perf_counter() - start)
model.train = timed_update
model.learn(4 * config.rollout_steps)
print(min(seconds) * 1e3)
"""


def _cell(code: str, policy: str, threads: int) -> float:
    """Milliseconds the snippet prints, run in a fresh process under ``policy``."""
    env = {**os.environ, "OMP_WAIT_POLICY": policy, "NUMBA_NUM_THREADS": str(threads),
           "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--battles", type=int, default=1024,
                        help="2v2 battles in the core's batch (default 1024)")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="seconds of stepping per core cell (default 3)")
    args = parser.parse_args(argv)
    if args.battles < 1 or args.seconds <= 0:
        parser.error(f"--battles {args.battles} and --seconds {args.seconds}: expected "
                     "at least one battle and a positive time")
    core = _CORE.format(battles=args.battles, seconds=args.seconds)
    start = time.perf_counter()
    print(f"cores available: {len(os.sched_getaffinity(0))}\n")
    print("| load | wait policy | core, 1 thread (ms a step) | core, 2 threads | "
          "PPO update, 1 thread (ms) | PPO update, 2 threads |")
    print("|---|---|---:|---:|---:|---:|")
    for load in LOADS:
        busy = None
        if load != "quiet":
            busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            time.sleep(1.0)
        try:
            for policy in POLICIES:
                cells = [_cell(core, policy, 1), _cell(core, policy, 2),
                         _cell(_UPDATE.format(threads=1), policy, 1),
                         _cell(_UPDATE.format(threads=2), policy, 2)]
                print(f"| {load} | {policy} | " + " | ".join(f"{c:,.2f}" if c < 10 else
                                                             f"{c:,.0f}" for c in cells) + " |",
                      flush=True)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
    print(f"\n{args.battles} 2v2 battles a batch; the update of the default train() "
          f"(8,192 samples, 10 passes); {time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
