"""WFM-1's scenarios, battles, multi-task trainer and benchmark, on real battles."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from PIL import Image

from benchmarks.wfm1 import (
    WFM1Benchmark,
    WFM1BenchmarkConfig,
    WFM1BenchmarkResult,
    WFM1BenchmarkSummary,
    play_scenario,
)
from envs.battles.entity_tokens import ENTITY_TOKEN_DIM
from envs.commanders.arms_doctrine import LINE_PLAN, ArmsPlan
from envs.sim.constants import ARTILLERY, CAVALRY, INFANTRY, KEEP_FORMATION, SQUARE
from models.wfm1 import CARD_DIM, WFM1Batch, WFM1Policy
from training.wfm1.battles import ScenarioBattles, play_out
from training.wfm1.config import WFM1TrainConfig
from training.wfm1.scenarios import (
    HELD_OUT_SCENARIOS,
    TRAINING_SEEDS,
    WFMScenario,
    sample_training_scenario,
)
from training.wfm1.trainer import FINAL, LATEST, WFM1Trainer

SMALL_MODEL = dict(d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1)
SMALL = WFMScenario("small", "procedural", "clear", 2, 2, 77)


def tiny_config(tmp_path, **kw):
    settings = dict(total_timesteps=256, n_envs=4, n_steps=32, batch_size=64,
                    scenarios_per_rollout=2, max_side=3, max_steps=60, enable_wandb=False,
                    warm_start_steps=0,
                    checkpoint_dir=str(tmp_path / "ck"), log_dir=str(tmp_path / "logs"),
                    verbose=0, **SMALL_MODEL)
    settings.update(kw)
    return WFM1TrainConfig(**settings)


def test_the_held_out_set_is_the_seeds_twenty():
    assert len(HELD_OUT_SCENARIOS) == 20
    assert len({s.name for s in HELD_OUT_SCENARIOS}) == 20
    procedural = [s for s in HELD_OUT_SCENARIOS if s.terrain == "procedural"]
    assert [s.seed for s in procedural] == list(range(1001, 1013))
    assert [(s.n_blue, s.n_red) for s in procedural][:3] == [(4, 4), (6, 6), (4, 8)]
    sites = {(s.terrain, s.weather, s.n_blue, s.n_red, s.seed) for s in HELD_OUT_SCENARIOS
             if s.terrain != "procedural"}
    assert ("austerlitz", "fog", 8, 8, 3001) in sites and ("salamanca", "rain", 8, 4, 5002) in sites


def test_no_training_draw_is_a_held_out_scenario():
    held_out = {s.key for s in HELD_OUT_SCENARIOS}
    assert all(s.seed < TRAINING_SEEDS[0] for s in HELD_OUT_SCENARIOS)
    rng = np.random.default_rng(0)
    draws = [sample_training_scenario(rng) for _ in range(5000)]
    assert not held_out & {s.key for s in draws}
    assert all(TRAINING_SEEDS[0] <= s.seed < TRAINING_SEEDS[1] for s in draws)
    sizes = {(s.n_blue, s.n_red) for s in draws}
    assert (1, 1) in sizes and (16, 16) in sizes
    assert {s.terrain for s in draws} == {"procedural", "waterloo", "austerlitz", "borodino",
                                          "salamanca"}


def test_a_scenarios_forces_come_from_its_seed():
    scenario = HELD_OUT_SCENARIOS[6]  # 16v12
    again = WFMScenario("copy", scenario.terrain, scenario.weather, scenario.n_blue,
                        scenario.n_red, scenario.seed)
    assert again.order_of_battle == scenario.order_of_battle
    arms = np.array(scenario.order_of_battle.arm)
    for side in (arms[:scenario.n_blue], arms[scenario.n_blue:]):
        assert (side == INFANTRY).sum() >= 1
        assert (side == CAVALRY).mean() <= 0.3 + 1e-9 and (side == ARTILLERY).mean() <= 0.25
    card = scenario.card().to_tensor()
    assert card.shape == (CARD_DIM,)


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(terrain="moon"), "terrain='moon'"), (dict(weather="hail"), "weather='hail'"),
    (dict(n_blue=17), "n_blue=17"), (dict(n_red=0), "n_red=0"), (dict(seed=-1), "seed=-1"),
])
def test_a_scenario_checks_its_fields(kwargs, match):
    fields = dict(name="x", terrain="procedural", weather="clear", n_blue=2, n_red=2, seed=1)
    with pytest.raises(ValueError, match=match):
        WFMScenario(**{**fields, **kwargs})


def test_battles_of_several_scenarios_step_as_one():
    other = WFMScenario("gis", "waterloo", "fog", 3, 2, 78)
    battles = ScenarioBattles([SMALL, other], 3, max_steps=40, seed=5)
    view = battles.observe()
    assert view.tokens.shape == (6, 5, ENTITY_TOKEN_DIM) and battles.cards.shape == (6, CARD_DIM)
    assert view.own_mask[:3].sum(axis=1).tolist() == [2, 2, 2]
    assert view.own_mask[3:].sum(axis=1).tolist() == [3, 3, 3]
    assert view.pad_mask[:3, 4:].all()  # the 2v2 battles pad to the 3v2's five tokens
    before = battles.batches[0].state.x.copy()
    actions = np.zeros((6, 5, 3), np.float32)
    actions[:3, :, 0] = 1.0  # the 2v2 battles' Blue marches
    result = battles.step(actions)
    assert result.reward.shape == (6,) and not result.done.any()
    assert (battles.batches[0].state.x[:, :2] != before[:, :2]).any()
    with pytest.raises(RuntimeError, match="observe"):
        battles.step(actions)
    battles.observe()
    with pytest.raises(ValueError, match=r"\(6, 5, 3\)"):
        battles.step(actions[:, :4])
    # None: Blue under the doctrine too (the scripted baseline), no tokens needed.
    assert battles.step(None).reward.shape == (6,)


def test_the_trainer_trains_checkpoints_and_resumes(tmp_path):
    config = tiny_config(tmp_path)
    trainer = WFM1Trainer(config).learn()
    assert trainer.total_steps == 256 and trainer.updates == 2
    assert (tmp_path / "ck" / FINAL).is_file() and (tmp_path / "ck" / LATEST).is_file()
    metrics = trainer.history[-1]
    assert {"train/policy_loss", "train/value_loss", "train/entropy", "time/fps"} <= set(metrics)
    assert (tmp_path / "logs" / "wfm1" / "losses.png").is_file()  # the run's pictures
    again = WFM1Trainer(config, resume=tmp_path / "ck" / LATEST)
    assert (again.total_steps, again.updates) == (256, 2)
    for name, value in trainer.policy.state_dict().items():
        assert torch.equal(value, again.policy.state_dict()[name])
    final = WFM1Policy.load_checkpoint(tmp_path / "ck" / FINAL)
    assert final.kwargs == trainer.policy.kwargs
    bigger = tiny_config(tmp_path, d_model=64)
    with pytest.raises(ValueError, match="resume="):
        WFM1Trainer(bigger, resume=tmp_path / "ck" / LATEST)


def test_a_resumed_run_goes_on_bit_for_bit(tmp_path):
    # A run killed after its checkpoint at 256 steps and resumed from it ends with the
    # same weights, optimiser and numbers as the run that was never stopped.
    config = tiny_config(tmp_path, total_timesteps=512, checkpoint_every_updates=2)
    straight = WFM1Trainer(config).learn()
    resumed = WFM1Trainer(config.replace(log_dir=str(tmp_path / "logs2")),
                          resume=tmp_path / "ck" / "wfm1_256_steps.pt").learn()
    assert (resumed.total_steps, resumed.updates, resumed.episodes) == (
        straight.total_steps, straight.updates, straight.episodes)
    for name, value in straight.policy.state_dict().items():
        assert torch.equal(value, resumed.policy.state_dict()[name]), name
    for a, b in zip(straight.optimizer.state_dict()["state"].values(),
                    resumed.optimizer.state_dict()["state"].values(), strict=True):
        assert all(torch.equal(a[key], b[key]) for key in a)
    drop = ("time/fps", "time/rollout_fps")  # wall-clock
    assert [{k: v for k, v in h.items() if k not in drop} for h in straight.history[-2:]] == \
        [{k: v for k, v in h.items() if k not in drop} for h in resumed.history]
    assert straight.rng.bit_generator.state == resumed.rng.bit_generator.state


def test_adapter_only_training_leaves_the_base_alone(tmp_path):
    config = tiny_config(tmp_path, scenarios_per_rollout=1, total_timesteps=128)
    start = WFM1Policy(**SMALL_MODEL)
    tuner = WFM1Trainer(config, scenarios=[SMALL], init_policy=start, adapter_only=True).learn()
    base = dict(start.named_parameters())
    ids = {id(p) for p in tuner.policy.adapter_parameters()}
    adapter = {name for name, p in tuner.policy.named_parameters() if id(p) in ids}
    changed = [name for name, p in tuner.policy.named_parameters()
               if not torch.equal(p, base[name])]
    assert changed and set(changed) <= adapter
    with pytest.raises(ValueError, match="scenarios has 2"):
        WFM1Trainer(config, scenarios=[SMALL, SMALL])


def test_the_config_checks_its_battle_split():
    with pytest.raises(ValueError, match="n_envs=10"):
        WFM1TrainConfig(n_envs=10, scenarios_per_rollout=4)
    with pytest.raises(ValueError, match="teacher_decay_steps=0"):
        WFM1TrainConfig(teacher_decay_steps=0)


def test_a_win_rate_counts_draws():
    result = WFM1BenchmarkResult("s", "zero_shot", wins=1, draws=8, losses=1)
    assert result.win_rate == pytest.approx(0.1) and result.draw_rate == pytest.approx(0.8)
    summary = WFM1BenchmarkSummary([
        result, WFM1BenchmarkResult("s", "finetuned", 2, 8, 0),
        WFM1BenchmarkResult("s", "specialist", 4, 6, 0)])
    assert summary.mean_zero_shot_win_rate == pytest.approx(0.1)
    assert summary.finetune_recovery == pytest.approx(0.5)
    assert not summary.meets_zero_shot_criterion and not summary.meets_finetune_criterion
    zero_shot_only = WFM1BenchmarkSummary([result]).to_markdown()
    assert "| **mean win rate** | **10.0%** | - | - |" in zero_shot_only
    assert "Fine-tune recovery: not measured" in zero_shot_only


def test_the_benchmark_runs_every_condition_and_writes_its_report(tmp_path):
    config = WFM1BenchmarkConfig(n_eval_episodes=2, n_scenarios=1, finetune_steps=64,
                                 max_steps_per_episode=30, finetune_battles=2,
                                 report_path=str(tmp_path / "wfm1.md"))
    policy = WFM1Policy(**SMALL_MODEL)
    benchmark = WFM1Benchmark(config, tiny_config(tmp_path))
    summary = benchmark.run(policy)
    conditions = [(r.scenario, r.condition) for r in summary.results]
    name = HELD_OUT_SCENARIOS[0].name
    assert conditions == [(name, "zero_shot"), (name, "finetuned"), (name, "specialist")]
    assert all(r.n_episodes == 2 for r in summary.results)
    assert summary.results[1].train_steps == 64
    assert "doctrine commanding Blue" in summary.specialist
    path = summary.write_markdown()
    text = path.read_text()
    assert path == tmp_path / "wfm1.md" and name in text and "mean win rate" in text
    picture = summary.write_plot()
    assert picture == tmp_path / "wfm1.png"
    with Image.open(picture) as image:
        assert image.size[0] > 500 and len(np.unique(np.asarray(image.convert("L")))) > 10
    given = benchmark.run(policy, specialist_policies={name: policy})
    assert "given for" in given.specialist
    assert [r.condition for r in given.results][-2:] == ["specialist", "doctrine"]
    doctrine = given.results[-1]
    assert (doctrine.wins, doctrine.draws, doctrine.losses) == tuple(
        (r.wins, r.draws, r.losses) for r in summary.results if r.condition == "specialist")[0]
    assert "doctrine (reference)" in given.to_markdown()
    assert given.mean_doctrine_win_rate == summary.mean_specialist_win_rate
    with pytest.raises(TypeError, match="WFM1BenchmarkConfig"):
        WFM1Benchmark(None)


def test_trained_specialists_are_kept_and_reused(tmp_path, monkeypatch):
    import benchmarks.wfm1 as benchmark_module

    config = WFM1BenchmarkConfig(n_eval_episodes=2, n_scenarios=1, finetune_steps=0,
                                 specialist_train_steps=256, max_steps_per_episode=30,
                                 finetune_battles=2, specialist_dir=str(tmp_path / "sp"))
    train_config = tiny_config(tmp_path, warm_start_steps=100_000, warm_start_epochs=1)
    policy = WFM1Policy(**SMALL_MODEL)
    first = WFM1Benchmark(config, train_config).run(policy)
    kept = tmp_path / "sp" / f"{HELD_OUT_SCENARIOS[0].name}_256_steps.pt"
    trained = first.results[-2]
    assert kept.is_file() and (trained.condition, trained.train_steps) == ("specialist", 256)
    assert "256 battle steps each" in first.specialist

    def no_training(*args, **kwargs):
        raise AssertionError("a kept specialist was trained again")

    monkeypatch.setattr(benchmark_module, "WFM1Trainer", no_training)
    again = WFM1Benchmark(config, train_config).run(policy)
    assert again.results == first.results
    with pytest.raises(ValueError, match="specialist_dir"):
        WFM1BenchmarkConfig(specialist_dir=3)


def test_evaluation_battles_are_reproducible():
    policy = WFM1Policy(**SMALL_MODEL)
    first = play_scenario(policy, SMALL, 3, 40)
    assert np.array_equal(first, play_scenario(policy, SMALL, 3, 40))
    assert set(np.unique(play_scenario(None, SMALL, 3, 40))) <= {-1, 0, 1}


def test_a_demonstration_is_the_doctrines_order_of_each_own_unit():
    battles = ScenarioBattles([SMALL], 2, max_steps=40, seed=3)
    view = battles.observe()
    batch, doctrine = battles.batches[0], battles.doctrines[0]
    expected, _ = doctrine.orders(batch.state, batch.geometry)
    result = battles.step(None)
    taught = result.doctrine_actions
    for b in range(2):
        for k in np.flatnonzero(view.own_mask[b]):
            np.testing.assert_array_equal(taught[b, k], expected[b, view.unit[b, k]])
        assert (taught[b, ~view.own_mask[b]] == 0).all()
    assert battles.step(None).doctrine_actions is None  # no observe since: no tokens to teach


def test_blue_can_learn_from_the_doctrine_playing_another_plan():
    battles = ScenarioBattles([SMALL], 2, max_steps=40, seed=3, blue_plan=LINE_PLAN)
    assert battles.doctrines[0].plan == ArmsPlan() and battles.teachers[0].plan == LINE_PLAN
    plain = ScenarioBattles([SMALL], 2, 40)
    assert plain.teachers is plain.doctrines  # the doctrine's own plan: one doctrine a step
    view = battles.observe()
    batch = battles.batches[0]
    expected, _ = battles.teachers[0].orders(batch.state, batch.geometry)
    taught = battles.step(None).doctrine_actions
    for b in range(2):
        for k in np.flatnonzero(view.own_mask[b]):
            np.testing.assert_array_equal(taught[b, k], expected[b, view.unit[b, k]])
    with pytest.raises(TypeError, match="plan"):
        ScenarioBattles([SMALL], 2, 40, blue_plan=3)


def test_blue_s_teacher_is_named_as_a_plan_perhaps_with_an_attack_rule():
    named = ScenarioBattles([SMALL], 2, 40, blue_plan="line")
    assert named.teachers[0].plan == LINE_PLAN
    assert named.teachers[0].attack_rule == named.doctrines[0].attack_rule
    bold = ScenarioBattles([SMALL], 2, 40, blue_plan="line+always")
    assert (bold.teachers[0].plan, bold.teachers[0].attack_rule) == (LINE_PLAN, "always")
    assert bold.doctrines[0].attack_rule != "always"  # Red keeps the doctrine's own rule
    for name, wrong in (("column", "column"), ("line+bold", "bold")):
        with pytest.raises(ValueError, match=rf"blue_plan='{re.escape(name)}'.*'{wrong}'"):
            ScenarioBattles([SMALL], 2, 40, blue_plan=name)


def test_the_trainer_teaches_the_plan_it_is_given(tmp_path):
    trainer = WFM1Trainer(tiny_config(tmp_path, warm_start_arms_plan="line",
                                      formation_orders=True))
    assert {t.plan for t in trainer.draw_battles().teachers} == {LINE_PLAN}
    assert WFM1TrainConfig().warm_start_arms_plan == "standard"
    with pytest.raises(ValueError, match="warm_start_arms_plan"):
        WFM1TrainConfig(warm_start_arms_plan="column")
    with pytest.raises(ValueError, match="formation_orders"):  # the drill would not follow
        WFM1TrainConfig(warm_start_arms_plan="line")
    bold = WFM1Trainer(tiny_config(tmp_path / "bold", warm_start_arms_plan="line+always",
                                   formation_orders=True))
    assert {(t.plan, t.attack_rule) for t in bold.draw_battles().teachers} == {
        (LINE_PLAN, "always")}
    with pytest.raises(ValueError, match=r"warm_start_arms_plan='line\+bold'.*'bold'"):
        WFM1TrainConfig(warm_start_arms_plan="line+bold")
    # The standard plan's formations are the drill's whatever the rule: no formation head.
    assert WFM1TrainConfig(warm_start_arms_plan="standard+always").formation_orders is False


def test_the_doctrine_labels_the_states_the_generalist_reaches():
    battles = ScenarioBattles([SMALL], 2, max_steps=40, seed=3)
    view = battles.observe()
    batch, doctrine = battles.batches[0], battles.doctrines[0]
    expected, _ = doctrine.orders(batch.state, batch.geometry)
    before = batch.state.x.copy()
    orders = np.zeros((2, battles.n_tokens, 3), np.float32)
    orders[..., 0] = 1.0  # every own unit marches straight ahead, whatever the doctrine says
    taught = battles.step(orders).doctrine_actions
    for b in range(2):
        for k in np.flatnonzero(view.own_mask[b]):
            np.testing.assert_array_equal(taught[b, k], expected[b, view.unit[b, k]])
    assert not np.array_equal(batch.state.x, before)


def test_the_teacher_loss_pulls_the_means_towards_the_doctrine(tmp_path):
    def teacher_error(policy):
        battles = ScenarioBattles([SMALL], 8, max_steps=40, seed=5)
        view = battles.observe()
        labels = battles.step(None).doctrine_actions
        mean, _ = policy(WFM1Batch.checked(policy, view.tokens, view.pad_mask,
                                           card_vec=battles.cards))
        own = view.own_mask
        return float(((mean.detach().numpy() - labels) ** 2)[own].mean())

    config = tiny_config(tmp_path, total_timesteps=1024, teacher_coef=20.0, learning_rate=3e-3)
    trainer = WFM1Trainer(config, scenarios=[SMALL, SMALL])
    start = teacher_error(trainer.policy)
    trainer.learn()
    assert trainer.history[-1]["train/teacher_loss"] < trainer.history[0]["train/teacher_loss"]
    assert teacher_error(trainer.policy) < 0.5 * start


def test_the_teacher_weight_falls_linearly_over_the_ppo_steps_and_resumes(tmp_path):
    # 128 battle steps a rollout: the weight is 2 at the first update, 1 at the second,
    # then 0; a run resumed after two updates goes on at 0.
    config = tiny_config(tmp_path, total_timesteps=512, teacher_coef=2.0,
                         teacher_decay_steps=256, checkpoint_every_updates=2)
    trainer = WFM1Trainer(config).learn()
    assert [h["train/teacher_coef"] for h in trainer.history
            if "train/teacher_coef" in h] == [2.0, 1.0, 0.0, 0.0]
    assert trainer.history[2]["train/teacher_loss"] > 0  # measured, weighed at 0
    resumed = WFM1Trainer(config, resume=tmp_path / "ck" / "wfm1_256_steps.pt")
    resumed.config.total_timesteps = 384
    resumed.learn()
    assert resumed.history[-1]["train/teacher_coef"] == 0.0
    constant = WFM1Trainer(tiny_config(tmp_path / "c", total_timesteps=256, teacher_coef=2.0))
    constant.learn()
    assert [h["train/teacher_coef"] for h in constant.history] == [2.0, 2.0]


def test_validation_keeps_the_best_policy(tmp_path):
    from training.wfm1.trainer import BEST

    config = tiny_config(tmp_path, total_timesteps=512, validate_every_updates=2,
                         validation_scenarios=2, validation_battles=2)
    trainer = WFM1Trainer(config).learn()
    rates = [h["validation/win_rate"] for h in trainer.history if "validation/win_rate" in h]
    assert len(rates) == 1 + 4 // 2  # the start, then every second of the 4 updates
    assert trainer.best_validation == max(rates)
    best = WFM1Policy.load_checkpoint(tmp_path / "ck" / BEST)
    assert np.mean(play_out(trainer.validation_battles(), best) == 1) == trainer.best_validation
    # A run resumed from an older checkpoint still knows the best kept since.
    older = tmp_path / "older.pt"
    trainer.best_validation = -1.0
    trainer.save(older)
    resumed = WFM1Trainer(config, resume=older)
    assert resumed.best_validation == max(rates)


def test_the_warm_start_imitates_the_doctrine(tmp_path):
    from training.wfm1.trainer import WARM_START
    from training.wfm1.warm_start import clone, collect_demonstrations

    config = tiny_config(tmp_path, total_timesteps=1024, warm_start_steps=512,
                         warm_start_epochs=2, resample_every=4)
    trainer = WFM1Trainer(config)
    assert trainer.total_steps == 512 and (tmp_path / "ck" / WARM_START).is_file()
    np.testing.assert_allclose(trainer.policy.log_std.detach().exp().numpy(),
                               config.warm_start_std, rtol=1e-6)
    demos, used = collect_demonstrations(
        lambda: ScenarioBattles([SMALL], 4, max_steps=40, seed=11), 480, 0.99, 40)
    assert used == 480 and len(demos) > 0 and demos.tokens.shape[1:] == (4, ENTITY_TOKEN_DIM)
    policy = WFM1Policy(**SMALL_MODEL)
    first = clone(policy, demos, epochs=1, learning_rate=1e-3)
    later = clone(policy, demos, epochs=5, learning_rate=1e-3)
    assert later["action"] < first["action"]


def test_dagger_labels_the_states_the_policy_reached_with_the_teachers_orders():
    from training.wfm1.warm_start import collect_demonstrations, join_demonstrations

    def draw():
        return ScenarioBattles([SMALL], 4, max_steps=40, seed=11)

    taught, _ = collect_demonstrations(draw, 480, 0.99, 40)
    policy = WFM1Policy(**SMALL_MODEL)  # untrained: it does not fight as the doctrine does
    own, used = collect_demonstrations(draw, 480, 0.99, 40, policy=policy)
    assert used == 480 and len(own) > 0
    np.testing.assert_array_equal(own.tokens[:4], taught.tokens[:4])  # the same start
    assert not np.array_equal(own.tokens[4:8], taught.tokens[4:8])  # then its own states
    # Each label is the doctrine's order in the state the policy reached.
    battles = draw()
    view = battles.observe()
    with torch.no_grad():
        first = policy.act(torch.from_numpy(view.tokens), torch.from_numpy(view.pad_mask),
                           card_vec=torch.from_numpy(battles.cards),
                           own_mask=torch.from_numpy(view.own_mask), deterministic=True)[0]
    battles.step(first.numpy())
    view = battles.observe()
    np.testing.assert_array_equal(own.tokens[4:8], view.tokens)
    np.testing.assert_array_equal(own.actions[4:8], battles.step(None).doctrine_actions)
    wider = ScenarioBattles([WFMScenario("wider", "procedural", "clear", 3, 3, 78)], 4, 40,
                            seed=11)
    more, _ = collect_demonstrations(lambda: wider, 160, 0.99, 40)
    joined = join_demonstrations([own, more])
    assert len(joined) == len(own) + len(more) and joined.tokens.shape[1] == 6
    assert joined.pad_mask[:len(own), 4:].all()  # the narrower rows padded


def test_the_trainer_runs_dagger_rounds_within_its_budget(tmp_path):
    config = tiny_config(tmp_path, total_timesteps=2048, warm_start_steps=512,
                         warm_start_epochs=1, resample_every=4, warm_start_dagger_rounds=2,
                         warm_start_dagger_steps=256)
    assert WFM1Trainer(config).total_steps == 512 + 2 * 256
    short = tiny_config(tmp_path / "short", total_timesteps=1024, warm_start_steps=512,
                        warm_start_epochs=1, resample_every=4, warm_start_dagger_rounds=3,
                        warm_start_dagger_steps=256)  # a rollout of 128 is left for PPO
    assert WFM1Trainer(short).total_steps <= 1024 - 128
    with pytest.raises(ValueError, match="warm_start_dagger_rounds"):
        tiny_config(tmp_path, warm_start_dagger_rounds=-1)


# --- formation orders ---------------------------------------------------------------------


def test_a_fourth_number_orders_the_units_formation():
    def first_step(width, code):
        battles = ScenarioBattles([SMALL], 2, max_steps=60, seed=3)
        view = battles.observe()
        batch = battles.batches[0]
        infantry = view.own_mask & (batch.state.arm[view.unit] == INFANTRY)
        battle, units = np.nonzero(infantry)[0], view.unit[infantry]
        start = batch.state.formation[battle, units].copy()
        actions = np.zeros((2, battles.n_tokens, width), np.float32)
        if width > 3:
            actions[..., 3] = KEEP_FORMATION
            actions[..., 3][infantry] = code
            actions[..., 3][view.pad_mask] = 99.0  # not an own unit's: ignored
        battles.step(actions)
        return start, batch.state.formation[battle, units], batch.state.drill[battle, units]

    start, formation, drill = first_step(4, SQUARE)
    assert len(formation) and (formation == SQUARE).all() and (drill > 0).all()
    assert not (start == SQUARE).any()
    # Three numbers: the drill's formations, which do not form square here.
    _, formation, _ = first_step(3, None)
    assert not (formation == SQUARE).any()
    # -1 keeps the formation the battle started in.
    start, formation, drill = first_step(4, KEEP_FORMATION)
    assert (drill == 0).all() and (formation == start).all()


def test_battles_label_the_doctrines_formations_and_check_the_codes():
    battles = ScenarioBattles([SMALL], 2, max_steps=40, seed=3, formation_orders=True)
    view = battles.observe()
    batch, doctrine = battles.batches[0], battles.doctrines[0]
    expected, formations = doctrine.orders(batch.state, batch.geometry)
    taught = battles.step(None).doctrine_actions
    assert taught.shape == (2, battles.n_tokens, 4)
    for b in range(2):
        for k in np.flatnonzero(view.own_mask[b]):
            np.testing.assert_array_equal(taught[b, k, :3], expected[b, view.unit[b, k]])
            assert taught[b, k, 3] == formations[b, view.unit[b, k]]
        assert (taught[b, ~view.own_mask[b]] == 0).all()
    assert ScenarioBattles([SMALL], 2, 40, seed=3).observe() is not None  # default: 3 wide
    with pytest.raises(ValueError, match="formation_orders"):
        ScenarioBattles([SMALL], 2, 40, formation_orders="yes")
    view = battles.observe()
    actions = np.zeros((2, battles.n_tokens, 4), np.float32)
    actions[np.nonzero(view.own_mask)[0][0], np.nonzero(view.own_mask)[1][0], 3] = 2.5
    with pytest.raises(ValueError, match=r"actions\[\.\.\., 3\] \(the formation codes\) "
                                         r"holds \[0\.\s+2\.5\]: expected integer codes -1"):
        battles.step(actions)
    with pytest.raises(ValueError, match=r"\(2, 4, 5\) are invalid: expected \(2, 4, 3\), "
                                         r"or \(2, 4, 4\)"):
        battles.step(np.zeros((2, battles.n_tokens, 5), np.float32))


def test_the_config_declares_formation_orders():
    assert WFM1TrainConfig.yaml_keys()["formation_orders"] == "model.formation_orders"
    assert WFM1TrainConfig().model_kwargs()["formation_orders"] is False
    config = WFM1TrainConfig.from_nested({"model": {"formation_orders": True}})
    assert config.formation_orders and config.model_kwargs()["formation_orders"] is True
    assert WFM1Policy(**config.model_kwargs()).order_width == 4
    with pytest.raises(ValueError, match="formation_orders"):
        WFM1TrainConfig(formation_orders="no")


def test_the_warm_start_fits_the_formation_head():
    from training.wfm1.warm_start import clone, collect_demonstrations

    demos, _ = collect_demonstrations(
        lambda: ScenarioBattles([SMALL], 4, max_steps=40, seed=11, formation_orders=True),
        480, 0.99, 40)
    assert demos.actions.shape[-1] == 4 and len(demos) > 0
    policy = WFM1Policy(**SMALL_MODEL, formation_orders=True)
    first = clone(policy, demos, epochs=1, learning_rate=1e-3)
    later = clone(policy, demos, epochs=5, learning_rate=1e-3)
    assert later["action"] < first["action"]
    with pytest.raises(ValueError, match="order_width=3"):
        clone(WFM1Policy(**SMALL_MODEL), demos, epochs=1)


def _full_run(tmp_path, **model):
    """A tiny run of every stage (imitation, PPO with the teacher, validation) of a
    generalist built with ``model``'s settings; its config and trainer."""
    from training.train_wfm1 import train_wfm1

    config = tiny_config(tmp_path, **model, total_timesteps=512, warm_start_steps=256,
                         warm_start_epochs=1, teacher_coef=1.0, validate_every_updates=1,
                         validation_scenarios=1, validation_battles=2)
    trainer = train_wfm1(config)
    assert trainer.total_steps == 512
    assert {"train/entropy", "train/teacher_loss", "validation/win_rate"} <= set(
        trainer.history[-1])
    return config, trainer


