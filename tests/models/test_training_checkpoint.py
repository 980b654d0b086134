"""The one training checkpoint (models.weights): every field round-trips, bad files are
refused by name, and the trainers' version-1 layouts load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.mappo_policy import MAPPOPolicy
from models.weights import (
    CHECKPOINT_FORMAT,
    TrainingCheckpoint,
    read_checkpoint,
    write_checkpoint,
)
from models.wfm1 import WFM1Policy
from storage.files import UntrustedCheckpointError
from training.mappo import checkpoints as mappo_checkpoints
from training.wfm1 import checkpoints as wfm1_checkpoints

SMALL_WFM1 = dict(d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1)


def trained_state(seed: int = 0) -> tuple[MAPPOPolicy, torch.optim.Optimizer]:
    """A small policy and an Adam that has taken a step (so it has moments)."""
    torch.manual_seed(seed)
    policy = MAPPOPolicy(obs_dim=6, action_dim=3, state_dim=8, n_agents=2)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    loss = sum(p.square().sum() for p in policy.parameters())
    loss.backward()
    optimizer.step()
    return policy, optimizer


def full_checkpoint() -> TrainingCheckpoint:
    policy, optimizer = trained_state()
    rng = np.random.default_rng(5)
    rng.random(3)
    generator = torch.Generator().manual_seed(9)
    torch.randperm(10, generator=generator)
    return TrainingCheckpoint(
        kind="mappo", kwargs=policy.kwargs, weights=policy.state_dict(),
        optimizer=optimizer.state_dict(),
        counters={"total_steps": 1280, "episodes": 17, "updates": 10, "best": 0.625},
        rng={"numpy": rng.bit_generator.state, "torch": torch.get_rng_state(),
             "minibatch": generator.get_state()},
        extras={"config": {"lr": 1e-3, "sizes": [1, 2], "name": "run"}, "curriculum": None,
                "driver": {"league_role": {"version": 3}}})


def test_every_field_round_trips(tmp_path):
    written = full_checkpoint()
    path = write_checkpoint(tmp_path / "sub" / "ck.pt", written)
    assert path == tmp_path / "sub" / "ck.pt"
    assert [p.name for p in path.parent.iterdir()] == ["ck.pt"]  # no temporary left
    raw = torch.load(path, weights_only=True)  # tensors and plain values only
    assert raw["checkpoint_format"] == CHECKPOINT_FORMAT
    # The keys the contract names for MAPPO's file stay top-level.
    assert {"kwargs", "policy_state_dict", "optimizer_state_dict", "total_steps",
            "episodes"} <= set(raw)
    read = read_checkpoint(path, "test checkpoint", "mappo")
    assert read.kind == "mappo" and read.kwargs == written.kwargs
    assert read.weights.keys() == written.weights.keys()
    for key, value in written.weights.items():
        assert torch.equal(read.weights[key], value), key
    assert read.counters == written.counters
    assert read.rng["numpy"] == written.rng["numpy"]
    assert torch.equal(read.rng["torch"], written.rng["torch"])
    assert torch.equal(read.rng["minibatch"], written.rng["minibatch"])
    assert read.extras == written.extras
    # The optimiser's moments come back exactly: a restored Adam steps as the original.
    policy, optimizer = trained_state()
    twin, twin_optimizer = trained_state(seed=1)
    twin.load_state_dict(read.weights)
    twin_optimizer.load_state_dict(read.optimizer)
    for model, adam in ((policy, optimizer), (twin, twin_optimizer)):
        adam.zero_grad()
        sum(p.sum() for p in model.parameters()).backward()
        adam.step()
    for a, b in zip(policy.parameters(), twin.parameters(), strict=True):
        assert torch.equal(a, b)


def test_restored_generators_draw_the_same_numbers(tmp_path):
    rng, generator = np.random.default_rng(3), torch.Generator().manual_seed(4)
    checkpoint = full_checkpoint()
    checkpoint.rng = {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state(),
                      "minibatch": generator.get_state()}
    write_checkpoint(tmp_path / "ck.pt", checkpoint)
    expected = (rng.random(4), torch.rand(4), torch.randperm(8, generator=generator))
    read = read_checkpoint(tmp_path / "ck.pt", "test checkpoint", "mappo")
    again, other = np.random.default_rng(0), torch.Generator()
    again.bit_generator.state = read.rng["numpy"]
    torch.set_rng_state(read.rng["torch"])
    other.set_state(read.rng["minibatch"])
    assert np.array_equal(again.random(4), expected[0])
    assert torch.equal(torch.rand(4), expected[1])
    assert torch.equal(torch.randperm(8, generator=other), expected[2])


def test_a_bad_checkpoint_is_refused_when_written(tmp_path):
    checkpoint = full_checkpoint()
    checkpoint.counters = {"total_steps": 5}
    with pytest.raises(ValueError, match=r"episodes"):
        write_checkpoint(tmp_path / "ck.pt", checkpoint)
    checkpoint.counters = {"total_steps": 5, "episodes": "many"}
    with pytest.raises(ValueError, match=r"counters\['episodes'\]='many'"):
        write_checkpoint(tmp_path / "ck.pt", checkpoint)
    checkpoint = full_checkpoint()
    checkpoint.kind = ""
    with pytest.raises(ValueError, match="checkpoint.kind"):
        write_checkpoint(tmp_path / "ck.pt", checkpoint)
    checkpoint = full_checkpoint()
    checkpoint.extras = [1]
    with pytest.raises(ValueError, match="checkpoint.extras is a list"):
        write_checkpoint(tmp_path / "ck.pt", checkpoint)
    with pytest.raises(TypeError, match="TrainingCheckpoint"):
        write_checkpoint(tmp_path / "ck.pt", {"kind": "mappo"})
    assert not any(tmp_path.iterdir())


def test_a_failed_write_keeps_the_previous_checkpoint(tmp_path):
    path = write_checkpoint(tmp_path / "ck.pt", full_checkpoint())
    before = path.read_bytes()
    broken = full_checkpoint()
    broken.extras = {"not plain": lambda: None}  # torch.save cannot pickle a lambda
    with pytest.raises(Exception):  # noqa: B017  (pickle's error type varies)
        write_checkpoint(path, broken)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


def test_a_wrong_file_is_refused_by_name(tmp_path):
    path = write_checkpoint(tmp_path / "ck.pt", full_checkpoint())
    with pytest.raises(ValueError, match=r"ck.pt is a mappo checkpoint: expected a wfm1 one"):
        read_checkpoint(path, "WFM-1 checkpoint", "wfm1")
    raw = torch.load(path, weights_only=True)
    for key, value, match in (("checkpoint_format", 3, "checkpoint_format=3"),
                              ("counters", None, "missing"),
                              ("rng", [1], "rng of type list")):
        changed = dict(raw)
        if value is None:
            del changed[key]
        else:
            changed[key] = value
        torch.save(changed, tmp_path / "changed.pt")
        with pytest.raises(ValueError, match=match):
            read_checkpoint(tmp_path / "changed.pt", "test checkpoint", "mappo")
    torch.save({"kwargs": {}, "state_dict": {}}, tmp_path / "old.pt")
    with pytest.raises(ValueError, match="no checkpoint_format"):
        read_checkpoint(tmp_path / "old.pt", "test checkpoint", "mappo")
    with pytest.raises(FileNotFoundError):
        read_checkpoint(tmp_path / "missing.pt", "test checkpoint", "mappo")


def test_pickled_objects_are_never_loaded(tmp_path):
    torch.save({"checkpoint_format": CHECKPOINT_FORMAT, "extras": np.float16},
               tmp_path / "pickle.pt")
    with pytest.raises(UntrustedCheckpointError):
        read_checkpoint(tmp_path / "pickle.pt", "test checkpoint", "mappo")


def test_mappo_checkpoints_of_the_earlier_layout_still_load(tmp_path):
    policy, optimizer = trained_state()
    rng = np.random.default_rng(1)
    old = {"kwargs": policy.kwargs, "policy_state_dict": policy.state_dict(),
           "optimizer_state_dict": optimizer.state_dict(), "total_steps": 256,
           "episodes": 4, "config": {"seed": 1}, "curriculum": {"stage": 2},
           "numpy_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
           "minibatch_rng": torch.Generator().get_state(), "self_play_version": 3,
           "extra": {"league_role": {"version": 1}}}
    torch.save(old, tmp_path / "mappo_policy.pt")
    read = mappo_checkpoints.load_checkpoint(tmp_path / "mappo_policy.pt")
    assert read.counters == {"total_steps": 256, "episodes": 4, "self_play_version": 3}
    assert read.rng["numpy"] == old["numpy_rng"]
    assert read.extras == {"config": {"seed": 1}, "curriculum": {"stage": 2},
                           "driver": {"league_role": {"version": 1}}}
    restored = mappo_checkpoints.policy_from_checkpoint(tmp_path / "mappo_policy.pt")
    assert all(torch.equal(a, b) for a, b in zip(restored.state_dict().values(),
                                                 policy.state_dict().values(), strict=True))
    del old["minibatch_rng"]
    torch.save(old, tmp_path / "torn.pt")
    with pytest.raises(ValueError, match=r"not a MAPPO training checkpoint: missing "
                                         r"\['minibatch_rng'\]"):
        mappo_checkpoints.load_checkpoint(tmp_path / "torn.pt")


def test_wfm1_checkpoints_of_either_layout_load_as_training_checkpoints_and_policies(tmp_path):
    torch.manual_seed(0)
    policy = WFM1Policy(**SMALL_WFM1)
    optimizer = torch.optim.Adam(policy.parameters())
    rng = np.random.default_rng(2)
    old = {"config": policy.kwargs, "state_dict": policy.state_dict(),
           "optimizer": optimizer.state_dict(), "counters": [512, 4, 9],
           "best_validation": 0.5, "numpy_rng": rng.bit_generator.state,
           "torch_rng": torch.get_rng_state()}
    torch.save(old, tmp_path / "old.pt")
    legacy = wfm1_checkpoints.load_checkpoint(tmp_path / "old.pt")
    assert legacy.counters == {"total_steps": 512, "updates": 4, "episodes": 9,
                               "best_validation": 0.5}

    class Config:
        def to_dict(self):
            return {"seed": 2}

    path = wfm1_checkpoints.save_checkpoint(
        tmp_path / "new.pt", policy, optimizer, total_steps=512, updates=4, episodes=9,
        best_validation=0.5, rng=rng, config=Config())
    read = wfm1_checkpoints.load_checkpoint(path)
    # The new layout adds the self-play version (0: no snapshot; the trainer reads a
    # checkpoint without it as 0).
    assert read.counters == {**legacy.counters, "self_play_version": 0}
    assert read.extras == {"config": {"seed": 2}}
    assert read.rng["numpy"] == legacy.rng["numpy"]
    for file in (path, tmp_path / "old.pt"):  # every trainer checkpoint is a policy file
        loaded = WFM1Policy.load_checkpoint(file)
        assert loaded.kwargs == policy.kwargs
        assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(),
                                                     policy.state_dict().values(), strict=True))
    with pytest.raises(ValueError, match="is a wfm1 checkpoint: expected a mappo one"):
        mappo_checkpoints.load_checkpoint(path)
