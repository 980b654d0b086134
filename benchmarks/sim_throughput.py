"""Simulator throughput: env-steps per second of the duel and team envs, single and batched.

Rows: ``BattalionEnv`` (one Gymnasium duel), ``BattalionVecEnv`` (batches of duels),
``MultiBattalionEnv`` (one 2v2 PettingZoo battle) and the batched multi env
(:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`) at 2v2, 4v4, 6v6 and 8v8.
Then the start-up cost of the compiled kernels: a fresh process importing the envs
and stepping each once, with an empty Numba cache (cold: everything compiles) and
with the cache the first run left (warm).
Blue plays pre-drawn random actions against scripted L5 on random terrain, so
battles end and restart at realistic rates. Each configuration is timed for a
fixed wall-clock slice several times and the best slice is reported (the
machine is shared; the best slice is the least disturbed one); the slices are taken
in rounds of every configuration, so one configuration's are spread over the run.
"with infos" also builds every per-battle info dict each step, as SB3's VecMonitor
does.

Usage::

    python -m benchmarks.sim_throughput [--seconds 2] [--repeats 3]
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks import argument_parser
from envs.battalion_env import BattalionEnv
from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.multi_battalion_env import MultiBattalionEnv
from envs.sim.config import BattleConfig
from envs.sim.constants import VISIBILITY_RADIUS
from envs.vec_env import BattalionVecEnv

BATCH_SIZES = (8, 64, 1024, 4096)
TEAM_BATCH = 1024
TEAM_SIZES = ((2, 2), (4, 4), (6, 6), (8, 8))
RED_LEVEL = 5


def random_actions(n_steps: int, n_envs: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform([-1, -1, 0], [1, 1, 1], size=(n_steps, n_envs, 3)).astype(np.float32)


def time_single(seconds: float) -> float:
    """Env-steps/s of one BattalionEnv, auto-resetting like a training loop."""
    env = BattalionEnv(curriculum_level=5)
    env.reset(seed=0)
    actions = random_actions(4096, 1, seed=1)[:, 0]
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
    actions = random_actions(64, n_envs, seed=1)
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


def team_single_stepper(steps_per_call: int):
    """A function stepping one 2v2 MultiBattalionEnv ``steps_per_call`` times (Blue random
    orders, Red scripted L5, reset when the battle ends); it returns ``steps_per_call``."""
    env = MultiBattalionEnv(2, 2)
    env.reset(seed=0)
    orders = np.random.default_rng(0).uniform(-1, 1, (4096, 3)).astype(np.float32)
    given = [0]

    def step() -> int:
        for _ in range(steps_per_call):
            if not env.agents:
                env.reset()
            actions = env.scripted_actions(RED_LEVEL)
            for agent in env.agents:
                if agent.startswith("blue"):
                    actions[agent] = orders[given[0] % len(orders)]
                    given[0] += 1
            env.step(actions)
        return steps_per_call

    return step


def team_batch_stepper(n_battles: int, n_blue: int, n_red: int):
    """A function stepping ``n_battles`` battles of ``n_blue`` against ``n_red`` once (Blue
    random orders, Red scripted L5, finished battles restarted); it returns ``n_battles``."""
    battles = MultiBattalionBatch(n_battles, n_blue, n_red, config=BattleConfig(), terrain=None,
                                  randomize_terrain=True, visibility_radius=VISIBILITY_RADIUS,
                                  reward_weights=None)
    battles.reset(np.arange(n_battles), list(range(n_battles)), np.zeros(n_battles, np.int64))
    units = n_blue + n_red
    orders = np.random.default_rng(0).uniform(-1, 1, (n_battles, units, 3)).astype(np.float32)
    red = np.arange(n_blue, units)

    def step() -> int:
        orders[:, n_blue:] = battles.scripted_actions(red, RED_LEVEL)
        result = battles.step(orders)
        if result.battle_over.any():
            battles.next_episode(np.flatnonzero(result.battle_over))
        return n_battles

    return step


def time_calls(step, seconds: float) -> float:
    """What ``step()`` returns (env-steps) per second, over ``seconds``."""
    step()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        count += step()
    return count / (time.perf_counter() - start)


START_UP = """
import time
start = time.perf_counter()
from envs.precompile import precompile
precompile()
print(time.perf_counter() - start)
"""
"""Imports the envs and steps each kind once, serial and parallel kernels alike."""


def start_up_seconds() -> tuple[float, float]:
    """Seconds a fresh process takes to import and first step every env, with an empty
    Numba cache and then with the cache that run wrote."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}

        def run() -> float:
            done = subprocess.run([sys.executable, "-c", START_UP], env=env, check=True,
                                  capture_output=True, text=True)
            return float(done.stdout.split()[-1])

        return run(), run()


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one timed slice")
    parser.add_argument("--repeats", type=int, default=3, help="slices per configuration")
    args = parser.parse_args(argv)

    measures = [("BattalionEnv (single)", 1, lambda: time_single(args.seconds), None)]
    for n in BATCH_SIZES:
        measures.append(("BattalionVecEnv", n,
                         lambda n=n: time_vec(n, args.seconds, with_infos=False),
                         lambda n=n: time_vec(n, args.seconds, with_infos=True)))
    pettingzoo = team_single_stepper(64)
    measures.append(("MultiBattalionEnv 2v2 (one PettingZoo env)", 1,
                     lambda: time_calls(pettingzoo, args.seconds), None))
    for n_blue, n_red in TEAM_SIZES:
        stepper = team_batch_stepper(TEAM_BATCH, n_blue, n_red)
        measures.append((f"batched multi env {n_blue}v{n_red}", TEAM_BATCH,
                         lambda stepper=stepper: time_calls(stepper, args.seconds), None))
    # Rounds of every configuration once, so that each configuration's slices are spread
    # over the whole run: a disturbance of a few seconds spoils one slice of several
    # configurations, not every slice of one.
    best: dict[str, float] = {}
    for _ in range(args.repeats):
        for name, n, measure, with_infos in measures:
            for key, timed in (((name, n), measure), ((name, n, "infos"), with_infos)):
                if timed is not None:
                    best[key] = max(best.get(key, 0.0), timed())
    single = best[("BattalionEnv (single)", 1)]
    rows = [(name, n, best[(name, n)], best.get((name, n, "infos")))
            for name, n, _, _ in measures]

    print(f"# Simulator throughput vs scripted L5 ({platform.processor() or platform.machine()}, "
          f"numpy {np.__version__}, best of {args.repeats} x {args.seconds:g} s)")
    print()
    print("| env | battles | env-steps/s | x single duel | with infos (env-steps/s) |")
    print("|---|---:|---:|---:|---:|")
    for name, n, rate, infos in rows:
        infos_cell = "" if infos is None else f"{infos:,.0f}"
        print(f"| {name} | {n} | {rate:,.0f} | {rate / single:,.1f} | {infos_cell} |")
    cold, warm = start_up_seconds()
    print()
    print("| start-up (import, first step of every env) | seconds |")
    print("|---|---:|")
    print(f"| cold (empty Numba cache: compiles every kernel) | {cold:.1f} |")
    print(f"| warm (the cache the cold run wrote) | {warm:.1f} |")


if __name__ == "__main__":
    main()
