"""A division commander's battle: one operational command per brigade.

:class:`DivisionEnv` (Gymnasium, ``division_v0``) is one battle of a
:class:`~envs.echelons.division_batch.DivisionBatch`, which says what a command does, what the
division commander sees and earns, and how brigadiers (the commands' drills, or a
frozen brigade policy choosing within them) and Red are commanded. For many battles at
once, for SB3, use :func:`make_division_vec_env`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.battlefield import Battlefield
from envs.battles.multi_battalion_batch import bytes_per_battle
from envs.echelons.brigade_env import check_policy, make_brigade_batch
from envs.echelons.division_batch import (
    COMMAND_DRILLS,
    DIVISION_COMMANDS,
    N_THEATRE_SECTORS,
    DivisionBatch,
    division_obs_dim,
)
from envs.echelons.echelon_env import EchelonEnv, EchelonVecEnv
from envs.sim.constants import NUM_CURRICULUM_LEVELS
from envs.sim.validation import check_count_fits, check_int, short_repr

F32 = np.float32


def make_division_batch(n_battles: int = 1, n_brigades: int = 2, n_blue_per_brigade: int = 2,
                        n_red_brigades: int | None = None, n_red_per_brigade: int | None = None,
                        map_width: float | None = None, map_height: float | None = None,
                        max_steps: int | None = None, brigade_policy: Any = None,
                        red_random: bool = False, randomize_terrain: bool | None = None,
                        visibility_radius: float | None = None, temporal_ratio: int = 10,
                        red_level: int = NUM_CURRICULUM_LEVELS, blue_brigade_policy: Any = None,
                        blue_policy: Any = None,
                        hill_speed_factor: float | None = None, *,
                        battlefield: Battlefield | None = None) -> DivisionBatch:
    """A :class:`~envs.echelons.division_batch.DivisionBatch` from :class:`DivisionEnv`'s settings.

    ``map_width``, ``map_height``, ``max_steps``, ``randomize_terrain``,
    ``visibility_radius`` and ``hill_speed_factor`` are the
    :class:`~envs.battlefield.Battlefield`'s settings, as for
    :func:`~envs.echelons.brigade_env.make_brigade_batch`.

    Raises:
        ValueError: for a setting out of range or contradicting ``battlefield`` (the
            message names it).
    """
    n_brigades = check_int("n_brigades", n_brigades, minimum=1)
    n_per = check_int("n_blue_per_brigade", n_blue_per_brigade, minimum=1)
    # None (never 0 by truthiness) means "as many as Blue".
    n_red_brigades = check_int("n_red_brigades", n_brigades if n_red_brigades is None
                               else n_red_brigades, minimum=1)
    n_red_per = check_int("n_red_per_brigade", n_per if n_red_per_brigade is None
                          else n_red_per_brigade, minimum=1)
    check_policy("brigade_policy", brigade_policy, "predict")
    # The battalions of both sides, named by the four counts that make them, must fit.
    n_units = n_brigades * n_per + n_red_brigades * n_red_per
    check_count_fits("n_battles (with n_brigades x n_blue_per_brigade + n_red_brigades x "
                     f"n_red_per_brigade = {n_units:,} battalions)",
                     check_int("n_battles", n_battles, minimum=1), bytes_per_battle(n_units),
                     f"battles of {n_units:,} battalions")
    brigades = make_brigade_batch(
        n_battles, n_brigades * n_per, n_red_brigades * n_red_per, map_width=map_width,
        map_height=map_height, max_steps=max_steps, temporal_ratio=temporal_ratio,
        red_random=red_random, randomize_terrain=randomize_terrain,
        visibility_radius=visibility_radius, red_level=red_level, blue_policy=blue_policy,
        hill_speed_factor=hill_speed_factor, battlefield=battlefield)
    return DivisionBatch(brigades, n_brigades, n_per, n_red_brigades, n_red_per,
                         brigade_policy=brigade_policy, blue_brigade_policy=blue_brigade_policy)


def make_division_vec_env(n_envs: int = 8, **settings: Any) -> EchelonVecEnv:
    """``n_envs`` division battles as one SB3 ``VecEnv``, as
    :func:`~envs.echelons.brigade_env.make_brigade_vec_env` makes brigade battles;
    ``settings`` are :func:`make_division_batch`'s."""
    batch = make_division_batch(n_envs, **settings)
    return EchelonVecEnv(batch, len(DIVISION_COMMANDS), batch.n_brigades)


