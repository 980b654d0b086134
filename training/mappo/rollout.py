"""MAPPO's rollout: the battles the learner trains in, and ``n_steps`` of play in them.

:class:`TrainingBattles` holds ``n_envs`` battles of the current team sizes and,
per battle, which side learns (Blue unless told otherwise) and who commands the
other side (scripted at ``red_level``; the disciplined doctrine in the last
``doctrine_share`` of the battles; or a frozen snapshot dealt by
:meth:`TrainingBattles.deal` among the others). :func:`collect` plays every battle for
``n_steps`` with the learner sampling from its policy and records the learner's
battalions only: the other side's play never reaches the update.

Each side acts in its own frame (Red's is mirrored), so one policy can learn from
either chair.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.commanders.doctrine import DisciplinedCommander
from envs.metrics.coordination import CoordinationTally, compute_all
from envs.play.commanders import CombinedArmsRed
from envs.sim.constants import ACTION_DIM, KEEP_FORMATION
from models.mappo_policy import MAPPOPolicy
from training.common.dealing import deal_battles
from training.mappo.battles import (
    is_batch_commander,
    make_team_battles,
    order_noise,
    put_orders,
    step_team,
    team_actions,
)
from training.mappo.config import MAPPOConfig


class TrainingBattles:
    """``n_envs`` battles of ``n_blue`` against ``n_red``, and who commands each side.

    Args:
        config: the run's settings (battle size, map, reward, ``red_level``).
        n_blue, n_red: the current team sizes (the curriculum changes them).
        rng: the run's generator: battle seeds and the dealing of opponents.

    Attributes:
        learner_side: (B,) the side that learns in each battle (BLUE or RED).
        opponents: ``(policy, battles)`` pairs: frozen policies commanding the
            non-learning side of those battles; the rest are scripted.
        doctrine_battles: the battles (the last ``doctrine_share`` of them) whose
            non-learning side the doctrine commands (the disciplined doctrine; with an
            order of battle the combined-arms doctrine); no snapshot is dealt to them.
        episode_return, agent_return: the learner's running return per battle and
            per battalion slot in the current episodes.
    """

    def __init__(self, config: MAPPOConfig, n_blue: int, n_red: int,
                 rng: np.random.Generator) -> None:
        self.config = config
        self.rng = rng
        self.n_blue, self.n_red = n_blue, n_red
        self.n_battles = config.n_envs
        self.batch: MultiBattalionBatch = make_team_battles(
            config.n_envs, n_blue, n_red, config.field_kwargs(), config.reward_weights(),
            order_of_battle=config.forces())
        seeds = rng.integers(0, 2**62, size=config.n_envs)
        self.batch.reset(np.arange(config.n_envs), [int(s) for s in seeds],
                         np.zeros(config.n_envs, np.int64))
        self.red_units = np.arange(n_blue, n_blue + n_red)
        self.learner_side = np.full(config.n_envs, BLUE, np.int8)
        self.opponents: list[tuple[MAPPOPolicy, np.ndarray]] = []
        self.opponents_deterministic = False
        n_doctrine = int(round(config.doctrine_share * config.n_envs))
        self.doctrine_battles = np.arange(config.n_envs - n_doctrine, config.n_envs)
        self.doctrine = DisciplinedCommander(map_diagonal=float(np.hypot(
            config.map_width, config.map_height))) if config.order_of_battle is None \
            else CombinedArmsRed()
        self.orders = np.zeros((config.n_envs, n_blue + n_red, ACTION_DIM), np.float32)
        """(B, U, 3) order buffer reused every step."""
        self.formations = np.full((config.n_envs, n_blue + n_red), KEEP_FORMATION, np.int8)
        """(B, U) formation orders, reused every step (:func:`step_team`)."""
        self.formation_heads = False
        """Whether a dealt opponent orders formations (its draws are then needed)."""
        self.episode_return = np.zeros(config.n_envs, np.float32)
        self.agent_return = np.zeros((config.n_envs, 0), np.float32)
        self._layout()

    # --- splitting across workers -----------------------------------------------------

    def split(self, n_parts: int) -> list[TrainingBattles]:
        """The battles as ``n_parts`` consecutive parts (as equal as can be), each with its
        learning sides, its dealt opponents and its running returns, laid out like these
        battles (same slots), so :func:`collect` on a part gives exactly that part of a
        rollout of the whole (:func:`join_rollouts`). :meth:`join` takes them back.

        The parts carry no generator (dealing is the driver's job).
        """
        sizes = [len(rows) for rows in np.array_split(np.arange(self.n_battles), n_parts)]
        parts = []
        start = 0
        for size, batch in zip(sizes, self.batch.split(sizes), strict=True):
            rows = slice(start, start + size)
            part = copy.copy(self)
            part.rng, part.batch, part.n_battles = None, batch, size
            part.learner_side = self.learner_side[rows].copy()
            part.orders = self.orders[rows].copy()
            part.formations = self.formations[rows].copy()
            part.episode_return = self.episode_return[rows].copy()
            part.agent_return = self.agent_return[rows].copy()
            inside = [(policy, battles[(battles >= start) & (battles < start + size)] - start)
                      for policy, battles in self.opponents]
            part.opponents = [(policy, battles) for policy, battles in inside if len(battles)]
            doctrine = self.doctrine_battles
            part.doctrine_battles = doctrine[(doctrine >= start)
                                             & (doctrine < start + size)] - start
            part._layout(all_blue=self.all_blue)
            parts.append(part)
            start += size
        return parts

    def join(self, parts: list[TrainingBattles]) -> None:
        """Take back the battles of :meth:`split`'s ``parts`` (in order) as they stand now."""
        self.batch.join([part.batch for part in parts])
        self.orders = np.concatenate([part.orders for part in parts])
        self.formations = np.concatenate([part.formations for part in parts])
        self.episode_return = np.concatenate([part.episode_return for part in parts])
        self.agent_return = np.concatenate([part.agent_return for part in parts])

    # --- who commands what ---------------------------------------------------------------

    def set_learning_side(self, side: int, battles: np.ndarray | None = None) -> None:
        """Let the learner command ``side`` (BLUE or RED) in ``battles`` (all by default);
        the other side of those battles is scripted or a dealt opponent.

        Raises:
            ValueError: for a side other than BLUE (0) or RED (1).
        """
        if side not in (BLUE, RED):
            raise ValueError(f"side={side!r} is invalid: expected {BLUE} (Blue) or {RED} (Red)")
        self.learner_side[slice(None) if battles is None else battles] = side
        self._layout()

    def deal(self, opponents: list[MAPPOPolicy], scripted_share: float, *,
             deterministic: bool = False) -> None:
        """Give ``1 - scripted_share`` of the battles the doctrine does not command to
        ``opponents``, in equal parts; they sample their orders, or act on their policy's
        mean when ``deterministic`` (a frozen policy probed as it is deployed)."""
        self.opponents_deterministic = deterministic
        n_dealt = self.config.n_envs - len(self.doctrine_battles)  # the first n_dealt
        self.opponents = deal_battles(self.rng, n_dealt, opponents, scripted_share)
        self.formation_heads = any(policy.formation_orders for policy, _ in self.opponents)

    def _layout(self, all_blue: bool | None = None) -> None:
        """Index the learner's battalions: slot ``k`` of battle ``b`` is unit
        ``units[b, k]``, a real battalion where ``slot_valid[b, k]``. ``all_blue``
        (whether Blue learns everywhere: Blue's slots only) is given to a part, which
        keeps the slots of the whole."""
        n_envs = self.n_battles
        self.all_blue = bool((self.learner_side == BLUE).all()) if all_blue is None else all_blue
        self.n_slots = self.n_blue if self.all_blue else max(self.n_blue, self.n_red)
        slots = np.arange(self.n_slots)
        red = self.learner_side[:, None] == RED
        self.units = np.where(red, self.n_blue + slots, slots)
        self.slot_valid = np.where(red, slots < self.n_red, slots < self.n_blue)
        self.units[~self.slot_valid] = 0
        self.rows = np.arange(n_envs)[:, None]
        # Column of each battle's learning side in the side-major team reward (2B,).
        self.reward_column = self.learner_side.astype(np.intp) * n_envs + np.arange(n_envs)
        if self.agent_return.shape[1] != self.n_slots:
            self.agent_return = np.zeros((n_envs, self.n_slots), np.float32)

    # --- what the learner sees and what the others do -------------------------------------

    def learner_view(self, array: np.ndarray) -> np.ndarray:
        """The learner's slots of a (B, U, ...) per-unit array: (B, n_slots, ...)."""
        if self.all_blue:
            return array[:, :self.n_blue]
        return array[self.rows, self.units]

    def learner_global_state(self) -> np.ndarray:
        """(B, STATE_DIM) the learning side's fog-free picture of each battle."""
        if self.all_blue:
            return self.batch.global_state[BLUE]
        return self.batch.global_state[self.learner_side, np.arange(self.n_battles)]

    def set_learner_orders(self, actions: np.ndarray) -> None:
        """Write the learner's (B, n_slots, width) orders (:func:`team_actions`') into
        :attr:`orders` and :attr:`formations`."""
        if self.all_blue:
            put_orders(self.orders, self.formations, (slice(None), slice(0, self.n_blue)),
                       actions)
        else:
            valid = self.slot_valid
            put_orders(self.orders, self.formations,
                       (self.rows.repeat(self.n_slots, 1)[valid], self.units[valid]),
                       actions[valid])

    def set_opponent_orders(self, noise: np.ndarray) -> None:
        """Write the non-learning side's orders into :attr:`orders` and
        :attr:`formations`; sampling opponents use ``noise``, the battles' keyed draws of
        this step (:func:`~training.mappo.battles.order_noise`)."""
        if self.all_blue:
            self.set_red_orders(noise)
            return
        every_unit = np.arange(self.n_blue + self.n_red)
        formations = np.empty((self.n_battles, len(every_unit)), np.int8)
        scripted = self.batch.scripted_actions(every_unit, self.config.red_level, formations)
        opponent_unit = self.batch.team[None, :] != self.learner_side[:, None]  # (B, U)
        self.orders[opponent_unit] = scripted[opponent_unit]
        self.formations[opponent_unit] = formations[opponent_unit]
        observation = self.batch.observation
        for commander, battles in self._commanders():
            for side, units in ((RED, self.red_units), (BLUE, np.arange(self.n_blue))):
                chosen = battles[self.learner_side[battles] != side]
                if len(chosen):
                    self._command(commander, chosen, units, observation, noise)

    def set_red_orders(self, noise: np.ndarray) -> None:
        """Write Red's orders into :attr:`orders` and :attr:`formations` when Blue learns
        in every battle (``noise``: the battles' keyed draws of this step)."""
        red = self.red_units
        formations = np.empty((self.n_battles, len(red)), np.int8)
        self.orders[:, red] = self.batch.scripted_actions(red, self.config.red_level,
                                                          formations)
        self.formations[:, red] = formations
        commanders = self._commanders()
        if commanders:
            observation = self.batch.observation
            for commander, battles in commanders:
                self._command(commander, battles, red, observation, noise)

    def _command(self, commander: Any, battles: np.ndarray, units: np.ndarray,
                 observation: np.ndarray, noise: np.ndarray) -> None:
        """Write ``commander``'s orders of ``units`` in ``battles``."""
        index = (battles[:, None], units)
        if is_batch_commander(commander):
            orders, formations = commander.orders(self.batch, units)
            self.orders[index] = orders[battles]
            self.formations[index] = KEEP_FORMATION if formations is None else formations[battles]
            return
        put_orders(self.orders, self.formations, index, team_actions(
            commander, observation[battles][:, units], self.opponents_deterministic,
            noise[battles][:, units]))

    def _commanders(self) -> list[tuple[Any, np.ndarray]]:
        """``(commander, battles)`` of every battle whose other side is not scripted."""
        if len(self.doctrine_battles):
            return [(self.doctrine, self.doctrine_battles), *self.opponents]
        return self.opponents


@dataclass
class Rollout:
    """``n_steps`` of the learner's battalions in every battle: (T, B, n_slots, ...) arrays.

    ``valid`` marks samples: a slot that is a battalion in the fight at that step.
    For every battle that ended, in the order they ended (by step, then battle):
    whether the learner won (``wins``), its score (``scores``: 1 won, 0.5 drawn, 0
    lost), the battle it was fought in (``episode_battles``), the rollout step it
    ended at (``episode_ends``) and the learner's returns. ``coordination``: the
    learner's coordination metrics at every step of every battle
    (:mod:`envs.metrics.coordination`), None where nobody measured them.
    """

    obs: torch.Tensor
    critic_state: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    rewards: np.ndarray
    dones: np.ndarray
    valid: np.ndarray
    last_values: np.ndarray
    wins: list[bool]
    scores: list[float]
    episode_battles: list[int]
    episode_ends: list[int]
    episode_returns: list[float]
    agent_returns: list[np.ndarray]
    coordination: CoordinationTally | None = None


def collect(policy: MAPPOPolicy, battles: TrainingBattles, n_steps: int,
            gamma: float) -> Rollout:
    """Play ``n_steps`` of every battle with the learner sampling from ``policy``.

    A battalion cut off by the clock (not beaten) gets the discounted value of
    where it stood added to its last reward, so truncation is not a defeat.
    Finished battles restart at once; their outcome and the learner's return
    are recorded.
    """
    batch, nb = battles.batch, battles.n_slots
    n_envs = battles.n_battles
    shape = (n_steps, n_envs, nb)
    # Battalions that follow orders (envs.commanders.orders) see them after their observation.
    obs_dim = batch.observation.shape[-1]
    critic_dim = obs_dim + batch.global_state.shape[-1]
    width = policy.order_width
    draws = policy.formation_orders or battles.formation_heads
    # Every entry is written below, so the buffers need no zeroing.
    obs = torch.empty(shape + (obs_dim,))
    critic_state = torch.empty(shape + (critic_dim,))
    actions = torch.empty(shape + (width,))
    log_probs, values = torch.empty(shape), torch.empty(shape)
    rewards, dones = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    valid = np.zeros(shape, bool)
    # Shared parameters: one actor for all; otherwise slot k uses actor k.
    agents = 0 if policy.share_parameters else torch.arange(nb).repeat(n_envs) % policy.n_agents
    wins: list[bool] = []
    scores: list[float] = []
    episode_battles: list[int] = []
    episode_ends: list[int] = []
    episode_returns: list[float] = []
    agent_returns: list[np.ndarray] = []
    coordination = CoordinationTally.empty(n_envs)
    for t in range(n_steps):
        obs[t] = torch.from_numpy(battles.learner_view(batch.observation))
        # The critic's inputs: each battalion's observation, then its side's global
        # state (built here rather than for every unit of both sides).
        critic_state[t, :, :, :obs_dim] = obs[t]
        critic_state[t, :, :, obs_dim:] = torch.from_numpy(battles.learner_global_state())[:, None]
        valid[t] = battles.learner_view(batch.in_fight) & battles.slot_valid
        # Sampling draws are keyed by battle and step, so a battle's rollout is the
        # same whichever part of a split (or worker) it is collected in.
        noise = order_noise(batch, draws)
        sampled, log_prob = policy.act(
            obs[t].reshape(-1, obs_dim), agent_idx=agents,
            noise=torch.from_numpy(battles.learner_view(noise[..., :width]).reshape(-1, width)))
        actions[t] = sampled.cpu().reshape(n_envs, nb, width)
        log_probs[t] = log_prob.cpu().reshape(n_envs, nb)
        values[t] = policy.get_value(critic_state[t].reshape(-1, critic_dim)).cpu().reshape(
            n_envs, nb)
        battles.set_learner_orders(actions[t].numpy())
        battles.set_opponent_orders(noise)
        result = step_team(batch, battles.orders, battles.formations)
        coordination.add(compute_all(batch.state, batch.last_events, batch.config,
                                     battles.learner_side, result.acted))

        reward = battles.learner_view(result.reward).copy()
        truncated = battles.learner_view(result.truncated)
        if truncated.any():
            final = torch.from_numpy(battles.learner_view(result.critic_state)[truncated])
            reward[truncated] += gamma * policy.get_value(final).cpu().numpy()
        rewards[t] = reward
        dones[t] = battles.learner_view(result.terminated) | truncated
        battles.episode_return += result.team_reward.total[battles.reward_column]
        battles.agent_return += battles.learner_view(result.reward)
        over = np.flatnonzero(result.battle_over)
        if len(over):
            winner, side = result.winner[over], battles.learner_side[over]
            won = winner == side
            wins.extend(won.tolist())
            scores.extend(np.where(won, 1.0, np.where(winner == 1 - side, 0.0, 0.5)).tolist())
            episode_battles.extend(over.tolist())
            episode_ends.extend([t] * len(over))
            episode_returns.extend(battles.episode_return[over].tolist())
            agent_returns.extend(battles.agent_return[over])
            battles.episode_return[over] = 0
            battles.agent_return[over] = 0
            batch.next_episode(over)
    last_values = policy.get_value(torch.from_numpy(
        battles.learner_view(batch.critic_state).reshape(-1, critic_dim))).cpu().reshape(
        n_envs, nb).numpy()
    return Rollout(obs, critic_state, actions, log_probs, values, rewards, dones, valid,
                   last_values, wins, scores, episode_battles, episode_ends, episode_returns,
                   agent_returns, coordination)


def join_rollouts(parts: list[Rollout]) -> Rollout:
    """One rollout of the whole from the rollouts of :meth:`TrainingBattles.split`'s
    parts (in order): arrays joined along the battle axis, finished battles renumbered
    and put in the order :func:`collect` on the whole gives (by step, then battle)."""
    def cat(name: str, axis: int = 1) -> torch.Tensor | np.ndarray:
        arrays = [getattr(part, name) for part in parts]
        if isinstance(arrays[0], torch.Tensor):
            return torch.cat(arrays, dim=axis)
        return np.concatenate(arrays, axis=axis)

    offsets = np.cumsum([0] + [part.valid.shape[1] for part in parts[:-1]])
    episodes = [(end, battle + offset, part, i) for part, offset in zip(parts, offsets,
                                                                          strict=True)
                for i, (battle, end) in enumerate(zip(part.episode_battles, part.episode_ends,
                                                      strict=True))]
    episodes.sort(key=lambda episode: episode[:2])

    def listed(name: str) -> list[Any]:
        return [getattr(part, name)[i] for _, _, part, i in episodes]

    return Rollout(cat("obs"), cat("critic_state"), cat("actions"), cat("log_probs"),
                   cat("values"), cat("rewards"), cat("dones"), cat("valid"),
                   cat("last_values", axis=0), listed("wins"), listed("scores"),
                   [int(battle) for _, battle, _, _ in episodes],
                   [end for end, _, _, _ in episodes], listed("episode_returns"),
                   listed("agent_returns"),
                   None if any(part.coordination is None for part in parts)
                   else CoordinationTally.join([part.coordination for part in parts]))


__all__ = ["Rollout", "TrainingBattles", "collect", "join_rollouts"]
