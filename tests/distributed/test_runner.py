"""DistributedRolloutRunner on a real local Ray cluster (REFERENCE §I.7)."""

from __future__ import annotations

import threading
import time

import pytest

from envs.remote_multi_battalion_env import MultiBattalionBatchEnv
from tests.distributed.helpers import FAST, played, small_policy
from tests.fresh import run_python
from training.league.distributed_runner import (
    CONFIG_FILE,
    DistributedRolloutRunner,
    RolloutResult,
    main,
    same_episode,
)
from training.mappo.battles import PolicyCommander

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LONG = dict(n_blue=2, n_red=2, max_steps=500)
"""Battles on the default map: random play lasts the full 500 steps."""


def sequential(n: int, base_seed: int, blue=None, red=None, env_kwargs=FAST) -> list[dict]:
    """The episodes a collection should give, played here one by one."""
    env = MultiBattalionBatchEnv(**env_kwargs)
    return [env.run_episodes([base_seed + i], blue, red)[0] for i in range(n)]


def test_make_remote_envs_needs_ray_initialised() -> None:
    code = ("from training.league.distributed_runner import make_remote_envs\n"
            "try:\n"
            "    make_remote_envs(1)\n"
            "except RuntimeError as error:\n"
            "    print(error)\n")
    assert "Ray initialised" in run_python(["-c", code], timeout=120)


@pytest.fixture(scope="module")
def runner(ray_cluster):
    """Two workers on short battles, shared by the tests that only collect (each worker
    started is a process importing torch and the simulator)."""
    with DistributedRolloutRunner(2, FAST) as shared:
        yield shared


def test_episode_i_is_seed_base_plus_i_on_worker_i_mod_w(runner) -> None:
    results = runner.collect_rollouts(7, base_seed=11, metadata={"run": "a"})
    elapsed = runner._last_collect_elapsed_sec
    assert runner.group.replacements == 0
    assert [r.worker_id for r in results] == [i % 2 for i in range(7)]
    assert [r.seed for r in results] == list(range(11, 18))
    assert all(r.metadata == {"run": "a"} for r in results)
    assert results[0].metadata is not results[1].metadata
    assert all(r.observations == [] and r.elapsed_sec > 0 for r in results)
    expected = sequential(7, 11)
    assert all(same_episode(r, e) for r, e in zip(results, expected, strict=True))
    assert elapsed > 0
    assert DistributedRolloutRunner.mean_episode_length(results) == pytest.approx(
        sum(e["steps"] for e in expected) / 7)


def test_policies_play_as_they_do_in_one_process(ray_cluster, runner, monkeypatch) -> None:
    ray = ray_cluster
    blue, red = small_policy(4), small_policy(5)
    puts = []
    real_put = ray.put
    monkeypatch.setattr(ray, "put", lambda value, **kw: puts.append(value) or real_put(value,
                                                                                        **kw))
    against_level = runner.collect_rollouts(6, 100, policy=blue, opponent=5)
    assert len(puts) == 1 and isinstance(puts[0], PolicyCommander)  # weights sent once
    both = runner.collect_rollouts(6, 100, policy=blue, opponent=red, deterministic=True,
                                   record_observations=True)
    assert len(puts) == 3
    expected = sequential(6, 100, PolicyCommander(blue), 5)
    assert all(same_episode(r, e) for r, e in zip(against_level, expected, strict=True))
    expected = sequential(6, 100, PolicyCommander(blue, True), PolicyCommander(red, True))
    assert all(same_episode(r, e) for r, e in zip(both, expected, strict=True))
    assert [len(r.observations) for r in both] == [e["steps"] for e in expected]


def test_a_killed_worker_is_replaced_and_nothing_is_lost_or_counted_twice(ray_cluster) -> None:
    ray = ray_cluster
    n = 48
    with DistributedRolloutRunner(2, LONG) as runner:
        reference = runner.collect_rollouts(n, 7)
        killed = []

        # Kill worker 0 as soon as it holds a job of the same collection once more. Waiting
        # a share of an earlier collection's time first made the test race the clock: on a
        # loaded machine the collection sometimes ended before the kill.
        def kill_worker_0() -> None:
            deadline = time.monotonic() + 60
            while 0 not in runner.group.in_flight and time.monotonic() < deadline:
                time.sleep(0.0005)
            if 0 in runner.group.in_flight:
                killed.append(runner.group.actors[0])
                ray.kill(runner.group.actors[0])

        killer = threading.Thread(target=kill_worker_0)
        killer.start()
        results = runner.collect_rollouts(n, 7)
        killer.join()
        assert killed, "the collection ended before the worker could be killed"
        assert runner.group.replacements == 1
        assert runner.group.actors[0] is not killed[0]
    assert [r.seed for r in results] == list(range(7, 7 + n))
    assert [played(r) for r in results] == [played(r) for r in reference]


