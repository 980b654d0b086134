"""``target_kl`` stops an update's passes in every trainer by one rule
(:func:`training.common.ppo_math.kl_exceeded`, Stable-Baselines3's): the first minibatch
whose approx-KL is above ``1.5 * target_kl`` gets no gradient step, and the update ends.
The first minibatch of an update meets the rollout's own policy (approx-KL 0), so with a
tiny ``target_kl`` exactly one gradient step is taken."""

from __future__ import annotations

import pytest

from tests.training.test_device import brigade_config, mappo_config, wfm1_config
from training.common.ppo_math import kl_exceeded

TINY_KL = 1e-12


def test_the_rule_is_sb3_s():
    assert not kl_exceeded(0.5, None)
    assert not kl_exceeded(0.015, 0.01) and kl_exceeded(0.0151, 0.01)


@pytest.mark.parametrize("value", [0, -0.1, "0.1", float("nan")])
def test_a_target_kl_that_is_not_positive_is_refused_by_name(value):
    from training.ppo.config import TrainingConfig

    with pytest.raises(ValueError, match="target_kl"):
        TrainingConfig(target_kl=value)


def counting_steps(monkeypatch, module):
    """Count ``module.gradient_step`` calls (the real step still runs)."""
    steps = []
    real = module.gradient_step

    def step(*args, **kwargs):
        steps.append(1)
        real(*args, **kwargs)

    monkeypatch.setattr(module, "gradient_step", step)
    return steps


@pytest.mark.parametrize("target_kl, expected", [(None, 4), (TINY_KL, 1)])
def test_mappo_stops_its_passes(tmp_path, monkeypatch, target_kl, expected):
    from training.common import on_policy
    from training.mappo.trainer import MAPPOTrainer

    steps = counting_steps(monkeypatch, on_policy)
    # 4 battles x 8 steps x 2 battalions = 64 samples: 4 minibatches of 16, 1 pass.
    trainer = MAPPOTrainer(mappo_config(tmp_path, target_kl=target_kl))
    trainer.learn_from(trainer.collect_rollout())
    assert len(steps) == expected


@pytest.mark.parametrize("target_kl, expected", [(None, 2), (TINY_KL, 1)])
def test_wfm1_stops_its_passes(tmp_path, monkeypatch, target_kl, expected):
    from training.common import on_policy
    from training.wfm1.trainer import WFM1Trainer

    steps = counting_steps(monkeypatch, on_policy)
    # 4 battles x 16 steps = 64 samples in whole minibatches of 32, 1 pass.
    trainer = WFM1Trainer(wfm1_config(tmp_path, n_epochs=1, target_kl=target_kl))
    trainer.learn_from(trainer.collect_rollout())
    assert len(steps) == expected


@pytest.mark.parametrize("target_kl, expected", [(None, 8), (TINY_KL, 1)])
def test_train_s_guided_ppo_stops_its_passes(tmp_path, monkeypatch, target_kl, expected):
    from tests.training.conftest import tiny_config
    from training.common import on_policy
    from training.train import train

    steps = counting_steps(monkeypatch, on_policy)
    # The first 256 steps fit the observation statistics, the next 256 are one rollout.
    model = train(**tiny_config(tmp_path, total_timesteps=512, n_envs=4, n_steps=64,
                                batch_size=128, n_epochs=4, target_kl=target_kl))
    assert model.target_kl == target_kl
    assert len(steps) == expected  # one update: 2 minibatches x 4 passes, or the first


def test_the_echelon_learner_gives_it_to_sb3(tmp_path):
    from training.league.echelon_learner import EchelonLearner

    learner = EchelonLearner(brigade_config(tmp_path, target_kl=0.02))
    try:
        assert learner.model.target_kl == 0.02
    finally:
        learner.close()
