"""Battles of many scenarios stepped as one batch for WFM-1: tokens in, orders out.

:class:`ScenarioBattles` holds a batch of battles for each of its scenarios
(:class:`~training.wfm1.scenarios.WFMScenario`, each a
:class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch` of its own size and
ground) and presents them as one: Blue's entity tokens of every battle padded to one
token count (:meth:`~ScenarioBattles.observe`), each battle's scenario card, and a
:meth:`~ScenarioBattles.step` that takes one order per token (three numbers, or four with
a formation code) and reports what ended (:class:`BattlesStep`); a finished battle starts
its next episode at once. Blue's teacher (the combined-arms doctrine playing an
:class:`~envs.commanders.arms_doctrine.ArmsPlan`, ``blue_plan``, or searching among
several, ``lookahead``) labels every step and commands Blue when no orders are given; Red
is the combined-arms doctrine or, scenario by scenario (``reds``), a frozen generalist.
:meth:`~ScenarioBattles.echelons` gives the brigade and division tokens of a generalist
that reads them. ``docs/wfm1.md`` ("Training") has the details.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from envs.battles.echelon_tokens import EchelonTokens
from envs.battles.entity_tokens import EntityView, entity_tokens
from envs.battles.multi_battalion_batch import BLUE, RED
from envs.battles.observation import ROTATE_SIGN
from envs.commanders.arms_doctrine import (
    ARMS_PLANS,
    DEFAULT_ATTACK_RULE,
    ArmsPlan,
    CombinedArmsDoctrine,
    check_arms_plan,
)
from envs.sim.constants import ACTION_DIM
from envs.sim.engine import check_formation_orders
from envs.sim.validation import check_bool, short_repr
from models.wfm1 import WFM1Batch, WFM1Policy
from training.common.play import team_outcomes
from training.wfm1.lookahead import Lookahead, PlanChoice, candidate, candidate_doctrine
from training.wfm1.scenarios import WFMScenario

F32 = np.float32


@dataclass(frozen=True)
class BattlesStep:
    """What one step of every battle did, (B,) arrays over all scenarios' battles."""

    reward: np.ndarray
    """Blue's team reward."""
    done: np.ndarray
    """Battles that ended (a new episode has begun in each)."""
    truncated: np.ndarray
    """Of those, battles cut off at ``max_steps`` undecided."""
    winner: np.ndarray
    """int8: 0 Blue won, 1 Red won, -1 no winner (yet, or a draw)."""
    doctrine_actions: np.ndarray | None = None
    """(B, n_tokens, 3) Blue's teacher's order for each own token of the last
    :meth:`ScenarioBattles.observe` (zero elsewhere), whoever commanded Blue: the
    demonstration when Blue followed the doctrine, the teacher's label in the states the
    generalist reached otherwise; None without an observation. With
    ``ScenarioBattles(formation_orders=True)`` (B, n_tokens, 4): the doctrine's formation
    order (-1 keep, 0 line, ...) last."""


