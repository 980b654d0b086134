"""The runner on a cluster of two Ray nodes (both on this machine, on loopback): its
workers are spread over the nodes and play what one process plays."""

from __future__ import annotations

import pytest

from envs.remote.cluster import loopback_environment
from envs.remote_multi_battalion_env import MultiBattalionBatchEnv
from tests.distributed.helpers import FAST, small_policy
from training.league.distributed_runner import DistributedRolloutRunner, same_episode
from training.mappo.battles import PolicyCommander

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def two_nodes():
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    with loopback_environment():
        cluster = Cluster(initialize_head=True,
                          head_node_args={"num_cpus": 1, "include_dashboard": False})
        cluster.add_node(num_cpus=1)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_workers_spread_over_both_nodes_and_play_as_one_process(two_nodes) -> None:
    policy = small_policy(6)
    with DistributedRolloutRunner(2, FAST, ray_address=two_nodes.address) as runner:
        assert runner.started_ray  # it joined the cluster
        nodes = runner.worker_nodes()
        assert len(set(nodes)) == 2
        results = runner.collect_rollouts(6, 40, policy=policy, opponent=4)
    env = MultiBattalionBatchEnv(**FAST)
    expected = [env.run_episodes([40 + i], PolicyCommander(policy), 4)[0] for i in range(6)]
    assert [r.worker_id for r in results] == [0, 1] * 3
    assert all(same_episode(r, e) for r, e in zip(results, expected, strict=True))
