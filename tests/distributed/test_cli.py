"""``python -m training.league.distributed_runner`` and configs/distributed/ray_cluster.yaml
(the benchmark command itself runs in tests/distributed/test_loopback.py, under strace)."""

from __future__ import annotations

import pytest
import yaml

from training.league.distributed_runner import (
    CONFIG_FILE,
    RayClusterSettings,
    config_text,
    load_settings,
    main,
)


def test_the_config_file_is_what_the_declarations_give() -> None:
    assert CONFIG_FILE.read_text(encoding="utf-8") == config_text(), (
        "configs/distributed/ray_cluster.yaml is stale: run "
        "python -c 'import training.league.distributed_runner as d; d.write_config()'")
    nested = yaml.safe_load(CONFIG_FILE.read_text(encoding="utf-8"))
    # REFERENCE §I.7's keys and values.
    assert nested["ray"] == {"address": None, "num_cpus": None, "num_gpus": 0}
    assert nested["distributed"] | {"timeout_s": None} == {
        "num_workers": 4, "num_cpus_per_worker": 1.0, "num_gpus_per_worker": 0,
        "n_episodes_per_batch": 16, "base_seed": 42, "timeout_s": None}
    assert nested["env"] == {"n_blue": 2, "n_red": 2, "map_width": 1000.0,
                             "map_height": 1000.0, "max_steps": 500, "visibility_radius": 600.0}
    assert nested["benchmark"] == {"n_episodes": 32, "min_speedup_factor": 3.0}
    assert nested["ci"] == {"num_workers": 2, "n_episodes": 4, "timeout_s": 300.0}
    assert load_settings(CONFIG_FILE) == RayClusterSettings()


def test_a_bad_config_is_named(tmp_path, capsys) -> None:
    path = tmp_path / "cluster.yaml"
    for text, pattern in (("env: {n_blu: 2}\n", "env.n_blu"),
                          ("cluster: {}\n", "unknown section 'cluster'"),
                          ("distributed: {num_gpus_per_worker: 1}\n", "num_gpus_per_worker"),
                          ("env: {n_red: 9}\n", "n_red"),
                          ("- 1\n", "mapping")):
        path.write_text(text)
        with pytest.raises(ValueError, match=pattern):
            load_settings(path)
    with pytest.raises(FileNotFoundError, match="missing.yaml"):
        load_settings(tmp_path / "missing.yaml")
    for argv, pattern in ((["benchmark", "--config", str(tmp_path / "missing.yaml")],
                           "missing.yaml"),
                          (["benchmark", "--workers", "0"], "num_workers"),
                          (["collect", "--opponent", "7"], "--opponent")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        assert pattern in capsys.readouterr().err

