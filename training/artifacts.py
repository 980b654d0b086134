"""Checkpoint names and the checkpoint manifest.

Names (:func:`checkpoint_name_prefix`, :func:`checkpoint_final_stem`,
:func:`checkpoint_best_filename`) carry the seed and the curriculum level with
``enable_v2`` on (``ppo_battalion_s{seed}_c{curriculum_level}_...``) and are the plain
``ppo_battalion_...`` names with it off. :class:`CheckpointManifest` is an append-only
JSON-lines file, one row per artifact event: ``{"config_hash", "curriculum_level",
"path", "run_id", "seed", "step", "timestamp", "type"}`` with sorted keys. Rows are
appended whole under a file lock, so several processes can share one manifest; a reader
skips (and logs) a torn last line. Rows are never removed, even when pruning deletes
files. ``docs/training.md`` ("What a run writes") lists every name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

from envs.sim.validation import check_int
from storage.files import append_json_line, hold_lock, read_json_lines

logger = logging.getLogger(__name__)

ARTIFACT_TYPES = ("periodic", "final", "final_alias", "best", "best_alias",
                  "self_play_snapshot")
LEGACY_PREFIX = "ppo_battalion"
_STEP_PATTERN = re.compile(r"_(\d+)_steps\.zip$")


def checkpoint_name_prefix(*, seed: int, curriculum_level: int, enable_v2: bool) -> str:
    """Prefix of periodic checkpoint names for the active naming mode."""
    if not enable_v2:
        return LEGACY_PREFIX
    return f"{LEGACY_PREFIX}_s{seed}_c{curriculum_level}"


def checkpoint_final_stem(*, seed: int, curriculum_level: int, enable_v2: bool) -> str:
    """Final checkpoint name without ``.zip``."""
    return checkpoint_name_prefix(seed=seed, curriculum_level=curriculum_level,
                                  enable_v2=enable_v2) + "_final"


def checkpoint_best_filename(*, seed: int, curriculum_level: int, enable_v2: bool) -> str:
    """Best-model file name, inside the ``best/`` folder."""
    if not enable_v2:
        return "best_model.zip"
    return checkpoint_name_prefix(seed=seed, curriculum_level=curriculum_level,
                                  enable_v2=True) + "_best.zip"


def parse_step_from_checkpoint_name(path: str | Path) -> int | None:
    """The step count in a periodic checkpoint name (``..._12000_steps.zip``), or None."""
    match = _STEP_PATTERN.search(Path(path).name)
    return int(match.group(1)) if match else None


def config_hash(config: Any) -> str:
    """SHA-256 of a config (a dataclass or a mapping) as compact JSON with sorted keys."""
    if dataclasses.is_dataclass(config):
        config = dataclasses.asdict(config)
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CheckpointManifest:
    """Append-only JSONL index of the checkpoints a run wrote.

    Args:
        path: the manifest file (created on first write).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def rows(self) -> list[dict[str, Any]]:
        """Every readable row, in file order (malformed lines are skipped and logged)."""
        return read_json_lines(self.path)[0]

    def append(self, row: dict[str, Any]) -> None:
        """Append a single row as one JSON line with sorted keys."""
        if not isinstance(row, dict):
            raise TypeError(f"row={row!r} is invalid: expected a dict")
        append_json_line(self.path, row)

    def has_entry(self, artifact_path: str | Path, *, artifact_type: str,
                  step: int | None) -> bool:
        """Whether the same (path, type, step) event is already indexed."""
        target = str(artifact_path)
        return any(r.get("path") == target and r.get("type") == artifact_type
                   and r.get("step") == step for r in self.rows())

    def known_paths(self) -> set[str]:
        """Every path the manifest mentions."""
        return {r["path"] for r in self.rows() if "path" in r}

    def latest_entry_for_path(self, artifact_path: str | Path) -> dict[str, Any] | None:
        """The newest row (by step, then timestamp) for ``artifact_path``."""
        target = str(artifact_path)
        rows = [r for r in self.rows() if r.get("path") == target]
        return max(rows, key=_recency, default=None)

    def register(self, artifact_path: str | Path, *, artifact_type: str, seed: int,
                 curriculum_level: int, run_id: str | None, config_hash: str,
                 step: int | None) -> bool:
        """Index an artifact unless the same (path, type, step) is already there.

        Several processes may register the same artifact: the check and the
        append hold the manifest's lock together, so one row is written.

        Returns:
            True if a row was written.

        Raises:
            ValueError: for an unknown ``artifact_type``.
        """
        if artifact_type not in ARTIFACT_TYPES:
            raise ValueError(f"artifact_type={artifact_type!r} is invalid: expected one of "
                             f"{', '.join(ARTIFACT_TYPES)}")
        if step is not None:
            check_int("step", step, minimum=0)
        row = {"config_hash": config_hash, "curriculum_level": int(curriculum_level),
               "path": str(artifact_path), "run_id": run_id, "seed": int(seed),
               "step": step, "timestamp": int(time.time()), "type": artifact_type}
        # Check and append in one critical section: concurrent writers of the same
        # event leave one row.
        with hold_lock(self.path):
            if self.has_entry(artifact_path, artifact_type=artifact_type, step=step):
                return False
            append_json_line(self.path, row, locked=True)
        return True

    def _existing(self, artifact_type: str, prefix: str | None = None,
                  directory: Path | None = None) -> list[dict[str, Any]]:
        """Rows of a type whose file still exists, newest per path."""
        latest: dict[str, dict[str, Any]] = {}
        for row in self.rows():
            if row.get("type") != artifact_type or "path" not in row:
                continue
            path = Path(row["path"])
            if prefix is not None and not path.name.startswith(prefix + "_"):
                continue
            if directory is not None and path.parent.resolve() != directory.resolve():
                continue
            if not path.is_file():
                continue
            if row["path"] not in latest or _recency(row) >= _recency(latest[row["path"]]):
                latest[row["path"]] = row
        return sorted(latest.values(), key=_recency)

    def latest_periodic(self, checkpoint_dir: str | Path, prefix: str) -> Path | None:
        """The highest-step periodic checkpoint in ``checkpoint_dir`` named ``prefix_*``
        whose file still exists, or None."""
        rows = self._existing("periodic", prefix, Path(checkpoint_dir))
        return Path(rows[-1]["path"]) if rows else None

    def prune_periodic(self, checkpoint_dir: str | Path, prefix: str,
                       keep_last: int) -> list[Path]:
        """Delete all but the ``keep_last`` newest periodic checkpoints; return the deleted.

        Only files the manifest knows and that still exist are considered;
        manifest rows are kept. ``keep_last=0`` keeps everything.
        """
        keep_last = check_int("keep_last", keep_last, minimum=0)
        rows = self._existing("periodic", prefix, Path(checkpoint_dir))
        return self._delete_older(rows, keep_last)

    def prune_self_play_snapshots(self, pool_dir: str | Path, keep_last: int) -> list[Path]:
        """Like :meth:`prune_periodic` for self-play snapshots in ``pool_dir``."""
        keep_last = check_int("keep_last", keep_last, minimum=0)
        rows = self._existing("self_play_snapshot", None, Path(pool_dir))
        return self._delete_older(rows, keep_last)

    @staticmethod
    def _delete_older(rows: list[dict[str, Any]], keep_last: int) -> list[Path]:
        if keep_last == 0 or len(rows) <= keep_last:
            return []
        deleted = []
        for row in rows[:-keep_last]:
            path = Path(row["path"])
            path.unlink(missing_ok=True)
            deleted.append(path)
            logger.info("pruned %s", path)
        return deleted


def _recency(row: dict[str, Any]) -> tuple[int, int]:
    return (row.get("step") if isinstance(row.get("step"), int) else -1,
            int(row.get("timestamp", 0)))
