"""Division battles in a batch: one operational command per brigade.

:class:`DivisionBatch` plays ``n_battles`` battles of a
:class:`~envs.echelons.brigade_batch.BrigadeBatch` whose Blue battalions are grouped in
brigades of ``n_blue_per_brigade``. Its action gives each Blue brigade one of the
:data:`DIVISION_COMMANDS`; one division step is one brigade macro step. Each brigade's
brigadier passes the command on to its battalions: as the matching drill for every
battalion, or, with a frozen ``blue_brigade_policy``, as the drill he chooses for each
battalion among those the command allows (:data:`COMMAND_DRILLS`). Red's battalions are
commanded as the brigade batch's are, by a frozen Red ``brigade_policy``, or, in the
battles where one is dealt, by a frozen Red division commander
(:attr:`DivisionBatch.red_commanders`), each side in its own frame. The observation is
:func:`division_observations` (:func:`division_obs_dim` numbers); reward and termination
are the brigade batch's. ``docs/echelons.md`` ("The division commander") has the details.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from envs.battles.multi_battalion_batch import BLUE, RED
from envs.echelons.brigade_batch import (
    THREAT_NAMES,
    BrigadeBatch,
    EchelonBatch,
    MacroStep,
    RedCommanders,
    brigade_observations,
    own_frame_x,
    sector_shares,
    threats,
)
from envs.options import MacroAction

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
_M = MacroAction
COMMAND_DRILLS = {
    "advance_theatre": (_M.ADVANCE_SECTOR, _M.FLANK_LEFT, _M.FLANK_RIGHT),
    "hold_position": (_M.DEFEND_POSITION, _M.CONCENTRATE_FIRE),
    "envelop_left": (_M.FLANK_LEFT, _M.ADVANCE_SECTOR),
    "envelop_right": (_M.FLANK_RIGHT, _M.ADVANCE_SECTOR),
    "strategic_withdrawal": (_M.WITHDRAW, _M.DEFEND_POSITION),
    "mass_fires": (_M.CONCENTRATE_FIRE, _M.ADVANCE_SECTOR),
}
"""The drills a brigadier under a frozen brigade policy may give under each command: an
advance is an advance (straight or by a flank), never standing to fire."""
ALLOWED = np.zeros((len(DIVISION_COMMANDS), len(MacroAction)), bool)
for _row, _name in enumerate(DIVISION_COMMANDS):
    ALLOWED[_row, list(COMMAND_DRILLS[_name])] = True


def division_obs_dim(n_brigades: int) -> int:
    """Length of the division observation of ``n_brigades`` Blue brigades."""
    return N_THEATRE_SECTORS + 8 * n_brigades + 1


BRIGADE_SUMMARY = ("strength", "morale", "in_fight_share")
"""A Blue brigade's summary in the division observation: mean strength and morale over its
battalions in the fight, and the share of them still in it."""


def division_observation_features(n_brigades: int) -> tuple[str, ...]:
    """Names of the division observation's entries for ``n_brigades`` Blue brigades, in the
    order :func:`division_observations` writes them (:func:`division_obs_dim` of them): the
    strips' own shares (west first), each brigade's :data:`BRIGADE_SUMMARY`, each one's
    nearest enemy brigade (:data:`~envs.echelons.brigade_batch.THREAT_NAMES`), the time
    fraction."""
    return (*(f"sector_{k}_own_share" for k in range(N_THEATRE_SECTORS)),
            *(f"brigade_{i}_{name}" for i in range(n_brigades) for name in BRIGADE_SUMMARY),
            *(f"brigade_{i}_enemy_{name}" for i in range(n_brigades) for name in THREAT_NAMES),
            "time_fraction")


def _brigade_means(values: np.ndarray, active: np.ndarray) -> np.ndarray:
    """(B, n) means over each brigade's battalions in the fight of (B, n, per) values."""
    count = active.sum(axis=2)
    return np.where(count > 0, (values * active).sum(axis=2) / np.maximum(count, 1), 0.0)