class DivisionEnv(EchelonEnv):
    """Command a division of ``n_brigades`` brigades (module docstring).

    Args:
        n_brigades: Blue's brigades.
        n_blue_per_brigade: the battalions of each Blue brigade.
        n_red_brigades: Red's brigades (default: as Blue's).
        n_red_per_brigade: the battalions of each Red brigade (default: as Blue's).
        map_width: the field's width in metres.
        map_height: the field's height in metres.
        max_steps: the battle's length.
        brigade_policy: a frozen policy for Red's brigades, or None for scripted Red.
        red_random: Red's battalions give random orders (no brigade policy).
        randomize_terrain: as the brigade env's.
        visibility_radius: as the brigade env's.
        render_mode: as the brigade env's.
        temporal_ratio: battalion steps a division step lasts.
        red_level: the scripted Red battalion commanders' level (1 to 5).
        blue_brigade_policy: a frozen SB3 brigade commander choosing each Blue brigade's
            drills within its command (:data:`~envs.echelons.division_batch.COMMAND_DRILLS`); None:
            every battalion runs the command's drill.
        blue_policy: a frozen order-conditioned battalion policy commanding Blue's
            battalions (as the brigade env's).
        battlefield: as the brigade env's; ``map_width``, ``map_height``,
            ``max_steps``, ``randomize_terrain`` and ``visibility_radius`` are its
            settings (None leaves one to ``battlefield``).

    Raises:
        ValueError: for a setting out of range (the message names it).
    """

    metadata = {"render_modes": [], "name": "division_v0"}

    def __init__(self, n_brigades: int = 2, n_blue_per_brigade: int = 2,
                 n_red_brigades: int | None = None, n_red_per_brigade: int | None = None,
                 map_width: float | None = None, map_height: float | None = None,
                 max_steps: int | None = None, brigade_policy: Any = None,
                 red_random: bool = False, randomize_terrain: bool | None = None,
                 visibility_radius: float | None = None,
                 render_mode: str | None = None, temporal_ratio: int = 10,
                 red_level: int = NUM_CURRICULUM_LEVELS, blue_brigade_policy: Any = None,
                 blue_policy: Any = None, *, battlefield: Battlefield | None = None) -> None:
        super().__init__()
        if render_mode is not None:
            raise ValueError(f"render_mode={short_repr(render_mode)} is invalid: expected None")
        self.batch = make_division_batch(
            1, n_brigades, n_blue_per_brigade, n_red_brigades, n_red_per_brigade,
            map_width=map_width, map_height=map_height, max_steps=max_steps,
            brigade_policy=brigade_policy, red_random=red_random,
            randomize_terrain=randomize_terrain, visibility_radius=visibility_radius,
            temporal_ratio=temporal_ratio, red_level=red_level,
            blue_brigade_policy=blue_brigade_policy, blue_policy=blue_policy,
            battlefield=battlefield)
        self.n_brigades, self.n_per = self.batch.n_brigades, self.batch.n_per
        self.brigades = self.batch.brigades
        self.battlefield, self.config = self.brigades.battlefield, self.brigades.config
        self._set_spaces(len(DIVISION_COMMANDS), self.n_brigades)

    def _state(self):
        return self.batch.battles.state


__all__ = ["COMMAND_DRILLS", "DIVISION_COMMANDS", "DivisionEnv", "N_THEATRE_SECTORS",
           "division_obs_dim", "make_division_batch", "make_division_vec_env"]
