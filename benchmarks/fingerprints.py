"""Fingerprints of training runs, battles and evaluations: proof that a refactor changed
no behaviour.

Each section runs a tiny but complete piece of the framework with every seed fixed
and hashes (SHA-256) the exact bytes of what it produced: the final weights (every
tensor of the ``state_dict``, in key order), the observations, rewards and flags of
battles, the outcome counts of evaluations. Nothing time- or path-dependent enters a
hash (timestamps, run ids, folders). Run it on the tree before a refactor and on the
tree after; equal digests mean the same floating-point operations in the same order
and the same random draws::

    python -m benchmarks.fingerprints --out before.json        # every section
    python -m benchmarks.fingerprints --only ppo_self_play,env_traces
    python -m benchmarks.fingerprints --list
    python -m benchmarks.fingerprints --check-determinism      # each section twice

The JSON maps each section to its digest, and ``section/part`` to the digest of each
part, so a difference points at what changed. Imports are the documented ones (the
seeds, the README and ``docs/``), so the script runs unchanged on both trees; a name
that moved fails loudly at import instead of silently measuring something else. The
whole script takes a few minutes on two cores; each section's time goes to stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

SEED = 7
"""The seed of every run, battle and evaluation below (one each, offset where needed)."""
TRACE_STEPS = 400
"""Steps of every environment trace."""
HISTORICAL_BATTLE = "austerlitz_1805"
"""The historical battle of the scenario trace (the README's example)."""

# ---- hashing ------------------------------------------------------------------------


class Digest:
    """A SHA-256 over typed, length-prefixed items, so that different sequences of
    arrays and values never hash alike by concatenation."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def _item(self, tag: str, payload: bytes) -> None:
        self._hash.update(f"{tag}:{len(payload)}:".encode())
        self._hash.update(payload)

    def array(self, value: Any) -> Digest:
        """An array's dtype, shape and exact bytes (C order)."""
        array = np.ascontiguousarray(np.asarray(value))
        if array.dtype == object:
            raise TypeError(f"cannot fingerprint an object array of shape {array.shape}")
        self._item("array", f"{array.dtype.str}{array.shape}".encode())
        self._item("bytes", array.tobytes())
        return self

    def tensor(self, value: torch.Tensor) -> Digest:
        """A tensor's exact bytes, as :meth:`array`."""
        return self.array(value.detach().cpu().contiguous().numpy())

    def state_dict(self, weights: Mapping[str, torch.Tensor]) -> Digest:
        """Every tensor of a ``state_dict``, with its key, in key order."""
        for key, value in weights.items():
            self.value(key)
            self.tensor(value)
        return self

    def value(self, value: Any) -> Digest:
        """A plain value (numbers, strings, None, lists, dicts): floats by their exact
        bits, dicts in key order."""
        if isinstance(value, Mapping):
            self._item("dict", str(len(value)).encode())
            for key in sorted(value, key=str):
                self.value(str(key))
                self.value(value[key])
        elif isinstance(value, (list, tuple)):
            self._item("seq", str(len(value)).encode())
            for item in value:
                self.value(item)
        elif isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, np.bool_):
            self.array(value)
        elif isinstance(value, float):
            self._item("float", float(value).hex().encode())
        elif isinstance(value, (bool, np.bool_, int, str)) or value is None:
            self._item(type(value).__name__, repr(value if not isinstance(value, np.bool_)
                                                  else bool(value)).encode())
        else:
            raise TypeError(f"cannot fingerprint a {type(value).__name__}: {value!r}")
        return self

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def weights_digest(weights: Mapping[str, torch.Tensor]) -> str:
    return Digest().state_dict(weights).hexdigest()


def value_digest(value: Any) -> str:
    return Digest().value(value).hexdigest()


def archive_weights(path: Path) -> dict[str, torch.Tensor]:
    """The policy's ``state_dict`` in an SB3 archive (its ``policy.pth``), read as tensors
    only: no project class is unpickled, so the file's code paths do not matter."""
    with zipfile.ZipFile(path) as archive:
        data = archive.read("policy.pth")
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def combined(parts: Mapping[str, str]) -> str:
    """One digest of a section's parts (name and digest of each, in name order)."""
    return value_digest(dict(parts))


