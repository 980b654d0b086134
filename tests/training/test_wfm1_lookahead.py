"""Blue's lookahead teacher: candidates checked, copies that leave the battles alone,
and battles that follow the candidate that scored most."""

from __future__ import annotations

import numpy as np
import pytest

from envs.commanders.arms_doctrine import LINE_PLAN
from training.wfm1.battles import ScenarioBattles
from training.wfm1.lookahead import Lookahead, candidate
from training.wfm1.scenarios import WFMScenario

SCENARIOS = [WFMScenario("small", "procedural", "clear", 3, 3, 77),
             WFMScenario("uneven", "procedural", "rain", 2, 3, 78)]


@pytest.mark.parametrize("kwargs, field", [
    (dict(plans=("line",)), "plans"),
    (dict(plans="line"), "plans"),
    (dict(plans=("line", "line")), "plans"),
    (dict(plans=("line", "bold")), "bold"),
    (dict(plans=("line", "line+reckless")), "reckless"),
    (dict(plans=("line", "standard"), every=0), "every"),
    (dict(plans=("line", "standard"), horizon=0), "horizon"),
])
def test_bad_lookaheads_are_refused_by_name(kwargs, field):
    with pytest.raises(ValueError, match=field):
        Lookahead(**kwargs)


def test_a_candidate_is_a_plan_and_perhaps_a_rule():
    assert candidate("line") == ("line", None)
    assert candidate("line+power") == ("line", "power")


def test_a_plan_and_a_lookahead_together_are_refused():
    with pytest.raises(ValueError, match="blue_plan and lookahead"):
        ScenarioBattles(SCENARIOS, 2, 40, blue_plan=LINE_PLAN,
                        lookahead=Lookahead(("line", "standard")))
    with pytest.raises(TypeError, match="lookahead"):
        ScenarioBattles(SCENARIOS, 2, 40, lookahead=("line", "standard"))


def rollout(battles: ScenarioBattles, steps: int) -> np.ndarray:
    rewards = []
    for _ in range(steps):
        battles.observe()
        rewards.append(battles.step(None).reward)
    return np.array(rewards)


def test_the_search_plays_on_copies_and_leaves_the_battles_as_they_were():
    battles, untouched = (ScenarioBattles(SCENARIOS, 3, 60, seed=5) for _ in range(2))
    rollout(battles, 10)
    rollout(untouched, 10)
    lookahead = ScenarioBattles(SCENARIOS, 3, 60, seed=5,
                                lookahead=Lookahead(("standard", "line+power"), horizon=30))
    choice, scores = battles.look_ahead(lookahead._candidates, 30)
    assert scores.shape == (2, 6) and np.array_equal(choice, np.argmax(scores, axis=0))
    np.testing.assert_array_equal(rollout(battles, 30), rollout(untouched, 30))


def test_each_battle_follows_the_candidate_that_scored_most():
    look = Lookahead(("standard", "line", "line+power"), every=10, horizon=20)
    battles = ScenarioBattles(SCENARIOS, 3, 60, seed=9, formation_orders=True, lookahead=look)
    rollout(battles, 10)  # a search at step 0; the next comes with the next step
    expected, scores = battles.look_ahead(battles._candidates, 20)
    assert np.ptp(scores, axis=0).max() > 0  # the candidates do differ here
    view = battles.observe()
    labels = battles.step(None).doctrine_actions
    np.testing.assert_array_equal(battles.choice, expected)
    assert battles.choice_steps.sum() == 11 * battles.n_battles
    # Every battle's labels are its chosen candidate's orders.
    for k, name in enumerate(look.plans):
        twin = ScenarioBattles(SCENARIOS, 3, 60, seed=9, formation_orders=True, lookahead=look)
        rollout(twin, 10)
        twin.lookahead = None  # no search: every battle plays candidate k
        twin.teachers = twin._candidates[k]
        twin.observe()
        theirs = twin.step(None).doctrine_actions
        rows = expected == k
        own = view.own_mask[rows]
        np.testing.assert_allclose(labels[rows][own], theirs[rows][own], err_msg=name)


def test_the_trainer_learns_from_the_lookahead_while_its_orders_are_used(tmp_path, caplog):
    from tests.training.test_wfm1_training import tiny_config
    from training.wfm1.trainer import WFM1Trainer

    config = tiny_config(tmp_path, total_timesteps=1024, warm_start_steps=512,
                         warm_start_epochs=1, resample_every=4, formation_orders=True,
                         warm_start_lookahead=["line", "standard+power"],
                         warm_start_lookahead_every=8, warm_start_lookahead_horizon=8)
    with caplog.at_level("INFO", logger="training.wfm1.warm_start"):
        trainer = WFM1Trainer(config)
    assert "lookahead teacher followed line" in caplog.text
    assert trainer.battles is None  # the warm start's battles are gone
    trainer.draw_battles()  # PPO without a pull: the doctrine's plan, no search
    assert trainer.battles.lookahead is None
    pulled = WFM1Trainer(config.replace(teacher_coef=0.5, warm_start_steps=0))
    assert pulled.draw_battles().lookahead.plans == ("line", "standard+power")


@pytest.mark.parametrize("kwargs, message", [
    (dict(warm_start_lookahead=["line"]), "at least two"),
    (dict(warm_start_lookahead=["line", "bold"]), "bold"),
    (dict(warm_start_lookahead=["line", "standard"]), "formation_orders"),
    (dict(warm_start_lookahead=["line", "standard"], formation_orders=True,
          warm_start_arms_plan="line"), "both set"),
    (dict(warm_start_lookahead_horizon=0), "warm_start_lookahead_horizon"),
])
def test_the_config_refuses_a_bad_lookahead(tmp_path, kwargs, message):
    from tests.training.test_wfm1_training import tiny_config

    with pytest.raises(ValueError, match=message):
        tiny_config(tmp_path, **kwargs)