def test_a_formation_ordering_generalist_trains_and_is_evaluated(tmp_path):
    config, trainer = _full_run(tmp_path, formation_orders=True)
    assert trainer.policy.formation_orders
    rollout = trainer.collect_rollout()
    # The teacher labels the doctrine's formation orders too (its loss has their
    # cross-entropy).
    assert rollout.actions.shape[-1] == 4 and rollout.teacher.shape[-1] == 4
    taught = rollout.teacher[..., 3][rollout.own_mask]
    assert torch.equal(taught, taught.round()) and taught.min() >= -1 and taught.max() <= 3
    codes = rollout.actions[..., 3][rollout.own_mask]
    assert torch.equal(codes, codes.round()) and codes.min() >= -1 and codes.max() <= 3
    final = WFM1Policy.load_checkpoint(trainer.final_checkpoint)
    assert final.kwargs == trainer.policy.kwargs and final.kwargs["formation_orders"] is True
    again = WFM1Trainer(config, resume=tmp_path / "ck" / LATEST)
    assert (again.total_steps, again.updates) == (trainer.total_steps, trainer.updates)
    # The benchmark plays it, fine-tunes it and trains a specialist of its kind.
    benchmark = WFM1Benchmark(
        WFM1BenchmarkConfig(n_eval_episodes=2, n_scenarios=1, finetune_steps=64,
                            specialist_train_steps=128, max_steps_per_episode=30,
                            finetune_battles=2),
        tiny_config(tmp_path / "bench"))
    summary = benchmark.run(trainer.final_checkpoint)
    assert [r.condition for r in summary.results] == ["zero_shot", "finetuned",
                                                      "specialist", "doctrine"]