def numeric_metrics(history: Iterable[Mapping[str, Any]], drop: Iterable[str]) -> list[dict]:
    """The numbers of each logged row, without the keys that measure time (``drop``:
    substrings of such keys)."""
    drop = tuple(drop)
    return [{k: v for k, v in row.items()
             if isinstance(v, (int, float)) and not any(d in k for d in drop)}
            for row in history]


TIME_KEYS = ("time/", "fps", "per_second", "sps", "elapsed", "wall", "seconds")
"""Substrings of logged keys that measure time, never fingerprinted."""


def seed_everything(seed: int) -> None:
    """Seed torch's global generator, which networks read when they are built (the
    project's NumPy randomness always goes through seeded ``Generator``\\ s)."""
    torch.manual_seed(seed)


# ---- sections -----------------------------------------------------------------------


PPO_SETTINGS = dict(
    n_envs=4, n_steps=64, batch_size=128, n_epochs=2, learning_rate=3e-4, gamma=0.995,
    gae_lambda=0.95, clip_range=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
    seed=SEED, device="cpu", torch_threads=1, max_steps=100, policy_hidden_sizes=[64, 64],
    policy_log_std_init=-1.0, enable_wandb=False, progress_bar=False, verbose=0)
"""The PPO duel settings shared by the sections that train one (every PPO constant set,
not taken from the config's defaults)."""


def ppo_config(folder: Path, **changes: Any):
    """A tiny PPO duel run's TrainingConfig writing everything under ``folder``."""
    from training import TrainingConfig

    settings = dict(PPO_SETTINGS, checkpoint_dir=str(folder / "ck"),
                    manifest_path=str(folder / "ck" / "manifest.jsonl"),
                    log_dir=str(folder / "logs"), self_play_pool_dir=str(folder / "pool"),
                    elo_registry_path=str(folder / "elo.json"))
    settings.update(changes)
    return TrainingConfig(**settings)


def ppo_self_play(folder: Path) -> dict[str, str]:
    """``training.train`` with an imitation warm start, then PPO against scripted and
    random Red and the self-play pool, with Elo evaluations: the final weights, the
    step counter and the ratings."""
    from training import train
    from training.elo import EloRegistry

    # 600 imitated steps (150 a battle: every battle ends in them, so there are
    # demonstrations to learn from), then four PPO rollouts of 4 x 64 steps.
    config = ppo_config(
        folder, total_timesteps=600 + 4 * 256, warm_start_doctrine="disciplined",
        warm_start_steps=600, warm_start_epochs=2, curriculum_level=3,
        training_opponents=["scripted_l2", "scripted_l5", "random"],
        checkpoint_freq=256, eval_freq=256, n_eval_episodes=2,
        enable_self_play=True, self_play_snapshot_freq=256, self_play_eval_freq=512,
        self_play_n_eval_episodes=2, self_play_scripted_share=0.5,
        self_play_pool_max_size=10, self_play_use_latest_for_eval=False,
        elo_opponents=["scripted_l1"], elo_eval_freq=512, elo_n_eval_episodes=2)
    model = train(config)
    snapshots = {path.name: weights_digest(archive_weights(path))
                 for path in sorted((folder / "pool").glob("snapshot_v*.zip"))}
    return {
        "weights": weights_digest(model.policy.state_dict()),
        "num_timesteps": value_digest(int(model.num_timesteps)),
        "snapshots": value_digest(snapshots),
        "elo": value_digest(EloRegistry(folder / "elo.json").all_ratings()),
    }


