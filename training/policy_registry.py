"""Which trained policy commands each echelon: a small registry of frozen policies.

The hierarchy reuses trained commanders as fixed sub-policies: a brigade commander drives
battalions with a frozen battalion policy, a division commander drives brigades with a
frozen brigade policy. This registry names those policies by echelon and version and
loads them frozen (:mod:`training.utils.freeze_policy`): battalion policies are MAPPO
files, brigade and division policies SB3 PPO archives.

:class:`PolicyRegistry` keeps a JSON file (indent 2, sorted keys, entries sorted by
echelon then version) of ``{"entries": [{"echelon", "path", "run_id", "version"}, ...]}``;
several processes may share it, since :meth:`PolicyRegistry.save` applies what a registry
registered and removed since its last save to the entries in the file, under its lock,
and writes atomically. ``docs/echelons.md`` ("Freezing and the policy registry") has the
format and the command line (``python -m training.policy_registry list``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

from envs.sim.validation import check_bool, check_identifier, check_path, short_repr
from storage.files import atomic_write_text, hold_lock, read_json_file

DEFAULT_REGISTRY_PATH = "checkpoints/policy_registry.json"
_MAPPO_REQUIRED = ("obs_dim", "action_dim", "state_dim")
_MAPPO_OPTIONAL = ("n_agents",)
_ENTRY_KEYS = frozenset({"echelon", "path", "run_id", "version"})


class Echelon(StrEnum):
    """A level of command whose policy the registry holds (a ``str``: ``Echelon.BRIGADE ==
    "brigade"``)."""

    BATTALION = "battalion"
    BRIGADE = "brigade"
    DIVISION = "division"

    @classmethod
    def from_str(cls, value: Any) -> Echelon:
        """The echelon named ``value``, in any case (an :class:`Echelon` is returned as is).

        Raises:
            ValueError: naming the value and the allowed ones.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for echelon in cls:
                if echelon.value == value.lower():
                    return echelon
        allowed = ", ".join(repr(echelon.value) for echelon in cls)
        raise ValueError(f"echelon={short_repr(value)} is invalid: expected one of {allowed}")


class PolicyEntry(NamedTuple):
    """One registered policy."""

    echelon: Echelon
    version: str
    path: str
    run_id: str | None


def _sort_key(entry: PolicyEntry) -> tuple[str, str]:
    # Plain string order: "v10" sorts before "v2". Versions are free-form names, so
    # no numeric order is assumed.
    return entry.echelon.value, entry.version


