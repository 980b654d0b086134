"""WFM-1 resumes as the other trainers do: through the safe loader, from the newest
complete checkpoint on disk, with a damaged best-so-far file reported and skipped, and a
FIFO or a folder as ``resume=`` refused at once (it would hang)."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest
import torch

from storage.files import UnreadableFileError, UntrustedCheckpointError
from tests.reliability.hostile import Payload
from training.train_wfm1 import _resume_path
from training.wfm1.checkpoints import load_checkpoint, newest_checkpoint
from training.wfm1.config import WFM1TrainConfig
from training.wfm1.trainer import BEST, LATEST, WARM_START, WFM1Trainer

SMALL_MODEL = dict(d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1)


def tiny_config(tmp_path, **changes) -> WFM1TrainConfig:
    settings = dict(total_timesteps=512, n_envs=4, n_steps=32, batch_size=64,
                    scenarios_per_rollout=2, max_side=3, max_steps=60, enable_wandb=False,
                    warm_start_steps=0, checkpoint_every_updates=2,
                    checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "logs"),
                    verbose=0, **SMALL_MODEL)
    settings.update(changes)
    return WFM1TrainConfig(**settings)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A run's checkpoint folder: step files at 256 and 512 steps, latest, final."""
    tmp_path = tmp_path_factory.mktemp("run")
    config = tiny_config(tmp_path)
    WFM1Trainer(config).learn()
    return config


def copy_run(config: WFM1TrainConfig, tmp_path) -> WFM1TrainConfig:
    folder = tmp_path / "ck"
    shutil.copytree(config.checkpoint_dir, folder)
    return config.replace(checkpoint_dir=str(folder), log_dir=str(tmp_path / "logs"))


def test_auto_resume_takes_a_step_file_newer_than_latest(finished_run, tmp_path):
    config = copy_run(finished_run, tmp_path)
    folder = tmp_path / "ck"
    # A kill between the step checkpoint and wfm1_latest.pt: latest is one older.
    shutil.copy(folder / "wfm1_256_steps.pt", folder / LATEST)
    found = _resume_path({"auto": True}, config)
    assert found == folder / "wfm1_512_steps.pt"
    assert WFM1Trainer(config, resume=found).total_steps == 512


def test_auto_resume_prefers_latest_at_equal_steps_and_skips_damaged_files(finished_run,
                                                                           tmp_path, caplog):
    folder = tmp_path / "ck"
    copy_run(finished_run, tmp_path)
    assert newest_checkpoint(folder) == folder / LATEST
    (folder / LATEST).write_bytes(b"torn")
    (folder / "wfm1_512_steps.pt").write_bytes(b"PK\x03\x04 torn")
    with caplog.at_level(logging.WARNING):
        assert newest_checkpoint(folder) == folder / "wfm1_256_steps.pt"
    assert str(folder / LATEST) in caplog.text
    assert "wfm1_512_steps.pt" in caplog.text


def test_auto_resume_finds_nothing_in_an_empty_folder(tmp_path):
    assert newest_checkpoint(tmp_path / "nothing") is None
    assert _resume_path({"auto": True}, tiny_config(tmp_path)) is None


def test_a_warm_start_checkpoint_is_a_candidate_too(finished_run, tmp_path):
    folder = tmp_path / "ck"
    folder.mkdir()
    shutil.copy(os.path.join(finished_run.checkpoint_dir, "wfm1_256_steps.pt"),
                folder / WARM_START)
    assert newest_checkpoint(folder) == folder / WARM_START


def test_a_damaged_best_file_is_reported_and_skipped(finished_run, tmp_path, caplog):
    config = copy_run(finished_run, tmp_path)
    folder = tmp_path / "ck"
    (folder / BEST).write_bytes(b"not a checkpoint")
    with caplog.at_level(logging.WARNING):
        trainer = WFM1Trainer(config, resume=folder / LATEST)
    assert trainer.total_steps == 512
    assert str(folder / BEST) in caplog.text


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_special_file_as_resume_is_refused_at_once(tmp_path, kind):
    path = tmp_path / "resume.pt"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(UnreadableFileError, match="resume.*not a regular file"):
        WFM1Trainer(tiny_config(tmp_path), resume=path)
    with pytest.raises(UnreadableFileError, match="resume.checkpoint.*not a regular file"):
        _resume_path({"checkpoint": str(path)}, tiny_config(tmp_path))


def test_a_missing_resume_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="resume.checkpoint=.*no such file"):
        _resume_path({"checkpoint": str(tmp_path / "gone.pt")}, tiny_config(tmp_path))


def test_a_hostile_or_corrupt_resume_file_gives_a_named_error(tmp_path):
    marker = tmp_path / "PWNED"
    hostile = tmp_path / "hostile.pt"
    torch.save({"checkpoint_format": 2, "kind": "wfm1", "kwargs": Payload(str(marker))},
               hostile)
    with pytest.raises(UntrustedCheckpointError) as refused:
        WFM1Trainer(tiny_config(tmp_path), resume=hostile)
    assert not marker.exists()
    assert "weights_only" not in str(refused.value) and str(hostile) in str(refused.value)
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(hostile.read_bytes()[:200])
    with pytest.raises(UnreadableFileError, match="corrupt.pt"):
        WFM1Trainer(tiny_config(tmp_path), resume=corrupt)


def test_a_resumed_run_steps_at_the_learning_rate_it_is_given(finished_run, tmp_path):
    config = copy_run(finished_run, tmp_path).replace(learning_rate=1e-5)
    resumed = WFM1Trainer(config, resume=Path(config.checkpoint_dir) / "wfm1_256_steps.pt")
    assert {group["lr"] for group in resumed.optimizer.param_groups} == {1e-5}
    assert resumed.optimizer.state  # Adam's moments come back with it


def test_resumed_counters_come_from_the_file(finished_run):
    saved = load_checkpoint(os.path.join(finished_run.checkpoint_dir, "wfm1_256_steps.pt"))
    assert saved.counters["total_steps"] == 256