def division_observations(battles: Any, own: np.ndarray, enemy: np.ndarray,
                          side: int = BLUE) -> np.ndarray:
    """(B, division_obs_dim) ``side``'s division observations (``docs/echelons.md``) of a
    :class:`~envs.battles.multi_battalion_batch.MultiBattalionBatch`, in the side's own frame
    (:func:`~envs.echelons.brigade_batch.own_frame_x`); ``own`` and ``enemy`` are the two sides'
    brigades as (brigades, battalions) unit indices."""
    state, config = battles.state, battles.config
    x, y, active = own_frame_x(state.x, side, config.map_width), state.y, state.active
    standing = state.strength * active
    sectors = sector_shares(x, standing, battles.team == side, N_THEATRE_SECTORS,
                            config.map_width)

    def centres(units: np.ndarray) -> tuple[np.ndarray, ...]:
        here = active[:, units]
        return (_brigade_means(x[:, units], here), _brigade_means(y[:, units], here),
                _brigade_means(state.strength[:, units], here),
                _brigade_means(state.morale[:, units], here), here.any(axis=2), here)

    bx, by, bs, bm, b_any, b_here = centres(own)
    rx, ry, rs, rm, r_any, _ = centres(enemy)
    summary = np.stack([bs, bm, b_here.mean(axis=2)], axis=2)
    threat = threats(bx, by, b_any, rx, ry, rs, rm, r_any,
                     float(np.hypot(config.map_width, config.map_height)))
    summary[~b_any] = 0.0
    n = len(x)
    fraction = (state.step / config.max_steps).astype(F32)[:, None]
    return np.concatenate([sectors, summary.reshape(n, -1), threat.reshape(n, -1), fraction],
                          axis=1).astype(F32)


def drill_logits(model: Any, observation: np.ndarray) -> np.ndarray:
    """(N, n_battalions, n_drills) a frozen SB3 brigade commander's (``MultiDiscrete``
    PPO) preferences for each battalion's drill on (N, obs_dim) brigade observations."""
    policy = getattr(model, "policy", model)
    with torch.no_grad():
        distribution = policy.get_distribution(torch.as_tensor(observation, dtype=torch.float32))
    return torch.stack([d.logits for d in distribution.distribution], dim=1).cpu().numpy()


