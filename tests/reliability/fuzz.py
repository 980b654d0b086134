"""A fuzz of the public API: invalid arguments must raise one of our named errors.

Each call takes a valid baseline call of one public entry point (an env
constructor, ``reset``, ``step``, a config, ``evaluate``, the league's pool,
match log and Nash solver, ...) and replaces one argument by an invalid value:
a wrong type (str, bytes, bool for int, float for int, complex, None, a list, a
dict, an object), a non-finite or huge number, a value out of its documented
range, an array of strings, objects, complex numbers or booleans, an array of
the wrong shape, an id with a newline or NUL, a path with a NUL. Every call is
judged:

- ``named``: it raised ``ValueError``, ``TypeError`` or ``KeyError`` (or a
  subclass) from a file of ours (``storage/``, ``envs/``, ``models/``, ``training/``), and the
  message names the argument: what should happen;
- ``unclear``: such an error from our code, but its message does not name the
  argument;
- ``silent``: it returned, or failed later in the way the valid baseline fails
  (the invalid value got past the boundary);
- ``raw``: any other error, or one raised inside NumPy, torch, pathlib,
  Gymnasium, SB3 or the standard library;
- ``hang``: it ran longer than :data:`HANG_S` seconds (a ``SIGALRM`` timer stops it).

:func:`run_fuzz` is used by ``tests/reliability/test_fuzz.py`` (about 1,500
calls) and ``benchmarks/fuzz.py`` (10,000 and more). Calls are drawn from a
seeded generator, so a run is reproducible.
"""

from __future__ import annotations

import json
import math
import random
import reprlib
import signal
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUR_CODE = tuple(ROOT / folder for folder in ("storage", "envs", "models", "training"))
HANG_S = 5.0
ALLOWED = (ValueError, TypeError, KeyError)
KINDS = ("named", "unclear", "silent", "raw", "hang")


NAN, INF = float("nan"), float("inf")
_STILL = {shape: np.zeros(shape, np.float32) for shape in ((3,), (2, 3), (1, 2, 3), (2, 4))}
"""Valid baseline arrays (never written to)."""
_UNSET = object()
_HOLD_TWO = np.zeros(2, np.int64)
"""A valid echelon action: choice 0 for each of two commanded units (never written to)."""


# --- invalid values ------------------------------------------------------------------------

class _Opaque:
    """An object of no expected type (its repr is stable, unlike ``object()``'s)."""

    def __repr__(self) -> str:
        return "<opaque>"


@dataclass(frozen=True)
class Gen:
    """A value drawn afresh for each call from the fuzz's generator."""

    draw: Callable[[random.Random], Any]
    label: str

    def __repr__(self) -> str:
        return f"<{self.label}>"


_CONTROL = [chr(c) for c in (*range(0x20), 0x7F, 0x85, 0x2028, 0x2029, 0xD800, 0xFEFF)]


def _random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("abcXYZ019_-.") for _ in range(n))


def _with_control(rng: random.Random) -> str:
    text = _random_text(rng, rng.randint(0, 12))
    at = rng.randint(0, len(text))
    return text[:at] + rng.choice(_CONTROL) + text[at:]


def _junk(optional: bool) -> list[Any]:
    """Values of the wrong type for any scalar argument."""
    values: list[Any] = ["", "abc", "1", b"1", 1j, complex(NAN, 0), [], [1], (1,), {},
                         {"a": 1}, _Opaque(), np.array(["a"]), np.array([1.0]),
                         np.array([1, 2]), Decimal("NaN")]
    return values if optional else [None, *values]


def bools() -> list[Any]:
    words = ("true", "false", "yes", "no", "on", "off", "t", "f", "1", "0")
    return _junk(False) + ["false", "true", "no", "yes", "False", "True", 0, 1, 0.0, 1.0,
                           NAN, np.int64(1), np.array([True]), [True],
                           Gen(lambda r: "".join(c.upper() if r.random() < 0.5 else c
                                                 for c in r.choice(words)), "random word"),
                           Gen(lambda r: r.randint(-10, 10), "random int"),
                           Gen(lambda r: r.uniform(-2, 2), "random float")]


def ints(low: int | None = None, high: int | None = None, *, optional: bool = False,
         too_big: tuple[int, ...] = ()) -> list[Any]:
    """Invalid values for an integer argument allowed in ``[low, high]``; ``too_big``
    adds values that are in range but too large for memory."""
    values = _junk(optional) + [True, False, 1.5, 2.0, NAN, INF, -INF, np.float64(2.0),
                                Fraction(3, 2), Decimal("2"), "2"]
    values.append(Gen(lambda r: r.uniform(-1e6, 1e6), "random float"))
    values.append(Gen(lambda r: str(r.randint(-100, 100)), "random digits"))
    if low is not None:
        values += [low - 1, low - 2**64, -(10**30), -(10**400),
                   Gen(lambda r: low - r.randint(1, 10**r.randint(1, 40)), "random below")]
    if high is not None:
        values += [high + 1, high + 2**64, 10**30, 2**63, 2**64, 10**400,
                   Gen(lambda r: high + r.randint(1, 10**r.randint(1, 40)), "random above")]
    return values + list(too_big)


def floats(low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False, optional: bool = False) -> list[Any]:
    """Invalid values for a real argument allowed in the given interval."""
    values = _junk(optional) + [True, False, NAN, INF, -INF, np.float64(NAN), "0.5",
                                Decimal("0.5")]
    values.append(Gen(lambda r: f"{r.uniform(-10, 10):.3f}", "random numeral"))
    if low is not None:
        values += [low - 1, -1e308, -(10**400)] + ([low] if low_open else [])
        values.append(Gen(lambda r: low - 10 ** r.uniform(-6, 300), "random below"))
        if low > 0:
            values += [low / 2, 5e-324, Gen(lambda r: low * r.random() * 0.999, "random small")]
    if high is not None:
        values += [high + 1, 1e308, 10**400] + ([high] if high_open else [])
        values.append(Gen(lambda r: high + 10 ** r.uniform(-6, 300), "random above"))
    return values


