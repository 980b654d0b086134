"""One loading door: every read of a checkpoint, snapshot or SB3 archive goes through the
safe layer, and a pickle in a shared SB3 archive runs through none of the entry points.

The first test walks the project's source (AST) and fails on any direct SB3 ``load``,
``torch.load`` without ``weights_only=True``, ``pickle.load(s)``, ``np.load`` with
``allow_pickle=True`` or an unsafe YAML load outside the modules of the safe layer
(:data:`SAFE_LAYER`). The others put a pickle payload in the ``data`` entry of a real
SB3 archive (the way SB3 stores a pickled object, ``{":serialized:": base64(pickle)}``)
and call every SB3 entry point on it: each must refuse the file by name, with the
payload's marker file absent, in under 1 GiB of extra memory (the seconds are printed
for the reliability report, never asserted).
"""

from __future__ import annotations

import ast
import base64
import json
import pickle
import resource
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.reliability.hostile import Payload

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("envs", "models", "training", "benchmarks", "data", "storage")
"""The project's source folders the door covers (tests are not scanned)."""

SAFE_LAYER = {
    "models/weights.py": "torch.load(weights_only=True) of every torch file",
    "training/ppo/checkpoints.py": "the one SB3 loader (load_ppo) and the in-memory copy",
}
"""The modules allowed to call SB3's own ``load`` (everywhere else must use load_ppo)."""

SB3_ALGORITHMS = {"PPO", "A2C", "SAC", "TD3", "DQN", "DDPG", "BaseAlgorithm",
                  "OnPolicyAlgorithm", "OffPolicyAlgorithm", "RecurrentPPO", "MaskablePPO"}
MiB = 2**20
LIMIT_BYTES = 2**30


# --- the AST walk ---------------------------------------------------------------------------

def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain, else ''."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _unsafe_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every unsafe load in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        last = node.func.attr if isinstance(node.func, ast.Attribute) else name
        head = name.split(".", 1)[0]
        if name == "torch.load" and not _is_true(_keyword(node, "weights_only")):
            found.append((node.lineno, "torch.load without weights_only=True"))
        elif head in ("pickle", "cloudpickle", "dill", "joblib", "marshal", "shelve") and \
                last in ("load", "loads", "open", "Unpickler"):
            found.append((node.lineno, f"{name}"))
        elif name in ("np.load", "numpy.load") and \
                not _is_false_or_absent(_keyword(node, "allow_pickle")):
            found.append((node.lineno, f"{name} with allow_pickle"))
        elif head == "yaml" and last in ("unsafe_load", "unsafe_load_all", "full_load",
                                         "full_load_all"):
            found.append((node.lineno, f"{name}"))
        elif head == "yaml" and last in ("load", "load_all") and \
                "Safe" not in _dotted(_keyword(node, "Loader") or
                                      (node.args[1] if len(node.args) > 1 else ast.Pass())):
            found.append((node.lineno, f"{name} without a safe loader"))
        elif last == "load" and isinstance(node.func, ast.Attribute) and (
                head in SB3_ALGORITHMS or _is_type_of_call(node.func.value)):
            found.append((node.lineno, f"{ast.unparse(node.func)} (SB3's own load)"))
        elif last == "load_from_zip_file":
            found.append((node.lineno, "SB3's load_from_zip_file"))
    return found


def _is_false_or_absent(node: ast.AST | None) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is False)


def _is_type_of_call(node: ast.AST) -> bool:
    """``type(model)`` (``type(model).load(...)`` loads whatever class the model has)."""
    return isinstance(node, ast.Call) and _dotted(node.func) == "type"