class DivisionBatch(EchelonBatch):
    """``n_battles`` division battles (module docstring).

    Args:
        brigades: the :class:`~envs.echelons.brigade_batch.BrigadeBatch` whose Blue side is
            ``n_brigades * n_blue_per_brigade`` battalions and Red side
            ``n_red_brigades * n_red_per_brigade``.
        n_brigades, n_blue_per_brigade, n_red_brigades, n_red_per_brigade: the brigades.
        brigade_policy: a frozen policy for Red's brigades, or None.
        blue_brigade_policy: a frozen SB3 brigade commander for each Blue brigade, or None.

    Raises:
        ValueError: if the brigades do not add up to the brigade batch's sides, or a
            frozen brigade policy does not fit (named).
    """

    def __init__(self, brigades: BrigadeBatch, n_brigades: int, n_blue_per_brigade: int,
                 n_red_brigades: int, n_red_per_brigade: int, *, brigade_policy: Any = None,
                 blue_brigade_policy: Any = None) -> None:
        if (brigades.n_blue, brigades.n_red) != (n_brigades * n_blue_per_brigade,
                                                 n_red_brigades * n_red_per_brigade):
            raise ValueError(f"brigades has {brigades.n_blue} Blue and {brigades.n_red} Red "
                             "battalions: expected n_brigades * n_blue_per_brigade and "
                             "n_red_brigades * n_red_per_brigade")
        if blue_brigade_policy is not None:
            space = getattr(blue_brigade_policy, "action_space", None)
            nvec = list(getattr(space, "nvec", []))
            if nvec != [len(MacroAction)] * n_blue_per_brigade:
                raise ValueError(f"blue_brigade_policy commands {nvec or space!r}: expected a "
                                 f"brigade commander of {n_blue_per_brigade} battalions "
                                 f"(MultiDiscrete [{len(MacroAction)}] * {n_blue_per_brigade})")
        self.brigades = brigades
        self.battles = brigades.battles
        self.n_battles = brigades.n_battles
        self.n_brigades, self.n_per = n_brigades, n_blue_per_brigade
        self.blue_groups = brigades.blue.reshape(n_brigades, n_blue_per_brigade)
        self.red_groups = brigades.red.reshape(n_red_brigades, n_red_per_brigade)
        self.brigade_policy = brigade_policy
        self.blue_brigade_policy = blue_brigade_policy
        mismatch = (blue_brigade_policy is not None and n_red_per_brigade != n_blue_per_brigade)
        self.red_commanders = RedCommanders(
            self.n_battles, len(DIVISION_COMMANDS), n_red_brigades,
            division_obs_dim(n_red_brigades),
            unavailable=f"Red's brigades of {n_red_per_brigade} cannot be commanded by the "
            f"frozen brigadier of {n_blue_per_brigade} battalions" if mismatch else None)
        """Frozen division commanders commanding Red in some battles
        (:meth:`~envs.echelons.brigade_batch.RedCommanders.deal`), in Red's own frame; their
        commands pass down Red's brigades as Blue's do."""
        self.commands = np.zeros((self.n_battles, n_brigades), np.intp)
        """(B, n_brigades) the last step's commands."""
        self.obs_dim = division_obs_dim(n_brigades)
        brigades.commander_view = self.observe

    # --- episodes -----------------------------------------------------------------

    def observe(self) -> np.ndarray:
        """(B, obs_dim) Blue's division observations."""
        return division_observations(self.battles, self.blue_groups, self.red_groups)

    # --- orders -------------------------------------------------------------------------

    def check_action(self, action: Any) -> np.ndarray:
        """``action`` as (B, n_brigades) command indices.

        Raises:
            ValueError: for a shape other than (B, n_brigades), or an index out of range.
        """
        return self._check_choices(action, self.n_brigades, len(DIVISION_COMMANDS), "command")

    def drills(self, commands: np.ndarray, side: int = BLUE) -> np.ndarray:
        """(B, n battalions) the drills of ``side``'s battalions under (B, brigades)
        ``commands``: the command's own drill, or the frozen brigadier's choice within
        it (``blue_brigade_policy``, the lower echelon of both sides, each in its own
        frame)."""
        groups = self.blue_groups if side == BLUE else self.red_groups
        if self.blue_brigade_policy is None:
            drill = np.array(list(DIVISION_COMMANDS.values()))[commands]
            return np.repeat(drill, groups.shape[1], axis=1)
        battles = self.battles
        views = np.stack([brigade_observations(battles, side, members) for members in groups],
                         axis=1)  # (B, brigades, D)
        logits = drill_logits(self.blue_brigade_policy, views.reshape(-1, views.shape[-1]))
        logits = logits.reshape(self.n_battles, len(groups), groups.shape[1], -1)
        allowed = ALLOWED[commands][:, :, None, :]
        return np.where(allowed, logits, -np.inf).argmax(axis=3).reshape(self.n_battles, -1)

    def side_view(self, side: int) -> np.ndarray:
        """(B, division_obs_dim) ``side``'s division observations, in its own frame."""
        own, enemy = ((self.blue_groups, self.red_groups) if side == BLUE
                      else (self.red_groups, self.blue_groups))
        return division_observations(self.battles, own, enemy, side)

    def red_drills(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Red's battalions' drills for this step, (B, n_red), and (B,) the battles they
        are given in: every battle's under the frozen Red ``brigade_policy`` (his free
        choice on all of Red's battalions), then those the dealt Red division
        commanders (:attr:`red_commanders`) command, passed down as Blue's commands are;
        None when Red's battalions command themselves everywhere."""
        brigades = self.brigades
        if self.brigade_policy is None and not self.red_commanders.assigned:
            return None
        drills = np.zeros((self.n_battles, brigades.n_red), np.intp)
        drilled = np.zeros(self.n_battles, bool)
        if self.brigade_policy is not None:
            views = brigade_observations(self.battles, RED)  # every battle at once
            chosen = np.asarray(self.brigade_policy.predict(views, deterministic=False)[0])
            drills[:] = chosen.reshape(self.n_battles, -1)[:, :brigades.n_red]
            drilled[:] = True
        if self.red_commanders.assigned:
            commanded = self.red_commanders.commanded
            commands = self.red_commanders.choices(self.side_view(RED))
            drills[commanded] = self.drills(commands, RED)[commanded]
            drilled |= commanded
        return drills, drilled

    # --- the division step ------------------------------------------------------------

    def step(self, action: Any) -> MacroStep:
        """One division step: each brigade's command passed on to its battalions (Red's
        too, where its echelon is commanded: :meth:`red_drills`); the brigade batch's
        macro step, with the division observation.

        Raises:
            ValueError: for an action that is not (B, n_brigades) command indices.
        """
        self.commands = self.check_action(action)
        red = self.red_drills()
        if red is None:
            return self.brigades.step(self.drills(self.commands))
        return self.brigades.step(self.drills(self.commands), *red)

    def infos(self, result: MacroStep, macro_steps: np.ndarray) -> list[dict[str, Any]]:
        """The Gymnasium info of each battle: the brigade batch's, the division steps and
        the last step's commands by name."""
        names = list(DIVISION_COMMANDS)
        return [{**info, "div_steps": info["macro_steps"],
                 "brigade_action": [names[c] for c in self.commands[b]]}
                for b, info in enumerate(self.brigades.infos(result, macro_steps))]


__all__ = ["ALLOWED", "BRIGADE_SUMMARY", "COMMAND_DRILLS", "DIVISION_COMMANDS", "DivisionBatch",
           "N_THEATRE_SECTORS", "division_obs_dim", "division_observation_features",
           "division_observations", "drill_logits"]
