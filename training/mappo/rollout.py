"""MAPPO's rollout: the battles the learner trains in, and ``n_steps`` of play in them.

:class:`TrainingBattles` holds ``n_envs`` battles of the current team sizes and,
per battle, which side learns (Blue unless told otherwise) and who commands the
other side (scripted at ``red_level``, or a frozen snapshot dealt by
:meth:`TrainingBattles.deal`). :func:`collect` plays every battle for
``n_steps`` with the learner sampling from its policy and records the learner's
battalions only: the other side's play never reaches the update.

Each side acts in its own frame (Red's is mirrored), so one policy can learn from
either chair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from envs.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.multi_observation import CRITIC_STATE_DIM, OBS_DIM
from envs.sim.constants import ACTION_DIM
from models.mappo_policy import MAPPOPolicy
from training.mappo.battles import make_team_battles, team_actions
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
        episode_return, agent_return: the learner's running return per battle and
            per battalion slot in the current episodes.
    """

    def __init__(self, config: MAPPOConfig, n_blue: int, n_red: int,
                 rng: np.random.Generator) -> None:
        self.config = config
        self.rng = rng
        self.n_blue, self.n_red = n_blue, n_red
        self.batch: MultiBattalionBatch = make_team_battles(
            config.n_envs, n_blue, n_red, config.field_kwargs(), config.reward_weights())
        seeds = rng.integers(0, 2**62, size=config.n_envs)
        self.batch.reset(np.arange(config.n_envs), [int(s) for s in seeds],
                         np.zeros(config.n_envs, np.int64))
        self.red_units = np.arange(n_blue, n_blue + n_red)
        self.learner_side = np.full(config.n_envs, BLUE, np.int8)
        self.opponents: list[tuple[MAPPOPolicy, np.ndarray]] = []
        self.opponents_deterministic = False
        self.orders = np.zeros((config.n_envs, n_blue + n_red, ACTION_DIM), np.float32)
        """(B, U, 3) order buffer reused every step."""
        self.episode_return = np.zeros(config.n_envs, np.float32)
        self.agent_return = np.zeros((config.n_envs, 0), np.float32)
        self._layout()

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
        """Give ``1 - scripted_share`` of the battles to ``opponents``, in equal parts;
        they sample their orders, or act on their policy's mean when ``deterministic``
        (a frozen policy probed as it is deployed)."""
        self.opponents_deterministic = deterministic
        n = self.config.n_envs
        order = self.rng.permutation(n)
        n_scripted = int(round(scripted_share * n))
        self.opponents = [(policy, np.sort(part)) for policy, part in zip(
            opponents, np.array_split(order[n_scripted:], len(opponents)), strict=True)
            if len(part)] if opponents else []

    def _layout(self) -> None:
        """Index the learner's battalions: slot ``k`` of battle ``b`` is unit
        ``units[b, k]``, a real battalion where ``slot_valid[b, k]``."""
        n_envs = self.config.n_envs
        self.all_blue = bool((self.learner_side == BLUE).all())
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
        return self.batch.global_state[self.learner_side, np.arange(self.config.n_envs)]

    def set_learner_orders(self, actions: np.ndarray) -> None:
        """Write the learner's (B, n_slots, 3) orders into :attr:`orders`."""
        if self.all_blue:
            self.orders[:, :self.n_blue] = actions
        else:
            valid = self.slot_valid
            self.orders[self.rows.repeat(self.n_slots, 1)[valid], self.units[valid]] = \
                actions[valid]

    def set_opponent_orders(self) -> None:
        """Write the non-learning side's orders into :attr:`orders`."""
        if self.all_blue:
            self.orders[:, self.n_blue:] = self.red_actions()
            return
        every_unit = np.arange(self.n_blue + self.n_red)
        scripted = self.batch.scripted_actions(every_unit, self.config.red_level)
        opponent_unit = self.batch.team[None, :] != self.learner_side[:, None]  # (B, U)
        self.orders[opponent_unit] = scripted[opponent_unit]
        observation = self.batch.observation
        for policy, battles in self.opponents:
            for side, units in ((RED, self.red_units), (BLUE, np.arange(self.n_blue))):
                chosen = battles[self.learner_side[battles] != side]
                if len(chosen):
                    self.orders[chosen[:, None], units] = team_actions(
                        policy, observation[chosen][:, units],
                        deterministic=self.opponents_deterministic)

    def red_actions(self) -> np.ndarray:
        """(B, n_red, 3) Red's orders when Blue learns in every battle."""
        red = self.batch.scripted_actions(self.red_units, self.config.red_level)
        if self.opponents:
            observation = self.batch.observation
            for policy, battles in self.opponents:
                red[battles] = team_actions(policy, observation[battles][:, self.red_units],
                                            deterministic=self.opponents_deterministic)
        return red


