"""A batch of 1v1 battalion battles: Blue is commanded from outside, Red by a script
or a policy. :class:`~envs.battalion_env.BattalionEnv` is a batch of one of these,
:class:`~envs.vec_env.BattalionVecEnv` a batch of many; both drive the same
simulator core through this class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from envs.battlefield import Battlefield
from envs.battles.duel_step import duel_step_kernel, restart_duels
from envs.battles.episodes import EpisodeChains
from envs.battles.observation import MIRROR_SIGN, OBS_DIM, ROTATE_SIGN, duel_observations
from envs.reward import COMPONENTS, INFO_KEYS, RewardComponents, RewardWeights
from envs.sim import engine, kernels
from envs.sim.config import BattleConfig
from envs.sim.constants import ACTION_DIM, VISIBILITY_RADIUS
from envs.sim.deploy import deploy, terrain_grid_shape
from envs.sim.engine import pair_major, unit_major, writable_major
from envs.sim.scripted import FIRE_BY_LEVEL
from envs.sim.state import BattleState
from envs.sim.terrain import TerrainMap
from envs.sim.validation import (
    check_count_fits,
    check_in_range,
    check_int,
    check_scripted_level,
)

F32 = np.float32
BLUE, RED = 0, 1

INFO_STEP_KEYS = ("blue_damage_dealt", "red_damage_dealt", "blue_routed", "red_routed",
                  "blue_destroyed", "red_destroyed", "step_count")
"""Keys of every step's ``info`` besides the ``reward/*`` components."""
# A policy commands Red in Red's own (mirrored) frame: its rotate order turns the
# other way on the real map.
_RED_ORDERS_TO_MAP = np.array([1.0, ROTATE_SIGN[RED], 1.0], F32)

BYTES_PER_BATTLE = 64 * 1024
"""Memory one duel of a batch may use at most, with procedural terrain (measured peak
about 31 KB during a step, doubled for safety); batches that would not fit in the
machine's memory are refused when they are configured."""


def check_duel_batch_size(name: str, n_battles: object) -> int:
    """``n_battles`` as an int >= 1 whose battles fit in memory, or ``ValueError`` naming
    ``name`` and the GiB the batch would need."""
    n_battles = check_int(name, n_battles, minimum=1)
    return check_count_fits(name, n_battles, BYTES_PER_BATTLE, "battles")


@runtime_checkable
class RedPolicy(Protocol):
    """Anything that can command Red: a Stable-Baselines3 model, a frozen snapshot,
    a hand-written script. ``predict`` gets Red's observation (a single vector in
    :class:`~envs.battalion_env.BattalionEnv`, an (n, obs_dim) batch in
    :class:`~envs.vec_env.BattalionVecEnv`) and returns the action(s) first."""

    def predict(self, observation: np.ndarray, deterministic: bool = False) -> tuple[Any, Any]:
        ...


def check_red_policy(policy: object, name: str = "red_policy") -> None:
    """Raise ``TypeError`` unless ``policy`` is None or has a callable ``predict``."""
    if policy is not None and not callable(getattr(policy, "predict", None)):
        raise TypeError(f"{name}={policy!r} is invalid: expected None (scripted Red) or an "
                        "object with predict(obs, deterministic=False) -> (action, state)")


def check_battle_setup(config: BattleConfig, terrain: TerrainMap | None,
                       reward_weights: RewardWeights | None) -> None:
    """Raise ``TypeError``/``ValueError`` naming ``terrain`` or ``reward_weights`` unless
    the terrain (if any) is a TerrainMap of the map's size and the weights are
    RewardWeights or None."""
    if not isinstance(config, BattleConfig):
        raise TypeError(f"config={config!r} is invalid: expected a BattleConfig")
    if terrain is not None and not isinstance(terrain, TerrainMap):
        raise TypeError(f"terrain={terrain!r} is invalid: expected a TerrainMap or None")
    if terrain is not None and (terrain.width, terrain.height) != (
            config.map_width, config.map_height):
        raise ValueError(
            f"terrain covers {terrain.width} x {terrain.height} m but the map is "
            f"{config.map_width} x {config.map_height} m: expected the same size")
    if reward_weights is not None and not isinstance(reward_weights, RewardWeights):
        raise TypeError(f"reward_weights={reward_weights!r} is invalid: expected a "
                        "RewardWeights or None")


