"""Play batches of N-vs-M battles between a MAPPO Blue and a scripted or MAPPO Red."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from envs.battlefield import FIELDS as BATTLEFIELD_FIELDS
from envs.battlefield import Battlefield
from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.commanders.doctrine import DisciplinedCommander
from envs.commanders.orders import OrderedBattalionBatch, OrderRewards
from envs.rendering.replay import Replay, ReplayRecorder
from envs.sim.constants import ACTION_DIM, KEEP_FORMATION
from envs.sim.validation import check_int, check_scripted_level
from models.mappo_policy import MAPPOPolicy
from training.common.play import DRAW, LOSS, WIN, play, score, team_outcomes

_ORDER_DEFAULTS = dict(order_period=0, order_attack_share=0.0,
                       reward_order_progress=OrderRewards.progress,
                       reward_order_hold=OrderRewards.hold)
"""The order-following settings ``env_kwargs`` may give beside the battlefield's
(:class:`~envs.commanders.orders.OrderedBattalionBatch`; ``order_period`` 0: no orders)."""


def make_team_battles(n_battles: int, n_blue: int, n_red: int,
                      env_kwargs: dict[str, Any] | None = None,
                      reward_weights=None, *, battlefield: Battlefield | None = None,
                      order_of_battle: Any = None
                      ) -> MultiBattalionBatch | OrderedBattalionBatch:
    """A :class:`MultiBattalionBatch` from MultiBattalionEnv-style keyword arguments,
    wrapped in an :class:`~envs.commanders.orders.OrderedBattalionBatch` when ``order_period`` is
    set (battalions that follow orders; ``reward_order_*`` weigh their order term).

    Args:
        n_battles: battles in the batch.
        n_blue, n_red: battalions a side (``env_kwargs`` may repeat them, alike).
        env_kwargs: the :class:`~envs.battlefield.Battlefield`'s settings (map size,
            ``max_steps``, ...) and the order settings of :data:`_ORDER_DEFAULTS`.
        reward_weights: the team reward's shaping; None means the defaults.
        battlefield: the battlefield; a battlefield setting in ``env_kwargs`` must then
            agree with it.
        order_of_battle: each unit's arm, formation and quality
            (:class:`~envs.scenario.OrderOfBattle` or what its ``of`` reads); None fields
            infantry in line. With one the observations carry the arms block
            (:mod:`envs.battles.multi_observation`) and :func:`step_team` passes formation
            orders.

    Raises:
        ValueError: for an unknown keyword (named), a bad value, or a setting that
            contradicts ``battlefield`` or the team sizes.
    """
    orders = dict(_ORDER_DEFAULTS)
    field: dict[str, Any] = {}
    sizes = {"n_blue": n_blue, "n_red": n_red}
    for key, value in (env_kwargs or {}).items():
        if key in sizes:
            if value != sizes[key]:
                raise ValueError(f"env_kwargs[{key!r}]={value!r} contradicts {key}={sizes[key]}")
        elif key in orders:
            orders[key] = value
        elif key in BATTLEFIELD_FIELDS:
            field[key] = value
        else:
            raise ValueError(f"env_kwargs key {key!r} is invalid: expected some of "
                             f"{sorted([*BATTLEFIELD_FIELDS, *orders])}")
    battlefield = Battlefield.from_kwargs(battlefield, **field)
    battles = MultiBattalionBatch(n_battles, n_blue, n_red, battlefield=battlefield,
                                  config=battlefield.battle_config(),
                                  reward_weights=reward_weights,
                                  order_of_battle=order_of_battle)
    if not orders["order_period"]:
        return battles
    return OrderedBattalionBatch(battles, orders["order_period"], OrderRewards(
        orders["reward_order_progress"], orders["reward_order_hold"]),
        attack_share=orders["order_attack_share"])


def team_actions(policy: Any, observations: np.ndarray, deterministic: bool,
                 noise: np.ndarray | None = None) -> np.ndarray:
    """(b, n, width) orders for (b, n, obs_dim) observations: ``[move, rotate, fire]``,
    then, for a MAPPO policy with a formation head, the formation code
    (:class:`~models.mappo_policy.Orders`; :func:`put_orders` writes them into the step's
    buffers).

    ``policy`` is a MAPPO policy (agent i of a side uses its actor ``i mod
    n_agents``) or a battalion commander with ``predict`` that reads the duel's
    features, which lead every team observation (the disciplined doctrine
    commanding each battalion: :data:`DOCTRINE_TEAM`). A MAPPO policy that samples
    uses ``noise`` ((b, n, >= order_width) standard normal draws, :func:`order_noise`;
    the first ``order_width`` are its) when given, else torch's generator.
    """
    b, n, dim = observations.shape
    flat = np.ascontiguousarray(observations).reshape(-1, dim)
    if not is_team_policy(policy):
        return np.asarray(policy.predict(flat, deterministic=deterministic)[0],
                          np.float32).reshape(b, n, -1)
    agents = torch.arange(n).repeat(b) % policy.n_agents
    draws = None if noise is None or deterministic else torch.from_numpy(
        np.ascontiguousarray(noise[..., :policy.order_width]).reshape(b * n, -1))
    actions, _ = policy.act(torch.from_numpy(flat), agent_idx=agents,
                            deterministic=deterministic, noise=draws)
    return actions.cpu().numpy().reshape(b, n, -1)


def order_noise(battles: MultiBattalionBatch, formations: bool) -> np.ndarray:
    """The battles' keyed draws of this step for a sampling commander: (B, U, 3)
    :meth:`~envs.battles.multi_battalion_batch.MultiBattalionBatch.action_noise`, and with
    ``formations`` the (B, U, 1) ``formation_noise`` after them."""
    noise = battles.action_noise()
    if not formations:
        return noise
    return np.concatenate((noise, battles.formation_noise()), axis=2)


def put_orders(orders: np.ndarray, formations: np.ndarray, index: Any,
               actions: np.ndarray) -> None:
    """Write :func:`team_actions`' ``actions`` into a step's buffers at ``index``: the
    first three numbers into ``orders`` (B, U, 3), the formation code, when there is
    one, into ``formations`` (B, U) int8 (otherwise :data:`KEEP_FORMATION`)."""
    orders[index] = actions[..., :ACTION_DIM]
    formations[index] = actions[..., ACTION_DIM] if actions.shape[-1] > ACTION_DIM \
        else KEEP_FORMATION


def step_team(battles: MultiBattalionBatch, orders: np.ndarray, formations: np.ndarray):
    """Step ``battles`` with (B, U, 3) ``orders`` and (B, U) ``formations``; the formation
    orders reach the engine only in battles with an order of battle (infantry in line
    keeps every formation, as it always has)."""
    if battles.order_of_battle is None:
        return battles.step(orders)
    return battles.step(orders, formations)


class PolicyCommander:
    """A MAPPO policy (or any :func:`team_actions` policy) commanding some battalions of
    a :class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`: the batched commander
    of :class:`~envs.remote.batch_env.MultiBattalionBatchEnv`.

    Sampled orders use the battles' keyed draws, so a battle is played the same in
    any batch and on any worker. Pickling keeps a MAPPO policy's constructor
    arguments and weights only (what the Ray object store carries to workers).

    Args:
        policy: a :class:`~models.mappo_policy.MAPPOPolicy`, or a battalion commander
            with ``predict``.
        deterministic: act on the policy's mean instead of sampling.
    """

    def __init__(self, policy: Any, deterministic: bool = False) -> None:
        self.policy = policy
        self.deterministic = bool(deterministic)

    def __call__(self, battles: MultiBattalionBatch, units: np.ndarray) -> np.ndarray:
        """(B, len(units), width) orders of ``units`` in each unit's own frame
        (:func:`team_actions`: 3 numbers, and the formation code for a policy with a
        formation head)."""
        formations = bool(getattr(self.policy, "formation_orders", False))
        noise = None if self.deterministic else order_noise(battles, formations)[:, units]
        return team_actions(self.policy, battles.observation[:, units], self.deterministic,
                            noise)

    def __getstate__(self) -> dict[str, Any]:
        if isinstance(self.policy, MAPPOPolicy):
            weights = {name: tensor.cpu() for name, tensor in self.policy.state_dict().items()}
            return {"kwargs": self.policy.kwargs, "state_dict": weights,
                    "deterministic": self.deterministic}
        return {"policy": self.policy, "deterministic": self.deterministic}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.deterministic = state["deterministic"]
        if "policy" in state:
            self.policy = state["policy"]
            return
        self.policy = MAPPOPolicy(**state["kwargs"])
        self.policy.load_state_dict(state["state_dict"])
        self.policy.eval()


def is_team_policy(commander: Any) -> bool:
    """Whether ``commander`` is a MAPPO-style policy (``act``) rather than a battalion
    commander (``predict``)."""
    return callable(getattr(commander, "act", None))


DOCTRINE_TEAM = DisciplinedCommander()
"""The disciplined doctrine commanding every battalion of a team (Elo anchor
``doctrine_team``), on the default map."""


def play_team_battles(policy: Any, opponent: Any, *, n_blue: int = 2, n_red: int = 2,
                      n_episodes: int = 20, deterministic: bool = True,
                      opponent_deterministic: bool = False, seed: int | None = None,
                      env_kwargs: dict[str, Any] | None = None,
                      order_of_battle: Any = None) -> np.ndarray:
    """Play ``n_episodes`` battles at once, ``policy`` commanding Blue.

    Checks the arguments, then :func:`~training.common.play.play` with
    :class:`TeamSettings`.

    Args:
        policy: Blue's commander: a :class:`~models.mappo_policy.MAPPOPolicy`, or a batch
            commander with ``orders(battles, units)`` (a scripted doctrine, e.g.
            :class:`~envs.play.commanders.CombinedArmsRed`).
        opponent: Red's commander: a scripted level (int 1..5), a MAPPOPolicy, a
            battalion commander with ``predict`` (:data:`DOCTRINE_TEAM`) or a batch
            commander with ``orders(battles, units)``
            (:class:`~envs.play.commanders.RedCommander`, e.g. the combined-arms
            doctrine, :class:`~envs.play.commanders.CombinedArmsRed`).
        n_blue, n_red: battalions a side.
        n_episodes: battles (>= 1); battle ``i`` is episode 0 of seed ``seed + i``, and
            sampled orders use each battle's keyed draws (torch's generator is not
            touched), so a seed always gives the same outcomes, and battle ``i`` has
            the same outcome in any split of the episodes (the league's matches on Ray).
        deterministic: Blue acts on the mean of its policy.
        opponent_deterministic: the same for a policy opponent.
        seed: base seed (0 when None).
        env_kwargs: further MultiBattalionEnv settings (map size, max_steps, ...).
        order_of_battle: each unit's arm, formation and quality (None: infantry in line),
            as :func:`make_team_battles` takes it.

    Returns:
        (n_episodes,) int8 outcomes from Blue's side: 1 won, 0 drawn, -1 lost.
    """
    n_episodes = check_int("n_episodes", n_episodes, minimum=1)
    _check_opponent("opponent", opponent)
    base = 0 if seed is None else check_int("seed", seed, minimum=0)
    return play(policy, opponent, n_episodes, base,
                TeamSettings(n_blue, n_red, env_kwargs, deterministic, opponent_deterministic,
                             order_of_battle))


def play_team_matches(policy: Any, opponents: Mapping[str, Any], *, n_blue: int = 2,
                      n_red: int = 2, n_episodes: int = 20, deterministic: bool = True,
                      opponent_deterministic: bool = False, seed: int | None = None,
                      env_kwargs: dict[str, Any] | None = None,
                      order_of_battle: Any = None) -> dict[str, np.ndarray]:
    """Each opponent's outcomes of :func:`play_team_battles` with the same arguments,
    every match played in one batch of ``len(opponents) * n_episodes`` battles.

    A battle's outcome depends on its seed alone (keyed draws, inference in whole row
    blocks), so the outcomes are those of playing each match on its own; one batch
    steps the field, and runs Blue's policy, once a step for all the matches instead
    of once a step for each.

    Args:
        policy: Blue's commander, as :func:`play_team_battles` takes it.
        opponents: name -> Red's commander, as :func:`play_team_battles` takes it.
        n_blue, n_red, n_episodes, deterministic, opponent_deterministic, seed,
            env_kwargs, order_of_battle: as :func:`play_team_battles`; battle ``i`` of
            every match is episode 0 of seed ``seed + i``.

    Returns:
        name -> (n_episodes,) int8 outcomes from Blue's side, in ``opponents``' order
        (empty when ``opponents`` is).

    Raises:
        TypeError, ValueError: for an invalid opponent (named by its key) or count.
    """
    n_episodes = check_int("n_episodes", n_episodes, minimum=1)
    for name, opponent in opponents.items():
        _check_opponent(f"opponents[{name!r}]", opponent)
    base = 0 if seed is None else check_int("seed", seed, minimum=0)
    if not opponents:
        return {}
    names = list(opponents)
    outcomes = play(policy, [opponents[name] for name in names], len(names) * n_episodes,
                    base, _Matches(TeamSettings(n_blue, n_red, env_kwargs, deterministic,
                                                opponent_deterministic, order_of_battle),
                                   n_episodes))
    return {name: outcomes[k * n_episodes:(k + 1) * n_episodes]
            for k, name in enumerate(names)}


def record_team_battle(policy: Any, opponent: Any, *, n_blue: int = 2, n_red: int = 2,
                       seed: int = 0, deterministic: bool = True,
                       env_kwargs: dict[str, Any] | None = None, order_of_battle: Any = None,
                       metadata: dict[str, Any] | None = None) -> Replay:
    """Play battle ``seed`` of :func:`play_team_battles` (the same battle, the same
    outcome) and record every step of it for the replay viewer
    (:func:`envs.rendering.write_replay_html`): formations, fire and melee included.

    Args:
        policy, opponent, n_blue, n_red, deterministic, env_kwargs, order_of_battle: as
            :func:`play_team_battles` takes them (a sampling opponent policy samples).
        seed: the battle's seed (>= 0).
        metadata: notes stored with the replay; the outcome (``blue``, ``red`` or
            ``draw``) and the steps are added.

    Raises:
        TypeError, ValueError: for an invalid opponent or seed (named).
    """
    _check_opponent("opponent", opponent)
    seed = check_int("seed", seed, minimum=0)
    battles = _TeamBattles(policy, [opponent], 1, seed, TeamSettings(
        n_blue, n_red, env_kwargs, deterministic, False, order_of_battle))
    batch = battles.battles
    recorder = ReplayRecorder(batch.state, 0, batch.config.map_width, batch.config.map_height,
                              {"seed": seed, **(metadata or {})})
    over = False
    while not over:
        over = bool(battles.step()[0])
        recorder.record(batch.state, batch.last_events)
    outcome = {WIN: "blue", LOSS: "red", DRAW: "draw"}[int(battles.outcomes()[0])]
    return recorder.finish(outcome=outcome, steps=recorder.n_steps)


def _check_opponent(field: str, opponent: Any) -> None:
    """Raise unless ``opponent`` is a Red commander :func:`play_team_battles` takes."""
    if _is_level(opponent):
        check_scripted_level(field, opponent)
    elif not (is_team_policy(opponent) or is_batch_commander(opponent)
              or callable(getattr(opponent, "predict", None))):
        raise TypeError(f"{field}={opponent!r} is invalid: expected a scripted level 1..5, "
                        "a MAPPOPolicy, a battalion commander with predict (DOCTRINE_TEAM) "
                        "or a batch commander with orders(battles, units)")


def _is_level(opponent: Any) -> bool:
    """Whether Red is a scripted level rather than a policy."""
    return isinstance(opponent, (int, np.integer)) and not isinstance(opponent, bool)


def is_batch_commander(opponent: Any) -> bool:
    """Whether a commander gives a whole batch's orders itself
    (:class:`~envs.play.commanders.RedCommander`: ``orders(battles, units)``)."""
    return callable(getattr(opponent, "orders", None)) and not is_team_policy(opponent)


@dataclass(frozen=True)
class TeamSettings:
    """How N-vs-M battles are played: one :class:`MultiBattalionBatch` in which Blue is a
    MAPPO policy and Red a scripted level (int 1..5) or a MAPPO policy.

    Battalion ``i`` of a side acts with its policy's actor ``i mod n_agents``.
    Sampled orders use the battles' keyed draws
    (:meth:`~envs.battles.multi_battalion_batch.MultiBattalionBatch.action_noise`), so a
    battle's outcome depends on its seed only.

    Attributes:
        n_blue, n_red: battalions a side.
        env_kwargs: further MultiBattalionEnv settings (map size, max_steps, ...).
        deterministic: Blue acts on its policy's mean.
        red_deterministic: the same for a policy Red.
        order_of_battle: each unit's arm, formation and quality (None: infantry in line).
    """

    n_blue: int = 2
    n_red: int = 2
    env_kwargs: Mapping[str, Any] | None = None
    deterministic: bool = True
    red_deterministic: bool = False
    order_of_battle: Any = None

    @contextmanager
    def battles(self, blue: Any, red: Any, n: int, seed: int) -> Iterator[_TeamBattles]:
        """``n`` battles of ``blue`` against ``red``, battle ``i`` seeded ``seed + i``."""
        yield _TeamBattles(blue, [red], n, seed, self)


@dataclass(frozen=True)
class _Matches:
    """How :func:`play_team_matches` plays: the matches of several Red commanders (the
    list :func:`~training.common.play.play` passes as ``red``) as one batch, battle
    ``k * n_episodes + i`` being battle ``i`` of match ``k``, seeded ``seed + i``."""

    team: TeamSettings
    n_episodes: int

    @contextmanager
    def battles(self, blue: Any, reds: list[Any], n: int, seed: int) -> Iterator[_TeamBattles]:
        yield _TeamBattles(blue, reds, self.n_episodes, seed, self.team)


class _TeamBattles:
    """The :class:`~training.common.play.Battles` of :class:`TeamSettings`: ``n_each``
    battles against each of ``reds`` (one batch, match after match), battle ``i`` of
    each seeded ``seed + i``."""

    def __init__(self, blue: Any, reds: list[Any], n_each: int, seed: int,
                 settings: TeamSettings) -> None:
        n_blue, n_red = settings.n_blue, settings.n_red
        n = n_each * len(reds)
        self.battles = make_team_battles(n, n_blue, n_red, settings.env_kwargs,
                                         order_of_battle=settings.order_of_battle)
        self.battles.reset(np.arange(n), [seed + i % n_each for i in range(n)],
                           np.zeros(n, np.int64))
        self.blue, self.settings = blue, settings
        self.blue_side, self.red_side = slice(0, n_blue), slice(n_blue, n_blue + n_red)
        self.blue_units, self.red_units = np.arange(n_blue), np.arange(n_blue, n_blue + n_red)
        matches = [slice(k * n_each, (k + 1) * n_each) for k in range(len(reds))]
        # One call gives every scripted Red its orders, a level a battle (the battles of
        # the other Reds get level 1's, which their own orders replace in step).
        scripted = [_is_level(red) for red in reds]
        self.levels = np.repeat([int(red) if is_level else 1
                                 for red, is_level in zip(reds, scripted, strict=True)],
                                n_each) if any(scripted) else None
        self.other_reds = [(red, rows) for red, rows, is_level
                           in zip(reds, matches, scripted, strict=True) if not is_level]
        self.formation_heads = any(getattr(commander, "formation_orders", False)
                                   for commander in (blue, *reds))
        self.actions = np.zeros((n, n_blue + n_red, ACTION_DIM), np.float32)
        self.formations = np.full((n, n_blue + n_red), KEEP_FORMATION, np.int8)
        self.scripted_formations = np.empty((n, n_red), np.int8)
        self.winner: np.ndarray | None = None

    def step(self) -> np.ndarray:
        observation = self.battles.observation
        noise = order_noise(self.battles, self.formation_heads)
        if is_batch_commander(self.blue):
            self._batch_orders(self.blue, slice(None), self.blue_units, self.blue_side)
        else:
            put_orders(self.actions, self.formations, (slice(None), self.blue_side),
                       team_actions(self.blue, observation[:, self.blue_side],
                                    self.settings.deterministic, noise[:, self.blue_side]))
        if self.levels is not None:
            self.actions[:, self.red_side] = self.battles.scripted_actions(
                self.red_units, self.levels, self.scripted_formations)
            self.formations[:, self.red_side] = self.scripted_formations
        for red, rows in self.other_reds:
            if is_batch_commander(red):
                self._batch_orders(red, rows, self.red_units, self.red_side)
                continue
            put_orders(self.actions, self.formations, (rows, self.red_side), team_actions(
                red, observation[rows, self.red_side], self.settings.red_deterministic,
                noise[rows, self.red_side]))
        result = step_team(self.battles, self.actions, self.formations)
        self.winner = result.winner
        return result.battle_over

    def outcomes(self) -> np.ndarray:
        return team_outcomes(self.winner)

    def _batch_orders(self, commander: Any, rows: slice, units: np.ndarray,
                      side: slice) -> None:
        """A batch commander's orders for ``units`` in the battles ``rows``."""
        orders, formations = commander.orders(self.battles, units)
        self.actions[rows, side] = orders[rows]
        self.formations[rows, side] = KEEP_FORMATION if formations is None else formations[rows]


__all__ = ["DOCTRINE_TEAM", "DRAW", "LOSS", "WIN", "PolicyCommander", "TeamSettings",
           "is_batch_commander", "is_team_policy", "make_team_battles", "order_noise",
           "play_team_battles", "play_team_matches", "put_orders", "record_team_battle", "score",
           "step_team", "team_actions"]
