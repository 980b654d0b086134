"""Diversity: trajectory embeddings, cosine distances and the tracker."""

from __future__ import annotations

import numpy as np
import pytest

from training.league import (
    DiversityTracker,
    TrajectoryBatch,
    diversity_score,
    embed_trajectory,
    pairwise_cosine_distances,
)


def trajectory(kind: str, steps: int = 100, seed: int = 0, agent_id=None) -> TrajectoryBatch:
    """An 'advance' (strong actions, moving right) or 'hold' (idle in a corner) behaviour."""
    rng = np.random.default_rng(seed)
    if kind == "advance":
        actions = np.array([3.0, 0.5, -1.0]) + 0.1 * rng.standard_normal((steps, 3))
        x = np.linspace(0.1, 0.9, steps)
        positions = np.stack([x, 0.5 + 0.01 * rng.standard_normal(steps)], axis=1)
    else:
        actions = 0.1 * rng.standard_normal((steps, 3))
        positions = np.column_stack([np.full(steps, 0.05), np.full(steps, 0.95)])
    return TrajectoryBatch(actions=actions, positions=positions, agent_id=agent_id)


def test_embedding_layout_for_a_hand_made_trajectory() -> None:
    traj = TrajectoryBatch(
        actions=np.array([[-5.0, 0.0, 9.0], [4.9, -0.1, 1.0]]),
        positions=np.array([[0.0, 0.0], [1.0, 0.3]]),
    )
    raw_hist = np.zeros((3, 8))
    raw_hist[0, [0, 7]] = 0.5  # -5 -> first bin, 4.9 -> last bin
    raw_hist[1, [4, 3]] = 0.5  # 0.0 -> bin 4, -0.1 -> bin 3
    raw_hist[2, [7, 4]] = 0.5  # 9 clipped to 5 -> last bin, 1.0 -> bin 4
    heat = np.zeros((4, 4))
    heat[0, 0] = heat[3, 1] = 0.5  # x=1.0 -> last x bin, y=0.3 -> bin 1
    norms = np.linalg.norm([[-5.0, 0.0, 5.0], [4.9, -0.1, 1.0]], axis=1)
    stats = [norms.mean(), norms.std(), np.hypot(1.0, 0.3), 0.5]
    raw = np.concatenate([raw_hist.ravel(), heat.ravel(), stats])
    embedding = embed_trajectory(traj)
    assert embedding.shape == (44,)
    assert np.allclose(embedding, raw / np.linalg.norm(raw))


def test_single_step_statistics_and_dimension() -> None:
    traj = TrajectoryBatch(actions=np.zeros((1, 2)), positions=np.full((1, 2), 0.5))
    embedding = embed_trajectory(traj, n_action_bins=4, n_pos_bins=2)
    assert embedding.shape == (2 * 4 + 4 + 4,)
    assert np.linalg.norm(embedding) == pytest.approx(1.0)
    assert embedding[-2] == 0.0 and embedding[-1] > 0  # displacement 0, above-median 0.5


def test_identical_behaviour_scores_near_zero_and_different_behaviour_high() -> None:
    tracker = DiversityTracker()
    tracker.update("a", trajectory("advance", seed=1))
    tracker.update("b", trajectory("advance", seed=1))
    assert tracker.diversity_score() < 1e-9
    tracker.update("b", trajectory("advance", seed=2))  # same strategy, other noise
    same_strategy = tracker.diversity_score()
    assert same_strategy < 0.05
    tracker.update("c", trajectory("hold", seed=3))
    mixed = tracker.diversity_score(["a", "c"])
    assert mixed > 0.5 and mixed > 10 * same_strategy
    assert tracker.agent_ids == ["a", "b", "c"] and tracker.pool_size == 3


def test_pairwise_distances_and_aggregations() -> None:
    e = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0], [1.0, 0.0]])
    d = pairwise_cosine_distances(e)
    assert np.allclose(np.diag(d), 0.0) and np.allclose(d, d.T)
    assert d[0, 1] == pytest.approx(1.0) and d[0, 2] == pytest.approx(2.0)
    assert d[0, 3] == pytest.approx(0.0)
    upper = d[np.triu_indices(4, 1)]
    assert diversity_score(e) == pytest.approx(upper.mean())
    assert diversity_score(e, aggregation="min") == pytest.approx(0.0)
    assert diversity_score(e, aggregation="median") == pytest.approx(np.median(upper))
    assert diversity_score(e[:1]) == 0.0 and diversity_score(np.zeros((0, 2))) == 0.0
    assert pairwise_cosine_distances(np.zeros((2, 3)))[0, 1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="aggregation='max'.*mean"):
        diversity_score(e, aggregation="max")
    with pytest.raises(ValueError, match="finite"):
        pairwise_cosine_distances([[np.nan, 1.0]])


@pytest.mark.parametrize(
    ("actions", "positions", "match"),
    [
        (np.zeros(5), np.zeros((5, 2)), r"actions has shape \(5,\).*reshape"),
        (np.zeros((0, 3)), np.zeros((0, 2)), "T >= 1"),
        (np.zeros((5, 3)), np.zeros((5, 3)), r"positions has shape \(5, 3\)"),
        (np.zeros((5, 3)), np.zeros((4, 2)), "5 steps but positions have 4"),
        (np.full((2, 1), np.nan), np.zeros((2, 2)), "NaN"),
    ],
)
def test_trajectory_validation(actions, positions, match) -> None:
    with pytest.raises(ValueError, match=match):
        TrajectoryBatch(actions=actions, positions=positions)


def test_tracker_bookkeeping_and_validation() -> None:
    tracker = DiversityTracker(aggregation="min")
    assert tracker.diversity_score() == 0.0
    tracker.update("a", trajectory("advance"))
    assert tracker.diversity_score() == 0.0
    with pytest.raises(ValueError, match="belongs to agent 'x'"):
        tracker.update("a", trajectory("advance", agent_id="x"))
    with pytest.raises(ValueError, match="same action_dim"):
        tracker.update("b", TrajectoryBatch(np.zeros((3, 2)), np.zeros((3, 2))))
    tracker.update_embedding("b", -tracker.embedding("a"))
    assert tracker.pairwise_distances()[0, 1] == pytest.approx(2.0)
    with pytest.raises(KeyError, match="'zzz'"):
        tracker.diversity_score(["a", "zzz"])
    tracker.remove("a")
    with pytest.raises(KeyError):
        tracker.remove("a")
    tracker.clear()
    assert tracker.pool_size == 0 and tracker.embeddings_matrix().shape == (0, 0)
    with pytest.raises(ValueError, match="aggregation"):
        DiversityTracker(aggregation="sum")
    with pytest.raises(ValueError, match="n_action_bins=0"):
        embed_trajectory(trajectory("hold"), n_action_bins=0)