# --- self-play among generalists --------------------------------------------------------


def self_play_config(tmp_path, **kw):
    return tiny_config(tmp_path, enable_self_play=True, self_play_pool_dir=str(tmp_path / "pool"),
                       **kw)


def recording_steps(battles):
    """Record the orders and formations each batch of ``battles`` is stepped with."""
    seen = {}
    for k, batch in enumerate(battles.batches):
        def step(orders, formations, _step=batch.step, _k=k):
            seen[_k] = (orders.copy(), formations.copy())
            return _step(orders, formations)
        batch.step = step
    return seen


def test_the_config_declares_self_play():
    keys = WFM1TrainConfig.yaml_keys()
    assert {name: keys[name] for name in (
        "enable_self_play", "self_play_pool_dir", "self_play_pool_max_size",
        "self_play_snapshot_freq", "self_play_scripted_share")} == {
        "enable_self_play": "self_play.enabled", "self_play_pool_dir": "self_play.pool_dir",
        "self_play_pool_max_size": "self_play.pool_max_size",
        "self_play_snapshot_freq": "self_play.snapshot_freq",
        "self_play_scripted_share": "self_play.scripted_share"}
    default = WFM1TrainConfig()
    assert (default.enable_self_play, default.self_play_pool_dir, default.self_play_pool_max_size,
            default.self_play_snapshot_freq, default.self_play_scripted_share) == (
        False, "checkpoints/wfm1/pool", 10, 200_000, 0.5)
    config = WFM1TrainConfig.from_nested({"self_play": {"enabled": True,
                                                        "scripted_share": 0.25}})
    assert config.enable_self_play and config.self_play_scripted_share == 0.25
    for field, value in (("self_play_scripted_share", 1.5), ("self_play_scripted_share", -0.1),
                         ("self_play_snapshot_freq", 0), ("self_play_pool_max_size", 0),
                         ("enable_self_play", "yes")):
        with pytest.raises(ValueError, match=f"{field}={value!r} is invalid"):
            WFM1TrainConfig(**{field: value})


