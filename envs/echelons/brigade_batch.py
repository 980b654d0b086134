"""Brigade battles in a batch: one decision gives every Blue battalion a drill.

:class:`BrigadeBatch` plays ``n_battles`` N-vs-M battles
(:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`) at a brigadier's
tempo: each :meth:`~BrigadeBatch.step` is a *macro step* of ``temporal_ratio`` battalion
steps (fewer when the battle ends), in which each Blue battalion carries out one drill
of :func:`envs.options.make_default_options`, by the drill's own orders or as an order
a frozen battalion policy follows; a drill that may not start gives way to
``defend_position``. Red takes scripted, random or a frozen policy's orders, or a frozen
brigadier's drills (:class:`RedCommanders`). Every macro step lasts the same number of
battalion steps, so battles step in lock-step and a battle is played the same in any
batch. Observation: :func:`brigade_observations`; reward: the mean over Blue's
battalions of their team rewards summed over the macro step. ``docs/echelons.md``
tells the whole design.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from envs.battlefield import Battlefield
from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch, TeamStep
from envs.commanders.orders import objectives, order_features
from envs.options import MacroAction, Option
from envs.sim import random as rnd
from envs.sim.config import BattleConfig
from envs.sim.constants import ACTION_DIM
from envs.sim.validation import check_int, check_scripted_level, short_repr

F32 = np.float32
N_SECTORS = 3
"""North-south strips of the field whose control the brigadier sees."""
THREAT_NAMES = ("distance", "bearing_cos", "bearing_sin", "strength", "morale")
"""The numbers of a threat block (:func:`threats`), in order."""
THREAT_FEATURES = len(THREAT_NAMES)
NO_THREAT = np.array([1.0, 0.0, 0.0, 0.0, 0.0], F32)
"""A battalion's threat block when it is out of the fight or no enemy is in it."""
FALLBACK_OPTION = "defend_position"
"""The drill a battalion runs when its ordered one may not start (it may always), and
the orders it follows once its drill is over; with no drill of that name among the
options, the battalion stands still instead."""
HOLD = -1
WINNERS = {BLUE: "blue", RED: "red"}


def brigade_obs_dim(n_units: int) -> int:
    """Length of the brigade observation of ``n_units`` commanded battalions."""
    return N_SECTORS + 7 * n_units + 1


def brigade_observation_features(n_units: int) -> tuple[str, ...]:
    """Names of the brigade observation's entries for ``n_units`` commanded battalions,
    in the order :func:`brigade_observations` writes them (:func:`brigade_obs_dim` of
    them): the strips' own shares (west first), each battalion's strength and morale,
    each one's threat block (its nearest enemy, :data:`THREAT_NAMES`), the time fraction."""
    return (*(f"sector_{k}_own_share" for k in range(N_SECTORS)),
            *(f"battalion_{i}_{name}" for i in range(n_units) for name in ("strength", "morale")),
            *(f"battalion_{i}_enemy_{name}" for i in range(n_units) for name in THREAT_NAMES),
            "time_fraction")


def sector_shares(x: np.ndarray, strength: np.ndarray, mine: np.ndarray, n_sectors: int,
                  width: float) -> np.ndarray:
    """(B, n_sectors) per north-south strip of the field (west first), the share of the
    strength standing in it that is ``mine`` ((U,) mask); 0.5 where nobody stands.
    ``x`` and ``strength`` (0 out of the fight) are (B, U)."""
    strip = np.minimum((x / width * n_sectors).astype(np.intp), n_sectors - 1)
    one_hot = strip[..., None] == np.arange(n_sectors)
    total = (one_hot * strength[..., None]).sum(axis=1)
    own = (one_hot * (strength * mine)[..., None]).sum(axis=1)
    return np.where(total > 0, own / np.where(total > 0, total, 1), 0.5).astype(F32)


