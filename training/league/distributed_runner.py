"""Whole episodes on Ray: the reference API's distributed rollout runner (REFERENCE §I.7).

:class:`DistributedRolloutRunner` is a face over the project's one Ray stack
(:mod:`envs.remote`): it keeps a :class:`~envs.remote.workers.WorkerGroup` of
``num_workers`` battle workers spread over the cluster's nodes. Episode ``i`` of a
collection has seed ``base_seed + i`` and belongs to worker ``i mod num_workers``
(:func:`~envs.remote.workers.deal`); each worker plays all its episodes as one batch in
one call. Blue can be a MAPPO policy, whose weights travel to the workers once per
collection; a worker that dies is replaced and its episodes played again from their
seeds. :func:`benchmark` compares the runner with the same episodes played in one
process (``python -m training.league.distributed_runner benchmark --workers 4``; settings
in ``configs/distributed/ray_cluster.yaml``). Ray is an optional extra
(``pip install -e ".[distributed]"``): this module imports without it and says how to
install it when a runner is made. ``docs/distributed.md`` has the guide.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import numbers
import os
import sys
import textwrap
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from envs.battles.multi_observation import MAX_TEAM_SIZE
from envs.remote.batch_env import EPISODE_KEYS, MultiBattalionBatchEnv
from envs.remote.battles import BattleWorker, check_env_kwargs, make_remote_envs
from envs.remote.cluster import connect, import_ray
from envs.remote.workers import Job, WorkerGroup, deal, gather, workers_for_cluster
from envs.sim.constants import VISIBILITY_RADIUS
from envs.sim.validation import (
    check_bool,
    check_int,
    check_non_negative,
    check_positive,
    check_scripted_level,
    check_seed,
    short_repr,
)
from storage.files import MAX_JSON_BYTES, loads_yaml, read_regular_file
from training.common.setting_groups import BattlefieldSettings, DistributedSettings
from training.common.settings import (
    CONFIG_DIR,
    Settings,
    non_negative_int,
    override,
    positive_int,
    setting,
)

logger = logging.getLogger(__name__)

CONFIG_FILE = CONFIG_DIR / "distributed" / "ray_cluster.yaml"
"""The cluster, runner and benchmark settings (:class:`RayClusterSettings`)."""


# --- results ---------------------------------------------------------------------------

@dataclass
class RolloutResult:
    """One episode played by a rollout worker.

    Attributes:
        worker_id: the worker that played it (episode ``i`` is worker ``i mod W``).
        episode_steps: steps played.
        total_reward: the sum of every agent's rewards (both sides).
        agent_rewards: each agent's summed reward.
        blue_won: the battle ended with Blue in the fight and no Red battalion.
        observations: per step, the observation dict its orders were given on (empty
            unless asked for: ``record_observations=True``).
        elapsed_sec: the episode's share of its worker's time (the worker's batch time
            split in proportion to the episodes' steps).
        metadata: a copy of the collection's metadata.
        seed: the episode's seed (``base_seed + i``).
    """

    worker_id: int
    episode_steps: int
    total_reward: float
    agent_rewards: dict[str, float]
    blue_won: bool
    observations: list[dict[str, Any]]
    elapsed_sec: float
    metadata: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None


class EpisodeWorker(BattleWorker):
    """The runner's Ray actor: a :class:`~envs.remote.battles.BattleWorker` that hands
    back :class:`RolloutResult` objects (``env_kwargs`` as for ``MultiBattalionEnv``)."""

    def rollouts(self, worker_id: int, seeds: list[int], blue: Any, red: Any,
                 metadata: Mapping[str, Any], record_observations: bool) -> list[RolloutResult]:
        """Play one battle per seed as one batch (:meth:`play`); their results."""
        episodes, elapsed = self.play(seeds, blue, red, record_observations)
        return _results(worker_id, seeds, episodes, elapsed, metadata)


def _results(worker_id: int, seeds: Sequence[int], episodes: list[dict[str, Any]],
             elapsed: float, metadata: Mapping[str, Any]) -> list[RolloutResult]:
    total_steps = sum(episode["steps"] for episode in episodes)
    results = []
    for seed, episode in zip(seeds, episodes, strict=True):
        share = (episode["steps"] / total_steps if total_steps else 1 / len(episodes))
        results.append(RolloutResult(
            worker_id=worker_id, episode_steps=episode["steps"],
            total_reward=episode["total_reward"], agent_rewards=episode["agent_rewards"],
            blue_won=episode["blue_won"], observations=episode["observations"],
            elapsed_sec=elapsed * share, metadata=dict(metadata), seed=int(seed)))
    return results


# --- the runner ------------------------------------------------------------------------

def _commander(name: str, commander: Any, deterministic: bool, *,
               level_allowed: bool) -> Any:
    """What a worker needs for one side: None (random), a scripted level, or a batched
    commander (a policy wrapped in :class:`~training.mappo.battles.PolicyCommander`)."""
    if commander is None:
        return None
    if level_allowed and isinstance(commander, numbers.Integral) and not isinstance(commander,
                                                                                   bool):
        return check_scripted_level(name, commander)
    if callable(getattr(commander, "act", None)) or callable(getattr(commander, "predict", None)):
        from training.mappo.battles import PolicyCommander

        return PolicyCommander(commander, deterministic)
    if callable(commander):
        return commander
    levels = "a scripted level 1..5, " if level_allowed else ""
    raise TypeError(f"{name}={short_repr(commander)} is invalid: expected None (random orders), "
                    f"{levels}a MAPPOPolicy, or a batched commander (battles, units) -> orders")


class DistributedRolloutRunner:
    """Whole episodes on ``num_workers`` Ray actors (see the module).

    Args:
        num_workers: rollout workers (>= 1).
        env_kwargs: MultiBattalionEnv keyword arguments of every battle (None: 2v2 on
            the default map).
        num_cpus_per_worker: logical CPUs each worker reserves (> 0).
        ray_address: a running cluster to join; None starts a local one on loopback
            (with at least the CPUs the workers reserve) unless Ray is initialised.
        ray_init_kwargs: further ``ray.init`` arguments (``num_cpus`` sizes a local
            cluster).
        timeout_s: seconds a worker may take to answer one collection (> 0).

    Attributes:
        group: the workers (:class:`~envs.remote.workers.WorkerGroup`;
            ``group.replacements`` counts dead workers replaced).
        started_ray: whether this runner initialised Ray (:meth:`shutdown` leaves it
            running either way).

    Raises:
        ValueError: for a bad argument, or a cluster with fewer CPUs than the workers
            reserve.
        ImportError: if Ray is not installed.
    """

    def __init__(self, num_workers: int, env_kwargs: Mapping[str, Any] | None = None,
                 num_cpus_per_worker: float = 1.0, ray_address: str | None = None,
                 ray_init_kwargs: Mapping[str, Any] | None = None, *,
                 timeout_s: float = 600.0) -> None:
        self.num_workers = check_int("num_workers", num_workers, minimum=1)
        self.num_cpus_per_worker = check_positive("num_cpus_per_worker", num_cpus_per_worker)
        self.env_kwargs = check_env_kwargs(env_kwargs)
        if ray_init_kwargs is not None and not isinstance(ray_init_kwargs, Mapping):
            raise ValueError(f"ray_init_kwargs={short_repr(ray_init_kwargs)} is invalid: "
                             "expected None or a dict of ray.init arguments")
        init_kwargs = dict(ray_init_kwargs or {})
        num_cpus = init_kwargs.pop("num_cpus", None)
        self.started_ray = connect(ray_address, num_cpus=num_cpus,
                                   min_cpus=self.num_workers * self.num_cpus_per_worker,
                                   init_kwargs=init_kwargs)
        self.group: WorkerGroup | None = WorkerGroup(
            EpisodeWorker, self.num_workers, kwargs=self.env_kwargs,
            num_cpus=self.num_cpus_per_worker, timeout_s=timeout_s, name="rollout worker")
        self._last_collect_elapsed_sec = 0.0
        # A collection's time is then play only, not a fresh process's imports.
        self.group.wait_until_started()
        logger.info("%d rollout workers ready", self.num_workers)

    # --- collecting ----------------------------------------------------------------------

    def _jobs(self, n_episodes: Any, base_seed: Any, metadata: Any, policy: Any,
              opponent: Any, deterministic: Any, record_observations: Any
              ) -> tuple[list[Job], list[Any]]:
        """The collection's jobs (one per worker with episodes) and the object-store
        references they use (kept alive by the caller until the answers are in)."""
        if self.group is None:
            raise RuntimeError("the runner is shut down: make a new DistributedRolloutRunner")
        n_episodes = check_int("n_episodes", n_episodes, minimum=1)
        if base_seed is None:
            raise ValueError("base_seed=None is invalid: expected an integer seed >= 0")
        base_seed = check_seed("base_seed", base_seed, count=n_episodes)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValueError(f"metadata={short_repr(metadata)} is invalid: expected None or a "
                             "dict")
        deterministic = check_bool("deterministic", deterministic)
        record = check_bool("record_observations", record_observations)
        ray = import_ray()
        blue = _commander("policy", policy, deterministic, level_allowed=False)
        red = _commander("opponent", opponent, deterministic, level_allowed=True)
        # Weights go into the object store once; every worker reads the same copy.
        blue = ray.put(blue) if callable(blue) else blue
        red = ray.put(red) if callable(red) else red
        refs = [side for side in (blue, red) if isinstance(side, ray.ObjectRef)]
        shares = deal([base_seed + i for i in range(n_episodes)], self.num_workers)
        jobs = [Job(w, "rollouts", (w, share, blue, red, dict(metadata or {}), record))
                for w, share in enumerate(shares)]
        return jobs, refs

    def collect_rollouts(self, n_episodes: int, base_seed: int = 0,
                         metadata: Mapping[str, Any] | None = None, *, policy: Any = None,
                         opponent: Any = None, deterministic: bool = False,
                         record_observations: bool = False) -> list[RolloutResult]:
        """Play ``n_episodes`` battles on the workers; their results in episode order.

        Episode ``i`` has seed ``base_seed + i`` and is played by worker ``i mod
        num_workers``; each worker plays all its episodes as one batch. A worker that
        dies is replaced and its episodes played again (the same battles).

        Args:
            n_episodes: battles (>= 1).
            base_seed: the first episode's seed (>= 0).
            metadata: copied into every result.
            policy: Blue's commander: None (random orders), a
                :class:`~models.mappo_policy.MAPPOPolicy` (or a battalion commander with
                ``predict``), or a picklable batched commander.
            opponent: Red's: None (random), a scripted level 1..5, or as ``policy``.
            deterministic: policies act on their mean instead of sampling (both sides).
            record_observations: fill each result's ``observations``.

        Raises:
            ValueError, TypeError: for a bad argument (named).
            TimeoutError: a worker did not answer within ``timeout_s`` (it is named).
            ~envs.remote.workers.WorkerFailedError: a worker raised, or workers
                kept dying.
        """
        start = time.perf_counter()
        jobs, refs = self._jobs(n_episodes, base_seed, metadata, policy, opponent,
                                deterministic, record_observations)
        answers = self.group.run(jobs)
        del refs  # the answers are in: the weights may leave the object store
        results = self.gather(answers)
        self._last_collect_elapsed_sec = time.perf_counter() - start
        logger.info("collected %d episodes (%d env-steps) on %d workers in %.2f s",
                    len(results), sum(r.episode_steps for r in results), len(jobs),
                    self._last_collect_elapsed_sec)
        return results

    def collect_rollouts_async(self, n_episodes: int, base_seed: int = 0,
                               metadata: Mapping[str, Any] | None = None, *,
                               policy: Any = None, opponent: Any = None,
                               deterministic: bool = False,
                               record_observations: bool = False) -> list[Any]:
        """Start a collection; one ObjectRef per worker with episodes.

        Ref ``w`` resolves to the results of episodes ``w, w + W, w + 2W, ...``;
        ``runner.gather(ray.get(refs))`` puts them in episode order. There is no
        deadline and no replacement of dead workers here (:meth:`collect_rollouts`
        has both). Arguments as for :meth:`collect_rollouts`.
        """
        jobs, _ = self._jobs(n_episodes, base_seed, metadata, policy, opponent, deterministic,
                             record_observations)
        # Ray keeps a pending call's arguments (the policy's weights) alive.
        return [self.group.submit(job) for job in jobs]

    @staticmethod
    def gather(per_worker: Sequence[Sequence[RolloutResult]]) -> list[RolloutResult]:
        """Results of a collection in episode order from each worker's list (worker
        ``w`` played episodes ``w, w + W, ...``)."""
        return gather(per_worker)

    def worker_nodes(self) -> list[str]:
        """The Ray node id of each worker, by worker index."""
        if self.group is None:
            raise RuntimeError("the runner is shut down: make a new DistributedRolloutRunner")
        return self.group.run([Job(w, "node_id") for w in range(self.num_workers)])

    # --- summaries -----------------------------------------------------------------------

    @staticmethod
    def steps_per_second(results: Sequence[RolloutResult],
                         total_elapsed_sec: float | None = None) -> float:
        """Env-steps per second: over ``total_elapsed_sec`` (the wall time of a
        collection, e.g. ``runner._last_collect_elapsed_sec``) when given, else over
        the workers' summed time (the rate of one worker). 0.0 when no time passed."""
        steps = sum(result.episode_steps for result in results)
        if total_elapsed_sec is None:
            elapsed = sum(result.elapsed_sec for result in results)
        else:
            elapsed = check_non_negative("total_elapsed_sec", total_elapsed_sec)
        return steps / elapsed if elapsed > 0 else 0.0

    @staticmethod
    def win_rate(results: Sequence[RolloutResult]) -> float:
        """Share of the episodes Blue won (0.0 for none)."""
        return sum(result.blue_won for result in results) / len(results) if results else 0.0

    @staticmethod
    def mean_episode_length(results: Sequence[RolloutResult]) -> float:
        """Mean steps per episode (0.0 for none)."""
        if not results:
            return 0.0
        return sum(result.episode_steps for result in results) / len(results)

    # --- the end -------------------------------------------------------------------------

    def shutdown(self, kill_actors: bool = True) -> None:
        """Let the workers go (killed, or left to Ray when ``kill_actors`` is False).
        Ray itself stays up (``ray.shutdown()`` is the caller's)."""
        if self.group is not None:
            self.group.shutdown(kill=kill_actors)
            self.group = None

    def __enter__(self) -> DistributedRolloutRunner:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown()