def mappo_curriculum_self_play(folder: Path) -> dict[str, str]:
    """``train_mappo`` with a doctrine warm start, the 1v1 -> 2v1 -> 2v2 curriculum and
    team self-play: the final weights, counters, curriculum stages and logged numbers."""
    from training.train_mappo import MAPPOConfig, train_mappo

    # On a 60 m field a passive Red (level 1) is always in reach, so random volleys
    # win battles and the curriculum promotes within the budget. Self-play's switch is
    # named as the config under test names it (enable_self_play; self_play in older
    # trees), so one script fingerprints both trees of a comparison.
    switch = ("enable_self_play" if "enable_self_play" in MAPPOConfig.__dataclass_fields__
              else "self_play")
    config = MAPPOConfig(
        n_envs=8, n_steps=50, batch_size=200, n_epochs=2, learning_rate=3e-4, gamma=0.995,
        gae_lambda=0.95, clip_range=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
        seed=SEED, device="cpu", torch_threads=1, total_timesteps=960 + 10 * 400,
        warm_start_doctrine="disciplined", warm_start_steps=960, warm_start_epochs=2,
        map_width=60.0, map_height=60.0, max_steps=100, red_level=1, n_blue=2, n_red=2,
        actor_hidden_sizes=[64, 64], critic_hidden_sizes=[64, 64], log_std_init=-1.0,
        curriculum=True, curriculum_threshold=0.25, curriculum_window=4,
        curriculum_initial_stage="1v1",
        **{switch: True}, self_play_snapshot_freq=800, self_play_eval_freq=1600,
        self_play_n_eval_episodes=4, self_play_exploitability_episodes=2,
        self_play_scripted_share=0.5, self_play_pool_max_size=10,
        checkpoint_freq=1600, eval_freq=1600, n_eval_episodes=4,
        checkpoint_dir=str(folder / "ck"), log_dir=str(folder / "logs"),
        elo_registry_path=str(folder / "elo.json"), self_play_pool_dir=str(folder / "pool"),
        enable_wandb=False, progress_bar=False, verbose=0)
    result = train_mappo(config)
    stages = [(h.get("curriculum/n_blue"), h.get("curriculum/n_red")) for h in result.history]
    return {
        "weights": weights_digest(result.policy.state_dict()),
        "counters": value_digest([result.total_steps, result.episodes]),
        "curriculum": value_digest(stages),
        "history": value_digest(numeric_metrics(result.history, TIME_KEYS)),
    }


WFM1_SETTINGS = dict(
    n_envs=4, n_steps=32, batch_size=64, n_epochs=2, learning_rate=3e-4, gamma=0.995,
    gae_lambda=0.95, clip_range=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
    seed=SEED, device="cpu", torch_threads=1, scenarios_per_rollout=2, resample_every=2,
    max_side=3, gis_share=0.25, max_steps=60, d_model=32, n_heads=4, n_echelon_layers=1,
    n_cross_layers=1, enable_wandb=False, progress_bar=False, verbose=0)
"""A small WFM-1's PPO settings (every PPO constant set)."""


def wfm1(folder: Path) -> dict[str, str]:
    """``train_wfm1``: a small WFM-1 with a doctrine warm start, the teacher loss and
    validation battles: the final weights, the step counter and the validation rates."""
    from training.train_wfm1 import WFM1TrainConfig, train_wfm1

    # 320 imitated steps (80 a battle, longer than one), then four PPO rollouts of
    # 4 x 32 steps.
    config = WFM1TrainConfig(
        **WFM1_SETTINGS, total_timesteps=320 + 4 * 128, warm_start_steps=320,
        warm_start_epochs=2, warm_start_std=0.2, teacher_coef=1.0, validate_every_updates=2,
        validation_scenarios=2, validation_battles=2, checkpoint_every_updates=2,
        checkpoint_dir=str(folder / "ck"), log_dir=str(folder / "logs"))
    trainer = train_wfm1(config)
    rates = [h["validation/win_rate"] for h in trainer.history if "validation/win_rate" in h]
    return {
        "weights": weights_digest(trainer.policy.state_dict()),
        "total_steps": value_digest(int(trainer.total_steps)),
        "validation": value_digest([float(r) for r in rates]),
        "history": value_digest(numeric_metrics(trainer.history, TIME_KEYS)),
    }


def _battalion_policy_file(folder: Path) -> Path:
    """A seeded, untrained order-following battalion policy (2 battalions), written as a
    team snapshot: the frozen lower echelon of the brigade runs."""
    from envs.battles.multi_observation import OBS_DIM, STATE_DIM
    from envs.commanders.orders import ORDER_DIM
    from models.mappo_policy import MAPPOPolicy
    from training.self_play import TeamOpponentPool

    torch.manual_seed(SEED)
    policy = MAPPOPolicy(OBS_DIM + ORDER_DIM, 3, OBS_DIM + ORDER_DIM + STATE_DIM, n_agents=2)
    return TeamOpponentPool(folder / "battalion").add(policy, 1)