def test_the_wfm1_pool_adds_evicts_and_reloads_in_version_order(tmp_path, caplog):
    import logging

    from storage.files import UnreadableFileError
    from training.self_play import WFM1OpponentPool

    folder = tmp_path / "pool"
    pool = WFM1OpponentPool(folder, max_size=2)
    assert pool.size == 0 and pool.sample() is None and pool.sample_latest() is None
    policies = [WFM1Policy(**SMALL_MODEL) for _ in range(3)]
    for version, policy in enumerate(policies, start=1):
        path = pool.add(policy, version)
        assert path.name == f"wfm1_snapshot_v{version:06d}.pt"
    assert [p.name for p in pool.snapshot_paths] == ["wfm1_snapshot_v000002.pt",
                                                     "wfm1_snapshot_v000003.pt"]
    assert not (folder / "wfm1_snapshot_v000001.pt").exists()  # evicted from the disk too
    latest = pool.sample_latest()
    assert latest is pool.sample_latest()  # read once, kept while in the pool
    assert not latest.training and not any(p.requires_grad for p in latest.parameters())
    for name, value in policies[2].state_dict().items():
        assert torch.equal(value, latest.state_dict()[name]), name
    rng = np.random.default_rng(0)
    drawn = {id(pool.sample(rng)) for _ in range(20)}
    assert drawn == {id(pool.load(p)) for p in pool.snapshot_paths}
    with pytest.raises(ValueError, match="version=3 is invalid"):
        pool.add(policies[0], 3)
    with pytest.raises(TypeError, match="expected a WFM1Policy"):
        pool.add(object(), 4)
    # Reloaded in version order (v10 after v9, not before it), foreign files left alone.
    (folder / "notes.txt").write_text("mine")
    pool.add(policies[0], 9)
    pool.add(policies[1], 10)
    with caplog.at_level(logging.WARNING, logger="training.common.pools"):
        again = WFM1OpponentPool(folder, max_size=5)
    assert [again.version_of(p) for p in again.snapshot_paths] == [9, 10]
    assert again.latest_version == 10 and "notes.txt" in caplog.text
    assert (folder / "notes.txt").read_text() == "mine"
    for name, value in policies[1].state_dict().items():
        assert torch.equal(value, again.sample_latest().state_dict()[name]), name
    # A snapshot linking out of the folder is refused by name.
    outside = policies[0].save_checkpoint(tmp_path / "elsewhere.pt")
    (folder / "wfm1_snapshot_v000011.pt").symlink_to(outside)
    with pytest.raises(UnreadableFileError, match="wfm1_snapshot_v000011.pt links to"):
        WFM1OpponentPool(folder)