def seeds(count: int = 1) -> list[Any]:
    top = 2**63 - count
    return [v for v in _junk(True) if v is not None] + [
        -1, -(2**63), top + 1, 2**63, 2**64, 10**30, 10**400, 1.5, 0.0, 3.0, True, False, NAN, INF,
        np.float64(1.0), np.array(1), Fraction(1, 2),
        Gen(lambda r: -r.randint(1, 2**r.randint(1, 80)), "random negative"),
        Gen(lambda r: top + r.randint(1, 2**r.randint(1, 80)), "random too large"),
        Gen(lambda r: float(r.randint(0, 2**40)), "random integral float")]


def options(allowed: tuple[str, ...] = ()) -> list[Any]:
    values = ["x", b"x", 1, 1.5, True, [], [("seed", 1)], (("a", 1),), _Opaque(),
              np.array([1]), {"foo": 1}, {"seed": 1}, {1: 2}, {None: 1}, {"": 0},
              {"Options": 1}]
    return [v for v in values if not (isinstance(v, dict) and set(v) <= set(allowed))]


def arrays(shape: tuple[int, ...], *, any_batch: bool = False) -> list[Any]:
    """Invalid values for a real float array of ``shape`` (``any_batch``: the first
    dimension may be any size)."""
    size = int(np.prod(shape))
    bad_shape = [np.zeros(shape + (1,), np.float32), np.zeros((size + 1,), np.float32),
                 np.zeros((), np.float32), np.zeros((0,), np.float32), 1.0, [1.0, 2.0]]
    if not any_batch:
        bad_shape.append(np.zeros((shape[0] + 1,) + shape[1:], np.float32))

    def filled(value: Any, dtype: Any = None) -> np.ndarray:
        return np.full(shape, value, dtype=dtype)

    def one(value: float) -> np.ndarray:
        array = np.zeros(shape, np.float64)
        array.flat[size - 1] = value
        return array

    bad_dtypes = ("U3", "S3", object, complex, bool, "datetime64[s]", "timedelta64[s]")

    def random_shape(r: random.Random) -> np.ndarray:
        while True:
            wrong = tuple(r.randint(0, 4) for _ in range(r.randint(0, 4)))
            if wrong != shape and not (any_batch and wrong[1:] == shape[1:] and len(wrong)
                                       == len(shape) and wrong[0] > 0):
                return np.random.default_rng(r.getrandbits(32)).random(wrong)

    def random_dtype(r: random.Random) -> np.ndarray:
        return np.random.default_rng(r.getrandbits(32)).random(shape).astype(
            r.choice(bad_dtypes))

    def random_bad_entry(r: random.Random) -> np.ndarray:
        array = np.random.default_rng(r.getrandbits(32)).random(shape)
        array.flat[r.randrange(size)] = r.choice((NAN, INF, -INF, 1e39, -1e300))
        return array

    return [Gen(random_shape, "random wrong shape"), Gen(random_dtype, "random bad dtype"),
            Gen(random_bad_entry, "random non-finite entry"),
            None, "abc", b"abc", _Opaque(), {}, {"a": 1}, filled("1"), filled(b"1"),
            filled(0, object), filled(1 + 1j), filled(1, complex), filled(True),
            filled(False), np.zeros(shape, "datetime64[s]"), filled(0.5).astype(object),
            filled("nan"), np.full(shape, "0.5").tolist(), filled(0.5).tolist() + [[None]],
            [[1], [1, 2]], one(NAN), one(INF), one(-INF), one(1e300), one(-1e300),
            *bad_shape]


def identifiers(optional: bool = False) -> list[Any]:
    values = ["", " ", "\t", "a\nb", "a\0b", "a\rb", "a\x7fb", "a\u2028b", "\ud800",
              "x" * 201, "\n", 1, 1.5, b"id", ["a"], True, _Opaque(), ("a",),
              Gen(_with_control, "random id with a control character"),
              Gen(lambda r: _random_text(r, r.randint(201, 5000)), "random over-long id")]
    return values if optional else [None, *values]


def paths(optional: bool = False) -> list[Any]:
    def with_nul(r: random.Random) -> str:
        text = _random_text(r, r.randint(0, 20))
        at = r.randint(0, len(text))
        return text[:at] + "\0" + text[at:]

    values = [1, 1.5, b"path", "", "a\0b", "x" * 300, "a/" * 3000, "\ud800", [], True,
              _Opaque(), ["a"], Gen(with_nul, "random path with NUL"),
              Gen(lambda r: "d/" + _random_text(r, r.randint(256, 1000)), "random long name")]
    return values if optional else [None, *values]


def metadata() -> list[Any]:
    return ["x", 1, [1], True, _Opaque(), {"a": NAN}, {1: 2}, {"a": _Opaque()},
            {"a": {1, 2}}, {"a": INF}, {("a",): 1}]


def payoffs() -> list[Any]:
    square = np.full((2, 2), 0.5)
    return [None, "abc", {}, 1.0, _Opaque(), np.full((2, 2), "0.5"),
            square.astype(object), square.astype(complex), square > 0, [[0.5], [0.5, 0.5]],
            np.zeros(2), np.zeros((2, 3)), np.zeros((0, 0)), np.array([[0.5, NAN], [0.5, 0.5]]),
            np.array([[0.5, INF], [0.5, 0.5]]), [["a", "b"], ["c", "d"]]]


# --- the boundaries ------------------------------------------------------------------------

@dataclass
class Boundary:
    """One public entry point: how to call it validly and what to break.

    ``call(ctx, **changes)`` makes the baseline call with ``changes`` applied;
    ``arguments`` maps each argument to its invalid values; ``names`` lists other
    names an error may give for an argument (e.g. the env setting inside
    ``env_kwargs``); a call that raises ``baseline_error`` failed the way the valid
    baseline fails, after accepting the invalid value.
    """

    name: str
    call: Callable[..., Any]
    arguments: dict[str, list[Any]]
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    baseline_error: type[BaseException] | None = None


class _ZeroPolicy:
    """A model for ``evaluate``: holds still and holds fire."""

    def predict(self, observation, deterministic=False):
        obs = np.asarray(observation)
        return np.zeros(obs.shape[:-1] + (3,), np.float32), None