# --- the benchmark ---------------------------------------------------------------------

@contextmanager
def _one_torch_thread():
    """Torch on one thread, as on each worker (restored afterwards)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def same_episode(result: RolloutResult, episode: Mapping[str, Any]) -> bool:
    """Whether a worker's ``result`` and an in-process ``episode`` dict are the same play."""
    return (result.episode_steps == episode["steps"]
            and result.total_reward == episode["total_reward"]
            and result.agent_rewards == episode["agent_rewards"]
            and result.blue_won == episode["blue_won"])


def benchmark(num_workers: int = 4, n_episodes: int = 16,
              env_kwargs: Mapping[str, Any] | None = None, seed: int = 0, *,
              policy: Any = None, num_cpus_per_worker: float = 1.0,
              ray_address: str | None = None,
              ray_init_kwargs: Mapping[str, Any] | None = None,
              timeout_s: float = 600.0) -> dict[str, Any]:
    """The same episodes played in this process and on Ray workers, timed.

    In-process, the episodes are played as the workers play them (worker ``w``'s
    share as one batch), one share after another; on Ray, the shares run side by
    side, timed after a warm-up collection of one episode per worker. The speedup is
    therefore what the workers' parallelism gives.

    Args:
        num_workers: Ray workers (>= 1).
        n_episodes: battles (>= 1); episode ``i`` has seed ``seed + i``.
        env_kwargs: MultiBattalionEnv keyword arguments (None: 2v2).
        seed: the first episode's seed.
        policy: Blue's MAPPO policy (None: random orders); Red plays random orders.
        num_cpus_per_worker: as for :class:`DistributedRolloutRunner`.
        ray_address: as for :class:`DistributedRolloutRunner`.
        ray_init_kwargs: as for :class:`DistributedRolloutRunner`.
        timeout_s: as for :class:`DistributedRolloutRunner`.

    Returns:
        ``{"single_steps_per_sec", "ray_steps_per_sec", "speedup", "total_steps",
        "single_elapsed_sec", "ray_elapsed_sec", "num_workers", "n_episodes",
        "results_match"}`` (``results_match``: every episode gave the same steps,
        rewards and winner both ways).
    """
    kwargs = check_env_kwargs({"n_blue": 2, "n_red": 2} if env_kwargs is None else env_kwargs)
    num_workers = check_int("num_workers", num_workers, minimum=1)
    n_episodes = check_int("n_episodes", n_episodes, minimum=1)
    seed = check_seed("seed", seed, count=n_episodes)
    if seed is None:
        raise ValueError("seed=None is invalid: expected an integer seed >= 0")
    blue = _commander("policy", policy, False, level_allowed=False)
    env = MultiBattalionBatchEnv(**kwargs)
    shares = deal([seed + i for i in range(n_episodes)], num_workers)
    with _one_torch_thread():
        start = time.perf_counter()
        episodes = gather([env.run_episodes(share, blue) for share in shares])
        single_elapsed = time.perf_counter() - start
    with DistributedRolloutRunner(num_workers, kwargs, num_cpus_per_worker,
                                  ray_address=ray_address,
                                  ray_init_kwargs=ray_init_kwargs,
                                  timeout_s=timeout_s) as runner:
        # One episode per worker first: the workers' imports and first calls (torch
        # loads when the policy arrives) are start-up, not play.
        runner.collect_rollouts(num_workers, seed, policy=policy)
        results = runner.collect_rollouts(n_episodes, seed, policy=policy)
        ray_elapsed = runner._last_collect_elapsed_sec
    total_steps = sum(episode["steps"] for episode in episodes)
    single = total_steps / single_elapsed
    distributed = total_steps / ray_elapsed
    report = {"single_steps_per_sec": single, "ray_steps_per_sec": distributed,
              "speedup": distributed / single, "total_steps": total_steps,
              "single_elapsed_sec": single_elapsed, "ray_elapsed_sec": ray_elapsed,
              "num_workers": num_workers, "n_episodes": n_episodes,
              "results_match": all(same_episode(r, e) for r, e in
                                   zip(results, episodes, strict=True))}
    logger.info("benchmark: %s", report)
    return report


