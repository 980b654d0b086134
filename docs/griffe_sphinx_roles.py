"""A Griffe extension for the docs site: Sphinx roles in docstrings become links.

The docstrings name other objects the Sphinx way (``:class:`~envs.battalion_env.BattalionEnv```,
``:func:`train```, ``:mod:`training.artifacts```). mkdocstrings reads Markdown, where
such a role would show as raw text; this extension rewrites each role, when the API
pages are built, as an optional mkdocs-autorefs reference: a link to the object where
the site documents it, else the name as code. A leading ``~`` shows only the last
part of the name, as in Sphinx. A bare name (``TrainingConfig``, ``act``) is looked
up among the members of the object, of its parents and of its module.

Loaded by ``mkdocs.yml`` (mkdocstrings' ``extensions`` option); the code of the
project does not use it.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`<>]+)`")
"""A Sphinx role: its ``~`` and its target."""


def _qualify(name: str, obj: griffe.Object) -> str:
    """The full path of ``name`` as seen from ``obj``: dotted names are taken as given."""
    if "." in name:
        return name
    scope: griffe.Object | None = obj
    while scope is not None:
        if name in scope.members:
            return f"{scope.path}.{name}"
        scope = scope.parent
    return name


def rewrite_roles(text: str, obj: griffe.Object) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs reference."""

    def reference(match: re.Match[str]) -> str:
        short, target = match[1] == "~", match[2].strip().rstrip("()")
        title = target.rsplit(".", 1)[-1] if short else target
        identifier = html.escape(_qualify(target, obj), quote=True)
        code = f"<code>{html.escape(title)}</code>"
        return f'<autoref identifier="{identifier}" optional>{code}</autoref>'

    return ROLE.sub(reference, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every docstring once the object tree is complete."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ":`" in obj.docstring.value:
            obj.docstring.value = rewrite_roles(obj.docstring.value, obj)