def _boundaries(workdir: Path) -> list[Boundary]:
    from envs import BattalionEnv, BattalionVecEnv, BattleConfig, MultiBattalionEnv, TerrainMap
    from envs.battles.battalion_batch import BattalionBatch
    from envs.battles.multi_battalion_batch import MultiBattalionBatch
    from envs.battles.multi_observation import MAX_TEAM_SIZE
    from envs.sim.constants import MAP_SIZE_RANGE, MAX_STEPS_LIMIT
    from training.evaluate import evaluate as evaluate_win_rate
    from training.evaluate import evaluate_detailed as evaluate_details
    from training.evaluate import run_episodes_with_model
    from training.league import AgentPool, MatchDatabase, compute_nash_distribution, solve_nash
    from training.league.nash import MAX_REGRET_ITERATIONS
    from training.mappo.config import MAPPOConfig
    from training.ppo.config import TrainingConfig

    lo, hi = MAP_SIZE_RANGE
    maps = floats(lo, hi)
    small = dict(max_steps=5, randomize_terrain=False)
    huge = (10**12, 10**15)

    duel = BattalionEnv(**small)
    duel.reset(seed=0)
    vec = BattalionVecEnv(2, **small)
    vec.reset()
    team = MultiBattalionEnv(1, 1, **small)
    team.reset(seed=0)
    team_batch = MultiBattalionBatch(1, 1, 1, config=BattleConfig(max_steps=5), terrain=None,
                                     randomize_terrain=False, visibility_radius=600.0,
                                     reward_weights=None)
    team_batch.reset(np.array([0]), [0], np.array([0], np.int64))
    pool = AgentPool(workdir / "pool" / "pool.json", max_size=1)
    pool.add("snapshots/a.pt", force=True)  # full from here on: force decides
    db = MatchDatabase(workdir / "matches.jsonl")
    missing = str(workdir / "missing_checkpoint.zip")

    def duel_step(ctx, action=_STILL[(3,)]):
        result = duel.step(action)
        if result[2] or result[3]:
            duel.reset(seed=0)
        return result

    def vec_step(ctx, actions=_STILL[(2, 3)]):
        return vec.step(actions)

    def team_step(ctx, actions=_UNSET, value=_UNSET):
        if not team.agents:
            team.reset(seed=0)
        if actions is _UNSET:
            actions = {"blue_0": _STILL[(3,)] if value is _UNSET else value}
        return team.step(actions)

    def record(ctx, **changes):
        kwargs = dict(agent_id="a", opponent_id="b", outcome=1.0)
        kwargs.update(changes)
        return db.record(**kwargs)

    def pool_add(ctx, **changes):
        kwargs = dict(snapshot_path="snapshots/b.pt", force=True)
        kwargs.update(changes)
        return pool.add(**kwargs)

    def run_episodes(ctx, **changes):
        kwargs = dict(model=_ZeroPolicy(), opponent="scripted_l1", n_episodes=2,
                      deterministic=True, seed=0, env=None,
                      env_kwargs={"max_steps": 3, "randomize_terrain": False})
        kwargs.update(changes)
        return run_episodes_with_model(**kwargs)

    def evaluate_detailed(ctx, **changes):
        kwargs = dict(checkpoint_path=missing, n_episodes=2, deterministic=True, seed=0,
                      opponent="scripted_l1", env_kwargs={"max_steps": 3})
        kwargs.update(changes)
        return evaluate_details(**kwargs)

    def evaluate(ctx, **changes):
        kwargs = dict(checkpoint_path=missing, n_episodes=2, deterministic=True, seed=0,
                      opponent="scripted_l1")
        kwargs.update(changes)
        return evaluate_win_rate(**kwargs)

    # None leaves a battlefield setting to the Battlefield (its default): valid.
    opt_maps = floats(lo, hi, optional=True)
    env_settings = {
        "map_width": opt_maps, "map_height": opt_maps,
        "max_steps": ints(1, MAX_STEPS_LIMIT, optional=True),
        "randomize_terrain": [v for v in bools() if v is not None],
        "hill_speed_factor": floats(0, 1, low_open=True, optional=True),
        "terrain": [v for v in _junk(True)] + [np.zeros((2, 2)), TerrainMap.flat(500, 500)],
        "reward_weights": [v for v in _junk(True)] + [{"win_bonus": 1.0}],
        "render_mode": [v for v in _junk(True)] + ["human", "RGB_ARRAY", 1, True],
    }
    training_fields = {
        "n_envs": ints(1, too_big=huge), "n_steps": ints(1, optional=True, too_big=(10**15,)),
        "total_timesteps": ints(1), "learning_rate": floats(0, 1, low_open=True,
                                                            high_open=True),
        "gamma": floats(0, 1, low_open=True), "seed": ints(0), "map_width": maps,
        "map_height": maps, "max_steps": ints(1, MAX_STEPS_LIMIT),
        "randomize_terrain": bools(), "eval_deterministic": bools(),
        "enable_wandb": bools(), "progress_bar": bools(), "enable_self_play": bools(),
        "n_eval_episodes": ints(1, too_big=huge), "warm_start_steps": ints(1, too_big=huge),
        "curriculum_level": ints(1, 5), "policy_hidden_sizes": [None, 128, "128", [], [0],
                                                                 [1.5], ["a"], [True]],
        "training_opponents": [None, "scripted_l1", ["scripted_l9"], [1], [None]],
        "device": [None, 1, "gpu", "", b"cpu"], "checkpoint_dir": paths(),
    }
    mappo_fields = {
        "n_envs": ints(1, too_big=huge), "n_blue": ints(1, MAX_TEAM_SIZE),
        "n_red": ints(1, MAX_TEAM_SIZE), "map_width": maps, "map_height": maps,
        "max_steps": ints(1, MAX_STEPS_LIMIT), "randomize_terrain": bools(),
        "share_parameters": bools(), "curriculum": bools(), "enable_self_play": bools(),
        "visibility_radius": floats(0, None, low_open=True), "seed": ints(0),
        "n_eval_episodes": ints(1, too_big=huge), "warm_start_steps": ints(1, too_big=huge),
        "red_level": ints(1, 5), "log_dir": paths(), "v1_checkpoint": paths(optional=True),
    }
    config_fields = {
        "map_width": maps, "map_height": maps, "max_steps": ints(1, MAX_STEPS_LIMIT),
        "los_samples": ints(1, 1024), "dt": floats(0, None, low_open=True),
        "hill_speed_factor": floats(0, 1, low_open=True), "rout_threshold": floats(0, 1),
        "morale_per_damage": floats(0, None), "fire_arc": floats(0, math.pi, low_open=True),
    }

    def batch_kwargs(**changes):
        kwargs = dict(config=BattleConfig(max_steps=5), terrain=None, randomize_terrain=False,
                      reward_weights=None)
        kwargs.update(changes)
        return kwargs

    from models.mappo_policy import MAPPOPolicy

    policy = MAPPOPolicy(obs_dim=4, action_dim=3, state_dim=5, n_agents=2)

    return [
        Boundary("BattalionEnv()", lambda ctx, **c: BattalionEnv(**{**small, **c}),
                 {**env_settings, "curriculum_level": ints(1, 5),
                  "red_policy": [v for v in _junk(True)] + [np.zeros(3)]}),
        Boundary("BattalionEnv.reset", lambda ctx, **c: duel.reset(**c),
                 {"seed": seeds(), "options": options()}),
        Boundary("BattalionEnv.step", duel_step, {"action": arrays((3,))}),
        Boundary("BattalionEnv.set_curriculum_level",
                 lambda ctx, level=3: duel.set_curriculum_level(level),
                 {"level": ints(1, 5)}),
        Boundary("BattalionVecEnv()", lambda ctx, **c: BattalionVecEnv(**{"n_envs": 2,
                                                                           **small, **c}),
                 {**env_settings, "n_envs": ints(1, too_big=huge),
                  "curriculum_level": ints(1, 5)}),
        Boundary("BattalionVecEnv.step", vec_step, {"actions": arrays((2, 3))}),
        Boundary("BattalionVecEnv.set_attr",
                 lambda ctx, curriculum_level=3, red_policy=None: (
                     vec.set_attr("curriculum_level", curriculum_level),
                     vec.set_attr("red_policy", red_policy)),
                 {"curriculum_level": ints(1, 5),
                  "red_policy": [v for v in _junk(True)] + [np.zeros(3)]},
                 names={"curriculum_level": ("level",), "red_policy": ("policy",)}),
        Boundary("BattalionVecEnv.seed", lambda ctx, seed=0: vec.seed(seed),
                 {"seed": seeds(2)}),
        Boundary("BattalionVecEnv.set_options", lambda ctx, options=None:
                 vec.set_options(options),
                 {"options": options() + [[{}], [{}, {"foo": 1}], [{}, {}, {}]]}),
        Boundary("MultiBattalionEnv()",
                 lambda ctx, **c: MultiBattalionEnv(**{"n_blue": 1, "n_red": 1, **small, **c}),
                 {**env_settings, "n_blue": ints(1, MAX_TEAM_SIZE),
                  "n_red": ints(1, MAX_TEAM_SIZE),
                  "visibility_radius": floats(0, None, low_open=True, optional=True)}),
        Boundary("MultiBattalionEnv.reset", lambda ctx, **c: team.reset(**c),
                 {"seed": seeds(), "options": options(("options",))}),
        Boundary("MultiBattalionEnv.step", team_step,
                 {"actions": [None, "blue_0", b"x", 1, [1, 2], [("blue_0", [0, 0, 0])],
                              {"blue_9": np.zeros(3)}, {1: np.zeros(3)}, {None: np.zeros(3)},
                              {"BLUE_0": np.zeros(3)}, _Opaque(), np.zeros(3)],
                  "value": arrays((3,))},
                 names={"value": ("actions",)}),
        Boundary("MultiBattalionEnv.agent queries",
                 lambda ctx, agent="blue_0", team_name="blue", level=3, agents=None: (
                     team.critic_state(agent), team.team_state(team_name),
                     team.scripted_actions(level, agents)),
                 {"agent": identifiers() + ["blue_6", "green_0"],
                  "team_name": [None, 1, "green", "BLUE", [], {}, b"blue"],
                  "level": ints(1, 5),
                  "agents": ["red_0", b"x", 1, ["red_9"], [1], [None], _Opaque()]},
                 names={"team_name": ("team",), "agents": ("agents", "agent")}),
        Boundary("BattalionBatch()", lambda ctx, n_battles=1, **c: BattalionBatch(
                     n_battles, **batch_kwargs(**{"curriculum_level": 5, **c})),
                 {"n_battles": ints(1, too_big=huge),
                  "randomize_terrain": [v for v in bools() if v is not None],
                  "curriculum_level": ints(1, 5),
                  "config": [v for v in _junk(True)] + [{"max_steps": 5}],
                  "reward_weights": [v for v in _junk(True)]}),
        Boundary("MultiBattalionBatch()",
                 lambda ctx, n_battles=1, n_blue=1, n_red=1, **c: MultiBattalionBatch(
                     n_battles, n_blue, n_red,
                     **batch_kwargs(**{"visibility_radius": 600.0, **c})),
                 {"n_battles": ints(1, too_big=huge), "n_blue": ints(1, too_big=(10**9,)),
                  "n_red": ints(1), "randomize_terrain": [v for v in bools() if v is not None],
                  "visibility_radius": floats(0, None, low_open=True, optional=True),
                  "config": [v for v in _junk(True)]},
                 names={"n_blue": ("n_blue", "n_battles")}),
        Boundary("MultiBattalionBatch.step",
                 lambda ctx, actions=_STILL[(1, 2, 3)]: team_batch.step(actions),
                 {"actions": arrays((1, 2, 3))}),
        Boundary("BattleConfig()", lambda ctx, **c: BattleConfig(**c), config_fields),
        Boundary("TerrainMap()", lambda ctx, **c: TerrainMap(**{
                     "elevation": np.zeros((2, 2)), "cover": np.zeros((2, 2)), **c}),
                 {"elevation": arrays((2, 2)), "cover": arrays((2, 2)) + [np.full((2, 2), 2.0)],
                  "width": maps, "height": maps},
                 names={"elevation": ("elevation", "cover")}),
        Boundary("TrainingConfig()", lambda ctx, **c: TrainingConfig(**c), training_fields),
        Boundary("MAPPOConfig()", lambda ctx, **c: MAPPOConfig(**c), mappo_fields),
        Boundary("run_episodes_with_model", run_episodes, {
            "model": [None, 1, "model", _Opaque(), np.zeros(3)],
            "opponent": [None, 1, _Opaque(), "scripted_l9", "a\0b", b"scripted_l1", "",
                         "x" * 300, ["scripted_l1"]],
            "n_episodes": ints(1, too_big=huge), "deterministic": bools(),
            "seed": seeds(2),
            "env": ["env", 1, _Opaque(), {}, []],
            "env_kwargs": ["x", 1, [("max_steps", 3)], {"curriculum_level": 1},
                           {"red_policy": None}, {"foo": 1}, {"max_steps": "3"},
                           {"randomize_terrain": "false"}, {"map_width": 1e308},
                           {"max_steps": 10**12}],
        }, names={"env_kwargs": ("env_kwargs", "max_steps", "randomize_terrain",
                                 "map_width")}),
        Boundary("evaluate_detailed", evaluate_detailed, {
            "checkpoint_path": paths(), "n_episodes": ints(1, too_big=huge),
            "deterministic": bools(), "seed": seeds(2),
            "opponent": [None, 1, _Opaque(), "a\0b", b"scripted_l1", ""],
            "env_kwargs": ["x", 1, {"curriculum_level": 1}, {"foo": 1}],
        }, baseline_error=FileNotFoundError),
        Boundary("evaluate", evaluate, {
            "checkpoint_path": paths(), "n_episodes": ints(1, too_big=huge),
            "deterministic": bools(), "seed": seeds(2),
        }, baseline_error=FileNotFoundError),
        Boundary("AgentPool()", lambda ctx, pool_manifest=str(workdir / "p2" / "pool.json"),
                 **c: AgentPool(pool_manifest, **c),
                 {"pool_manifest": paths(), "max_size": ints(1), "recover": bools()}),
        Boundary("AgentPool.add", pool_add, {
            "snapshot_path": paths(), "agent_type": [None, 1, "king", "", b"main_agent"],
            "agent_id": identifiers(optional=True), "version": ints(0),
            "metadata": metadata(), "force": bools()}),
        Boundary("MatchDatabase()", lambda ctx, db_path=str(workdir / "m2.jsonl"), **c:
                 MatchDatabase(db_path, **c), {"db_path": paths(), "fsync": bools()}),
        Boundary("MatchDatabase.record", record, {
            "agent_id": identifiers(), "opponent_id": identifiers(),
            "match_id": identifiers(optional=True), "outcome": floats(0, 1),
            "territory_control": floats(0, 1, optional=True),
            "blue_casualties": floats(0, None, optional=True),
            "metadata": metadata()}),
        Boundary("MatchDatabase queries", lambda ctx, agent_id="a", opponent_id="b": (
                     db.win_rate(agent_id, opponent_id), db.results_for(agent_id),
                     db.win_rates_for(agent_id)),
                 {"agent_id": identifiers(), "opponent_id": identifiers()}),
        Boundary("compute_nash_distribution",
                 lambda ctx, **c: compute_nash_distribution(**{
                     "payoff": [[0.5, 0.7], [0.3, 0.5]], "n_iterations": 100,
                     "use_lp": False, **c}),
                 {"payoff": payoffs(), "n_iterations": ints(1, MAX_REGRET_ITERATIONS),
                  "epsilon": floats(0, None, low_open=True), "use_lp": bools()}),
        Boundary("solve_nash", lambda ctx, **c: solve_nash(**{
                     "payoff": [[0.5, 0.7], [0.3, 0.5]], "n_iterations": 100,
                     "use_lp": False, "log": False, **c}),
                 {"n_iterations": ints(1, MAX_REGRET_ITERATIONS), "log": bools(),
                  "use_lp": bools()}),
        Boundary("MAPPOPolicy.act", lambda ctx, obs=_STILL[(2, 4)], **c:
                 policy.act(obs, **c),
                 {"obs": arrays((2, 4), any_batch=True),
                  "agent_idx": ints(0, 1) + [np.array([0.5, 1.0])], "deterministic": bools()}),
        *_echelon_and_scenario_boundaries(workdir),
    ]


