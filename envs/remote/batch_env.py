"""Batches of N-vs-M battles behind a small API: the body of a Ray rollout worker.

:class:`MultiBattalionBatchEnv` holds ``n_battles`` battles of
:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch` and offers the methods of
the reference API's ``RemoteMultiBattalionEnv`` (REFERENCE §I.7) on the whole batch:
:meth:`~MultiBattalionBatchEnv.reset` and :meth:`~MultiBattalionBatchEnv.step` take and
give per-agent arrays with one row per battle, and
:meth:`~MultiBattalionBatchEnv.run_episodes` plays many whole battles as one batch, so
that one call to a remote worker carries thousands of env-steps
(:meth:`~MultiBattalionBatchEnv.run_episode` plays one). ``RemoteMultiBattalionEnv``
(:mod:`envs.remote_multi_battalion_env`), ``make_remote_envs`` and the rollout runner's
workers are this class as a Ray actor (:mod:`envs.remote.battles`); in-process it runs
the same way. Every battle's random draws are keyed by its seed and step, never by a
generator's position, so a battle plays the same whichever batch, worker or machine
plays it.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from envs.battlefield import Battlefield
from envs.battles.multi_battalion_batch import BLUE, MultiBattalionBatch, check_team_batch_size
from envs.battles.multi_observation import MAX_TEAM_SIZE
from envs.multi_battalion_env import TeamAgents, team_spaces
from envs.reward import RewardWeights
from envs.sim import random as rnd
from envs.sim.constants import (
    ACTION_DIM,
    ACTION_HIGH,
    ACTION_LOW,
    HILL_SPEED_FACTOR,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
    SEED_BOUND,
    VISIBILITY_RADIUS,
)
from envs.sim.terrain import TerrainMap
from envs.sim.validation import (
    check_action_array,
    check_int,
    check_options,
    check_scripted_level,
    check_seed,
    short_repr,
)

EPISODE_KEYS = ("steps", "total_reward", "agent_rewards", "blue_won", "observations")
"""The keys of an episode's dict (REFERENCE §I.7)."""

Commander = Callable[[MultiBattalionBatch, np.ndarray], np.ndarray]
"""A batched commander: ``commander(battles, units) -> (B, len(units), 3)`` orders for
``units`` of every battle, each in its side's own frame (e.g.
:class:`training.mappo.battles.PolicyCommander`)."""

_ACTION_LOW = np.array(ACTION_LOW, np.float32)
_ACTION_SPAN = np.array(ACTION_HIGH, np.float32) - _ACTION_LOW


def random_orders(battles: Any) -> np.ndarray:
    """(B, U, 3) orders drawn uniformly from the action box for every battalion of a
    batch of battles (a MultiBattalionBatch, a duel BattalionBatch: anything holding a
    ``BattleState`` as ``state``).

    The draws are keyed by each battle's episode and step (stream
    ``STREAM_RANDOM_ACTIONS``), so a battle's random play is the same in any batch.
    """
    state = battles.state
    draws = rnd.uniform(state.key, rnd.STREAM_RANDOM_ACTIONS, state.step,
                        state.n_units * ACTION_DIM)
    draws = draws.reshape(state.batch_size, state.n_units, ACTION_DIM)
    return _ACTION_LOW + draws * _ACTION_SPAN


