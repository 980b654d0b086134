"""BattalionEnv: one Blue battalion against one Red battalion, as a Gymnasium env.

The env is a batch of one battle over the batched simulator core
(:mod:`envs.sim`); :class:`~envs.vec_env.BattalionVecEnv` steps many of the
same battles at once and produces exactly the same trajectories.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from envs.battlefield import Battlefield
from envs.battles.battalion_batch import INFO_STEP_KEYS, BattalionBatch, RedPolicy, check_red_policy
from envs.battles.observation import OBS_DIM, OBS_HIGH, OBS_LOW, OBSERVATION_FEATURES
from envs.reward import RewardWeights
from envs.sim.config import BattleConfig
from envs.sim.constants import (
    ACTION_DIM,
    ACTION_HIGH,
    ACTION_LOW,
    DESTROYED_THRESHOLD,
    DT,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
    NUM_CURRICULUM_LEVELS,
    SEED_BOUND,
)
from envs.sim.terrain import TerrainMap
from envs.sim.validation import (
    check_action_array,
    check_choice,
    check_options,
    check_scripted_level,
    check_seed,
)

__all__ = [
    "BattalionEnv", "RedPolicy", "MAP_WIDTH", "MAP_HEIGHT", "MAX_STEPS", "DT",
    "NUM_CURRICULUM_LEVELS", "DESTROYED_THRESHOLD", "OBS_DIM", "OBSERVATION_FEATURES",
    "INFO_STEP_KEYS", "make_spaces", "make_action_space", "RESET_OPTIONS",
]

RESET_OPTIONS: tuple[str, ...] = ()
"""Keys ``reset(options=...)`` accepts: none (a typo in an option must not pass silently)."""


def make_action_space() -> spaces.Box:
    """One battalion's action space, in the duel and the team battles alike:
    ``[move, rotate, fire]`` (:data:`~envs.sim.constants.ACTION_NAMES`), move in
    [-1, 1] (negative steps back), rotate in [-1, 1] (positive is counter-clockwise)
    and fire intensity in [0, 1]."""
    return spaces.Box(np.array(ACTION_LOW, np.float32), np.array(ACTION_HIGH, np.float32),
                      dtype=np.float32)


def make_spaces() -> tuple[spaces.Box, spaces.Box]:
    """Observation and action spaces of the 1v1 duel (see :func:`make_action_space`)."""
    return spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32), make_action_space()


class SingleBattle:
    """What the one-battle envs share: each is a batch of one battle (``_battle``, a
    :class:`~envs.battles.battalion_batch.BattalionBatch` or a
    :class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`), drawn with its
    ``config``."""

    _battle: Any
    config: BattleConfig
    render_mode: str | None

    def render(self) -> np.ndarray | None:
        """A picture of the battlefield (``render_mode="rgb_array"``), else None."""
        if self.render_mode != "rgb_array":
            return None
        if self._battle.geometry is None:
            raise RuntimeError("render() called before reset(): call reset() first")
        from envs.rendering.draw import draw_battle

        return draw_battle(self._battle.state, 0, self.config, events=self._battle.last_events)

    def close(self) -> None:
        pass

    @property
    def battle_state(self):
        """The simulator state of this battle (a batch of one)."""
        return self._battle.state

    @property
    def last_events(self):
        """What happened in the last step (fire, damage), or None right after a reset."""
        return self._battle.last_events


class BattalionEnv(SingleBattle, gym.Env):
    """A 1v1 battle: the agent commands Blue; Red is scripted or driven by a policy.

    Args:
        map_width: battlefield width in metres, in
            :data:`~envs.sim.constants.MAP_SIZE_RANGE` (10 m to 100 km).
        map_height: battlefield height in metres, likewise.
        max_steps: steps before the battle is called a draw, 1 to
            :data:`~envs.sim.constants.MAX_STEPS_LIMIT`.
        terrain: a fixed :class:`~envs.sim.terrain.TerrainMap`; when given,
            ``randomize_terrain`` is ignored.
        randomize_terrain: ``True`` to draw new procedural hills and woods at every
            reset, ``False`` for open, level ground.
        hill_speed_factor: speed on the highest ground, as a fraction of speed
            on the lowest, in (0, 1].
            These six are the :class:`~envs.battlefield.Battlefield`'s settings (the
            defaults are its defaults); None leaves a setting to ``battlefield``.
        curriculum_level: scripted Red's level, 1 (passive) to 5 (full combat).
        reward_weights: reward shaping; None means :class:`~envs.reward.RewardWeights()`.
        red_policy: an object with ``predict(obs, deterministic=False) -> (action, state)``
            that commands Red instead of the script; it receives Red's observation.
        render_mode: None or ``"rgb_array"`` (a picture of the battlefield).
        battlefield: the map, clock and ground as one value; a setting given beside it
            must agree with it. Its ``visibility_radius`` must be the default: the duel
            has no fog of war.

    Observations (float32, shape ``(OBS_DIM,)``) are described by
    :data:`~envs.battles.observation.OBSERVATION_FEATURES`. Actions outside the action
    box but finite are clipped; NaN or infinite actions raise ``ValueError``.

    Every step's ``info`` holds ``blue_damage_dealt``, ``red_damage_dealt``
    (strength removed this step), ``blue_routed``, ``red_routed``,
    ``blue_destroyed``, ``red_destroyed``, ``step_count`` and the ``reward/*``
    components with ``reward/total``. The episode terminates
    when either side is routed or destroyed, and is truncated at ``max_steps``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        map_width: float | None = None,
        map_height: float | None = None,
        max_steps: int | None = None,
        terrain: TerrainMap | None = None,
        randomize_terrain: bool | None = None,
        hill_speed_factor: float | None = None,
        curriculum_level: int = NUM_CURRICULUM_LEVELS,
        reward_weights: RewardWeights | None = None,
        red_policy: RedPolicy | None = None,
        render_mode: str | None = None,
        *,
        battlefield: Battlefield | None = None,
    ) -> None:
        super().__init__()
        check_choice("render_mode", render_mode, (None, *self.metadata["render_modes"]))
        check_red_policy(red_policy)
        self.battlefield = Battlefield.from_kwargs(
            battlefield, map_width=map_width, map_height=map_height, max_steps=max_steps,
            terrain=terrain, randomize_terrain=randomize_terrain,
            hill_speed_factor=hill_speed_factor)
        self.config = self.battlefield.battle_config()
        self.map_width, self.map_height = self.config.map_width, self.config.map_height
        self.max_steps = self.config.max_steps
        self.hill_speed_factor = self.config.hill_speed_factor
        self.curriculum_level = check_scripted_level("curriculum_level", curriculum_level)
        self.render_mode = render_mode
        self._battle = BattalionBatch(
            1, battlefield=self.battlefield, config=self.config,
            curriculum_level=self.curriculum_level, reward_weights=reward_weights)
        self.terrain = self.battlefield.terrain
        self.randomize_terrain = self._battle.randomize_terrain
        self.reward_weights = self._battle.reward_weights
        self._battle.set_red_policy(red_policy)
        self.observation_space, self.action_space = make_spaces()

    # --- Gymnasium API ----------------------------------------------------------

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new battle.

        The same ``seed`` always gives the same battle; later resets without a
        seed continue that seed's sequence of battles.

        Args:
            seed: None, or an integer in [0, 2**63).
            options: None or ``{}``; the env defines no reset options.

        Raises:
            ValueError: for any other ``seed``, or an ``options`` key.
        """
        seed = check_seed("seed", seed)
        check_options("options", options, RESET_OPTIONS)
        super().reset(seed=seed)
        fresh = self.np_random.integers(0, SEED_BOUND, size=1, dtype=np.int64)
        self._battle.reset(np.array([0]), [seed], fresh)
        self._battle.last_events = None
        return self._get_obs(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        action = check_action_array("action", action, (ACTION_DIM,))
        result = self._battle.step(action[None, :])
        info = result.infos()[0]
        return (result.observation[0].copy(), info["reward/total"],
                bool(result.terminated[0]), bool(result.truncated[0]), info)

    # --- Red --------------------------------------------------------------------

    def set_red_policy(self, policy: RedPolicy | None) -> None:
        """Let ``policy`` command Red from the next step on; None restores scripted Red."""
        self._battle.set_red_policy(policy)

    @property
    def red_policy(self) -> RedPolicy | None:
        return self._battle.red_policy(0)

    def set_curriculum_level(self, level: int) -> None:
        """Change scripted Red's level (1..5) from the next step on."""
        self._battle.set_curriculum_level(level)
        self.curriculum_level = int(level)

    # --- inspection ---------------------------------------------------------------

    def _get_obs(self) -> np.ndarray:
        """Blue's current observation."""
        if self._battle.geometry is None:
            raise RuntimeError("no battle yet: call reset() first")
        return self._battle.blue_observation()[0].copy()

    def _get_red_obs(self) -> np.ndarray:
        """Red's current observation (same layout, from Red's side)."""
        if self._battle.geometry is None:
            raise RuntimeError("no battle yet: call reset() first")
        return self._battle.red_observation()[0].copy()


if "wargames/Battalion-v0" not in gym.registry:
    # The env truncates itself at max_steps, so no TimeLimit wrapper is added.
    gym.register("wargames/Battalion-v0", entry_point="envs.battalion_env:BattalionEnv")