# --- the echelon, scenario and WFM-1 boundaries ------------------------------------------

_SCENARIO = {"id": "fuzz", "field": {"width_m": 400.0, "height_m": 400.0, "rows": 4,
                                     "cols": 4, "max_steps": 3},
             "terrain": "flat",
             "units": {"blue": [{"x": 100.0, "y": 200.0}], "red": [{"x": 300.0, "y": 200.0}]}}
"""A valid scenario of one unit a side on a small flat field, three steps long."""


def _scenario_changes() -> dict[str, list[Any]]:
    """Invalid values for each key of :data:`_SCENARIO` (nested keys misspelt included)."""
    units = _SCENARIO["units"]
    return {
        "field": ["x", 1, [], {"width": 5000}, {"width_m": "400"}, {"rows": 10**9},
                  {"max_steps": 0}, {"hieght_m": 400}, {"width_m": NAN}, {1: 2}],
        "units": ["x", [], {"blue": []}, {**units, "green": []}, {"blue": units["blue"]},
                  {**units, "blue": [{"x": 100.0, "y": 200.0, "stregth": 0.5}]},
                  {**units, "blue": [{"x": 1e9, "y": 200.0}]},
                  {**units, "blue": [{"x": 100.0, "y": 200.0, "type": "dragoon"}]},
                  {**units, "blue": "x"}, {**units, "blue": [1]}],
        "victory": ["x", [], {"break": 0.5}, {"break_fraction": 2.0},
                    {"break_fraction": "half"}],
        "terrain": ["x", 1, {}, [{"kind": "volcano"}],
                    [{"kind": "hill", "x": 1, "y": 1, "radius_m": 5, "height": 1, "hieght": 2}],
                    [{"kind": "road", "points": [[0, 0]]}], [{"kind": "road", "points": "x"}],
                    [1]],
        "model": ["x", {"hill_speed": 0.5}, {"dt": "1"}, {"dt": [1]}, {"dt": -1.0}],
        "id": [None, "", "a b", 1, ["a"], "a\nb"],
        "visibility_radius": [None, "x", -1.0, NAN, INF, True],
    }


