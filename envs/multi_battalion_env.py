"""MultiBattalionEnv: an N-vs-M battle as a PettingZoo ``ParallelEnv``.

Every battalion of both sides is an agent (``blue_0``, ``blue_1``, ..., ``red_0``,
...). The env is a batch of one battle of
:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`, the batched form that
MAPPO training steps many of at once; for the same seeds both produce the same
trajectories.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from envs.battalion_env import SingleBattle, make_action_space
from envs.battlefield import Battlefield
from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.battles.multi_observation import (
    ARMS_OBS_HIGH,
    ARMS_OBS_LOW,
    ARMS_STATE_HIGH,
    ARMS_STATE_LOW,
    CRITIC_STATE_DIM,
    MAX_TEAM_SIZE,
    OBS_DIM,
    OBS_HIGH,
    OBS_LOW,
    OBSERVATION_FEATURES,
    STATE_DIM,
    STATE_HIGH,
    STATE_LOW,
)
from envs.metrics.coordination import SUPPORT_RADIUS, compute_all
from envs.reward import RewardWeights
from envs.sim import engine
from envs.sim.constants import (
    ACTION_DIM,
    ACTION_HIGH,
    ACTION_LOW,
    FORMATION_NAMES,
    KEEP_FORMATION,
    SEED_BOUND,
)
from envs.sim.terrain import TerrainMap
from envs.sim.validation import (
    check_action_array,
    check_choice,
    check_int,
    check_options,
    check_scripted_level,
    check_seed,
    short_repr,
)

__all__ = ["MultiBattalionEnv", "OBS_DIM", "STATE_DIM", "CRITIC_STATE_DIM",
           "OBSERVATION_FEATURES", "RESET_OPTIONS", "agent_names", "formation_action_space",
           "team_spaces"]

RESET_OPTIONS = ("options",)
"""Keys ``reset(options=...)`` accepts. The env defines no options of its own;
``"options"`` is the placeholder PettingZoo's ``parallel_api_test`` passes to check
that ``reset`` takes the argument, and is ignored. Any other key raises
``ValueError`` (a typo in an option must not pass silently)."""


def agent_names(n_blue: int, n_red: int) -> list[str]:
    """``["blue_0", ..., "red_0", ...]``: the agents of a battle, in unit order."""
    return [f"blue_{i}" for i in range(n_blue)] + [f"red_{i}" for i in range(n_red)]


def team_spaces(arms: bool = False) -> tuple[spaces.Box, spaces.Box, spaces.Box]:
    """Observation, action and global-state spaces, the same for every agent and team size;
    with ``arms`` (battles with an order of battle) the observation and the state carry
    the arms blocks and the action the formation order (:func:`formation_action_space`)."""
    if not arms:
        return (spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32), make_action_space(),
                spaces.Box(STATE_LOW, STATE_HIGH, dtype=np.float32))
    return (spaces.Box(ARMS_OBS_LOW, ARMS_OBS_HIGH, dtype=np.float32), formation_action_space(),
            spaces.Box(ARMS_STATE_LOW, ARMS_STATE_HIGH, dtype=np.float32))


def formation_action_space() -> spaces.Box:
    """A battalion's action in battles with an order of battle: ``[move, rotate, fire,
    formation]``, the first three as in the duel, the last a formation code rounded to
    the nearest whole number: :data:`~envs.sim.constants.KEEP_FORMATION` (-1) keeps the
    formation, 0 to 3 order :data:`~envs.sim.constants.FORMATION_NAMES` (an arm that
    cannot take the formation keeps its own)."""
    return spaces.Box(np.array([*ACTION_LOW, KEEP_FORMATION], np.float32),
                      np.array([*ACTION_HIGH, len(FORMATION_NAMES) - 1], np.float32),
                      dtype=np.float32)


class TeamAgents:
    """The agents of an N-vs-M battle by name, and their spaces: what the team envs share
    (:class:`MultiBattalionEnv`, :class:`~envs.remote.batch_env.MultiBattalionBatchEnv`).

    Attributes:
        possible_agents: every agent of a battle, Blue's first (:func:`agent_names`).
    """

    possible_agents: list[str]
    _observation_space: spaces.Box
    _action_space: spaces.Box

    def _name_agents(self, n_blue: int, n_red: int) -> None:
        """Name the agents of a battle of ``n_blue`` against ``n_red`` battalions."""
        self.possible_agents = agent_names(n_blue, n_red)
        self._index = {name: i for i, name in enumerate(self.possible_agents)}

    def observation_space(self, agent: str) -> spaces.Box:
        """One battle's observation space of ``agent``."""
        self._check_name(agent)
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Box:
        """One battle's action space of ``agent``."""
        self._check_name(agent)
        return self._action_space

    def _check_name(self, agent: Any) -> None:
        if not isinstance(agent, str) or agent not in self._index:
            raise ValueError(f"agent={short_repr(agent)} is invalid: expected one of "
                             f"{self.possible_agents}")