def test_the_ast_walk_finds_each_kind_of_unsafe_load():
    # The walk itself must catch what it exists to catch, or the door test proves nothing.
    source = "\n".join([
        "PPO.load(p)", "type(m).load(p)", "torch.load(p)", "torch.load(p, weights_only=False)",
        "pickle.load(f)", "pickle.loads(b)", "np.load(p, allow_pickle=True)",
        "yaml.load(t)", "yaml.unsafe_load(t)", "yaml.load(t, Loader=yaml.FullLoader)",
        # and these are fine:
        "torch.load(p, weights_only=True)", "np.load(p)", "np.load(p, allow_pickle=False)",
        "yaml.safe_load(t)", "yaml.load(t, Loader=yaml.SafeLoader)", "pool.load(p)",
    ])
    lines = [line for line, _ in _unsafe_calls(ast.parse(source))]
    assert lines == list(range(1, 11))


def test_every_load_in_the_source_goes_through_the_safe_layer():
    offences = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in SAFE_LAYER:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), relative)
            offences += [f"{relative}:{line}: {what}" for line, what in _unsafe_calls(tree)]
    assert not offences, ("unsafe loads outside the safe layer (route them through "
                          "models.weights.load_weights or training.ppo.checkpoints.load_ppo):\n"
                          + "\n".join(offences))


def test_the_safe_layer_modules_exist():
    for relative in SAFE_LAYER:
        assert (ROOT / relative).is_file(), relative


# --- hostile SB3 archives through every entry point -----------------------------------------

