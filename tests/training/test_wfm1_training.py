"""WFM-1's scenarios, battles, multi-task trainer and benchmark, on real battles."""

from __future__ import annotations

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
from envs.sim.constants import ARTILLERY, CAVALRY, INFANTRY, KEEP_FORMATION, SQUARE
from models.wfm1 import CARD_DIM, WFM1Policy
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
    drop = ("time/fps",)  # wall-clock
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
        mean, _ = policy(torch.from_numpy(view.tokens), torch.from_numpy(view.pad_mask),
                         card_vec=torch.from_numpy(battles.cards))
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


def test_a_formation_ordering_generalist_trains_and_is_evaluated(tmp_path):
    from training.train_wfm1 import train_wfm1

    config = tiny_config(tmp_path, formation_orders=True, total_timesteps=512,
                         warm_start_steps=256, warm_start_epochs=1, teacher_coef=1.0,
                         validate_every_updates=1, validation_scenarios=1,
                         validation_battles=2)
    trainer = train_wfm1(config)
    assert trainer.policy.formation_orders and trainer.total_steps == 512
    assert {"train/entropy", "train/teacher_loss", "validation/win_rate"} <= set(
        trainer.history[-1])
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
