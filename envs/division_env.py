"""A division commander's battle: one operational command per brigade.

:class:`DivisionEnv` (Gymnasium, ``division_v0``) wraps a
:class:`~envs.brigade_env.BrigadeEnv` whose Blue battalions are grouped in brigades of
``n_blue_per_brigade``. Its action gives each Blue brigade one of the
:data:`DIVISION_COMMANDS`, which its brigadier passes on as the matching drill to every
battalion of the brigade (advance, hold, envelop by the left or the right, withdraw,
mass fires); one division step is one brigade macro step. Red's battalions are
commanded as the brigade env's are: by scripted battalion commanders, or by a frozen
``brigade_policy`` (anything with ``predict(observation, deterministic) ->
(option indices, _)`` on Red's brigade observation,
:func:`~envs.brigade_env.brigade_observation` from Red's side), whose drills Red's
battalions run for the whole division step.

Observation (``5 + 8 * n_brigades + 1`` numbers): the share of the strength that is
Blue's in each of :data:`N_THEATRE_SECTORS` north-south strips (0.5 where nobody
stands); per Blue brigade its mean strength and morale and the share of its battalions
still in the fight (over the members in the fight, 0 if none); per Blue brigade the
nearest Red brigade's centroid from its own (distance over the diagonal, bearing cosine
and sine, that brigade's mean strength and morale; ``[1, 0, 0, 0, 0]`` when either has
no battalion in the fight); and the time fraction. Reward and termination are the
brigade env's.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.brigade_env import NO_THREAT, BrigadeEnv, brigade_observation, sector_shares
from envs.multi_battalion_batch import BLUE, RED
from envs.options import MacroAction
from envs.sim.constants import MAP_HEIGHT, MAP_WIDTH, MAX_STEPS, VISIBILITY_RADIUS
from envs.sim.validation import check_int

F32 = np.float32
N_THEATRE_SECTORS = 5
DIVISION_COMMANDS = {
    "advance_theatre": MacroAction.ADVANCE_SECTOR,
    "hold_position": MacroAction.DEFEND_POSITION,
    "envelop_left": MacroAction.FLANK_LEFT,
    "envelop_right": MacroAction.FLANK_RIGHT,
    "strategic_withdrawal": MacroAction.WITHDRAW,
    "mass_fires": MacroAction.CONCENTRATE_FIRE,
}
"""The division's commands, in action-index order, and the drill each becomes."""


def division_obs_dim(n_brigades: int) -> int:
    return N_THEATRE_SECTORS + 8 * n_brigades + 1