class ScenarioBattles:
    """``battles_per_scenario`` battles of each of ``scenarios`` (module docstring).

    Args:
        scenarios: the settings, one batch each.
        battles_per_scenario: battles of each.
        max_steps: steps after which a battle is a draw.
        seed: battle ``i`` of scenario ``k`` starts from seed ``seed + k * battles + i``,
            or from the scenario's own seed when ``seed`` is None (every battle of the
            scenario then differs only by its episode chain).
        formation_orders: label the doctrine's formation orders too:
            :attr:`BattlesStep.doctrine_actions` get a fourth number, the formation code
            (what a generalist with a formation head imitates). :meth:`step` takes
            orders of three or four numbers either way.
        reds: Red's commander in each scenario: None, the combined-arms doctrine, or a
            frozen :class:`~models.wfm1.WFM1Policy` (self-play; module docstring). None
            (the default): the doctrine everywhere.
        blue_plan: how Blue's teacher (the doctrine whose orders label each step and
            command Blue without orders) uses its arms: an ArmsPlan, or a candidate's name
            (:func:`~training.wfm1.lookahead.candidate`: a plan of ARMS_PLANS, perhaps
            with an attack rule after a ``+``, ``"line+always"``); None: the doctrine's
            own plan and rule, as Red's.
        lookahead: Blue's teacher chooses, battle by battle, among candidate plans by
            playing each ahead on a copy of the battles
            (:class:`~training.wfm1.lookahead.Lookahead`); None: it plays ``blue_plan``.

    Raises:
        ValueError: for no scenario, fewer than one battle each, or ``reds`` of another
            length than ``scenarios``.
        TypeError: for a ``formation_orders`` that is not a bool, a Red that is
            neither None nor a WFM1Policy, or a ``blue_plan`` that is neither an
            ArmsPlan nor a name.
        ValueError: for a ``blue_plan`` name of an unknown plan or rule.
        ValueError: for both a ``blue_plan`` and a ``lookahead`` (its candidates are the
            plans).
    """

    def __init__(self, scenarios: list[WFMScenario], battles_per_scenario: int,
                 max_steps: int, seed: int | None = 0, formation_orders: bool = False,
                 reds: Sequence[WFM1Policy | None] | None = None,
                 blue_plan: ArmsPlan | str | None = None,
                 lookahead: Lookahead | None = None) -> None:
        if not scenarios:
            raise ValueError("scenarios=[] is invalid: expected at least one WFMScenario")
        if not isinstance(battles_per_scenario, int) or battles_per_scenario < 1:
            raise ValueError(f"battles_per_scenario={battles_per_scenario!r} is invalid: "
                             "expected an integer >= 1")
        if isinstance(blue_plan, str):
            try:
                plan_name, rule = candidate(blue_plan)
            except ValueError as error:
                raise ValueError(f"blue_plan={blue_plan!r} is invalid: {error}") from None
            plan = ARMS_PLANS[plan_name]
        else:
            plan, rule = check_arms_plan(blue_plan), None
        rule = rule or DEFAULT_ATTACK_RULE
        self.formation_orders = check_bool("formation_orders", formation_orders)
        self.label_width = ACTION_DIM + self.formation_orders
        """Numbers in each of :attr:`BattlesStep.doctrine_actions`' labels."""
        self.scenarios = list(scenarios)
        self.per = n = battles_per_scenario
        self.batches = []
        for k, scenario in enumerate(self.scenarios):
            batch = scenario.battles(n, max_steps)
            base = scenario.seed if seed is None else seed + k * n
            batch.reset(np.arange(n), [base + i for i in range(n)], np.zeros(n, np.int64))
            self.batches.append(batch)
        self.doctrines = [CombinedArmsDoctrine(b.config) for b in self.batches]
        """Red's doctrine in each scenario."""
        self.n_battles = n * len(self.scenarios)
        self.lookahead = lookahead
        if lookahead is None:
            self.teachers = (self.doctrines if (plan, rule) == (ArmsPlan(), DEFAULT_ATTACK_RULE)
                             else [CombinedArmsDoctrine(b.config, rule, plan)
                                   for b in self.batches])
            """Blue's teacher in each scenario: Red's doctrine, the doctrine playing
            ``blue_plan``, or the lookahead's choice (:class:`~training.wfm1.lookahead.
            PlanChoice`)."""
        else:
            if not isinstance(lookahead, Lookahead):
                raise TypeError(f"lookahead={short_repr(lookahead)} is invalid: expected "
                                "None or a Lookahead")
            if blue_plan is not None:
                raise ValueError("blue_plan and lookahead are both given: expected one (the "
                                 "lookahead's candidates are Blue's plans)")
            self._candidates = [[candidate_doctrine(name, b.config) for b in self.batches]
                                for name in lookahead.plans]
            self.choice = np.zeros(self.n_battles, np.intp)
            """(B,) the candidate each battle's Blue teacher follows."""
            self.choice_steps = np.zeros(len(lookahead.plans), np.int64)
            """Battle steps each candidate was followed for, over this object's steps."""
            self.teachers = [PlanChoice([c[k] for c in self._candidates],
                                        self.choice[k * n:(k + 1) * n])
                             for k in range(len(self.scenarios))]
        self._steps = 0
        self.n_tokens = max(b.n_units for b in self.batches)
        self.cards = np.stack([np.repeat(s.card().to_tensor().numpy()[None], n, axis=0)
                               for s in self.scenarios]).reshape(self.n_battles, -1)
        """(B, CARD_DIM) each battle's scenario card."""
        self.view: EntityView | None = None
        self.reds: list[WFM1Policy | None] = self._check_reds(reds)
        """Red's commander in each scenario: None (the doctrine) or a frozen generalist."""
        self.red_cards = np.stack([np.repeat(s.card(RED).to_tensor().numpy()[None], n, axis=0)
                                   for s in self.scenarios]).reshape(self.n_battles, -1)
        """(B, CARD_DIM) each battle's scenario card seen from Red's side (what a
        generalist commanding Red is told)."""

    def _check_reds(self, reds: Sequence[WFM1Policy | None] | None) -> list[WFM1Policy | None]:
        if reds is None:
            return [None] * len(self.scenarios)
        reds = list(reds)
        if len(reds) != len(self.scenarios):
            raise ValueError(f"reds has {len(reds)} commanders: expected one per scenario "
                             f"({len(self.scenarios)}), None for the doctrine")
        for k, red in enumerate(reds):
            if red is not None and not isinstance(red, WFM1Policy):
                raise TypeError(f"reds[{k}]={short_repr(red)} is invalid: expected None (the "
                                "doctrine) or a WFM1Policy")
        return reds

    @property
    def red_is_policy(self) -> np.ndarray:
        """(B,) bool: the battles whose Red is a generalist (self-play), not the doctrine."""
        return np.repeat([red is not None for red in self.reds], self.per)

    def red_orders(self) -> dict[int, tuple[tuple[np.ndarray, np.ndarray], np.ndarray]]:
        """The orders of the policies commanding Red, for the battles as they stand:
        scenario -> ``((battle, unit) index of Red's own tokens, their orders (n, 3) or
        (n, 4))``, each policy run once over all its scenarios' battles, on its means (and
        likeliest formation), from Red's tokens and Red's card."""
        groups: dict[int, list[int]] = {}
        for k, red in enumerate(self.reds):
            if red is not None:
                groups.setdefault(id(red), []).append(k)
        out = {}
        for ks in groups.values():
            policy = self.reds[ks[0]]
            views = [entity_tokens(self.batches[k], RED, self.n_tokens) for k in ks]
            view = joined_view(views)
            cards = np.concatenate([self.red_cards[k * self.per:(k + 1) * self.per] for k in ks])
            tokens, pad, own = (torch.from_numpy(getattr(view, f)).to(policy.device)
                                for f in ("tokens", "pad_mask", "own_mask"))
            # Red's own brigades count from Red's first unit, after Blue's.
            first = np.repeat([self.batches[k].n_blue for k in ks], self.per)
            batch = WFM1Batch.trusted(tokens, pad, own, torch.from_numpy(cards).to(
                policy.device), policy.echelon_context(view, first))
            with torch.no_grad():
                actions = policy.act(batch, deterministic=True)[0].cpu().numpy()
            for i, (k, part) in enumerate(zip(ks, views, strict=True)):
                battle, token = np.nonzero(part.own_mask)
                out[k] = ((battle, part.unit[battle, token]),
                          actions[i * self.per:(i + 1) * self.per][battle, token])
        return out

    def observe(self) -> EntityView:
        """Blue's tokens of every battle, padded to :attr:`n_tokens` (kept as :attr:`view`
        for the next :meth:`step`)."""
        self.view = joined_view([entity_tokens(batch, BLUE, self.n_tokens)
                                 for batch in self.batches])
        return self.view

    def echelons(self, policy: WFM1Policy) -> EchelonTokens | None:
        """The brigade and division tokens ``policy`` reads beside Blue's tokens of the last
        :meth:`observe` (:meth:`~models.wfm1.WFM1Policy.echelon_context`), or None for a
        policy without ``echelon_tokens``.

        Raises:
            RuntimeError: before :meth:`observe`.
        """
        if self.view is None:
            raise RuntimeError("echelons() called before observe(): they group its tokens")
        return policy.echelon_context(self.view)

    def step(self, actions: np.ndarray | None) -> BattlesStep:
        """Step every battle once with ``actions`` (B, n_tokens, 3) or (B, n_tokens, 4):
        the order of the unit of each own token of the last :meth:`observe`, and with a
        fourth number the unit's formation order (-1 keep, 0 line, ...), which replaces
        the drill's; None: Blue's units follow their teacher (:attr:`teachers`; the
        scripted baseline). Red follows the doctrine, or its scenario's policy
        (:attr:`reds`) either way.

        Raises:
            RuntimeError: before :meth:`observe` (with actions).
            ValueError: for actions of another shape, or an own token's formation code
                that is not one.
        """
        if actions is not None and self.view is None:
            raise RuntimeError("step() called before observe(): the actions are per token")
        actions = None if actions is None else np.asarray(actions, F32)
        shape = (self.n_battles, self.n_tokens)
        if actions is not None:
            if actions.shape not in ((*shape, ACTION_DIM), (*shape, ACTION_DIM + 1)):
                raise ValueError(f"actions of shape {actions.shape} are invalid: expected "
                                 f"{(*shape, ACTION_DIM)}, or {(*shape, ACTION_DIM + 1)} "
                                 "with each unit's formation code last")
            if actions.shape[2] > ACTION_DIM:  # the own units' codes, before any battle steps
                codes = actions[..., ACTION_DIM][self.view.own_mask]
                check_formation_orders(f"actions[..., {ACTION_DIM}] (the formation codes)",
                                       codes[None], (1, len(codes)))
        taught = None
        if self.view is not None:
            taught = np.zeros((*shape, self.label_width), F32)
        reward = np.zeros(self.n_battles, F32)
        done = np.zeros(self.n_battles, bool)
        truncated = np.zeros(self.n_battles, bool)
        winner = np.full(self.n_battles, -1, np.int8)
        if self.lookahead is not None:
            if self._steps % self.lookahead.every == 0:
                self.choice[:] = self.look_ahead(self._candidates, self.lookahead.horizon)[0]
            self.choice_steps += np.bincount(self.choice, minlength=len(self.choice_steps))
        self._steps += 1
        red_orders = self.red_orders() if any(red is not None for red in self.reds) else {}
        for k, (batch, doctrine) in enumerate(zip(self.batches, self.doctrines, strict=True)):
            rows = slice(k * self.per, (k + 1) * self.per)
            orders, formations = doctrine.orders(batch.state, batch.geometry)
            teacher = self.teachers[k]
            if teacher is not doctrine:  # Blue's units take its orders, Red's keep the doctrine's
                blue = batch.team == BLUE
                taught_orders, taught_formations = teacher.orders(batch.state, batch.geometry)
                orders[:, blue], formations[:, blue] = (taught_orders[:, blue],
                                                        taught_formations[:, blue])
            orders[..., 1] *= ROTATE_SIGN[batch.team]  # the doctrine's are on the map
            if self.view is not None:
                battle, token = np.nonzero(self.view.own_mask[rows])
                units = self.view.unit[rows][battle, token]
                taught[rows][battle, token, :ACTION_DIM] = orders[battle, units]
                if self.formation_orders:
                    taught[rows][battle, token, ACTION_DIM] = formations[battle, units]
                if actions is not None:
                    put_token_orders(orders, formations, (battle, units),
                                     actions[rows][battle, token])
            if k in red_orders:  # over the doctrine's orders for Red, after Blue's labels
                put_token_orders(orders, formations, *red_orders[k])
            result = batch.step(orders, formations)
            reward[rows] = result.team_reward.total[BLUE * self.per:(BLUE + 1) * self.per]
            over = result.battle_over
            done[rows], winner[rows] = over, result.winner
            truncated[rows] = over & (result.winner < 0) & result.truncated.any(axis=1)
            if over.any():
                batch.next_episode(np.flatnonzero(over))
        self.view = None
        return BattlesStep(reward, done, truncated, winner, taught)

    def look_ahead(self, candidates: list[list], horizon: int) -> tuple[np.ndarray, np.ndarray]:
        """Each candidate teacher played ``horizon`` steps ahead on a copy of the battles
        (the lookahead's search, :mod:`training.wfm1.lookahead`); the battles are not
        changed.

        Parameters:
            candidates: per candidate, Blue's teacher in each scenario.
            horizon: steps played ahead.

        Returns:
            ``(choice, scores)``: (B,) the best candidate of each battle (the first of
            equals) and (candidates, B) each one's Blue reward summed over the steps, or
            until the battle ended.
        """
        scores = np.zeros((len(candidates), self.n_battles))
        for k, teachers in enumerate(candidates):
            twin = self.copy(teachers)
            alive = np.ones(self.n_battles, bool)
            for _ in range(horizon):
                result = twin.step(None)
                scores[k] += alive * result.reward
                alive &= ~result.done
                if not alive.any():
                    break
        return np.argmax(scores, axis=0), scores

    def copy(self, teachers: list) -> ScenarioBattles:
        """A copy of the battles as they stand, to play ahead on: Blue's teacher in each
        scenario ``teachers``, no view (its steps label nothing), no lookahead of its own;
        Red's commanders are shared, the batches' step observers (a replay recorder) are
        left behind."""
        twin = copy.copy(self)
        twin.batches = []
        for batch in self.batches:
            observers, batch.step_observers = batch.step_observers, []
            try:
                twin.batches.append(copy.deepcopy(batch))
            finally:
                batch.step_observers = observers
        twin.teachers, twin.view, twin.lookahead = teachers, None, None
        return twin