class MultiBattalionBatchEnv(TeamAgents):
    """``n_battles`` N-vs-M battles with the reference API of ``RemoteMultiBattalionEnv``.

    Args:
        n_battles: battles in the batch of :meth:`reset` and :meth:`step` (>= 1).
            :meth:`run_episodes` and :meth:`run_episode` play their own batches.
        n_blue, n_red, map_width, map_height, max_steps, terrain, randomize_terrain,
        hill_speed_factor, visibility_radius, reward_weights: as for
            :class:`~envs.multi_battalion_env.MultiBattalionEnv`.
        render_mode: None only (a batch is not drawn; use ``MultiBattalionEnv``).

    Agents are named as in ``MultiBattalionEnv`` (``blue_0``, ..., ``red_0``, ...);
    each side's observations and orders are in its own frame.

    Raises:
        ValueError: for a bad argument, naming it.
    """

    def __init__(self, n_battles: int = 1, n_blue: int = 2, n_red: int = 2,
                 map_width: float = MAP_WIDTH, map_height: float = MAP_HEIGHT,
                 max_steps: int = MAX_STEPS, terrain: TerrainMap | None = None,
                 randomize_terrain: bool = True, hill_speed_factor: float = HILL_SPEED_FACTOR,
                 visibility_radius: float = VISIBILITY_RADIUS, render_mode: str | None = None,
                 reward_weights: RewardWeights | None = None) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode={short_repr(render_mode)} is invalid: expected None "
                             "(batches are not drawn; render a MultiBattalionEnv instead)")
        self.n_blue = check_int("n_blue", n_blue, minimum=1, maximum=MAX_TEAM_SIZE)
        self.n_red = check_int("n_red", n_red, minimum=1, maximum=MAX_TEAM_SIZE)
        self.battlefield = Battlefield(
            map_width=map_width, map_height=map_height, max_steps=max_steps,
            hill_speed_factor=hill_speed_factor, terrain=terrain,
            randomize_terrain=randomize_terrain, visibility_radius=visibility_radius)
        self.config = self.battlefield.battle_config()
        self._battle_kwargs = dict(battlefield=self.battlefield, config=self.config,
                                   reward_weights=reward_weights)
        self._battles = self._new_battles(check_int("n_battles", n_battles, minimum=1))
        self.n_battles = self._battles.n_battles
        self._name_agents(self.n_blue, self.n_red)
        self._blue_units = np.arange(self.n_blue)
        self._red_units = np.arange(self.n_blue, self.n_blue + self.n_red)
        self._observation_space, self._action_space, self.state_space = team_spaces()
        self._rng = np.random.default_rng()
        self._over = np.ones(self.n_battles, bool)
        self._last_observation: np.ndarray | None = None

    def _new_battles(self, n_battles: int) -> MultiBattalionBatch:
        return MultiBattalionBatch(n_battles, self.n_blue, self.n_red, **self._battle_kwargs)

    # --- the reference API, batched -------------------------------------------------

    def get_agents(self) -> list[str]:
        """Agents still in the fight in at least one battle that is not over."""
        if self._last_observation is None:
            return []
        present = (self._battles.in_fight & ~self._over[:, None]).any(axis=0)
        return [name for name, here in zip(self.possible_agents, present, strict=True) if here]

    def get_possible_agents(self) -> list[str]:
        """Every agent of a battle, Blue's first."""
        return list(self.possible_agents)

    def get_n_blue(self) -> int:
        return self.n_blue

    def get_n_red(self) -> int:
        return self.n_red

    def reset(self, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict]:
        """Start a new battle in every slot; battle ``i`` is seeded ``seed + i``.

        Without a seed, each battle plays the next battle of its seed's sequence
        (a fresh seed from this env's generator the first time).

        Args:
            seed: None, or an integer with ``seed + n_battles - 1 < 2**63``.
            options: None or a dict with only the key ``"options"`` (ignored), as
                ``MultiBattalionEnv`` accepts.

        Returns:
            ``(observations, infos)``: ``{agent: (B, OBS_DIM)}`` and ``{agent: {}}``.

        Raises:
            ValueError: for a bad ``seed`` or an unknown ``options`` key.
        """
        seed = check_seed("seed", seed, count=self.n_battles)
        check_options("options", options, ("options",))
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            seeds: list[int | None] = [seed + i for i in range(self.n_battles)]
        else:
            seeds = [None] * self.n_battles
        fresh = self._rng.integers(0, SEED_BOUND, size=self.n_battles, dtype=np.int64)
        self._battles.reset(np.arange(self.n_battles), seeds, fresh)
        self._over = np.zeros(self.n_battles, bool)
        self._last_observation = self._battles.observation.copy()
        observation = self._last_observation
        return ({name: observation[:, i].copy() for i, name in enumerate(self.possible_agents)},
                {name: {} for name in self.possible_agents})

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Step every battle once; PettingZoo's 5-tuple with (B, ...) arrays per agent.

        Args:
            actions: ``{agent: (B, 3) orders}``, one row per battle; agents missing
                from it hold still and hold fire, and orders of battalions out of the
                fight are ignored.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, each keyed
            by every possible agent: ``(B, OBS_DIM)`` float32, ``(B,)`` float32,
            ``(B,)`` bool, ``(B,)`` bool, and ``{"acted", "damage_dealt",
            "damage_taken", "routed", "destroyed", "step_count"}`` of (B,) arrays.
            Battles are not restarted: one that is over keeps its last observation,
            with zero rewards and no terminations, until the next :meth:`reset`.

        Raises:
            ValueError: for anything but a dict, an unknown agent, or orders that are
                not (B, 3) finite numbers.
            RuntimeError: before the first :meth:`reset`.
        """
        if not isinstance(actions, Mapping):
            raise ValueError(f"actions={short_repr(actions)} is invalid: expected a dict from "
                             f"agent name to ({self.n_battles}, 3) orders")
        if self._last_observation is None:
            raise RuntimeError("step() called before reset(): call reset() first")
        orders = np.zeros((self.n_battles, len(self.possible_agents), ACTION_DIM), np.float32)
        for agent, action in actions.items():
            if not isinstance(agent, str) or agent not in self._index:
                raise ValueError(f"actions[{short_repr(agent)}] is invalid: no such agent; "
                                 f"expected keys among {self.possible_agents}")
            orders[:, self._index[agent]] = check_action_array(
                f"actions[{agent!r}]", action, (self.n_battles, ACTION_DIM))
        live = ~self._over
        result = self._battles.step(orders)
        observation = np.where(live[:, None, None], result.observation, self._last_observation)
        reward = np.where(live[:, None], result.reward, np.float32(0))
        terminated = result.terminated & live[:, None]
        truncated = result.truncated & live[:, None]
        acted = result.acted & live[:, None]
        self._over |= result.battle_over
        self._last_observation = observation
        state = self._battles.state
        step_count = state.step.astype(np.int64)
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for i, agent in enumerate(self.possible_agents):
            observations[agent] = observation[:, i].copy()
            rewards[agent] = reward[:, i].copy()
            terminations[agent] = terminated[:, i].copy()
            truncations[agent] = truncated[:, i].copy()
            infos[agent] = {"acted": acted[:, i].copy(),
                            "damage_dealt": result.damage_dealt[:, i] * live,
                            "damage_taken": result.damage_taken[:, i] * live,
                            "routed": state.routed[:, i].copy(),
                            "destroyed": state.destroyed[:, i].copy(),
                            "step_count": step_count.copy()}
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """(B, STATE_DIM) each battle's global state from Blue's side (no fog of war)."""
        return self._battles.global_state[BLUE].copy()

    def close(self) -> None:
        """Nothing to release (the reference API has it)."""

    # --- whole episodes -------------------------------------------------------------------

    def run_episode(self, policy_fn: Callable[[dict[str, np.ndarray]], Mapping[str, Any]]
                    | None = None, seed: int | None = None,
                    max_steps: int | None = None) -> dict[str, Any]:
        """Play one battle to its end (REFERENCE §I.7).

        Args:
            policy_fn: ``policy_fn(observations) -> actions``: PettingZoo dicts of the
                agents in the fight (both sides); agents missing from the answer hold
                still. None: every battalion gets random orders, drawn as in
                :meth:`run_episodes`.
            seed: the battle's seed; None: a fresh one from this env's generator.
            max_steps: stop after this many steps even if the battle goes on (>= 1);
                None: play until the battle ends (at ``max_steps`` of the env at most).

        Returns:
            ``{"steps", "total_reward", "agent_rewards", "blue_won", "observations"}``:
            steps played; the sum of every agent's rewards (both sides); each agent's
            summed reward; whether the battle ended with at least one Blue battalion in
            the fight and no Red one; the observation dict each step's orders were
            given on (``observations[t]`` for step ``t``).

        Raises:
            ValueError: for a bad seed, ``max_steps`` or answer of ``policy_fn``.
            TypeError: if ``policy_fn`` is not callable.
        """
        seed = check_seed("seed", seed)
        if seed is None:
            seed = int(self._rng.integers(0, SEED_BOUND))
        limit = self._step_limit(max_steps)
        if policy_fn is None:
            return self._play([seed], random_orders, limit, True)[0]
        if not callable(policy_fn):
            raise TypeError(f"policy_fn={short_repr(policy_fn)} is invalid: expected None or "
                            "a function from an observation dict to an action dict")
        return self._play([seed], self._dict_orders(policy_fn), limit, True)[0]

    def run_episodes(self, seeds: Sequence[int], blue: Commander | int | None = None,
                     red: Commander | int | None = None, max_steps: int | None = None,
                     record_observations: bool = False) -> list[dict[str, Any]]:
        """Play one battle per seed to its end, all of them as one batch.

        Args:
            seeds: the battles' seeds (integers in [0, 2**63), at least one).
            blue, red: each side's commander: None for random orders (uniform over the
                action box, drawn per battle and step from the battle's key), an int for
                the scripted commander of that level (1..5), or a batched commander
                ``commander(battles, units) -> (B, len(units), 3)`` such as
                :class:`training.mappo.battles.PolicyCommander`.
            max_steps: stop after this many steps (>= 1); None: play to the end.
            record_observations: fill each episode's ``"observations"`` as
                :meth:`run_episode` does; otherwise it is an empty list.

        Returns:
            One dict per seed, in order, with the keys of :meth:`run_episode`. Battle
            ``i`` gives the same dict in any batch: alone, among others, on any worker.

        Raises:
            ValueError: for bad seeds, a bad level or ``max_steps``, or a commander's
                orders of the wrong shape.
            TypeError: for a commander of another kind (a MAPPO policy must be wrapped
                in ``PolicyCommander``).
        """
        seeds = _check_seeds("seeds", seeds)
        check_team_batch_size("len(seeds)", len(seeds), len(self.possible_agents))
        commanders = ((self._commander("blue", blue), self._blue_units),
                      (self._commander("red", red), self._red_units))
        limit = self._step_limit(max_steps)
        if not isinstance(record_observations, (bool, np.bool_)):
            raise TypeError(f"record_observations={short_repr(record_observations)} is "
                            "invalid: expected true or false")

        def orders(battles: MultiBattalionBatch) -> np.ndarray:
            out = np.empty((battles.n_battles, battles.n_units, ACTION_DIM), np.float32)
            drawn = None
            for commander, units in commanders:
                if commander is None:
                    drawn = random_orders(battles) if drawn is None else drawn
                    out[:, units] = drawn[:, units]
                elif isinstance(commander, int):
                    out[:, units] = battles.scripted_actions(units, commander)
                else:
                    given = np.asarray(commander(battles, units))
                    expected = (battles.n_battles, len(units), ACTION_DIM)
                    if given.shape != expected:
                        raise ValueError(f"the commander {short_repr(commander)} gave orders "
                                         f"of shape {given.shape}: expected {expected}")
                    out[:, units] = given
            return out

        return self._play(seeds, orders, limit, bool(record_observations))

    def _commander(self, side: str, commander: Any) -> Commander | int | None:
        """``commander`` checked: None, a scripted level, or a batched commander."""
        if commander is None:
            return None
        if isinstance(commander, numbers.Integral) and not isinstance(commander, bool):
            return check_scripted_level(side, commander)
        if callable(getattr(commander, "act", None)):
            raise TypeError(f"{side}={short_repr(commander)} is invalid: a policy with act() "
                            "must be wrapped in training.mappo.battles.PolicyCommander")
        if not callable(commander):
            raise TypeError(f"{side}={short_repr(commander)} is invalid: expected None "
                            "(random orders), a scripted level 1..5, or a batched commander "
                            "(battles, units) -> orders")
        return commander

    def _step_limit(self, max_steps: Any) -> int:
        """The step cap of an episode: ``max_steps`` checked, else the env's own."""
        if max_steps is None:
            return self.config.max_steps
        return min(check_int("max_steps", max_steps, minimum=1), self.config.max_steps)

    def _dict_orders(self, policy_fn: Callable) -> Callable[[MultiBattalionBatch], np.ndarray]:
        """Orders of a one-battle batch from a PettingZoo-style ``policy_fn``."""
        names = self.possible_agents

        def orders(battles: MultiBattalionBatch) -> np.ndarray:
            present = np.flatnonzero(battles.in_fight[0])
            observation = battles.observation[0]
            actions = policy_fn({names[u]: observation[u].copy() for u in present})
            if not isinstance(actions, Mapping):
                raise ValueError(f"policy_fn returned {short_repr(actions)}: expected a dict "
                                 "from agent name to [move, rotate, fire]")
            out = np.zeros((1, battles.n_units, ACTION_DIM), np.float32)
            for agent, action in actions.items():
                if not isinstance(agent, str) or agent not in self._index:
                    raise ValueError(f"policy_fn's actions[{short_repr(agent)}] is invalid: no "
                                     f"such agent; expected keys among {names}")
                out[0, self._index[agent]] = check_action_array(
                    f"policy_fn's actions[{agent!r}]", action, (ACTION_DIM,))
            return out

        return orders

    def _play(self, seeds: list[int], orders: Callable[[MultiBattalionBatch], np.ndarray],
              limit: int, record: bool) -> list[dict[str, Any]]:
        """Play battle ``i`` from ``seeds[i]`` for at most ``limit`` steps, all at once.

        Battles that are over stay in the batch (their later steps are not counted)
        until the last one ends.
        """
        n = len(seeds)
        battles = self._new_battles(n)
        battles.reset(np.arange(n), list(seeds), np.zeros(n, np.int64))
        names = self.possible_agents
        running = np.ones(n, bool)
        steps = np.zeros(n, np.int64)
        totals = np.zeros((n, len(names)), np.float64)
        blue_won = np.zeros(n, bool)
        observations: list[list[dict[str, np.ndarray]]] = [[] for _ in range(n)]
        for _ in range(limit):
            if record:
                observation, in_fight = battles.observation, battles.in_fight
                for b in np.flatnonzero(running):
                    observations[b].append({names[u]: observation[b, u].copy()
                                            for u in np.flatnonzero(in_fight[b])})
            result = battles.step(orders(battles))
            totals += np.where(running[:, None], result.reward, np.float32(0))
            steps += running
            ended = running & result.battle_over
            blue_won[ended] = result.winner[ended] == BLUE
            running &= ~result.battle_over
            if not running.any():
                break
        return [{"steps": int(steps[b]),
                 "total_reward": float(totals[b].sum()),
                 "agent_rewards": {name: float(totals[b, u]) for u, name in enumerate(names)},
                 "blue_won": bool(blue_won[b]),
                 "observations": observations[b]} for b in range(n)]



def _check_seeds(name: str, seeds: Any) -> list[int]:
    """A non-empty sequence of seeds as a list of ints (``ValueError`` naming the bad one)."""
    if isinstance(seeds, (str, bytes, Mapping)) or not isinstance(seeds, (Sequence, np.ndarray)):
        raise ValueError(f"{name}={short_repr(seeds)} is invalid: expected a non-empty list "
                         "of integer seeds in [0, 2**63)")
    if isinstance(seeds, np.ndarray) and seeds.ndim != 1:
        raise ValueError(f"{name} has shape {seeds.shape}: expected a 1-D list of seeds")
    if len(seeds) == 0:
        raise ValueError(f"{name}=[] is invalid: expected at least one seed")
    checked = []
    for i, seed in enumerate(seeds):
        if seed is None:
            raise ValueError(f"{name}[{i}]=None is invalid: expected an integer in [0, 2**63)")
        checked.append(check_seed(f"{name}[{i}]", seed))
    return checked


__all__ = ["EPISODE_KEYS", "Commander", "MultiBattalionBatchEnv", "random_orders"]
