"""What both curricula share (:mod:`training.common.promotion`): the window of episodes and
the promotion events, on the team and on the hierarchical scheduler alike."""

from __future__ import annotations

import pytest

from training.curriculum_scheduler import CurriculumScheduler
from training.echelons.curriculum import HRLCurriculumScheduler

SCHEDULERS = [CurriculumScheduler, HRLCurriculumScheduler]


@pytest.mark.parametrize("scheduler, field", [(CurriculumScheduler, "promote_threshold"),
                                              (HRLCurriculumScheduler, "win_rate_threshold")])
@pytest.mark.parametrize("threshold", [0.0, 1.5, float("nan")])
def test_a_win_rate_threshold_must_be_in_the_unit_interval(scheduler, field, threshold):
    with pytest.raises(ValueError, match=field) as info:
        scheduler(**{field: threshold})
    assert "expected" in str(info.value)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("size", [0, 2.0])
def test_a_window_must_be_a_whole_number_of_episodes(scheduler, size):
    with pytest.raises(ValueError, match="win_rate_window") as info:
        scheduler(win_rate_window=size)
    assert "expected" in str(info.value)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_a_promotion_event_refuses_a_run_without_log_and_a_negative_step(scheduler):
    with pytest.raises(TypeError, match="wandb_run"):
        scheduler().log_promotion_event(1, wandb_run=object())
    with pytest.raises(ValueError, match="total_steps"):
        scheduler().log_promotion_event(-1)