# --- settings and the command line -----------------------------------------------------

_team_size = partial(check_int, minimum=1, maximum=MAX_TEAM_SIZE)


def _cpu_only(name: str, value: Any) -> float:
    if check_non_negative(name, value) != 0:
        raise ValueError(f"{name}={value!r} is invalid: expected 0 (rollout workers run on "
                         "CPU)")
    return 0


@dataclass
class RayClusterSettings(Settings):
    """``configs/distributed/ray_cluster.yaml``: the cluster, the runner, the battles and
    the benchmark (REFERENCE §I.7)."""

    ray_address: str | None = override(DistributedSettings, "ray_address")
    ray_num_cpus: int | None = override(DistributedSettings, "ray_num_cpus")
    ray_num_gpus: float = setting(0, "GPUs of a local cluster.", check_non_negative,
                                  "ray.num_gpus")
    num_workers: int | None = override(DistributedSettings, "distributed_num_workers",
                                       default=4)
    num_cpus_per_worker: float = override(DistributedSettings,
                                          "distributed_num_cpus_per_worker")
    num_gpus_per_worker: float = setting(0, "GPUs each worker reserves (0: rollouts run on "
                                         "CPU).", _cpu_only, "distributed.num_gpus_per_worker")
    n_episodes_per_batch: int = setting(16, "Episodes a collection plays (the collect "
                                        "command).", positive_int,
                                        "distributed.n_episodes_per_batch")
    base_seed: int = setting(42, "Seed of a collection's first episode (episode i: base_seed "
                             "+ i).", non_negative_int, "distributed.base_seed")
    timeout_s: float = override(DistributedSettings, "distributed_timeout_s")
    n_blue: int = setting(2, f"Blue battalions (1-{MAX_TEAM_SIZE}).", _team_size, "env.n_blue")
    n_red: int = setting(2, f"Red battalions (1-{MAX_TEAM_SIZE}).", _team_size, "env.n_red")
    map_width: float = override(BattlefieldSettings, "map_width")
    map_height: float = override(BattlefieldSettings, "map_height")
    max_steps: int = override(BattlefieldSettings, "max_steps")
    visibility_radius: float = setting(VISIBILITY_RADIUS, "Metres a battalion sees (fog of "
                                       "war).", check_positive, "env.visibility_radius")
    benchmark_n_episodes: int = setting(32, "Episodes the benchmark plays.", positive_int,
                                        "benchmark.n_episodes")
    min_speedup_factor: float = setting(
        3.0, "The speedup of the Ray runner over one process that the benchmark should reach "
        "(with as many free cores as workers).", check_positive, "benchmark.min_speedup_factor")
    ci_num_workers: int = setting(2, "Workers of the --ci benchmark.", positive_int,
                                  "ci.num_workers")
    ci_n_episodes: int = setting(4, "Episodes of the --ci benchmark.", positive_int,
                                 "ci.n_episodes")
    ci_timeout_s: float = setting(300.0, "Seconds a worker may take in the --ci benchmark.",
                                  check_positive, "ci.timeout_s")

    def env_kwargs(self) -> dict[str, Any]:
        """The battles' MultiBattalionEnv keyword arguments."""
        return {"n_blue": self.n_blue, "n_red": self.n_red, "map_width": self.map_width,
                "map_height": self.map_height, "max_steps": self.max_steps,
                "visibility_radius": self.visibility_radius}

    def ray_init_kwargs(self) -> dict[str, Any]:
        """``ray.init`` arguments of a local cluster (none to join one)."""
        if self.ray_address is not None:
            return {}
        kwargs: dict[str, Any] = {"num_gpus": self.ray_num_gpus}
        if self.ray_num_cpus is not None:
            kwargs["num_cpus"] = self.ray_num_cpus
        return kwargs



