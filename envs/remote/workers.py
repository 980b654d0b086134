"""Groups of Ray actors that answer in time and are replaced when they die, and the
dealing of seeds to them.

Every call a driver makes goes through :meth:`WorkerGroup.run`: jobs are submitted at
once, each answer is awaited with a deadline, and a job whose worker died (killed,
out of memory, its node lost) is run again on a fresh worker built with the same
arguments. Jobs must therefore be pure functions of their arguments, which is how the
rollout and episode jobs of this project are written (a battle is a function of its
seed and, mid-collection, of the state the driver sent). An exception raised by the
job itself is a bug, not a fault: it is raised again, naming the worker.

Whole battles are dealt to workers by :func:`deal` (item ``i`` to worker ``i mod W``,
the reference API's rule for episodes) and their answers put back in order by :func:`gather`.
A class becomes an actor class once, through :func:`remote_class`, so that
``RemoteMultiBattalionEnv`` and a group's workers of the same class are one class.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from envs.remote.cluster import import_ray
from envs.sim.validation import check_int, check_positive

logger = logging.getLogger(__name__)

T = TypeVar("T")

STARTUP_TIMEOUT_S = 120.0
"""Seconds a new worker may take to start (at least; a longer ``timeout_s`` counts): a
fresh process imports NumPy, Numba and the simulator before it answers."""

_REMOTE_CLASSES: dict[type, Any] = {}


def remote_class(actor_class: type) -> Any:
    """``ray.remote(actor_class)``, made once per class (the same object every call).

    Raises:
        ImportError: if Ray is not installed, saying how to install it.
    """
    remote = _REMOTE_CLASSES.get(actor_class)
    if remote is None:
        remote = _REMOTE_CLASSES[actor_class] = import_ray().remote(actor_class)
    return remote


def workers_for_cluster(num_cpus_per_worker: float) -> int:
    """How many workers of ``num_cpus_per_worker`` CPUs the connected cluster holds (at
    least one): the worker count a run asks for with ``num_workers`` null."""
    cpus = import_ray().cluster_resources().get("CPU", 1.0)
    return max(1, int(cpus // num_cpus_per_worker))


def deal(items: Sequence[T], n_workers: int) -> list[list[T]]:
    """``items`` dealt round the workers: worker ``w`` gets items ``w, w + W, w + 2W, ...``
    (``W = n_workers``); workers left without any are dropped from the end."""
    return [list(items[w::n_workers]) for w in range(min(n_workers, len(items)))]


def gather(per_worker: Sequence[Sequence[T]]) -> list[T]:
    """The inverse of :func:`deal`: every worker's answers back in the items' order."""
    n = sum(len(answers) for answers in per_worker)
    W = len(per_worker)
    return [per_worker[i % W][i // W] for i in range(n)]


@dataclass(frozen=True)
class Job:
    """One call: ``method(*args)`` on worker ``worker``."""

    worker: int
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


class WorkerFailedError(RuntimeError):
    """A job raised an exception on its worker (the worker and method are named)."""


class WorkerGroup:
    """``n_workers`` Ray actors of ``actor_class``, spread over the cluster's nodes.

    Args:
        actor_class: a plain class; each worker is ``ray.remote(actor_class)(*args, **kwargs)``.
        n_workers: how many (>= 1).
        args, kwargs: the constructor's arguments (also for replacements).
        num_cpus: logical CPUs each worker reserves (> 0).
        timeout_s: seconds a job may take, counted from its submission (> 0).
        max_replacements: dead workers replaced in the group's life before giving up.
        name: what a worker is called in messages ("rollout worker").

    Attributes:
        actors: the current actor handles, by worker index.
        replacements: dead workers replaced so far.
        in_flight: indices of the workers with a submitted, unanswered job.

    Raises:
        ValueError: for a bad count or time, or when the cluster has fewer CPUs than the
            workers reserve (they would wait forever).
    """

    def __init__(self, actor_class: type, n_workers: int, *, args: Sequence[Any] = (),
                 kwargs: Mapping[str, Any] | None = None, num_cpus: float = 1.0,
                 timeout_s: float = 600.0, max_replacements: int = 3,
                 name: str = "worker") -> None:
        ray = import_ray()
        self.n_workers = check_int("num_workers", n_workers, minimum=1)
        self.num_cpus = check_positive("num_cpus_per_worker", num_cpus)
        self.timeout_s = check_positive("timeout_s", timeout_s)
        self.max_replacements = check_int("max_replacements", max_replacements, minimum=0)
        self.name = name
        total = ray.cluster_resources().get("CPU", 0.0)
        if self.n_workers * self.num_cpus > total:
            raise ValueError(
                f"num_workers={self.n_workers} x num_cpus_per_worker={self.num_cpus:g} is "
                f"invalid: the Ray cluster has {total:g} CPUs; expected at most that many in all")
        self._remote = remote_class(actor_class)
        self._args, self._kwargs = tuple(args), dict(kwargs or {})
        self.actors = [self._start() for _ in range(self.n_workers)]
        self.replacements = 0
        self.in_flight: set[int] = set()

    def _start(self) -> Any:
        # SPREAD places workers on different nodes while there are free ones.
        return self._remote.options(num_cpus=self.num_cpus, scheduling_strategy="SPREAD",
                                    max_restarts=0).remote(*self._args, **self._kwargs)

    def wait_until_started(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Wait until every worker is up, allowing ``timeout_s`` (or the group's longer
        deadline) for a fresh process's imports, so that later calls time work only.
        Kills the workers if one does not start.

        Raises:
            TimeoutError, WorkerFailedError: as :meth:`run`.
        """
        deadline = self.timeout_s
        self.timeout_s = max(deadline, timeout_s)
        try:
            self.run([Job(w, "__ray_ready__") for w in range(self.n_workers)])
        except BaseException:
            self.shutdown()
            raise
        finally:
            self.timeout_s = deadline

    def submit(self, job: Job) -> Any:
        """Submit ``job`` to its worker; the ObjectRef of its answer (no fault handling:
        :meth:`run` is the call that waits, times out and re-runs)."""
        return getattr(self.actors[job.worker], job.method).remote(*job.args, **job.kwargs)

    def run(self, jobs: Sequence[Job]) -> list[Any]:
        """Run ``jobs`` concurrently; their answers in the order given.

        Raises:
            TimeoutError: a job was not answered within ``timeout_s`` (the worker and
                method are named).
            WorkerFailedError: a job raised (the worker's exception is chained), or
                workers kept dying after ``max_replacements`` replacements.
        """
        ray = import_ray()
        from ray.exceptions import ObjectLostError, RayActorError, RayTaskError

        answers: list[Any] = [None] * len(jobs)
        pending: dict[Any, tuple[int, Any, float]] = {}

        def submit(index: int) -> None:
            job = jobs[index]
            pending[self.submit(job)] = (index, self.actors[job.worker],
                                         time.monotonic() + self.timeout_s)
            self.in_flight.add(job.worker)

        for index in range(len(jobs)):
            submit(index)
        try:
            while pending:
                deadline = min(due for _, _, due in pending.values())
                ready, _ = ray.wait(list(pending), num_returns=1,
                                    timeout=max(0.0, deadline - time.monotonic()))
                if not ready:
                    late = sorted({(jobs[i].worker, jobs[i].method)
                                   for i, _, _ in pending.values()})
                    self._restart([worker for worker, _ in late])
                    raise TimeoutError(
                        f"{self.name} {[w for w, _ in late]} gave no answer to "
                        f"{', '.join(sorted({m for _, m in late}))} within {self.timeout_s:g} s "
                        "(distributed.timeout_s); is the cluster overloaded, or short of "
                        "the CPUs the workers reserve? (those workers were restarted)")
                ref = ready[0]
                index, actor, _ = pending.pop(ref)
                job = jobs[index]
                try:
                    answers[index] = ray.get(ref, timeout=self.timeout_s)
                except (RayActorError, ObjectLostError) as error:
                    self._replace(job.worker, actor, error)
                    submit(index)
                    continue
                except RayTaskError as error:
                    raise WorkerFailedError(f"{self.name} {job.worker} failed in "
                                            f"{job.method}: {error}") from error
                if not any(jobs[i].worker == job.worker for i, _, _ in pending.values()):
                    self.in_flight.discard(job.worker)
        finally:
            self.in_flight.clear()
        return answers

    def _restart(self, workers: list[int]) -> None:
        """Kill ``workers`` (still busy with late jobs) and start fresh ones, so the group
        stays usable after a timeout."""
        ray = import_ray()
        for worker in workers:
            ray.kill(self.actors[worker])
            self.actors[worker] = self._start()

    def _replace(self, worker: int, actor: Any, error: BaseException) -> None:
        """Start a fresh worker ``worker`` unless ``actor`` was already replaced."""
        if self.actors[worker] is not actor:
            return  # another of its jobs already reported the death
        if self.replacements >= self.max_replacements:
            raise WorkerFailedError(f"{self.name} {worker} died and {self.replacements} "
                                    "workers were already replaced; giving up") from error
        logger.warning("%s %d died (%s); starting a replacement and re-running its jobs",
                       self.name, worker, type(error).__name__)
        self.replacements += 1
        self.actors[worker] = self._start()

    def shutdown(self, kill: bool = True) -> None:
        """Kill the workers (or just drop them with ``kill=False``); Ray stays up."""
        if kill:
            ray = import_ray()
            for actor in self.actors:
                ray.kill(actor)
        self.actors = []


__all__ = ["STARTUP_TIMEOUT_S", "Job", "WorkerFailedError", "WorkerGroup", "deal", "gather",
           "remote_class", "workers_for_cluster"]