def put_token_orders(orders: np.ndarray, formations: np.ndarray, index: tuple,
                     actions: np.ndarray) -> None:
    """Write own tokens' ``actions`` (n, 3) or (n, 4) into the units' step buffers at
    ``index`` (their battles and units): the first three numbers into ``orders`` (B, U,
    3); a fourth, the formation code, into ``formations`` (B, U), whose entries (the
    drill's orders) it replaces; with three numbers ``formations`` is left as it is."""
    orders[index] = actions[:, :ACTION_DIM]
    if actions.shape[1] > ACTION_DIM:
        formations[index] = actions[:, ACTION_DIM]


ECHELON_KEYS = ("brigade", "brigade_pad", "division", "division_pad")
"""The fields of :class:`~envs.battles.echelon_tokens.EchelonTokens` a rollout or the warm
start's demonstrations keep."""


def echelon_rows(rows: Mapping[str, Any], brigade_size: int) -> EchelonTokens | None:
    """The brigade and division tokens among stored ``rows`` (a rollout's, a minibatch's:
    :data:`ECHELON_KEYS` -> arrays or tensors), or None when they hold none."""
    if ECHELON_KEYS[0] not in rows:
        return None
    return EchelonTokens(*(rows[key] for key in ECHELON_KEYS), brigade_size)


