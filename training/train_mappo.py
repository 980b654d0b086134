"""MAPPO for N-vs-M battalion battles, top to bottom.

Blue's battalions share one actor (or one each) that sees only its own
fog-of-war observation, and a centralised critic that also reads the whole
battle; Red is scripted, or with self-play a frozen snapshot of Blue. The
rollout steps ``n_envs`` battles as one NumPy batch; the update is clipped PPO
over every Blue battalion's samples. One network serves every team size, so a
curriculum promotion really swaps the battles (1v1 -> 2v1 -> 2v2) and training
goes on with the same weights.

Programmatic use::

    from training.train_mappo import train_mappo
    result = train_mappo(total_timesteps=1_000_000, enable_wandb=False)
    result = train_mappo(curriculum=True,
                         v1_checkpoint="checkpoints/ppo_battalion_s42_c5_final.zip")

Command line (Hydra; ``configs/experiment_mappo_2v2.yaml``, override any key)::

    python training/train_mappo.py training.total_timesteps=500000 self_play.enabled=true
    python training/train_mappo.py resume.auto=true      # continue mappo_policy.pt

A run writes ``mappo_policy.pt`` every ``checkpoint_freq`` env-steps (replaced
atomically) and ``mappo_policy_final.pt`` at the end, each with the policy's
constructor arguments, the optimiser, the step and episode counters, the
curriculum, the self-play version and the random generators, so a killed run
resumes from its last checkpoint with all of that restored; the battles in
progress at that moment are not saved, and the resumed run starts new ones
(drawn from the restored generator). Metrics go to TensorBoard under ``log_dir`` and to W&B.
"""

from __future__ import annotations

import io
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from envs.multi_battalion_batch import BLUE, MultiBattalionBatch
from envs.multi_observation import CRITIC_STATE_DIM, OBS_DIM
from models.mappo_policy import MAPPOPolicy, policy_from_kwargs
from models.weights import load_weights
from storage.files import atomic_write_bytes, clean_stale_temporaries
from training.common.tracking import log_artifact, start_wandb
from training.curriculum_scheduler import (
    STAGE_ENV_KWARGS,
    STAGE_LABELS,
    CurriculumScheduler,
    load_v1_weights_into_mappo,
)
from training.elo import TeamEloRegistry
from training.mappo.battles import (
    WIN,
    make_team_battles,
    play_team_battles,
    score,
    team_actions,
)
from training.mappo.config import (
    MAPPOConfig,
    check_mappo_field_names,
    mappo_config_from_nested,
)
from training.mappo.warm_start import warm_start_team
from training.self_play import TeamOpponentPool, nash_exploitability_proxy

logger = logging.getLogger(__name__)

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
ACTION_DIM = 3
CHECKPOINT_NAME = "mappo_policy.pt"
FINAL_CHECKPOINT_NAME = "mappo_policy_final.pt"
OPPONENTS_PER_SWAP = 4
"""Pool members dealt across the self-play battles at each swap."""


@dataclass
class MAPPOResult:
    """What a run produced.

    Attributes:
        policy: the trained policy (eval mode).
        total_steps: env-steps trained, including those of a resumed run.
        episodes: battles finished in training.
        history: one dict of metrics per update (the values logged).
        final_checkpoint: path of ``mappo_policy_final.pt``.
        transfer: the ``{"loaded", "skipped"}`` report of a v1 warm start, or None.
    """

    policy: MAPPOPolicy
    total_steps: int
    episodes: int
    history: list[dict[str, Any]] = field(default_factory=list)
    final_checkpoint: Path | None = None
    transfer: dict[str, list[str]] | None = None


# --- the battles Blue trains in ------------------------------------------------------