class PolicyRegistry:
    """Registered policies by (echelon, version), kept in a JSON file.

    Args:
        path: JSON file to load from and save to, or None for an in-memory registry.

    Raises:
        ValueError: if the file exists but is not a valid registry (the message
            names it and the faulty entry), or ``path`` is not a file path.
    """

    def __init__(self, path: str | os.PathLike | None = DEFAULT_REGISTRY_PATH) -> None:
        self.path = check_path("path", path) if path is not None else None
        self._entries: dict[tuple[Echelon, str], PolicyEntry] = {}
        # What this registry changed since its last save, per key: the entry it wants
        # (None: removed) and whether that may replace another one found in the file.
        # save() applies it to the file as it is then (see save()).
        self._pending: dict[tuple[Echelon, str], tuple[PolicyEntry | None, bool]] = {}
        if self.path is not None and self.path.exists():
            self._entries = self._read(self.path)

    # --- queries ----------------------------------------------------------------

    @property
    def can_save(self) -> bool:
        """True when the registry has a backing file path (:meth:`save` writes there); an
        in-memory registry (``path=None``) cannot be saved."""
        return self.path is not None

    def get(self, echelon: Echelon | str, version: str) -> PolicyEntry:
        """The entry registered for ``echelon`` and ``version``.

        Raises:
            KeyError: if there is none.
            ValueError: for an unknown echelon.
        """
        key = _key(echelon, version)
        try:
            return self._entries[key]
        except KeyError:
            raise KeyError(self._missing(key)) from None

    def list(self, echelon: Echelon | str | None = None) -> list[PolicyEntry]:
        """Every entry (of ``echelon`` only, if given), sorted by echelon then version.

        Raises:
            ValueError: for an unknown echelon.
        """
        wanted = None if echelon is None else Echelon.from_str(echelon)
        return sorted((entry for entry in self._entries.values()
                       if wanted is None or entry.echelon is wanted), key=_sort_key)

    # --- changes ----------------------------------------------------------------

    def register(self, echelon: Echelon | str, version: str, path: str | os.PathLike,
                 run_id: str | None = None, overwrite: bool = False) -> PolicyEntry:
        """Register the policy file ``path`` as ``version`` of ``echelon``'s policy.

        The file is not opened: it may be written later or on another machine;
        :meth:`load` reports a missing one.

        Args:
            echelon: ``"battalion"`` (a MAPPO file), ``"brigade"`` or ``"division"``
                (SB3 PPO archives), in any case.
            version: a name for this policy, e.g. ``"v3"``.
            path: the policy file.
            run_id: the training run that produced it, or None.
            overwrite: replace an entry already registered under this name.

        Returns:
            The new entry.

        Raises:
            ValueError: for an invalid argument, or if ``(echelon, version)`` is
                already registered and ``overwrite`` is False.
        """
        key = _key(echelon, version)
        path = str(check_path("path", path))
        if run_id is not None:
            run_id = check_identifier("run_id", run_id)
        overwrite = check_bool("overwrite", overwrite)
        if key in self._entries and not overwrite:
            raise ValueError(f"{_name(key)} is already registered (path "
                             f"{self._entries[key].path!r}): pass overwrite=True to replace it")
        entry = PolicyEntry(key[0], key[1], path, run_id)
        previous = self._pending.get(key)
        # After a removal or an overwrite by this registry, what the file holds under
        # the key when saving may be replaced, as replaying the changes in order would.
        replace = overwrite or (previous is not None and previous[1])
        self._pending[key] = (entry, replace)
        self._entries[key] = entry
        return entry

    def remove(self, echelon: Echelon | str, version: str) -> PolicyEntry:
        """Remove an entry.

        Returns:
            The removed entry.

        Raises:
            KeyError: if there is no such entry.
            ValueError: for an unknown echelon.
        """
        key = _key(echelon, version)
        if key not in self._entries:
            raise KeyError(self._missing(key))
        self._pending[key] = (None, True)
        return self._entries.pop(key)

    def save(self) -> Path:
        """Write the registry, merging with what other processes saved meanwhile.

        Under the file's lock the file is read again and this registry's changes since
        its last save are applied to it: entries others registered survive, and a
        conflict (another process registered a different policy under a name this
        one registered without ``overwrite``) is an error rather than a silent loss.

        Returns:
            The file written.

        Raises:
            ValueError: if the registry has no file, the file is not a valid
                registry, or another process registered a different policy under a
                name registered here without ``overwrite`` (nothing is written; register
                it again with ``overwrite=True`` to replace theirs).
            TimeoutError: if another process holds the lock too long.
        """
        if self.path is None:
            raise ValueError("this PolicyRegistry has no file (path=None): nothing to save to")
        # As EloRegistry.save does: read, change and write under one lock, so that two
        # processes saving at once apply their changes one after the other; re-reading
        # the file inside the lock is what keeps the other process's entries.
        with hold_lock(self.path):
            entries = self._read(self.path) if self.path.exists() else {}
            for key, (entry, replace) in self._pending.items():
                if entry is None:
                    entries.pop(key, None)  # already removed by another process: fine
                    continue
                theirs = entries.get(key)
                if theirs is not None and theirs != entry and not replace:
                    raise ValueError(
                        f"cannot save {self.path}: another process registered {_name(key)} "
                        f"as {theirs.path!r} meanwhile; register {entry.path!r} again with "
                        "overwrite=True to replace it")
                entries[key] = entry
            atomic_write_text(self.path, _dumps(entries.values()))
        self._entries = entries
        self._pending.clear()
        return self.path

    # --- loading policies ---------------------------------------------------------

    def load(self, echelon: Echelon | str, version: str, device: str = "cpu",
             **mappo_kwargs: Any) -> Any:
        """Load a registered policy, frozen.

        Battalion policies are MAPPO files loaded with
        :func:`~training.utils.freeze_policy.load_and_freeze_mappo`, which needs the
        sizes of the environment (and checks the file against them); brigade and
        division policies are SB3 PPO archives loaded with
        :func:`~training.utils.freeze_policy.load_and_freeze_sb3`.

        Args:
            echelon: the entry's echelon.
            version: the entry's version.
            device: torch device.
            **mappo_kwargs: for a battalion policy, ``obs_dim``, ``action_dim`` and
                ``state_dim`` (required) and ``n_agents`` (default 2).

        Returns:
            A frozen :class:`~models.mappo_policy.MAPPOPolicy` (battalion) or a PPO
            model with a frozen policy (brigade, division).

        Raises:
            KeyError: if the entry does not exist.
            TypeError: if a battalion policy lacks a required size (the message
                names them), or keyword arguments are given that do not apply.
            FileNotFoundError: if the entry's file does not exist.
            ValueError: if the file is not a policy of the kind and sizes expected,
                or would need unpickling to load.
        """
        entry = self.get(echelon, version)
        # Imported here: listing and registering (the CLI) need neither torch nor SB3.
        from training.utils.freeze_policy import load_and_freeze_mappo, load_and_freeze_sb3

        if entry.echelon is Echelon.BATTALION:
            missing = [name for name in _MAPPO_REQUIRED if name not in mappo_kwargs]
            if missing:
                raise TypeError(f"load() of battalion policy {entry.version!r} is missing "
                                f"{', '.join(missing)}: a MAPPO policy is checked against "
                                "the sizes of the environment it will command")
            unknown = sorted(set(mappo_kwargs) - set(_MAPPO_REQUIRED) - set(_MAPPO_OPTIONAL))
            if unknown:
                raise TypeError(f"load() got unexpected keyword arguments {unknown}: expected "
                                f"{', '.join(_MAPPO_REQUIRED + _MAPPO_OPTIONAL)}")
            return load_and_freeze_mappo(entry.path, device=device, **mappo_kwargs)
        if mappo_kwargs:
            raise TypeError(f"load() got keyword arguments {sorted(mappo_kwargs)} for "
                            f"{_name((entry.echelon, entry.version))}, an SB3 PPO model: "
                            "they apply to battalion (MAPPO) policies only")
        return load_and_freeze_sb3(entry.path, device=device)

    # --- file -------------------------------------------------------------------

    def _missing(self, key: tuple[Echelon, str]) -> str:
        where = "this in-memory registry" if self.path is None else str(self.path)
        known = ", ".join(entry.version for entry in self.list(key[0])) or "none"
        return f"{_name(key)} is not registered in {where} (its versions: {known})"

    @staticmethod
    def _read(path: Path) -> dict[tuple[Echelon, str], PolicyEntry]:
        def problem(what: str) -> ValueError:
            return ValueError(
                f"policy registry {path} is not valid ({what}): expected {{\"entries\": "
                "[{\"echelon\": ..., \"path\": ..., \"run_id\": ... or null, \"version\": "
                "...}, ...]}; restore it from a backup or move it aside to start a fresh "
                "registry")

        data = read_json_file(path, "policy registry")
        if not isinstance(data, dict) or set(data) != {"entries"} or \
                not isinstance(data["entries"], list):
            raise problem("not an object with a list of entries")
        entries: dict[tuple[Echelon, str], PolicyEntry] = {}
        for index, raw in enumerate(data["entries"]):
            label = f"entry {index} {short_repr(raw)}"
            if not isinstance(raw, dict) or set(raw) != _ENTRY_KEYS:
                raise problem(f"{label} is not an object with exactly the keys "
                              f"{sorted(_ENTRY_KEYS)}")
            try:
                key = _key(raw["echelon"], raw["version"])
                entry_path = str(check_path("path", raw["path"]))
                run_id = None if raw["run_id"] is None else \
                    check_identifier("run_id", raw["run_id"])
            except ValueError as error:
                raise problem(f"{label}: {error}") from None
            if key in entries:
                raise problem(f"{label} registers {_name(key)} a second time")
            entries[key] = PolicyEntry(key[0], key[1], entry_path, run_id)
        return entries