def _status_bytes(key: str) -> int | None:
    """A ``/proc/self/status`` memory figure (``VmRSS``, ``VmHWM``) in bytes, or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def measured(call: Callable[[], object]) -> tuple[BaseException | None, float, float]:
    """Run ``call``: (what it raised, seconds, extra MiB: the growth of the process's
    peak resident memory, which counts torch's and NumPy's allocations too; the peak is
    reset first where Linux allows it, else the process's lifetime peak is compared).

    The seconds are for reports only: tests never assert wall-clock times."""
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        before = _status_bytes("VmRSS")
    except OSError:
        before = None
    if before is None:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    started = time.perf_counter()
    raised = None
    try:
        call()
    except Exception as error:  # noqa: BLE001 - returned to be checked by the caller
        raised = error
    seconds = time.perf_counter() - started
    peak = _status_bytes("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return raised, seconds, max(peak - before, 0) / MiB


@pytest.fixture(scope="module")
def valid_archive(tmp_path_factory) -> Path:
    from stable_baselines3 import PPO

    from envs.vec_env import BattalionVecEnv
    from training.ppo.checkpoints import save_ppo

    folder = tmp_path_factory.mktemp("valid")
    model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu",
                policy_kwargs={"net_arch": [16]})
    return save_ppo(model, folder / "valid.zip")


def _pickled(marker: Path) -> str:
    return base64.b64encode(pickle.dumps(Payload(str(marker)))).decode()


def _rewrite_data(valid: Path, target: Path, change: Callable[[dict], str]) -> Path:
    """A copy of ``valid`` whose ``data`` entry is ``change(data)`` (JSON text)."""
    with zipfile.ZipFile(valid) as source:
        data = json.loads(source.read("data"))
        with zipfile.ZipFile(target, "w") as out:
            for item in source.infolist():
                out.writestr(item, change(data).encode() if item.filename == "data"
                             else source.read(item))
    return target


def _variants(marker: Path) -> dict[str, Callable[[dict], str]]:
    """Ways to hide the payload in ``data``: each returns the JSON text."""
    evil = {":type:": "<class '__main__.P'>", ":serialized:": _pickled(marker)}

    def extra_key(data):
        return json.dumps({**data, "evil": evil})

    def in_policy_class(data):  # the readable fields still say BattalionMlpPolicy/SB3's
        return json.dumps({**data, "policy_class": {**data["policy_class"],
                                                    ":serialized:": _pickled(marker)}})

    def in_schedule(data):
        return json.dumps({**data, "lr_schedule": {**data["lr_schedule"],
                                                   ":serialized:": _pickled(marker)}})

    def in_transient_state(data):
        return json.dumps({**data, "_last_obs": evil})

    def duplicate_key(data):  # a benign first copy, the payload last (JSON keeps the last)
        text = json.dumps(data)
        return text[:-1] + ', "policy_class": ' + json.dumps(evil) + "}"

    def nested(data):
        return json.dumps({**data, "policy_kwargs": {"net_arch": [16], "deep": evil}})

    return {"extra key": extra_key, "policy_class": in_policy_class,
            "lr_schedule": in_schedule, "_last_obs": in_transient_state,
            "duplicate key": duplicate_key, "nested in policy_kwargs": nested}


def _entry_points(tmp: Path) -> dict[str, Callable[[Path], object]]:
    """Each SB3 entry point, called on the archive ``path`` (placed as it needs)."""
    import shutil

    def transfer_cli(path):
        from benchmarks.transfer import main

        main(["--policy", str(path), "--episodes", "1", "--finetune-steps", "0"])

    def evaluate_function(path):
        from training.evaluate import evaluate

        evaluate(str(path), n_episodes=1)

    def evaluate_cli(path):
        from training.evaluate import main

        main(["--checkpoint", str(path), "--n-episodes", "1"])

    def freeze(path):
        from training.utils.freeze_policy import load_and_freeze_sb3

        load_and_freeze_sb3(path)

    def registry(path):
        from training.policy_registry import PolicyRegistry

        reg = PolicyRegistry()
        reg.register("division", "v1", path)
        reg.load("division", "v1")

    def opponent_pool(path):
        from training.self_play import OpponentPool

        folder = tmp / f"pool_{path.stem}"
        folder.mkdir()
        shutil.copy(path, folder / OpponentPool.file_name(1))
        OpponentPool(folder).sample_latest()

    def self_play_pool(path):
        from training.ppo.pool import OpponentPool

        folder = tmp / f"self_play_{path.stem}"
        folder.mkdir()
        snapshot = Path(shutil.copy(path, folder / OpponentPool.file_name(1)))
        OpponentPool(folder).load(snapshot)

    def named_opponent(path):
        from training.ppo.opponents import resolve_opponent

        resolve_opponent(str(path))

    def league_member(path):
        from training.league.agent_pool import AgentPool

        folder = tmp / f"league_{path.stem}"
        folder.mkdir()
        shutil.copy(path, folder / "main_v000001.zip")
        pool = AgentPool(folder / "pool.json")
        record = pool.add("main_v000001.zip", agent_id="main_v1")
        pool.load_snapshot(record)

    return {"transfer benchmark CLI": transfer_cli, "evaluate()": evaluate_function,
            "evaluate CLI": evaluate_cli, "load_and_freeze_sb3": freeze,
            "PolicyRegistry.load": registry, "OpponentPool (training.self_play)": opponent_pool,
            "self-play pool load": self_play_pool, "named opponent": named_opponent,
            "league member (AgentPool.load_snapshot)": league_member}


REFUSED = ("extra key", "duplicate key", "nested in policy_kwargs")
"""Variants the loader refuses by name: a pickled entry it cannot identify, or a
``policy_kwargs`` key it does not know."""
REPLACED = ("policy_class", "lr_schedule", "_last_obs")
"""Variants whose pickle sits in an entry the loader replaces with its own trusted object
(identified from the readable fields beside it) or drops: the file loads, the pickle is
never read."""
PLAYING = ("transfer benchmark CLI", "evaluate()", "evaluate CLI")
"""Entry points that go on to play battles with a file that loads (left out for
:data:`REPLACED`, where loading is all there is to check)."""


def hostile_case(tmp_path: Path, valid: Path, variant: str) -> tuple[Path, Path]:
    """The archive hiding the payload as ``variant``, and the payload's marker file."""
    marker = tmp_path / "PWNED"
    path = _rewrite_data(valid, tmp_path / f"evil_{variant.replace(' ', '_')}.zip",
                         _variants(marker)[variant])
    return path, marker


@pytest.mark.parametrize("variant", REFUSED)
def test_a_pickle_in_the_data_entry_is_refused_by_every_entry_point(tmp_path, valid_archive,
                                                                    variant):
    path, marker = hostile_case(tmp_path, valid_archive, variant)
    for name, call in _entry_points(tmp_path).items():
        raised, seconds, extra_mib = measured(lambda call=call: call(path))
        print(f"{variant} | {name} | {type(raised).__name__} | {seconds:.2f} s | "
              f"{extra_mib:.0f} MiB")
        assert not marker.exists(), f"{name} ran the payload hidden as {variant}"
        assert isinstance(raised, ValueError), (name, raised)
        # It names the file read (the entry point's own copy, for the pools).
        assert ".zip" in str(raised) and "weights_only=False" not in str(raised)
        assert extra_mib * MiB < LIMIT_BYTES, (name, seconds, extra_mib)


@pytest.mark.parametrize("variant", REPLACED)
def test_a_pickle_in_an_entry_the_loader_replaces_is_never_read(tmp_path, valid_archive,
                                                               variant):
    path, marker = hostile_case(tmp_path, valid_archive, variant)
    for name, call in _entry_points(tmp_path).items():
        if name in PLAYING:
            continue
        raised, seconds, extra_mib = measured(lambda call=call: call(path))
        print(f"{variant} | {name} | {type(raised).__name__} | {seconds:.2f} s | "
              f"{extra_mib:.0f} MiB")
        assert not marker.exists(), f"{name} ran the payload hidden as {variant}"
        # Loading is all there is (the file is a duel policy); should an entry point
        # refuse it for another reason, that must be a named error.
        if raised is not None:
            assert isinstance(raised, ValueError) and ".zip" in str(raised), (name, raised)
        assert extra_mib * MiB < LIMIT_BYTES, (name, seconds, extra_mib)


def test_a_nested_serialized_value_is_never_unpickled_by_sb3(tmp_path, valid_archive):
    # SB3 unpickles top-level entries only; a :serialized: one level down stays text. The
    # loader still refuses it (an unknown policy_kwargs key), so nothing reaches SB3.
    marker = tmp_path / "PWNED"
    path = _rewrite_data(valid_archive, tmp_path / "nested.zip",
                         _variants(marker)["nested in policy_kwargs"])
    from training.ppo.checkpoints import load_ppo

    with pytest.raises(ValueError, match="policy_kwargs has keys"):
        load_ppo(path)
    assert not marker.exists()


def test_the_valid_archive_still_loads_through_every_entry_point_that_plays_duels(
        valid_archive):
    from training.evaluate import evaluate
    from training.ppo.checkpoints import load_ppo

    assert load_ppo(valid_archive).n_steps == 8
    assert 0.0 <= evaluate(str(valid_archive), n_episodes=1) <= 1.0


def test_an_archive_declaring_a_huge_rollout_buffer_is_refused_before_sb3_allocates_it(
        tmp_path, valid_archive):
    from training.ppo.checkpoints import MAX_ROLLOUT_BYTES, load_ppo

    path = _rewrite_data(valid_archive, tmp_path / "huge.zip",
                         lambda data: json.dumps({**data, "n_steps": 10**9}))
    raised, seconds, extra_mib = measured(lambda: load_ppo(path))
    assert isinstance(raised, ValueError)
    assert "n_steps=1,000,000,000" in str(raised) and f"{MAX_ROLLOUT_BYTES:,}" in str(raised)
    assert extra_mib * MiB < LIMIT_BYTES, (seconds, extra_mib)


def test_a_file_swapped_after_the_check_is_not_read(tmp_path, valid_archive, monkeypatch):
    # load_ppo hands SB3 the bytes it checked: replacing the file afterwards changes nothing.
    import training.ppo.checkpoints as checkpoints

    marker = tmp_path / "PWNED"
    path = tmp_path / "model.zip"
    path.write_bytes(valid_archive.read_bytes())
    evil = _rewrite_data(valid_archive, tmp_path / "evil.zip", _variants(marker)["extra key"])
    original = checkpoints._replacements

    def swap_after_checking(*args, **kwargs):
        result = original(*args, **kwargs)
        path.write_bytes(evil.read_bytes())
        return result

    monkeypatch.setattr(checkpoints, "_replacements", swap_after_checking)
    checkpoints.load_ppo(path)
    assert not marker.exists()