def test_a_late_worker_is_named(ray_cluster) -> None:
    with DistributedRolloutRunner(2, LONG, timeout_s=0.2) as runner:
        with pytest.raises(TimeoutError, match=r"rollout worker \[0(, 1)?\] gave no answer "
                                               r"to rollouts within 0.2 s"):
            runner.collect_rollouts(40, 0)


def test_async_collection_gives_the_same_results(ray_cluster, runner) -> None:
    ray = ray_cluster
    refs = runner.collect_rollouts_async(5, 3, {"k": 1}, opponent=2)
    assert len(refs) == 2 and all(isinstance(ref, ray.ObjectRef) for ref in refs)
    results = runner.gather(ray.get(refs))
    again = runner.collect_rollouts(5, 3, {"k": 1}, opponent=2)
    assert [played(r) for r in results] == [played(r) for r in again]
    # Fewer episodes than workers: the idle worker gets no job.
    refs = runner.collect_rollouts_async(1, 0)
    assert len(refs) == 1
    runner.gather(ray.get(refs))


def test_bad_arguments_are_named(ray_cluster) -> None:
    with pytest.raises(ValueError, match="num_workers"):
        DistributedRolloutRunner(0)
    with pytest.raises(ValueError, match="num_cpus_per_worker"):
        DistributedRolloutRunner(1, num_cpus_per_worker=0)
    with pytest.raises(ValueError, match="env_kwargs key 'n_battle'"):
        DistributedRolloutRunner(1, {"n_battle": 3})
    with pytest.raises(ValueError, match="max_steps"):
        DistributedRolloutRunner(1, {"max_steps": 0})
    with pytest.raises(ValueError, match="the Ray cluster has 4 CPUs"):
        DistributedRolloutRunner(5)
    with DistributedRolloutRunner(1, FAST) as runner:
        for kwargs, error, pattern in (
                (dict(n_episodes=0), ValueError, "n_episodes"),
                (dict(n_episodes=2, base_seed=-1), ValueError, "base_seed"),
                (dict(n_episodes=2, base_seed=None), ValueError, "base_seed"),
                (dict(n_episodes=2, metadata=[1]), ValueError, "metadata"),
                (dict(n_episodes=2, opponent=6), ValueError, "opponent"),
                (dict(n_episodes=2, policy=3), TypeError, "policy"),
                (dict(n_episodes=2, opponent="l5"), TypeError, "opponent"),
                (dict(n_episodes=2, deterministic="yes"), ValueError, "deterministic")):
            with pytest.raises(error, match=pattern):
                runner.collect_rollouts(**kwargs)
        runner.shutdown()
        runner.shutdown()  # twice is fine
        with pytest.raises(RuntimeError, match="shut down"):
            runner.collect_rollouts(1)


def test_summaries() -> None:
    def result(steps, won, elapsed):
        return RolloutResult(0, steps, 0.0, {}, won, [], elapsed)

    results = [result(100, True, 1.0), result(300, False, 3.0), result(200, True, 1.0)]
    assert DistributedRolloutRunner.steps_per_second(results) == pytest.approx(120.0)
    assert DistributedRolloutRunner.steps_per_second(results, 2.0) == pytest.approx(300.0)
    assert DistributedRolloutRunner.win_rate(results) == pytest.approx(2 / 3)
    assert DistributedRolloutRunner.mean_episode_length(results) == pytest.approx(200.0)
    assert DistributedRolloutRunner.win_rate([]) == 0.0
    assert DistributedRolloutRunner.mean_episode_length([]) == 0.0
    assert DistributedRolloutRunner.steps_per_second([]) == 0.0
    assert result(1, True, 0.0).metadata == {}


def test_the_command_line_joins_a_running_cluster(ray_cluster, capsys) -> None:
    # Ray is up (the fixture): the commands join it instead of starting their own.
    assert main(["benchmark", "--config", str(CONFIG_FILE), "--ci", "--max-steps", "40"]) == 0
    out = capsys.readouterr().out
    assert "4 episodes of 2v2 (seeds 42..45)" in out and "2 workers" in out
    assert "target 3x" in out and "the same episodes both ways: yes" in out
    assert main(["collect", "--workers", "2", "--episodes", "3", "--opponent", "5",
                 "--max-steps", "30", "--n-blue", "1", "--n-red", "1"]) == 0
    out = capsys.readouterr().out
    assert "3 episodes of 1v1 on 2 workers" in out and "Red scripted level 5" in out
    assert "mean length      30.0" in out
