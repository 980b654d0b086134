"""Every battalion an agent that picks drills: a semi-Markov PettingZoo env.

:class:`SMDPWrapper` (``smdp_multi_battalion_v0``) wraps a
:class:`~envs.multi_battalion_env.MultiBattalionEnv`. Each agent's action is the index
of an option (:mod:`envs.options`); one wrapper step runs the primitive env until every
agent's drill is over (or the agent leaves the battle), summing each agent's rewards.
An agent whose drill may not start (its initiation set fails) holds its position
instead (``defend_position`` when the options have it, else it stands still), and its
info says so. Observations, ``state()`` and the agents are the wrapped env's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from envs.multi_battalion_env import MultiBattalionEnv
from envs.options import Option, make_default_options
from envs.sim.constants import ACTION_DIM
from envs.sim.validation import short_repr

FALLBACK_OPTION = "defend_position"
"""The drill run instead of one whose initiation set fails (it may always start)."""


class SMDPWrapper(ParallelEnv):
    """Drills as actions over a :class:`~envs.multi_battalion_env.MultiBattalionEnv`.

    Args:
        env: the primitive env.
        options: the drills (default :func:`envs.options.make_default_options`).

    Raises:
        ValueError: for an env of another kind or an empty options list.
    """

    metadata = {"render_modes": [], "name": "smdp_multi_battalion_v0"}

    def __init__(self, env: MultiBattalionEnv, options: list[Option] | None = None) -> None:
        if not isinstance(env, MultiBattalionEnv):
            raise ValueError(f"env={short_repr(env)} is invalid: expected a MultiBattalionEnv")
        self.env = env
        if options is not None and not isinstance(options, (list, tuple)):
            raise TypeError(f"options={short_repr(options)} is invalid: expected None or a "
                            "non-empty list of envs.options.Option")
        self.options = list(options) if options is not None else make_default_options()
        if not self.options or not all(isinstance(o, Option) for o in self.options):
            raise ValueError(f"options={short_repr(options)} is invalid: expected a non-empty "
                             "list of envs.options.Option")
        names = [o.name for o in self.options]
        self._fallback = names.index(FALLBACK_OPTION) if FALLBACK_OPTION in names else None
        # Standing still in place of a refused drill lasts as long as the longest drill.
        self._hold_steps = max(o.max_steps for o in self.options)
        self.possible_agents = list(env.possible_agents)
        # One space object per agent, so that seeding an agent's space sticks.
        self._action_spaces = {a: spaces.Discrete(len(self.options))
                               for a in self.possible_agents}
        self.agents: list[str] = []
        self._observations: dict[str, np.ndarray] = {}
        self._macro_steps = self._primitive_steps = 0

    def observation_space(self, agent: str) -> spaces.Space:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        self.env._check_name(agent)
        return self._action_spaces[agent]

    def state(self) -> np.ndarray:
        return self.env.state()

    @property
    def temporal_abstraction_ratio(self) -> float:
        """Macro steps per primitive step so far (0 before the first step)."""
        return self._macro_steps / self._primitive_steps if self._primitive_steps else 0.0

    def reset(self, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self.env.agents)
        self._observations = observations
        self._macro_steps = self._primitive_steps = 0
        return observations, infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """One macro step; an agent missing from ``actions`` runs option 0.

        Raises:
            TypeError: for ``actions`` that is not a dict.
            ValueError: for an unknown agent or an option index out of range.
        """
        if not isinstance(actions, Mapping):
            raise TypeError(f"actions={short_repr(actions)} is invalid: expected a dict of "
                            "agent name -> option index")
        if not self.agents:
            return {}, {}, {}, {}, {}
        chosen: dict[str, int] = {}
        for agent in self.agents:
            index = actions.get(agent, 0)
            if isinstance(index, (bool, np.bool_)) or not isinstance(
                    index, (int, np.integer)) or not 0 <= int(index) < len(self.options):
                raise ValueError(f"actions[{agent!r}]={short_repr(index)} is invalid: expected "
                                 f"an option index in [0, {len(self.options)})")
            chosen[agent] = int(index)
        for agent in actions:
            if agent not in self.agents:
                raise ValueError(f"actions[{short_repr(agent)}] is invalid: no such agent in "
                                 f"the battle; agents: {self.agents}")
        refused = set()
        for agent, index in chosen.items():
            if not self.options[index].can_initiate(self._observations[agent]):
                refused.add(agent)
                chosen[agent] = -1 if self._fallback is None else self._fallback
        running = dict.fromkeys(chosen, True)
        steps = dict.fromkeys(chosen, 0)
        rewards = dict.fromkeys(chosen, 0.0)
        terminations = dict.fromkeys(chosen, False)
        truncations = dict.fromkeys(chosen, False)
        infos: dict[str, dict] = {agent: {} for agent in chosen}
        observations = dict(self._observations)
        while any(running.values()) and self.env.agents:
            orders = {}
            for agent in self.env.agents:
                index = chosen.get(agent, -1)
                if running.get(agent) and index >= 0:
                    orders[agent] = self.options[index].get_action(observations[agent])
                else:
                    orders[agent] = np.zeros(ACTION_DIM, np.float32)
            obs, step_rewards, terms, truncs, step_infos = self.env.step(orders)
            self._primitive_steps += 1
            for agent in obs:
                observations[agent] = obs[agent]
                rewards[agent] += step_rewards[agent]
                infos[agent] = step_infos[agent]
                if not running[agent]:
                    continue
                steps[agent] += 1
                terminations[agent] = terms[agent]
                truncations[agent] = truncs[agent]
                index = chosen[agent]
                done = steps[agent] >= self._hold_steps if index < 0 else \
                    self.options[index].should_terminate(obs[agent], steps[agent])
                if terms[agent] or truncs[agent] or done:
                    running[agent] = False
        self._macro_steps += 1
        gone = set(chosen) - set(self.env.agents)
        for agent in gone:  # left without a termination or truncation signal: truncated
            if not (terminations[agent] or truncations[agent]):
                truncations[agent] = True
        self.agents = list(self.env.agents)
        self._observations = observations
        for agent in chosen:
            index = chosen[agent]
            infos[agent] = {**infos[agent], "temporal_abstraction": {
                "macro_steps": self._macro_steps, "primitive_steps": self._primitive_steps,
                "ratio": self.temporal_abstraction_ratio,
                "option_name": self.options[index].name if index >= 0 else "hold",
                "option_steps": steps[agent], "refused": agent in refused}}
        return ({a: observations[a] for a in chosen}, rewards, terminations, truncations,
                infos)

    def close(self) -> None:
        self.env.close()


__all__ = ["FALLBACK_OPTION", "SMDPWrapper"]
