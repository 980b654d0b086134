"""HRL curriculum: promotion on win rate and Elo, the Elo registry, resume, phase configs."""

from __future__ import annotations

import json
import logging

import pytest
import yaml

import training
import training.echelons.curriculum as hc
from tests.training.conftest import FakeRun
from training.echelons.curriculum import (
    PHASE_CONFIG_FILES,
    PHASE_LABELS,
    HRLCurriculumScheduler,
    HRLPhase,
    load_phase_config,
)
from training.elo import BASELINE_RATINGS, DEFAULT_RATING, EloRegistry, expected_score, k_factor

# ---------------------------------------------------------------------------- promotion


def ready(elo_threshold=900.0, **kwargs) -> HRLCurriculumScheduler:
    """A scheduler at phase 1 meeting every promotion condition (window 4, threshold 0.75)."""
    scheduler = HRLCurriculumScheduler(win_rate_threshold=0.75, win_rate_window=4,
                                       elo_threshold=elo_threshold, **kwargs)
    scheduler.record_episodes([False, True, True, True])
    scheduler.set_elo(950.0)
    return scheduler


def test_promotion_needs_all_three_conditions():
    scheduler = ready()
    assert scheduler.should_promote() and scheduler.promotion_status()["should_promote"]
    assert all(c["holds"] for c in scheduler.promotion_status()["conditions"].values())


@pytest.mark.parametrize("spoil, failing", [
    (lambda s: s.load_state_dict({**s.state_dict(), "window": [True, True, True]}),
     "window_full"),                                       # T T T: 3 of 4 episodes
    (lambda s: s.record_episodes([False, False]), "win_rate"),  # the window slides to T T F F
    (lambda s: s.set_elo(899.9), "elo"),                  # Elo below the threshold
    (lambda s: setattr(s, "_elo", None), "elo"),          # no Elo recorded yet
])
def test_each_missing_condition_blocks_promotion(spoil, failing):
    scheduler = ready()
    spoil(scheduler)
    assert not scheduler.should_promote()
    status = scheduler.promotion_status()
    assert not status["should_promote"]
    assert [name for name, c in status["conditions"].items() if not c["holds"]] == [failing]


def test_promotion_status_says_the_values_compared():
    scheduler = HRLCurriculumScheduler(win_rate_threshold=0.5, win_rate_window=4)
    scheduler.record_episodes([True, False])
    assert scheduler.promotion_status() == {
        "phase": 1, "phase_label": "battalion", "should_promote": False, "conditions": {
            "not_final_phase": {"holds": True, "phase": 1, "final_phase": 3},
            "window_full": {"holds": False, "episodes": 2, "needed": 4},
            "win_rate": {"holds": True, "value": 0.5, "threshold": 0.5},
            "elo": {"holds": False, "value": None, "threshold": 800.0, "checked": True}}}


def test_the_elo_condition_is_skipped_without_a_threshold():
    scheduler = HRLCurriculumScheduler(win_rate_threshold=0.75, win_rate_window=4,
                                       elo_threshold=None)
    scheduler.record_episodes([True, True, False, True])
    assert scheduler.elo is None and scheduler.should_promote()
    scheduler.set_elo(-50.0)  # any rating: not checked
    assert scheduler.should_promote()
    elo = scheduler.promotion_status()["conditions"]["elo"]
    assert elo == {"holds": True, "value": -50.0, "threshold": None, "checked": False}


def test_promote_advances_clears_window_and_elo_and_stops_at_the_final_phase():
    scheduler = ready()
    assert scheduler.phase == HRLPhase.PHASE_1_BATTALION and scheduler.phase_label == "battalion"
    assert scheduler.promote() == HRLPhase.PHASE_2_BRIGADE
    assert scheduler.phase_label == "brigade" and not scheduler.is_final_phase
    assert scheduler.win_rate() == 0.0 and scheduler.elo is None
    assert scheduler.phase_episodes == 0 and scheduler.total_episodes == 4
    scheduler.record_episodes([True] * 4)
    assert not scheduler.should_promote()  # the Elo was cleared with the window
    scheduler.set_elo(1000.0)
    assert scheduler.should_promote()
    scheduler.promote()
    assert scheduler.is_final_phase and scheduler.phase_label == "division"
    scheduler.record_episodes([True] * 4)
    scheduler.set_elo(2000.0)
    assert not scheduler.should_promote()
    assert not scheduler.promotion_status()["conditions"]["not_final_phase"]["holds"]
    with pytest.raises(RuntimeError, match="final phase division"):
        scheduler.promote()
    assert scheduler.phase_episodes == 4 and scheduler.total_episodes == 12
    assert scheduler.promotions == [
        {"to_phase": 2, "total_episodes": 4, "total_steps": None},
        {"to_phase": 3, "total_episodes": 8, "total_steps": None}]
    assert PHASE_LABELS == {HRLPhase(1): "battalion", HRLPhase(2): "brigade",
                            HRLPhase(3): "division"}