class DivisionEnv(gym.Env):
    """Command a division of ``n_brigades`` brigades (module docstring).

    Args:
        n_brigades, n_blue_per_brigade: Blue's brigades and their battalions.
        n_red_brigades, n_red_per_brigade: Red's (default: as Blue's).
        map_width, map_height, max_steps: the field and the battle's length.
        brigade_policy: a frozen policy for Red's brigades, or None for scripted Red.
        red_random: Red's battalions give random orders (no brigade policy).
        randomize_terrain, visibility_radius, render_mode: as the brigade env's.

    Raises:
        ValueError: for a setting out of range (the message names it).
    """

    metadata = {"render_modes": [], "name": "division_v0"}

    def __init__(self, n_brigades: int = 2, n_blue_per_brigade: int = 2,
                 n_red_brigades: int | None = None, n_red_per_brigade: int | None = None,
                 map_width: float = MAP_WIDTH, map_height: float = MAP_HEIGHT,
                 max_steps: int = MAX_STEPS, brigade_policy: Any = None,
                 red_random: bool = False, randomize_terrain: bool = True,
                 visibility_radius: float = VISIBILITY_RADIUS,
                 render_mode: str | None = None) -> None:
        super().__init__()
        self.n_brigades = check_int("n_brigades", n_brigades, minimum=1)
        self.n_per = check_int("n_blue_per_brigade", n_blue_per_brigade, minimum=1)
        self.n_red_brigades = check_int("n_red_brigades", n_red_brigades or n_brigades,
                                        minimum=1)
        self.n_red_per = check_int("n_red_per_brigade", n_red_per_brigade or n_blue_per_brigade,
                                   minimum=1)
        self.brigade_policy = brigade_policy
        self.brigades = BrigadeEnv(
            n_blue=self.n_brigades * self.n_per, n_red=self.n_red_brigades * self.n_red_per,
            map_width=map_width, map_height=map_height, max_steps=max_steps,
            red_random=red_random, randomize_terrain=randomize_terrain,
            visibility_radius=visibility_radius, render_mode=render_mode)
        if brigade_policy is not None:
            self.brigades.red_commander = self._red_drill_orders
        self._red_drills: np.ndarray | None = None
        self.action_space = spaces.MultiDiscrete([len(DIVISION_COMMANDS)] * self.n_brigades)
        self.observation_space = spaces.Box(-1.0, 1.0, (division_obs_dim(self.n_brigades),),
                                            F32)
        self._div_steps = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.brigades.reset(seed=seed, options=options)
        self._div_steps = 0
        return self._observe(), {}

    def _state(self):
        return self.brigades._battle.state

    def _observe(self) -> np.ndarray:
        state = self._state()
        x, y = state.x[0], state.y[0]
        strength, morale, active = state.strength[0], state.morale[0], state.active[0]
        team = state.team
        width, height = self.brigades.config.map_width, self.brigades.config.map_height
        sectors = sector_shares(x, strength * active, team == BLUE, N_THEATRE_SECTORS, width)
        blue = np.flatnonzero(team == BLUE).reshape(self.n_brigades, self.n_per)
        red = np.flatnonzero(team == RED).reshape(self.n_red_brigades, self.n_red_per)
        summary = np.zeros((self.n_brigades, 3), F32)
        threats = np.tile(NO_THREAT, (self.n_brigades, 1))
        red_centres = [(x[m][active[m]].mean(), y[m][active[m]].mean(),
                        strength[m][active[m]].mean(), morale[m][active[m]].mean())
                       for m in red if active[m].any()]
        diagonal = float(np.hypot(width, height))
        for b, members in enumerate(blue):
            here = active[members]
            if not here.any():
                continue
            summary[b] = (strength[members][here].mean(), morale[members][here].mean(),
                          here.mean())
            if not red_centres:
                continue
            cx, cy = x[members][here].mean(), y[members][here].mean()
            d = [np.hypot(rx - cx, ry - cy) for rx, ry, _, _ in red_centres]
            k = int(np.argmin(d))
            rx, ry, rs, rm = red_centres[k]
            dist = float(d[k])
            threats[b] = (min(dist / diagonal, 1.0), (rx - cx) / dist if dist > 0 else 1.0,
                          (ry - cy) / dist if dist > 0 else 0.0, rs, rm)
        fraction = float(state.step[0]) / self.brigades.config.max_steps
        return np.concatenate([sectors, summary.reshape(-1), threats.reshape(-1),
                               [fraction]]).astype(F32)

    def _red_drill_orders(self, observation: np.ndarray) -> np.ndarray:
        """Red's battalions' orders under the frozen brigade policy: its drills, chosen at
        the start of the division step, run by each battalion."""
        env = self.brigades
        red = env._red
        if self._red_drills is None:
            state = self._state()
            red_view = brigade_observation(
                state.x[0], state.y[0], state.strength[0], state.morale[0],
                state.active[0], state.team, RED, float(state.step[0]) / env.config.max_steps,
                env.config.map_width, env.config.map_height)
            chosen = np.asarray(self.brigade_policy.predict(red_view, deterministic=False)[0])
            self._red_drills = np.clip(chosen.reshape(-1)[:len(red)].astype(int), 0,
                                       len(env.options) - 1)
        return np.stack([env.options[k].get_action(observation[unit])
                         for k, unit in zip(self._red_drills, red, strict=True)])

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One division step: each brigade's command as its battalions' drill.

        Raises:
            ValueError: for an action that is not one command index per Blue brigade.
        """
        commands = np.asarray(action)
        if commands.shape != (self.n_brigades,) or not np.issubdtype(commands.dtype, np.integer) \
                or commands.min() < 0 or commands.max() >= len(DIVISION_COMMANDS):
            raise ValueError(f"action={action!r} is invalid: expected {self.n_brigades} command "
                             f"indices in [0, {len(DIVISION_COMMANDS)})")
        drills = np.array(list(DIVISION_COMMANDS.values()))[commands]
        self._red_drills = None
        _, reward, terminated, truncated, info = self.brigades.step(
            np.repeat(drills, self.n_per))
        self._div_steps += 1
        info = {**info, "div_steps": self._div_steps,
                "brigade_action": [list(DIVISION_COMMANDS)[c] for c in commands]}
        return self._observe(), reward, terminated, truncated, info


__all__ = ["DIVISION_COMMANDS", "DivisionEnv", "N_THEATRE_SECTORS", "division_obs_dim"]