def _nested(depth: int, kind: str) -> str:
    """A JSON or YAML text of lists nested ``depth`` deep."""
    return ("[" * depth + "]" * depth) if kind == "json" else "- " * depth + "x"


def _bad_files(workdir: Path) -> dict[str, list[Any]]:
    """Hostile scenario, replay and config files (written once), by kind."""
    folder = workdir / "bad_files"
    folder.mkdir(exist_ok=True)
    files: dict[str, Path] = {
        "deep.json": None, "deep.yaml": None, "deepish.json": None, "bomb.yaml": None,
        "list.yaml": None, "text.json": None, "binary.yaml": None, "empty.yaml": None}
    texts = {
        "deep.json": _nested(100_000, "json"), "deep.yaml": _nested(5_000, "yaml"),
        "deepish.json": _nested(150, "json"),
        "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi",
                                                                  strict=True))
        + "field: *i\n",
        "list.yaml": "- 1\n- 2\n", "text.json": "not json", "empty.yaml": ""}
    for name in files:
        files[name] = folder / name
        if name == "binary.yaml":
            files[name].write_bytes(b"\xff\xfe\x00id: x")
        else:
            files[name].write_text(texts[name])
    scenario_files = [str(p) for p in files.values()] + [str(folder)]
    valid = folder / "valid.json"
    valid.write_text(json.dumps(_SCENARIO))
    replay = folder / "deep_meta.npz"
    np.savez(replay, metadata=np.array(_nested(10_000, "json")))
    return {"valid scenario": [str(valid)], "scenario": scenario_files,
            "replay": [str(replay), str(files["text.json"]), str(folder)],
            "config": [str(files[n]) for n in ("deep.yaml", "bomb.yaml", "list.yaml",
                                               "binary.yaml")]}