ECHELON_SETTINGS = dict(
    n_envs=4, n_steps=16, batch_size=32, n_epochs=2, learning_rate=3e-4, gamma=0.99,
    gae_lambda=0.95, clip_range=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
    device="cpu", torch_threads=1, map_width=600.0, map_height=600.0, max_steps=80,
    temporal_ratio=5, randomize_terrain=False, red_level=5, n_blue=2, n_red=2,
    enable_wandb=False, progress_bar=False, verbose=0)
"""A brigade commander's PPO settings (every PPO constant set)."""


def echelon(folder: Path) -> dict[str, str]:
    """A brigade commander over a frozen battalion policy (``train_brigade``), then two
    league roles of brigade commanders (``EchelonLearner``) trained in turns: the final
    weights, evaluations, snapshots, match outcomes and ratings."""
    from training.echelons.config import BrigadeConfig
    from training.elo import TeamEloRegistry
    from training.league import AgentPool, MatchDatabase
    from training.league.echelon_learner import EchelonLearner
    from training.league.role import train_in_turns
    from training.league.train_exploiter import MainExploiterTrainer
    from training.league.train_main_agent import MainAgentTrainer
    from training.train_brigade import train_brigade

    battalion = _battalion_policy_file(folder)
    result = train_brigade(BrigadeConfig(
        **ECHELON_SETTINGS, seed=SEED, total_timesteps=4 * 64, eval_freq=128,
        n_eval_episodes=4, checkpoint_freq=128, battalion_policy=str(battalion),
        checkpoint_dir=str(folder / "brigade"), log_dir=str(folder / "brigade_logs")))
    parts = {
        "brigade/weights": weights_digest(result.model.policy.state_dict()),
        "brigade/evaluations": value_digest([(int(s), {k: float(v) for k, v in m.items()})
                                             for s, m in result.evaluations]),
    }

    league = folder / "league"
    role = dict(snapshot_freq=64, eval_freq=128, n_eval_episodes=4, checkpoint_freq=128,
                log_interval=128, opponents_per_rollout=2, matchmaking="pfsp",
                pfsp_temperature=1.0)

    def learner(seed: int) -> EchelonLearner:
        return EchelonLearner(BrigadeConfig(
            **ECHELON_SETTINGS, seed=seed, total_timesteps=4 * 64, eval_freq=10**6,
            n_eval_episodes=4, checkpoint_freq=10**6, battalion_policy=str(battalion),
            checkpoint_dir=str(folder / "unused"), log_dir=str(folder / "league_logs")))

    main = MainAgentTrainer.in_league(
        learner(SEED), league, scripted_share=0.25,
        league_pools=[league / "main_exploiter" / "pool.json"], **role)
    exploiter = MainExploiterTrainer.in_league(
        learner(SEED + 1), league, scripted_share=0.0,
        league_pools=[league / "main_agent" / "pool.json"], reset_win_rate_threshold=0.3,
        reset_window_size=2, **role)
    train_in_turns([main, exploiter])
    for trainer in (main, exploiter):
        name = trainer.agent_id
        parts[f"league/{name}/weights"] = weights_digest(trainer.trainer.model.policy.state_dict())
        snapshots = []
        for record in AgentPool(trainer.pool.manifest_path).list():
            path = trainer.pool.resolve_snapshot(record)
            snapshots.append((record.agent_id, record.version, _plain(record.metadata),
                              weights_digest(archive_weights(path))))
        parts[f"league/{name}/snapshots"] = value_digest(snapshots)
    parts["league/matches"] = value_digest(_match_outcomes(MatchDatabase(league / "matches.jsonl")))
    parts["league/elo"] = value_digest(TeamEloRegistry(league / "elo.json").all_ratings())
    return parts


