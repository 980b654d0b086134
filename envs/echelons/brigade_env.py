"""A brigadier's battle: one decision gives every Blue battalion a drill (an option).

:class:`BrigadeEnv` (Gymnasium, ``brigade_v0``) is one battle of a
:class:`~envs.echelons.brigade_batch.BrigadeBatch` (which says what a macro step is, what the
brigadier sees and earns, and who commands the battalions): its action picks one
option of :func:`envs.options.make_default_options` for each Blue battalion, and a
step plays ``temporal_ratio`` battalion steps of them. An option whose initiation set
does not hold is not run (the battalion holds its position; the info's
``refused_options`` says so), and Blue's battalions may follow a frozen order-following
policy (``blue_policy``) instead of the drills. For many battles at once, for SB3, use
:class:`~envs.echelons.echelon_env.EchelonVecEnv` over a brigade batch
(:func:`make_brigade_vec_env`). ``docs/echelons.md`` ("The brigadier") has the design.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.battlefield import Battlefield
from envs.battles.multi_battalion_batch import bytes_per_battle
from envs.echelons.brigade_batch import (
    FALLBACK_OPTION,
    N_SECTORS,
    BrigadeBatch,
    brigade_obs_dim,
    brigade_observations,
)
from envs.echelons.echelon_env import EchelonEnv, EchelonVecEnv
from envs.options import Option, make_default_options
from envs.sim.constants import NUM_CURRICULUM_LEVELS
from envs.sim.validation import check_bool, check_count_fits, check_int, short_repr

F32 = np.float32


def check_policy(name: str, policy: Any, method: str) -> None:
    """None, or a frozen policy with a callable ``method`` (``predict`` for an SB3-style
    model, ``act`` for a MAPPO policy); ``TypeError`` naming ``name`` otherwise, before a
    battle is built rather than at the first step."""
    if policy is not None and not callable(getattr(policy, method, None)):
        raise TypeError(f"{name}={short_repr(policy)} is invalid: expected None or a policy "
                        f"with {method}()")


def make_brigade_batch(n_battles: int = 1, n_blue: int = 2, n_red: int = 2,
                       map_width: float | None = None, map_height: float | None = None,
                       max_steps: int | None = None, options: list[Option] | None = None,
                       temporal_ratio: int = 10, battalion_policy: Any = None,
                       red_random: bool = False, randomize_terrain: bool | None = None,
                       visibility_radius: float | None = None,
                       red_level: int = NUM_CURRICULUM_LEVELS,
                       blue_policy: Any = None,
                       hill_speed_factor: float | None = None, *,
                       battlefield: Battlefield | None = None) -> BrigadeBatch:
    """A :class:`~envs.echelons.brigade_batch.BrigadeBatch` from :class:`BrigadeEnv`'s settings
    (the default drills capped at ``temporal_ratio``).

    ``map_width``, ``map_height``, ``max_steps``, ``randomize_terrain``,
    ``visibility_radius`` and ``hill_speed_factor`` are the
    :class:`~envs.battlefield.Battlefield`'s settings: None leaves one to
    ``battlefield`` (or its default), and one given beside ``battlefield`` must agree
    with it.

    Raises:
        ValueError: for a setting out of range or contradicting ``battlefield`` (the
            message names it).
    """
    temporal_ratio = check_int("temporal_ratio", temporal_ratio, minimum=1)
    check_policy("battalion_policy", battalion_policy, "predict")
    check_policy("blue_policy", blue_policy, "act")
    if options is not None and not isinstance(options, (list, tuple)):
        raise TypeError(f"options={short_repr(options)} is invalid: expected None or a list "
                        "of envs.options.Option")
    options = list(options) if options is not None else make_default_options(
        max_steps=temporal_ratio)
    battlefield = Battlefield.from_kwargs(
        battlefield, map_width=map_width, map_height=map_height, max_steps=max_steps,
        randomize_terrain=randomize_terrain, visibility_radius=visibility_radius,
        hill_speed_factor=hill_speed_factor)
    n_battles = check_int("n_battles", n_battles, minimum=1)
    n_blue = check_int("n_blue", n_blue, minimum=1)
    n_red = check_int("n_red", n_red, minimum=1)
    # Both sides' battalions, named by the counts that make them, must fit.
    check_count_fits(f"n_battles (with n_blue + n_red = {n_blue + n_red:,} battalions)",
                     n_battles, bytes_per_battle(n_blue + n_red),
                     f"battles of {n_blue + n_red:,} battalions")
    return BrigadeBatch(
        n_battles, n_blue, n_red, battlefield=battlefield,
        config=battlefield.battle_config(), options=options, temporal_ratio=temporal_ratio,
        red_level=red_level, red_random=check_bool("red_random", red_random),
        battalion_policy=battalion_policy, blue_policy=blue_policy)


def make_brigade_vec_env(n_envs: int = 8, **settings: Any) -> EchelonVecEnv:
    """``n_envs`` brigade battles as one SB3 ``VecEnv``
    (:class:`~envs.echelons.echelon_env.EchelonVecEnv`); ``settings`` are
    :func:`make_brigade_batch`'s.

    Raises:
        ValueError: for a setting out of range (the message names it).
    """
    batch = make_brigade_batch(n_envs, **settings)
    return EchelonVecEnv(batch, len(batch.options), batch.n_blue)


class BrigadeEnv(EchelonEnv):
    """Command a brigade of ``n_blue`` battalions by drills (module docstring).

    Args:
        n_blue: Blue's battalions.
        n_red: Red's battalions.
        map_width: the field's width in metres.
        map_height: the field's height in metres.
        max_steps: the battle's length in primitive steps.
        options: the drills (default :func:`envs.options.make_default_options` capped at
            ``temporal_ratio`` steps).
        temporal_ratio: battalion steps a macro step lasts (fewer when the battle ends),
            and the default drills' cap.
        battalion_policy: a frozen policy commanding Red's battalions: anything with
            ``predict(observations (N, OBS_DIM), deterministic) -> (actions (N, 3), _)``
            (an SB3 model, a frozen MAPPO policy wrapped so); None uses scripted
            commanders of ``red_level``.
        red_random: Red gives random orders (ignored when ``battalion_policy`` is given).
        randomize_terrain: procedural ground at every reset, else open level ground.
        visibility_radius: how far a battalion sees, in metres.
            ``map_width``, ``map_height``, ``max_steps``, ``randomize_terrain`` and
            ``visibility_radius`` are the :class:`~envs.battlefield.Battlefield`'s
            settings (the defaults are its defaults); None leaves one to
            ``battlefield``.
        render_mode: None (no rendering).
        red_level: the scripted Red commanders' level (1 to 5).
        blue_policy: a frozen order-conditioned MAPPO policy commanding Blue's
            battalions, each following its drill as an order (:mod:`envs.commanders.orders`); None:
            the drills' own orders.
        battlefield: the map, clock, ground and sight as one value; a setting given
            beside it must agree with it.

    Raises:
        ValueError: for a setting out of range (the message names it).
    """

    metadata = {"render_modes": [], "name": "brigade_v0"}

    def __init__(self, n_blue: int = 2, n_red: int = 2, map_width: float | None = None,
                 map_height: float | None = None, max_steps: int | None = None,
                 options: list[Option] | None = None, temporal_ratio: int = 10,
                 battalion_policy: Any = None, red_random: bool = False,
                 randomize_terrain: bool | None = None, visibility_radius: float | None = None,
                 render_mode: str | None = None,
                 red_level: int = NUM_CURRICULUM_LEVELS, blue_policy: Any = None, *,
                 battlefield: Battlefield | None = None) -> None:
        super().__init__()
        if render_mode is not None:
            raise ValueError(f"render_mode={short_repr(render_mode)} is invalid: expected None")
        self.batch = make_brigade_batch(
            1, n_blue, n_red, map_width=map_width, map_height=map_height,
            max_steps=max_steps, options=options, temporal_ratio=temporal_ratio,
            battalion_policy=battalion_policy, red_random=red_random,
            randomize_terrain=randomize_terrain, visibility_radius=visibility_radius,
            red_level=red_level, blue_policy=blue_policy, battlefield=battlefield)
        self.temporal_ratio, self.options = self.batch.temporal_ratio, self.batch.options
        self.n_blue, self.n_red = self.batch.n_blue, self.batch.n_red
        self.battlefield, self.config = self.batch.battlefield, self.batch.config
        self._set_spaces(len(self.options), self.n_blue)


__all__ = ["BrigadeEnv", "FALLBACK_OPTION", "N_SECTORS", "brigade_obs_dim", "check_policy",
           "brigade_observations", "make_brigade_batch", "make_brigade_vec_env"]
