"""A brigadier's battle: one decision gives every Blue battalion a drill (an option).

:class:`BrigadeEnv` (Gymnasium, ``brigade_v0``) wraps an N-vs-M battle
(:class:`~envs.multi_battalion_batch.MultiBattalionBatch`). Each of its steps is a
*macro step*: the action picks one option of :func:`envs.options.make_default_options`
for each Blue battalion; the battalions then run their drills, step by step, until
every drill is over (or the battle is), while Red is commanded by scripted battalion
commanders of ``red_level`` or by a frozen ``battalion_policy``.

Where the reference design's brigade env went wrong, this one does not: an option
whose initiation set does not hold (an advance with shaken men) is not run: the
battalion holds its position instead (``defend_position``, which may always start),
and the info says so; and the flanks and the withdrawal turn and withdraw the way
their names say (:mod:`envs.options`).

Observation (``3 + 7 * n_blue + 1`` numbers, :func:`brigade_observation`): the share
of the strength in each of three north-south strips of the field that is Blue's (0.5
where neither side stands), each Blue battalion's strength and morale, each Blue
battalion's nearest Red battalion in the fight (distance over the map's diagonal,
bearing cosine and sine, its strength and morale; ``[1, 0, 0, 0, 0]`` when there is
none), and the time fraction. Reward: the mean over Blue's battalions of their team
rewards summed while their drills ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.options import Option, make_default_options
from envs.sim.config import BattleConfig
from envs.sim.constants import (
    ACTION_DIM,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
    NUM_CURRICULUM_LEVELS,
    SEED_BOUND,
    VISIBILITY_RADIUS,
)
from envs.sim.validation import check_bool, check_int, check_scripted_level, check_seed

F32 = np.float32
N_SECTORS = 3
"""North-south strips of the field whose control the brigadier sees."""
THREAT_FEATURES = 5
NO_THREAT = np.array([1.0, 0.0, 0.0, 0.0, 0.0], F32)
"""A Blue battalion's threat block when it is out of the fight or no Red one is in it."""
FALLBACK_OPTION = "defend_position"
"""The drill a battalion runs when its ordered one may not start (it may always); with
no drill of that name among the options, the battalion stands still instead."""
HOLD = -1


def brigade_obs_dim(n_blue: int) -> int:
    """Length of the brigade observation for ``n_blue`` Blue battalions."""
    return N_SECTORS + 7 * n_blue + 1


def sector_shares(x: np.ndarray, alive: np.ndarray, mine: np.ndarray, n_sectors: int,
                  width: float) -> np.ndarray:
    """Per north-south strip of the field (``n_sectors`` of them, west first), the share
    of the strength standing in it (``alive``, (U,)) that is ``mine``; 0.5 where nobody
    stands."""
    strip = np.minimum((x / width * n_sectors).astype(int), n_sectors - 1)
    own = np.bincount(strip[mine], alive[mine], minlength=n_sectors)
    total = np.bincount(strip, alive, minlength=n_sectors)
    return np.where(total > 0, own / np.where(total > 0, total, 1), 0.5).astype(F32)


def brigade_observation(x: np.ndarray, y: np.ndarray, strength: np.ndarray,
                        morale: np.ndarray, active: np.ndarray, team: np.ndarray,
                        side: int, step_fraction: float, width: float,
                        height: float) -> np.ndarray:
    """The brigade observation of ``side`` (module docstring) from one battle's (U,)
    unit arrays; the strips and bearings are in the real map's frame."""
    mine, theirs = team == side, team != side
    sectors = sector_shares(x, strength * active, mine, N_SECTORS, width)
    units = np.stack([strength[mine] * active[mine], morale[mine] * active[mine]], axis=1)
    threats = np.tile(NO_THREAT, (int(mine.sum()), 1))
    enemies = np.flatnonzero(theirs & active)
    diagonal = float(np.hypot(width, height))
    for row, i in enumerate(np.flatnonzero(mine)):
        if not active[i] or enemies.size == 0:
            continue
        dx, dy = x[enemies] - x[i], y[enemies] - y[i]
        dist = np.hypot(dx, dy)
        j = int(np.argmin(dist))
        d = float(dist[j])
        threats[row] = (min(d / diagonal, 1.0), dx[j] / d if d > 0 else 1.0,
                        dy[j] / d if d > 0 else 0.0, strength[enemies[j]],
                        morale[enemies[j]])
    return np.concatenate([sectors, units.reshape(-1), threats.reshape(-1),
                           [step_fraction]]).astype(F32)


