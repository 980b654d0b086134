"""The transfer benchmark: real sectors of the four sites, three conditions, criteria
that cannot pass on drawn battles."""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3 import PPO

from benchmarks.transfer import (
    TransferBenchmark,
    TransferEvalConfig,
    TransferResult,
    TransferSummary,
    main,
    render_seeds_markdown,
)
from data.gis.sectors import SITE_WINDOWS, site_terrain
from envs.vec_env import BattalionVecEnv


def result(condition, win, draw, steps=0):
    return TransferResult(condition, win, 100.0, 10.0, 50, 1.0, steps, draw, 1 - win - draw)


def test_every_site_has_a_sector_whose_ground_is_real():
    for site in SITE_WINDOWS:
        terrain = site_terrain(site)
        assert (terrain.width, terrain.height, terrain.shape) == (1000.0, 1000.0, (40, 40))
        assert terrain.elevation.max() > terrain.elevation.min()
    borodino = site_terrain("borodino")
    assert ((borodino.going > 0) & (borodino.going < 1)).any()  # the Semyonovka ravine
    smaller = site_terrain("borodino", rows=20, cols=30, window_m=600.0)
    assert (smaller.width, smaller.height, smaller.shape) == (600.0, 600.0, (20, 30))


def test_a_sector_of_an_unknown_site_or_a_bad_size_is_refused():
    with pytest.raises(ValueError, match="site"):
        site_terrain("jena")
    with pytest.raises(ValueError, match="window_m"):
        site_terrain("waterloo", window_m=0.0)
    with pytest.raises(ValueError, match="rows"):
        site_terrain("waterloo", rows=1)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="site"):
        TransferEvalConfig(site="jena")
    with pytest.raises(ValueError, match="n_eval_episodes"):
        TransferEvalConfig(n_eval_episodes=0)


def test_criteria_follow_the_seed_and_fail_on_drawn_battles():
    config = TransferEvalConfig()
    good = TransferSummary(config, result("procedural_baseline", 0.8, 0.1),
                           result("zero_shot_gis", 0.7, 0.1),
                           result("finetuned_gis", 0.78, 0.1, 400_000))
    assert good.site == "waterloo"  # the seed's TransferSummary.site: the site evaluated
    assert good.zero_shot_drop == pytest.approx(0.1) and good.finetuned_drop == pytest.approx(0.02)
    assert good.all_criteria_met
    too_long = TransferSummary(config, good.procedural, good.zero_shot,
                               result("finetuned_gis", 0.78, 0.1, 600_000))
    assert not too_long.meets_finetune_criterion
    # every battle drawn: no drop at all, and still no pass
    drawn = TransferSummary(config, result("procedural_baseline", 0.0, 1.0),
                            result("zero_shot_gis", 0.0, 1.0),
                            result("finetuned_gis", 0.0, 1.0, 100_000))
    assert drawn.zero_shot_drop == 0 and not drawn.decisive
    assert not drawn.meets_zero_shot_criterion and not drawn.meets_finetune_criterion


def test_the_scripted_doctrine_fights_decisive_battles_and_is_not_fine_tuned(tmp_path):
    benchmark = TransferBenchmark(TransferEvalConfig(site="waterloo", n_eval_episodes=8))
    summary = benchmark.run()
    assert summary.site == "waterloo"
    assert summary.procedural.decisive and summary.zero_shot.decisive
    assert summary.finetuned.finetune_steps_used == 0 and not summary.meets_finetune_criterion
    assert summary.zero_shot.mean_steps > 0
    path = benchmark.write_markdown(summary, tmp_path / "waterloo.md")
    text = path.read_text()
    assert "zero_shot_gis" in text and "FAIL" in text and "DisciplinedCommander" in text


def test_a_model_is_fine_tuned_on_a_copy_and_the_steps_are_counted(tmp_path):
    model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=32, batch_size=64, n_epochs=1,
                seed=0, device="cpu")
    model.save(tmp_path / "model.zip")
    weights = [p.detach().clone() for p in model.policy.parameters()]
    config = TransferEvalConfig(site="salamanca", n_eval_episodes=4, finetune_steps=512,
                                max_steps_per_episode=100)
    summary = TransferBenchmark(config).run(tmp_path / "model.zip")
    assert summary.finetuned.finetune_steps_used == 512  # one rollout: 32 steps x 16 battles
    assert summary.policy.endswith("model.zip")
    assert summary.site == "salamanca"
    ground = site_terrain(config.site, rows=config.rows, cols=config.cols,
                          window_m=config.window_m)
    tuned_again = TransferBenchmark(config).finetune(model, ground)[1]
    assert tuned_again == 512
    assert all(np.array_equal(a, b.detach()) for a, b in zip(weights, model.policy.parameters(),
                                                            strict=True))


def test_the_table_over_seeds_gives_each_seed_and_the_mean_and_min_per_site():
    def summary(site, procedural, zero_shot, finetuned, draw=0.0):
        return TransferSummary(TransferEvalConfig(site=site),
                               result("procedural_baseline", procedural, 0.0),
                               result("zero_shot_gis", zero_shot, draw),
                               result("finetuned_gis", finetuned, draw, 400_000))

    runs = {0: [summary("waterloo", 1.0, 0.9, 1.0), summary("borodino", 1.0, 0.0, 0.0, 1.0)],
            1: [summary("waterloo", 0.9, 0.5, 0.88), summary("borodino", 1.0, 0.9, 0.96)]}
    text = render_seeds_markdown(runs)
    assert "seeds 0-1" in text and "50 battles per condition" in text
    assert "| waterloo | 0 | 100 / 0 / 0 | 90 / 0 / 10 | 100 / 0 / 0 | PASS, PASS |" in text
    assert "| waterloo | 1 | 90 / 0 / 10 | 50 / 0 / 50 | 88 / 0 / 12 | FAIL, PASS |" in text
    assert ("| waterloo | mean / min won | 95 / 90 | 70 / 50 | 94 / 88 | both met on 1 of 2 |"
            in text)
    # drawn battles fail both criteria, whatever the drop
    assert "| borodino | 0 | 100 / 0 / 0 | 0 / 100 / 0 | 0 / 100 / 0 | FAIL, FAIL |" in text
    assert ("| borodino | mean / min won | 100 / 100 | 45 / 0 | 48 / 0 | both met on 1 of 2 |"
            in text)


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0"], "--seeds=0"), (["--jobs", "0"], "--jobs=0"),
    (["--seeds", "2", "--policy", "model.zip"], "--policy"),
])
def test_the_command_line_refuses_bad_counts_by_name(argv, message):
    with pytest.raises(SystemExit, match=message):
        main(argv)


def test_an_unknown_site_is_refused_by_name_before_any_training():
    with pytest.raises(ValueError, match="--site"):
        main(["--site", "jena"])
