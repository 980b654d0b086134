"""Checkpoint names and the manifest."""

from __future__ import annotations

import pytest

from training.artifacts import (
    CheckpointManifest,
    checkpoint_best_filename,
    checkpoint_final_stem,
    checkpoint_name_prefix,
    config_hash,
    parse_step_from_checkpoint_name,
)
from training.ppo.config import TrainingConfig

ROW = dict(seed=1, curriculum_level=5, run_id=None, config_hash="abc")


def test_names_in_both_modes():
    v2 = dict(seed=7, curriculum_level=3, enable_v2=True)
    legacy = dict(seed=7, curriculum_level=3, enable_v2=False)
    assert checkpoint_name_prefix(**v2) == "ppo_battalion_s7_c3"
    assert checkpoint_final_stem(**v2) == "ppo_battalion_s7_c3_final"
    assert checkpoint_best_filename(**v2) == "ppo_battalion_s7_c3_best.zip"
    assert checkpoint_name_prefix(**legacy) == "ppo_battalion"
    assert checkpoint_final_stem(**legacy) == "ppo_battalion_final"
    assert checkpoint_best_filename(**legacy) == "best_model.zip"
    assert parse_step_from_checkpoint_name("x/ppo_battalion_s7_c3_120000_steps.zip") == 120000
    assert parse_step_from_checkpoint_name("ppo_battalion_s7_c3_final.zip") is None


def test_config_hash_is_stable_and_sensitive():
    assert config_hash(TrainingConfig()) == config_hash(TrainingConfig())
    assert config_hash(TrainingConfig()) != config_hash(TrainingConfig(seed=1))


def make_checkpoints(tmp_path, steps):
    paths = []
    for step in steps:
        path = tmp_path / f"ppo_battalion_s1_c5_{step}_steps.zip"
        path.write_bytes(b"zip")
        paths.append(path)
    return paths


def test_register_skips_repeats_and_finds_the_latest_periodic(tmp_path):
    manifest = CheckpointManifest(tmp_path / "manifest.jsonl")
    paths = make_checkpoints(tmp_path, [100, 300, 200])
    for path, step in zip(paths, [100, 300, 200], strict=True):
        assert manifest.register(path, artifact_type="periodic", step=step, **ROW)
    assert not manifest.register(paths[0], artifact_type="periodic", step=100, **ROW)
    assert len(manifest.rows()) == 3
    assert manifest.latest_periodic(tmp_path, "ppo_battalion_s1_c5") == paths[1]
    paths[1].unlink()  # a deleted file no longer counts
    assert manifest.latest_periodic(tmp_path, "ppo_battalion_s1_c5") == paths[2]
    assert manifest.latest_periodic(tmp_path, "other_prefix") is None
    assert manifest.latest_entry_for_path(paths[2])["step"] == 200


def test_pruning_deletes_old_files_and_keeps_rows(tmp_path):
    manifest = CheckpointManifest(tmp_path / "manifest.jsonl")
    paths = make_checkpoints(tmp_path, [100, 200, 300, 400])
    for path, step in zip(paths, [100, 200, 300, 400], strict=True):
        manifest.register(path, artifact_type="periodic", step=step, **ROW)
    deleted = manifest.prune_periodic(tmp_path, "ppo_battalion_s1_c5", keep_last=2)
    assert sorted(deleted) == sorted(paths[:2])
    assert [p.exists() for p in paths] == [False, False, True, True]
    assert len(manifest.rows()) == 4
    assert manifest.prune_periodic(tmp_path, "ppo_battalion_s1_c5", keep_last=0) == []


def test_rows_have_the_documented_keys_and_torn_lines_are_skipped(tmp_path):
    manifest = CheckpointManifest(tmp_path / "manifest.jsonl")
    path = make_checkpoints(tmp_path, [100])[0]
    manifest.register(path, artifact_type="periodic", step=100, **ROW)
    with open(manifest.path, "ab") as handle:
        handle.write(b'{"path": "torn')  # a writer killed mid-line
    manifest.register(path, artifact_type="final", step=100, **ROW)
    rows = manifest.rows()
    assert [r["type"] for r in rows] == ["periodic", "final"]
    assert sorted(rows[0]) == ["config_hash", "curriculum_level", "path", "run_id", "seed",
                               "step", "timestamp", "type"]


def test_bad_artifact_type_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="artifact_type"):
        CheckpointManifest(tmp_path / "m.jsonl").register(
            tmp_path / "x.zip", artifact_type="snapshot", step=1, **ROW)
