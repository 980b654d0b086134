"""Every name the seeds document under ``training.*`` is where they say, with their signature.

:data:`DOCUMENTED` transcribes the training API documentation (seed ``000_*``):
each documented object with its parameters and defaults as a ``def`` line's
parameter list (``...`` for a default the documentation names but does not
give). Each must be importable from its documented module and from the
``training`` package (whose ``_EXPORTS`` is the one list of public names), and
its signature must start with the documented parameters, in order, with the
same kinds and defaults; any further parameter must be optional.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect

import pytest

import training
from tests.fresh import run_python

DOCUMENTED: dict[str, str | None] = {
    # Training runners
    "training.train.train": "config=None, *, extra_callbacks=None, resume=None, **override_kwargs",
    "training.train.TrainingConfig": None,
    "training.train.WandbCallback": "log_freq=1000, verbose=0",
    "training.train.RewardBreakdownCallback": "log_freq=..., verbose=0",
    "training.train.EloEvalCallback": ("opponents, n_eval_episodes, registry, agent_name, "
                                       "eval_freq, env_kwargs=None, seed=None, verbose=0"),
    "training.train.ManifestCheckpointCallback": None,
    "training.train.ManifestEvalCallback": None,
    # Evaluation
    "training.evaluate.EvaluationResult": ("wins, draws, losses, n_episodes, win_rate, "
                                           "draw_rate, loss_rate"),
    "training.evaluate.evaluate": ("checkpoint_path, n_episodes=50, deterministic=True, "
                                   "seed=None, opponent='scripted_l5'"),
    "training.evaluate.evaluate_detailed": ("checkpoint_path, n_episodes=50, deterministic=True, "
                                            "seed=None, opponent='scripted_l5', env_kwargs=None"),
    "training.evaluate.run_episodes_with_model": (
        "model, opponent='scripted_l5', n_episodes=50, deterministic=True, seed=None, env=None, "
        "env_kwargs=None"),
    # Self-play
    "training.self_play.OpponentPool": "pool_dir, max_size=10",
    "training.self_play.OpponentPool.add": "self, model, version",
    "training.self_play.OpponentPool.sample": "self, rng=None",
    "training.self_play.OpponentPool.sample_latest": "self",
    "training.self_play.SelfPlayCallback": "pool, snapshot_freq=50000, vec_env=None, verbose=0",
    "training.self_play.WinRateVsPoolCallback": (
        "pool, eval_freq=50000, n_eval_episodes=20, deterministic=True, use_latest=False, "
        "verbose=0"),
    "training.self_play.evaluate_vs_pool": ("model, opponent, n_episodes=20, deterministic=True, "
                                            "seed=None"),
    "training.self_play.TeamOpponentPool": "pool_dir, max_size=10",
    "training.self_play.TeamOpponentPool.add": "self, policy, version",
    "training.self_play.TeamOpponentPool.sample": "self, rng=None, device=None",
    "training.self_play.TeamOpponentPool.sample_latest": "self, device=None",
    "training.self_play.evaluate_team_vs_pool": (
        "policy, opponent, n_blue=2, n_red=2, n_episodes=20, deterministic=True, seed=None, "
        "env_kwargs=None"),
    "training.self_play.nash_exploitability_proxy": (
        "policy, pool, n_blue=2, n_red=2, n_episodes_per_opponent=10, seed=None, "
        "env_kwargs=None"),
    # Curriculum
    "training.curriculum_scheduler.CurriculumScheduler": (
        "promote_threshold=0.7, win_rate_window=50, initial_stage=..."),
    "training.curriculum_scheduler.CurriculumScheduler.env_kwargs": "self",
    "training.curriculum_scheduler.CurriculumScheduler.log_promotion_event": (
        "self, total_steps, wandb_run=None"),
    "training.curriculum_scheduler.CurriculumScheduler.promote": "self",
    "training.curriculum_scheduler.CurriculumScheduler.record_episode": "self, win",
    "training.curriculum_scheduler.CurriculumScheduler.should_promote": "self",
    "training.curriculum_scheduler.CurriculumScheduler.wandb_metrics": "self",
    "training.curriculum_scheduler.CurriculumScheduler.win_rate": "self",
    "training.curriculum_scheduler.CurriculumStage": None,
    "training.curriculum_scheduler.load_v1_weights_into_mappo": (
        "v1_checkpoint_path, mappo_policy, *, strict=False"),
    # Policy registry
    "training.policy_registry.PolicyRegistry": "path='checkpoints/policy_registry.json'",
    "training.policy_registry.PolicyRegistry.get": "self, echelon, version",
    "training.policy_registry.PolicyRegistry.list": "self, echelon=None",
    "training.policy_registry.PolicyRegistry.load": (
        "self, echelon, version, device='cpu', **mappo_kwargs"),
    "training.policy_registry.PolicyRegistry.register": (
        "self, echelon, version, path, run_id=None, overwrite=False"),
    "training.policy_registry.PolicyRegistry.remove": "self, echelon, version",
    "training.policy_registry.PolicyRegistry.save": "self",
    "training.policy_registry.Echelon": None,
    "training.policy_registry.PolicyEntry": "echelon, version, path, run_id",
    # Elo ratings
    "training.elo.EloRegistry": "path='checkpoints/elo_registry.json'",
    "training.elo.EloRegistry.all_ratings": "self",
    "training.elo.EloRegistry.get_game_count": "self, name",
    "training.elo.EloRegistry.get_rating": "self, name",
    "training.elo.EloRegistry.save": "self",
    "training.elo.EloRegistry.update": "self, agent, opponent, outcome, n_games=1",
    "training.elo.TeamEloRegistry": "path='checkpoints/elo_registry.json'",
    "training.elo.TeamEloRegistry.get_rating": "self, name",
    "training.elo.TeamEloRegistry.update": "self, agent, opponent, outcome, n_games=1",
    # Artifacts
    "training.artifacts.CheckpointManifest": "path",
    "training.artifacts.CheckpointManifest.append": "self, row",
    "training.artifacts.CheckpointManifest.has_entry": (
        "self, artifact_path, *, artifact_type, step"),
    "training.artifacts.CheckpointManifest.known_paths": "self",
    "training.artifacts.CheckpointManifest.latest_entry_for_path": "self, artifact_path",
    "training.artifacts.CheckpointManifest.latest_periodic": "self, checkpoint_dir, prefix",
    "training.artifacts.CheckpointManifest.prune_periodic": (
        "self, checkpoint_dir, prefix, keep_last"),
    "training.artifacts.CheckpointManifest.prune_self_play_snapshots": (
        "self, pool_dir, keep_last"),
    "training.artifacts.CheckpointManifest.register": (
        "self, artifact_path, *, artifact_type, seed, curriculum_level, run_id, config_hash, "
        "step"),
    "training.artifacts.checkpoint_name_prefix": "*, seed, curriculum_level, enable_v2",
    "training.artifacts.checkpoint_final_stem": "*, seed, curriculum_level, enable_v2",
    "training.artifacts.checkpoint_best_filename": "*, seed, curriculum_level, enable_v2",
    "training.artifacts.parse_step_from_checkpoint_name": "path",
    # Benchmarks (issues 16 and 18 add the modules)
    "training.wfm1_benchmark.WFM1Benchmark": "config",
    "training.wfm1_benchmark.WFM1Benchmark.run": (
        "self, wfm1_policy=None, specialist_policies=None"),
    "training.wfm1_benchmark.WFM1BenchmarkConfig": None,
    "training.wfm1_benchmark.WFM1BenchmarkSummary": None,
    "training.wfm1_benchmark.WFM1BenchmarkSummary.write_markdown": "self, path=None",
    "training.transfer_benchmark.TransferBenchmark": "config",
    "training.transfer_benchmark.TransferBenchmark.run": "self, policy=None, gis_data_dir=None",
    "training.transfer_benchmark.TransferBenchmark.write_markdown": "self, summary, path=None",
    "training.transfer_benchmark.TransferEvalConfig": None,
    "training.transfer_benchmark.TransferSummary": None,
    "training.historical_benchmark.HistoricalBenchmark": "battles_path=..., seed=...",
    "training.historical_benchmark.HistoricalBenchmark.run": "self",
    "training.historical_benchmark.HistoricalBenchmark.write_markdown": (
        "self, summary, output_path=..."),
}

# Documented but deliberately not re-exported from ``training``.
NOT_EXPORTED = {
    "training.evaluate.main": "the evaluate CLI's entry point; `training.main` would say nothing",
}


def split(qualified: str) -> tuple[str, list[str]]:
    """(module, attribute path) of a documented name: every one is ``training.<module>.<...>``."""
    parts = qualified.split(".")
    return ".".join(parts[:2]), parts[2:]


def module_exists(qualified: str) -> bool:
    return importlib.util.find_spec(split(qualified)[0]) is not None


def resolve(module: str, path: list[str]):
    obj = importlib.import_module(module)
    for part in path:
        obj = getattr(obj, part)
    return obj


def documented_parameters(params: str) -> list[tuple[str, str, object]]:
    """(name, kind, default) of a parameter list; the default ``...`` means 'any'."""
    node = ast.parse(f"def f({params}): pass").body[0].args
    result = []
    positional = node.posonlyargs + node.args
    defaults = [inspect.Parameter.empty] * (len(positional) - len(node.defaults)) + [
        ast.literal_eval(d) for d in node.defaults]
    for arg, default in zip(positional, defaults, strict=True):
        result.append((arg.arg, "POSITIONAL_OR_KEYWORD", default))
    if node.vararg:
        result.append((node.vararg.arg, "VAR_POSITIONAL", inspect.Parameter.empty))
    for arg, default in zip(node.kwonlyargs, node.kw_defaults, strict=True):
        value = inspect.Parameter.empty if default is None else ast.literal_eval(default)
        result.append((arg.arg, "KEYWORD_ONLY", value))
    if node.kwarg:
        result.append((node.kwarg.arg, "VAR_KEYWORD", inspect.Parameter.empty))
    return result


def actual_signature(obj) -> inspect.Signature:
    if isinstance(obj, type) and hasattr(obj, "_fields"):  # a NamedTuple
        return inspect.Signature([inspect.Parameter(f, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                  for f in obj._fields])
    return inspect.signature(obj)


CASES = sorted(DOCUMENTED)


@pytest.mark.parametrize("qualified", CASES)
def test_documented_name_has_documented_signature(qualified: str) -> None:
    if not module_exists(qualified):
        pytest.skip(f"{split(qualified)[0]} is added by a later issue (issues 16 to 18)")
    module, path = split(qualified)
    obj = resolve(module, path)
    params = DOCUMENTED[qualified]
    if params is None:
        return
    actual = list(actual_signature(obj).parameters.values())
    expected = documented_parameters(params)
    assert len(actual) >= len(expected), f"{qualified}{actual_signature(obj)}: expected {params}"
    for (name, kind, default), parameter in zip(expected, actual, strict=False):
        assert parameter.name == name, f"{qualified}: parameter {parameter.name}, expected {name}"
        assert parameter.kind.name == kind, f"{qualified}.{name}: {parameter.kind.name} != {kind}"
        if default is inspect.Parameter.empty:
            assert parameter.default is inspect.Parameter.empty, f"{qualified}.{name} has a default"
        elif default is not Ellipsis:
            assert parameter.default == default, (
                f"{qualified}.{name} defaults to {parameter.default!r}, documented {default!r}")
        else:
            assert parameter.default is not inspect.Parameter.empty, f"{qualified}.{name}"
    for parameter in actual[len(expected):]:
        assert parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL) or \
            parameter.default is not parameter.empty, (
            f"{qualified}: undocumented parameter {parameter.name} must be optional")


def top_level_names() -> list[str]:
    """Documented objects that live directly in a module (not methods)."""
    names = []
    for qualified in CASES:
        if qualified in NOT_EXPORTED or not module_exists(qualified):
            continue
        module, path = split(qualified)
        if len(path) == 1:
            names.append(qualified)
    return names


@pytest.mark.parametrize("qualified", top_level_names())
def test_documented_name_is_exported_from_training(qualified: str) -> None:
    module, (name,) = split(qualified)
    assert name in training._EXPORTS, f"{name} (documented in {module}) is not in _EXPORTS"
    assert getattr(training, name) is resolve(module, [name])
    namespace: dict = {}
    exec(f"from training import {name}", namespace)  # noqa: S102
    assert namespace[name] is resolve(module, [name])


def test_every_export_resolves_to_its_module() -> None:
    for name, module in training._EXPORTS.items():
        assert getattr(importlib.import_module(module), name) is getattr(training, name)
    assert sorted(training.__all__) == sorted(training._EXPORTS)


IMPORT_ORDERS = [
    "from training.train import TrainingConfig\nfrom training import train",
    "import training.train\nfrom training import train",
    "from training import train\nimport training.train\nfrom training import train",
    "import training.evaluate\nfrom training import train, evaluate",
    "from training.evaluate import EvaluationResult\nfrom training import evaluate, train",
    "from training import *",
]


@pytest.mark.parametrize("preamble", IMPORT_ORDERS)
def test_functions_win_over_submodules_in_any_import_order(preamble: str) -> None:
    check = (
        "import importlib, inspect, training\n"
        f"{preamble}\n"
        "for name in ('train', 'evaluate'):\n"
        "    value = getattr(training, name)\n"
        "    assert inspect.isfunction(value), (name, value)\n"
        "    assert value is getattr(importlib.import_module('training.' + name), name)\n"
        "from training import train, evaluate\n"
        "assert inspect.signature(train).parameters['config'].default is None\n"
        "assert inspect.signature(evaluate).parameters['n_episodes'].default == 50\n")
    run_python(["-c", check], timeout=120)
