"""benchmarks.time_to_competence: the training time until a stack's commander first wins
its target share against L5, the defaults beside the settings they replaced."""

from __future__ import annotations

import json

import pytest

from benchmarks import time_to_competence
from benchmarks.learning import FINAL_OPPONENTS
from benchmarks.time_to_competence import PREVIOUS, RecipeRun, recipe_overrides, summarize


def _run(recipe: str, seed: int, l5: list[float], minutes: list[float]) -> RecipeRun:
    curve = [{"env_steps": 1000 * (i + 1), "kind": "curve", "seconds": 60 * m,
              "scripted_l5": x, "doctrine": 0.5}
             for i, (x, m) in enumerate(zip(l5, minutes, strict=True))]
    final = {name: [9, 0, 1] for name in FINAL_OPPONENTS}
    return RecipeRun(recipe, seed, 3000, minutes[-1], curve, final)


def test_competence_is_the_first_point_at_the_target_and_the_ratio_compares_means():
    runs = [_run("defaults", 0, [0.92, 0.95, 0.96], [0.5, 1.0, 1.5]),
            _run("defaults", 1, [0.85, 0.91, 0.96], [0.5, 1.0, 1.5]),
            _run("previous", 0, [0.80, 0.90, 0.96], [1.0, 2.0, 3.0]),
            _run("previous", 1, [0.90, 0.90, 0.96], [1.0, 2.0, 3.0])]
    assert runs[1].competence(0.9)["env_steps"] == 2000
    assert runs[0].competence(0.97) is None
    text = summarize("train", runs, 0.9, 10)
    assert "| defaults | 1 | 1.00 | 2,000 | 1.50 | 90.0% |" in text
    assert "| defaults | mean / min / max | 0.75 / 0.50 / 1.00 | | | |" in text
    assert "| previous | mean / min / max | 1.50 / 1.00 / 2.00 | | | |" in text
    assert "defaults / previous, mean minutes to competence: 0.50" in text
    assert "| defaults | 2,000 | 1.00 | 93% / 91% | 50% / 50% |" in text


def test_a_seed_that_never_reaches_the_target_is_counted_and_no_ratio_is_claimed():
    runs = [_run("defaults", 0, [0.5, 0.6], [1.0, 2.0]),
            _run("previous", 0, [0.9, 0.9], [1.0, 2.0])]
    text = summarize("train", runs, 0.9, 10)
    assert "| defaults | 0 | never | - |" in text
    assert "1 of 1 seeds never competent" in text
    assert "defaults / previous" not in text


def test_the_previous_recipe_sets_the_former_values_of_fields_the_config_declares():
    from training.mappo.config import MAPPOConfig
    from training.ppo.config import TrainingConfig

    assert recipe_overrides("train", "defaults") == {} and "train" in PREVIOUS
    configs = {"train": TrainingConfig(), "mappo_2v2": MAPPOConfig(),
               "mappo_arms": MAPPOConfig()}
    for stack in PREVIOUS:
        config, previous = configs[stack], recipe_overrides(stack, "previous")
        assert previous == PREVIOUS[stack] and previous
        # Each replaced setting differs from today's default: the two recipes differ.
        assert all(getattr(config, key) != value for key, value in previous.items())


def test_one_command_trains_both_recipes_and_writes_their_runs(tmp_path, capsys):
    runs = time_to_competence.main([
        "--seeds", "1", "--total-timesteps", "2048", "--episodes", "2",
        "--curve-episodes", "2", "--set", "n_envs=4", "--set", "rollout_steps=512",
        "--set", "warm_start_steps=512", "--set", "max_steps=60", "--split", "validation",
        "--target", "0.5", "--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "runs")])
    printed = capsys.readouterr().out
    assert [r.recipe for r in runs] == ["defaults", "previous"]
    for run in runs:
        assert run.curve[0]["kind"] == "warm start" and len(run.curve) >= 2
        seconds = [p["seconds"] for p in run.curve]
        assert seconds == sorted(seconds) and seconds[0] > 0
        assert set(run.final) == set(FINAL_OPPONENTS)
    assert "# train: time to 50% against scripted L5" in printed
    assert "previous recipe: " in printed and "battles: the validation split" in printed
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["target"] == 0.5 and [r["recipe"] for r in saved["runs"]] == [
        "defaults", "previous"]


@pytest.mark.parametrize("argv, message", [
    (["--target", "1.5"], "--target=1.5"), (["--seeds", "0"], "--seeds=0"),
    (["--set", "bogus=1"], "bogus"),
    (["--stack", "mappo_arms", "--recipes", "previous"], "--recipes previous is invalid")])
def test_bad_arguments_are_named(argv, message):
    with pytest.raises(SystemExit) as info:
        time_to_competence.main(argv)
    assert message in str(info.value)


def test_a_run_until_competent_ends_at_its_first_competent_point(tmp_path):
    run = time_to_competence.run_recipe(
        "train", "previous", 0, 4096,
        {"n_envs": 4, "rollout_steps": 512, "warm_start_steps": 512, "max_steps": 60},
        2, 2, "validation", str(tmp_path), until=0.0)
    # Every point wins at least nothing: the warm start's evaluation ends the run.
    assert [p["kind"] for p in run.curve] == ["warm start"]
    assert run.final == {} and run.env_steps == run.curve[0]["env_steps"] < 4096
    text = summarize("train", [run], 0.0, 2)
    assert "ended when competent" in text and "| previous | " in text
