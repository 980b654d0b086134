"""Play batches of N-vs-M battles between a MAPPO Blue and a scripted or MAPPO Red."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from envs.battalion_env import battle_config_from_args
from envs.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
from envs.sim.constants import (
    HILL_SPEED_FACTOR,
    MAP_HEIGHT,
    MAP_WIDTH,
    MAX_STEPS,
    VISIBILITY_RADIUS,
)
from envs.sim.validation import check_int

WIN, DRAW, LOSS = 1, 0, -1

_ENV_DEFAULTS = dict(map_width=MAP_WIDTH, map_height=MAP_HEIGHT, max_steps=MAX_STEPS,
                     randomize_terrain=True, hill_speed_factor=HILL_SPEED_FACTOR,
                     visibility_radius=VISIBILITY_RADIUS)


def make_team_battles(n_battles: int, n_blue: int, n_red: int,
                      env_kwargs: dict[str, Any] | None = None,
                      reward_weights=None) -> MultiBattalionBatch:
    """A :class:`MultiBattalionBatch` from MultiBattalionEnv-style keyword arguments.

    Raises:
        ValueError: for an unknown keyword (named) or a bad value.
    """
    settings = dict(_ENV_DEFAULTS)
    sizes = {"n_blue": n_blue, "n_red": n_red}
    for key, value in (env_kwargs or {}).items():
        if key in sizes:
            if value != sizes[key]:
                raise ValueError(f"env_kwargs[{key!r}]={value!r} contradicts {key}={sizes[key]}")
            continue
        if key not in settings:
            raise ValueError(f"env_kwargs key {key!r} is invalid: expected some of "
                             f"{sorted(settings)}")
        settings[key] = value
    config = battle_config_from_args(settings["map_width"], settings["map_height"],
                                     settings["max_steps"], settings["hill_speed_factor"])
    return MultiBattalionBatch(n_battles, n_blue, n_red, config=config, terrain=None,
                               randomize_terrain=settings["randomize_terrain"],
                               visibility_radius=settings["visibility_radius"],
                               reward_weights=reward_weights)


def team_actions(policy: Any, observations: np.ndarray, deterministic: bool) -> np.ndarray:
    """(b, n, 3) orders of a MAPPO policy for (b, n, obs_dim) observations (agent i of
    a side uses the policy's actor ``i mod n_agents``)."""
    b, n, dim = observations.shape
    agents = torch.arange(n).repeat(b) % policy.n_agents
    actions, _ = policy.act(torch.from_numpy(np.ascontiguousarray(observations).reshape(-1, dim)),
                            agent_idx=agents, deterministic=deterministic)
    return actions.cpu().numpy().reshape(b, n, -1)


def play_team_battles(policy: Any, opponent: Any, *, n_blue: int = 2, n_red: int = 2,
                      n_episodes: int = 20, deterministic: bool = True,
                      opponent_deterministic: bool = False, seed: int | None = None,
                      env_kwargs: dict[str, Any] | None = None) -> np.ndarray:
    """Play ``n_episodes`` battles at once, ``policy`` commanding Blue.

    Args:
        policy: a :class:`~models.mappo_policy.MAPPOPolicy` for Blue.
        opponent: Red's commander: a scripted level (int 1..5) or a MAPPOPolicy.
        n_blue, n_red: battalions a side.
        n_episodes: battles (>= 1); battle ``i`` is episode 0 of seed ``seed + i``, and
            sampled actions draw from a generator seeded with ``seed`` (the global
            torch generator is left as it was), so a seed always gives the same outcomes.
        deterministic: Blue acts on the mean of its policy.
        opponent_deterministic: the same for a policy opponent.
        seed: base seed (0 when None).
        env_kwargs: further MultiBattalionEnv settings (map size, max_steps, ...).

    Returns:
        (n_episodes,) int8 outcomes from Blue's side: 1 won, 0 drawn, -1 lost.
    """
    n_episodes = check_int("n_episodes", n_episodes, minimum=1)
    scripted = isinstance(opponent, (int, np.integer)) and not isinstance(opponent, bool)
    if scripted:
        check_int("opponent", opponent, minimum=1, maximum=5)
    elif not callable(getattr(opponent, "act", None)):
        raise TypeError(f"opponent={opponent!r} is invalid: expected a scripted level 1..5 "
                        "or a MAPPOPolicy")
    base = 0 if seed is None else check_int("seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(base)
        return _play(policy, opponent, scripted, n_blue, n_red, n_episodes, deterministic,
                     opponent_deterministic, base, env_kwargs)


def _play(policy, opponent, scripted, n_blue, n_red, n_episodes, deterministic,
          opponent_deterministic, base, env_kwargs) -> np.ndarray:
    battles = make_team_battles(n_episodes, n_blue, n_red, env_kwargs)
    battles.reset(np.arange(n_episodes), [base + i for i in range(n_episodes)],
                  np.zeros(n_episodes, np.int64))
    blue, red = slice(0, n_blue), slice(n_blue, n_blue + n_red)
    red_units = np.arange(n_blue, n_blue + n_red)
    outcome = np.zeros(n_episodes, np.int8)
    finished = np.zeros(n_episodes, bool)
    actions = np.zeros((n_episodes, n_blue + n_red, 3), np.float32)
    while not finished.all():
        observation = battles.observation
        actions[:, blue] = team_actions(policy, observation[:, blue], deterministic)
        if scripted:
            actions[:, red] = battles.scripted_actions(red_units, int(opponent))
        else:
            actions[:, red] = team_actions(opponent, observation[:, red], opponent_deterministic)
        result = battles.step(actions)
        ended = result.battle_over & ~finished
        outcome[ended & (result.winner == BLUE)] = WIN
        outcome[ended & (result.winner == RED)] = LOSS
        finished |= result.battle_over
    return outcome


def score(outcomes: np.ndarray) -> float:
    """Elo score of a set of outcomes: (wins + draws / 2) / n."""
    return float(((outcomes == WIN) + 0.5 * (outcomes == DRAW)).mean())


__all__ = ["DRAW", "LOSS", "WIN", "make_team_battles", "play_team_battles", "score",
           "team_actions"]