def threats(x: np.ndarray, y: np.ndarray, in_fight: np.ndarray, enemy_x: np.ndarray,
            enemy_y: np.ndarray, enemy_strength: np.ndarray, enemy_morale: np.ndarray,
            enemy_in_fight: np.ndarray, diagonal: float) -> np.ndarray:
    """(B, n, 5) the nearest enemy in the fight of each of ``n`` pieces (battalions, or
    brigades by their centres): distance over ``diagonal``, bearing cosine and sine on the
    map, its strength and morale; :data:`NO_THREAT` for a piece out of the fight or with
    no enemy in it. ``x``, ``y``, ``in_fight`` are the pieces' (B, n), the ``enemy_*``
    arrays the ``m`` enemies' (B, m)."""
    dx = enemy_x[:, None, :] - x[:, :, None]
    dy = enemy_y[:, None, :] - y[:, :, None]
    dist = np.where(enemy_in_fight[:, None, :], np.hypot(dx, dy), np.inf)
    j = dist.argmin(axis=2)[..., None]
    d = np.take_along_axis(dist, j, axis=2)[..., 0]
    seen = np.isfinite(d) & in_fight
    safe = np.where(seen & (d > 0), d, 1.0)
    out = np.empty(d.shape + (THREAT_FEATURES,), F32)
    out[..., 0] = np.minimum(d / diagonal, 1.0)
    out[..., 1] = np.where(d > 0, np.take_along_axis(dx, j, axis=2)[..., 0] / safe, 1.0)
    out[..., 2] = np.where(d > 0, np.take_along_axis(dy, j, axis=2)[..., 0] / safe, 0.0)
    out[..., 3] = np.take_along_axis(enemy_strength, j[..., 0], axis=1)
    out[..., 4] = np.take_along_axis(enemy_morale, j[..., 0], axis=1)
    out[~seen] = NO_THREAT
    return out


def own_frame_x(x: np.ndarray, side: int, map_width: float) -> np.ndarray:
    """East-west positions as ``side`` sees the field: Red's mirrored across the map's
    north-south centre line, as its battalions' observations are
    (:mod:`envs.battles.multi_observation`), so every commander sees his side deployed in the
    west and one policy can command either side."""
    return x if side == BLUE else map_width - x


def brigade_observations(battles: MultiBattalionBatch, side: int,
                         members: np.ndarray | None = None) -> np.ndarray:
    """(B, brigade_obs_dim(len(members))) the brigade observation of ``side``'s
    battalions ``members`` (unit indices; default: the whole side), in the side's own
    frame (:func:`own_frame_x`): the share of the strength in each of
    :data:`N_SECTORS` north-south strips of the field that is the side's (0.5 where
    nobody stands), each member's strength and morale, each one's nearest enemy in the
    fight (:func:`threats`: distance over the map's diagonal, bearing cosine and sine on
    the map, its strength and morale; :data:`NO_THREAT` when there is none), and the
    time fraction."""
    state, config, team = battles.state, battles.config, battles.team
    members = np.flatnonzero(team == side) if members is None else np.asarray(members)
    enemies = np.flatnonzero(team != side)
    standing = state.strength * state.active
    x = own_frame_x(state.x, side, config.map_width)
    sectors = sector_shares(x, standing, team == side, N_SECTORS, config.map_width)
    units = np.stack([standing[:, members], state.morale[:, members] * state.active[:, members]],
                     axis=2)
    blocks = threats(x[:, members], state.y[:, members], state.active[:, members],
                     x[:, enemies], state.y[:, enemies], state.strength[:, enemies],
                     state.morale[:, enemies], state.active[:, enemies],
                     float(np.hypot(config.map_width, config.map_height)))
    fraction = (state.step / config.max_steps).astype(F32)[:, None]
    n = len(state.x)
    return np.concatenate([sectors, units.reshape(n, -1), blocks.reshape(n, -1), fraction],
                          axis=1).astype(F32)


