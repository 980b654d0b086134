"""Pictures of runs (training.plots): drawn from real logs of tiny runs and from synthetic ones."""

from __future__ import annotations

import io
import logging
import time

import numpy as np
import pytest

from benchmarks.historical import (
    BenchmarkEntry,
    BenchmarkSummary,
    HistoricalBenchmark,
    OutcomeComparison,
)
from benchmarks.transfer import (
    TransferBenchmark,
    TransferEvalConfig,
    TransferResult,
    TransferSummary,
)
from tests.training.conftest import tiny_config
from training import plots
from training.common.run_log import RunLog
from training.plots import (
    COORDINATION_FILE,
    ELO_FILE,
    LEARNING_CURVES_FILE,
    LOSSES_FILE,
    RUN_FILES,
    read_scalars,
    write_run_plots,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_picture(path_or_bytes, min_width=300, min_height=200):
    """A PNG that decodes, of a useful size, with something drawn on it."""
    from matplotlib.image import imread

    data = path_or_bytes if isinstance(path_or_bytes, bytes) else path_or_bytes.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    pixels = imread(io.BytesIO(data), format="png")
    height, width = pixels.shape[:2]
    assert width >= min_width and height >= min_height
    # The distinct colours, each channel rounded to 0.01 (as .round(2) does): counted as
    # one integer per pixel, since np.unique(axis=0) over a picture's rows of three takes
    # seconds.
    levels = np.rint(pixels[..., :3] * np.float32(100)).astype(np.int64)
    colours = np.count_nonzero(np.bincount((levels @ np.array([101 * 101, 101, 1])).ravel()))
    assert colours > 20  # lines, text and axes, not a blank canvas
    assert pixels[..., :3].std() > 0.02


def write_log(folder, scalars: dict[str, list[tuple[int, float]]]) -> None:
    """Write ``scalars`` through the trainers' run log, as a training run would."""
    log = RunLog(folder)
    for tag, points in scalars.items():
        for step, value in points:
            log.log({tag: value}, step)
    log.close()


def curve(n=30, start=0.0, end=1.0, noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    values = np.linspace(start, end, n) + noise * rng.standard_normal(n)
    return [(1000 * (i + 1), float(v)) for i, v in enumerate(values)]


SYNTHETIC = {
    "rollout/win_rate": curve(),
    "eval/win_rate": curve(10, 0.1, 0.9, seed=1),
    "elo/win_rate_vs_scripted_l5": curve(10, 0.0, 0.8, seed=2),
    "elo/rating_vs_scripted_l5": curve(10, 900, 1100, noise=10, seed=3),
    "rollout/ep_rew_mean": curve(30, -5, 10, noise=1, seed=4),
    "train/policy_loss": curve(30, 0.1, 0.01, seed=5),
    "train/learning_rate": [(1000 * (i + 1), 3e-4) for i in range(30)],
    **{f"coordination/{name}": curve(30, 0.2, 0.6, seed=6 + i)
       for i, name in enumerate(("fire_concentration", "flanking_ratio",
                                 "mutual_support_score"))},
}


class TestRunPictures:
    def test_reads_back_what_was_logged_in_step_order(self, tmp_path):
        write_log(tmp_path, {"a/b": [(30, 3.0), (10, 1.0), (20, 2.0)]})
        scalars = read_scalars(tmp_path)
        assert list(scalars) == ["a/b"]
        assert scalars["a/b"].steps.tolist() == [10, 20, 30]
        assert scalars["a/b"].values.tolist() == [1.0, 2.0, 3.0]

    def test_a_resumed_run_keeps_the_values_written_last(self, tmp_path):
        write_log(tmp_path, {"a/b": [(0, 0.0), (10, 1.0), (20, 2.0), (30, 3.0)]})
        time.sleep(0.01)  # the resumed writer's events come later in wall time
        write_log(tmp_path, {"a/b": [(20, -2.0), (30, -3.0), (40, -4.0)]})
        series = read_scalars(tmp_path)["a/b"]
        assert series.steps.tolist() == [0, 10, 20, 30, 40]
        assert series.values.tolist() == [0.0, 1.0, -2.0, -3.0, -4.0]

    def test_every_picture_from_a_full_log(self, tmp_path):
        write_log(tmp_path, SYNTHETIC)
        written = write_run_plots(tmp_path)
        assert [p.name for p in written] == list(RUN_FILES)
        for path in written:
            assert_picture(path)
        assert plots.anchors_in(read_scalars(tmp_path)) == {"scripted_l5": 1000.0}

    def test_only_the_pictures_it_has_numbers_for(self, tmp_path):
        write_log(tmp_path / "run", {"coordination/flanking_ratio": curve(5)})
        written = write_run_plots(tmp_path / "run", out_dir=tmp_path / "out")
        assert [p.name for p in written] == [COORDINATION_FILE]
        assert written[0].parent == tmp_path / "out"
        # A constant train/* number is not an update's story: no losses picture.
        write_log(tmp_path / "flat", {"train/learning_rate": [(1, 3e-4), (2, 3e-4)]})
        assert write_run_plots(tmp_path / "flat") == []
        assert write_run_plots(tmp_path) == []  # no event files at all
        with pytest.raises(FileNotFoundError, match="missing"):
            write_run_plots(tmp_path / "missing")

    def test_a_crowded_league_labels_the_anchors_and_a_few_others(self):
        scalars = {f"matchup/win_rate/member_v{i:06d}": plots.Series(np.array([1]),
                                                                   np.array([0.5]))
                   for i in range(20)}
        scalars["matchup/win_rate/doctrine_team"] = plots.Series(np.array([1]), np.array([0.2]))
        lines = plots._win_rate_lines(scalars, plots.anchors_in(scalars))
        labels = [label for label, _, _ in lines if label]
        assert labels == ["vs doctrine_team", "other opponents"]
        assert len(lines) == 21
        assert_picture(plots.draw_learning_curves(scalars, "league"))

    def test_trends_keep_the_length_and_short_series_stay_raw(self):
        values = np.arange(100.0)
        trend = plots.smoothed(values)
        assert trend.shape == values.shape and trend[50] == pytest.approx(50, abs=1)
        short = np.arange(10.0)
        assert plots.smoothed(short) is short

    def test_plot_run_never_fails_a_finished_run(self, tmp_path, monkeypatch, caplog):
        assert plots.plot_run(None) == [] and plots.plot_run(tmp_path / "missing") == []
        write_log(tmp_path, SYNTHETIC)

        def broken(*args, **kwargs):
            raise RuntimeError("no ink")

        monkeypatch.setattr(plots, "draw_elo", broken)
        with caplog.at_level(logging.ERROR, logger="training.plots"):
            assert plots.plot_run(tmp_path) == []
        assert "no ink" in caplog.text and "python -m training.plots" in caplog.text

    def test_command_line(self, tmp_path, capsys):
        write_log(tmp_path, SYNTHETIC)
        plots.main([str(tmp_path), "--anchor", "doctrine_team=1150", "--out",
                    str(tmp_path / "pictures")])
        printed = capsys.readouterr().out.split()
        assert [p.rsplit("/", 1)[1] for p in printed] == list(RUN_FILES)
        with pytest.raises(SystemExit) as exit_info:
            plots.main([str(tmp_path / "missing")])
        assert exit_info.value.code == 2
        (tmp_path / "empty").mkdir()
        with pytest.raises(SystemExit) as exit_info:
            plots.main([str(tmp_path / "empty")])
        assert exit_info.value.code == 1
        with pytest.raises(SystemExit):
            plots.main([str(tmp_path), "--anchor", "no_rating"])


class TestBenchmarkPictures:
    def test_historical(self, tmp_path):
        comparison = OutcomeComparison(0, 1, np.array([0.25, 0.75, 0.0]), 0.25, 0.8, 0.1, 0.3,
                                       (0.3, 0.2), (0.25, 0.35), 0.5, 8.0)
        entries = [BenchmarkEntry(f"battle_{i}", f"Battle {i}", "1805-12-02", (10, 12),
                                  comparison, 1.0) for i in range(12)]
        entries.append(BenchmarkEntry("broken", "Broken", "1800", (1, 1), None, 0.1, "boom"))
        summary = BenchmarkSummary(13, 12, 0.0, 0.4, 0.1, 12.0, entries, n_seeds=2)
        path = HistoricalBenchmark().write_plot(summary, tmp_path / "docs" / "report.png")
        assert path == tmp_path / "docs" / "report.png"
        assert_picture(path)

    def test_transfer(self, tmp_path):
        results = [TransferResult(c, w, 100.0, 10.0, 8, 1.0, steps, d, 1 - w - d)
                   for c, w, d, steps in (("procedural_baseline", 0.75, 0.125, 0),
                                          ("zero_shot_gis", 0.5, 0.25, 0),
                                          ("finetuned_gis", 0.625, 0.125, 4096))]
        summary = TransferSummary(TransferEvalConfig(site="borodino"), *results)
        path = TransferBenchmark(summary.config).write_plot(summary, tmp_path / "t.png")
        assert_picture(path)


class TestTrainersDrawTheirRuns:
    def test_train_draws_learning_curves_elo_and_losses_beside_its_logs(self, tmp_path):
        from training import train

        train(total_timesteps=1024, **tiny_config(
            tmp_path, elo_opponents=["scripted_l1"], elo_eval_freq=512,
            elo_n_eval_episodes=2, elo_registry_path=str(tmp_path / "elo.json")))
        # One run folder (ppo_battalion_0: the observation statistics' steps came first).
        (run,) = (tmp_path / "logs").glob("ppo_battalion_*")
        names = sorted(p.name for p in run.glob("*.png"))
        assert names == sorted([LEARNING_CURVES_FILE, ELO_FILE, LOSSES_FILE])
        for name in names:
            assert_picture(run / name)
        # The last update's losses and the last evaluation reached the logs.
        scalars = read_scalars(run)
        assert scalars["train/value_loss"].steps[-1] == 1024
        assert scalars["elo/win_rate_vs_scripted_l1"].steps.tolist() == [512, 1024]

    def test_train_mappo_logs_coordination_and_draws_every_picture(self, tmp_path):
        from tests.training.test_train_mappo import tiny
        from training.train_mappo import train_mappo

        result = train_mappo(**tiny(tmp_path))
        for metrics in result.history:
            for name in ("fire_concentration", "flanking_ratio", "mutual_support_score"):
                assert 0.0 <= metrics[f"coordination/{name}"] <= 1.0
        run = tmp_path / "logs" / "mappo"
        assert sorted(p.name for p in run.glob("*.png")) == sorted(RUN_FILES)
        for name in RUN_FILES:
            assert_picture(run / name)
        assert "coordination/mutual_support_score" in read_scalars(run)
