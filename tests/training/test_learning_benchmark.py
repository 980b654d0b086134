"""benchmarks.learning: one command trains a stack on N seeds and prints won/drawn/lost per
opponent with mean and min over seeds, the learning curve and the wall time."""

from __future__ import annotations

import json

import pytest

from benchmarks import learning, run_jobs
from benchmarks.learning import (
    FINAL_OPPONENTS,
    TEAM_CURVE_OPPONENTS,
    TEAM_FINAL_OPPONENTS,
    RunResult,
    summarize,
)


def _run(seed: int, l5: list[float]) -> RunResult:
    curve = [{"env_steps": 1000 * (i + 1), "kind": "curve", "scripted_l5": x, "doctrine": 0.5}
             for i, x in enumerate(l5)]
    final = {name: [8, 1, 1] for name in FINAL_OPPONENTS}
    final["scripted_l5"] = [seed, 0, 10 - seed]
    return RunResult(seed, 5000, 1.5, curve, final)


def test_the_tables_give_mean_and_min_over_seeds_the_curve_and_the_worst_fall():
    text = summarize("train", [_run(6, [0.8, 0.8, 0.9, 0.7]), _run(9, [0.8, 0.8, 0.8, 0.8])], 10)
    lines = text.splitlines()
    mean = next(line for line in lines if line.startswith("| mean won"))
    minimum = next(line for line in lines if line.startswith("| min won"))
    position = 1 + FINAL_OPPONENTS.index("scripted_l5")
    assert mean.split("|")[position + 1].strip() == "75%"
    assert minimum.split("|")[position + 1].strip() == "60%"
    assert "| 6 | " in text and "6/0/4" in text and "9/0/1" in text
    assert "| 3,000 | curve | 85% / 80% | 50% / 50% |" in text
    # The fall is counted after the first tenth only: 0.7 is 10 points below 0.8.
    assert "(points, scripted_l5): -10, +0" in text
    assert "3.0 training-minutes" in text


def test_one_command_trains_evaluates_and_writes_its_results(tmp_path, capsys):
    results = learning.main([
        "--seeds", "1", "--total-timesteps", "2048", "--episodes", "2",
        "--curve-episodes", "2", "--set", "n_envs=4", "--set", "rollout_steps=512",
        "--set", "warm_start_steps=512", "--set", "max_steps=60", "--split", "validation",
        "--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "runs")])
    printed = capsys.readouterr().out
    assert "# train: 1 seeds" in printed and "battles: the validation split" in printed
    (run,) = results
    assert run.env_steps <= 2048 and run.curve[0]["kind"] == "warm start"
    assert set(run.final) == set(FINAL_OPPONENTS)
    assert all(sum(wdl) == 2 for wdl in run.final.values())
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["split"] == "validation" and saved["runs"][0]["seed"] == 0


@pytest.mark.parametrize("argv, message", [
    (["--set", "bogus=1"], "bogus"), (["--set", "n_envs"], "key=value"),
    (["--seeds", "0"], "--seeds=0")])
def test_bad_arguments_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        learning.main(argv)
    assert message in str(info.value)


def test_the_mappo_stack_trains_and_fights_team_battles(tmp_path, capsys):
    results = learning.main([
        "--stack", "mappo_2v2", "--seeds", "1", "--total-timesteps", "1024",
        "--episodes", "2", "--curve-episodes", "2", "--set", "n_envs=8",
        "--set", "rollout_steps=256", "--set", "warm_start_steps=256", "--set", "max_steps=60",
        "--split", "validation", "--out", str(tmp_path / "runs")])
    printed = capsys.readouterr().out
    (run,) = results
    assert run.env_steps == 1024
    # Imitation of 256 env-steps, then a point at each tenth passed at least one rollout
    # later: 512, 768 and 1024 env-steps.
    assert [(p["kind"], p["env_steps"]) for p in run.curve] == [
        ("warm start", 256), ("curve", 512), ("curve", 768), ("curve", 1024)]
    assert all(set(p) == {"env_steps", "kind", "seconds", *TEAM_CURVE_OPPONENTS}
               for p in run.curve)
    seconds = [p["seconds"] for p in run.curve]
    assert seconds == sorted(seconds) and run.minutes * 60 >= seconds[-1]
    assert tuple(run.final) == TEAM_FINAL_OPPONENTS
    assert all(sum(wdl) == 2 for wdl in run.final.values())
    assert "# mappo_2v2: 1 seeds, 1,024 env-steps each" in printed
    assert "| seed | " + " | ".join(TEAM_FINAL_OPPONENTS) + " | minutes |" in printed
    assert "| env-steps (mean) | point | scripted_l5 | doctrine_team |" in printed
    assert "(points, scripted_l5): " in printed
    assert (tmp_path / "runs" / "mappo_2v2_seed0" / "checkpoints").is_dir()


def test_the_team_tables_have_the_team_columns():
    final = {name: [1, 0, 1] for name in TEAM_FINAL_OPPONENTS}
    curve = [{"env_steps": 100 * (i + 1), "kind": "curve", "scripted_l5": x,
              "doctrine_team": 0.25} for i, x in enumerate([0.5, 0.5, 0.25])]
    text = summarize("mappo_2v2", [RunResult(0, 300, 1.0, curve, final)], 2)
    assert "| 0 | " + " | ".join(["1/0/1"] * len(TEAM_FINAL_OPPONENTS)) + " | 1.0 |" in text
    assert "| 300 | curve | 25% / 25% | 25% / 25% |" in text
    assert "(points, scripted_l5): -25" in text
    assert "random" not in text and "| doctrine |" not in text


def test_an_unknown_mappo_setting_is_named():
    with pytest.raises(SystemExit) as info:
        learning.main(["--stack", "mappo_2v2", "--set", "curriculum_level=3"])
    assert "curriculum_level" in str(info.value) and "MAPPOConfig" in str(info.value)


def test_set_values_are_read_as_yaml_and_exponents_as_numbers():
    values = learning.set_pairs(["learning_rate=1e-4", "warm_start_doctrine=null",
                                  "training_opponents=[scripted_l1, doctrine]"],
                                 learning.STACKS["train"].runner)
    assert values == {"learning_rate": 1e-4, "warm_start_doctrine": None,
                      "training_opponents": ["scripted_l1", "doctrine"]}
    assert learning.set_pairs(["warm_start_doctrine=disciplined"],
                               learning.STACKS["train"].runner) == {
        "warm_start_doctrine": "disciplined"}


def test_jobs_run_each_task_once_and_keep_the_order():
    tasks = [(1, 2), (3,), (), (4, 5, 6)]
    assert run_jobs(len, tasks, 1) == [2, 1, 0, 3]
    assert run_jobs(len, tasks, 2) == [2, 1, 0, 3]  # two spawned processes