class RedCommanders:
    """Frozen commanders of Red's echelon (brigadiers, or division commanders), each
    commanding Red in its own battles of a batch: a league's members met by a learning
    commander. In the other battles Red's battalions keep their own commanders.

    Args:
        n_battles: battles of the batch.
        n_choices, n_commanded: what one command is: ``n_commanded`` choices (drills or
            division commands) in ``[0, n_choices)``.
        obs_dim: length of the commander's observation.
        unavailable: why no commander may be dealt in these battles, if so.
    """

    def __init__(self, n_battles: int, n_choices: int, n_commanded: int, obs_dim: int,
                 unavailable: str | None = None) -> None:
        self.n_battles, self.n_choices = n_battles, n_choices
        self.n_commanded, self.obs_dim = n_commanded, obs_dim
        self.unavailable = unavailable
        self.assigned: list[tuple[Any, np.ndarray]] = []
        self.deterministic = False
        self.commanded = np.zeros(n_battles, bool)
        """(B,) the battles some commander commands."""

    def deal(self, assigned: list[tuple[Any, np.ndarray]], deterministic: bool = False) -> None:
        """Let each ``(policy, battles)`` command Red in ``battles`` (indices, no battle
        twice); ``policy`` has SB3's ``predict(observations, deterministic)`` and the
        echelon's spaces. They sample their commands (from torch's generator), or act on
        their mode when ``deterministic``. An empty list gives Red back to its battalions.

        Raises:
            ValueError: for a battle out of range or dealt twice, a policy whose spaces
                do not fit (named), or a commander dealt where none may be.
        """
        if assigned and self.unavailable is not None:
            raise ValueError(f"no Red commander may be dealt in these battles: "
                             f"{self.unavailable}")
        commanded = np.zeros(self.n_battles, bool)
        checked = []
        for policy, battles in assigned:
            battles = np.asarray(battles, np.intp).reshape(-1)
            if battles.size and (battles.min() < 0 or battles.max() >= self.n_battles
                                 or commanded[battles].any()
                                 or len(np.unique(battles)) != battles.size):
                raise ValueError(f"battles={battles.tolist()} is invalid: expected distinct "
                                 f"battle indices in [0, {self.n_battles}), each dealt once")
            self._check_spaces(policy)
            commanded[battles] = True
            checked.append((policy, battles))
        self.assigned, self.commanded = checked, commanded
        self.deterministic = bool(deterministic)

    def choices(self, view: np.ndarray) -> np.ndarray:
        """(B, n_commanded) every commander's choices on its battles' rows of ``view``
        ((B, obs_dim), the side's commander observations); 0 in battles nobody
        commands."""
        out = np.zeros((self.n_battles, self.n_commanded), np.intp)
        for policy, battles in self.assigned:
            if len(battles):
                action = policy.predict(view[battles], deterministic=self.deterministic)[0]
                out[battles] = np.asarray(action).reshape(len(battles), self.n_commanded)
        return out

    def _check_spaces(self, policy: Any) -> None:
        nvec = [int(n) for n in getattr(getattr(policy, "action_space", None), "nvec", [])]
        shape = getattr(getattr(policy, "observation_space", None), "shape", None)
        if nvec != [self.n_choices] * self.n_commanded or shape != (self.obs_dim,):
            raise ValueError(f"policy {policy!r} observes {shape} and commands {nvec}: expected "
                             f"({self.obs_dim},) and MultiDiscrete [{self.n_choices}] * "
                             f"{self.n_commanded}")


@dataclass(frozen=True)
class MacroStep:
    """What one macro step did, per battle (B rows) and per Blue battalion (B, n_blue).

    A battle that ended during the step ended at ``primitive_steps``; its observation
    is the one it ended with.
    """

    observation: np.ndarray
    """(B, obs_dim) the brigade observations after the step."""
    reward: np.ndarray
    """(B,) float32: the mean of ``blue_rewards``."""
    terminated: np.ndarray
    """(B,) battles decided (a side out of the fight)."""
    truncated: np.ndarray
    """(B,) battles cut off at ``max_steps`` undecided."""
    winner: np.ndarray
    """(B,) int8: 0 Blue won, 1 Red won, -1 no winner (yet, or a draw)."""
    primitive_steps: np.ndarray
    """(B,) battalion steps played."""
    given: np.ndarray
    """(B, n_blue) the drill each Blue battalion was given (HOLD: stood still)."""
    refused: np.ndarray
    """(B, n_blue) battalions whose drill could not start (they held instead)."""
    option_steps: np.ndarray
    """(B, n_blue) steps each drill ran before it ended."""
    blue_rewards: np.ndarray
    """(B, n_blue) each Blue battalion's team rewards summed over the step."""

    @property
    def battle_over(self) -> np.ndarray:
        return self.terminated | self.truncated