# ---------------------------------------------------------------------------- Elo


def test_update_elo_goes_through_the_registry(tmp_path):
    path = tmp_path / "elo.json"
    registry = EloRegistry(path)
    scheduler = HRLCurriculumScheduler(win_rate_window=2, win_rate_threshold=0.5,
                                       elo_threshold=1003.0)
    scheduler.record_episodes([True, True])
    rating = scheduler.update_elo(registry, "hrl_battalion", "scripted_l3", win_rate=0.85)
    expected = DEFAULT_RATING + k_factor(0) * (
        0.85 - expected_score(DEFAULT_RATING, BASELINE_RATINGS["scripted_l3"]))
    assert rating == pytest.approx(expected) and scheduler.elo == rating
    assert registry.get_rating("hrl_battalion") == rating
    assert registry.get_game_count("hrl_battalion") == 20  # n_episodes defaults to 20
    assert scheduler.should_promote()  # 1000 + 40 * (0.85 - 0.76): about 1003.6
    second = scheduler.update_elo(registry, "hrl_battalion", "scripted_l3", 0.0, n_episodes=15)
    assert second == pytest.approx(expected + k_factor(20) * (
        0.0 - expected_score(expected, BASELINE_RATINGS["scripted_l3"])))
    assert not scheduler.should_promote()
    registry.save()
    assert EloRegistry(path).get_rating("hrl_battalion") == pytest.approx(second)
    assert EloRegistry(path).get_game_count("hrl_battalion") == 35


@pytest.mark.parametrize("args, field, error", [
    (("not a registry", "a", "scripted_l3", 0.5), "elo_registry", TypeError),
    ((None, "a", "scripted_l3", 1.5), "win_rate", ValueError),
    ((None, "a", "scripted_l3", 0.5, 0), "n_episodes", ValueError),
    ((None, "scripted_l5", "scripted_l3", 0.5), "baseline", ValueError),
    ((None, "", "scripted_l3", 0.5), "agent", ValueError),
])
def test_update_elo_refuses_bad_arguments(args, field, error):
    registry = EloRegistry(path=None)
    scheduler = HRLCurriculumScheduler()
    if args[0] is None:
        args = (registry, *args[1:])
    with pytest.raises(error, match=field):
        scheduler.update_elo(*args)
    assert scheduler.elo is None and registry.all_ratings() == {}


# ---------------------------------------------------------------------------- logging


def test_metrics_and_promotion_event_logging(caplog):
    scheduler = ready()
    assert scheduler.wandb_metrics() == {
        "hrl_curriculum/phase": 1, "hrl_curriculum/phase_label": "battalion",
        "hrl_curriculum/win_rate": 0.75, "hrl_curriculum/elo": 950.0,
        "hrl_curriculum/phase_episodes": 4, "hrl_curriculum/total_episodes": 4}
    scheduler.promote()
    run = FakeRun()
    with caplog.at_level(logging.INFO, logger="training.echelons.curriculum"):
        scheduler.log_promotion_event(12_345, run)
    assert "brigade" in caplog.text and "12345" in caplog.text
    assert run.calls == [({
        "hrl_curriculum/phase": 2, "hrl_curriculum/phase_label": "brigade",
        "hrl_curriculum/win_rate": 0.0, "hrl_curriculum/elo": None,
        "hrl_curriculum/phase_episodes": 0, "hrl_curriculum/total_episodes": 4,
        "hrl_curriculum/promotion_step": 12_345}, 12_345)]
    assert scheduler.promotions == [{"to_phase": 2, "total_episodes": 4, "total_steps": 12_345}]


# ---------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("kwargs, field", [
    ({"elo_threshold": float("inf")}, "elo_threshold"),
    ({"elo_threshold": "1100"}, "elo_threshold"),
    ({"initial_phase": 0}, "initial_phase"),
    ({"initial_phase": 4}, "initial_phase"),
    ({"initial_phase": True}, "initial_phase"),
])
def test_constructor_validation_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field) as info:
        HRLCurriculumScheduler(**kwargs)
    assert "expected" in str(info.value)