def _echelon_and_scenario_boundaries(workdir: Path) -> list[Boundary]:
    from envs import MultiBattalionEnv
    from envs.battlefield import Battlefield
    from envs.battles.entity_tokens import ENTITY_TOKEN_DIM, MAX_TOKENS, entity_tokens
    from envs.battles.multi_battalion_batch import MultiBattalionBatch
    from envs.echelons.brigade_env import BrigadeEnv
    from envs.echelons.division_env import DivisionEnv
    from envs.echelons.smdp_wrapper import SMDPWrapper
    from envs.rendering.replay import load_replay
    from envs.scenario import load_scenario_file, scenario_from_dict
    from envs.scenario_battle import play_scenario
    from envs.sim.config import BattleConfig
    from envs.sim.constants import MAP_SIZE_RANGE, MAX_STEPS_LIMIT
    from models.wfm1 import WFM1Policy
    from training.league.config import LeagueSettings
    from training.league.distributed_runner import load_settings
    from training.train import train
    from training.train_mappo import train_mappo
    from training.train_wfm1 import train_wfm1
    from training.wfm1.config import WFM1TrainConfig

    small = dict(max_steps=5, randomize_terrain=False)
    huge = (10**12, 10**15)
    lo, hi = MAP_SIZE_RANGE
    files = _bad_files(workdir)
    missing = str(workdir / "missing_checkpoint.pt")

    brigade = BrigadeEnv(**small)
    brigade.reset(seed=0)
    division = DivisionEnv(**small)
    division.reset(seed=0)
    smdp = SMDPWrapper(MultiBattalionEnv(1, 1, **small))
    smdp.reset(seed=0)
    battles = MultiBattalionBatch(1, 1, 1, config=BattleConfig(max_steps=5), terrain=None,
                                  randomize_terrain=False, visibility_radius=600.0,
                                  reward_weights=None)
    battles.reset(np.array([0]), [0], np.array([0], np.int64))
    scenario = scenario_from_dict(_SCENARIO)
    wfm = WFM1Policy(d_model=16, n_heads=2, n_echelon_layers=1, n_cross_layers=1)
    tokens = np.zeros((1, 2, ENTITY_TOKEN_DIM), np.float32)

    def echelon_step(env, action):
        result = env.step(action)
        if result[2] or result[3]:
            env.reset(seed=0)
        return result

    def smdp_step(ctx, actions=_UNSET):
        if not smdp.agents:
            smdp.reset(seed=0)
        return smdp.step({"blue_0": 0} if actions is _UNSET else actions)

    def play(ctx, **changes):
        kwargs = dict(scenario=scenario, n_battles=1, seed=0)
        kwargs.update(changes)
        return play_scenario(**kwargs)

    def scenario_dict(ctx, **changes):
        return scenario_from_dict({**_SCENARIO, **changes})

    def trainer(function, ctx, **changes):
        # The valid baseline stops at the missing checkpoint to resume, after every
        # setting has been checked: an invalid setting must be refused before that.
        return function(resume=missing, **changes)

    seed_values = seeds()
    wfm_fields = {"seed": seed_values, "n_envs": ints(1, too_big=huge),
                  "n_steps": ints(1, optional=True, too_big=(10**15,)),
                  "scenarios_per_rollout": ints(1), "d_model": ints(1, 8192),
                  "n_heads": ints(1, 256), "learning_rate": floats(0, 1, low_open=True,
                                                                    high_open=True),
                  "device": [None, 1, "gpu", "", b"cpu"]}
    echelon_fields = {"n_red": ints(1, too_big=(10**9,)), "temporal_ratio": ints(1),
                      "red_random": bools(), "red_level": ints(1, 5),
                      "randomize_terrain": [v for v in bools() if v is not None],
                      "max_steps": ints(1, MAX_STEPS_LIMIT, optional=True),
                      "map_width": floats(lo, hi, optional=True),
                      "visibility_radius": floats(0, None, low_open=True, optional=True),
                      "render_mode": [v for v in _junk(True)] + ["human"]}
    steps_of = {"action": [None, "x", b"x", 1.5, _Opaque(), {}, [[0, 0]], np.zeros(3, int),
                           np.array([0, 99]), np.array([-1, 0]), np.array([0.5, 1.0]),
                           np.array(["a", "b"]), np.array([True, False]),
                           np.zeros((2,), object), [None, None]]}
    return [
        Boundary("BrigadeEnv()", lambda ctx, **c: BrigadeEnv(**{**small, **c}),
                 {**echelon_fields, "n_blue": ints(1, too_big=(10**9,)),
                  "options": [v for v in _junk(True)] + [[1], ["advance"]],
                  "battalion_policy": ["x", 1, _Opaque()],
                  "blue_policy": ["x", 1, _Opaque()]},
                 names={"n_blue": ("n_blue", "n_battles")}),
        Boundary("BrigadeEnv.reset", lambda ctx, **c: brigade.reset(**c),
                 {"seed": seeds(), "options": options()}),
        Boundary("BrigadeEnv.step", lambda ctx, action=_HOLD_TWO:
                 echelon_step(brigade, action), steps_of),
        Boundary("DivisionEnv()", lambda ctx, **c: DivisionEnv(**{**small, **c}),
                 {**{k: v for k, v in echelon_fields.items() if k != "n_red"},
                  "n_red_brigades": ints(1, optional=True, too_big=(10**9,)),
                  "n_brigades": ints(1, too_big=(10**9,)),
                  "n_blue_per_brigade": ints(1, too_big=(10**9,)),
                  "brigade_policy": ["x", 1, _Opaque()]},
                 names={"n_brigades": ("n_brigades", "n_blue"),
                        "n_blue_per_brigade": ("n_blue_per_brigade", "n_blue"),
                        "n_red_brigades": ("n_red",)}),
        Boundary("DivisionEnv.reset", lambda ctx, **c: division.reset(**c),
                 {"seed": seeds(), "options": options()}),
        Boundary("DivisionEnv.step", lambda ctx, action=_HOLD_TWO:
                 echelon_step(division, action), steps_of),
        Boundary("SMDPWrapper()", lambda ctx, env=_UNSET, options=None: SMDPWrapper(
                     MultiBattalionEnv(1, 1, **small) if env is _UNSET else env, options),
                 {"env": [None, "x", 1, _Opaque(), brigade],
                  "options": ["x", 1, [], [1], [None], _Opaque(), {"a": 1}]}),
        Boundary("SMDPWrapper.reset", lambda ctx, **c: smdp.reset(**c),
                 {"seed": seeds(), "options": options(("options",))}),
        Boundary("SMDPWrapper.step", smdp_step,
                 {"actions": ["x", None, 1, [], ["blue_0"], b"x", _Opaque(), np.zeros(3),
                              {"blue_0": "x"}, {"blue_0": 99}, {"blue_0": -1},
                              {"blue_0": 1.5}, {"blue_0": True}, {"blue_0": None},
                              {"blue_0": np.zeros(3)}, {"nobody": 0}, {1: 0}]}),
        Boundary("entity_tokens", lambda ctx, **c: entity_tokens(
                     **{"battles": battles, "side": 0, **c}),
                 {"battles": [None, "x", 1, _Opaque(), np.zeros(3), brigade, {}],
                  "side": ints(0, 1),
                  "max_tokens": ints(1, MAX_TOKENS, optional=True, too_big=(10**9,))}),
        Boundary("play_scenario", play, {
            "scenario": [None, "x", 1, _Opaque(), _SCENARIO, {}],
            "n_battles": ints(1, too_big=huge), "seed": [None, *seeds(1)],
            "blue": ["x", 1, _Opaque(), [], {}], "red": ["x", 1, _Opaque()],
            "config": ["x", 1, _Opaque(), {"max_steps": 3}], "record": bools()}),
        Boundary("scenario_from_dict", scenario_dict, _scenario_changes(),
                 names={k: (k, "scenario") for k in _SCENARIO}),
        Boundary("load_scenario_file", lambda ctx, path=files["valid scenario"][0]:
                 load_scenario_file(path),
                 {"path": files["scenario"]}, names={"path": ("bad_files",)}),
        Boundary("load_replay", lambda ctx, path=missing: load_replay(path),
                 {"path": files["replay"]}, names={"path": ("bad_files", "replay")},
                 baseline_error=FileNotFoundError),
        Boundary("load_settings (Ray config file)", lambda ctx, path=None: load_settings(path),
                 {"path": files["config"] + [str(workdir)]},
                 names={"path": ("bad_files", "config file")}),
        Boundary("WFM1Policy.act", lambda ctx, tokens=tokens, **c: wfm.act(tokens, **c), {
            "tokens": arrays((1, 2, ENTITY_TOKEN_DIM), any_batch=True) + [
                np.zeros((1, 100_000, ENTITY_TOKEN_DIM), np.float32),
                np.zeros((1, MAX_TOKENS + 1, ENTITY_TOKEN_DIM), np.float32)],
            "pad_mask": [np.zeros((1, 3), bool), np.zeros((1, 2)), "x", [[1, 2]]],
            "echelon": [-1, 4, 1.5, "x", None, np.array([0, 1])],
            "deterministic": bools(),
            "own_mask": [np.zeros((1, 3), bool), np.zeros((1, 2)), "x"]},
            names={"tokens": ("tokens",)}),
        Boundary("WFM1TrainConfig()", lambda ctx, **c: WFM1TrainConfig(**c), wfm_fields,
                 names={"n_envs": ("n_envs",), "n_heads": ("n_heads", "d_model"),
                        "d_model": ("d_model",)}),
        Boundary("Battlefield()", lambda ctx, **c: Battlefield(**c), {
            "map_width": floats(lo, hi), "map_height": floats(lo, hi),
            "max_steps": ints(1, MAX_STEPS_LIMIT),
            "hill_speed_factor": floats(0, 1, low_open=True),
            "terrain": ["x", 1, _Opaque(), np.zeros((2, 2))],
            "randomize_terrain": bools(),
            "visibility_radius": floats(0, None, low_open=True)},
            names={"terrain": ("terrain",)}),
        Boundary("LeagueSettings()", lambda ctx, **c: LeagueSettings(**c), {
            "agent_id": identifiers(), "snapshot_freq": ints(1),
            "n_eval_episodes": ints(1, too_big=huge),
            "pfsp_temperature": floats(0, None, low_open=True),
            "unknown_win_rate": floats(0, 1), "pool_max_size": ints(1),
            "pool_manifest": paths(), "match_db_path": paths()}),
        Boundary("train(**overrides)", lambda ctx, **c: trainer(train, ctx, **c), {
            "seed": [s for s in seed_values] + [2**32], "n_envs": ints(1, too_big=huge),
            "total_timesteps": ints(1), "bogus_setting": [1, None],
            "config": ["x", 1, _Opaque(), {}]},
            baseline_error=FileNotFoundError),
        Boundary("train_mappo(**overrides)", lambda ctx, **c: trainer(train_mappo, ctx, **c), {
            "seed": seed_values, "n_envs": ints(1, too_big=huge), "n_blue": ints(1, 6),
            "bogus_setting": [1, None], "config": ["x", 1, _Opaque(), {}]},
            baseline_error=FileNotFoundError),
        Boundary("train_wfm1(**overrides)", lambda ctx, **c: trainer(train_wfm1, ctx, **c), {
            "seed": seed_values, "n_envs": ints(1, too_big=huge), "d_model": ints(1, 8192),
            "bogus_setting": [1, None], "config": ["x", 1, _Opaque(), {}]},
            names={"n_envs": ("n_envs",)}, baseline_error=FileNotFoundError),
    ]