def _plain(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A record's metadata without what measures time."""
    return {k: v for k, v in metadata.items() if not any(d in k for d in TIME_KEYS + ("time",))}


def _match_outcomes(matches: Any) -> list[tuple]:
    """Who met whom and the score, in the order recorded (no ids, no timestamps)."""
    return [(r.agent_id, r.opponent_id, float(r.outcome), _plain(r.metadata))
            for r in matches.results]


def league_round(folder: Path) -> dict[str, str]:
    """The three league roles (main agent, main exploiter, league exploiter) of MAPPO
    battalion commanders trained in turns on one league folder: every role's snapshots'
    weights, the final weights, the match outcomes and the ratings."""
    from training.elo import TeamEloRegistry
    from training.league import AgentPool, MatchDatabase
    from training.league.config import (
        LeagueExploiterConfig,
        MainAgentConfig,
        MainExploiterConfig,
        league_dir_settings,
    )
    from training.league.role import train_in_turns
    from training.league.train_exploiter import MainExploiterTrainer
    from training.league.train_league_exploiter import LeagueExploiterTrainer
    from training.league.train_main_agent import MainAgentTrainer

    # Every learning and league constant set here: a config default may change.
    learning = dict(
        n_envs=8, n_steps=32, batch_size=128, n_epochs=2, learning_rate=3e-4, gamma=0.995,
        gae_lambda=0.95, clip_range=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5,
        device="cpu", torch_threads=1, total_timesteps=4 * 256, warm_start_doctrine=None,
        map_width=400.0, map_height=400.0, max_steps=80, red_level=5, n_blue=2, n_red=2,
        actor_hidden_sizes=[64, 64], critic_hidden_sizes=[64, 64], log_std_init=-1.0,
        snapshot_freq=256, eval_freq=512, n_eval_episodes=4, checkpoint_freq=512,
        log_interval=512, matchmaking="pfsp", pfsp_temperature=1.0, unknown_win_rate=0.5,
        opponents_per_rollout=2, pool_max_size=50, enable_wandb=False, progress_bar=False,
        verbose=0)
    resets = dict(reset_rule="rolling", reset_win_rate_threshold=0.99, reset_window_size=1)
    roles = {
        "main_agent": (MainAgentConfig, MainAgentTrainer, dict(seed=SEED, scripted_share=0.25)),
        "main_exploiter": (MainExploiterConfig, MainExploiterTrainer,
                           dict(seed=SEED + 1, scripted_share=0.0, **resets)),
        "league_exploiter": (LeagueExploiterConfig, LeagueExploiterTrainer,
                             dict(seed=SEED + 2, scripted_share=0.0, reset_probability=0.25,
                                  exploitability_eval_freq=512, n_exploitability_opponents=2,
                                  **resets)),
    }
    trainers = []
    for role, (config_class, trainer_class, own) in roles.items():
        config = config_class(**learning, **own, **league_dir_settings(role, folder))
        trainers.append(trainer_class.from_config(config))
    train_in_turns(trainers)

    parts = {}
    for trainer in trainers:
        name = trainer.agent_id
        parts[f"{name}/weights"] = weights_digest(trainer.trainer.policy.state_dict())
        snapshots = []
        for record in AgentPool(trainer.pool.manifest_path).list():
            data = torch.load(trainer.pool.resolve_snapshot(record), map_location="cpu",
                              weights_only=True)
            snapshots.append((record.agent_id, record.version, _plain(record.metadata),
                              weights_digest(data["state_dict"])))
        parts[f"{name}/snapshots"] = value_digest(snapshots)
        parts[f"{name}/counters"] = value_digest(
            [int(trainer.trainer.total_steps), int(trainer.reset_count), int(trainer.version)])
    parts["matches"] = value_digest(_match_outcomes(MatchDatabase(folder / "matches.jsonl")))
    parts["elo"] = value_digest(TeamEloRegistry(folder / "elo.json").all_ratings())
    return parts


def _actions(rng: np.random.Generator, space: Any, n: int | None = None) -> Any:
    """Pseudo-random actions of a Gymnasium ``space`` drawn from ``rng`` (not the space's
    own generator): uniform in a Box, integers in a (Multi)Discrete (a Python int for one
    Discrete action); one, or ``n`` of them stacked."""
    from gymnasium import spaces

    shape = () if n is None else (n,)
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(space.low, space.shape)
        high = np.broadcast_to(space.high, space.shape)
        return rng.uniform(low, high, shape + space.shape).astype(space.dtype)
    if isinstance(space, spaces.Discrete):
        drawn = rng.integers(space.start, space.start + space.n, shape)
        return int(drawn) if n is None else drawn.astype(np.int64)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, shape + space.nvec.shape).astype(np.int64)
    raise TypeError(f"no random actions for a {type(space).__name__}")


