"""The league's match log: one JSON object per line, append-only.

:class:`MatchDatabase` keeps ``matches.jsonl`` (UTF-8), one
:class:`~training.league.records.MatchResult` a line: ``match_id``, ``agent_id``,
``opponent_id``, ``outcome`` (from ``agent_id``'s side: 1 win, 0.5 draw, 0 loss, or a
fraction for a batch), ``timestamp``, ``metadata``, and four optional keys only when they
are set. Win rates use the focal agent's own records only. Several processes may record
into one file: each ``record`` appends one complete line with a single ``os.write`` under
an inter-process lock, a torn last line is ended by the next writer and skipped (and
counted, :attr:`MatchDatabase.skipped_lines`) by readers, queries pick up other
processes' lines, and :meth:`MatchDatabase.rewrite` replaces the file atomically;
``fsync=True`` survives power loss too. ``docs/league.md`` ("File formats", "Several
processes, one league") gives the format and the guarantees.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Mapping
from typing import Any

from envs.sim.validation import check_bool, check_identifier
from storage.files import UnreadableFileError, append_line, atomic_writer, hold_lock, loads_json
from training.league.records import MatchResult
from training.league.shared_file import SharedFile

logger = logging.getLogger(__name__)

# MatchResult is re-exported: it was born here, and the match log is its home in the docs.
__all__ = ["MatchResult", "MatchDatabase"]


def _jsonl_line(result: MatchResult) -> bytes:
    """One complete line of the log: the row's JSON and its newline, UTF-8."""
    return (json.dumps(result.to_dict(), allow_nan=False) + "\n").encode("utf-8")


