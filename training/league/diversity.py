"""Behavioural diversity of the league: trajectory embeddings and cosine distances.

Each agent's evaluation trajectory (:class:`TrajectoryBatch`) is summarised by a
fixed-length, unit-norm embedding (:func:`embed_trajectory`): a histogram of each action
dimension, a heatmap of the positions and four statistics of the actions and the
movement, concatenated and L2-normalised (:func:`embedding_dim` numbers, 44 for 3-D
actions with the defaults). :func:`diversity_score` reduces the pairwise cosine distances
``1 - cos`` between agents' embeddings (:func:`pairwise_cosine_distances`): 0 means
identical behaviour; as a rule of thumb, above 0.3 is a healthy league and below 0.1
suggests the agents have collapsed onto one strategy. :class:`DiversityTracker` keeps the
score over training. ``docs/league.md`` ("Diversity") gives the embedding in full.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "AGGREGATIONS",
    "DiversityTracker",
    "TrajectoryBatch",
    "diversity_score",
    "embed_trajectory",
    "pairwise_cosine_distances",
]

#: Ways to reduce the pairwise distances to one score.
AGGREGATIONS = ("mean", "min", "median")


def _finite_2d(name: str, value: Any, columns: int | None) -> np.ndarray:
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} is not numeric ({exc})") from None
    expected = "(T, action_dim)" if columns is None else f"(T, {columns})"
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        hint = "; use .reshape(-1, 1) for scalar actions" if array.ndim == 1 else ""
        raise ValueError(f"{name} has shape {array.shape}: expected {expected} with T >= 1{hint}")
    if columns is not None and array.shape[1] != columns:
        raise ValueError(f"{name} has shape {array.shape}: expected {expected}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values: all entries must be finite")
    return array


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name}={value!r} is invalid: expected an int >= {low}")
    return int(value)


def _check_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise ValueError(f"{name}={value!r} is invalid: expected a positive number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value!r} is invalid: expected a positive finite number")
    return float(value)


def _check_aggregation(aggregation: Any) -> str:
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation={aggregation!r} is unknown: expected one of {AGGREGATIONS}")
    return aggregation


@dataclass
class TrajectoryBatch:
    """One agent's behaviour over T steps.

    Args:
        actions: Array of shape (T, action_dim), finite.
        positions: Array of shape (T, 2), normalised to [0, 1] (values
            outside are clipped when embedding), finite.
        agent_id: Optional id of the agent that produced it.

    Raises:
        ValueError: If a shape is wrong, T is 0, the lengths differ or a value
            is not finite.
    """

    actions: np.ndarray
    positions: np.ndarray
    agent_id: str | None = None

    def __post_init__(self) -> None:
        self.actions = _finite_2d("actions", self.actions, None)
        self.positions = _finite_2d("positions", self.positions, 2)
        if self.actions.shape[0] != self.positions.shape[0]:
            raise ValueError(
                f"actions have {self.actions.shape[0]} steps but positions have "
                f"{self.positions.shape[0]}: expected the same T"
            )
        if self.agent_id is not None and not isinstance(self.agent_id, str):
            raise TypeError(f"agent_id={self.agent_id!r} is invalid: expected a string or None")

    @property
    def length(self) -> int:
        """Number of steps T."""
        return int(self.actions.shape[0])

    @property
    def action_dim(self) -> int:
        """Number of action dimensions."""
        return int(self.actions.shape[1])


def embedding_dim(action_dim: int, n_action_bins: int = 8, n_pos_bins: int = 4) -> int:
    """Return the length of an embedding: ``action_dim * n_action_bins + n_pos_bins**2 + 4``."""
    return action_dim * n_action_bins + n_pos_bins * n_pos_bins + 4


def embed_trajectory(
    traj: TrajectoryBatch,
    n_action_bins: int = 8,
    n_pos_bins: int = 4,
    action_clip: float = 5.0,
    epsilon: float = 1e-8,
) -> np.ndarray:
    """Return the unit-norm behavioural embedding of a trajectory (see the module docs).

    The action-norm statistics use the clipped actions, so that one huge
    action cannot dominate the embedding.

    Args:
        traj: The trajectory.
        n_action_bins: Histogram bins per action dimension, >= 1.
        n_pos_bins: Heatmap bins per axis, >= 1.
        action_clip: Actions are clipped to ``[-action_clip, action_clip]``, > 0.
        epsilon: Norms below this count as zero, > 0.

    Returns:
        A float64 vector of length ``action_dim * n_action_bins + n_pos_bins**2 + 4``.

    Raises:
        TypeError: If ``traj`` is not a TrajectoryBatch.
        ValueError: If a parameter is out of range.
    """
    if not isinstance(traj, TrajectoryBatch):
        raise TypeError(f"traj has type {type(traj).__name__}: expected a TrajectoryBatch")
    n_action_bins = _check_int("n_action_bins", n_action_bins, 1)
    n_pos_bins = _check_int("n_pos_bins", n_pos_bins, 1)
    action_clip = _check_positive("action_clip", action_clip)
    epsilon = _check_positive("epsilon", epsilon)
    steps, action_dim = traj.actions.shape

    actions = np.clip(traj.actions, -action_clip, action_clip)
    # Equal-width bins over [-clip, clip]; the right edge belongs to the last bin.
    action_bins = np.minimum(
        ((actions + action_clip) / (2.0 * action_clip) * n_action_bins).astype(np.int64),
        n_action_bins - 1,
    )
    flat = (action_bins + np.arange(action_dim) * n_action_bins).ravel()
    action_hist = np.bincount(flat, minlength=action_dim * n_action_bins) / steps

    positions = np.clip(traj.positions, 0.0, 1.0)
    cells = np.minimum((positions * n_pos_bins).astype(np.int64), n_pos_bins - 1)
    heatmap = np.bincount(cells[:, 0] * n_pos_bins + cells[:, 1], minlength=n_pos_bins**2)
    heatmap = heatmap / steps

    norms = np.linalg.norm(actions, axis=1)
    if steps > 1:
        displacement = float(np.linalg.norm(np.diff(positions, axis=0), axis=1).mean())
        above_median = float((norms > np.median(norms)).mean())
    else:
        displacement, above_median = 0.0, 0.5
    stats = np.array([norms.mean(), norms.std(), displacement, above_median])

    embedding = np.concatenate([action_hist, heatmap, stats])
    length = float(np.linalg.norm(embedding))
    if length < epsilon:
        return np.full(embedding.size, 1.0 / math.sqrt(embedding.size))
    return embedding / length


def _embedding_matrix(embeddings: Any) -> np.ndarray:
    try:
        matrix = np.array(embeddings, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"embeddings are not numeric ({exc})") from None
    if matrix.ndim != 2:
        raise ValueError(f"embeddings have shape {matrix.shape}: expected (N, dim)")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("embeddings contain NaN or infinite values: all entries must be finite")
    return matrix


def pairwise_cosine_distances(embeddings: Any, epsilon: float = 1e-8) -> np.ndarray:
    """Return the (N, N) matrix of cosine distances ``1 - cos`` between rows.

    Rows are L2-normalised (norms below ``epsilon`` are raised to it), the
    cosine similarity is clipped to [-1, 1] and the diagonal is 0. Distances
    lie in [0, 2].

    Args:
        embeddings: Array of shape (N, dim), finite.
        epsilon: Norm floor, > 0.

    Raises:
        ValueError: If the array is not 2-D and finite.
    """
    matrix = _embedding_matrix(embeddings)
    epsilon = _check_positive("epsilon", epsilon)
    norms = np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), epsilon)
    unit = matrix / norms
    similarity = np.clip(unit @ unit.T, -1.0, 1.0)
    distances = 1.0 - similarity
    distances = 0.5 * (distances + distances.T)  # remove rounding asymmetry
    np.fill_diagonal(distances, 0.0)
    return distances


def diversity_score(
    embeddings: Any, *, aggregation: str = "mean", epsilon: float = 1e-8
) -> float:
    """Return one diversity number from agents' embeddings.

    Reduces the pairwise cosine distances over the pairs i < j.

    Args:
        embeddings: Array of shape (N, dim).
        aggregation: ``"mean"``, ``"min"`` (the closest pair) or ``"median"``.
        epsilon: Norm floor, > 0.

    Returns:
        The score (0.0 when N <= 1): 0 for identical behaviour, up to 2.

    Raises:
        ValueError: If ``aggregation`` is unknown or the embeddings are invalid.
    """
    aggregation = _check_aggregation(aggregation)
    distances = pairwise_cosine_distances(embeddings, epsilon)
    n = distances.shape[0]
    if n <= 1:
        return 0.0
    upper = distances[np.triu_indices(n, k=1)]
    reducer = {"mean": np.mean, "min": np.min, "median": np.median}[aggregation]
    return float(reducer(upper))


class DiversityTracker:
    """Keeps the latest embedding of each agent and scores the league's diversity.

    Args:
        n_action_bins: Histogram bins per action dimension, >= 1.
        n_pos_bins: Heatmap bins per axis, >= 1.
        aggregation: ``"mean"``, ``"min"`` or ``"median"``.

    Raises:
        ValueError: If a parameter is invalid.
    """

    def __init__(
        self, n_action_bins: int = 8, n_pos_bins: int = 4, aggregation: str = "mean"
    ) -> None:
        self.n_action_bins = _check_int("n_action_bins", n_action_bins, 1)
        self.n_pos_bins = _check_int("n_pos_bins", n_pos_bins, 1)
        self.aggregation = _check_aggregation(aggregation)
        self._embeddings: dict[str, np.ndarray] = {}

    def _store(self, agent_id: str, embedding: np.ndarray) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise ValueError(f"agent_id={agent_id!r} is invalid: expected a non-empty string")
        # All stored embeddings share one length, so comparing with any other suffices.
        other = next((k for k in self._embeddings if k != agent_id), None)
        if other is not None and self._embeddings[other].shape != embedding.shape:
            raise ValueError(
                f"embedding of {agent_id!r} has {embedding.size} numbers but {other!r}'s has "
                f"{self._embeddings[other].size}: all agents need the same action_dim and bins"
            )
        self._embeddings[agent_id] = embedding

    def update(self, agent_id: str, traj: TrajectoryBatch) -> np.ndarray:
        """Embed a trajectory and make it ``agent_id``'s current embedding.

        Returns:
            The embedding.

        Raises:
            ValueError: If ``traj.agent_id`` is set and differs from
                ``agent_id``, or the embedding length differs from the others'.
        """
        if not isinstance(traj, TrajectoryBatch):
            raise TypeError(f"traj has type {type(traj).__name__}: expected a TrajectoryBatch")
        if traj.agent_id is not None and traj.agent_id != agent_id:
            raise ValueError(
                f"trajectory belongs to agent {traj.agent_id!r} but was given for {agent_id!r}"
            )
        embedding = embed_trajectory(traj, self.n_action_bins, self.n_pos_bins)
        self._store(agent_id, embedding)
        return embedding

    def update_embedding(self, agent_id: str, embedding: Any) -> None:
        """Set ``agent_id``'s embedding directly (1-D, finite).

        Raises:
            ValueError: If the embedding is not 1-D and finite or its length
                differs from the others'.
        """
        vector = np.array(embedding, dtype=np.float64)
        if vector.ndim != 1 or vector.size == 0 or not np.all(np.isfinite(vector)):
            raise ValueError(
                f"embedding for {agent_id!r} has shape {vector.shape}: expected a non-empty "
                "finite 1-D array"
            )
        self._store(agent_id, vector)

    def remove(self, agent_id: str) -> None:
        """Forget an agent.

        Raises:
            KeyError: If the agent is not tracked.
        """
        try:
            del self._embeddings[agent_id]
        except KeyError:
            raise KeyError(f"agent_id={agent_id!r} is not tracked") from None

    def clear(self) -> None:
        """Forget all agents."""
        self._embeddings.clear()

    @property
    def agent_ids(self) -> list[str]:
        """Tracked agent ids, in the order they were first added."""
        return list(self._embeddings)

    @property
    def pool_size(self) -> int:
        """Number of tracked agents."""
        return len(self._embeddings)

    def embedding(self, agent_id: str) -> np.ndarray:
        """Return a copy of an agent's embedding.

        Raises:
            KeyError: If the agent is not tracked.
        """
        if agent_id not in self._embeddings:
            raise KeyError(f"agent_id={agent_id!r} is not tracked")
        return self._embeddings[agent_id].copy()

    def embeddings_matrix(self, agent_ids: list[str] | None = None) -> np.ndarray:
        """Return the embeddings of the given (default: all) agents as an (N, dim) array.

        Raises:
            KeyError: If an id is not tracked.
        """
        ids = self.agent_ids if agent_ids is None else list(agent_ids)
        missing = [a for a in ids if a not in self._embeddings]
        if missing:
            raise KeyError(f"agent ids {missing} are not tracked")
        if not ids:
            return np.zeros((0, 0))
        return np.stack([self._embeddings[a] for a in ids])

    def pairwise_distances(self, agent_ids: list[str] | None = None) -> np.ndarray:
        """Return the cosine distance matrix of the given (default: all) agents."""
        return pairwise_cosine_distances(self.embeddings_matrix(agent_ids))

    def diversity_score(self, agent_ids: list[str] | None = None) -> float:
        """Return the league diversity score (0.0 with fewer than two agents)."""
        ids = self.agent_ids if agent_ids is None else list(agent_ids)
        if len(ids) < 2:
            self.embeddings_matrix(ids)  # still reject unknown ids
            return 0.0
        return diversity_score(self.embeddings_matrix(ids), aggregation=self.aggregation)