class TrainingBattles:
    """``n_envs`` battles of the current team sizes, and who commands Red in each.

    Red is scripted at ``red_level`` in every battle until :meth:`deal` hands some
    battles to frozen team snapshots; then each snapshot acts for its battles as
    one batch.
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
        self.opponents: list[tuple[MAPPOPolicy, np.ndarray]] = []
        self.orders = np.zeros((config.n_envs, n_blue + n_red, 3), np.float32)
        """(B, U, 3) order buffer reused every step."""

    def deal(self, opponents: list[MAPPOPolicy], scripted_share: float) -> None:
        """Give ``1 - scripted_share`` of the battles to ``opponents``, in equal parts."""
        n = self.config.n_envs
        order = self.rng.permutation(n)
        n_scripted = int(round(scripted_share * n))
        self.opponents = [(policy, np.sort(part)) for policy, part in zip(
            opponents, np.array_split(order[n_scripted:], len(opponents)), strict=True)
            if len(part)] if opponents else []

    def red_actions(self) -> np.ndarray:
        """(B, n_red, 3) Red's orders for the current state of every battle."""
        red = self.batch.scripted_actions(self.red_units, self.config.red_level)
        if self.opponents:
            observation = self.batch.observation
            for policy, battles in self.opponents:
                red[battles] = team_actions(policy, observation[battles][:, self.red_units],
                                            deterministic=False)
        return red


# --- checkpoints -----------------------------------------------------------------------

