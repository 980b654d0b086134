"""The policy registry: entries by echelon and version, its JSON file, loading and the CLI."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from stable_baselines3 import PPO

from envs.vec_env import BattalionVecEnv
from models.mappo_policy import MAPPOPolicy
from tests.training.test_freeze_policy import (
    DIMS,
    fully_frozen,
    same_weights,
    small_policy,
    write_trainer_checkpoint,
)
from training.policy_registry import Echelon, PolicyEntry, PolicyRegistry
from training.ppo.checkpoints import save_ppo

ROOT = Path(__file__).resolve().parents[2]


def test_echelon_from_str_ignores_case_and_lists_the_allowed_values():
    assert Echelon.from_str("Brigade") is Echelon.BRIGADE
    assert Echelon.from_str("DIVISION") is Echelon.DIVISION
    assert Echelon.from_str(Echelon.BATTALION) is Echelon.BATTALION
    assert Echelon.BATTALION == "battalion" and isinstance(Echelon.BATTALION, str)
    for bad in ("corps", "", 3, None):
        with pytest.raises(ValueError, match="expected one of 'battalion', 'brigade', 'division'"):
            Echelon.from_str(bad)


def test_register_get_list_remove_save_and_reload(tmp_path):
    path = tmp_path / "sub" / "registry.json"
    registry = PolicyRegistry(path)
    assert registry.list() == [] and not path.exists()
    entry = registry.register("Brigade", "v2", tmp_path / "b2.zip", run_id="run-7")
    assert entry == PolicyEntry(Echelon.BRIGADE, "v2", str(tmp_path / "b2.zip"), "run-7")
    registry.register(Echelon.BATTALION, "v1", "ck/a.pt")
    registry.register("brigade", "v10", "ck/b10.zip")
    registry.register("division", "v1", "ck/d.zip")
    assert registry.get("brigade", "v2") == entry
    assert [(e.echelon.value, e.version) for e in registry.list()] == [
        ("battalion", "v1"), ("brigade", "v10"), ("brigade", "v2"), ("division", "v1")]
    assert [e.version for e in registry.list("BRIGADE")] == ["v10", "v2"]
    assert registry.remove("division", "v1").path == "ck/d.zip"
    with pytest.raises(KeyError, match="division policy 'v1' is not registered"):
        registry.get("division", "v1")
    assert registry.save() == path

    assert json.loads(path.read_text()) == {"entries": [
        {"echelon": "battalion", "path": "ck/a.pt", "run_id": None, "version": "v1"},
        {"echelon": "brigade", "path": "ck/b10.zip", "run_id": None, "version": "v10"},
        {"echelon": "brigade", "path": str(tmp_path / "b2.zip"), "run_id": "run-7",
         "version": "v2"}]}
    assert path.read_text().startswith('{\n  "entries": [\n    {\n      "echelon"')
    reloaded = PolicyRegistry(path)
    assert reloaded.list() == registry.list()
    assert isinstance(reloaded.get("battalion", "v1").echelon, Echelon)


def test_duplicates_need_overwrite(tmp_path):
    registry = PolicyRegistry(tmp_path / "registry.json")
    registry.register("battalion", "v1", "a.pt")
    with pytest.raises(ValueError, match="battalion policy 'v1' is already registered"):
        registry.register("Battalion", "v1", "b.pt")
    registry.register("battalion", "v1", "b.pt", run_id="r2", overwrite=True)
    registry.save()
    assert PolicyRegistry(tmp_path / "registry.json").get("battalion", "v1") == \
        PolicyEntry(Echelon.BATTALION, "v1", "b.pt", "r2")


def test_missing_entries_bad_arguments_and_in_memory_registries(tmp_path):
    registry = PolicyRegistry(None)
    registry.register("division", "v1", "d.zip")
    assert registry.get("division", "v1").path == "d.zip"
    assert not registry.can_save  # the seed's can_save: False without a backing file
    assert PolicyRegistry(tmp_path / "registry.json").can_save  # not yet written: still True
    with pytest.raises(ValueError, match="no file"):
        registry.save()
    with pytest.raises(KeyError, match="in-memory"):
        registry.remove("division", "v2")
    with pytest.raises(ValueError, match="echelon='corps'"):
        registry.register("corps", "v1", "x.zip")
    with pytest.raises(ValueError, match="version="):
        registry.register("brigade", "", "x.zip")
    with pytest.raises(ValueError, match="path="):
        registry.register("brigade", "v1", "")
    with pytest.raises(ValueError, match="run_id="):
        registry.register("brigade", "v1", "x.zip", run_id="a\nb")
    with pytest.raises(ValueError, match="overwrite="):
        registry.register("brigade", "v1", "x.zip", overwrite="yes")


GOOD = {"echelon": "battalion", "path": "a.pt", "run_id": None, "version": "v1"}


@pytest.mark.parametrize(("text", "message"), [
    ('{"entries": [', "not valid JSON"),
    ("[]", "not an object with a list of entries"),
    ('{"entries": {}}', "not an object with a list of entries"),
    ('{"entries": [], "extra": 1}', "not an object with a list of entries"),
    (json.dumps({"entries": [GOOD, {**GOOD, "echelon": "corps"}]}), r"entry 1 .*echelon='corps'"),
    (json.dumps({"entries": [{k: v for k, v in GOOD.items() if k != "path"}]}), "entry 0"),
    (json.dumps({"entries": [{**GOOD, "run_id": 5}]}), "entry 0 .*run_id=5"),
    (json.dumps({"entries": [{**GOOD, "version": 1}]}), "entry 0 .*version=1"),
    (json.dumps({"entries": [GOOD, GOOD]}), "entry 1 .*a second time"),
])
def test_malformed_files_are_named_in_the_error(tmp_path, text, message):
    path = tmp_path / "registry.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        PolicyRegistry(path)
    assert "registry.json" in str(error.value)


@pytest.fixture
def two_registries(tmp_path):
    """The file ``registry.json`` and two registries of it, as two processes hold them."""
    path = tmp_path / "registry.json"
    return path, PolicyRegistry(path), PolicyRegistry(path)


def test_two_registries_saving_one_file_keep_both_entries(two_registries):
    path, first, second = two_registries
    first.register("battalion", "v1", "a.pt")
    second.register("brigade", "v1", "b.zip")
    first.save()
    second.save()
    assert [e.version for e in PolicyRegistry(path).list()] == ["v1", "v1"]
    assert len(second.list()) == 2  # save() also brought in what the other one saved
    # A removal by one is kept when the other saves something else.
    first.remove("battalion", "v1")
    first.save()
    second.register("division", "v1", "d.zip")
    second.save()
    assert [e.echelon for e in PolicyRegistry(path).list()] == [Echelon.BRIGADE,
                                                                 Echelon.DIVISION]


def test_a_conflicting_registration_is_an_error_not_a_silent_loss(two_registries):
    path, first, second = two_registries
    first.register("brigade", "v3", "mine.zip")
    second.register("brigade", "v3", "theirs.zip")
    first.save()
    before = path.read_text()
    with pytest.raises(ValueError, match="another process registered brigade policy 'v3'"):
        second.save()
    assert path.read_text() == before
    second.register("brigade", "v3", "theirs.zip", overwrite=True)
    second.save()
    assert PolicyRegistry(path).get("brigade", "v3").path == "theirs.zip"


def _register_many(path: str, echelon: str) -> None:
    registry = PolicyRegistry(path)
    for i in range(15):
        registry.register(echelon, f"v{i}", f"{echelon}_{i}.pt")
        registry.save()


def test_two_processes_sharing_a_file_lose_nothing(tmp_path):
    path = str(tmp_path / "registry.json")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_register_many, args=(path, echelon))
               for echelon in ("battalion", "division")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    registry = PolicyRegistry(path)
    assert len(registry.list("battalion")) == 15 and len(registry.list("division")) == 15


# --- loading ----------------------------------------------------------------------


def test_load_gives_frozen_policies_of_each_kind(tmp_path):
    policy = small_policy()
    checkpoint = write_trainer_checkpoint(tmp_path / "mappo_policy_final.pt", policy)
    model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=32, batch_size=32, device="cpu")
    archive = save_ppo(model, tmp_path / "brigade_v1")
    registry = PolicyRegistry(tmp_path / "registry.json")
    registry.register("battalion", "v1", checkpoint, run_id="mappo-1")
    registry.register("brigade", "v1", archive)
    registry.register("division", "v1", tmp_path / "missing.zip")
    registry.save()
    registry = PolicyRegistry(tmp_path / "registry.json")

    battalion = registry.load("battalion", "v1", **DIMS)
    assert isinstance(battalion, MAPPOPolicy) and fully_frozen(battalion)
    assert same_weights(battalion, policy)
    brigade = registry.load("brigade", "v1", device="cpu")
    assert isinstance(brigade, PPO) and fully_frozen(brigade.policy)
    assert same_weights(brigade.policy, model.policy)

    with pytest.raises(TypeError, match="missing action_dim, state_dim"):
        registry.load("battalion", "v1", obs_dim=DIMS["obs_dim"])
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['hidden'\\]"):
        registry.load("battalion", "v1", **DIMS, hidden=3)
    with pytest.raises(ValueError, match="obs_dim"):
        registry.load("battalion", "v1", **{**DIMS, "obs_dim": 7})
    with pytest.raises(TypeError, match="battalion \\(MAPPO\\) policies only"):
        registry.load("brigade", "v1", obs_dim=3)
    with pytest.raises(FileNotFoundError, match="missing.zip"):
        registry.load("division", "v1")
    with pytest.raises(KeyError):
        registry.load("division", "v2")
    assert torch.is_grad_enabled()  # loading changes no global autograd state


# --- command line -------------------------------------------------------------------


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "training.policy_registry", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_cli_registers_and_lists(tmp_path):
    empty = cli(tmp_path, "list")
    assert empty.returncode == 0 and "no policies registered" in empty.stdout
    done = cli(tmp_path, "register", "--echelon", "Battalion", "--version", "v1", "--path",
               "ck/a.pt", "--run-id", "run-1")
    assert done.returncode == 0, done.stderr
    # The default registry file, relative to the working directory.
    default = tmp_path / "checkpoints" / "policy_registry.json"
    assert PolicyRegistry(default).get("battalion", "v1").run_id == "run-1"
    assert cli(tmp_path, "register", "--echelon", "brigade", "--version", "v2", "--path",
               "ck/b.zip").returncode == 0

    table = cli(tmp_path, "list")
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["ECHELON", "VERSION", "RUN", "ID", "PATH"]
    assert [line.split() for line in lines[1:]] == [["battalion", "v1", "run-1", "ck/a.pt"],
                                                     ["brigade", "v2", "-", "ck/b.zip"]]
    only = cli(tmp_path, "list", "--echelon", "BRIGADE")
    assert [line.split()[0] for line in only.stdout.splitlines()[1:]] == ["brigade"]

    custom = cli(tmp_path, "--registry", "other.json", "register", "--echelon", "division",
                 "--version", "v1", "--path", "d.zip")
    assert custom.returncode == 0 and (tmp_path / "other.json").is_file()


def test_cli_errors_are_one_line_and_exit_2(tmp_path):
    assert cli(tmp_path, "register", "--echelon", "brigade", "--version", "v1", "--path",
               "a.zip").returncode == 0
    duplicate = cli(tmp_path, "register", "--echelon", "brigade", "--version", "v1", "--path",
                    "b.zip")
    assert duplicate.returncode == 2 and duplicate.stdout == ""
    assert duplicate.stderr.count("\n") == 1
    assert duplicate.stderr.startswith("python -m training.policy_registry: error: brigade "
                                       "policy 'v1' is already registered")
    overwritten = cli(tmp_path, "register", "--echelon", "brigade", "--version", "v1",
                      "--path", "b.zip", "--overwrite")
    assert overwritten.returncode == 0

    (tmp_path / "bad.json").write_text('{"entries": [{"echelon": "corps"}]}')
    bad = cli(tmp_path, "--registry", "bad.json", "list")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "bad.json" in bad.stderr
    unknown = cli(tmp_path, "list", "--echelon", "corps")
    assert unknown.returncode == 2
    assert "expected one of 'battalion', 'brigade', 'division'" in unknown.stderr
