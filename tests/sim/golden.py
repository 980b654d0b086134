"""A golden set of battles recorded from the NumPy engine, for the engine that replaces it.

1,400 whole battles, each played to its end through the batch envs the upper layers
use: 700 duels (:class:`~envs.battles.battalion_batch.BattalionBatch`: Blue a scripted level,
the doctrine or random orders, Red a scripted level) and 700 team battles
(:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`, 1v1 to 4v4: each side a
scripted level, the doctrine or random orders). Random orders come from the
counter-based generator keyed by battle and step, so the commanders depend on the
battle alone.

For every battle the file keeps the winner, the step it ended at, Blue's summed reward
and every battalion's final strength, morale, position and whether it routed or was
destroyed. ``tests/sim/test_golden.py`` replays them and compares: the winner, the
steps and the out-flags exactly, strengths, morale and reward to 1e-4, positions to
1 mm.

Command line (from the repository root)::

    python -m tests.sim.golden record     # writes tests/sim/data/golden_battles.npz
    python -m tests.sim.golden check      # replays and compares, prints the worst gaps
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from envs.battles.battalion_batch import BattalionBatch
from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.commanders.doctrine import DisciplinedCommander, ScriptedCommander
from envs.remote.batch_env import random_orders
from envs.sim.config import BattleConfig
from envs.sim.constants import ACTION_DIM, NUM_CURRICULUM_LEVELS

GOLDEN_FILE = Path(__file__).parent / "data" / "golden_battles.npz"
MAX_UNITS = 8
N_DUELS = 700
TEAM_SIZES = ((1, 1), (2, 2), (3, 3), (4, 4), (2, 3), (3, 2), (4, 2))
N_TEAM_BATTLES_EACH = 100
COMMANDERS = (*range(1, NUM_CURRICULUM_LEVELS + 1), "doctrine", "random")
"""Blue's (and a team side's) commander of battle ``i``: ``COMMANDERS[i % 7]``."""
FIELDS = ("strength", "morale", "x", "y", "routed", "destroyed")
RECORDED_MODEL = BattleConfig(melee_damage=0.0, arm_radius=(0.0, 0.0, 0.0))
"""The model the NumPy engine ran: today's with melee and the units' frontage (which
keeps units apart) switched off. Combined arms added both on purpose; every other new
factor is exactly 1 or 0 for infantry in line, so with these two off the battles must
come out as recorded."""

def _record(result: dict[str, list], state, battles: np.ndarray, n_units: int,
            winner: np.ndarray, reward: np.ndarray) -> None:
    for name in FIELDS:
        values = np.full((len(battles), MAX_UNITS), np.nan if name in ("strength", "morale", "x",
                                                                        "y") else 0)
        values[:, :n_units] = getattr(state, name)[battles]
        result[name].append(values)
    result["steps"].append(state.step[battles].copy())
    result["winner"].append(winner[battles].copy())
    result["blue_reward"].append(reward[battles].copy())
    result["n_units"].append(np.full(len(battles), n_units))


def play_duels(result: dict[str, list]) -> None:
    """The duels: battle ``i`` is seed ``i``, Red at level ``i % 5 + 1``."""
    config = RECORDED_MODEL
    batch = BattalionBatch(N_DUELS, config=config, terrain=None, randomize_terrain=True,
                           curriculum_level=1, reward_weights=None)
    index = np.arange(N_DUELS)
    for level in range(1, NUM_CURRICULUM_LEVELS + 1):
        batch.set_curriculum_level(level, index[index % NUM_CURRICULUM_LEVELS == level - 1])
    batch.reset(index, [int(i) for i in index], np.zeros(N_DUELS, np.int64))
    kinds = np.array([COMMANDERS.index(COMMANDERS[i % len(COMMANDERS)]) for i in index])
    commanders = [ScriptedCommander(c) if isinstance(c, int) else DisciplinedCommander()
                  for c in COMMANDERS[:-1]]
    reward = np.zeros(N_DUELS)
    done = np.zeros(N_DUELS, bool)
    winner = np.full(N_DUELS, -1)
    observation = batch.blue_observation()
    while not done.all():
        orders = random_orders(batch)[:, BLUE]
        for k, commander in enumerate(commanders):
            chosen = kinds == k
            orders[chosen] = commander.predict(observation[chosen])[0]
        step = batch.step(orders)
        live = ~done
        reward[live] += step.reward.total[live]
        ended = live & (step.terminated | step.truncated)
        out = batch.state.routed | batch.state.destroyed
        winner[ended & out[:, RED] & ~out[:, BLUE]] = BLUE
        winner[ended & out[:, BLUE] & ~out[:, RED]] = RED
        if ended.any():
            _record(result, batch.state, np.flatnonzero(ended), 2, winner, reward)
        done |= ended
        observation = step.observation


def play_team_battles(result: dict[str, list]) -> None:
    """The team battles: per size, battle ``i`` is seed ``10_000 * n_units + i``; Blue's
    commander is ``COMMANDERS[i % 7]``, Red's ``COMMANDERS[(i // 7 + i) % 7]``."""
    doctrine = DisciplinedCommander()
    for n_blue, n_red in TEAM_SIZES:
        n, n_units = N_TEAM_BATTLES_EACH, n_blue + n_red
        batch = MultiBattalionBatch(n, n_blue, n_red, config=RECORDED_MODEL, terrain=None,
                                    randomize_terrain=True, visibility_radius=600.0,
                                    reward_weights=None)
        index = np.arange(n)
        batch.reset(index, [10_000 * n_units + int(i) for i in index], np.zeros(n, np.int64))
        sides = ((np.arange(n_blue), index % 7), (np.arange(n_blue, n_units), (index // 7 + index)
                                                   % 7))
        reward = np.zeros(n)
        done = np.zeros(n, bool)
        winner = np.full(n, -1)
        while not done.all():
            orders = random_orders(batch)
            observation = batch.observation
            for units, kinds in sides:
                for k, commander in enumerate(COMMANDERS[:-1]):
                    chosen = np.flatnonzero(kinds == k)
                    if not len(chosen):
                        continue
                    if commander == "doctrine":
                        flat = observation[chosen][:, units].reshape(-1, observation.shape[-1])
                        orders[chosen[:, None], units] = doctrine.predict(flat)[0].reshape(
                            len(chosen), len(units), ACTION_DIM)
                    else:
                        levels = np.ones(n, np.int64)
                        orders[chosen[:, None], units] = batch.scripted_actions(
                            units, levels * commander)[chosen]
            step = batch.step(orders)
            live = ~done
            reward[live] += step.team_reward.total[:n][live]
            ended = live & step.battle_over
            winner[ended] = step.winner[ended]
            if ended.any():
                _record(result, batch.state, np.flatnonzero(ended), n_units, winner, reward)
            done |= ended
            over = np.flatnonzero(step.battle_over)
            # Finished battles sit out; they are restarted only to keep the batch stepping.
            if len(over):
                batch.next_episode(over)


def play_all() -> dict[str, np.ndarray]:
    """Every golden battle played with the current engine, in a fixed order (duels by the
    step they ended at, then team battles size by size)."""
    result: dict[str, list] = {name: [] for name in (*FIELDS, "steps", "winner", "blue_reward",
                                                     "n_units")}
    play_duels(result)
    play_team_battles(result)
    return {name: np.concatenate(parts) for name, parts in result.items()}


def compare(recorded: dict[str, np.ndarray], played: dict[str, np.ndarray]) -> dict[str, float]:
    """The largest gap of each field between two plays of the golden set (0 for exact)."""
    gaps = {}
    for name, expected in recorded.items():
        got = played[name]
        if expected.shape != got.shape:
            raise AssertionError(f"{name}: shape {got.shape}, recorded {expected.shape}")
        if expected.dtype.kind == "f":
            gaps[name] = float(np.nanmax(np.abs(expected - got))) if np.isfinite(
                expected).any() else 0.0
            if not np.array_equal(np.isnan(expected), np.isnan(got)):
                gaps[name] = float("inf")
        else:
            gaps[name] = float(np.count_nonzero(expected != got))
    return gaps


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.sim.golden",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("record", "check"))
    args = parser.parse_args()
    played = play_all()
    if args.command == "record":
        GOLDEN_FILE.parent.mkdir(exist_ok=True)
        np.savez_compressed(GOLDEN_FILE, **played)
        print(f"recorded {len(played['winner'])} battles to {GOLDEN_FILE}")
        return
    with np.load(GOLDEN_FILE) as recorded:
        gaps = compare(dict(recorded), played)
    for name, gap in gaps.items():
        print(f"{name:<12} {gap:g}")


if __name__ == "__main__":
    main()