def _gym_trace(env: Any, seed: int) -> str:
    """A Gymnasium env stepped :data:`TRACE_STEPS` times with random actions, reset with
    the next seed whenever a battle ends."""
    rng = np.random.default_rng(seed)
    digest = Digest()
    obs, _ = env.reset(seed=seed)
    digest.array(obs)
    episode = 0
    for _ in range(TRACE_STEPS):
        obs, reward, terminated, truncated, _ = env.step(_actions(rng, env.action_space))
        digest.array(obs).value(float(reward)).value(bool(terminated)).value(bool(truncated))
        if terminated or truncated:
            episode += 1
            obs, _ = env.reset(seed=seed + episode)
            digest.array(obs)
    env.close()
    return digest.hexdigest()


def _parallel_trace(env: Any, seed: int) -> str:
    """A PettingZoo parallel env stepped :data:`TRACE_STEPS` times with random actions
    for the live agents, reset with the next seed whenever every agent is done."""
    rng = np.random.default_rng(seed)
    digest = Digest()
    observations, _ = env.reset(seed=seed)
    digest.value({a: np.asarray(o) for a, o in observations.items()})
    episode = 0
    for _ in range(TRACE_STEPS):
        actions = {agent: _actions(rng, env.action_space(agent)) for agent in env.agents}
        observations, rewards, terminations, truncations, _ = env.step(actions)
        digest.value({a: np.asarray(o) for a, o in observations.items()})
        digest.value({a: float(r) for a, r in rewards.items()})
        digest.value({a: bool(d) for a, d in terminations.items()})
        digest.value({a: bool(d) for a, d in truncations.items()})
        if not env.agents:
            episode += 1
            observations, _ = env.reset(seed=seed + episode)
            digest.value({a: np.asarray(o) for a, o in observations.items()})
    env.close()
    return digest.hexdigest()


def _vec_trace(env: Any, seed: int) -> str:
    """An SB3 VecEnv stepped :data:`TRACE_STEPS` times with random actions (it resets
    finished battles itself); the terminal observations are hashed too."""
    rng = np.random.default_rng(seed)
    digest = Digest()
    env.seed(seed)
    digest.array(env.reset())
    for _ in range(TRACE_STEPS):
        obs, rewards, dones, infos = env.step(_actions(rng, env.action_space, env.num_envs))
        digest.array(obs).array(rewards).array(dones)
        for i in np.flatnonzero(dones):
            digest.value(int(i)).array(infos[i]["terminal_observation"])
            digest.value(bool(infos[i].get("TimeLimit.truncated", False)))
    env.close()
    return digest.hexdigest()


def env_traces(folder: Path) -> dict[str, str]:
    """:data:`TRACE_STEPS`-step traces of every environment with fixed seeds and
    pseudo-random actions, and a historical battle fought out (its replay too)."""
    from data.historical import BATTLES_JSON
    from envs import BattalionEnv, BattalionVecEnv, MultiBattalionEnv
    from envs.echelons.brigade_env import BrigadeEnv
    from envs.echelons.division_env import DivisionEnv
    from envs.echelons.smdp_wrapper import SMDPWrapper
    from envs.scenario import load_scenarios
    from envs.scenario_battle import play_scenario

    parts = {
        "battalion_env": _gym_trace(BattalionEnv(max_steps=150, curriculum_level=4), SEED),
        "battalion_vec_env": _vec_trace(BattalionVecEnv(8, max_steps=150), SEED),
        "multi_battalion_env_2v2": _parallel_trace(
            MultiBattalionEnv(n_blue=2, n_red=2, max_steps=150), SEED),
        "brigade_env": _gym_trace(BrigadeEnv(n_blue=2, n_red=2, max_steps=300), SEED),
        "division_env": _gym_trace(DivisionEnv(n_brigades=2, n_blue_per_brigade=2,
                                               max_steps=300), SEED),
        "smdp_wrapper": _parallel_trace(
            SMDPWrapper(MultiBattalionEnv(n_blue=2, n_red=2, max_steps=150)), SEED),
    }
    battles = {battle.id: battle for battle in load_scenarios(BATTLES_JSON)}
    outcome = play_scenario(battles[HISTORICAL_BATTLE], n_battles=4, seed=SEED, record=True)
    replay = outcome.replay
    parts["scenario_battle"] = Digest().array(outcome.winner).array(outcome.steps).array(
        outcome.losses).array(outcome.casualties).value(
        {name: replay.tracks[name] for name in sorted(replay.tracks)}).hexdigest()
    return parts


