"""A resumed run obeys the user's config, not the checkpoint: paths, sizes, budget."""

from __future__ import annotations

from tests.training.conftest import tiny_config
from training.train import resolve_resume, train


def test_resume_takes_paths_sizes_and_budget_from_the_config(tmp_path):
    first = tiny_config(tmp_path, total_timesteps=512)
    train(**first)
    checkpoint = tmp_path / "ck" / "ppo_battalion_s42_c5_final.zip"
    # The user now asks for other sizes, another log folder and a budget that is not a
    # multiple of the old rollout (4 x 64): 640 steps.
    later = dict(first, total_timesteps=640, n_steps=32, batch_size=64,
                 log_dir=str(tmp_path / "other_logs"))
    model = train(resume=checkpoint, **later)
    assert model.tensorboard_log == str(tmp_path / "other_logs")
    assert (model.n_steps, model.batch_size) == (32, 64)
    assert model.num_timesteps == 640  # 512 + one rollout of 4 x 32
    assert list((tmp_path / "other_logs").glob("ppo_battalion_*/events.out.tfevents.*"))


def test_resume_auto_uses_a_checkpoint_the_manifest_does_not_list(tmp_path):
    config = tiny_config(tmp_path, total_timesteps=1024, checkpoint_freq=256)
    train(**config)
    from training.ppo.config import TrainingConfig

    ck = tmp_path / "ck"
    newest = ck / "ppo_battalion_s42_c5_1024_steps.zip"
    assert newest.is_file()
    manifest = ck / "manifest.jsonl"
    kept = [line for line in manifest.read_text().splitlines() if "1024_steps" not in line]
    manifest.write_text("\n".join(kept) + "\n")  # as if killed before indexing it
    assert resolve_resume({"auto": True}, TrainingConfig(**config)) == newest