def test_episodes_and_elo_must_be_valid():
    scheduler = HRLCurriculumScheduler(win_rate_window=3)
    with pytest.raises(ValueError, match="win"):
        scheduler.record_episode(1)
    with pytest.raises(ValueError, match=r"wins\[1\]"):
        scheduler.record_episodes([True, "yes"])
    with pytest.raises(TypeError, match="wins"):
        scheduler.record_episodes("TT")
    with pytest.raises(ValueError, match="value"):
        scheduler.set_elo(float("nan"))
    assert scheduler.total_episodes == 0 and scheduler.elo is None  # nothing recorded
    assert HRLCurriculumScheduler(initial_phase=3).is_final_phase
    with pytest.raises(ValueError, match="phase"):
        HRLCurriculumScheduler.for_phase(7)


# ---------------------------------------------------------------------------- resume


def test_state_dict_round_trip_continues_exactly():
    scheduler = ready()
    scheduler.promote()
    scheduler.log_promotion_event(1000)
    scheduler.record_episodes([True, False, True])
    scheduler.set_elo(1234.5)
    state = json.loads(json.dumps(scheduler.state_dict()))  # plain JSON values
    resumed = HRLCurriculumScheduler(win_rate_threshold=0.75, win_rate_window=4,
                                     elo_threshold=900.0)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == scheduler.state_dict()
    assert resumed.phase == HRLPhase.PHASE_2_BRIGADE and resumed.elo == 1234.5
    assert resumed.win_rate() == pytest.approx(2 / 3) and resumed.phase_episodes == 3
    for s in (scheduler, resumed):
        assert not s.should_promote()
        s.record_episode(True)
    assert resumed.should_promote() == scheduler.should_promote() is True
    assert resumed.promote() == scheduler.promote() == HRLPhase.PHASE_3_DIVISION


def test_load_state_dict_with_other_settings_keeps_its_own(caplog):
    scheduler = ready()
    scheduler.record_episode(False)  # T T T F
    resumed = HRLCurriculumScheduler(win_rate_window=2, elo_threshold=None)
    with caplog.at_level(logging.WARNING, logger="training.echelons.curriculum"):
        resumed.load_state_dict(scheduler.state_dict())
    assert "win_rate_window=4" in caplog.text and "elo_threshold=900.0" in caplog.text
    assert resumed.win_rate() == 0.5  # the newest 2 episodes: T F
    assert resumed.win_rate_window == 2 and resumed.elo_threshold is None


@pytest.mark.parametrize("change, field", [
    ({"phase": 5}, "phase"),
    ({"window": [True, 1]}, r"window'\]\[1\]"),
    ({"total_episodes": 1}, "total_episodes"),
    ({"phase_episodes": 9}, "phase_episodes"),
    ({"elo": "high"}, "elo"),
    ({"promotions": [{"to_phase": 2}]}, "promotions"),
    ({"promotions": [{"to_phase": 3, "total_episodes": 0, "total_steps": None}]}, "to_phase"),
    ({"extra": 1}, "extra"),
])
def test_load_state_dict_refuses_malformed_state(change, field):
    scheduler = ready()
    state = {**scheduler.state_dict(), **change}
    with pytest.raises((TypeError, ValueError), match=field):
        scheduler.load_state_dict(state)
    assert scheduler.phase == 1 and scheduler.total_episodes == 4  # unchanged
    assert scheduler.elo == 950.0 and scheduler.should_promote()


# ---------------------------------------------------------------------------- phase configs

TABLE = {  # threshold, window, extra env keys, training
    HRLPhase.PHASE_1_BATTALION: (0.70, 50, {"red_level": 5, "order_period": 100,
                                            "order_attack_share": 0.75, "n_blue": 4,
                                            "n_red": 4},
                                 {"total_timesteps": 2_000_000, "n_steps": 128, "n_epochs": 4,
                                  "batch_size": 4096, "warm_start_hold_range": 80.0}),
    HRLPhase.PHASE_2_BRIGADE: (0.65, 30, {"temporal_ratio": 10, "red_level": 5},
                               {"total_timesteps": 200_000, "n_steps": 256, "n_epochs": 6,
                                "batch_size": 32}),
    HRLPhase.PHASE_3_DIVISION: (0.60, 20, {"red_level": 3},
                                {"total_timesteps": 200_000, "n_steps": 256, "n_epochs": 6,
                                 "batch_size": 32}),
}