CONFIG_HEADER = """\
Ray rollouts: the cluster, the runner's workers, the battles and the benchmark.
  python -m training.league.distributed_runner benchmark \\
      --config configs/distributed/ray_cluster.yaml
Made from the declarations in training/league/distributed_runner.py
(RayClusterSettings); this rewrites it:
  python -c "import training.league.distributed_runner as d; d.write_config()"
"""


def config_text() -> str:
    """The text of :data:`CONFIG_FILE`: every setting under its section, its doc above it."""
    lines = [f"# {line}".rstrip() for line in CONFIG_HEADER.strip().splitlines()]
    section = None
    for spec in dataclasses.fields(RayClusterSettings):
        where, key = spec.metadata["yaml"].split(".")
        if where != section:
            lines += ["", f"{where}:"]
            section = where
        lines += textwrap.wrap(spec.metadata["doc"], 96, initial_indent="  # ",
                               subsequent_indent="  # ")
        value = yaml.safe_dump({key: spec.default}, default_flow_style=False, sort_keys=False)
        lines += ["  " + line for line in value.splitlines()]
    return "\n".join(lines) + "\n"


def write_config() -> Path:
    """Write :func:`config_text` to :data:`CONFIG_FILE`; returns its path."""
    CONFIG_FILE.parent.mkdir(parents=True, exist_ok=True)
    CONFIG_FILE.write_text(config_text(), encoding="utf-8")
    return CONFIG_FILE