def evaluations(folder: Path) -> dict[str, str]:
    """Fixed-seed evaluations: a tiny trained PPO commander against every scripted level
    and random Red (``run_episodes_with_model``, ``evaluate_detailed`` from its file,
    ``evaluate_vs_pool``), the doctrines against the scripted levels, and a seeded MAPPO
    team against a pool (``evaluate_team_vs_pool``, ``nash_exploitability_proxy``)."""
    from envs.battles.multi_observation import CRITIC_STATE_DIM, OBS_DIM
    from envs.commanders.doctrine import DisciplinedCommander, ScriptedCommander
    from models.mappo_policy import MAPPOPolicy
    from training import train
    from training.evaluate import evaluate_detailed, run_episodes_with_model
    from training.self_play import (
        TeamOpponentPool,
        evaluate_team_vs_pool,
        evaluate_vs_pool,
        nash_exploitability_proxy,
    )
    from training.train_wfm1 import WFM1TrainConfig
    from training.wfm1_benchmark import WFM1Benchmark, WFM1BenchmarkConfig

    model = train(ppo_config(folder, total_timesteps=512, warm_start_doctrine=None,
                             checkpoint_freq=512, eval_freq=512, n_eval_episodes=2,
                             curriculum_level=5, training_opponents=[]))
    opponents = ["scripted_l1", "scripted_l2", "scripted_l3", "scripted_l4", "scripted_l5",
                 "random"]
    kwargs = dict(map_width=400.0, map_height=400.0, max_steps=300)
    parts = {
        "model": value_digest([tuple(run_episodes_with_model(
            model, opponent, n_episodes=8, deterministic=True, seed=SEED + 100,
            env_kwargs=kwargs)) for opponent in opponents]),
        "model_stochastic": value_digest(tuple(run_episodes_with_model(
            model, "scripted_l3", n_episodes=8, deterministic=False, seed=SEED + 200,
            env_kwargs=kwargs))),
        "checkpoint": value_digest(tuple(evaluate_detailed(
            str(folder / "ck" / "ppo_battalion_s7_c5_final.zip"), n_episodes=8,
            seed=SEED + 300, opponent="scripted_l4", env_kwargs=kwargs))),
        "doctrines": value_digest([tuple(run_episodes_with_model(
            doctrine, opponent, n_episodes=8, seed=SEED + 400, env_kwargs=kwargs))
            for doctrine in (DisciplinedCommander(), ScriptedCommander(3), ScriptedCommander(5))
            for opponent in opponents[:5]]),
        "vs_pool": value_digest([float(evaluate_vs_pool(
            DisciplinedCommander(), ScriptedCommander(level), 8, seed=SEED + 500,
            env_kwargs=kwargs)) for level in (1, 5)] + [float(evaluate_vs_pool(
                model, DisciplinedCommander(), 8, seed=SEED + 600, env_kwargs=kwargs))]),
    }
    torch.manual_seed(SEED)
    blue = MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=2)
    pool = TeamOpponentPool(folder / "team_pool")
    members = []
    for version in (1, 2):
        torch.manual_seed(SEED + version)
        members.append(MAPPOPolicy(OBS_DIM, 3, CRITIC_STATE_DIM, n_agents=2))
        pool.add(members[-1], version)
    team_kwargs = dict(map_width=300.0, map_height=300.0, max_steps=200)
    parts["team_vs_pool"] = value_digest([float(evaluate_team_vs_pool(
        blue, member, n_episodes=4, seed=SEED + 700, env_kwargs=team_kwargs))
        for member in members])
    parts["nash_exploitability"] = value_digest(float(nash_exploitability_proxy(
        blue, pool, n_episodes_per_opponent=2, seed=SEED + 800, env_kwargs=team_kwargs)))

    # WFM-1 on the first held-out scenarios: a seeded untrained generalist zero-shot,
    # briefly fine-tuned (adapter-only PPO), and the doctrine as the specialist.
    torch.manual_seed(SEED)
    benchmark = WFM1Benchmark(
        WFM1BenchmarkConfig(n_eval_episodes=4, n_scenarios=2, finetune_steps=64,
                            max_steps_per_episode=300, specialist_train_steps=0,
                            finetune_battles=4, seed=SEED),
        WFM1TrainConfig(**WFM1_SETTINGS, total_timesteps=64, warm_start_steps=0,
                        checkpoint_dir=str(folder / "wfm1"), log_dir=str(folder / "wfm1_logs")))
    summary = benchmark.run()
    parts["wfm1_benchmark"] = value_digest([
        (r.scenario, r.condition, r.wins, r.draws, r.losses, r.train_steps)
        for r in summary.results])
    return parts