class BrigadeEnv(gym.Env):
    """Command a brigade of ``n_blue`` battalions by drills (module docstring).

    Args:
        n_blue, n_red: battalions a side.
        map_width, map_height, max_steps: the field and the battle's length in
            primitive steps.
        options: the drills (default :func:`envs.options.make_default_options` capped at
            ``temporal_ratio`` steps).
        temporal_ratio: the default drills' cap: primitive steps a macro step lasts at
            most.
        battalion_policy: a frozen policy commanding Red's battalions: anything with
            ``predict(observations (N, OBS_DIM), deterministic) -> (actions (N, 3), _)``
            (an SB3 model, a frozen MAPPO policy wrapped so); None uses scripted
            commanders of ``red_level``.
        red_random: Red gives random orders (ignored when ``battalion_policy`` is given).
        randomize_terrain: procedural ground at every reset, else open level ground.
        visibility_radius: how far a battalion sees, in metres.
        render_mode: None (no rendering).
        red_level: the scripted Red commanders' level (1 to 5).

    Raises:
        ValueError: for a setting out of range (the message names it).
    """

    metadata = {"render_modes": [], "name": "brigade_v0"}

    def __init__(self, n_blue: int = 2, n_red: int = 2, map_width: float = MAP_WIDTH,
                 map_height: float = MAP_HEIGHT, max_steps: int = MAX_STEPS,
                 options: list[Option] | None = None, temporal_ratio: int = 10,
                 battalion_policy: Any = None, red_random: bool = False,
                 randomize_terrain: bool = True, visibility_radius: float = VISIBILITY_RADIUS,
                 render_mode: str | None = None,
                 red_level: int = NUM_CURRICULUM_LEVELS) -> None:
        super().__init__()
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r} is invalid: expected None")
        self.temporal_ratio = check_int("temporal_ratio", temporal_ratio, minimum=1)
        self.options = list(options) if options is not None else make_default_options(
            max_steps=self.temporal_ratio)
        if not self.options or not all(isinstance(o, Option) for o in self.options):
            raise ValueError(f"options={options!r} is invalid: expected a non-empty list of "
                             "envs.options.Option")
        self.red_random = check_bool("red_random", red_random)
        self.red_level = check_scripted_level("red_level", red_level)
        self.battalion_policy = battalion_policy
        config = BattleConfig(map_width=map_width, map_height=map_height, max_steps=max_steps)
        self.config = config
        self._battle = MultiBattalionBatch(
            1, n_blue, n_red, config=config, terrain=None,
            randomize_terrain=check_bool("randomize_terrain", randomize_terrain),
            visibility_radius=visibility_radius, reward_weights=None)
        self.n_blue, self.n_red = self._battle.n_blue, self._battle.n_red
        self._blue = np.flatnonzero(self._battle.team == BLUE)
        self._red = np.flatnonzero(self._battle.team == RED)
        names = [o.name for o in self.options]
        self._fallback = names.index(FALLBACK_OPTION) if FALLBACK_OPTION in names else HOLD
        self.action_space = spaces.MultiDiscrete([len(self.options)] * self.n_blue)
        self.observation_space = spaces.Box(-1.0, 1.0, (brigade_obs_dim(self.n_blue),), F32)
        self._rng = np.random.default_rng()
        self._macro_steps = 0
        self._over = True
        self.red_commander: Callable[[np.ndarray], np.ndarray] | None = None
        """If set, Red's battalions' orders: called each primitive step with every unit's
        observation (U, OBS_DIM), returning (n_red, 3) (the division env sets it)."""

    # --- episodes -----------------------------------------------------------------

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        seed = check_seed("seed", seed)
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        fresh = self._rng.integers(0, SEED_BOUND, size=1, dtype=np.int64)
        self._battle.reset(np.array([0]), [seed], fresh)
        self._macro_steps = 0
        self._over = False
        return self._observe(), {}

    def _observe(self) -> np.ndarray:
        state = self._battle.state
        return brigade_observation(
            state.x[0], state.y[0], state.strength[0], state.morale[0], state.active[0],
            state.team, BLUE, float(state.step[0]) / self.config.max_steps,
            self.config.map_width, self.config.map_height)

    def _red_orders(self, observation: np.ndarray) -> np.ndarray:
        if self.red_commander is not None:
            return self.red_commander(observation)
        if self.battalion_policy is not None:
            actions = np.asarray(self.battalion_policy.predict(
                observation[self._red], deterministic=False)[0], F32)
            return np.clip(actions.reshape(len(self._red), ACTION_DIM), -1, 1)
        if self.red_random:
            return self._rng.uniform([-1, -1, 0], [1, 1, 1],
                                     (len(self._red), ACTION_DIM)).astype(F32)
        return self._battle.scripted_actions(self._red, self.red_level)[0]

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One macro step: every Blue battalion runs its drill to its end.

        Raises:
            RuntimeError: before :meth:`reset` or after the battle ended.
            ValueError: for an action that is not one option index per Blue battalion.
        """
        if self._over:
            raise RuntimeError("step() called before reset() or after the battle ended: call "
                               "reset()")
        chosen = np.asarray(action)
        if chosen.shape != (self.n_blue,) or not np.issubdtype(chosen.dtype, np.integer) \
                or chosen.min() < 0 or chosen.max() >= len(self.options):
            raise ValueError(f"action={action!r} is invalid: expected {self.n_blue} option "
                             f"indices in [0, {len(self.options)})")
        battle = self._battle
        observation = battle.observation[0]
        active = battle.state.active[0]
        running = active[self._blue].copy()
        given = chosen.copy()
        refused = []
        for k, unit in enumerate(self._blue):
            if running[k] and not self.options[given[k]].can_initiate(observation[unit]):
                refused.append(f"blue_{k}")
                given[k] = self._fallback
        steps_active = np.zeros(self.n_blue, int)
        rewards = np.zeros(self.n_blue, np.float64)
        primitive = 0
        terminated = truncated = False
        result = None
        while running.any():
            orders = np.zeros((1, battle.n_units, ACTION_DIM), F32)
            for k, unit in enumerate(self._blue):
                if running[k] and given[k] != HOLD:
                    orders[0, unit] = self.options[given[k]].get_action(observation[unit])
            orders[0, self._red] = self._red_orders(observation)
            result = battle.step(orders)
            primitive += 1
            rewards += np.where(running, result.reward[0, self._blue], 0.0)
            steps_active += running
            observation = result.observation[0]
            if result.battle_over[0]:
                terminated = bool(result.winner[0] >= 0) or not result.truncated[0].any()
                truncated = not terminated
                break
            in_fight = battle.state.active[0, self._blue]
            for k, unit in enumerate(self._blue):
                drill = self.options[given[k]] if given[k] != HOLD else None
                if running[k] and (not in_fight[k] or (
                        steps_active[k] >= self.temporal_ratio if drill is None
                        else drill.should_terminate(observation[unit], int(steps_active[k])))):
                    running[k] = False
        self._macro_steps += 1
        info: dict[str, Any] = {
            "macro_steps": self._macro_steps, "primitive_steps": primitive,
            "option_names": {f"blue_{k}": self.options[given[k]].name if given[k] != HOLD
                             else "hold" for k in range(self.n_blue)},
            "option_steps": {f"blue_{k}": int(steps_active[k]) for k in range(self.n_blue)},
            "blue_rewards": {f"blue_{k}": float(rewards[k]) for k in range(self.n_blue)},
            "refused_options": refused,
        }
        if result is None:  # no Blue battalion was left to act: the battle is lost
            terminated = True
        if terminated or truncated:
            self._over = True
            winner = RED if result is None else int(result.winner[0])
            info["winner"] = {BLUE: "blue", RED: "red"}.get(winner, "draw")
        return self._observe(), float(rewards.mean()), terminated, truncated, info


__all__ = ["BrigadeEnv", "FALLBACK_OPTION", "N_SECTORS", "brigade_obs_dim",
           "brigade_observation", "sector_shares"]