def test_reds_card_sees_the_battle_from_reds_side():
    from envs.battles.multi_battalion_batch import RED

    scenario = HELD_OUT_SCENARIOS[6]  # 16v12
    blue, red = scenario.card(), scenario.card(RED)
    assert (blue.n_blue_units, blue.n_red_units) == (16, 12)
    assert (red.n_blue_units, red.n_red_units) == (12, 16)
    assert (red.cavalry_fraction, red.artillery_fraction) == scenario.shares(RED)
    assert (blue.cavalry_fraction, blue.artillery_fraction) == scenario.shares(0)
    assert (red.map_scale, red.weather_code, red.terrain_type) == (
        blue.map_scale, blue.weather_code, blue.terrain_type)
    other = WFMScenario("gis", "waterloo", "fog", 3, 2, 78)
    battles = ScenarioBattles([SMALL, other], 2, max_steps=40, seed=5)
    np.testing.assert_array_equal(battles.cards[2], other.card().to_tensor().numpy())
    np.testing.assert_array_equal(battles.red_cards[2], other.card(RED).to_tensor().numpy())
    with pytest.raises(ValueError, match="side=2"):
        scenario.card(2)


def test_a_policy_red_commands_reds_units_and_leaves_blue_alone():
    from envs.battles.entity_tokens import entity_tokens
    from envs.battles.multi_battalion_batch import RED

    torch.manual_seed(3)
    red_policy = WFM1Policy(**SMALL_MODEL)
    with torch.no_grad():  # a trained-looking adapter: the card changes the orders
        for parameter in red_policy.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    uneven = WFMScenario("uneven", "procedural", "clear", 2, 3, 77)  # the cards differ
    other = WFMScenario("other", "procedural", "rain", 2, 3, 79)
    plain = ScenarioBattles([uneven, other], 2, max_steps=60, seed=3)
    dealt = ScenarioBattles([uneven, other], 2, max_steps=60, seed=3, reds=[red_policy, None])
    assert dealt.red_is_policy.tolist() == [True, True, False, False]
    assert not plain.red_is_policy.any()
    # What Red's generalist sees (Red's tokens, Red's card) and would order.
    batch = dealt.batches[0]
    red_view = entity_tokens(batch, RED, dealt.n_tokens)

    def red_means(cards):
        return red_policy.act(torch.from_numpy(red_view.tokens),
                              torch.from_numpy(red_view.pad_mask),
                              card_vec=torch.from_numpy(cards),
                              own_mask=torch.from_numpy(red_view.own_mask),
                              deterministic=True)[0].numpy()

    expected = red_means(dealt.red_cards[:2])
    assert not np.allclose(expected, red_means(dealt.cards[:2]))  # Blue's card would differ
    seen = {"plain": recording_steps(plain), "dealt": recording_steps(dealt)}
    blue_orders = np.zeros((4, dealt.n_tokens, 3), np.float32)
    blue_orders[..., 0] = 0.5
    labels = []
    for battles in (plain, dealt):
        battles.observe()
        labels.append(battles.step(blue_orders).doctrine_actions)
    np.testing.assert_array_equal(labels[0], labels[1])  # the teacher's labels for Blue
    (scripted, drill), (orders, formations) = seen["plain"][0], seen["dealt"][0]
    red_units = np.flatnonzero(batch.team == RED)
    blue_units = np.flatnonzero(batch.team != RED)
    for b in range(2):
        for k in np.flatnonzero(red_view.own_mask[b]):
            np.testing.assert_allclose(orders[b, red_view.unit[b, k]], expected[b, k])
    assert not np.allclose(orders[:, red_units], scripted[:, red_units])
    np.testing.assert_array_equal(orders[:, blue_units], scripted[:, blue_units])
    np.testing.assert_array_equal(formations, drill)  # three numbers: Red keeps the drill
    for plain_array, dealt_array in zip(seen["plain"][1], seen["dealt"][1], strict=True):
        np.testing.assert_array_equal(plain_array, dealt_array)  # the doctrine's scenario
    for _ in range(15):
        for battles in (plain, dealt):
            battles.observe()
            battles.step(blue_orders)
    # Red went where its generalist sent it; the doctrine's scenario is untouched.
    moved = np.hypot(plain.batches[0].state.x[:, red_units] - batch.state.x[:, red_units],
                     plain.batches[0].state.y[:, red_units] - batch.state.y[:, red_units])
    assert moved.max() > 1.0
    for name in ("x", "y", "theta", "strength"):
        np.testing.assert_array_equal(getattr(plain.batches[1].state, name),
                                      getattr(dealt.batches[1].state, name))
    with pytest.raises(ValueError, match="reds has 1 commanders"):
        ScenarioBattles([uneven, other], 2, 40, reds=[red_policy])
    with pytest.raises(TypeError, match=r"reds\[1\]"):
        ScenarioBattles([uneven, other], 2, 40, reds=[None, "doctrine"])


