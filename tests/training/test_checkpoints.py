"""Saving and loading PPO checkpoints without running pickled code."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from envs.vec_env import BattalionVecEnv
from training.ppo.checkpoints import UntrustedCheckpointError, load_ppo, save_ppo


def test_trained_checkpoint_loads_safely_and_predicts_the_same(tiny_checkpoint):
    model = load_ppo(tiny_checkpoint)
    again = load_ppo(str(tiny_checkpoint).removesuffix(".zip"))  # suffix optional
    obs = np.random.default_rng(0).uniform(0, 1, (5, 25)).astype(np.float32)
    assert np.array_equal(model.predict(obs, deterministic=True)[0],
                          again.predict(obs, deterministic=True)[0])
    assert type(model.policy).__name__ == "BattalionMlpPolicy"


def test_plain_sb3_checkpoints_load_too(tmp_path):
    model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu")
    path = save_ppo(model, tmp_path / "plain")
    assert path.name == "plain.zip" and [p.name for p in tmp_path.iterdir()] == ["plain.zip"]
    assert type(load_ppo(path).policy).__name__ == "ActorCriticPolicy"


def test_unverifiable_pickles_are_refused_unless_trusted(tmp_path):
    model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu",
                policy_kwargs={"activation_fn": torch.nn.ReLU})
    path = save_ppo(model, tmp_path / "relu")
    with pytest.raises(UntrustedCheckpointError, match="policy_kwargs"):
        load_ppo(path)
    assert load_ppo(path, trusted=True).policy is not None


def test_missing_and_foreign_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing"):
        load_ppo(tmp_path / "nothing")
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.zip"):
        load_ppo(tmp_path / "junk.zip")


def test_loading_leaves_the_global_random_generators_alone(tiny_checkpoint):
    # SB3's PPO.load re-seeds them with the saved run's seed: a self-play run that
    # loads an opponent would restart its own exploration noise.
    import random

    torch.manual_seed(123)
    random.seed(123)
    np.random.seed(123)  # noqa: NPY002  (the legacy generator SB3 seeds)
    expected = (torch.rand(3), random.random(), np.random.random())  # noqa: NPY002
    torch.manual_seed(123)
    random.seed(123)
    np.random.seed(123)  # noqa: NPY002
    load_ppo(tiny_checkpoint)
    got = (torch.rand(3), random.random(), np.random.random())  # noqa: NPY002
    assert torch.equal(got[0], expected[0]) and got[1:] == expected[1:]