class BattlefieldBatch:
    """What every batch of battles keeps of its :class:`~envs.battlefield.Battlefield`
    (``battlefield``): the battle model's parameters, the ground and the reward weights."""

    battlefield: Battlefield

    def _keep_battlefield(self, config: BattleConfig,
                          reward_weights: RewardWeights | None) -> tuple[int, int]:
        """Check (:func:`check_battle_setup`) and keep ``config``, the battlefield's ground
        and ``reward_weights`` (None: the defaults).

        Args:
            config: the battle model's parameters.
            reward_weights: reward shaping, or None.

        Returns:
            The rows and columns of the terrain grids the battles' state holds.
        """
        terrain = self.battlefield.terrain
        check_battle_setup(config, terrain, reward_weights)
        self.config = config
        self.terrain = terrain
        self.randomize_terrain = self.battlefield.procedural
        self.reward_weights = reward_weights or RewardWeights()
        self._weight_vector = self.reward_weights.as_array()
        return terrain_grid_shape(terrain, self.randomize_terrain)


@dataclass(frozen=True, eq=False)
class DuelStep:
    """Result of stepping every battle of a batch once (arrays over battles)."""

    observation: np.ndarray
    """(B, OBS_DIM) Blue's observation after the step."""
    reward: RewardComponents
    terminated: np.ndarray
    truncated: np.ndarray
    blue_damage_dealt: np.ndarray
    red_damage_dealt: np.ndarray
    blue_routed: np.ndarray
    red_routed: np.ndarray
    blue_destroyed: np.ndarray
    red_destroyed: np.ndarray
    step_count: np.ndarray

    def infos(self) -> list[dict[str, Any]]:
        """Every battle's ``info`` dict: :data:`INFO_STEP_KEYS` and ``reward/*``, as Python
        numbers. Built from whole columns (``tolist``), about thirty times faster than
        reading the arrays an element at a time, which a training loop pays every step."""
        columns = [getattr(self, key).tolist() for key in INFO_STEP_KEYS]
        columns += [*self.reward.values.tolist(), self.reward.total.tolist()]
        keys = (*INFO_STEP_KEYS, *INFO_KEYS)
        return [dict(zip(keys, row, strict=True)) for row in zip(*columns, strict=True)]

    def info_arrays(self) -> dict[str, np.ndarray]:
        """Every info key as a (B,) array."""
        arrays = {key: getattr(self, key) for key in INFO_STEP_KEYS}
        arrays.update({key: self.reward.values[i] for i, key in enumerate(INFO_KEYS[:-1])})
        arrays["reward/total"] = self.reward.total
        return arrays

    def frozen(self) -> DuelStep:
        """A copy whose arrays no later reset or step can overwrite."""
        return DuelStep(**{name: value.copy() if isinstance(value, np.ndarray) else value
                           for name, value in vars(self).items()})


