"""Names a package imports from their modules on first use, so that importing the
package itself stays light (no torch, no Gymnasium until a name that needs them)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str],
                 namespace: dict[str, Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``exports`` from
    its module when it is first asked for.

    Args:
        package: the package's name, for the message of a missing name.
        exports: each name and the module that defines it.
        namespace: the package's ``globals()``, to keep a name in once imported (None:
            import it on every access).

    Returns:
        The function to bind as the package's ``__getattr__``.
    """

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            if namespace is not None:
                namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
