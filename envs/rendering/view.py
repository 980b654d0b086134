"""Write the browser viewer of a replay file: one self-contained HTML page.

Usage::

    python -m envs.rendering.view REPLAY.npz [-o OUT.html] [--title TITLE]

The page (:mod:`envs.rendering.viewer`) needs no network: open it from disk in any
modern browser. By default it is written beside the replay, as ``REPLAY.html``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envs.rendering.viewer import write_replay_html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envs.rendering.view",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("replay", type=Path, help="a replay file (.npz) written by "
                        "envs.rendering.save_replay")
    parser.add_argument("-o", "--out", type=Path, default=None,
                        help="the HTML file to write (default: the replay's path with .html)")
    parser.add_argument("--title", default=None, help="the page's heading")
    args = parser.parse_args(argv)
    out = args.out if args.out is not None else args.replay.with_suffix(".html")
    try:
        path = write_replay_html(args.replay, out, title=args.title)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"Replay in the browser: {path.resolve()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