class BattalionBatch(BattlefieldBatch):
    """``n_battles`` independent 1v1 battles stepped as one batch.

    Args:
        n_battles: number of battles (>= 1).
        config: the battle model's parameters (None: the battlefield's,
            :meth:`~envs.battlefield.Battlefield.battle_config`).
        terrain: a fixed map for every battle, or None.
        randomize_terrain: draw a new procedural map at every reset (ignored when
            ``terrain`` is given); None: the battlefield's.
        curriculum_level: scripted Red's level (1 to
            :data:`~envs.sim.constants.NUM_CURRICULUM_LEVELS`) for every battle.
        reward_weights: reward shaping; None means the defaults.
        battlefield: the map, clock and ground as one value (None: built from
            ``config``, ``terrain`` and ``randomize_terrain``, which must otherwise agree
            with it, :meth:`~envs.battlefield.Battlefield.for_batch`). Its
            ``visibility_radius`` must be the default: the duel has no fog of war.

    Raises:
        ValueError: for a setting out of range or contradicting ``battlefield`` (named).
    """

    def __init__(self, n_battles: int, *, config: BattleConfig | None = None,
                 terrain: TerrainMap | None = None, randomize_terrain: bool | None = None,
                 curriculum_level: int, reward_weights: RewardWeights | None,
                 battlefield: Battlefield | None = None) -> None:
        self.n_battles = check_duel_batch_size("n_battles", n_battles)
        self.battlefield, config = Battlefield.for_batch(
            battlefield, config, terrain=terrain, randomize_terrain=randomize_terrain)
        if self.battlefield.visibility_radius != VISIBILITY_RADIUS:
            raise ValueError(f"battlefield.visibility_radius="
                             f"{self.battlefield.visibility_radius!r} is invalid for a duel: "
                             f"expected the default {VISIBILITY_RADIUS} (both battalions "
                             "always see each other; the fog of war is the N-vs-M battles')")
        rows, cols = self._keep_battlefield(config, reward_weights)
        self.levels = np.full(self.n_battles,
                              check_scripted_level("curriculum_level", curriculum_level), np.int8)
        self.state = BattleState.empty(self.n_battles, np.array([BLUE, RED]), rows, cols)
        self.geometry: engine.Geometry | None = None
        self.last_events: engine.StepEvents | None = None
        self._views: np.ndarray | None = None
        self._chains = EpisodeChains(self.n_battles)
        self._red_policies: list[RedPolicy | None] = [None] * self.n_battles
        self._policy_groups: list[tuple[RedPolicy, np.ndarray]] = []
        self._scripted = np.ones(self.n_battles, bool)
        self.scripted_fire_scale = 1.0
        self._fire_by_level = FIRE_BY_LEVEL
        # Actions in the engine's unit-major layout (ACTION_DIM, U, B), reused every step.
        self._orders = np.zeros((ACTION_DIM, 2, self.n_battles), F32)

    # --- control of Red -----------------------------------------------------------

    def set_red_policy(self, policy: RedPolicy | None, battles: np.ndarray | None = None) -> None:
        """Let ``policy`` command Red in ``battles`` (all by default); None restores the script."""
        check_red_policy(policy, "policy")
        for i in self._indices(battles):
            self._red_policies[i] = policy
        groups: dict[int, tuple[RedPolicy, list[int]]] = {}
        for i, p in enumerate(self._red_policies):
            if p is not None:
                groups.setdefault(id(p), (p, []))[1].append(i)
        self._policy_groups = [(p, np.array(idx)) for p, idx in groups.values()]
        self._scripted = np.array([p is None for p in self._red_policies])

    def red_policy(self, battle: int) -> RedPolicy | None:
        return self._red_policies[battle]

    def set_curriculum_level(self, level: int, battles: np.ndarray | None = None) -> None:
        """Scripted Red's level in ``battles`` (all by default)."""
        self.levels[self._indices(battles)] = check_scripted_level("level", level)

    def set_scripted_fire_scale(self, scale: float) -> None:
        """Scale scripted Red's infantry fire in every battle: its fire order is the level's
        intensity times ``scale`` (0 to 1; 1, the default, is the level as written).

        A level fires ``intensity * readiness`` each step and reloads 0.05 (the
        config's ``reload_rate``) a step, so below ``reload_rate / intensity`` the scale
        slows its sustained fire and above it only its opening volley grows.

        Raises:
            ValueError: for a scale outside [0, 1].
        """
        self.scripted_fire_scale = check_in_range("scale", scale, 0.0, 1.0)
        self._fire_by_level = FIRE_BY_LEVEL * np.float32(scale)  # float32, as the kernel takes

    # --- episodes -----------------------------------------------------------------

    def reset(self, battles: np.ndarray, seeds: list[int | None],
              fresh_seeds: np.ndarray) -> None:
        """Start new episodes in ``battles`` (see :meth:`EpisodeChains.restart`)."""
        self._start(np.asarray(battles, dtype=np.intp),
                    self._chains.restart(battles, seeds, fresh_seeds))

    def next_episode(self, battles: np.ndarray) -> None:
        """Start the next episode of each battle's chain (the vectorised auto-reset)."""
        self._start(battles, self._chains.advance(battles))

    def _start(self, battles: np.ndarray, keys: np.ndarray) -> None:
        deploy(self.state, battles, keys, self.config, terrain=self.terrain,
               randomize_terrain=self.randomize_terrain)
        if self.geometry is None or len(battles) == self.n_battles:
            self.geometry = engine.sense(self.state, self.config)
            self._views = duel_observations(self.state, self.geometry, self.config)
            return
        # Only the restarted battles changed: sense and observe them in place.
        state, geometry, (rows, cols) = self.state, self.geometry, self.state.grid_shape
        restart_duels(
            np.asarray(battles, dtype=np.intp),
            *(unit_major(getattr(state, name)) for name in ("x", "y", "theta", "strength",
                                                             "morale", "readiness")),
            state.step, engine.team_codes(state), state.elevation_patches, state.cover,
            kernels.constants(self.config, rows, cols), self.config.los_samples, MIRROR_SIGN,
            *(writable_major(getattr(geometry, name)) for name in engine.RESTART_GEOMETRY),
            self._views)

    def blue_observation(self) -> np.ndarray:
        """(B, OBS_DIM) Blue's current observations."""
        return self._views[BLUE]

    def red_observation(self) -> np.ndarray:
        """(B, OBS_DIM) Red's current observations (same layout, from Red's side, mirrored
        into Red's own frame; see :mod:`envs.battles.observation`)."""
        return self._views[RED]

    # --- stepping -----------------------------------------------------------------

    def step(self, blue_actions: np.ndarray) -> DuelStep:
        """Step every battle with Blue's (B, ACTION_DIM) actions; Red acts from the same
        state (compiled whole: :func:`envs.battles.duel_step.duel_step`)."""
        if self.geometry is None:
            raise RuntimeError("step() called before reset(): call reset() first")
        before, geometry_before = self.state, self.geometry
        orders = self._orders
        orders[:, BLUE, :] = blue_actions.T
        for policy, battles in self._policy_groups:
            orders[:, RED, battles] = (self._ask(policy, battles) * _RED_ORDERS_TO_MAP).T

        n = self.n_battles
        blocks = engine.StepBlocks.allocate(n, 2)
        observation = np.empty((2, n, OBS_DIM), F32)
        values = np.empty((len(COMPONENTS), n), F32)
        total = np.empty(n, F32)
        ends = np.empty((2, n), bool)
        duel_step_kernel(n)(
            *engine.step_inputs(before, self.config, geometry_before, orders),
            pair_major(geometry_before.dist), pair_major(geometry_before.facing_cos),
            pair_major(geometry_before.facing_sin), self.levels, self._scripted,
            self._fire_by_level, self._weight_vector, MIRROR_SIGN, self.config.max_steps,
            *blocks.arrays(), observation, values, total, ends,
            engine.arms_inputs(before, self.config, None, blocks.modes))
        state, events = blocks.views(before)
        self.state, self.geometry, self.last_events = state, events.geometry, events
        self._views = observation
        dealt = blocks.units[kernels.U_DEALT]
        routed, destroyed = blocks.flags[kernels.F_ROUTED], blocks.flags[kernels.F_DESTROYED]
        return DuelStep(observation[BLUE], RewardComponents(values, total), ends[0], ends[1],
                        dealt[BLUE], dealt[RED], routed[BLUE], routed[RED], destroyed[BLUE],
                        destroyed[RED], state.step)

    def _ask(self, policy: RedPolicy, battles: np.ndarray) -> np.ndarray:
        """One batched ``predict`` for the battles ``policy`` commands."""
        observations = self._views[RED][battles]
        if self.n_battles == 1:  # a single env hands policies a single observation
            observations = observations[0]
        action = np.asarray(policy.predict(observations, deterministic=False)[0], dtype=F32)
        expected = (len(battles), ACTION_DIM) if self.n_battles > 1 else (ACTION_DIM,)
        if action.shape != expected or not np.isfinite(action).all():
            raise ValueError(
                f"red policy {policy!r} returned actions of shape {action.shape} "
                f"(finite: {bool(np.isfinite(action).all())}): expected finite actions "
                f"of shape {expected}")
        return action.reshape(len(battles), ACTION_DIM)

    def _indices(self, battles: np.ndarray | None) -> np.ndarray:
        if battles is None:
            return np.arange(self.n_battles)
        battles = np.asarray(battles, dtype=np.intp).reshape(-1)
        if battles.size and (battles.min() < 0 or battles.max() >= self.n_battles):
            raise IndexError(f"battles={battles.tolist()} is invalid: expected indices in "
                             f"[0, {self.n_battles})")
        return battles


__all__ = ["BattalionBatch", "DuelStep", "INFO_STEP_KEYS", "RedPolicy", "OBS_DIM",
           "BattlefieldBatch", "check_battle_setup", "check_red_policy", "BYTES_PER_BATTLE",
           "check_duel_batch_size"]