def joined_view(views: Sequence[EntityView]) -> EntityView:
    """Several batches' views of one token count as one view, their rows in turn."""
    return EntityView(*(np.concatenate([getattr(v, f) for v in views])
                        for f in ("tokens", "pad_mask", "own_mask", "unit")))


def mean_orders(battles: ScenarioBattles, view: EntityView, policy: WFM1Policy) -> np.ndarray:
    """Blue's orders in ``view`` (the battles' last :meth:`~ScenarioBattles.observe`), every
    unit on ``policy``'s mean (its likeliest formation with a formation head; its side's
    brigade and division tokens with ``echelon_tokens``): (B, n_tokens, order_width) for
    :meth:`~ScenarioBattles.step`."""
    device = policy.device
    with torch.no_grad():
        batch = WFM1Batch.trusted(*(torch.from_numpy(a).to(device) for a in (
            view.tokens, view.pad_mask, view.own_mask, battles.cards)),
            echelons=battles.echelons(policy))
        return policy.act(batch, deterministic=True)[0].cpu().numpy()


def play_out(battles: ScenarioBattles, policy: WFM1Policy | None) -> np.ndarray:
    """Play the first episode of every battle of ``battles`` to its end, every Blue unit
    on ``policy``'s mean (:func:`mean_orders`; None: Blue under its teacher,
    :attr:`ScenarioBattles.teachers`).

    Returns:
        ``(n_battles,)`` int8 outcomes: 1 won, 0 drawn, -1 lost.
    """
    outcome = np.zeros(battles.n_battles, np.int8)
    over = np.zeros(battles.n_battles, bool)
    if policy is not None:
        policy.eval()
    while not over.all():
        actions = None if policy is None else mean_orders(battles, battles.observe(), policy)
        result = battles.step(actions)
        ended = result.done & ~over
        outcome[ended] = team_outcomes(result.winner[ended])
        over |= result.done
    return outcome


__all__ = ["BattlesStep", "ECHELON_KEYS", "ScenarioBattles", "echelon_rows", "joined_view",
           "mean_orders", "play_out", "put_token_orders"]
