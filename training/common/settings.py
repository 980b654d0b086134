"""Settings declared once: each with its doc, its check and its YAML key.

A trainer's config is a flat dataclass of :func:`setting` fields (the groups several
trainers share are in :mod:`training.common.setting_groups`; a trainer changes a default
or check with :func:`override`). From the declarations come the checks
(:meth:`Settings.__post_init__`), the Hydra schema (:meth:`ConfigFile.schema`) and the
YAML file (:meth:`ConfigFile.text`, each doc as a comment). ``docs/training.md``
("Settings: declared once") says more; ``docs/defaults.md`` says why the defaults are
what they are.
"""

from __future__ import annotations

import dataclasses
import difflib
import textwrap
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, make_dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml as pyyaml

from envs.sim.validation import (
    check_bool,
    check_in_range,
    check_int,
    check_path,
    check_seed,
    short_repr,
)

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
"""The folder of the trainers' Hydra config files."""

SECTION_ORDER = ("training", "env", "reward", "eval", "curriculum", "artifacts", "wandb",
                 "self_play", "elo", "retention", "logging", "resume")
"""The order of the sections in a YAML file (a section not listed comes last)."""

Check = Callable[[str, Any], Any]
"""``check(name, value)``: the value to keep, or ``ValueError`` naming ``name``."""


def setting(default: Any, doc: str, check: Check, yaml: str) -> Any:
    """A config field declared with everything about it.

    Args:
        default: the default value (a list is copied for each config).
        doc: what the setting does; the YAML file shows it as a comment.
        check: ``check(name, value)`` returns the value to keep or raises
            ``ValueError`` naming ``name``; it runs whenever a config is made.
        yaml: where the setting lives in the YAML file and on the command line,
            ``"section.key"``.

    Returns:
        A :func:`dataclasses.field` holding ``doc``, ``check`` and ``yaml`` in its metadata.
    """
    section, _, key = yaml.partition(".")
    if not section or not key or "." in key:
        raise ValueError(f"yaml={yaml!r} is invalid: expected 'section.key'")
    metadata = {"doc": doc, "check": check, "yaml": yaml}
    if isinstance(default, list):
        return field(default_factory=partial(list, default), metadata=metadata)
    return field(default=default, metadata=metadata)


def override(group: type, name: str, *, default: Any = MISSING,
             check: Check | None = None, yaml: str | None = None) -> Any:
    """Setting ``name`` as ``group`` declares it (whether or not the config inherits
    ``group``), with this trainer's default, check or YAML key; its doc stays the
    declaration's."""
    declared = group.__dataclass_fields__[name]
    return setting(default_of(declared) if default is MISSING else default,
                   declared.metadata["doc"], check or declared.metadata["check"],
                   yaml or declared.metadata["yaml"])


def default_of(spec: dataclasses.Field) -> Any:
    """A field's default value (a fresh one for a list)."""
    return spec.default_factory() if spec.default is MISSING else spec.default


# --- checks ------------------------------------------------------------------------

def optional(check: Check) -> Check:
    """``check``, letting None (null in YAML) through."""

    def checked(name: str, value: Any) -> Any:
        return None if value is None else check(name, value)

    return checked


positive_int = partial(check_int, minimum=1)
non_negative_int = partial(check_int, minimum=0)
unit_interval = partial(check_in_range, low=0.0, high=1.0)
open_unit_interval = partial(check_in_range, low=0.0, high=1.0, low_open=True)


def seed(name: str, value: Any) -> int:
    """A run's seed: an integer in [0, 2**63) (:data:`~envs.sim.constants.SEED_BOUND`,
    the range of the battles' counter-based keys), never None and never wrapped."""
    if value is None or check_seed(name, value) is None:
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected an integer in "
                         "[0, 2**63)")
    return int(value)


