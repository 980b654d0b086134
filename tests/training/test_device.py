"""Every trainer honours its ``device`` setting through one helper
(:func:`training.common.device.resolve_device`): ``cpu`` trains there, and ``cuda`` on a
machine without CUDA is a clear ``ValueError`` naming the setting, never a silent CPU run."""

from __future__ import annotations

import pytest
import torch

from training.common.device import check_device_name, resolve_device

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(),
                             reason="this machine has CUDA: device='cuda' is valid here")
CUDA_REFUSED = r"device='cuda' is invalid: CUDA is not available"


def test_cpu_and_auto_resolve_to_a_device():
    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


@pytest.mark.parametrize("value", ["gpu", "cuda:", "cuda:x", "cuda:0:1", "CPU", "", 0, None])
def test_a_name_that_is_no_device_is_refused_with_the_field(value):
    with pytest.raises(ValueError, match=r"training\.device=.*expected 'auto', 'cpu'"):
        resolve_device(value, field="training.device")
    with pytest.raises(ValueError, match="expected 'auto'"):
        check_device_name("device", value)


def test_device_names_a_config_accepts_pass_the_check():
    for value in ("auto", "cpu", "cuda", "cuda:0", "cuda:12"):
        assert check_device_name("device", value) == value


@NO_CUDA
@pytest.mark.parametrize("value", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_cuda_is_a_clear_error(value):
    with pytest.raises(ValueError, match=rf"my_device='{value}' is invalid: CUDA is not"):
        resolve_device(value, field="my_device")


def test_a_cuda_index_beyond_the_machine_is_refused():
    index = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(ValueError, match=f"device='cuda:{index}' is invalid"):
        resolve_device(f"cuda:{index}")


# --- each trainer ------------------------------------------------------------------------

def mappo_config(tmp_path, **changes):
    from training.mappo.config import MAPPOConfig

    return MAPPOConfig(**dict(n_envs=4, n_steps=8, batch_size=16, n_epochs=1, max_steps=20,
                              total_timesteps=32, enable_wandb=False, progress_bar=False,
                              warm_start_doctrine=None, checkpoint_dir=str(tmp_path / "ck"),
                              log_dir=str(tmp_path / "logs")), **changes)


def test_mappo_updates_on_the_cpu(tmp_path):
    trainer = trainer_on("mappo", tmp_path, "cpu")
    assert trainer.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in trainer.policy.parameters())
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    metrics = trainer.learn_from(trainer.collect_rollout())
    assert metrics["train/approx_kl"] == metrics["train/approx_kl"]  # a number, not NaN
    after = list(trainer.policy.parameters())
    assert any(not torch.equal(a, p) for a, p in zip(before, after, strict=True))


def wfm1_config(tmp_path, **changes):
    from training.wfm1.config import WFM1TrainConfig

    return WFM1TrainConfig(**dict(
        total_timesteps=64, n_envs=4, n_steps=16, batch_size=32, scenarios_per_rollout=2,
        max_side=3, max_steps=30, enable_wandb=False, warm_start_steps=0,
        checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "logs"), verbose=0,
        d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1), **changes)


def test_wfm1_rolls_out_and_updates_on_its_device(tmp_path):
    trainer = trainer_on("wfm1", tmp_path, "cpu")
    assert trainer.device == torch.device("cpu") == trainer.policy.device
    rollout = trainer.collect_rollout()
    tensors = {name: value for name, value in vars(rollout).items()
               if isinstance(value, torch.Tensor)}
    assert {"tokens", "actions", "teacher", "rewards", "dones", "last_values"} <= set(tensors)
    assert {value.device for value in tensors.values()} == {trainer.device}
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    metrics = trainer.learn_from(rollout)
    assert metrics["train/teacher_loss"] > 0
    after = list(trainer.policy.parameters())
    assert any(not torch.equal(a, p) for a, p in zip(before, after, strict=True))


def test_sb3_train_runs_on_the_cpu(tmp_path):
    from tests.training.conftest import tiny_config
    from training.train import train

    model = train(total_timesteps=256, device="cpu", **tiny_config(tmp_path))
    assert model.device == torch.device("cpu")
    # The observation statistics' fit takes the budget's 256 steps (one rollout's worth);
    # the PPO rollout that always follows it is learned on the CPU too.
    assert model.num_timesteps == 256 + 256 and model._n_updates == 1


@NO_CUDA
def test_sb3_train_refuses_cuda_before_any_work(tmp_path):
    from tests.training.conftest import tiny_config
    from training.train import train

    with pytest.raises(ValueError, match=CUDA_REFUSED):
        train(total_timesteps=256, device="cuda", **tiny_config(tmp_path))
    assert not (tmp_path / "ck").exists()


def brigade_config(tmp_path, **changes):
    from training.echelons.config import BrigadeConfig

    return BrigadeConfig(n_envs=4, n_steps=8, batch_size=16, n_epochs=1, total_timesteps=64,
                         map_width=600.0, map_height=600.0, max_steps=40, temporal_ratio=5,
                         randomize_terrain=False, enable_wandb=False, progress_bar=False,
                         log_dir=str(tmp_path / "logs"), checkpoint_dir=str(tmp_path / "ck"),
                         **changes)


def test_echelon_learner_updates_on_the_cpu(tmp_path):
    learner = trainer_on("echelon", tmp_path, "cpu")
    try:
        assert learner.model.device == torch.device("cpu")
        metrics = learner.learn_from(learner.collect_rollout())
        assert "train/approx_kl" in metrics
    finally:
        learner.close()


def trainer_on(trainer, tmp_path, device):
    """A tiny run's ``trainer`` (``"mappo"``, ``"wfm1"`` or ``"echelon"``, the league's
    brigade learner) on ``device``, writing under ``tmp_path``."""
    if trainer == "mappo":
        from training.mappo.trainer import MAPPOTrainer

        return MAPPOTrainer(mappo_config(tmp_path, device=device))
    if trainer == "wfm1":
        from training.wfm1.trainer import WFM1Trainer

        return WFM1Trainer(wfm1_config(tmp_path, device=device))
    from training.league.echelon_learner import EchelonLearner

    return EchelonLearner(brigade_config(tmp_path, device=device))


@NO_CUDA
@pytest.mark.parametrize("trainer", ["mappo", "wfm1", "echelon"])
def test_a_trainer_refuses_cuda_without_cuda(tmp_path, trainer):
    with pytest.raises(ValueError, match=CUDA_REFUSED):
        trainer_on(trainer, tmp_path, "cuda")
