"""Every trainer trains its whole budget: whole rollouts until ``total_timesteps`` is
reached (Stable-Baselines3's ``learn(N)``: the last rollout may pass it), warm-start steps
included, with at least one PPO update after a warm start
(:func:`training.common.on_policy.steps_to_learn`).

Each run's rollout does not divide what the warm start leaves of the budget (checked by
:func:`floor_rule_falls_short`), so a floor rule, "stop at the last whole rollout that
fits", would stop short of ``total_timesteps``, and for the duel's default rollout
(8,192 env-steps after a 30 % warm start) with no PPO update at all: every test here
fails under it.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from tests.forked import run_module

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = [4096, 10_000]


def floor_rule_falls_short(total: int, warm: int, rollout: int) -> bool:
    """Whether a floor rule (whole rollouts while one more fits) stops before ``total``
    after ``warm`` steps of warm start: the rounding is exercised."""
    return warm + (total - warm) // rollout * rollout < total


def recorded_returns(monkeypatch, module, name: str) -> list:
    """Make ``module.name`` record what each call returns (the real function still runs);
    returns the list it appends to (a warm start's steps)."""
    returned = []
    real = getattr(module, name)

    def recorded(*args, **kwargs):
        returned.append(real(*args, **kwargs))
        return returned[-1]

    monkeypatch.setattr(module, name, recorded)
    return returned


def assert_whole_rollouts_to_the_budget(trained: int, total: int, warm: int,
                                        rollout: int) -> int:
    """``trained`` is ``warm`` plus whole rollouts, at least one, reaching ``total`` and
    not one more than that needs; returns the rollouts."""
    rollouts, rest = divmod(trained - warm, rollout)
    assert rest == 0 and rollouts >= 1, (trained, warm, rollout)
    assert trained >= total, (trained, total)
    assert trained - rollout < total, (trained, total, rollout)  # no rollout too many
    return rollouts


# --- the duel: training.train.train (Stable-Baselines3) --------------------------------------

@pytest.mark.parametrize("total", BUDGETS)
def test_train_trains_its_budget_after_the_default_warm_start(tmp_path, monkeypatch, total):
    """The duel's defaults (rollouts of 8,192 env-steps, the doctrine imitated for 30 % of
    the budget) with four battles: under a floor rule ``train(total_timesteps=10_000,
    n_envs=4)`` stops after the imitation's 3,000 steps, with no PPO update."""
    # The package exports the function train, which hides the module's name.
    train_module = importlib.import_module("training.train")
    warm = recorded_returns(monkeypatch, train_module, "imitate")
    ck = tmp_path / "ck"
    # Fewer passes (PPO's and the imitation's) than the defaults, which the budget ignores.
    model = train_module.train(
        total_timesteps=total, n_envs=4, n_epochs=1, warm_start_epochs=2,
        enable_wandb=False, progress_bar=False, verbose=0,
        checkpoint_dir=str(ck), manifest_path=str(ck / "manifest.jsonl"),
        elo_registry_path=str(ck / "elo.json"), self_play_pool_dir=str(ck / "pool"),
        log_dir=str(tmp_path / "logs"))
    rollout = model.n_steps * model.n_envs
    assert rollout == min(8192, total)  # the default, no more than the budget
    assert len(warm) == 1 and warm[0] == int(0.3 * total) // 4 * 4  # the default warm start
    assert floor_rule_falls_short(total, warm[0], rollout)
    assert warm[0] + rollout > total  # a floor rule trains no PPO at all here
    rollouts = assert_whole_rollouts_to_the_budget(model.num_timesteps, total, warm[0],
                                                   rollout)
    assert model._n_updates == rollouts >= 1  # one pass each


# --- MAPPO ------------------------------------------------------------------------------

def mappo_config(tmp_path, total: int):
    from training.mappo.config import MAPPOConfig

    # The default warm start (the in-step doctrine for 30 % of the budget), fitted briefly;
    # rollouts of 6 battles x 50 steps = 300 env-steps.
    return MAPPOConfig(n_envs=6, n_steps=50, batch_size=100, n_epochs=1, max_steps=40,
                       warm_start_epochs=2, total_timesteps=total, enable_wandb=False,
                       progress_bar=False, checkpoint_dir=str(tmp_path / "ck"),
                       log_dir=str(tmp_path / "logs"))


@pytest.mark.parametrize("total", BUDGETS)
def test_mappo_trains_its_budget_after_its_warm_start(tmp_path, total):
    from training.mappo.trainer import MAPPOTrainer

    trainer = MAPPOTrainer(mappo_config(tmp_path, total))
    warm, rollout = trainer.total_steps, trainer.rollout_steps
    assert warm > 0 and trainer.config.warm_start_doctrine == "in_step"
    assert floor_rule_falls_short(total, warm, rollout)
    trainer.learn()
    rollouts = assert_whole_rollouts_to_the_budget(trainer.total_steps, total, warm, rollout)
    updates = [row for row in trainer.history if "train/approx_kl" in row]
    assert len(updates) == rollouts and trainer.ppo_steps == rollouts * rollout
    assert trainer.budget_spent()


# --- WFM-1 --------------------------------------------------------------------------------

def wfm1_config(tmp_path, total: int):
    from training.wfm1.config import WFM1TrainConfig

    # A short imitation (WFM-1's default is 300,000 battle steps, all but one rollout of a
    # short run, which leaves the rounding nothing to do); rollouts of 16 battles x 15 steps.
    return WFM1TrainConfig(
        total_timesteps=total, n_envs=16, n_steps=15, batch_size=80, n_epochs=1,
        scenarios_per_rollout=2, max_side=3, max_steps=12, warm_start_steps=1000,
        warm_start_epochs=1, enable_wandb=False, verbose=0,
        checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "logs"),
        d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1)