def test_a_policy_red_with_a_formation_head_orders_reds_formations():
    from envs.battles.multi_battalion_batch import RED

    red_policy = WFM1Policy(**SMALL_MODEL, formation_orders=True)
    with torch.no_grad():  # every unit's likeliest choice: form square
        red_policy.formation_head.weight.zero_()
        red_policy.formation_head.bias.fill_(0.0)
        red_policy.formation_head.bias[SQUARE + 1] = 20.0
    battles = ScenarioBattles([SMALL], 2, max_steps=60, seed=3, reds=[red_policy])
    batch = battles.batches[0]
    red_infantry = (batch.team == RED) & (batch.state.arm[0] == INFANTRY)
    assert red_infantry.any() and not (batch.state.formation[:, red_infantry] == SQUARE).any()
    battles.observe()
    battles.step(np.zeros((2, battles.n_tokens, 3), np.float32))
    assert (batch.state.formation[:, red_infantry] == SQUARE).all()
    assert (batch.state.drill[:, red_infantry] > 0).all()
    blue = batch.team == 0
    assert not (batch.state.formation[:, blue] == SQUARE).any()  # Blue kept the drill's


def test_self_play_fills_the_pool_deals_snapshots_and_resumes(tmp_path):
    from training.train_wfm1 import train_wfm1
    from training.wfm1.checkpoints import load_checkpoint
    from training.wfm1.pool import WFM1OpponentPool

    # 128 battle steps a rollout, a snapshot every 256: at the start (v1), at 256 (v2)
    # and at 512 (v3); the pool keeps two. Battles of 20 steps end in every rollout.
    config = self_play_config(tmp_path, total_timesteps=512, max_steps=20,
                              self_play_snapshot_freq=256, self_play_pool_max_size=2,
                              self_play_scripted_share=0.0, checkpoint_every_updates=2)
    trainer = train_wfm1(config)
    assert trainer.self_play_version == 3
    assert sorted(p.name for p in (tmp_path / "pool").iterdir()) == [
        "wfm1_snapshot_v000002.pt", "wfm1_snapshot_v000003.pt"]
    for metrics in trainer.history:  # share 0: every Red a snapshot
        assert metrics["self_play/snapshot_share"] == 1.0
        assert metrics["rollout/win_rate_self_play"] == metrics["rollout/win_rate"]
        assert "rollout/win_rate_doctrine" not in metrics
    assert [h["self_play/pool_size"] for h in trainer.history] == [1, 2, 2, 2]
    # The last draw's Reds: frozen snapshots (v1 or v2, the pool then), not the learner.
    assert all(isinstance(red, WFM1Policy) and red is not trainer.policy and not red.training
               for red in trainer.battles.reds)
    assert WFM1OpponentPool(tmp_path / "pool").latest_version == 3
    assert all(red is None for red in trainer.validation_battles().reds)  # the doctrine
    assert load_checkpoint(tmp_path / "ck" / "wfm1_256_steps.pt").counters[
        "self_play_version"] == 2
    # Resumed, the numbering goes on and no snapshot is added at the start; share 1
    # keeps every Red scripted.
    resumed = WFM1Trainer(config.replace(total_timesteps=768, self_play_scripted_share=1.0,
                                         log_dir=str(tmp_path / "logs2")),
                          resume=tmp_path / "ck" / LATEST)
    assert resumed.self_play_version == 3
    resumed.learn()
    assert resumed.self_play_version == 4  # at 768, the next multiple of 256
    metrics = resumed.history[-1]
    assert metrics["self_play/snapshot_share"] == 0.0
    assert metrics["rollout/win_rate_doctrine"] == metrics["rollout/win_rate"]
    assert all(red is None for red in resumed.battles.reds)


