"""Simulator throughput: env-steps per second of BattalionEnv and BattalionVecEnv.

Blue plays pre-drawn random actions against scripted L5 on random terrain, so
battles end and restart at realistic rates. Each configuration is timed for a
fixed wall-clock slice several times and the best slice is reported (the
machine is shared; the best slice is the least disturbed one). "with infos"
also builds every per-battle info dict each step, as SB3's VecMonitor does.

Usage::

    python -m benchmarks.sim_throughput [--seconds 2] [--repeats 3]
"""

from __future__ import annotations

import platform
import time

import numpy as np

from benchmarks import argument_parser
from envs.battalion_env import BattalionEnv
from envs.vec_env import BattalionVecEnv

BATCH_SIZES = (8, 64, 1024, 4096)


def _random_actions(n_steps: int, n_envs: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform([-1, -1, 0], [1, 1, 1], size=(n_steps, n_envs, 3)).astype(np.float32)


def time_single(seconds: float) -> float:
    """Env-steps/s of one BattalionEnv, auto-resetting like a training loop."""
    env = BattalionEnv(curriculum_level=5)
    env.reset(seed=0)
    actions = _random_actions(4096, 1, seed=1)[:, 0]
    steps, start = 0, time.perf_counter()
    while True:
        for i in range(256):
            _, _, terminated, truncated, _ = env.step(actions[(steps + i) % 4096])
            if terminated or truncated:
                env.reset()
        steps += 256
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps / elapsed


def time_vec(n_envs: int, seconds: float, with_infos: bool) -> float:
    """Env-steps/s of a BattalionVecEnv of ``n_envs`` battles."""
    env = BattalionVecEnv(n_envs, curriculum_level=5)
    env.seed(0)
    env.reset()
    actions = _random_actions(64, n_envs, seed=1)
    steps, start = 0, time.perf_counter()
    while True:
        for i in range(8):
            _, _, _, infos = env.step(actions[(steps + i) % 64])
            if with_infos:
                list(infos)
        steps += 8
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps * n_envs / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one timed slice")
    parser.add_argument("--repeats", type=int, default=3, help="slices per configuration")
    args = parser.parse_args(argv)

    def best(measure) -> float:
        return max(measure() for _ in range(args.repeats))

    single = best(lambda: time_single(args.seconds))
    rows = [("BattalionEnv (single)", 1, single, None)]
    for n in BATCH_SIZES:
        rate = best(lambda n=n: time_vec(n, args.seconds, with_infos=False))
        with_infos = best(lambda n=n: time_vec(n, args.seconds, with_infos=True))
        rows.append(("BattalionVecEnv", n, rate, with_infos))

    print(f"# Simulator throughput vs scripted L5 ({platform.processor() or platform.machine()}, "
          f"numpy {np.__version__}, best of {args.repeats} x {args.seconds:g} s)")
    print()
    print("| env | n_envs | env-steps/s | x single | with infos (env-steps/s) |")
    print("|---|---:|---:|---:|---:|")
    for name, n, rate, infos in rows:
        infos_cell = "" if infos is None else f"{infos:,.0f}"
        print(f"| {name} | {n} | {rate:,.0f} | {rate / single:,.1f} | {infos_cell} |")


if __name__ == "__main__":
    main()
