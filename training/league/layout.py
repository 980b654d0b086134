"""The league directory's file names: what the roles write, and the launcher and the
report read (one home, importable without torch).

A league directory holds one folder per role (``<role>/``: :data:`POOL_FILE`, the
snapshots, the checkpoints, :data:`STATUS_FILE`, :data:`HISTORY_FILE`,
:data:`ROLE_LOCK_FILE`) and the files all roles share (:data:`MATCHES_FILE`,
:data:`ELO_FILE`, and the launcher's :data:`LAUNCHER_LOCK_FILE`).
"""

from __future__ import annotations

POOL_FILE = "pool.json"
"""A role's pool manifest, in its folder."""
SNAPSHOT_FOLDER = "snapshots"
"""A role's snapshot files, in its folder."""
STATUS_FILE = "status.json"
"""A role's latest state, in its folder (replaced after every rollout)."""
HISTORY_FILE = "history.jsonl"
"""A role's evaluations, one JSON line each, in its folder."""
MATCHES_FILE = "matches.jsonl"
"""The match log every role appends to."""
ELO_FILE = "elo.json"
"""The Elo ratings every role updates."""
ROLE_LOCK_FILE = "role.lock"
"""A role's claim on its folder, in its folder: one process trains a role folder at a
time (:class:`storage.files.FolderLock`, held from the role's construction to its end;
the file holds the owner's pid)."""
LAUNCHER_LOCK_FILE = "launcher.lock"
"""The launcher's claim on the league directory, at its top: one launcher per league."""
STOPPED_EXIT_CODE = 130
"""The exit status of a role's command line stopped by SIGINT or SIGTERM (checkpoint
written, status ``stopped``): 128 + SIGINT, as a shell reports an interrupted command
(:func:`training.league.launch.run_role_cli`; the launcher reads it)."""
IN_USE_EXIT_CODE = 75
"""The exit status of a role's command line, and of the launcher, refused because
another live process owns the folder (:class:`storage.files.FolderInUseError`):
``EX_TEMPFAIL``, try again once that process has ended. The launcher does not restart
a role that exits with it."""
ANCHORS = ("scripted_team_l5", "doctrine_team")
"""The fixed members of every league's Elo table: scripted L5 and the disciplined
doctrine commanding every battalion of a team (their ratings:
:data:`training.elo.TEAM_BASELINE_RATINGS`)."""

__all__ = ["ANCHORS", "ELO_FILE", "HISTORY_FILE", "IN_USE_EXIT_CODE", "LAUNCHER_LOCK_FILE",
           "MATCHES_FILE", "POOL_FILE", "ROLE_LOCK_FILE", "SNAPSHOT_FOLDER", "STATUS_FILE",
           "STOPPED_EXIT_CODE"]
