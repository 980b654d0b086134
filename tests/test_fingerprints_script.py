"""The fingerprint script: its hashing tells different bytes apart, its command line
selects sections, and a trace is the same run to run (the sections themselves take
minutes and run from the command line, ``python -m benchmarks.fingerprints``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from benchmarks import fingerprints as fp


def test_arrays_hash_their_dtype_shape_and_bytes():
    base = fp.Digest().array(np.array([1, 2], np.int32)).hexdigest()
    assert base == fp.Digest().array(np.array([1, 2], np.int32)).hexdigest()
    assert base != fp.Digest().array(np.array([1, 2], np.int64)).hexdigest()
    assert base != fp.Digest().array(np.array([[1, 2]], np.int32)).hexdigest()
    assert base != fp.Digest().array(np.array([1, 3], np.int32)).hexdigest()
    # Items are length-prefixed: splitting the same bytes differently hashes apart.
    split = fp.Digest().array(np.array([1], np.int32)).array(np.array([2], np.int32))
    assert base != split.hexdigest()


def test_values_hash_exact_float_bits_and_dicts_in_key_order():
    assert fp.value_digest(0.0) != fp.value_digest(-0.0)
    assert fp.value_digest(0.1) != fp.value_digest(float(np.nextafter(0.1, 1.0)))
    assert fp.value_digest(1) != fp.value_digest(1.0) != fp.value_digest(True)
    assert fp.value_digest({"a": 1, "b": 2}) == fp.value_digest({"b": 2, "a": 1})
    assert fp.value_digest([1, 2]) != fp.value_digest([[1, 2]])
    with pytest.raises(TypeError, match="object"):
        fp.Digest().array(np.array([None, 1], dtype=object))
    with pytest.raises(TypeError, match="set"):
        fp.value_digest({1, 2})


def test_state_dicts_hash_keys_and_every_tensor():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2)
    digest = fp.weights_digest(net.state_dict())
    assert digest == fp.weights_digest(net.state_dict())
    with torch.no_grad():
        net.bias[0] += 1e-7
    assert digest != fp.weights_digest(net.state_dict())
    renamed = {f"x.{k}": v for k, v in net.state_dict().items()}
    assert fp.weights_digest(renamed) != fp.weights_digest(net.state_dict())


def test_time_measuring_metrics_are_left_out():
    rows = fp.numeric_metrics([{"train/loss": 0.5, "time/fps": 1000.0, "name": "x"}],
                              fp.TIME_KEYS)
    assert rows == [{"train/loss": 0.5}]


def test_sections_are_chosen_by_name(capsys):
    assert fp.parse_sections(None) == list(fp.SECTIONS)
    assert fp.parse_sections("wfm1, echelon") == ["wfm1", "echelon"]
    with pytest.raises(ValueError, match="--only='wfm2'.*ppo_self_play"):
        fp.parse_sections("wfm2")
    with pytest.raises(SystemExit):
        fp.main(["--only", "wfm2"])
    assert fp.main(["--list"]) == 0
    listed = [line.split(":")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(fp.SECTIONS)


def test_a_trace_is_the_same_run_to_run_and_depends_on_its_seed():
    from envs import BattalionEnv

    first = fp._gym_trace(BattalionEnv(max_steps=50), seed=3)
    assert first == fp._gym_trace(BattalionEnv(max_steps=50), seed=3)
    assert first != fp._gym_trace(BattalionEnv(max_steps=50), seed=4)


def test_the_combined_digest_covers_every_part():
    parts = {"a": fp.value_digest(1), "b": fp.value_digest(2)}
    assert fp.combined(parts) != fp.combined({"a": parts["a"]})
    assert fp.combined(parts) == fp.combined(dict(reversed(list(parts.items()))))
    json.dumps({"x": fp.combined(parts)})  # a plain hex string
