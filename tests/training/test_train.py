"""train(): quick-start forms, artifacts on disk, resume after a crash, W&B, the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.forked import run_module
from tests.training.conftest import tiny_config
from training import TrainingConfig, train
from training.artifacts import CheckpointManifest, parse_step_from_checkpoint_name
from training.ppo.callbacks import ramped_fire_scale
from training.ppo.checkpoints import load_ppo

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "ppo_battalion_s42_c5"


def test_keyword_quick_start_writes_checkpoints_manifest_and_logs(tmp_path):
    model = train(total_timesteps=2048, **tiny_config(tmp_path, keep_periodic=2))
    assert model.num_timesteps == 2048
    ck = tmp_path / "ck"
    periodic = sorted(ck.glob(f"{PREFIX}_*_steps.zip"), key=parse_step_from_checkpoint_name)
    assert [parse_step_from_checkpoint_name(p) for p in periodic] == [1536, 2048]  # pruned
    assert (ck / f"{PREFIX}_final.zip").is_file() and (ck / "ppo_battalion_final.zip").is_file()
    assert (ck / "best" / "best_model.zip").is_file()
    assert (ck / "best" / f"{PREFIX}_best.zip").is_file()
    rows = CheckpointManifest(ck / "manifest.jsonl").rows()
    kinds = [r["type"] for r in rows]
    assert kinds.count("periodic") == 4  # rows stay after pruning
    assert {"final", "final_alias", "best", "best_alias"} <= set(kinds)
    assert {r["config_hash"] for r in rows} == {rows[0]["config_hash"]}
    assert list((tmp_path / "logs").glob("ppo_battalion_*/events.out.tfevents.*"))


def test_config_object_quick_start(tmp_path):
    config = TrainingConfig(total_timesteps=512, curriculum_level=3,
                            **tiny_config(tmp_path))
    model = train(config)
    assert model.num_timesteps == 512
    assert (tmp_path / "ck" / "ppo_battalion_s42_c3_final.zip").is_file()


def test_scripted_fire_ramps_over_its_share_of_the_budget_in_the_training_battles(tmp_path):
    assert [ramped_fire_scale(p, 0.05) for p in (0.0, 1 / 3, 2 / 3, 5 / 6, 1.0, 2.0)] == \
        pytest.approx([0.0, 0.025, 0.05, 0.525, 1.0, 1.0])
    model = train(total_timesteps=1024, scripted_fire_ramp=0.5, **tiny_config(tmp_path))
    # Rollouts of 4 x 64 steps start at 0, 256, 512 and 768 (each logged at its end): the
    # ramp ends at 512, halfway through its sustained-fire part at 256.
    scales = {event.step: event.value for event in _scalars(tmp_path, "train/scripted_fire_scale")}
    assert {step: scales[step] for step in (512, 768, 1024)} == \
        pytest.approx({512: 0.0375, 768: 1.0, 1024: 1.0}), scales
    assert model.get_env().get_attr("scripted_fire_scale", [0]) == [1.0]
    with pytest.raises(ValueError, match="scripted_fire_ramp=1.5 is invalid"):
        TrainingConfig(scripted_fire_ramp=1.5)


def _scalars(root: Path, tag: str) -> list:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = (root / "logs").rglob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(events), size_guidance={"scalars": 0})
    accumulator.Reload()
    return accumulator.Scalars(tag)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown.*nenvs.*valid fields"):
        train(nenvs=4)
    with pytest.raises(ValueError, match="n_envs"):
        train(n_envs=0)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        train(resume="nowhere/model.zip", enable_wandb=False)
    with pytest.raises(TypeError, match="config"):
        train({"n_envs": 4})


def test_resume_continues_the_step_counter_and_the_manifest(tmp_path):
    settings = tiny_config(tmp_path)
    train(total_timesteps=1024, **settings)
    manifest = CheckpointManifest(tmp_path / "ck" / "manifest.jsonl")
    latest = manifest.latest_periodic(tmp_path / "ck", PREFIX)
    assert parse_step_from_checkpoint_name(latest) == 1024
    model = train(total_timesteps=2048, resume=latest, **settings)
    assert model.num_timesteps == 2048
    steps = [r["step"] for r in manifest.rows() if r["type"] == "periodic"]
    assert steps == [512, 1024, 1536, 2048]


def test_a_run_killed_with_sigkill_resumes_from_its_newest_complete_checkpoint(tmp_path):
    settings = tiny_config(tmp_path, checkpoint_freq=256, eval_freq=10**6)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        from training import train
        train(total_timesteps=10**7, **{settings!r})
    """))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    manifest = CheckpointManifest(tmp_path / "ck" / "manifest.jsonl")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if sum(r["type"] == "periodic" for r in manifest.rows()) >= 3:
            break
        time.sleep(0.2)
    assert process.poll() is None, process.stderr.read().decode()
    process.send_signal(signal.SIGKILL)
    process.wait(30)

    checkpoints = list((tmp_path / "ck").glob("*.zip"))
    assert checkpoints
    for checkpoint in checkpoints:  # every file under a checkpoint name is complete
        load_ppo(checkpoint)
    latest = manifest.latest_periodic(tmp_path / "ck", PREFIX)
    step = parse_step_from_checkpoint_name(latest)
    rows_before = len(manifest.rows())

    model = train(total_timesteps=step + 512, resume=latest, **settings)
    assert model.num_timesteps == step + 512
    new_rows = manifest.rows()[rows_before:]
    assert new_rows and all(r["step"] > step for r in new_rows if r["type"] == "periodic")
    assert any(r["type"] == "final" and r["step"] == step + 512 for r in new_rows)


def test_wandb_offline_run_is_written(tmp_path):
    train(total_timesteps=512, **tiny_config(tmp_path, enable_wandb=True,
                                             wandb_project="my_project", wandb_log_freq=256))
    runs = list((tmp_path / "logs" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert list(runs[0].glob("run-*.wandb"))


def _cli_overrides(tmp_path: Path) -> list[str]:
    return [
        "env.num_envs=4", "training.n_steps=64", "training.batch_size=256",
        "training.n_epochs=1", "eval.checkpoint_freq=512", "eval.eval_freq=512",
        "eval.n_eval_episodes=2", "env.max_steps=100", "wandb.enabled=false",
        "logging.progress_bar=false", "logging.verbose=0", "training.warm_start_doctrine=null",
        f"eval.checkpoint_dir={tmp_path}/ck", f"artifacts.manifest_path={tmp_path}/ck/m.jsonl",
        f"logging.log_dir={tmp_path}/logs", f"hydra.run.dir={tmp_path}/hydra",
    ]


def test_hydra_cli_trains_then_auto_resumes(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(
        [sys.executable, str(ROOT / "training" / "train.py"), "training.total_timesteps=512",
         "training.learning_rate=1e-4", *_cli_overrides(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    assert (tmp_path / "ck" / f"{PREFIX}_final.zip").is_file()
    # The module form, in processes forked from a server that has the imports.
    log = tmp_path / "second.txt"
    code = run_module("training.train", ["training.total_timesteps=1024", "resume.auto=true",
                                         *_cli_overrides(tmp_path)],
                      cwd=tmp_path, env=env, log=log, timeout=300)
    output = log.read_text()
    assert code == 0, output[-2000:]
    assert "Resuming from" in output and "Trained for 1024 steps" in output
    log = tmp_path / "bad.txt"
    code = run_module("training.train", ["training.lr=1", *_cli_overrides(tmp_path)],
                      cwd=tmp_path, env=env, log=log, timeout=300)
    assert code != 0 and "training.lr" in log.read_text()
