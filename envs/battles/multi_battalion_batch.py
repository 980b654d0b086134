"""A batch of N-vs-M battles stepped as one batch, every battalion commanded
from outside. :class:`~envs.multi_battalion_env.MultiBattalionEnv` (PettingZoo) is
a batch of one of these; MAPPO training steps hundreds at once.

Every battalion is an agent. It acts while it is in the fight; its episode ends
when it routs or is destroyed, or when the battle ends (one side has nobody left
in the fight: the other wins, or both at once: a draw), or is cut off at
``max_steps``. The reward is its side's (a team reward, shared by the side's
battalions in the fight), weighted by :class:`~envs.reward.RewardWeights`; its
components are listed in :mod:`envs.reward` and computed by
:func:`~envs.reward.side_reward`, the kernel that computes the 1v1 duel's, so
with one battalion a side this is the duel's reward.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from envs.battlefield import Battlefield
from envs.battles.battalion_batch import BattlefieldBatch
from envs.battles.episodes import EpisodeChains
from envs.battles.multi_observation import (
    ROTATE_SIGN,
    FogReports,
    battalion_observations,
    critic_states,
    global_states,
    observation_constants,
    observation_dims,
    sightings,
)
from envs.battles.team_step import restart_teams, team_step_kernel
from envs.reward import COMPONENTS, RewardComponents, RewardWeights
from envs.scenario import OrderOfBattle
from envs.sim import engine
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.constants import ACTION_DIM
from envs.sim.deploy import Placement, deploy
from envs.sim.engine import pair_major, team_codes, unit_major, writable_major
from envs.sim.jit import read_only
from envs.sim.scripted import scripted_actions
from envs.sim.state import MODE_FIELDS, ORDER_OF_BATTLE_FIELDS, UNIT_FIELDS, BattleState
from envs.sim.terrain import TerrainMap
from envs.sim.validation import (
    check_action_array,
    check_count_fits,
    check_int,
    check_positive,
    check_scripted_levels,
)

F32 = np.float32
BLUE, RED = 0, 1


def bytes_per_battle(n_units: int) -> int:
    """Memory one N-vs-M battle of ``n_units`` battalions may use at most in a batch.

    Measured peaks during a step with procedural terrain, 31 KB (1v1) to 116 KB
    (6v6), grow with the square of the battalions (sight and distances are per
    pair); this bound is about twice that. Batches that would not fit in the
    machine's memory are refused when they are configured.
    """
    return 64 * 1024 + 1024 * n_units * n_units


def check_team_batch_size(name: str, n_battles: object, n_units: int) -> int:
    """``n_battles`` as an int >= 1 whose battles of ``n_units`` battalions fit in memory,
    or ``ValueError`` naming ``name`` and the GiB the batch would need."""
    n_battles = check_int(name, n_battles, minimum=1)
    return check_count_fits(name, n_battles, bytes_per_battle(n_units),
                            f"battles of {n_units} battalions")


class _Handout:
    """A step's observation and global-state arrays, as :class:`TeamStep` hands them out.

    Until they are read, the batch may restart battles in them in place (saving the
    rows it overwrites here first), which spares copying both arrays whole at every
    restart; once read, the batch restarts battles in copies instead. Either way a
    reader gets exactly what the step produced, and never sees it change.
    """

    def __init__(self, observation: np.ndarray, global_state: np.ndarray) -> None:
        self.arrays = (observation, global_state)
        self.read = False
        self._saved: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def save(self, battles: np.ndarray) -> None:
        """Keep the rows of ``battles``, about to be overwritten in place."""
        observation, global_state = self.arrays
        self._saved.append((battles, observation[battles], global_state[:, battles]))

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """The step's arrays (rebuilt from the saved rows if battles were restarted in
        them); the batch writes into them no more."""
        if self._saved:
            observation, global_state = (a.copy() for a in self.arrays)
            for battles, rows, states in reversed(self._saved):  # the earliest rows win
                observation[battles] = rows
                global_state[:, battles] = states
            self.arrays, self._saved = (observation, global_state), []
        self.read = True
        return self.arrays


@dataclass(frozen=True, eq=False)
class TeamStep:
    """Result of stepping every battle of a batch once. Per-unit arrays are (B, U)."""

    _handout: _Handout = dataclasses.field(repr=False)
    team: np.ndarray
    """(U,) side of each unit."""
    reward: np.ndarray
    """(B, U) float32 reward of each battalion that acted this step, else 0."""
    acted: np.ndarray
    """(B, U) battalions that were in the fight at the start of the step."""
    terminated: np.ndarray
    """(B, U) battalions whose episode ended this step: out of the fight, or the battle decided."""
    truncated: np.ndarray
    """(B, U) battalions still in the fight when the battle reached ``max_steps``."""
    battle_over: np.ndarray
    """(B,) battles that ended this step (decided or cut off)."""
    winner: np.ndarray
    """(B,) int8: 0 Blue won, 1 Red won, -1 no winner (yet, or a draw)."""
    team_reward: RewardComponents
    """Each side's reward components; column ``side * B + battle``."""
    damage_dealt: np.ndarray
    """(B, U) strength each battalion removed from the enemy this step."""
    damage_taken: np.ndarray
    """(B, U) strength each battalion lost this step."""

    @property
    def observation(self) -> np.ndarray:
        """(B, U, obs_dim) observations after the step (a finished battle's last ones)."""
        return self._handout.take()[0]

    @property
    def global_state(self) -> np.ndarray:
        """(2, B, state_dim) each side's fog-free picture after the step."""
        return self._handout.take()[1]

    @cached_property
    def critic_state(self) -> np.ndarray:
        """(B, U, CRITIC_STATE_DIM) centralised-critic inputs after the step (built on
        first use: a training loop that does not bootstrap never pays for it)."""
        return critic_states(self.observation, self.global_state, self.team)