class MatchDatabase(SharedFile):
    """A multi-process safe, append-only log of match results with win-rate queries.

    Args:
        db_path: Path of the JSONL file (created with its folder on the first
            ``record``). Existing lines are loaded; malformed ones are skipped,
            counted and logged.
        fsync: Also fsync after every ``record`` (survives power loss; slower).

    Raises:
        ValueError: If ``db_path`` is a directory.
    """

    def __init__(self, db_path: str | os.PathLike, *, fsync: bool = False) -> None:
        super().__init__("db_path", db_path)
        self._fsync = check_bool("fsync", fsync)
        self._skipped = 0
        self._reset_memory()
        self._sync()

    # ------------------------------------------------------------ properties

    # The constructor's argument name for :attr:`path`, the JSONL file.
    db_path = SharedFile.path

    @property
    def skipped_lines(self) -> int:
        """Number of malformed or torn lines skipped while reading the file."""
        return self._skipped

    @property
    def results(self) -> list[MatchResult]:
        """All results in memory, oldest first (a copy)."""
        self._sync()
        return list(self._results)

    def __len__(self) -> int:
        self._sync()
        return len(self._results)

    def __repr__(self) -> str:
        return f"MatchDatabase({str(self._path)!r}, matches={len(self._results)})"

    # --------------------------------------------------------------- reading

    def _reset_memory(self) -> None:
        self._results: list[MatchResult] = []
        self._by_id: dict[str, MatchResult] = {}
        self._duplicates = 0
        # focal agent -> opponent -> results; keeps queries O(matches of that pair).
        self._by_agent: dict[str, dict[str, list[MatchResult]]] = {}
        self._pair_totals: dict[tuple[str, str], list[float]] = {}
        self._offset = 0
        self._line_no = 0
        self._identity: tuple[int, int] | None = None
        self._torn_at: int | None = None

    def _index(self, result: MatchResult) -> bool:
        """Add a result to memory; False (and nothing added) for a match id already there."""
        if result.match_id in self._by_id:
            self._duplicates += 1
            return False
        self._by_id[result.match_id] = result
        self._results.append(result)
        self._by_agent.setdefault(result.agent_id, {}).setdefault(result.opponent_id, []).append(
            result
        )
        totals = self._pair_totals.setdefault((result.agent_id, result.opponent_id), [0.0, 0])
        totals[0] += result.outcome
        totals[1] += 1
        return True

    def _rebuild_index(self, results: list[MatchResult]) -> None:
        self._results, self._by_agent, self._pair_totals, self._by_id = [], {}, {}, {}
        for result in results:
            self._index(result)

    def refresh(self) -> None:
        """Load lines that other processes appended since the last read.

        Queries call this themselves; a rewritten or truncated file is
        reloaded from the start.
        """
        self._sync()

    def _sync(self) -> None:
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):  # a FIFO would hang the read, a device never end
            raise UnreadableFileError(f"match database {self._path} is not a regular file: "
                                      "refusing to read it")
        identity = (st.st_dev, st.st_ino)
        if self._identity is not None and (
            identity != self._identity or st.st_size < self._offset
        ):
            logger.info("match database %s was rewritten by another process; reloading",
                        self._path)
            self._reset_memory()
        self._identity = identity
        if st.st_size == self._offset:
            return
        with open(self._path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        end = data.rfind(b"\n") + 1
        bad: list[str] = []
        position = self._offset
        for raw in data[:end].split(b"\n")[:-1]:
            self._line_no += 1
            start, position = position, position + len(raw) + 1
            if not raw.strip():
                continue
            try:
                result = MatchResult.from_dict(loads_json(raw, f"line {self._line_no}"))
            except (ValueError, KeyError, TypeError) as exc:
                if start != self._torn_at:  # a torn tail was counted when first seen
                    self._skipped += 1
                    bad.append(f"line {self._line_no}: {exc}")
                continue
            if start == self._torn_at:
                # It was a line being written while we read, not a torn one.
                self._skipped -= 1
            if not self._index(result):
                bad.append(f"line {self._line_no}: match_id {result.match_id!r} repeats an "
                           "earlier line (counted once)")
        self._offset += end
        tail = data[end:]
        if tail and self._torn_at != self._offset:
            self._torn_at = self._offset
            self._skipped += 1
            bad.append(
                f"torn last line {self._line_no + 1} ({len(tail)} bytes without a newline)"
            )
        if bad:
            shown = "; ".join(bad[:5]) + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
            logger.warning(
                "match database %s: skipped %d malformed line(s): %s", self._path, len(bad), shown
            )

    # --------------------------------------------------------------- writing

    def record(
        self,
        agent_id: str,
        opponent_id: str,
        outcome: float,
        *,
        match_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        territory_control: float | None = None,
        blue_casualties: float | None = None,
        red_casualties: float | None = None,
        supply_consumed: float | None = None,
    ) -> MatchResult:
        """Append a match result to the file and to memory.

        Idempotent by ``match_id``: recording an id that the file already holds
        (from this process or another) writes nothing and returns the stored
        result; the same id with a different result (other than its timestamp)
        raises ``ValueError``.

        Args:
            agent_id: The focal agent.
            opponent_id: Its opponent.
            outcome: Focal score in [0, 1] (1 win, 0.5 draw, 0 loss).
            match_id: Unique id; a random UUID4 string when None.
            metadata: JSON-compatible extra information.
            territory_control: Optional, in [0, 1].
            blue_casualties: Optional, >= 0.
            red_casualties: Optional, >= 0.
            supply_consumed: Optional, >= 0.

        Returns:
            The recorded (or already stored) result.

        Raises:
            ValueError, TypeError: If a value is invalid; nothing is written then.
        """
        kwargs: dict[str, Any] = {"metadata": {} if metadata is None else metadata}
        if match_id is not None:
            kwargs["match_id"] = match_id
        result = MatchResult(
            agent_id=agent_id,
            opponent_id=opponent_id,
            outcome=outcome,
            territory_control=territory_control,
            blue_casualties=blue_casualties,
            red_casualties=red_casualties,
            supply_consumed=supply_consumed,
            **kwargs,
        )
        line = _jsonl_line(result)
        with hold_lock(self._path):
            self._sync()
            existing = self._by_id.get(result.match_id)
            if existing is not None:  # recorded already, by this or another process
                if {**existing.to_dict(), "timestamp": 0} != {**result.to_dict(), "timestamp": 0}:
                    raise ValueError(f"match_id={result.match_id!r} is already recorded with a "
                                     "different result: expected a new id")
                return existing
            append_line(self._path, line, fsync=self._fsync, locked=True)
            # Read our own line back together with any others' lines before
            # it, so memory keeps the file's order.
            self._sync()
        return result

    def prune(self, keep_last: int) -> int:
        """Keep only the newest ``keep_last`` results in memory (the file is untouched).

        Call :meth:`rewrite` afterwards to shrink the file too.

        Args:
            keep_last: Number of newest results to keep, an int >= 0.

        Returns:
            The number of results dropped.

        Raises:
            ValueError: If ``keep_last`` is negative or not an int.
        """
        if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
            raise ValueError(f"keep_last={keep_last!r} is invalid: expected an int >= 0")
        self._sync()
        dropped = max(len(self._results) - keep_last, 0)
        if dropped:
            self._rebuild_index(self._results[dropped:])
        return dropped

    def rewrite(self) -> None:
        """Replace the file atomically with the results in memory.

        Lines other processes appended since the last read are loaded first
        and kept. Other readers notice the new file and reload it.
        """
        with hold_lock(self._path):
            self._sync()
            with atomic_writer(self._path, "wb") as handle:
                for result in self._results:
                    handle.write(_jsonl_line(result))
            st = os.stat(self._path)
            self._identity = (st.st_dev, st.st_ino)
            self._offset = st.st_size
            self._line_no = len(self._results)
            self._torn_at = None

    # --------------------------------------------------------------- queries

    def results_for(self, agent_id: str, opponent_id: str | None = None) -> list[MatchResult]:
        """Return the results recorded from ``agent_id``'s side, oldest first.

        Args:
            agent_id: The focal agent.
            opponent_id: Only matches against this opponent, if given.
        """
        check_identifier("agent_id", agent_id)
        self._sync()
        by_opponent = self._by_agent.get(agent_id, {})
        if opponent_id is not None:
            check_identifier("opponent_id", opponent_id)
            return list(by_opponent.get(opponent_id, []))
        return [r for r in self._results if r.agent_id == agent_id]

    def win_rate(self, agent_id: str, opponent_id: str) -> float | None:
        """Return the mean outcome of ``agent_id`` against ``opponent_id``, or None without data."""
        check_identifier("agent_id", agent_id)
        check_identifier("opponent_id", opponent_id)
        self._sync()
        totals = self._pair_totals.get((agent_id, opponent_id))
        if not totals:
            return None
        return totals[0] / totals[1]

    def win_rates_for(self, agent_id: str) -> dict[str, float]:
        """Return ``{opponent_id: mean outcome}`` over the opponents ``agent_id`` has played."""
        check_identifier("agent_id", agent_id)
        self._sync()
        return {
            opponent: self._pair_totals[(agent_id, opponent)][0]
            / self._pair_totals[(agent_id, opponent)][1]
            for opponent in self._by_agent.get(agent_id, {})
        }

    def _mean_of(self, name: str, agent_id: str, opponent_id: str | None) -> float | None:
        values = [
            getattr(r, name)
            for r in self.results_for(agent_id, opponent_id)
            if getattr(r, name) is not None
        ]
        return sum(values) / len(values) if values else None

    def mean_territory_control(
        self, agent_id: str, opponent_id: str | None = None
    ) -> float | None:
        """Return the mean ``territory_control`` of ``agent_id``'s matches, or None."""
        return self._mean_of("territory_control", agent_id, opponent_id)

    def mean_casualties(
        self, agent_id: str, opponent_id: str | None = None
    ) -> dict[str, float | None] | None:
        """Return ``{"blue": mean, "red": mean}`` casualties, or None without any data.

        A side without data has ``None``.
        """
        blue = self._mean_of("blue_casualties", agent_id, opponent_id)
        red = self._mean_of("red_casualties", agent_id, opponent_id)
        if blue is None and red is None:
            return None
        return {"blue": blue, "red": red}

    def mean_supply_consumed(self, agent_id: str, opponent_id: str | None = None) -> float | None:
        """Return the mean ``supply_consumed`` of ``agent_id``'s matches, or None."""
        return self._mean_of("supply_consumed", agent_id, opponent_id)