@dataclass
class _Tally:
    """What a macro step has counted so far, per battle (B rows) and per unit (B, U)."""

    live: np.ndarray
    """(B,) battles still being fought in this macro step."""
    primitive: np.ndarray
    """(B,) battalion steps played."""
    rewards: np.ndarray
    """(B, n_blue) float64 each Blue battalion's team rewards summed."""
    steps_active: np.ndarray
    """(B, U) battalion steps each unit's drill has run."""
    terminated: np.ndarray
    truncated: np.ndarray
    winner: np.ndarray
    final: np.ndarray | None = None
    """The commander's view of the battles that ended, as they ended (None: none yet)."""

    @classmethod
    def empty(cls, n_battles: int, units: tuple[int, int], n_blue: int) -> _Tally:
        """Nothing counted in ``n_battles`` battles of ``units`` (B, U), all still fought."""
        return cls(live=np.ones(n_battles, bool), primitive=np.zeros(n_battles, np.int64),
                   rewards=np.zeros((n_battles, n_blue), np.float64),
                   steps_active=np.zeros(units, np.int64),
                   terminated=np.zeros(n_battles, bool), truncated=np.zeros(n_battles, bool),
                   winner=np.full(n_battles, -1, np.int8))

    def count(self, result: TeamStep, running: np.ndarray, blue: np.ndarray) -> None:
        """Add one battalion step ``result`` in the live battles: a step played, Blue's
        rewards, a step of each ``running`` drill."""
        live = self.live
        self.primitive += live
        self.rewards += np.where(live[:, None], result.reward[:, blue], 0.0)
        self.steps_active += running & live[:, None]


class EchelonBatch:
    """Battalion battles played a commander's step at a time: what an echelon env steps
    (:mod:`envs.echelons.echelon_env`). A subclass sets :attr:`battles`, ``n_battles`` and
    ``obs_dim``, and gives ``observe``, ``check_action``, ``step`` and ``infos``."""

    battles: MultiBattalionBatch
    """The battalion battles under the command."""
    n_battles: int
    obs_dim: int

    def reset(self, battles: np.ndarray, seeds: list[int | None],
              fresh_seeds: np.ndarray) -> None:
        """Start new episodes in ``battles`` (see :meth:`MultiBattalionBatch.reset`)."""
        self.battles.reset(battles, seeds, fresh_seeds)

    def next_episode(self, battles: np.ndarray) -> None:
        """Start the next episode of each of ``battles``."""
        self.battles.next_episode(battles)

    def _check_choices(self, action: Any, n_commanded: int, n_choices: int,
                       what: str) -> np.ndarray:
        """``action`` as (B, n_commanded) indices in [0, n_choices) of ``what`` (a drill, a
        command), or a ``ValueError`` saying so."""
        chosen = np.asarray(action)
        if chosen.shape != (self.n_battles, n_commanded) \
                or not np.issubdtype(chosen.dtype, np.integer) \
                or chosen.min() < 0 or chosen.max() >= n_choices:
            raise ValueError(f"action={short_repr(action)} is invalid: expected {n_commanded} "
                             f"{what} indices in [0, {n_choices}) per battle")
        return chosen.astype(np.intp)