SECTIONS: dict[str, Callable[[Path], dict[str, str]]] = {
    "ppo_self_play": ppo_self_play,
    "mappo_curriculum_self_play": mappo_curriculum_self_play,
    "wfm1": wfm1,
    "echelon": echelon,
    "league_round": league_round,
    "env_traces": env_traces,
    "evaluations": evaluations,
}
"""Every section, by name, in the order they run."""


def run_section(name: str) -> tuple[dict[str, str], float]:
    """Run section ``name`` in a fresh temporary folder (also the working directory, so
    no file lands in the tree): its parts' digests and its wall time in seconds."""
    seed_everything(SEED)
    cwd = Path.cwd()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"fingerprint_{name}_") as tmp:
        os.chdir(tmp)
        try:
            parts = SECTIONS[name](Path(tmp))
        finally:
            os.chdir(cwd)
    return parts, time.perf_counter() - started


def parse_sections(text: str | None) -> list[str]:
    """The sections ``--only`` names (all when None).

    Raises:
        ValueError: naming an unknown section and listing the known ones.
    """
    if text is None:
        return list(SECTIONS)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SECTIONS]
    if unknown or not names:
        raise ValueError(f"--only={text!r} is invalid: expected a comma-separated list of "
                         f"{', '.join(SECTIONS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring); returns the exit status: 1 if
    ``--check-determinism`` found a section that differs between two runs, or a section
    failed under ``--keep-going``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fingerprints",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the JSON to this file")
    parser.add_argument("--only", help="comma-separated sections to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the sections and exit")
    parser.add_argument("--check-determinism", action="store_true",
                        help="run each section twice and report any part that differs")
    parser.add_argument("--keep-going", action="store_true",
                        help="after a section fails, record its error and run the others "
                             "(the exit status is still 1)")
    args = parser.parse_args(argv)
    if args.list:
        for name, section in SECTIONS.items():
            print(f"{name}: {' '.join(section.__doc__.split())}")
        return 0
    try:
        names = parse_sections(args.only)
    except ValueError as error:
        parser.error(str(error))
    torch.set_num_threads(1)
    import envs  # noqa: F401  (where the code measured comes from, for the record)

    print(f"code under test: {Path(envs.__file__).resolve().parents[1]}", file=sys.stderr)
    results: dict[str, str] = {}
    status = 0
    for name in names:
        try:
            parts, seconds = run_section(name)
        except Exception as error:
            if not args.keep_going:
                raise
            logging.exception("section %s failed", name)
            results[name] = f"error: {type(error).__name__}: {error}"
            status = 1
            continue
        line = f"{name}: {seconds:.1f} s"
        if args.check_determinism:
            again, seconds_again = run_section(name)
            differing = sorted(k for k in parts.keys() | again.keys()
                               if parts.get(k) != again.get(k))
            line += f", again {seconds_again:.1f} s: " + (
                "deterministic" if not differing else f"DIFFERS in {', '.join(differing)}")
            status = 1 if differing else status
        print(line, file=sys.stderr, flush=True)
        results[name] = combined(parts)
        results.update({f"{name}/{part}": digest for part, digest in sorted(parts.items())})
    text = json.dumps(results, indent=2, sort_keys=False)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