# --- running and judging -------------------------------------------------------------------

@dataclass
class BoundaryCounts:
    """What the calls of one boundary did."""

    calls: int = 0
    named: int = 0
    unclear: int = 0
    silent: int = 0
    raw: int = 0
    hang: int = 0


@dataclass
class Failure:
    """A call that did not raise a named error."""

    boundary: str
    argument: str
    value: str
    kind: str
    detail: str


@dataclass
class FuzzReport:
    """Counts per boundary and every failure of one :func:`run_fuzz` run."""

    n_calls: int
    seed: int
    seconds: float
    counts: dict[str, BoundaryCounts]
    failures: list[Failure]

    def total(self, kind: str) -> int:
        return sum(getattr(c, kind) for c in self.counts.values())

    def markdown(self) -> str:
        """A Markdown table: one row per boundary and a total."""
        lines = ["| boundary | calls | named | unclear | raw | silent | hang |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        rows = [(name, c) for name, c in self.counts.items()]
        total = BoundaryCounts(*(sum(getattr(c, k) for _, c in rows) for k in (
            "calls", "named", "unclear", "silent", "raw", "hang")))
        for name, c in [*rows, ("**total**", total)]:
            lines.append(f"| {name} | {c.calls} | {c.named} | {c.unclear} | {c.raw} "
                         f"| {c.silent} | {c.hang} |")
        return "\n".join(lines)


class _Hang(BaseException):
    """Raised by the timer in a call that ran past :data:`HANG_S`."""


def _raised_in_our_code(error: BaseException) -> tuple[bool, str]:
    """Whether the innermost frame of ``error``'s traceback is a file of ours, and where."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False, "?"
    last = frames[-1]
    path = Path(last.filename).resolve()
    return any(path.is_relative_to(folder) for folder in OUR_CODE), f"{path}:{last.lineno}"


def _judge(boundary: Boundary, argument: str, error: BaseException | None,
           seconds: float) -> tuple[str, str]:
    if isinstance(error, _Hang) or seconds > HANG_S:
        return "hang", f"ran {seconds:.1f} s"
    if error is None:
        return "silent", "returned"
    if boundary.baseline_error is not None and type(error) is boundary.baseline_error:
        return "silent", f"got past the checks: {type(error).__name__}: {error}"
    ours, where = _raised_in_our_code(error)
    if not isinstance(error, ALLOWED):
        return "raw", f"{type(error).__name__} at {where}: {error}"
    if not ours:
        return "raw", f"{type(error).__name__} raised at {where}: {error}"
    message = str(error)
    names = boundary.names.get(argument, (argument,))
    if not any(name in message for name in names):
        return "unclear", f"{type(error).__name__} does not name {argument}: {error}"
    return "named", ""


def _call(boundary: Boundary, argument: str, value: Any) -> tuple[BaseException | None, float]:
    use_timer = threading.current_thread() is threading.main_thread() and hasattr(
        signal, "SIGALRM")

    def on_alarm(signum, frame):
        raise _Hang

    previous = signal.signal(signal.SIGALRM, on_alarm) if use_timer else None
    start = time.perf_counter()
    try:
        if use_timer:
            signal.setitimer(signal.ITIMER_REAL, HANG_S)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            boundary.call(None, **{argument: value})
        error = None
    except _Hang as hang:
        error = hang
    except Exception as exc:  # noqa: BLE001 - judging every error is the point
        error = exc
    finally:
        if use_timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return error, time.perf_counter() - start


def judge_call(boundary: Boundary, argument: str, value: Any) -> tuple[str, str]:
    """Call ``boundary`` with ``argument=value``; return the verdict (one of :data:`KINDS`)
    and what happened."""
    error, seconds = _call(boundary, argument, value)
    return _judge(boundary, argument, error, seconds)


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray(shape={value.shape}, dtype={value.dtype})"
    try:
        return reprlib.repr(value)
    except Exception:  # noqa: BLE001 - e.g. an int too long to print
        return f"<{type(value).__name__}>"


def run_fuzz(n_calls: int, seed: int = 0, workdir: str | Path | None = None) -> FuzzReport:
    """Make ``n_calls`` invalid calls, spread evenly over the boundaries, and judge each.

    Args:
        n_calls: number of calls.
        seed: seed of the choice of arguments and values (the run is reproducible).
        workdir: folder for the league files (a temporary one by default).
    """
    if workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_fuzz(n_calls, seed, tmp)
    start = time.perf_counter()
    boundaries = _boundaries(Path(workdir))
    rng = random.Random(seed)
    counts = {b.name: BoundaryCounts() for b in boundaries}
    failures: list[Failure] = []
    for i in range(n_calls):
        boundary = boundaries[i % len(boundaries)]
        argument = rng.choice(sorted(boundary.arguments))
        value = rng.choice(boundary.arguments[argument])
        if isinstance(value, Gen):
            value = value.draw(rng)
        kind, detail = judge_call(boundary, argument, value)
        count = counts[boundary.name]
        count.calls += 1
        setattr(count, kind, getattr(count, kind) + 1)
        if kind != "named":
            failures.append(Failure(boundary.name, argument, _describe(value), kind, detail))
    return FuzzReport(n_calls, seed, time.perf_counter() - start, counts, failures)


def baseline_errors(workdir: str | Path) -> dict[str, str | None]:
    """Each boundary's valid baseline call: None if it worked (or failed only as its
    ``baseline_error`` says), else the error. A fuzz is only meaningful if all are None."""
    results: dict[str, str | None] = {}
    for boundary in _boundaries(Path(workdir)):
        try:
            boundary.call(None)
            results[boundary.name] = None
        except Exception as exc:  # noqa: BLE001
            ok = boundary.baseline_error is not None and type(exc) is boundary.baseline_error
            results[boundary.name] = None if ok else f"{type(exc).__name__}: {exc}"
    return results
