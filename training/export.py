"""Export a trained commander to ONNX, to run it outside this project.

Usage::

    wargames-export CHECKPOINT -o commander.onnx
    python -m training.export checkpoints/run/ppo_battalion_final.zip -o commander.onnx

Every policy kind the project trains exports (:data:`models.export.KINDS`). The kind is
told from the file itself, never from its name, and the file is loaded by the project's
own loader for that kind, which runs no code from it (:mod:`training.commander_files`).
:func:`export_checkpoint` writes the model atomically: a run killed mid-write leaves any
earlier file whole. The model computes the deterministic action and carries the
observation layout and the action's meaning in its metadata (:mod:`models.export`;
``docs/deployment.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envs.sim.validation import check_path
from models.export import (
    KINDS,
    CommanderGraph,
    brigade_graph,
    describe,
    division_graph,
    mappo_graph,
    ppo_graph,
    to_onnx,
    wfm1_graph,
)
from storage.files import atomic_write_bytes
from training.commander_files import (
    ACCEPTED,
    CheckpointKind,
    identify_checkpoint,
    load_commander_policy,
)

CONSOLE_SCRIPT = "wargames-export"
"""The command pyproject.toml installs for :func:`main`."""

@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_checkpoint` wrote.

    Attributes:
        kind: the policy kind.
        output: the ``.onnx`` file.
        description: the metadata written into it (:func:`models.export.describe`).
    """

    kind: str
    output: Path
    description: dict[str, Any]


_GRAPHS = {"ppo": ppo_graph, "mappo": mappo_graph, "wfm1": wfm1_graph,
           "brigade": brigade_graph, "division": division_graph}
assert set(_GRAPHS) == set(KINDS)


def commander_graph(found: CheckpointKind) -> CommanderGraph:
    """The exportable graph (:mod:`models.export`) of the commander in the file ``found``
    describes, loaded with :func:`load_commander_policy`.

    Raises:
        FileNotFoundError, ValueError: as :func:`load_commander_policy`, or for a policy
            whose sizes fit no layout of the project's battles.
    """
    return _GRAPHS[found.kind](load_commander_policy(found))


def check_output(output: str | Path, checkpoint: str | Path | None = None) -> Path:
    """``output`` if an ONNX file may be written there: a name ending in ``.onnx``, in a
    folder that exists, not a folder itself and not ``checkpoint``.

    Raises:
        ValueError: naming ``output``, its value and what is allowed.
        FileNotFoundError: naming ``output`` if its folder does not exist.
    """
    path = check_path("output", output)
    if path.suffix != ".onnx":
        raise ValueError(f"output={str(output)!r} is invalid: expected a file name ending "
                         "in .onnx")
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"output={str(output)!r} is invalid: its folder {folder} does "
                                "not exist (create it first)")
    if path.is_dir():
        raise ValueError(f"output={str(output)!r} is invalid: it is a folder, expected a file "
                         "name ending in .onnx")
    if checkpoint is not None and path.exists() and path.resolve() == Path(checkpoint).resolve():
        raise ValueError(f"output={str(output)!r} is invalid: it is the checkpoint itself, "
                         "which the export would overwrite")
    return path


def export_checkpoint(checkpoint: str | Path, output: str | Path) -> ExportResult:
    """Export the commander in ``checkpoint`` to the ONNX file ``output``, atomically.

    Args:
        checkpoint: a policy file or checkpoint of any kind of :data:`models.export.KINDS`
            (``.zip`` optional for SB3 files).
        output: the ``.onnx`` file to write (its folder must exist; an earlier file there
            is replaced).

    Returns:
        The kind, the file written and the metadata written into it.

    Raises:
        FileNotFoundError: if ``checkpoint`` or ``output``'s folder does not exist.
        ValueError: for an output name that is not allowed (named), or a checkpoint that is
            not a commander of this project (named, with the kinds accepted).
    """
    output = check_output(output, checkpoint)
    found = identify_checkpoint(checkpoint)
    graph = commander_graph(found)
    source = found.path.name
    model = to_onnx(graph, source)
    atomic_write_bytes(output, model)
    return ExportResult(graph.kind, output, describe(graph, source))


def _summary(result: ExportResult) -> str:
    def ports(entries: list[dict[str, Any]]) -> str:
        return ", ".join(f"{p['name']} {p['dtype']}{json.dumps(p['shape'])}" for p in entries)

    description = result.description
    return (f"wrote {result.output}: {result.kind} commander, "
            f"{ports(description['inputs'])} -> {ports(description['outputs'])}")


def main(argv: list[str] | None = None) -> int:
    """Run the command line (module docstring); returns the exit status."""
    # The usage line names the command as it was run: the installed script or the module.
    installed = Path(sys.argv[0]).name == CONSOLE_SCRIPT
    parser = argparse.ArgumentParser(
        prog=CONSOLE_SCRIPT if installed else "python -m training.export",
        description="Export a trained commander to ONNX: its deterministic action, with "
                    "the observation layout and the action's meaning in the metadata.")
    parser.add_argument("checkpoint", help=f"the policy to export: {ACCEPTED}")
    parser.add_argument("-o", "--output", required=True,
                        help="the .onnx file to write (its folder must exist)")
    args = parser.parse_args(argv)
    from rich.console import Console

    try:
        with Console(stderr=True).status(f"exporting {args.checkpoint}"):
            result = export_checkpoint(args.checkpoint, args.output)
    except (ValueError, OSError) as error:
        # One line, as argparse reports its own errors.
        parser.exit(2, f"{parser.prog}: error: {' '.join(str(error).split())}\n")
    print(_summary(result))
    return 0


__all__ = ["CONSOLE_SCRIPT", "ExportResult", "check_output", "commander_graph",
           "export_checkpoint", "main"]


if __name__ == "__main__":
    sys.exit(main())