def _key(echelon: Any, version: Any) -> tuple[Echelon, str]:
    return Echelon.from_str(echelon), check_identifier("version", version)


def _name(key: tuple[Echelon, str]) -> str:
    return f"{key[0].value} policy {key[1]!r}"


def _dumps(entries) -> str:
    rows = [{"echelon": entry.echelon.value, "path": entry.path, "run_id": entry.run_id,
             "version": entry.version} for entry in sorted(entries, key=_sort_key)]
    return json.dumps({"entries": rows}, indent=2, sort_keys=True) + "\n"


# --- command line ------------------------------------------------------------------


def format_table(entries: list[PolicyEntry]) -> str:
    """``entries`` as a text table: echelon, version, run id (``-`` for none), path."""
    rows = [("ECHELON", "VERSION", "RUN ID", "PATH")] + [
        (entry.echelon.value, entry.version, entry.run_id or "-", entry.path)
        for entry in entries]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    return "\n".join("  ".join([*(cell.ljust(width) for cell, width in zip(row, widths,
                                                                          strict=False)),
                                row[3]]) for row in rows)


def _echelon_argument(text: str) -> Echelon:
    try:
        return Echelon.from_str(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main(argv: list[str] | None = None) -> int:
    """Run the command line (see the module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m training.policy_registry",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--registry", default=DEFAULT_REGISTRY_PATH,
                        help=f"registry file (default {DEFAULT_REGISTRY_PATH})")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="print the registered policies")
    listing.add_argument("--echelon", type=_echelon_argument,
                         help="only this echelon (battalion, brigade, division)")
    register = commands.add_parser("register", help="register a policy file")
    register.add_argument("--echelon", type=_echelon_argument, required=True,
                          help="battalion, brigade or division")
    register.add_argument("--version", required=True, help="name of this policy, e.g. v3")
    register.add_argument("--path", required=True, help="the policy file")
    register.add_argument("--run-id", help="the training run that produced it")
    register.add_argument("--overwrite", action="store_true",
                          help="replace an entry already registered under this name")
    args = parser.parse_args(argv)
    try:
        registry = PolicyRegistry(args.registry)
        if args.command == "list":
            entries = registry.list(args.echelon)
            if entries:
                print(format_table(entries))
            else:
                print(f"no policies registered in {registry.path}")
        else:
            entry = registry.register(args.echelon, args.version, args.path, args.run_id,
                                      overwrite=args.overwrite)
            path = registry.save()
            print(f"registered {_name((entry.echelon, entry.version))} -> {entry.path} "
                  f"in {path}")
    except (ValueError, KeyError, OSError) as error:  # TimeoutError is an OSError
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        # One line, as argparse reports its own errors.
        parser.exit(2, f"{parser.prog}: error: {' '.join(str(message).split())}\n")
    return 0


__all__ = ["DEFAULT_REGISTRY_PATH", "Echelon", "PolicyEntry", "PolicyRegistry", "format_table",
           "main"]


if __name__ == "__main__":
    sys.exit(main())
