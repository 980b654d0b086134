"""The league's two records and their JSON forms: one agent (:class:`AgentRecord`) and one
match (:class:`MatchResult`).

Both check every field on construction, so a record read from a file is as
valid as one built in code, and both keep their ``metadata`` as a detached,
JSON-compatible copy. The files that hold them are described in
:mod:`training.league.pool_manifest` and :mod:`training.league.match_database`.
"""

from __future__ import annotations

import copy
import enum
import json
import math
import numbers
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envs.sim.validation import check_identifier, check_path, short_repr

__all__ = ["AgentType", "AgentRecord", "MatchResult", "MATCH_OPTIONAL_FIELDS"]

MATCH_OPTIONAL_FIELDS = ("territory_control", "blue_casualties", "red_casualties",
                         "supply_consumed")
"""Keys of a match row that appear only when they are set."""


def check_json_metadata(metadata: Any, owner: str = "") -> dict[str, Any]:
    """Return a detached copy of ``metadata`` after checking it is a JSON object.

    Args:
        metadata: The mapping to check.
        owner: Prefix of the error messages naming the record (e.g. ``"agent 'a'"``).

    Raises:
        TypeError: If ``metadata`` is not a mapping or a key is not a string.
        ValueError: If a value is not JSON-serialisable (NaN, objects, ...).
    """
    prefix = f"{owner} " if owner else ""
    if not isinstance(metadata, Mapping):
        raise TypeError(
            f"{prefix}metadata={short_repr(metadata)} has type {type(metadata).__name__}: "
            "expected a dict with string keys"
        )
    for key in metadata:
        if not isinstance(key, str):  # json.dumps would turn 1 into "1" silently
            raise TypeError(f"{prefix}metadata key {short_repr(key)} is not a string: JSON "
                            "needs string keys")
    try:
        # A round trip both checks JSON-compatibility (no NaN, no objects) and
        # detaches the copy from the caller's mutable values.
        return json.loads(json.dumps(dict(metadata), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{prefix}metadata is not JSON-serialisable ({exc}): use str, int, finite float, "
            "bool, None, lists and dicts with string keys"
        ) from None


def _check_real(name: str, value: Any, *, low: float | None = None,
                high: float | None = None) -> float:
    """Return ``value`` as a float after checking it is a finite number in [low, high]."""
    # numbers.Real only: a one-element array or a string would otherwise convert.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={short_repr(value)} has type {type(value).__name__}: "
                        "expected a number")
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range
        number = math.inf
    if low is not None and high is not None:
        allowed = f"a finite number in [{low:g}, {high:g}]"
    elif low is not None:
        allowed = f"a finite number >= {low:g}"
    else:
        allowed = "a finite number"
    too_low = low is not None and number < low
    too_high = high is not None and number > high
    if not math.isfinite(number) or too_low or too_high:
        raise ValueError(f"{name}={value!r} is out of range: expected {allowed}")
    return number


