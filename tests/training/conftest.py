"""Shared fixtures: a tiny trained PPO checkpoint, an isolated W&B and working directory."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def offline_wandb(monkeypatch, tmp_path):
    # W&B never touches the network in tests, and writes only under tmp_path.
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb_home"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb_cache"))


TINY = dict(n_envs=4, n_steps=64, batch_size=256, n_epochs=1, checkpoint_freq=512,
            eval_freq=512, n_eval_episodes=2, max_steps=100, progress_bar=False, verbose=0,
            enable_wandb=False, warm_start_doctrine=None)


def tiny_config(tmp_path, **changes):
    """Settings for a few-second run writing everything under ``tmp_path``."""
    return dict(TINY, checkpoint_dir=str(tmp_path / "ck"),
                manifest_path=str(tmp_path / "ck" / "manifest.jsonl"),
                log_dir=str(tmp_path / "logs"), **changes)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    from training.train import train

    root = tmp_path_factory.mktemp("tiny_model")
    train(total_timesteps=512, **tiny_config(root))
    return root / "ck" / "ppo_battalion_s42_c5_final.zip"


def record_teachers(monkeypatch, module) -> list:
    """Make ``module``'s ``make_doctrine`` record every doctrine it builds; returns the list."""
    from training.common.imitation import make_doctrine

    teachers = []

    def recorded(*args, **kwargs):
        teachers.append(make_doctrine(*args, **kwargs))
        return teachers[-1]

    monkeypatch.setattr(module, "make_doctrine", recorded)
    return teachers


class FakeRun:
    """A stand-in W&B run that keeps every ``log`` call as ``(data, step)``."""

    def __init__(self):
        self.calls = []

    def log(self, data, step=None):
        self.calls.append((data, step))
