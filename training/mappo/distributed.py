"""MAPPO's rollouts and evaluation matches on Ray workers.

:class:`RolloutWorkers` is what a trainer with ``distributed.enabled=true`` collects
through. Each rollout, the driver splits its battles into one part per worker
(:meth:`~training.mappo.rollout.TrainingBattles.split`), puts the learner's weights and
the dealt opponents' into the object store once, and each worker plays its part for
``n_steps`` with :func:`~training.mappo.rollout.collect`, the function a local run calls;
the parts come back and are joined (:func:`~training.mappo.rollout.join_rollouts`).
Sampling draws are keyed per battle and the networks' inference does not depend on the
batch, so the rollout equals, bit for bit, the one a local run collects
(``tests/distributed/test_mappo_distributed.py``). A job is a pure function of what the
driver sent, so a worker that dies mid-rollout is replaced and its part played again
(:class:`~envs.remote.workers.WorkerGroup`). ``docs/distributed.md`` has the guide.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from envs.remote.cluster import connect, disconnect, import_ray
from envs.remote.workers import Job, WorkerGroup, workers_for_cluster
from envs.sim.kernels import set_num_threads
from models.mappo_policy import MAPPOPolicy
from training.mappo.battles import PolicyCommander, play_team_battles
from training.mappo.config import MAPPOConfig
from training.mappo.rollout import Rollout, TrainingBattles, collect, join_rollouts

logger = logging.getLogger(__name__)


class RolloutWorker:
    """One Ray worker: plays rollout parts and match chunks it is sent (one torch thread,
    so that workers sharing a machine do not oversubscribe its cores)."""

    def __init__(self) -> None:
        torch.set_num_threads(1)
        set_num_threads(1)  # the simulator's threads too: the worker reserves one CPU

    def collect(self, part: TrainingBattles, n_steps: int, gamma: float,
                learner: PolicyCommander, *opponents: PolicyCommander,
                ) -> tuple[Rollout, TrainingBattles]:
        """``n_steps`` of ``part`` (whose dealt opponents are indices into ``opponents``);
        the rollout and the part as it stands after them."""
        # Arrays arrive as read-only views of the object store; the battles write theirs.
        part = copy.deepcopy(part)
        dealt = part.opponents
        part.opponents = [(opponents[index].policy, battles) for index, battles in dealt]
        rollout = collect(learner.policy, part, n_steps, gamma)
        part.opponents = dealt
        return rollout, part

    def play(self, blue: PolicyCommander, red: Any, n_episodes: int, seed: int,
             settings: Mapping[str, Any]) -> np.ndarray:
        """Outcomes of :func:`~training.mappo.battles.play_team_battles` (``red``: a
        scripted level or a PolicyCommander)."""
        opponent = red.policy if isinstance(red, PolicyCommander) else red
        return play_team_battles(blue.policy, opponent, n_episodes=n_episodes, seed=seed,
                                 **settings)


class RolloutWorkers:
    """The Ray workers of a MAPPO run (``config``'s ``distributed.*`` and ``ray.*``).

    Building it connects to ``ray.address`` or starts a local cluster on loopback
    (:func:`~envs.remote.cluster.connect`) and starts the workers;
    :meth:`close` kills them (and stops the cluster if it started it).

    Raises:
        ImportError: if Ray is not installed.
        ValueError: if the cluster has fewer CPUs than the workers reserve.
    """

    def __init__(self, config: MAPPOConfig) -> None:
        per_worker = config.distributed_num_cpus_per_worker
        wanted = config.distributed_num_workers
        self._started = connect(config.ray_address, num_cpus=config.ray_num_cpus,
                                min_cpus=(wanted or 1) * per_worker)
        if wanted is None:
            wanted = workers_for_cluster(per_worker)
        self.group = WorkerGroup(RolloutWorker, wanted, num_cpus=per_worker,
                                 timeout_s=config.distributed_timeout_s,
                                 name="rollout worker")
        logger.info("%d rollout workers of %g CPU", wanted, per_worker)

    @property
    def n_workers(self) -> int:
        return self.group.n_workers

    def collect(self, policy: MAPPOPolicy, battles: TrainingBattles, n_steps: int,
                gamma: float) -> Rollout:
        """What :func:`~training.mappo.rollout.collect` returns for the same arguments,
        collected on the workers; ``battles`` go on as they would locally."""
        ray = import_ray()
        parts = battles.split(min(self.n_workers, battles.n_battles))
        opponents = list({id(p): p for p, _ in battles.opponents}.values())
        index = {id(p): i for i, p in enumerate(opponents)}
        # Weights enter the object store once per rollout; every worker reads the same copy.
        learner = ray.put(PolicyCommander(policy))
        dealt = [ray.put(PolicyCommander(p)) for p in opponents]
        for part in parts:
            part.opponents = [(index[id(p)], rows) for p, rows in part.opponents]
        answers = self.group.run([Job(w, "collect", (part, n_steps, gamma, learner, *dealt))
                                  for w, part in enumerate(parts)])
        battles.join([part for _, part in answers])
        return join_rollouts([rollout for rollout, _ in answers])

    def play(self, policy: MAPPOPolicy, opponents: Mapping[str, Any], n_episodes: int,
             seed: int, **settings: Any) -> dict[str, np.ndarray]:
        """Each opponent's outcomes of
        :func:`~training.mappo.battles.play_team_battles` (``policy`` Blue, ``seed``,
        ``settings``), the episodes of every match split across the workers, all
        matches at once. Battle ``i`` has the outcome it has in one batch."""
        ray = import_ray()
        blue = ray.put(PolicyCommander(policy))
        chunks = [chunk for chunk in np.array_split(np.arange(n_episodes), self.n_workers)
                  if len(chunk)]
        jobs, owners = [], []
        for name, opponent in opponents.items():
            red = opponent if isinstance(opponent, (int, np.integer)) \
                else ray.put(PolicyCommander(opponent))
            for chunk in chunks:
                jobs.append(Job(len(jobs) % self.n_workers, "play",
                                (blue, red, len(chunk), seed + int(chunk[0]), dict(settings))))
                owners.append(name)
        answers = self.group.run(jobs)
        return {name: np.concatenate([a for a, owner in zip(answers, owners, strict=True)
                                      if owner == name]) for name in opponents}

    def close(self) -> None:
        """Kill the workers; stop Ray if this object started it."""
        self.group.shutdown()
        disconnect(self._started)


__all__ = ["RolloutWorker", "RolloutWorkers"]