@pytest.mark.parametrize("phase", list(HRLPhase))
def test_every_shipped_phase_config_loads_and_matches_the_design(phase):
    threshold, window, extra, training = TABLE[phase]
    assert load_phase_config(int(phase)) == {
        "curriculum": {"win_rate_threshold": threshold, "win_rate_window": window,
                       "elo_threshold": 1100.0, "elo_opponent": "scripted_l3"},
        "env": {"map_width": 500.0, "map_height": 500.0, "max_steps": 200,
                "visibility_radius": 400.0, **extra},
        "training": training}
    path = hc.HRL_CONFIG_DIR / PHASE_CONFIG_FILES[phase]
    assert path.name == f"phase{int(phase)}_{PHASE_LABELS[phase]}.yaml"
    assert path.read_text().startswith(f"# HRL curriculum phase {int(phase)}")
    scheduler = HRLCurriculumScheduler.for_phase(phase)
    assert scheduler.phase == phase and scheduler.win_rate_threshold == threshold
    assert scheduler.win_rate_window == window and scheduler.elo_threshold == 1100.0


def phase_file() -> dict:
    return yaml.safe_load((hc.HRL_CONFIG_DIR / PHASE_CONFIG_FILES[HRLPhase(1)]).read_text())


def set_key(data, dotted, value):
    section, key = dotted.split(".")
    data[section][key] = value


@pytest.mark.parametrize("edit, message", [
    (lambda d: set_key(d, "curriculum.win_rate_windw", 50), r"curriculum\.win_rate_windw"),
    (lambda d: set_key(d, "curriculum.win_rate_window", 50.5), r"curriculum\.win_rate_window"),
    (lambda d: set_key(d, "curriculum.win_rate_threshold", "0.7"),
     r"curriculum\.win_rate_threshold"),
    (lambda d: set_key(d, "curriculum.elo_threshold", True), r"curriculum\.elo_threshold"),
    (lambda d: set_key(d, "curriculum.elo_opponent", "scripted_l9"), r"curriculum\.elo_opponent"),
    (lambda d: set_key(d, "env.map_width", 5.0), r"env\.map_width"),
    (lambda d: set_key(d, "env.temporal_ratio", 0), r"env\.temporal_ratio"),
    (lambda d: set_key(d, "env.n_blue", 7), r"env\.n_blue"),
    (lambda d: set_key(d, "env.n_red", 0), r"env\.n_red"),
    (lambda d: set_key(d, "training.n_epochs", [4]), r"training\.n_epochs"),
    (lambda d: d["training"].pop("batch_size"), r"training\.batch_size.*missing"),
    (lambda d: d.update(ppo={}), "'ppo'"),
    (lambda d: d.update(env=[1]), "env"),
])
def test_a_malformed_phase_config_is_refused_naming_file_and_key(tmp_path, monkeypatch, edit,
                                                                 message):
    data = phase_file()
    edit(data)
    (tmp_path / PHASE_CONFIG_FILES[HRLPhase(1)]).write_text(yaml.safe_dump(data))
    monkeypatch.setattr(hc, "HRL_CONFIG_DIR", tmp_path)
    with pytest.raises(ValueError, match=message) as info:
        load_phase_config(HRLPhase.PHASE_1_BATTALION)
    assert "phase1_battalion.yaml" in str(info.value)


def test_unreadable_or_missing_phase_configs(tmp_path, monkeypatch):
    monkeypatch.setattr(hc, "HRL_CONFIG_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="phase2_brigade.yaml"):
        load_phase_config(2)
    (tmp_path / "phase1_battalion.yaml").write_text("curriculum: [unclosed\n")
    with pytest.raises(ValueError, match="phase1_battalion.yaml.*YAML"):
        load_phase_config(1)
    (tmp_path / "phase1_battalion.yaml").write_text("- a list\n")
    with pytest.raises(ValueError, match="phase1_battalion.yaml"):
        load_phase_config(1)
    with pytest.raises(ValueError, match="phase"):
        load_phase_config("brigade")


def test_exported_from_training():
    assert training.HRLPhase is HRLPhase
    assert training.HRLCurriculumScheduler is HRLCurriculumScheduler