def save_checkpoint(path: Path, policy: MAPPOPolicy, optimizer: torch.optim.Optimizer,
                    total_steps: int, episodes: int, config: MAPPOConfig,
                    scheduler: CurriculumScheduler | None, rng: np.random.Generator,
                    generator: torch.Generator, self_play_version: int) -> Path:
    """Write a resumable checkpoint atomically (only tensors and plain values)."""
    buffer = io.BytesIO()
    torch.save({
        "kwargs": policy.kwargs,
        "policy_state_dict": policy.state_dict(),
        "optimizer_state_dict": optimizer.state_dict(),
        "total_steps": int(total_steps),
        "episodes": int(episodes),
        "config": config.to_dict(),
        "curriculum": None if scheduler is None else scheduler.state_dict(),
        "numpy_rng": rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "minibatch_rng": generator.get_state(),
        "self_play_version": int(self_play_version),
    }, buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (never unpickles code).

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if it is not a MAPPO training checkpoint.
    """
    path = Path(path)
    data = load_weights(path, "MAPPO checkpoint")
    missing = {"kwargs", "policy_state_dict", "optimizer_state_dict", "total_steps",
               "episodes", "numpy_rng", "torch_rng", "minibatch_rng"} - set(
        data if isinstance(data, dict) else ())
    if missing:
        raise ValueError(f"{path} is not a MAPPO training checkpoint: missing {sorted(missing)}")
    return data


def policy_from_checkpoint(path: str | Path) -> MAPPOPolicy:
    """The policy of a MAPPO training checkpoint, in eval mode."""
    data = load_checkpoint(path)
    return policy_from_kwargs(data["kwargs"], data["policy_state_dict"],
                              f"MAPPO checkpoint {path}").eval()


# --- one update: rollout, advantages, PPO epochs ----------------------------------------

@dataclass
class Rollout:
    """``n_steps`` of every Blue battalion of every battle: arrays (T, B, n_blue, ...)."""

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
    episode_returns: list[float]
    agent_returns: list[np.ndarray]


def collect(policy: MAPPOPolicy, battles: TrainingBattles, n_steps: int, gamma: float,
            running_returns: np.ndarray, running_agent: np.ndarray) -> Rollout:
    """Play ``n_steps`` of every battle with Blue sampling from ``policy``."""
    batch, nb = battles.batch, battles.n_blue
    n_envs = battles.config.n_envs
    shape = (n_steps, n_envs, nb)
    # Every entry is written below, so the buffers need no zeroing.
    obs = torch.empty(shape + (OBS_DIM,))
    critic_state = torch.empty(shape + (CRITIC_STATE_DIM,))
    actions = torch.empty(shape + (ACTION_DIM,))
    log_probs, values = torch.empty(shape), torch.empty(shape)
    rewards, dones = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    valid = np.zeros(shape, bool)
    # Shared parameters: one actor for all; otherwise battalion i uses actor i.
    agents = 0 if policy.share_parameters else torch.arange(nb).repeat(n_envs) % policy.n_agents
    orders = battles.orders
    wins: list[bool] = []
    episode_returns: list[float] = []
    agent_returns: list[np.ndarray] = []
    for t in range(n_steps):
        obs[t] = torch.from_numpy(batch.observation[:, :nb])
        # Blue's critic inputs: its observations, then Blue's global state (built here
        # rather than for every unit of both sides).
        critic_state[t, :, :, :OBS_DIM] = obs[t]
        critic_state[t, :, :, OBS_DIM:] = torch.from_numpy(batch.global_state[BLUE])[:, None]
        valid[t] = batch.in_fight[:, :nb]
        sampled, log_prob = policy.act(obs[t].reshape(-1, OBS_DIM), agent_idx=agents)
        actions[t] = sampled.cpu().reshape(n_envs, nb, ACTION_DIM)
        log_probs[t] = log_prob.cpu().reshape(n_envs, nb)
        values[t] = policy.get_value(critic_state[t].reshape(-1, CRITIC_STATE_DIM)).cpu().reshape(
            n_envs, nb)
        orders[:, :nb] = actions[t].numpy()
        orders[:, nb:] = battles.red_actions()
        result = batch.step(orders)

        reward = result.reward[:, :nb].copy()
        truncated = result.truncated[:, :nb]
        if truncated.any():
            # Cut off by the clock, not beaten: bootstrap from the value of where it stood.
            final = torch.from_numpy(result.critic_state[:, :nb][truncated])
            reward[truncated] += gamma * policy.get_value(final).cpu().numpy()
        rewards[t] = reward
        dones[t] = result.terminated[:, :nb] | truncated
        running_returns += result.team_reward.total[:n_envs]
        running_agent += result.reward[:, :nb]
        over = np.flatnonzero(result.battle_over)
        if len(over):
            wins.extend((result.winner[over] == BLUE).tolist())
            episode_returns.extend(running_returns[over].tolist())
            agent_returns.extend(running_agent[over])
            running_returns[over] = 0
            running_agent[over] = 0
            batch.next_episode(over)
    last_values = policy.get_value(
        torch.from_numpy(batch.critic_state[:, :nb].reshape(-1, CRITIC_STATE_DIM))).cpu().reshape(
        n_envs, nb).numpy()
    return Rollout(obs, critic_state, actions, log_probs, values, rewards, dones, valid,
                   last_values, wins, episode_returns, agent_returns)


def advantages_and_returns(rollout: Rollout, gamma: float,
                           gae_lambda: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE per battalion with its own value and its own episode ends.

    A battalion's episode ends when it leaves the fight or the battle ends; the
    steps after it left (until the battle restarts) are not samples.
    """
    values = rollout.values.numpy()
    advantages = np.zeros_like(values)
    running = np.zeros(values.shape[1:], np.float32)
    for t in reversed(range(len(values))):
        next_values = rollout.last_values if t == len(values) - 1 else values[t + 1]
        carry = 1.0 - rollout.dones[t]
        delta = rollout.rewards[t] + gamma * next_values * carry - values[t]
        running = delta + gamma * gae_lambda * carry * running
        advantages[t] = running
    return advantages, advantages + values


def update(policy: MAPPOPolicy, optimizer: torch.optim.Optimizer, rollout: Rollout,
           advantages: np.ndarray, returns: np.ndarray, config: MAPPOConfig,
           generator: torch.Generator) -> dict[str, float]:
    """Clipped-PPO epochs over the rollout's valid samples; mean losses."""
    device = policy.device
    valid = torch.from_numpy(rollout.valid)
    nb = rollout.valid.shape[2]
    agent_of = (torch.arange(nb).expand(rollout.valid.shape) % policy.n_agents)[valid].to(device)
    obs, state = rollout.obs[valid].to(device), rollout.critic_state[valid].to(device)
    actions = rollout.actions[valid].to(device)
    old_log_probs = rollout.log_probs[valid].to(device)
    adv = torch.from_numpy(advantages)[valid].to(device)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    ret = torch.from_numpy(returns)[valid].to(device)
    n = len(adv)
    sums = dict(policy_loss=0.0, value_loss=0.0, entropy=0.0, total_loss=0.0, approx_kl=0.0,
                clip_fraction=0.0)
    n_batches = 0
    batch_size = config.minibatch_size(n)
    policy.train()
    for _ in range(config.n_epochs):
        order = torch.randperm(n, generator=generator).to(device)
        for start in range(0, n, batch_size):
            mb = order[start:start + batch_size]
            log_prob, entropy, value = policy.evaluate_actions(obs[mb], actions[mb], state[mb],
                                                               agent_idx=agent_of[mb])
            log_ratio = log_prob - old_log_probs[mb]
            ratio = log_ratio.exp()
            clipped = ratio.clamp(1 - config.clip_range, 1 + config.clip_range)
            policy_loss = -torch.min(ratio * adv[mb], clipped * adv[mb]).mean()
            value_loss = (value - ret[mb]).pow(2).mean()
            entropy_mean = entropy.mean()
            loss = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy_mean
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                sums["approx_kl"] += float(((ratio - 1) - log_ratio).mean())
                sums["clip_fraction"] += float(((ratio - 1).abs() > config.clip_range)
                                               .float().mean())
            sums["policy_loss"] += policy_loss.item()
            sums["value_loss"] += value_loss.item()
            sums["entropy"] += entropy_mean.item()
            sums["total_loss"] += loss.item()
            n_batches += 1
    policy.eval()
    return {f"train/{name}": value / max(n_batches, 1) for name, value in sums.items()}


# --- the run -------------------------------------------------------------------------

class _Every:
    """True once each time a step counter crosses a multiple of ``every``."""

    def __init__(self, every: int, start: int) -> None:
        self.every, self.last = every, start // every

    def __call__(self, step: int) -> bool:
        crossed = step // self.every > self.last
        self.last = step // self.every
        return crossed


def train_mappo(config: MAPPOConfig | None = None, *, resume: str | Path | None = None,
                **overrides: Any) -> MAPPOResult:
    """Train Blue with MAPPO; see the module docstring.

    Args:
        config: the settings (defaults when None).
        resume: a checkpoint of an earlier run to continue (its step counter,
            optimiser, curriculum and random generators go on).
        **overrides: MAPPOConfig fields to change.

    Returns:
        A :class:`MAPPOResult`.

    Raises:
        ValueError: for an unknown or invalid setting (named), or a budget below
            one rollout.
        FileNotFoundError: if ``resume`` or ``v1_checkpoint`` does not exist.
    """
    config = _resolve_config(config, overrides)
    n_steps = config.rollout_n_steps()
    rollout_steps = n_steps * config.n_envs
    if config.total_timesteps < rollout_steps:
        raise ValueError(f"total_timesteps={config.total_timesteps} is invalid: expected at "
                         f"least one rollout, n_steps * n_envs = {rollout_steps}")
    torch.set_num_threads(config.torch_threads)
    rng = np.random.default_rng(config.seed)
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    checkpoint_dir = Path(config.checkpoint_dir)
    clean_stale_temporaries(checkpoint_dir)  # left by a run killed mid-write

    scheduler = None
    if config.curriculum:
        initial = next(s for s, label in STAGE_LABELS.items()
                       if label == config.curriculum_initial_stage)
        scheduler = CurriculumScheduler(config.curriculum_threshold, config.curriculum_window,
                                        initial)
    largest_team = max([config.n_blue] + [kw["n_blue"] for kw in STAGE_ENV_KWARGS.values()]
                       if config.curriculum else [config.n_blue])
    policy = MAPPOPolicy(
        OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=largest_team,
        share_parameters=config.share_parameters,
        actor_hidden_sizes=tuple(config.actor_hidden_sizes),
        critic_hidden_sizes=tuple(config.critic_hidden_sizes),
        log_std_init=config.log_std_init).to(_device(config.device))
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate, eps=1e-5)
    total_steps = episodes = self_play_version = 0
    transfer = None
    if resume is not None:
        data = load_checkpoint(resume)
        if data["kwargs"] != policy.kwargs:
            raise ValueError(f"resume={str(resume)!r} holds a policy built with {data['kwargs']}, "
                             f"but this config builds {policy.kwargs}")
        policy.load_state_dict(data["policy_state_dict"])
        optimizer.load_state_dict(data["optimizer_state_dict"])
        total_steps, episodes = data["total_steps"], data["episodes"]
        self_play_version = data.get("self_play_version", 0)
        if scheduler is not None and data.get("curriculum") is not None:
            scheduler.load_state_dict(data["curriculum"])
        rng.bit_generator.state = data["numpy_rng"]
        torch.set_rng_state(data["torch_rng"])
        generator.set_state(data["minibatch_rng"])
        logger.info("resuming %s at step %d", resume, total_steps)
    elif config.v1_checkpoint is not None:
        transfer = load_v1_weights_into_mappo(config.v1_checkpoint, policy)
        logger.info("warm start from %s: %d tensors loaded, %d skipped", config.v1_checkpoint,
                    len(transfer["loaded"]), len(transfer["skipped"]))
    policy.eval()

    sizes = scheduler.env_kwargs() if scheduler else dict(n_blue=config.n_blue,
                                                          n_red=config.n_red)
    battles = TrainingBattles(config, sizes["n_blue"], sizes["n_red"], rng)
    if resume is None and config.v1_checkpoint is None and config.warm_start_doctrine:
        # Demonstration steps count towards the budget, leaving at least one rollout.
        steps = min(config.warm_start_steps, config.total_timesteps - rollout_steps)
        if steps >= config.n_envs:
            total_steps = warm_start_team(policy, battles, config.warm_start_doctrine, steps,
                                          gamma=config.gamma, epochs=config.warm_start_epochs,
                                          seed=config.seed)
    pool = None
    if config.self_play:
        pool = TeamOpponentPool(config.self_play_pool_dir, config.self_play_pool_max_size)
        self_play_version = max(self_play_version, pool.latest_version)
        if pool.size:
            battles.deal(_sample_members(pool, rng), config.self_play_scripted_share)
    registry = TeamEloRegistry(config.elo_registry_path)

    run, owns_run = (start_wandb(project=config.wandb_project, entity=config.wandb_entity,
                                 tags=config.wandb_tags, config=config.to_dict(),
                                 log_dir=config.log_dir)
                     if config.enable_wandb else (None, False))
    writer = _tensorboard(config.log_dir)
    counts = policy.parameter_count()
    _log(run, writer, {"model/actor_params": counts["actor"],
                       "model/critic_params": counts["critic"],
                       "model/total_params": counts["total"]}, total_steps)

    checkpoint_due = _Every(config.checkpoint_freq, total_steps)
    eval_due = _Every(config.eval_freq, total_steps)
    snapshot_due = _Every(config.self_play_snapshot_freq, total_steps)
    pool_eval_due = _Every(config.self_play_eval_freq, total_steps)
    n_updates = (config.total_timesteps - total_steps) // rollout_steps
    running_returns = np.zeros(config.n_envs, np.float32)
    running_agent = np.zeros((config.n_envs, battles.n_blue), np.float32)
    history: list[dict[str, Any]] = []
    progress = _progress(config, n_updates * rollout_steps)
    for _ in range(n_updates):
        started = time.perf_counter()
        rollout = collect(policy, battles, n_steps, config.gamma, running_returns,
                          running_agent)
        collected = time.perf_counter()
        advantages, returns = advantages_and_returns(rollout, config.gamma, config.gae_lambda)
        metrics = update(policy, optimizer, rollout, advantages, returns, config, generator)
        total_steps += rollout_steps
        episodes += len(rollout.wins)
        now = time.perf_counter()
        metrics.update({
            "time/total_steps": total_steps, "time/episodes": episodes,
            "time/fps": rollout_steps / (now - started),
            "time/rollout_fps": rollout_steps / (collected - started),
            "rollout/n_wins": int(sum(rollout.wins)), "reward/n_episodes": len(rollout.wins),
            "curriculum/n_blue": battles.n_blue, "curriculum/n_red": battles.n_red,
        })
        if rollout.wins:
            metrics["rollout/win_rate"] = float(np.mean(rollout.wins))
            metrics["reward/team_mean"] = float(np.mean(rollout.episode_returns))
            per_agent = np.mean(rollout.agent_returns, axis=0)
            metrics.update({f"reward/agent_{i}": float(r) for i, r in enumerate(per_agent)})

        if scheduler is not None:
            scheduler.record_episodes(rollout.wins)
            if scheduler.should_promote():
                metrics["curriculum/promotion_win_rate"] = scheduler.win_rate()
                metrics["curriculum/promoted_from"] = scheduler.stage_label
                scheduler.promote()
                scheduler.log_promotion_event(total_steps, run)
                metrics["curriculum/promotion_step"] = total_steps
                # One network for every team size: swap the battles, keep the weights.
                sizes = scheduler.env_kwargs()
                opponents = [policy for policy, _ in battles.opponents]
                battles = TrainingBattles(config, sizes["n_blue"], sizes["n_red"], rng)
                if opponents:
                    battles.deal(opponents, config.self_play_scripted_share)
                running_returns = np.zeros(config.n_envs, np.float32)
                running_agent = np.zeros((config.n_envs, battles.n_blue), np.float32)
            metrics.update(scheduler.wandb_metrics())

        if pool is not None and snapshot_due(total_steps):
            self_play_version += 1
            pool.add(policy, self_play_version)
            battles.deal(_sample_members(pool, rng), config.self_play_scripted_share)
            metrics["self_play/pool_size"] = pool.size
        if pool is not None and pool.size and pool_eval_due(total_steps):
            metrics.update(_evaluate_against_pool(policy, pool, battles, config, registry,
                                                  rng, total_steps))
        if eval_due(total_steps):
            metrics.update(_evaluate_against_script(policy, battles, config, registry,
                                                    total_steps))
        _log(run, writer, metrics, total_steps)
        history.append(metrics)
        if checkpoint_due(total_steps):
            save_checkpoint(checkpoint_dir / CHECKPOINT_NAME, policy, optimizer, total_steps,
                            episodes, config, scheduler, rng, generator,
                            self_play_version)
        if progress is not None:
            progress.update(rollout_steps)
            progress.set_postfix(win=f"{metrics.get('rollout/win_rate', float('nan')):.2f}",
                                 stage=f"{battles.n_blue}v{battles.n_red}")
        elif config.verbose:
            logger.info("step %d: %dv%d, win rate %.2f, %.0f env-steps/s", total_steps,
                        battles.n_blue, battles.n_red,
                        metrics.get("rollout/win_rate", float("nan")), metrics["time/fps"])
    if progress is not None:
        progress.close()
    final = save_checkpoint(checkpoint_dir / FINAL_CHECKPOINT_NAME, policy, optimizer,
                            total_steps, episodes, config, scheduler, rng, generator,
                            self_play_version)
    if writer is not None:
        writer.close()
    if run is not None:
        log_artifact(run, "mappo_policy_final", final, owns_run)
    return MAPPOResult(policy, total_steps, episodes, history, final, transfer)