def _require_keys(data: Any, keys: tuple[str, ...], what: str) -> None:
    """Raise unless ``data`` is a mapping holding every key in ``keys``."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{what} {short_repr(data)} is not a JSON object")
    for key in keys:
        if key not in data:
            raise KeyError(f"{what} is missing field {key!r} (record: {short_repr(dict(data))})")


# ---------------------------------------------------------------------- agents


class AgentType(enum.StrEnum):
    """Role of a league agent; the value is the string stored in manifests."""

    MAIN_AGENT = "main_agent"
    MAIN_EXPLOITER = "main_exploiter"
    LEAGUE_EXPLOITER = "league_exploiter"

    @classmethod
    def from_str(cls, value: str | AgentType) -> AgentType:
        """Parse an agent type from its value or name, ignoring case.

        Args:
            value: ``"main_agent"``, ``"MAIN_AGENT"``, ... or an ``AgentType``.

        Returns:
            The matching ``AgentType``.

        Raises:
            ValueError: If ``value`` names no agent type.
            TypeError: If ``value`` is not a string.
        """
        if isinstance(value, AgentType):
            return value
        if not isinstance(value, str):
            raise TypeError(
                f"agent_type={value!r} has type {type(value).__name__}: expected an AgentType "
                f"or one of {[t.value for t in cls]}"
            )
        key = value.strip().lower()
        for member in cls:
            if key == member.value:
                return member
        raise ValueError(
            f"agent_type={value!r} is unknown: expected one of {[t.value for t in cls]} "
            "(case-insensitive)"
        )


@dataclass(eq=False)
class AgentRecord:
    """One snapshot in the league: who it is, its role, version and file.

    Equality and hashing use ``agent_id`` only.

    Args:
        agent_id: Unique id: a non-blank string of printable characters (no newline,
            tab or NUL), at most :data:`~envs.sim.validation.MAX_ID_LENGTH` long.
        agent_type: Role (``AgentType`` or its string value/name).
        version: Snapshot version, an int >= 0 (trainers register version 0
            for their initial weights).
        snapshot_path: Path of the snapshot file as recorded; relative paths
            are relative to the pool manifest's folder (see
            :meth:`~training.league.agent_pool.AgentPool.resolve_snapshot`). It is not
            checked to exist.
        created_at: Unix time of creation.
        metadata: JSON-compatible extra information.

    Raises:
        ValueError, TypeError: If a field is missing its allowed type or range.
    """

    agent_id: str
    agent_type: AgentType
    version: int
    snapshot_path: str
    created_at: float = field(default_factory=time.time)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_identifier("agent_id", self.agent_id)
        self.agent_type = AgentType.from_str(self.agent_type)
        if isinstance(self.version, bool) or not isinstance(self.version, (int, np.integer)):
            raise TypeError(f"version={self.version!r} is invalid: expected an int >= 0")
        self.version = int(self.version)
        if self.version < 0:
            raise ValueError(f"version={self.version} is invalid: expected an int >= 0")
        self.snapshot_path = os.fspath(check_path("snapshot_path", self.snapshot_path))
        self.created_at = _check_real("created_at", self.created_at)
        self.metadata = check_json_metadata(self.metadata, f"agent {self.agent_id!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentRecord):
            return NotImplemented
        return self.agent_id == other.agent_id

    def __hash__(self) -> int:
        return hash(self.agent_id)

    def to_dict(self) -> dict[str, Any]:
        """Return the manifest form of this record (JSON-compatible)."""
        return {
            "agent_id": self.agent_id,
            "agent_type": self.agent_type.value,
            "version": self.version,
            "snapshot_path": self.snapshot_path,
            "created_at": self.created_at,
            "metadata": copy.deepcopy(self.metadata),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentRecord:
        """Build a record from its manifest form.

        Args:
            data: A mapping with ``agent_id``, ``agent_type``, ``version`` and
                ``snapshot_path``; ``created_at`` and ``metadata`` are optional.

        Returns:
            The validated record.

        Raises:
            KeyError: If a required field is missing.
            ValueError, TypeError: If a field has a wrong type or value.
        """
        _require_keys(data, ("agent_id", "agent_type", "version", "snapshot_path"),
                      "agent record")
        return cls(
            agent_id=data["agent_id"],
            agent_type=data["agent_type"],
            version=data["version"],
            snapshot_path=data["snapshot_path"],
            created_at=data.get("created_at", time.time()),
            metadata=data.get("metadata") or {},
        )


# --------------------------------------------------------------------- matches


@dataclass
class MatchResult:
    """The outcome of one match (or a batch of games) between two agents.

    Args:
        agent_id: The focal agent.
        opponent_id: Its opponent.
        outcome: Score of ``agent_id`` in [0, 1] (1 win, 0.5 draw, 0 loss).
        match_id: Unique id; a random UUID4 string by default.
        timestamp: Unix time of the match.
        metadata: JSON-compatible extra information (e.g. ``{"step": N}``).
        territory_control: Optional share of territory held, in [0, 1].
        blue_casualties: Optional casualties of Blue, >= 0.
        red_casualties: Optional casualties of Red, >= 0.
        supply_consumed: Optional supply used, >= 0.

    Raises:
        ValueError: If a value is out of range (e.g. ``outcome`` outside [0, 1]).
        TypeError: If a value has the wrong type.
    """

    agent_id: str
    opponent_id: str
    outcome: float
    match_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timestamp: float = field(default_factory=time.time)
    metadata: dict[str, Any] = field(default_factory=dict)
    territory_control: float | None = None
    blue_casualties: float | None = None
    red_casualties: float | None = None
    supply_consumed: float | None = None

    def __post_init__(self) -> None:
        # Printable ids only: a newline or NUL would corrupt the JSONL file's lines
        # or hide one agent behind another in logs.
        check_identifier("agent_id", self.agent_id)
        check_identifier("opponent_id", self.opponent_id)
        check_identifier("match_id", self.match_id)
        self.outcome = _check_real("outcome", self.outcome, low=0.0, high=1.0)
        self.timestamp = _check_real("timestamp", self.timestamp)
        self.metadata = check_json_metadata(self.metadata)
        if self.territory_control is not None:
            self.territory_control = _check_real(
                "territory_control", self.territory_control, low=0.0, high=1.0
            )
        for name in ("blue_casualties", "red_casualties", "supply_consumed"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, _check_real(name, value, low=0.0))

    def to_dict(self) -> dict[str, Any]:
        """Return the JSONL row; optional fields appear only when set."""
        row: dict[str, Any] = {
            "match_id": self.match_id,
            "agent_id": self.agent_id,
            "opponent_id": self.opponent_id,
            "outcome": self.outcome,
            "timestamp": self.timestamp,
            "metadata": copy.deepcopy(self.metadata),
        }
        for name in MATCH_OPTIONAL_FIELDS:
            value = getattr(self, name)
            if value is not None:
                row[name] = value
        return row

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchResult:
        """Build a result from a JSONL row.

        Raises:
            KeyError: If ``agent_id``, ``opponent_id`` or ``outcome`` is missing.
            ValueError, TypeError: If a value is invalid.
        """
        _require_keys(data, ("agent_id", "opponent_id", "outcome"), "match row")
        # A null id or time is refused like any bad value; a null optional field is unset.
        given = {name: data[name] for name in ("match_id", "timestamp") if name in data}
        given.update(
            {name: data[name] for name in MATCH_OPTIONAL_FIELDS if data.get(name) is not None}
        )
        return cls(
            agent_id=data["agent_id"],
            opponent_id=data["opponent_id"],
            outcome=data["outcome"],
            metadata=data.get("metadata") or {},
            **given,
        )