def load_settings(path: str | os.PathLike[str] | None = None) -> RayClusterSettings:
    """The settings of a YAML file laid out like ``configs/distributed/ray_cluster.yaml``
    (None: the declared defaults).

    Raises:
        FileNotFoundError: if the file does not exist.
        ValueError: for a file that is not a mapping, an unknown key or a bad value.
    """
    if path is None:
        return RayClusterSettings()
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config file {path} does not exist")
    # A regular file (a folder or a FIFO is refused, never read) of bounded size, nested
    # at most MAX_NESTING deep; else a ValueError naming the file.
    nested = loads_yaml(read_regular_file(path, MAX_JSON_BYTES, f"config file {path}"),
                        f"config file {path}")
    if not isinstance(nested, Mapping):
        raise ValueError(f"config file {path} is invalid: expected a mapping of sections")
    known = {key.split(".")[0] for key in RayClusterSettings.yaml_keys().values()}
    for section in nested:
        if section not in known:
            raise ValueError(f"config file {path}: unknown section {section!r}; expected "
                             f"some of {', '.join(sorted(known))}")
    try:
        return RayClusterSettings.from_nested(nested)
    except ValueError as error:
        raise ValueError(f"config file {path}: {error}") from error


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.league.distributed_runner",
        description="Rollouts on Ray: time the runner against one process (benchmark), or "
                    "play a collection and summarise it (collect). Settings come from "
                    "--config (default: the declared ones, as in "
                    "configs/distributed/ray_cluster.yaml); options override them.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, summary in (("benchmark", "the same random-play episodes in one process and "
                                        "on Ray workers, timed"),
                          ("collect", "one collection on Ray, summarised")):
        command = commands.add_parser(name, help=summary, description=summary)
        command.add_argument("--config", type=Path, default=None,
                             help="a YAML file like configs/distributed/ray_cluster.yaml")
        command.add_argument("--workers", type=int, help="rollout workers")
        command.add_argument("--episodes", type=int, help="episodes to play")
        command.add_argument("--n-blue", type=int, help="Blue battalions")
        command.add_argument("--n-red", type=int, help="Red battalions")
        command.add_argument("--max-steps", type=int, help="steps before a draw")
        command.add_argument("--seed", type=int, help="seed of the first episode")
        command.add_argument("--address", help="a running Ray cluster to join")
        command.add_argument("--timeout", type=float, help="seconds a worker may take")
        if name == "benchmark":
            command.add_argument("--ci", action="store_true",
                                 help="the config's ci workers, episodes and timeout")
        else:
            command.add_argument("--opponent", type=int, default=None,
                                 help="Red's scripted level 1..5 (default: random orders)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module); returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        settings = load_settings(args.config)
        changes = {"n_blue": args.n_blue, "n_red": args.n_red, "max_steps": args.max_steps,
                   "base_seed": args.seed, "ray_address": args.address}
        if args.command == "benchmark" and args.ci:
            changes.update(num_workers=settings.ci_num_workers,
                           benchmark_n_episodes=settings.ci_n_episodes,
                           timeout_s=settings.ci_timeout_s)
        episodes = ("benchmark_n_episodes" if args.command == "benchmark"
                    else "n_episodes_per_batch")
        for key, value in (("num_workers", args.workers), ("timeout_s", args.timeout),
                           (episodes, args.episodes)):
            if value is not None:
                changes[key] = value
        settings = settings.replace(**{k: v for k, v in changes.items() if v is not None})
        if args.command == "benchmark":
            return _benchmark_command(settings)
        return _collect_command(settings, args.opponent)
    except (FileNotFoundError, ValueError, TypeError) as error:
        parser.error(str(error))
    return 2  # pragma: no cover - parser.error exits


def _workers(settings: RayClusterSettings) -> int:
    """``distributed.num_workers``, or one per CPU of the cluster when it is null."""
    if settings.num_workers is not None:
        return settings.num_workers
    init_kwargs = settings.ray_init_kwargs()
    connect(settings.ray_address, num_cpus=init_kwargs.pop("num_cpus", None),
            init_kwargs=init_kwargs)
    return workers_for_cluster(settings.num_cpus_per_worker)


def _benchmark_command(settings: RayClusterSettings) -> int:
    n, workers = settings.benchmark_n_episodes, _workers(settings)
    print(f"Ray rollout benchmark: {n} episodes of {settings.n_blue}v{settings.n_red} "
          f"(seeds {settings.base_seed}..{settings.base_seed + n - 1}), random orders, "
          f"{workers} workers")
    report = benchmark(workers, n, settings.env_kwargs(), settings.base_seed,
                       num_cpus_per_worker=settings.num_cpus_per_worker,
                       ray_address=settings.ray_address,
                       ray_init_kwargs=settings.ray_init_kwargs(), timeout_s=settings.timeout_s)
    steps = report["total_steps"]
    print(f"  {'':<22}{'env-steps':>10}{'seconds':>10}{'env-steps/s':>13}")
    for label, elapsed in (("one process", report["single_elapsed_sec"]),
                           (f"Ray, {workers} workers", report["ray_elapsed_sec"])):
        print(f"  {label:<22}{steps:>10}{elapsed:>10.2f}{steps / elapsed:>13.0f}")
    target = settings.min_speedup_factor
    verdict = "met" if report["speedup"] >= target else "not met"
    print(f"  speedup {report['speedup']:.2f}x (target {target:g}x: {verdict}; "
          f"{os.cpu_count()} cores here)")
    print(f"  the same episodes both ways: {'yes' if report['results_match'] else 'NO'}")
    return 0 if report["results_match"] else 1


def _collect_command(settings: RayClusterSettings, opponent: int | None) -> int:
    if opponent is not None:
        check_scripted_level("--opponent", opponent)  # before Ray starts
    workers = _workers(settings)
    runner = DistributedRolloutRunner(workers, settings.env_kwargs(),
                                      settings.num_cpus_per_worker, settings.ray_address,
                                      settings.ray_init_kwargs(), timeout_s=settings.timeout_s)
    with runner:
        results = runner.collect_rollouts(settings.n_episodes_per_batch, settings.base_seed,
                                          opponent=opponent)
        elapsed = runner._last_collect_elapsed_sec
    red = "random orders" if opponent is None else f"scripted level {opponent}"
    print(f"{len(results)} episodes of {settings.n_blue}v{settings.n_red} on "
          f"{workers} workers: Blue random orders, Red {red}")
    print(f"  env-steps        {sum(r.episode_steps for r in results)}")
    print(f"  seconds          {elapsed:.2f}")
    print(f"  env-steps/s      {runner.steps_per_second(results, elapsed):.0f}")
    print(f"  mean length      {runner.mean_episode_length(results):.1f}")
    print(f"  Blue win rate    {runner.win_rate(results):.3f}")
    return 0


def __getattr__(name: str) -> Any:
    # Re-exported from envs.remote_multi_battalion_env, made on first use (needs Ray).
    if name == "RemoteMultiBattalionEnv":
        from envs import remote_multi_battalion_env

        return remote_multi_battalion_env.RemoteMultiBattalionEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


RemoteMultiBattalionEnv: Any
"""``ray.remote(MultiBattalionBatchEnv)`` (:mod:`envs.remote_multi_battalion_env`)."""

__all__ = ["CONFIG_FILE", "DistributedRolloutRunner", "EPISODE_KEYS", "RayClusterSettings",
           "RemoteMultiBattalionEnv", "RolloutResult", "EpisodeWorker", "benchmark",
           "config_text", "load_settings", "main", "make_remote_envs", "same_episode",
           "write_config"]

if __name__ == "__main__":
    # Run the module's importable copy, so that Ray workers find its classes by name.
    from training.league.distributed_runner import main as _main

    sys.exit(_main())