def text(name: str, value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected a non-empty string")
    return value


def path(name: str, value: Any) -> str:
    """A file path, kept as a string."""
    if not isinstance(value, str):
        text(name, value)
    return str(check_path(name, value))


def text_list(name: str, value: Any) -> list[str]:
    """A list of non-empty strings."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected a list of strings")
    return [text(f"{name}[{i}]", item) for i, item in enumerate(value)]


def hidden_sizes(name: str, value: Any) -> list[int]:
    """The widths of an MLP's hidden layers: a non-empty list of ints >= 1."""
    if isinstance(value, (str, int)) or not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected a non-empty list "
                         "of ints")
    return [check_int(f"{name}[{i}]", v, minimum=1) for i, v in enumerate(value)]


# --- the base ----------------------------------------------------------------------

class Settings:
    """Base of the configs: checks on construction, field names, checked copies, dicts,
    and the way between the flat fields and the nested YAML layout.

    A subclass is a dataclass whose fields are all made by :func:`setting`; one
    with checks across fields runs them after ``super().__post_init__()``.
    """

    def __post_init__(self) -> None:
        """Run every field's check and keep what it returns (e.g. a list for a tuple)."""
        for spec in dataclasses.fields(self):
            value = spec.metadata["check"](spec.name, getattr(self, spec.name))
            setattr(self, spec.name, value)

    @classmethod
    def field_names(cls) -> list[str]:
        """The settings' names, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def check_field_names(cls, names: Mapping[str, Any] | list[str]) -> None:
        """Raise ``ValueError`` naming any key that is not a field."""
        valid = cls.field_names()
        unknown = sorted(set(names) - set(valid))
        if unknown:
            raise ValueError(f"unknown {cls.__name__} field(s) {unknown}: valid fields are "
                             f"{', '.join(valid)}")

    def replace(self, **changes: Any):
        """A copy with ``changes`` applied (and checked); unknown names raise ``ValueError``."""
        self.check_field_names(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a flat dict of plain values."""
        return dataclasses.asdict(self)

    @classmethod
    def yaml_keys(cls) -> dict[str, str]:
        """Where each field lives in the YAML file: ``{field: "section.key"}``."""
        return {f.name: f.metadata["yaml"] for f in dataclasses.fields(cls)}

    @classmethod
    def from_nested(cls, nested: Mapping[str, Any]):
        """A config from a nested mapping laid out like its YAML file.

        Sections that hold none of its settings (``resume``, ``hydra``) are
        ignored; an unknown key in one of its sections raises ``ValueError``
        naming it and listing the section's keys. (Hydra's schema refuses such a
        key first, except one added on the command line with ``+``.)
        """
        if not isinstance(nested, Mapping):
            raise TypeError(f"nested={short_repr(nested)} is invalid: expected a mapping of "
                            "sections, laid out like the config's YAML file")
        by_key = {key: name for name, key in cls.yaml_keys().items()}
        sections = {key.split(".")[0] for key in by_key}
        values: dict[str, Any] = {}
        for section, content in nested.items():
            if section not in sections:
                continue
            if not isinstance(content, Mapping):
                raise ValueError(f"config section {section!r}={short_repr(content)} is "
                                 "invalid: expected a mapping")
            for key, value in content.items():
                name = by_key.get(f"{section}.{key}")
                if name is None:
                    known = sorted(k.split(".", 1)[1] for k in by_key
                                   if k.startswith(section + "."))
                    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.5)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    plain = isinstance(key, str) and key.isprintable() and len(key) <= 80
                    shown = key if plain else short_repr(key)  # never expanded unbounded
                    raise ValueError(f"unknown config key {section}.{shown}{hint}: valid keys "
                                     f"in {section!r} are {', '.join(known)}")
                values[name] = list(value) if isinstance(value, (list, tuple)) else value
        return cls(**values)


# --- the Hydra config file ---------------------------------------------------------

@dataclass
class ResumeOptions(Settings):
    """The command line's ``resume`` section: which checkpoint a run continues from."""

    auto: bool = setting(
        False, "Continue from the newest checkpoint in eval.checkpoint_dir, if there is one.",
        check_bool, "resume.auto")
    checkpoint: str | None = setting(
        None, "Continue from this checkpoint (it must exist); comes before resume.auto.",
        optional(path), "resume.checkpoint")