class BrigadeBatch(EchelonBatch):
    """``n_battles`` brigade battles of ``n_blue`` against ``n_red``, played a macro step
    at a time (module docstring).

    Args:
        n_battles, n_blue, n_red: battles, and battalions a side.
        config: the battle model's parameters (None: the battlefield's).
        options: the drills, indexed by the actions.
        temporal_ratio: battalion steps a macro step lasts (>= 1).
        randomize_terrain: procedural ground at every reset, else open level ground
            (None: the battlefield's).
        visibility_radius: how far a battalion sees, in metres (None: the battlefield's).
        red_level: the scripted Red commanders' level (1 to 5).
        red_random: Red gives random orders.
        battalion_policy: a frozen policy commanding Red's battalions: ``predict(observations
            (N, OBS_DIM), deterministic) -> (orders (N, 3), _)`` (an SB3 model, a frozen
            MAPPO policy wrapped so); it overrides ``red_random``.
        blue_policy: a frozen order-conditioned MAPPO policy commanding Blue's battalions
            (observations of ``OBS_DIM + ORDER_DIM``); the options must then be the six
            default ones, in :class:`~envs.options.MacroAction` order.
        battlefield: the map, clock, ground and sight as one value (None: built from
            ``config``, ``randomize_terrain`` and ``visibility_radius``, which must
            otherwise agree with it, :meth:`~envs.battlefield.Battlefield.for_batch`).

    Raises:
        ValueError: for a setting out of range or contradicting ``battlefield`` (the
            message names it).
    """

    def __init__(self, n_battles: int, n_blue: int, n_red: int, *,
                 config: BattleConfig | None = None, options: list[Option],
                 temporal_ratio: int, randomize_terrain: bool | None = None,
                 visibility_radius: float | None = None, red_level: int,
                 red_random: bool = False, battalion_policy: Any = None,
                 blue_policy: Any = None, battlefield: Battlefield | None = None) -> None:
        self.temporal_ratio = check_int("temporal_ratio", temporal_ratio, minimum=1)
        if not options or not all(isinstance(o, Option) for o in options):
            raise ValueError(f"options={options!r} is invalid: expected a non-empty list of "
                             "envs.options.Option")
        self.options = list(options)
        names = [o.name for o in self.options]
        if blue_policy is not None and names != [m.name.lower() for m in MacroAction]:
            raise ValueError(f"options={names} is invalid with a blue_policy: expected the six "
                             "default drills in MacroAction order (each becomes an order)")
        self.red_level = check_scripted_level("red_level", red_level)
        self.red_random = bool(red_random)
        self.battalion_policy = battalion_policy
        self.blue_policy = blue_policy
        self.battlefield, self.config = Battlefield.for_batch(
            battlefield, config, randomize_terrain=randomize_terrain,
            visibility_radius=visibility_radius)
        self.battles = MultiBattalionBatch(
            n_battles, n_blue, n_red, battlefield=self.battlefield, config=self.config,
            reward_weights=None)
        self.n_battles, self.n_blue, self.n_red = n_battles, n_blue, n_red
        team = self.battles.team
        self.blue, self.red = np.flatnonzero(team == BLUE), np.flatnonzero(team == RED)
        self.fallback = names.index(FALLBACK_OPTION) if FALLBACK_OPTION in names else HOLD
        self.obs_dim = brigade_obs_dim(n_blue)
        self.commander_view: Callable[[], np.ndarray] = self.observe
        """What the commander of these battles sees, (B, D): the observation a step
        returns (the division battles put their own here)."""
        self.red_commanders = RedCommanders(n_battles, len(self.options), n_red,
                                            brigade_obs_dim(n_red))
        """Frozen brigadiers commanding Red in some battles (:meth:`RedCommanders.deal`),
        in Red's own frame, over the same lower echelon as Blue's."""
        # Each battalion's place in its side (the frozen battalion policy's agent index).
        self._slot = np.where(team == BLUE, np.arange(len(team)),
                              np.arange(len(team)) - n_blue)[None, :]

    # --- episodes -----------------------------------------------------------------

    def observe(self) -> np.ndarray:
        """(B, obs_dim) Blue's brigade observations."""
        return brigade_observations(self.battles, BLUE)

    # --- orders ---------------------------------------------------------------------

    def check_action(self, action: Any) -> np.ndarray:
        """``action`` as (B, n_blue) drill indices.

        Raises:
            ValueError: for a shape other than (B, n_blue), or an index out of range.
        """
        return self._check_choices(action, self.n_blue, len(self.options), "drill")

    def drill_orders(self, given: np.ndarray, running: np.ndarray,
                     observation: np.ndarray) -> np.ndarray:
        """(n, 3) the orders of ``n`` battalions running drills ``given`` (n,) on their
        observations (n, OBS_DIM); those not ``running`` theirs any more hold."""
        orders = np.zeros((len(given), ACTION_DIM), F32)
        doing = np.where(running, given, self.fallback)
        for k in np.unique(doing):
            if k != HOLD:
                rows = doing == k
                orders[rows] = self.options[k].get_actions(observation[rows])
        return orders

    def drills_over(self, given: np.ndarray, observation: np.ndarray,
                    steps: np.ndarray) -> np.ndarray:
        """(n,) which of ``n`` drills ``given`` are over after ``steps`` (n,) steps."""
        over = np.zeros(len(given), bool)
        for k in np.unique(given):
            if k == HOLD:  # standing still lasts the macro step
                continue
            rows = given == k
            option = self.options[k]
            over[rows] = (steps[rows] >= option.max_steps) | np.asarray(
                option.termination(observation[rows], steps[rows]), bool)
        return over

    def red_orders(self, observation: np.ndarray) -> np.ndarray:
        """(B, n_red) Red's battalions' own orders this battalion step (where no Red
        echelon commander gives them drills)."""
        if self.battalion_policy is not None:
            flat = observation[:, self.red].reshape(-1, observation.shape[-1])
            actions = np.asarray(self.battalion_policy.predict(flat, deterministic=False)[0], F32)
            return np.clip(actions.reshape(self.n_battles, self.n_red, ACTION_DIM), -1, 1)
        if self.red_random:
            state = self.battles.state
            draws = rnd.uniform(state.key, rnd.STREAM_RANDOM_ACTIONS, state.step,
                                self.n_red * ACTION_DIM).reshape(-1, self.n_red, ACTION_DIM)
            return draws * np.array([2, 2, 1], F32) - np.array([1, 1, 0], F32)
        return self.battles.scripted_actions(self.red, self.red_level)

    def side_view(self, side: int) -> np.ndarray:
        """(B, brigade_obs_dim(n)) the brigade observations of ``side`` (BLUE or RED, of
        ``n`` battalions), in its own frame."""
        return brigade_observations(self.battles, side)

    def red_drills(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The drills :attr:`red_commanders` give Red's battalions now: (B, n_red) drill
        indices and (B,) which battles they command; None while nobody is dealt."""
        if not self.red_commanders.assigned:
            return None
        return self.red_commanders.choices(self.side_view(RED)), self.red_commanders.commanded

    def _policy_orders(self, posture: np.ndarray, objective: np.ndarray,
                       observation: np.ndarray, drilled: np.ndarray) -> np.ndarray:
        """(n, 3) the frozen battalion policy's orders for the ``drilled`` (B, U) units,
        each following its order (posture and objective, (B, U) and (B, U, 2))."""
        state = self.battles.state
        features = order_features(posture, objective, state.x, state.y, state.theta,
                                  state.team[None, :])
        seen = np.concatenate([observation, features], axis=-1)[drilled]
        agents = np.broadcast_to(self._slot, drilled.shape)[drilled] % self.blue_policy.n_agents
        with torch.no_grad():
            actions, _ = self.blue_policy.act(torch.from_numpy(seen),
                                              agent_idx=torch.from_numpy(agents),
                                              deterministic=True)
        return actions.cpu().numpy()

    # --- the macro step ----------------------------------------------------------------

    def step(self, action: Any, red_drills: np.ndarray | None = None,
             red_drilled: np.ndarray | None = None) -> MacroStep:
        """One macro step of every battle (module docstring).

        Args:
            action: (B, n_blue) drill indices for Blue's battalions.
            red_drills: (B, n_red) drill indices for Red's battalions, run as Blue's
                are, in the battles ``red_drilled`` ((B,), default all) marks; by
                default those of :attr:`red_commanders` (:meth:`red_drills`), and none.

        Raises:
            ValueError: for an action that is not (B, n_blue) drill indices.
        """
        chosen = self.check_action(action)
        if red_drills is None:
            dealt = self.red_drills()
            if dealt is not None:
                red_drills, red_drilled = dealt
        drilled, given, red_own = self._deal_drills(chosen, red_drills, red_drilled)
        observation = self.battles.observation
        in_fight = self.battles.state.active & drilled
        refused = self._refuse_drills(given, in_fight, observation)
        posture, objective = self._drill_orders_given(given)
        running = in_fight.copy()
        tally = _Tally.empty(self.n_battles, drilled.shape, self.n_blue)
        orders = np.zeros((self.n_battles, self.battles.n_units, ACTION_DIM), F32)
        for _ in range(self.temporal_ratio):
            self._give_orders(orders, drilled, given, running, observation, posture, objective,
                              red_own, tally.live)
            result = self.battles.step(orders)
            observation = result.observation
            tally.count(result, running, self.blue)
            if self._end_battles(tally, result):
                break
            self._continue_drills(running, given, observation, tally.steps_active)
        return self._macro_step(tally, given, refused)

    def _deal_drills(self, chosen: np.ndarray, red_drills: np.ndarray | None,
                     red_drilled: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Both sides' drills on one (B, U) grid: Blue's always (``chosen``), Red's where its
        echelon commander gives them (``red_drills`` in the battles ``red_drilled``). Returns
        which units run drills, each one's drill (HOLD for the others) and (B,) the battles
        whose Red battalions take their own orders (:meth:`red_orders`)."""
        n, n_units = self.n_battles, self.battles.n_units
        drilled = np.zeros((n, n_units), bool)
        drilled[:, self.blue] = True
        given = np.full((n, n_units), HOLD, np.intp)
        given[:, self.blue] = chosen
        red_by_drills = np.zeros(n, bool)
        if red_drills is not None:
            red_by_drills = np.ones(n, bool) if red_drilled is None else np.asarray(red_drilled)
            drilled[:, self.red] = red_by_drills[:, None]
            given[:, self.red] = np.where(red_by_drills[:, None], red_drills, HOLD)
        return drilled, given, ~red_by_drills

    def _refuse_drills(self, given: np.ndarray, in_fight: np.ndarray,
                       observation: np.ndarray) -> np.ndarray:
        """(B, U) the units ``in_fight`` whose drill ``given`` may not start on their
        ``observation``; they run the fallback drill instead (``given`` in place)."""
        refused = np.zeros_like(in_fight)
        for k, option in enumerate(self.options):
            rows = in_fight & (given == k)
            if rows.any():
                refused[rows] = ~np.asarray(option.initiation_set(observation[rows]), bool)
        given[refused] = self.fallback
        return refused

    def _drill_orders_given(self, given: np.ndarray
                            ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The order each drill ``given`` becomes for the frozen battalion policy: (B, U)
        postures (HOLD defends its position) and (B, U, 2) objectives worked out from where
        the units stand now; ``(None, None)`` when the drills themselves give the orders."""
        if self.blue_policy is None:
            return None, None
        state = self.battles.state
        posture = np.where(given == HOLD, MacroAction.DEFEND_POSITION, given)
        objective = objectives(posture, state.x, state.y, state.active, state.team,
                               self.config.map_width, self.config.map_height)
        return posture, objective

    def _give_orders(self, orders: np.ndarray, drilled: np.ndarray, given: np.ndarray,
                     running: np.ndarray, observation: np.ndarray, posture: np.ndarray | None,
                     objective: np.ndarray | None, red_own: np.ndarray,
                     live: np.ndarray) -> None:
        """Every unit's orders (B, U, 3) for one battalion step, into ``orders``: the drilled
        units' from their drills (or the frozen policy following them), the other Red
        battalions' own; 0 in battles over (``live`` False), whose results are not read."""
        if self.blue_policy is not None:
            orders[drilled] = self._policy_orders(posture, objective, observation, drilled)
        else:
            orders[drilled] = self.drill_orders(given[drilled], running[drilled],
                                                observation[drilled])
        if red_own.any():
            orders[red_own[:, None] & (self.battles.team == RED)[None, :]] = \
                self.red_orders(observation)[red_own].reshape(-1, ACTION_DIM)
        orders[~live] = 0.0

    def _end_battles(self, tally: _Tally, result: TeamStep) -> bool:
        """Record the battles that ended in this battalion step ``result``: decided or cut
        off, their winner and the commander's view they ended with. Returns whether every
        battle is over."""
        ended = tally.live & result.battle_over
        if not ended.any():
            return False
        decided = ended & ((result.winner >= 0) | ~result.truncated.any(axis=1))
        tally.terminated |= decided
        tally.truncated |= ended & ~decided
        tally.winner[ended] = result.winner[ended]
        view = self.commander_view()
        tally.final = np.zeros_like(view) if tally.final is None else tally.final
        tally.final[ended] = view[ended]
        tally.live &= ~ended
        return not tally.live.any()

    def _continue_drills(self, running: np.ndarray, given: np.ndarray, observation: np.ndarray,
                         steps_active: np.ndarray) -> None:
        """Stop (``running`` in place) the drills of units out of the fight and, where the
        drills themselves give the orders, the drills over after ``steps_active`` steps."""
        now_in_fight = self.battles.state.active
        if self.blue_policy is None:
            check = running & now_in_fight
            over = np.zeros_like(running)
            over[check] = self.drills_over(given[check], observation[check], steps_active[check])
            running &= now_in_fight & ~over
        else:
            running &= now_in_fight

    def _macro_step(self, tally: _Tally, given: np.ndarray, refused: np.ndarray) -> MacroStep:
        """What the macro step ``tally`` counted, as Blue's :class:`MacroStep`; the battles
        still being fought observed now."""
        final = tally.final
        if final is None:
            final = self.commander_view()
        elif tally.live.any():
            final[tally.live] = self.commander_view()[tally.live]
        blue, rewards = self.blue, tally.rewards
        return MacroStep(final, rewards.mean(axis=1).astype(F32), tally.terminated,
                         tally.truncated, tally.winner, tally.primitive, given[:, blue],
                         refused[:, blue], tally.steps_active[:, blue], rewards.astype(F32))

    def infos(self, result: MacroStep, macro_steps: np.ndarray) -> list[dict[str, Any]]:
        """The Gymnasium info of each battle for ``result`` (``macro_steps``: (B,) macro
        steps played in each battle's episode)."""
        names = [o.name for o in self.options] + ["hold"]  # HOLD = -1 is the last
        out = []
        for b in range(self.n_battles):
            info: dict[str, Any] = {
                "macro_steps": int(macro_steps[b]),
                "primitive_steps": int(result.primitive_steps[b]),
                "option_names": {f"blue_{k}": names[result.given[b, k]]
                                 for k in range(self.n_blue)},
                "option_steps": {f"blue_{k}": int(result.option_steps[b, k])
                                 for k in range(self.n_blue)},
                "blue_rewards": {f"blue_{k}": float(result.blue_rewards[b, k])
                                 for k in range(self.n_blue)},
                "refused_options": [f"blue_{k}" for k in np.flatnonzero(result.refused[b])],
            }
            if result.battle_over[b]:
                info["winner"] = WINNERS.get(int(result.winner[b]), "draw")
            out.append(info)
        return out


__all__ = ["BrigadeBatch", "EchelonBatch", "FALLBACK_OPTION", "HOLD", "MacroStep", "N_SECTORS",
           "NO_THREAT", "RedCommanders", "THREAT_NAMES", "brigade_obs_dim",
           "brigade_observation_features", "brigade_observations", "own_frame_x",
           "sector_shares", "threats"]
