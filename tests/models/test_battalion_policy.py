"""The v1 commander's policy: observation standardisation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from envs.vec_env import BattalionVecEnv
from models.battalion_policy import BattalionMlpPolicy, StandardizedFlatten
from models.standardize import MIN_FEATURE_STD
from training.common.imitation import make_doctrine
from training.ppo.checkpoints import load_ppo, save_ppo
from training.ppo.warm_start import fit_on_own_play, imitate


def _model(normalize: bool, seed: int = 3) -> PPO:
    return PPO(BattalionMlpPolicy, BattalionVecEnv(4), n_steps=8, batch_size=16, device="cpu",
               seed=seed, policy_kwargs={"normalize_observations": normalize})


def _observations(n: int = 50) -> np.ndarray:
    return np.random.default_rng(0).uniform(0, 1, (n, 25)).astype(np.float32)


def test_an_unfitted_standardisation_is_the_identity():
    obs = _observations()
    plain, normalised = _model(False), _model(True)
    assert isinstance(normalised.policy.features_extractor, StandardizedFlatten)
    assert np.array_equal(plain.predict(obs, deterministic=True)[0],
                          normalised.predict(obs, deterministic=True)[0])


def test_fitted_features_are_centred_and_scaled_and_not_trained():
    model = _model(True)
    recorded = torch.as_tensor(_observations(400))
    recorded[:, 5] = 0.5  # a feature that never varies is centred, not magnified
    model.policy.fit_observation_statistics(recorded)
    features = model.policy.extract_features(recorded)
    assert torch.allclose(features.mean(0), torch.zeros(25), atol=1e-5)
    spread = features.std(0)
    assert torch.allclose(spread[torch.arange(25) != 5], torch.ones(24), atol=1e-4)
    assert model.policy.features_extractor.standardize.std[5] == pytest.approx(MIN_FEATURE_STD)
    names = {name for name, _ in model.policy.named_parameters()}
    assert not any("features_extractor" in name for name in names)


def test_statistics_survive_a_checkpoint(tmp_path):
    model = _model(True)
    model.policy.fit_observation_statistics(torch.as_tensor(_observations(400)) * 0.1)
    loaded = load_ppo(save_ppo(model, tmp_path / "normalised"))
    assert loaded.policy.normalize_observations
    assert torch.equal(loaded.policy.features_extractor.standardize.std,
                       model.policy.features_extractor.standardize.std)
    obs = _observations() * 0.1
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0],
                          model.predict(obs, deterministic=True)[0])


def test_the_warm_start_and_own_play_fit_the_statistics():
    fits = [(lambda m: imitate(m, m.env, make_doctrine("disciplined", 1000.0, 1000.0), 400,
                               epochs=1), 400),
            (lambda m: fit_on_own_play(m, m.env, 40), 40)]
    for fit, steps in fits:
        model = _model(True)
        assert fit(model) == steps
        assert not torch.equal(model.policy.features_extractor.standardize.std, torch.ones(25))


def test_misuse_is_refused():
    with pytest.raises(ValueError, match="normalize_observations=True"):
        _model(False).policy.fit_observation_statistics(torch.zeros(2, 25))
    with pytest.raises(ValueError, match="features_extractor_class"):
        PPO(BattalionMlpPolicy, BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu",
            policy_kwargs={"features_extractor_class": StandardizedFlatten})