def test_a_checkpoint_without_a_self_play_version_resumes_at_zero(tmp_path):
    import dataclasses

    from models.weights import write_checkpoint
    from training.wfm1.checkpoints import load_checkpoint

    config = tiny_config(tmp_path, total_timesteps=128)
    WFM1Trainer(config).learn()
    path = tmp_path / "ck" / LATEST
    saved = load_checkpoint(path)
    assert saved.counters["self_play_version"] == 0
    counters = {k: v for k, v in saved.counters.items() if k != "self_play_version"}
    old = write_checkpoint(tmp_path / "old.pt", dataclasses.replace(saved, counters=counters))
    assert "self_play_version" not in load_checkpoint(old).counters
    resumed = WFM1Trainer(self_play_config(tmp_path, total_timesteps=256), resume=old)
    assert resumed.self_play_version == 0 and resumed.total_steps == 128
    resumed.learn()  # self-play starts now: a snapshot when PPO starts
    assert resumed.self_play_version == 1 and resumed.pool.size == 1


def test_without_self_play_reds_are_the_doctrine_and_nothing_is_written(tmp_path):
    config = tiny_config(tmp_path, self_play_pool_dir=str(tmp_path / "pool"))
    trainer = WFM1Trainer(config).learn()
    assert trainer.pool is None and not (tmp_path / "pool").exists()
    assert all(red is None for red in trainer.battles.reds)
    assert not any(key.startswith("self_play/") or key.startswith("rollout/win_rate_")
                   for metrics in trainer.history for key in metrics)