@pytest.mark.parametrize("total", BUDGETS)
def test_wfm1_trains_its_budget_after_its_warm_start(tmp_path, total):
    from training.wfm1.trainer import WFM1Trainer

    trainer = WFM1Trainer(wfm1_config(tmp_path, total))
    warm, rollout = trainer.total_steps, trainer.rollout_steps
    assert warm > 0
    assert floor_rule_falls_short(total, warm, rollout)
    trainer.learn()
    rollouts = assert_whole_rollouts_to_the_budget(trainer.total_steps, total, warm, rollout)
    assert trainer.updates == rollouts
    assert len([row for row in trainer.history if "train/approx_kl" in row]) == rollouts
    assert (tmp_path / "ck" / "wfm1_final.pt").is_file()


# --- the echelons: brigade commanders (Stable-Baselines3) --------------------------------------

@pytest.mark.parametrize("total", BUDGETS)
def test_a_brigade_trains_its_budget_after_its_warm_start(tmp_path, monkeypatch, total):
    from training.echelons import trainer as echelon_trainer
    from training.echelons.brigade import train_brigade

    warm = recorded_returns(monkeypatch, echelon_trainer, "imitate_doctrine")
    # The default warm start (the in-step brigadier, cut to 30 % of the budget), fitted
    # briefly; rollouts of 8 battles x 40 commands = 320 commands.
    result = train_brigade(n_envs=8, n_steps=40, batch_size=160, n_epochs=1,
                           total_timesteps=total, warm_start_epochs=2, eval_freq=10**6,
                           n_eval_episodes=2, checkpoint_freq=10**6, map_width=600.0,
                           map_height=600.0, max_steps=40, temporal_ratio=5,
                           randomize_terrain=False, enable_wandb=False, progress_bar=False,
                           verbose=0, log_dir=str(tmp_path / "logs"),
                           checkpoint_dir=str(tmp_path / "ck"))
    model = result.model
    rollout = model.n_steps * model.n_envs
    assert len(warm) == 1 and warm[0] > 0
    assert floor_rule_falls_short(total, warm[0], rollout)
    assert_whole_rollouts_to_the_budget(model.num_timesteps, total, warm[0], rollout)
    assert model._n_updates >= 1
    assert result.evaluations[-1][0] == model.num_timesteps  # the final evaluation


# --- a league role ----------------------------------------------------------------------------

def main_agent_config(folder: Path, total: int):
    from training.league.config import MainAgentConfig, league_dir_settings

    # The default warm start (the in-step doctrine for 30 % of the budget), fitted briefly;
    # rollouts of 8 battles x 40 steps = 320 env-steps; no evaluation within the run.
    return MainAgentConfig(n_envs=8, rollout_steps=320, n_epochs=1, max_steps=40,
                           warm_start_epochs=2, total_timesteps=total, snapshot_freq=2048,
                           eval_freq=10**6, checkpoint_freq=10**6, n_eval_episodes=2,
                           enable_wandb=False, progress_bar=False,
                           **league_dir_settings("main_agent", folder))


@pytest.mark.parametrize("total", BUDGETS)
def test_a_league_role_trains_its_budget_after_its_warm_start(tmp_path, total):
    from training.league.roles import MainAgentTrainer

    role = MainAgentTrainer.from_config(main_agent_config(tmp_path / "league", total))
    trainer = role.trainer
    warm, rollout = trainer.total_steps, trainer.rollout_steps
    assert warm > 0 and not role.done
    assert floor_rule_falls_short(total, warm, rollout)
    role.learn()
    rollouts = assert_whole_rollouts_to_the_budget(trainer.total_steps, total, warm, rollout)
    assert role.done and trainer.ppo_steps == rollouts * rollout
    status = (tmp_path / "league" / "main_agent" / "status.json").read_text()
    assert '"state": "done"' in status and f'"step": {trainer.total_steps}' in status


# --- the league tutorial's command line ---------------------------------------------------------

def test_the_league_tutorial_cli_snapshots_through_its_whole_budget(tmp_path):
    """The tutorial's main-agent command (docs/league_training_guide.md, seed 002) at 16,384
    env-steps with a snapshot every 4,096, its other settings the config file's: the warm
    start (4,864 env-steps), then rollouts of 8,192 to step 21,248. The initial weights and
    a snapshot at 13,056 and at 21,248: three pool records, where a floor rule stops at
    13,056 with two."""
    from training.league import AgentPool

    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "offline"}
    log = tmp_path / "output.txt"
    code = run_module("training.league.train_main_agent", [
        "training.total_timesteps=16384", "league.snapshot_freq=4096", "wandb.enabled=false",
        "logging.progress_bar=false"], cwd=tmp_path, env=env, log=log, timeout=300)
    assert code == 0, log.read_text(encoding="utf-8")[-4000:]
    records = AgentPool(tmp_path / "checkpoints/league/main_agent/pool.json").list()
    steps = [r.metadata["step"] for r in records]
    assert [r.version for r in records] == list(range(len(records))) and len(records) >= 3
    assert steps[-1] >= 16_384 and steps == sorted(steps), steps