class MultiBattalionBatch(BattlefieldBatch):
    """``n_battles`` independent N-vs-M battles stepped as one batch.

    Args:
        n_battles: number of battles (>= 1, and few enough to fit in memory:
            :func:`bytes_per_battle` each).
        n_blue, n_red: battalions a side (>= 1 each).
        config: the battle model's parameters (None: the battlefield's,
            :meth:`~envs.battlefield.Battlefield.battle_config`).
        terrain: a fixed map for every battle, or None.
        randomize_terrain: draw a new procedural map at every reset (ignored when
            ``terrain`` is given); None: the battlefield's.
        visibility_radius: how far a battalion sees, in metres (> 0); None: the
            battlefield's.
        reward_weights: reward shaping; None means the defaults.
        order_of_battle: each unit's arm, starting formation and quality
            (:class:`envs.scenario.OrderOfBattle`, or anything its ``of`` reads); None
            fields infantry of quality 1 in line.
        battlefield: the map, clock, ground and sight as one value (None: built from
            ``config``, ``terrain``, ``randomize_terrain`` and ``visibility_radius``,
            which must otherwise agree with it,
            :meth:`~envs.battlefield.Battlefield.for_batch`).

    Raises:
        ValueError: for a setting out of range or contradicting ``battlefield``, or an
            order of battle whose side sizes are not ``n_blue`` and ``n_red``.
    """

    def __init__(self, n_battles: int, n_blue: int, n_red: int, *,
                 config: BattleConfig | None = None, terrain: TerrainMap | None = None,
                 randomize_terrain: bool | None = None, visibility_radius: float | None = None,
                 reward_weights: RewardWeights | None, order_of_battle: Any = None,
                 battlefield: Battlefield | None = None) -> None:
        self.n_blue = check_int("n_blue", n_blue, minimum=1)
        self.n_red = check_int("n_red", n_red, minimum=1)
        self.n_battles = check_team_batch_size("n_battles", n_battles, self.n_blue + self.n_red)
        self.battlefield, config = Battlefield.for_batch(
            battlefield, config, terrain=terrain, randomize_terrain=randomize_terrain,
            visibility_radius=visibility_radius)
        self.visibility_radius = check_positive("visibility_radius",
                                                self.battlefield.visibility_radius)
        rows, cols = self._keep_battlefield(config, reward_weights)
        self.team = np.array([BLUE] * self.n_blue + [RED] * self.n_red, dtype=np.int8)
        self.n_units = len(self.team)
        self._constants = observation_constants(config, self.visibility_radius, rows, cols)
        self.order_of_battle = None if order_of_battle is None else OrderOfBattle.of(
            order_of_battle)
        oob = self.order_of_battle
        if oob is not None and (oob.n_blue, oob.n_red) != (self.n_blue, self.n_red):
            raise ValueError(f"order_of_battle has {oob.n_blue} Blue and {oob.n_red} Red "
                             f"units: expected n_blue={self.n_blue} and n_red={self.n_red}")
        self.state = BattleState.empty(
            self.n_battles, self.team, rows, cols,
            arm=None if oob is None else np.array(oob.arm, np.int8),
            quality=None if oob is None else np.array(oob.quality, np.float32))
        self.starting_formations = (np.zeros(self.n_units, np.int16) if oob is None
                                    else np.array(oob.formation, np.int16))
        """(U,) each unit's formation at deployment, from the order of battle."""
        self.obs_dim, self.state_dim = observation_dims(oob is not None)
        """The lengths of an observation and a global state: with an order of battle they
        carry the arms blocks (:mod:`envs.battles.multi_observation`)."""
        self.reports = FogReports.empty(self.n_units, self.n_battles)
        self.geometry: engine.Geometry | None = None
        self.last_events: engine.StepEvents | None = None
        self.step_observers: list[Callable[[MultiBattalionBatch], None]] = []
        """Called with the batch after every :meth:`step` (a replay recorder watching
        the battles an echelon commander fights, :mod:`envs.rendering.replay`)."""
        self._chains = EpisodeChains(self.n_battles)
        self._observation: np.ndarray | None = None
        self._critic_state: np.ndarray | None = None
        self._global_state: np.ndarray | None = None
        # Whether the current observation and global state may be held outside (read
        # through the properties below), and the last step's handout while it still
        # shares them: a restart writes into the arrays in place only when neither holds.
        self._arrays_read = False
        self._handout: _Handout | None = None
        # Orders come in each side's own frame (Red's is mirrored): the real-map
        # rotate sign of every unit.
        self._rotate_sign = ROTATE_SIGN[self.team]

    # --- episodes -----------------------------------------------------------------

    def reset(self, battles: np.ndarray, seeds: list[int | None],
              fresh_seeds: np.ndarray, placement: Placement | None = None) -> None:
        """Start new episodes in ``battles`` (see :meth:`EpisodeChains.restart`).

        With a ``placement`` (a scenario's, :func:`envs.scenario_battle.scenario_placement`)
        the units stand where it puts them instead of in their sides' deployment bands;
        the ground is the battlefield's either way.
        """
        battles = np.asarray(battles, dtype=np.intp)
        if placement is not None:
            placement.check(len(battles), self.n_units)
        self._start(battles, self._chains.restart(battles, seeds, fresh_seeds), placement)

    def next_episode(self, battles: np.ndarray) -> None:
        """Start the next episode of each battle's chain (the vectorised auto-reset).

        Arrays returned by earlier calls are never written into.
        """
        battles = np.asarray(battles, dtype=np.intp)
        self._start(battles, self._chains.advance(battles))

    def start_from(self, state: BattleState) -> None:
        """Play on from ``state`` (as many battles as this batch, laid out as its own, from
        any batch of the same units and battlefield) in every battle, each side seeing
        every battalion as at a deployment; its random keys go on as they are.

        A planner plays its futures so, from states its side believes
        (:mod:`envs.planning`).
        """
        if state.batch_size != self.n_battles or not np.array_equal(state.team, self.team):
            raise ValueError(f"state holds {state.batch_size} battles of sides "
                             f"{state.team.tolist()}: expected {self.n_battles} battles of "
                             f"sides {self.team.tolist()}")
        self.state = state
        self.geometry = engine.sense(state, self.config)
        self.reports.refresh(state, self.geometry, np.ones((2, self.n_units, self.n_battles),
                                                           bool))
        self._observe(state, self.geometry, self.reports)

    def _start(self, battles: np.ndarray, keys: np.ndarray,
               placement: Placement | None = None) -> None:
        deploy(self.state, battles, keys, self.config, terrain=self.terrain,
               randomize_terrain=self.randomize_terrain, formations=self.starting_formations)
        if placement is not None:
            placement.stand(self.state, battles)
        if self.geometry is None or len(battles) == self.n_battles:
            everything = np.ones((2, self.n_units, len(battles)), bool)
            self.geometry = engine.sense(self.state, self.config)
            self.reports.refresh(self.state, self.geometry, everything)
            self._observe(self.state, self.geometry, self.reports)
            return
        # Only the restarted battles changed: work them out in place, in the current
        # arrays if nobody holds them (the last step's result keeps the rows it would
        # lose), else in copies, so that results handed out before stay as they were.
        state, geometry = self.state, self.geometry
        handout = self._handout
        if self._arrays_read or (handout is not None and handout.read):
            self._observation = self._observation.copy()
            self._global_state = self._global_state.copy()
            self._arrays_read, self._handout = False, None
        elif handout is not None:
            handout.save(battles)
        restart_teams(
            np.asarray(battles, dtype=np.intp),
            *(unit_major(getattr(state, name)) for name in UNIT_FIELDS), state.step,
            team_codes(state), np.ascontiguousarray(state.arm, np.int8),
            np.ascontiguousarray(state.quality, F32),
            *(unit_major(getattr(state, name)) for name in MODE_FIELDS),
            state.elevation_patches, state.cover,
            read_only(self._constants), self.config.los_samples,
            *(writable_major(getattr(geometry, name)) for name in engine.RESTART_GEOMETRY),
            self.reports.values, self.reports.in_fight, self.reports.seen_step,
            self._observation, self._global_state)
        self._critic_state = None

    def _observe(self, state: BattleState, geometry: engine.Geometry,
                 reports: FogReports) -> np.ndarray:
        sees = sightings(state, geometry, self.visibility_radius)
        reports.refresh(state, geometry, sees)
        arms = self.order_of_battle is not None
        self._observation = battalion_observations(state, geometry, reports, sees, self.config,
                                                   arms=arms)
        self._global_state = global_states(state, geometry, self.config, arms=arms)
        self._critic_state = self._handout = None
        self._arrays_read = False
        return sees

    # --- splitting across workers -----------------------------------------------------

    def split(self, sizes: list[int]) -> list[MultiBattalionBatch]:
        """The battles as consecutive smaller batches of ``sizes`` battles (copies, laid
        out like this batch), each playing on exactly as it would here: a battle's
        step depends on its own arrays only. :meth:`join` takes them back.

        Raises:
            ValueError: if the sizes are not positive or do not add up to ``n_battles``.
        """
        self._require_reset()
        if any(size < 1 for size in sizes) or sum(sizes) != self.n_battles:
            raise ValueError(f"sizes={sizes} is invalid: expected positive sizes adding up to "
                             f"n_battles={self.n_battles}")
        parts = []
        for start, stop in zip(np.cumsum([0, *sizes[:-1]]), np.cumsum(sizes), strict=True):
            rows = slice(int(start), int(stop))
            part = copy.copy(self)
            part.n_battles = stop - start
            part.state = _map_battles(self.state, lambda a, r=rows: _copy(a[r]),
                                      skip=ORDER_OF_BATTLE_FIELDS)
            part.geometry = _map_battles(self.geometry, lambda a, r=rows: _copy(a[r]))
            part.reports = _map_battles(self.reports, lambda a, r=rows: _copy(a[..., r]))
            part._chains = self._chains.select(rows)
            part._observation = _copy(self._observation[rows])
            part._global_state = _copy(self._global_state[:, rows])
            part._critic_state = part.last_events = part._handout = None
            part._arrays_read = False
            parts.append(part)
        return parts

    def join(self, parts: list[MultiBattalionBatch]) -> None:
        """Take back the battles of :meth:`split`'s ``parts`` (in order) as they stand
        now. ``last_events`` is cleared (each part has its own)."""
        if sum(part.n_battles for part in parts) != self.n_battles:
            raise ValueError(f"parts hold {sum(part.n_battles for part in parts)} battles: "
                             f"expected n_battles={self.n_battles}")

        def joined(get: Any, axis: int) -> np.ndarray:
            return _concatenate([get(part) for part in parts], axis)

        self.state = _map_fields(self.state, lambda name: joined(
            lambda part: getattr(part.state, name), 0), skip=ORDER_OF_BATTLE_FIELDS)
        self.geometry = _map_fields(self.geometry, lambda name: joined(
            lambda part: getattr(part.geometry, name), 0))
        self.reports = _map_fields(self.reports, lambda name: joined(
            lambda part: getattr(part.reports, name), -1))
        self._chains = EpisodeChains.join([part._chains for part in parts])
        self._observation = joined(lambda part: part._observation, 0)
        self._global_state = joined(lambda part: part._global_state, 1)
        self._critic_state = self.last_events = self._handout = None
        self._arrays_read = False

    # --- what the commanders see ----------------------------------------------------

    def _require_reset(self) -> None:
        if self.geometry is None:
            raise RuntimeError("no battle yet: call reset() first")

    @property
    def observation(self) -> np.ndarray:
        """(B, U, obs_dim) every battalion's current observation (OBS_DIM numbers, or
        ARMS_OBS_DIM with an order of battle)."""
        self._require_reset()
        self._arrays_read = True
        return self._observation

    @property
    def critic_state(self) -> np.ndarray:
        """(B, U, CRITIC_STATE_DIM) every battalion's centralised-critic input."""
        self._require_reset()
        if self._critic_state is None:
            self._critic_state = critic_states(self._observation, self._global_state, self.team)
        return self._critic_state

    @property
    def global_state(self) -> np.ndarray:
        """(2, B, state_dim) each side's fog-free picture of the battle."""
        self._require_reset()
        self._arrays_read = True
        return self._global_state

    @property
    def in_fight(self) -> np.ndarray:
        """(B, U) battalions neither routed nor destroyed."""
        return self.state.active

    def scripted_actions(self, units: np.ndarray, level: int | np.ndarray,
                         formations: np.ndarray | None = None) -> np.ndarray:
        """(B, len(units), ACTION_DIM) orders of scripted commanders of ``level`` (1 to
        :data:`~envs.sim.constants.NUM_CURRICULUM_LEVELS`, or one a battle) for ``units``,
        in each unit's own frame (ready for :meth:`step`). Scripted commanders see the
        whole field (no fog of war). Levels 2 to 5 use their arms
        (:mod:`envs.sim.scripted`): with an order of battle of several arms or formations,
        pass a writable (B, len(units)) int8 array as ``formations`` to receive the units'
        formation orders for :meth:`step`."""
        self._require_reset()
        levels = check_scripted_levels("level", level, self.n_battles)
        units = np.asarray(units, dtype=np.intp).reshape(-1)
        if units.size and (units.min() < 0 or units.max() >= self.n_units):
            raise ValueError(f"units={units.tolist()} is invalid: expected unit indices in "
                             f"[0, {self.n_units})")
        orders = scripted_actions(self.state, self.geometry, units, levels, self.config,
                                  formations)
        orders[:, :, 1] *= self._rotate_sign[units]  # into each side's own frame
        return orders

    def action_noise(self) -> np.ndarray:
        """(B, U, ACTION_DIM) standard normal draws for commanders that sample their orders
        this step (a Gaussian policy's ``mean + std * noise``).

        They are keyed by each battle's episode and step (stream ``STREAM_POLICY``), so
        a battle's sampled orders are the same in any batch, on any worker.
        """
        self._require_reset()
        draws = rnd.normal(self.state.key, rnd.STREAM_POLICY, self.state.step,
                           self.n_units * ACTION_DIM)
        return draws.reshape(self.n_battles, self.n_units, ACTION_DIM)

    def formation_noise(self) -> np.ndarray:
        """(B, U, 1) standard normal draws that decide a sampling commander's formation
        choice this step (:meth:`models.mappo_policy.Orders.sample`), keyed like
        :meth:`action_noise` on a stream of their own (``STREAM_FORMATION``), so the
        continuous orders' draws are the same with a formation head or without."""
        self._require_reset()
        draws = rnd.normal(self.state.key, rnd.STREAM_FORMATION, self.state.step, self.n_units)
        return draws.reshape(self.n_battles, self.n_units, 1)

    # --- stepping -------------------------------------------------------------------

    def step(self, actions: np.ndarray, formations: np.ndarray | None = None) -> TeamStep:
        """Step every battle with (B, U, ACTION_DIM) ``[move, rotate, fire]`` orders, each
        in its side's own frame (Red's rotate is mirrored, see
        :mod:`envs.battles.multi_observation`), and optionally (B, U) formation orders (as
        :func:`envs.sim.engine.step` takes them; None keeps every formation).

        Orders are clipped into the action box; those of battalions out of the
        fight are ignored.

        Raises:
            ValueError: for a wrong shape or a non-finite order.
        """
        self._require_reset()
        actions = check_action_array("actions", actions,
                                     (self.n_battles, self.n_units, ACTION_DIM))
        drill_orders = engine.formation_orders(formations, (self.n_battles, self.n_units))
        before, geometry_before = self.state, self.geometry
        n, units = self.n_battles, self.n_units
        blocks = engine.StepBlocks.allocate(n, units)
        new_step = before.step + 1
        observation = np.empty((n, units, self.obs_dim), F32)
        global_state = np.empty((2, n, self.state_dim), F32)
        values = np.empty((len(COMPONENTS), 2 * n), F32)
        total = np.empty(2 * n, F32)
        reward = np.empty((n, units), F32)
        acted, terminated, truncated = np.empty((3, n, units), bool)
        battle_over = np.empty(n, bool)
        winner = np.empty(n, np.int8)
        team_step_kernel(n)(
            actions, self._rotate_sign,
            *engine.step_inputs(before, self.config, geometry_before,
                                np.empty((ACTION_DIM, units, n), F32), self._constants),
            pair_major(geometry_before.dist), new_step, self.reports.values,
            self.reports.in_fight, self.reports.seen_step, self._weight_vector,
            self.config.max_steps, *blocks.arrays(), observation, global_state, values, total,
            reward, acted, terminated, truncated, battle_over, winner,
            engine.arms_inputs(before, self.config, drill_orders, blocks.modes))
        state, events = blocks.views(before)
        self.state, self.geometry, self.last_events = state, events.geometry, events
        self._observation, self._global_state = observation, global_state
        self._critic_state, self._arrays_read = None, False
        self._handout = _Handout(observation, global_state)
        for observer in self.step_observers:
            observer(self)
        return TeamStep(self._handout, self.team, reward, acted, terminated, truncated,
                        battle_over, winner, RewardComponents(values, total),
                        events.damage_dealt, events.damage_taken)


def _copy(array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` with its memory layout (the engine's arrays keep the battle
    axis contiguous)."""
    return array.copy(order="K")


def _concatenate(parts: list[np.ndarray], axis: int) -> np.ndarray:
    """``parts`` joined along ``axis``, laid out in memory like the first part."""
    shape = list(parts[0].shape)
    shape[axis] = sum(part.shape[axis] for part in parts)
    out = np.empty_like(parts[0], shape=shape)
    return np.concatenate(parts, axis=axis, out=out)


def _map_fields(container: Any, make: Any, skip: tuple[str, ...] = ()) -> Any:
    """A copy of the dataclass ``container`` whose fields (but ``skip``) are ``make(name)``."""
    return dataclasses.replace(container, **{
        field.name: make(field.name) for field in dataclasses.fields(container)
        if field.name not in skip})


def _map_battles(container: Any, take: Any, skip: tuple[str, ...] = ()) -> Any:
    """A copy of the dataclass ``container`` with ``take`` applied to each field's array."""
    return _map_fields(container, lambda name: take(getattr(container, name)), skip)


__all__ = ["MultiBattalionBatch", "TeamStep", "bytes_per_battle", "check_team_batch_size"]