def _resolve_config(config: MAPPOConfig | None, overrides: dict[str, Any]) -> MAPPOConfig:
    if config is not None and not isinstance(config, MAPPOConfig):
        raise TypeError(f"config={config!r} is invalid: expected a MAPPOConfig or None")
    check_mappo_field_names(overrides)
    return (config or MAPPOConfig()).replace(**overrides) if overrides else (
        config or MAPPOConfig())


def _device(name: str) -> torch.device:
    """The torch device of a config's ``device`` ("auto": CUDA when available)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def _sample_members(pool: TeamOpponentPool, rng: np.random.Generator) -> list[MAPPOPolicy]:
    """Up to ``OPPONENTS_PER_SWAP`` distinct pool members, drawn uniformly."""
    paths = pool.snapshot_paths
    chosen = rng.choice(len(paths), size=min(OPPONENTS_PER_SWAP, len(paths)), replace=False)
    return [pool.load(paths[i]) for i in sorted(chosen)]


def _evaluate_against_script(policy: MAPPOPolicy, battles: TrainingBattles,
                             config: MAPPOConfig, registry: TeamEloRegistry,
                             total_steps: int) -> dict[str, float]:
    """Deterministic battles against the scripted Red at the current team sizes."""
    outcomes = play_team_battles(policy, config.red_level, n_blue=battles.n_blue,
                                 n_red=battles.n_red, n_episodes=config.n_eval_episodes,
                                 seed=10**6 + total_steps, env_kwargs=config.field_kwargs())
    opponent = f"scripted_team_l{config.red_level}"
    registry.update(config.elo_agent_name, opponent, score(outcomes),
                    n_games=len(outcomes))
    registry.save()
    return {"eval/win_rate": float((outcomes == WIN).mean()),
            "eval/draw_rate": float((outcomes == 0).mean()),
            "eval/loss_rate": float((outcomes < 0).mean()),
            "elo/team_rating": registry.get_rating(config.elo_agent_name)}


def _evaluate_against_pool(policy: MAPPOPolicy, pool: TeamOpponentPool,
                           battles: TrainingBattles, config: MAPPOConfig,
                           registry: TeamEloRegistry, rng: np.random.Generator,
                           total_steps: int) -> dict[str, float]:
    """Win rate against a sampled snapshot, the exploitability proxy, the Elo update."""
    path = pool.snapshot_paths[int(rng.integers(pool.size))]
    outcomes = play_team_battles(policy, pool.load(path), n_blue=battles.n_blue,
                                 n_red=battles.n_red,
                                 n_episodes=config.self_play_n_eval_episodes,
                                 seed=2 * 10**6 + total_steps, env_kwargs=config.field_kwargs())
    registry.update(config.elo_agent_name, path.stem, score(outcomes), n_games=len(outcomes))
    registry.save()
    exploitability = nash_exploitability_proxy(
        policy, pool, battles.n_blue, battles.n_red, config.self_play_exploitability_episodes,
        seed=3 * 10**6 + total_steps, env_kwargs=config.field_kwargs())
    return {"self_play/win_rate_vs_pool": float((outcomes == WIN).mean()),
            "self_play/exploitability": exploitability,
            "elo/team_rating": registry.get_rating(config.elo_agent_name)}


def _tensorboard(log_dir: str):
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(str(Path(log_dir) / "mappo"))


def _log(run: Any, writer: Any, metrics: dict[str, Any], step: int) -> None:
    numbers = {k: v for k, v in metrics.items() if isinstance(v, (int, float, np.number))}
    if writer is not None:
        for key, value in numbers.items():
            writer.add_scalar(key, value, step)
    if run is not None:
        run.log(dict(metrics), step=step)


def _progress(config: MAPPOConfig, total: int):
    if not config.progress_bar:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="step", desc="MAPPO", dynamic_ncols=True)


# --- command line ------------------------------------------------------------------

def resolve_resume(resume: dict[str, Any], config: MAPPOConfig) -> Path | None:
    """The checkpoint a CLI run continues from: ``resume.checkpoint`` if set (it must
    exist), else with ``resume.auto`` the run's ``mappo_policy.pt`` if present."""
    explicit = resume.get("checkpoint")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise FileNotFoundError(f"resume.checkpoint={explicit!r}: no such checkpoint")
        return path
    if resume.get("auto"):
        path = Path(config.checkpoint_dir) / CHECKPOINT_NAME
        return path if path.is_file() else None
    return None