@dataclass
class Rollout:
    """``n_steps`` of the learner's battalions in every battle: (T, B, n_slots, ...) arrays.

    ``valid`` marks samples: a slot that is a battalion in the fight at that step.
    For every battle that ended, in the order they ended: whether the learner won
    (``wins``), its score (``scores``: 1 won, 0.5 drawn, 0 lost), the battle it was
    fought in (``episode_battles``) and the learner's returns.
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
    episode_returns: list[float]
    agent_returns: list[np.ndarray]


def collect(policy: MAPPOPolicy, battles: TrainingBattles, n_steps: int,
            gamma: float) -> Rollout:
    """Play ``n_steps`` of every battle with the learner sampling from ``policy``.

    A battalion cut off by the clock (not beaten) gets the discounted value of
    where it stood added to its last reward, so truncation is not a defeat.
    Finished battles restart at once; their outcome and the learner's return
    are recorded.
    """
    batch, nb = battles.batch, battles.n_slots
    n_envs = battles.config.n_envs
    shape = (n_steps, n_envs, nb)
    # Every entry is written below, so the buffers need no zeroing.
    obs = torch.empty(shape + (OBS_DIM,))
    critic_state = torch.empty(shape + (CRITIC_STATE_DIM,))
    actions = torch.empty(shape + (ACTION_DIM,))
    log_probs, values = torch.empty(shape), torch.empty(shape)
    rewards, dones = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    valid = np.zeros(shape, bool)
    # Shared parameters: one actor for all; otherwise slot k uses actor k.
    agents = 0 if policy.share_parameters else torch.arange(nb).repeat(n_envs) % policy.n_agents
    wins: list[bool] = []
    scores: list[float] = []
    episode_battles: list[int] = []
    episode_returns: list[float] = []
    agent_returns: list[np.ndarray] = []
    for t in range(n_steps):
        obs[t] = torch.from_numpy(battles.learner_view(batch.observation))
        # The critic's inputs: each battalion's observation, then its side's global
        # state (built here rather than for every unit of both sides).
        critic_state[t, :, :, :OBS_DIM] = obs[t]
        critic_state[t, :, :, OBS_DIM:] = torch.from_numpy(battles.learner_global_state())[:, None]
        valid[t] = battles.learner_view(batch.in_fight) & battles.slot_valid
        sampled, log_prob = policy.act(obs[t].reshape(-1, OBS_DIM), agent_idx=agents)
        actions[t] = sampled.cpu().reshape(n_envs, nb, ACTION_DIM)
        log_probs[t] = log_prob.cpu().reshape(n_envs, nb)
        values[t] = policy.get_value(critic_state[t].reshape(-1, CRITIC_STATE_DIM)).cpu().reshape(
            n_envs, nb)
        battles.set_learner_orders(actions[t].numpy())
        battles.set_opponent_orders()
        result = batch.step(battles.orders)

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
            episode_returns.extend(battles.episode_return[over].tolist())
            agent_returns.extend(battles.agent_return[over])
            battles.episode_return[over] = 0
            battles.agent_return[over] = 0
            batch.next_episode(over)
    last_values = policy.get_value(torch.from_numpy(
        battles.learner_view(batch.critic_state).reshape(-1, CRITIC_STATE_DIM))).cpu().reshape(
        n_envs, nb).numpy()
    return Rollout(obs, critic_state, actions, log_probs, values, rewards, dones, valid,
                   last_values, wins, scores, episode_battles, episode_returns, agent_returns)


__all__ = ["Rollout", "TrainingBattles", "collect"]
