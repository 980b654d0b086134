"""Atomic file writes."""

from __future__ import annotations

import os
import stat

import pytest

from storage.files import atomic_write_text, atomic_writer


def test_replaces_the_file_and_leaves_no_temporary_behind(tmp_path):
    path = tmp_path / "sub" / "data.json"
    atomic_write_text(path, "first")
    atomic_write_text(path, "second")
    assert path.read_text() == "second"
    assert [p.name for p in path.parent.iterdir()] == ["data.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "data.json"
    atomic_write_text(path, "good")
    with pytest.raises(RuntimeError), atomic_writer(path, "w") as handle:
        handle.write("half")
        raise RuntimeError("crash mid-write")
    assert path.read_text() == "good"
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]


def test_new_files_get_the_umask_permissions(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    path = tmp_path / "data.json"
    atomic_write_text(path, "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