def main() -> None:
    """Hydra entry point: ``python training/train_mappo.py key=value ...``."""
    import hydra
    from omegaconf import OmegaConf

    @hydra.main(config_path=str(CONFIG_DIR), config_name="experiment_mappo_2v2",
                version_base=None)
    def run(cfg) -> None:
        nested = OmegaConf.to_container(cfg, resolve=True)
        config = mappo_config_from_nested(nested)
        resume = resolve_resume(nested.get("resume") or {}, config)
        if resume is not None:
            print(f"Resuming from {resume}")
        result = train_mappo(config, resume=resume)
        last = next((h for h in reversed(result.history) if "eval/win_rate" in h), None)
        print(f"Trained for {result.total_steps} env-steps ({result.episodes} battles); "
              f"final checkpoint {result.final_checkpoint}")
        if last is not None:
            print(f"Last evaluation vs scripted L{config.red_level}: "
                  f"won {last['eval/win_rate']:.0%}, drawn {last['eval/draw_rate']:.0%}")

    run()


if __name__ == "__main__":
    main()


__all__ = ["MAPPOConfig", "MAPPOResult", "TrainingBattles", "advantages_and_returns",
           "collect", "load_checkpoint", "policy_from_checkpoint", "save_checkpoint",
           "train_mappo", "update"]