def test_reds_are_dealt_from_the_runs_generator(tmp_path):
    from training.wfm1.pool import WFM1OpponentPool

    def dealing(folder, share=0.5):
        trainer = WFM1Trainer(self_play_config(folder, seed=2, self_play_scripted_share=share))
        trainer.start_self_play()  # the pool as PPO starts, with the run's first snapshot
        names = {id(trainer.pool.load(p)): p.name for p in trainer.pool.snapshot_paths}
        return [None if red is None else names[id(red)] for red in trainer.deal_reds(200)]

    for folder in (tmp_path / "a", tmp_path / "b"):  # two pools of the same two snapshots
        pool = WFM1OpponentPool(folder / "pool")
        for version in (1, 2):
            pool.add(WFM1Policy(**SMALL_MODEL), version)
    dealt = dealing(tmp_path / "a")
    assert 70 < dealt.count(None) < 130  # the doctrine in about half the scenarios
    assert set(dealt) - {None} == {f"wfm1_snapshot_v00000{v}.pt" for v in (1, 2, 3)}
    assert dealing(tmp_path / "b") == dealt  # the same seed deals the same Reds
    assert dealing(tmp_path / "c", share=1.0) == [None] * 200
    assert dealing(tmp_path / "d", share=0.0) == ["wfm1_snapshot_v000001.pt"] * 200


# --- brigade and division tokens as context ----------------------------------------------------


def test_the_config_declares_echelon_tokens(monkeypatch):
    from envs.battles.echelon_tokens import brigade_count
    from training.wfm1.config import ECHELON_TOKEN_BYTES

    keys = WFM1TrainConfig.yaml_keys()
    assert (keys["echelon_tokens"], keys["brigade_size"]) == ("model.echelon_tokens",
                                                              "model.brigade_size")
    default = WFM1TrainConfig()
    assert (default.echelon_tokens, default.brigade_size) == (False, 4)
    # Off, the policy is built as before (its kwargs without the setting).
    assert WFM1Policy(**default.model_kwargs()).kwargs == WFM1Policy().kwargs
    config = WFM1TrainConfig.from_nested({"model": {"echelon_tokens": True,
                                                    "brigade_size": 3}})
    policy = WFM1Policy(**config.model_kwargs())
    assert policy.echelon_tokens and policy.brigade_size == 3
    for field, value in (("brigade_size", 0), ("brigade_size", 2.5), ("echelon_tokens", "yes")):
        with pytest.raises(ValueError, match=f"{field}={value!r} is invalid"):
            WFM1TrainConfig(**{field: value})
    # The memory check counts the rollout's brigade and division tokens.
    seen = []
    monkeypatch.setattr(WFM1TrainConfig, "check_rollout_memory",
                        lambda self, battle, sample: seen.append(sample))
    WFM1TrainConfig(max_side=4)
    WFM1TrainConfig(max_side=4, echelon_tokens=True, brigade_size=3)
    assert seen[1] - seen[0] == ECHELON_TOKEN_BYTES * (brigade_count(8, 3) + 2) == 77 * 8


def test_a_self_play_red_with_echelon_tokens_reads_reds_own():
    from envs.battles.echelon_tokens import echelon_tokens
    from envs.battles.entity_tokens import entity_tokens
    from envs.battles.multi_battalion_batch import RED

    torch.manual_seed(3)
    red_policy = WFM1Policy(**SMALL_MODEL, echelon_tokens=True, brigade_size=2)
    with torch.no_grad():
        for parameter in red_policy.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    uneven = WFMScenario("uneven", "procedural", "clear", 2, 3, 77)
    other = WFMScenario("other", "procedural", "rain", 3, 2, 79)
    battles = ScenarioBattles([uneven, other], 2, max_steps=60, seed=3,
                              reds=[red_policy, red_policy])
    orders = battles.red_orders()
    for k, batch in enumerate(battles.batches):
        view = entity_tokens(batch, RED, battles.n_tokens)
        context = echelon_tokens(view, 2, first_unit=batch.n_blue)
        rows = slice(2 * k, 2 * k + 2)
        expected = red_policy.act(view.tokens, view.pad_mask,
                                  card_vec=battles.red_cards[rows], own_mask=view.own_mask,
                                  deterministic=True,
                                  **red_policy.echelon_inputs(context))[0].numpy()
        battle, token = np.nonzero(view.own_mask)
        (b, units), actions = orders[k]
        np.testing.assert_array_equal(units, view.unit[battle, token])
        np.testing.assert_allclose(actions, expected[battle, token], atol=1e-4)
    battles.observe()
    battles.step(np.zeros((4, battles.n_tokens, 3), np.float32))


def test_a_generalist_with_echelon_tokens_trains_and_is_evaluated(tmp_path):
    config, trainer = _full_run(tmp_path, echelon_tokens=True, brigade_size=2)
    assert trainer.policy.echelon_tokens
    assert (tmp_path / "ck" / "wfm1_warm_start.pt").is_file()
    rollout = trainer.collect_rollout()
    n_tokens = rollout.tokens.shape[2]
    assert rollout.echelons["brigade"].shape == (32, 4, 2 * -(-n_tokens // 2), ENTITY_TOKEN_DIM)
    assert rollout.echelons["division"].shape == (32, 4, 2, ENTITY_TOKEN_DIM)
    assert not rollout.echelons["division_pad"].all()
    final = WFM1Policy.load_checkpoint(trainer.final_checkpoint)
    assert final.kwargs == trainer.policy.kwargs
    assert (final.kwargs["echelon_tokens"], final.kwargs["brigade_size"]) == (True, 2)
    again = WFM1Trainer(config, resume=tmp_path / "ck" / LATEST)
    assert (again.total_steps, again.updates) == (trainer.total_steps, trainer.updates)
    for name, value in trainer.policy.state_dict().items():
        assert torch.equal(value, again.policy.state_dict()[name])
    # Played out, and by the benchmark (zero-shot on a held-out scenario, fine-tuned with
    # its brigade and division tokens).
    outcomes = play_out(ScenarioBattles([HELD_OUT_SCENARIOS[0]], 2, 30, seed=1), final)
    assert outcomes.shape == (2,)
    np.testing.assert_array_equal(
        outcomes, play_scenario(final, HELD_OUT_SCENARIOS[0], 2, 30, seed=1))
    benchmark = WFM1Benchmark(
        WFM1BenchmarkConfig(n_eval_episodes=2, n_scenarios=1, finetune_steps=64,
                            max_steps_per_episode=30, finetune_battles=2),
        tiny_config(tmp_path / "bench"))
    summary = benchmark.run(trainer.final_checkpoint)
    assert [r.condition for r in summary.results] == ["zero_shot", "finetuned", "specialist"]
    assert summary.results[1].train_steps == 64