class MultiBattalionEnv(SingleBattle, TeamAgents, ParallelEnv):
    """An N-vs-M battle of battalions; every battalion is an agent.

    Args:
        n_blue: Blue's battalions, 1 to ``MAX_TEAM_SIZE`` (6).
        n_red: Red's battalions, 1 to ``MAX_TEAM_SIZE`` (6).
        map_width: battlefield width in metres, in
            :data:`~envs.sim.constants.MAP_SIZE_RANGE` (10 m to 100 km).
        map_height: battlefield height in metres, in the same range.
        max_steps: steps before the battle is called a draw, 1 to
            :data:`~envs.sim.constants.MAX_STEPS_LIMIT`.
        terrain: a fixed :class:`~envs.sim.terrain.TerrainMap`; when given,
            ``randomize_terrain`` is ignored.
        randomize_terrain: ``True`` to draw new procedural hills and woods at every
            reset, ``False`` for open, level ground.
        hill_speed_factor: speed on the highest ground over speed on the lowest, in (0, 1].
        visibility_radius: how far a battalion sees, in metres (> 0); enemies
            beyond it, or behind a crest, are known only from their last report
            (see :mod:`envs.battles.multi_observation`).
            These seven are the :class:`~envs.battlefield.Battlefield`'s settings (the
            defaults are its defaults); None leaves a setting to ``battlefield``.
        render_mode: None or ``"rgb_array"``.
        reward_weights: the team reward's shaping; None means the defaults.
        order_of_battle: each battalion's arm, starting formation and quality, Blue's
            first: an :class:`envs.scenario.OrderOfBattle`, a scenario, or a mapping such
            as ``{"blue": ["infantry", "cavalry"], "red": ["infantry", "artillery"]}``
            with ``n_blue`` and ``n_red`` units (``docs/scenarios.md``); None fields
            infantry of quality 1 in line. With one, every observation and state carries
            the arms blocks (:data:`~envs.battles.multi_observation.ARMS_OBS_DIM` and
            ``ARMS_STATE_DIM`` numbers) and every action a fourth number, the formation
            order (:func:`formation_action_space`).
        battlefield: the map, clock, ground and sight as one value; a setting given
            beside it must agree with it.

    Observations are :data:`OBS_DIM` float32 numbers per agent
    (:data:`~envs.battles.multi_observation.OBSERVATION_FEATURES`; with an order of
    battle ``ARMS_OBS_DIM``, the arms block after them), actions are
    ``[move, rotate, fire]`` as in the duel (and the formation order with an order of
    battle). Each side's observations and orders are
    in its own frame: Red's are mirrored across the north-south centre line, so
    both sides see themselves deploying in the west (one policy can play either
    side). :meth:`state` is the global state
    from Blue's side; :meth:`critic_state` is what a centralised critic of one
    agent reads. Agents leave ``agents`` when they rout or are destroyed, and all
    leave when the battle ends. The step's dicts cover the agents that acted in
    it; each ``info`` holds ``damage_dealt``, ``damage_taken``, ``routed``,
    ``destroyed`` and ``step_count``.

    Actions: a dict from agent to ``[move, rotate, fire]`` (``[move, rotate, fire,
    formation]`` with an order of battle); agents missing from it hold still, hold fire
    and keep their formation. Anything but a dict, an unknown agent, an agent that has
    left, or an action that is not three (four) finite real numbers raises
    ``ValueError``; finite values outside the box are clipped.
    """

    metadata = {"render_modes": ["rgb_array"], "name": "multi_battalion_v0", "render_fps": 10}

    def __init__(
        self,
        n_blue: int = 2,
        n_red: int = 2,
        map_width: float | None = None,
        map_height: float | None = None,
        max_steps: int | None = None,
        terrain: TerrainMap | None = None,
        randomize_terrain: bool | None = None,
        hill_speed_factor: float | None = None,
        visibility_radius: float | None = None,
        render_mode: str | None = None,
        reward_weights: RewardWeights | None = None,
        order_of_battle: Any = None,
        *,
        battlefield: Battlefield | None = None,
    ) -> None:
        check_choice("render_mode", render_mode, (None, *self.metadata["render_modes"]))
        self.n_blue = check_int("n_blue", n_blue, minimum=1, maximum=MAX_TEAM_SIZE)
        self.n_red = check_int("n_red", n_red, minimum=1, maximum=MAX_TEAM_SIZE)
        self.battlefield = Battlefield.from_kwargs(
            battlefield, map_width=map_width, map_height=map_height, max_steps=max_steps,
            terrain=terrain, randomize_terrain=randomize_terrain,
            hill_speed_factor=hill_speed_factor, visibility_radius=visibility_radius)
        self.config = self.battlefield.battle_config()
        self.render_mode = render_mode
        self._battle = MultiBattalionBatch(
            1, self.n_blue, self.n_red, battlefield=self.battlefield, config=self.config,
            reward_weights=reward_weights, order_of_battle=order_of_battle)
        self.visibility_radius = self._battle.visibility_radius
        self._name_agents(self.n_blue, self.n_red)
        self.agents: list[str] = []
        self.arms = self._battle.order_of_battle is not None
        self._observation_space, self._action_space, self.state_space = team_spaces(self.arms)
        self._width = self._action_space.shape[0]
        self._rng = np.random.default_rng()
        self._actions = np.zeros((1, len(self.possible_agents), ACTION_DIM), np.float32)
        self._formations = np.full((1, len(self.possible_agents)), KEEP_FORMATION, np.int8)

    # --- PettingZoo API -----------------------------------------------------------

    def reset(self, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Start a new battle; the same ``seed`` always gives the same battle, and
        later resets without a seed continue that seed's sequence of battles.

        Args:
            seed: None, or an integer in [0, 2**63).
            options: None or a dict with only the keys of :data:`RESET_OPTIONS`.

        Raises:
            ValueError: for any other ``seed``, or an unknown ``options`` key.
        """
        seed = check_seed("seed", seed)
        check_options("options", options, RESET_OPTIONS)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        fresh = self._rng.integers(0, SEED_BOUND, size=1, dtype=np.int64)
        self._battle.reset(np.array([0]), [seed], fresh)
        self._battle.last_events = None
        self.agents = list(self.possible_agents)
        observation = self._battle.observation[0]
        return ({a: observation[i].copy() for i, a in enumerate(self.agents)},
                {a: {} for a in self.agents})

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not isinstance(actions, Mapping):
            raise ValueError(f"actions={short_repr(actions)} is invalid: expected a dict from "
                             "agent name to [move, rotate, fire]")
        if not self.agents:
            if self._battle.geometry is None:
                raise RuntimeError("step() called before reset(): call reset() first")
            return {}, {}, {}, {}, {}
        orders = self._actions
        orders[:] = 0
        self._formations[:] = KEEP_FORMATION
        for agent, action in actions.items():
            if not isinstance(agent, str) or agent not in self._index:
                raise ValueError(f"actions[{short_repr(agent)}] is invalid: no such agent; "
                                 f"expected keys among {self.possible_agents}")
            if agent not in self.agents:
                raise ValueError(f"actions[{agent!r}] is invalid: {agent} has left the battle; "
                                 f"agents still in it: {self.agents}")
            order = check_action_array(f"actions[{agent!r}]", action, (self._width,))
            orders[0, self._index[agent]] = order[:ACTION_DIM]
            if self.arms:
                self._formations[0, self._index[agent]] = np.rint(np.clip(
                    order[ACTION_DIM], self._action_space.low[-1], self._action_space.high[-1]))
        result = self._battle.step(orders, self._formations if self.arms else None)
        observation = result.observation[0]
        step_count = int(self._battle.state.step[0])
        state = self._battle.state
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for agent in self.agents:
            i = self._index[agent]
            observations[agent] = observation[i].copy()
            rewards[agent] = float(result.reward[0, i])
            terminations[agent] = bool(result.terminated[0, i])
            truncations[agent] = bool(result.truncated[0, i])
            infos[agent] = {"damage_dealt": float(result.damage_dealt[0, i]),
                            "damage_taken": float(result.damage_taken[0, i]),
                            "routed": bool(state.routed[0, i]),
                            "destroyed": bool(state.destroyed[0, i]),
                            "step_count": step_count}
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        """The global state from Blue's side, ignoring fog of war (``STATE_DIM`` floats,
        ``ARMS_STATE_DIM`` with an order of battle)."""
        return self._battle.global_state[BLUE, 0].copy()

    # --- beyond PettingZoo ----------------------------------------------------------

    def critic_state(self, agent: str) -> np.ndarray:
        """What a centralised critic of ``agent`` reads: its observation, then its side's
        global state (``CRITIC_STATE_DIM`` floats, ``ARMS_CRITIC_STATE_DIM`` with an order
        of battle)."""
        self._check_name(agent)
        return self._battle.critic_state[0, self._index[agent]].copy()

    def team_state(self, team: str) -> np.ndarray:
        """The global state from ``team``'s side ("blue" or "red")."""
        sides = {"blue": BLUE, "red": RED}
        if not isinstance(team, str) or team not in sides:
            raise ValueError(f"team={team!r} is invalid: expected 'blue' or 'red'")
        return self._battle.global_state[sides[team], 0].copy()

    def scripted_actions(self, level: int,
                         agents: list[str] | None = None) -> dict[str, np.ndarray]:
        """Orders a scripted commander of ``level`` (1 to
        :data:`~envs.sim.constants.NUM_CURRICULUM_LEVELS`) would give ``agents`` (Red's
        agents still in the battle by default), as :meth:`step` takes them: with an order
        of battle, the formation order is the fourth number (levels 2 to 5 use their
        arms, :mod:`envs.sim.scripted`)."""
        level = check_scripted_level("level", level)
        if agents is None:
            agents = [a for a in self.agents if a.startswith("red_")]
        if not isinstance(agents, (list, tuple)):
            raise ValueError(f"agents={short_repr(agents)} is invalid: expected None or a "
                             "list of agent names")
        for agent in agents:
            self._check_name(agent)
        units = np.array([self._index[a] for a in agents], dtype=np.intp)
        formations = np.empty((1, len(units)), np.int8)
        orders = self._battle.scripted_actions(units, level, formations)[0]
        if self.arms:
            orders = np.concatenate((orders, formations[0, :, None].astype(np.float32)), 1)
        return {a: orders[k].copy() for k, a in enumerate(agents)}

    def get_coordination_metrics(self, support_radius: float = SUPPORT_RADIUS
                                 ) -> dict[str, float]:
        """How well Blue's battalions fight together at the last step (right after a
        reset: as deployed, nobody firing): ``coordination/<name>`` -> value for each
        metric of :mod:`envs.metrics.coordination` (``docs/metrics_reference.md``), over
        the units still in the fight; 0.0 where a metric is undefined (e.g. fire
        concentration when fewer than two Blue battalions fired).

        Raises:
            ValueError: for a ``support_radius`` that is not a positive number.
        """
        battle = self._battle
        battle._require_reset()
        events = battle.last_events
        if events is None:
            shape = battle.state.x.shape
            events = engine.StepEvents(battle.geometry, np.zeros(shape, np.float32),
                                       np.full(shape, -1, np.int32),
                                       np.zeros(shape, np.float32), np.zeros(shape, np.float32))
        values = compute_all(battle.state, events, battle.config, BLUE,
                             support_radius=support_radius)
        return {name: 0.0 if np.isnan(value[0]) else float(value[0])
                for name, value in values.items()}
