"""Upper bounds on the networks' architecture fields, declared once.

A policy file from elsewhere names the network it wants built (its constructor
arguments). A layer count of three million or a hidden-size list of two million
entries would allocate gigabytes before any weight is read, so every constructor of
:mod:`models` checks its fields against these bounds first (before building a single
layer), and the checkpoint readers check a file's arguments before constructing
anything (:func:`check_architecture`). Each bound sits far above what the project
trains (``configs/``: 128-wide layers, 2 to 4 transformer layers, 8 heads) and far
below what would exhaust a machine.

The bounds keep each field sane; what a file may really allocate is bounded by the
weights it holds (:func:`models.weights.check_module_size`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envs.sim.validation import check_int, short_repr

MAX_LAYERS = 32
"""Most layers of any stack: transformer layers (``n_layers``, ``n_echelon_layers``,
``n_cross_layers``) and the entries of a hidden-size list (``hidden_sizes``,
``actor_hidden_sizes``, ``critic_hidden_sizes``, an SB3 ``net_arch``)."""

MAX_WIDTH = 8192
"""Widest layer: ``d_model``, every hidden size, ``card_hidden_size``, ``n_freq_bands``
(an 8192 x 8192 linear layer alone holds 256 MiB of weights)."""

MAX_HEADS = 256
"""Most attention heads (``n_heads``)."""

MAX_INPUT_DIM = 65_536
"""Widest input or output vector: ``token_dim``, ``obs_dim``, ``state_dim``,
``action_dim``."""

MAX_AGENTS = 256
"""Most agents of a MAPPO policy (``n_agents``: one actor each when parameters are not
shared)."""

BOUNDS: dict[str, int] = {
    "n_layers": MAX_LAYERS, "n_echelon_layers": MAX_LAYERS, "n_cross_layers": MAX_LAYERS,
    "d_model": MAX_WIDTH, "card_hidden_size": MAX_WIDTH, "n_freq_bands": MAX_WIDTH,
    "hidden": MAX_WIDTH, "n_heads": MAX_HEADS, "token_dim": MAX_INPUT_DIM,
    "obs_dim": MAX_INPUT_DIM, "state_dim": MAX_INPUT_DIM, "action_dim": MAX_INPUT_DIM,
    "card_dim": MAX_INPUT_DIM, "n_agents": MAX_AGENTS,
}
"""The upper bound of each integer architecture field, by constructor argument name."""

HIDDEN_SIZE_FIELDS = ("hidden_sizes", "actor_hidden_sizes", "critic_hidden_sizes",
                      "net_arch", "policy_hidden_sizes")
"""The list fields (constructor arguments, and the SB3 run's ``policy_hidden_sizes``, its
``net_arch``): at most :data:`MAX_LAYERS` entries of at most :data:`MAX_WIDTH`."""


def check_dimension(name: str, value: Any) -> int:
    """An architecture integer field: at least 1, at most its bound in :data:`BOUNDS`.

    Raises:
        ValueError: naming ``name``, the value and the allowed range (``TypeError``
            where it is not an integer).
    """
    return check_int(name, value, minimum=1, maximum=BOUNDS[name])


def check_hidden_sizes(name: str, value: Any) -> tuple[int, ...]:
    """A hidden-size list: 1 to :data:`MAX_LAYERS` widths, each 1 to :data:`MAX_WIDTH`.

    The length is checked before any entry, so a list of millions is refused at once.

    Raises:
        ValueError: naming ``name`` (or the entry), the value (shortened) and the limit.
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise ValueError(f"{name}={short_repr(value)} is invalid: expected a non-empty list "
                         "of positive integers")
    if len(value) > MAX_LAYERS:
        raise ValueError(f"{name} has {len(value):,} entries: at most {MAX_LAYERS} hidden "
                         f"layers are allowed (models.limits.MAX_LAYERS)")
    return tuple(check_int(f"{name}[{i}]", size, minimum=1, maximum=MAX_WIDTH)
                 for i, size in enumerate(value))


def check_architecture(kwargs: Mapping[str, Any], source: str) -> None:
    """Check the architecture fields of a file's constructor arguments against their
    bounds, before anything is built from them.

    Only the fields named in :data:`BOUNDS` and :data:`HIDDEN_SIZE_FIELDS` are checked
    here (the constructor checks the rest, and these again).

    Args:
        kwargs: the constructor arguments read from the file.
        source: the file, for messages (e.g. "MAPPO policy file /tmp/p.pt").

    Raises:
        ValueError: naming ``source``, the field, the value and its limit.
    """
    for name, value in kwargs.items():
        try:
            if name in HIDDEN_SIZE_FIELDS:
                check_hidden_sizes(name, value)
            elif name in BOUNDS:
                check_dimension(name, value)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{source}: {error}") from None


__all__ = ["BOUNDS", "HIDDEN_SIZE_FIELDS", "MAX_AGENTS", "MAX_HEADS", "MAX_INPUT_DIM",
           "MAX_LAYERS", "MAX_WIDTH", "check_architecture", "check_dimension",
           "check_hidden_sizes"]