@dataclass(frozen=True)
class ConfigFile:
    """A trainer's Hydra config file, made from the declarations of its settings.

    Attributes:
        name: the file's path in :data:`CONFIG_DIR` without ``.yaml``, e.g.
            ``experiment_mappo_2v2`` or ``league/main_agent`` (its last part is
            Hydra's ``config_name``, its folder Hydra's ``config_path``).
        settings: the Settings classes whose fields it holds, in order.
        header: the comment at the top of the file (what it is for, how to override).
    """

    name: str
    settings: tuple[type[Settings], ...]
    header: str

    @property
    def path(self) -> Path:
        """The file, ``configs/<name>.yaml``."""
        return CONFIG_DIR / f"{self.name}.yaml"

    @property
    def schema_name(self) -> str:
        """The name of the schema in Hydra's ConfigStore (the file's first default)."""
        return f"{self.path.stem}_schema"

    def sections(self) -> dict[str, list[tuple[str, type, dataclasses.Field]]]:
        """``{section: [(key, type, field), ...]}``: sections in :data:`SECTION_ORDER`,
        keys in declaration order."""
        found: dict[str, list[tuple[str, type, dataclasses.Field]]] = {}
        for settings in self.settings:
            types = typing.get_type_hints(settings)
            for spec in dataclasses.fields(settings):
                section, key = spec.metadata["yaml"].split(".")
                found.setdefault(section, []).append((key, types[spec.name], spec))
        rank = {section: i for i, section in enumerate(SECTION_ORDER)}
        return dict(sorted(found.items(), key=lambda item: rank.get(item[0], len(rank))))

    def schema(self) -> type:
        """The nested dataclass the YAML file and the command line are checked against:
        one field per section, each a dataclass of that section's keys and types."""
        top = []
        for section, entries in self.sections().items():
            keys = [(key, kind, field(default_factory=partial(default_of, spec)))
                    for key, kind, spec in entries]
            node = make_dataclass(f"{self.settings[0].__name__}.{section}", keys)
            top.append((section, node, field(default_factory=node)))
        return make_dataclass(f"{self.settings[0].__name__}Schema", top)

    def register(self) -> None:
        """Store :meth:`schema` in Hydra's ConfigStore under :attr:`schema_name`, where
        the file's defaults list finds it."""
        from hydra.core.config_store import ConfigStore

        ConfigStore.instance().store(name=self.schema_name, node=self.schema())

    def run(self, app: Callable[[Any, dict[str, Any]], None]) -> None:
        """Run ``app(config, resume)`` as the Hydra command line of this file.

        Hydra checks the file and the command-line overrides against :meth:`schema`;
        ``config`` is the first of :attr:`settings` built from the result, ``resume``
        the ``resume`` section as a dict.
        """
        import hydra
        from omegaconf import OmegaConf

        self.register()

        @hydra.main(config_path=str(self.path.parent), config_name=self.path.stem,
                    version_base=None)
        def hydra_app(cfg) -> None:
            nested = OmegaConf.to_container(cfg, resolve=True)
            app(self.settings[0].from_nested(nested), ResumeOptions.from_nested(nested).to_dict())

        hydra_app()

    def text(self) -> str:
        """The file's text: the header, the schema as the first default, then every
        setting under its section with its doc as a comment."""
        lines = [f"# {line}".rstrip() for line in self.header.strip().splitlines()]
        lines += ["# Hydra checks every key and type below, and on the command line, against",
                  "# the schema made from the declarations.",
                  "defaults:", f"  - {self.schema_name}", "  - _self_"]
        for section, entries in self.sections().items():
            lines += ["", f"{section}:"]
            for key, _, spec in entries:
                lines += textwrap.wrap(spec.metadata["doc"], 96, initial_indent="  # ",
                                       subsequent_indent="  # ")
                value = pyyaml.safe_dump({key: default_of(spec)}, default_flow_style=False,
                                         sort_keys=False)
                lines += ["  " + line for line in value.splitlines()]
        return "\n".join(lines) + "\n"

    def write(self) -> Path:
        """Write :meth:`text` to :attr:`path`; returns the path."""
        self.path.write_text(self.text(), encoding="utf-8")
        return self.path
