"""GPU probe: whole-loop training and simulator throughput on the CPU cores and the GPU.

One command that measures, on a machine lent for a few minutes, the table of
``docs/performance.md``'s "Whole-loop training speed".

Rows (``--rows`` picks groups; every row is its own Python process, so that Numba's and
torch's thread counts are fixed before either is imported, and a crash or a timeout
costs that row only, which then prints its error):

- ``mappo``: MAPPO on 2v2 battles, the whole loop (rollouts and updates, no warm start;
  evaluations, checkpoints and logs off), as ``training_throughput.py`` runs it: on the
  CPU with 128 battles and one torch thread, with 1,024 battles and every core as torch
  and Numba threads; on CUDA with 128, 1,024 and 4,096 battles (one torch thread, every
  core for the simulator). A rollout holds the default 8,192 env-steps whatever the
  battle count (the config's rule), so every row does the same updates per env-step.
- ``core``: the batched 2v2 battle core alone (``MultiBattalionBatch``, Blue random
  orders, scripted L5 Red, as ``sim_throughput.py`` steps it), 8,192 battles, on 1, 2,
  4, 8 and 16 Numba threads (capped at the usable cores); then the parallel
  efficiency from 2 to the most threads, (rate_N / rate_2) / (N / 2).
- ``duel``: ``BattalionVecEnv`` (batched duels, random actions against L5), 16,384
  battles, on 2 Numba threads and on every core.
- ``wfm1``: WFM-1's multi-task PPO with the default model (no warm start), battle
  steps/s on the CPU (every core) and on CUDA. Rollouts are 32 steps of the default 64
  battles instead of 512, with new scenarios every 16 rollouts, the default's rate per
  step, so a rollout and its update fit the row's window; the update's cost per sample
  is the default's.

Each training row runs one rollout and update as a warm-up (first calls, CUDA's
start-up), then times whole iterations for its window (at least one); the simulator
rows step a few times, then time steps for theirs. The kernels are compiled up front
(``python -m envs.precompile``: about two minutes of a cold cache's compiling, a few
seconds when warm). The rows' windows and a deadline for the whole probe (450 s) keep
it under eight minutes on a 16-core machine with one H200; rows past the deadline are
skipped, and those needing CUDA print "no GPU" on a machine without one. ``--tiny``
(windows of a fraction of a second, MAPPO rollouts of 2,048 env-steps, WFM-1's of 2
steps) checks in about a minute on two cores that every row runs. ``--json`` also
writes the results (replaced after every row, so a lease ending mid-probe keeps the
rows done).

Usage::

    python -m benchmarks.gpu_probe [--tiny] [--json PATH] [--rows mappo core duel wfm1]
        [--seconds S] [--deadline S] [--wait-policy ACTIVE|PASSIVE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks import argument_parser
from envs.sim.jit import WAIT_POLICY
from storage.files import atomic_write_text

ROOT = Path(__file__).resolve().parent.parent
"""The repository root: the rows' processes start there, so ``benchmarks`` imports."""

GROUPS = ("mappo", "core", "duel", "wfm1")
NO_GPU = "no GPU (torch.cuda.is_available() is False)"
RESULT_MARK = "GPU_PROBE_RESULT "
"""Prefix of the one stdout line a row's process answers with (trainers may print too)."""

MAPPO_BATTLES = {"cpu": (128, 1024), "cuda": (128, 1024, 4096)}
CORE_BATTLES = 8192
CORE_THREADS = (1, 2, 4, 8, 16)
DUEL_BATTLES = 16_384
DUEL_THREADS = 2
"""The duel's rows: this many Numba threads, and every core."""
MAPPO_ROLLOUT_STEPS = {False: None, True: 2048}
"""Env-steps per MAPPO rollout, full (None: the config's default, 8,192) and ``--tiny``."""
WFM1_STEPS = {False: 32, True: 2}
"""Steps of every battle per WFM-1 rollout (default 512), full and ``--tiny``."""
WFM1_BATTLES = 64
"""WFM-1's default ``n_envs`` (its rows check it)."""
SIM_WARM_STEPS = 3
"""Steps before a simulator row's window: the first starts OpenMP's threads."""


@dataclass(frozen=True)
class Budget:
    """Wall seconds timed per row of each group, what a row's process may take beyond
    its window (start-up, imports, building the battles, the warm-up), and the
    deadline of the whole probe."""

    seconds: dict[str, float]
    allowance: float
    deadline: float


FULL = Budget({"mappo": 10.0, "core": 4.0, "duel": 4.0, "wfm1": 20.0}, allowance=90.0,
              deadline=450.0)
TINY = Budget({"mappo": 0.5, "core": 0.3, "duel": 0.3, "wfm1": 0.5}, allowance=90.0,
              deadline=240.0)
PRECOMPILE_LIMIT = 300.0
"""Seconds the up-front compilation may take (a cold cache: about two minutes)."""
MIN_ROW_SECONDS = 15.0
"""A row is skipped when less than this is left before the deadline."""


@dataclass(frozen=True)
class Row:
    """One measurement: what, on how many battles, where, on how many threads."""

    id: str
    group: str
    what: str
    battles: int
    device: str
    torch_threads: int | None
    numba_threads: int

    @property
    def threads(self) -> str:
        numba = f"Numba {self.numba_threads}"
        return numba if self.torch_threads is None else f"torch {self.torch_threads}, {numba}"

    @property
    def unit(self) -> str:
        return "battle-steps/s" if self.group == "wfm1" else "env-steps/s"


def usable_cores() -> int:
    """Cores this process may run on (``os.cpu_count()`` or fewer under an affinity mask)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def thread_counts(counts: tuple[int, ...], cores: int) -> list[int]:
    """``counts`` capped at ``cores``, each once, in increasing order."""
    return sorted({min(count, cores) for count in counts})


def plan(groups: tuple[str, ...] | list[str], cores: int) -> list[Row]:
    """The rows of ``groups`` on a machine of ``cores`` usable cores, in running order."""
    rows: list[Row] = []
    if "mappo" in groups:
        what = "MAPPO 2v2 training (rollouts + updates)"
        for battles in MAPPO_BATTLES["cpu"]:
            # The smaller batch on one core; the larger one on every core, both for torch
            # (the update) and for Numba (1,024 battles step on every Numba thread).
            threads = 1 if battles == MAPPO_BATTLES["cpu"][0] else cores
            rows.append(Row(f"mappo-cpu-{battles}", "mappo", what, battles, "cpu", threads,
                            threads))
        for battles in MAPPO_BATTLES["cuda"]:
            rows.append(Row(f"mappo-cuda-{battles}", "mappo", what, battles, "cuda", 1, cores))
    if "core" in groups:
        for threads in thread_counts(CORE_THREADS, cores):
            rows.append(Row(f"core-{threads}", "core", "2v2 battle core (scripted Red)",
                            CORE_BATTLES, "cpu", None, threads))
    if "duel" in groups:
        for threads in thread_counts((DUEL_THREADS, cores), cores):
            rows.append(Row(f"duel-{threads}", "duel", "duel VecEnv (BattalionVecEnv)",
                            DUEL_BATTLES, "cpu", None, threads))
    if "wfm1" in groups:
        what = "WFM-1 training (default model)"
        rows.append(Row("wfm1-cpu", "wfm1", what, WFM1_BATTLES, "cpu", cores, cores))
        rows.append(Row("wfm1-cuda", "wfm1", what, WFM1_BATTLES, "cuda", 1, cores))
    return rows


def parallel_efficiency(rates: dict[int, float]) -> tuple[int, float] | None:
    """``(N, (rate_N / rate_2) / (N / 2))`` for the most threads N above 2 measured, from
    ``{threads: rate}``; None without a rate at 2 threads and one above."""
    above = [n for n in rates if n > 2]
    if 2 not in rates or not above:
        return None
    most = max(above)
    return most, (rates[most] / rates[2]) / (most / 2)


# --- the rows' processes ----------------------------------------------------------------------

def _train_loop(trainer: Any, seconds: float) -> dict[str, Any]:
    """Time whole rollout-and-update iterations of ``trainer`` (a MAPPO or WFM-1 trainer:
    ``collect_rollout``, ``learn_from``, ``rollout_steps``, ``device``) for ``seconds``,
    after one untimed iteration."""
    import torch

    device = trainer.device

    def sync() -> None:
        if device.type == "cuda":  # CUDA runs asynchronously: time the work, not its launch
            torch.cuda.synchronize(device)

    def iteration() -> tuple[float, float]:
        started = time.perf_counter()
        rollout = trainer.collect_rollout()
        sync()
        collected = time.perf_counter()
        trainer.learn_from(rollout)
        sync()
        return collected - started, time.perf_counter() - collected

    iteration()  # warm-up: first calls allocate, CUDA starts its libraries
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    count, rollout_seconds = 0, 0.0
    start = time.perf_counter()
    while count == 0 or time.perf_counter() - start < seconds:
        rollout_seconds += iteration()[0]
        count += 1
    elapsed = time.perf_counter() - start
    steps = count * trainer.rollout_steps
    note = (f"{count} rollout+update after 1 warm-up; rollouts alone "
            f"{steps / rollout_seconds:,.0f}/s; update {1 - rollout_seconds / elapsed:.0%} "
            "of the time")
    if device.type == "cuda":
        note += f"; peak GPU memory {torch.cuda.max_memory_allocated(device) / 2**30:.2f} GiB"
    return {"rate": steps / elapsed, "seconds": elapsed, "steps": steps, "note": note}


def _cuda_missing(device: str) -> bool:
    import torch

    return device == "cuda" and not torch.cuda.is_available()


def _mappo_cell(spec: dict[str, Any]) -> dict[str, Any]:
    if _cuda_missing(spec["device"]):
        return {"note": NO_GPU}
    from training.mappo.config import MAPPOConfig
    from training.mappo.trainer import MAPPOTrainer

    with tempfile.TemporaryDirectory(prefix="gpu_probe_") as folder:
        # The trainer alone (no hooks): no evaluation, checkpoint or log is written, and
        # total_timesteps only has to exceed a rollout. --tiny's rollouts are shorter.
        rollout_steps = spec["rollout_steps"]
        shorter = {} if rollout_steps is None else {"rollout_steps": rollout_steps}
        config = MAPPOConfig(
            **shorter, n_envs=spec["battles"], device=spec["device"],
            torch_threads=spec["torch_threads"], warm_start_doctrine=None,
            total_timesteps=10**9, enable_wandb=False, progress_bar=False,
            checkpoint_dir=f"{folder}/ck", log_dir=f"{folder}/logs",
            elo_registry_path=f"{folder}/elo.json")
        trainer = MAPPOTrainer(config)
        result = _train_loop(trainer, spec["seconds"])
    result["note"] = f"rollout {trainer.n_steps} steps x {config.n_envs}; " + result["note"]
    return result


def _wfm1_cell(spec: dict[str, Any]) -> dict[str, Any]:
    if _cuda_missing(spec["device"]):
        return {"note": NO_GPU}
    from training.wfm1.config import WFM1TrainConfig
    from training.wfm1.trainer import WFM1Trainer

    with tempfile.TemporaryDirectory(prefix="gpu_probe_") as folder:
        default = WFM1TrainConfig(checkpoint_dir=folder, log_dir=folder, enable_wandb=False)
        n_steps = spec["n_steps"]
        # Shorter rollouts than the default's, new scenarios as often per step.
        resample = max(1, default.n_steps * default.resample_every // n_steps)
        config = default.replace(
            device=spec["device"], torch_threads=spec["torch_threads"], warm_start_steps=0,
            n_steps=n_steps, resample_every=resample, total_timesteps=10**9, verbose=0,
            progress_bar=False)
        if config.n_envs != spec["battles"]:  # the table would name the wrong batch
            raise ValueError(f"WFM-1's default n_envs is {config.n_envs}, the probe's row says "
                             f"{spec['battles']}: update WFM1_BATTLES")
        trainer = WFM1Trainer(config)
        result = _train_loop(trainer, spec["seconds"])
    result["note"] = (f"rollout {n_steps} steps x {config.n_envs} (default {default.n_steps}), "
                      f"new scenarios every {resample}; " + result["note"])
    return result


def _time_steps(step, n_battles: int, seconds: float) -> dict[str, Any]:
    """``sim_throughput.time_calls`` on ``step`` (which steps ``n_battles`` battles once)
    after :data:`SIM_WARM_STEPS` steps, with the seconds and env-steps it timed."""
    import numba

    from benchmarks.sim_throughput import time_calls

    for _ in range(SIM_WARM_STEPS):
        step()
    calls = [0]

    def counted() -> int:
        calls[0] += 1
        return step()

    rate = time_calls(counted, seconds)
    steps = (calls[0] - 1) * n_battles  # time_calls's first call is outside its window
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel ran (a batch below PARALLEL_MIN_BATTLES)
        layer = "none started"
    return {"rate": rate, "seconds": steps / rate, "steps": steps,
            "note": f"{calls[0] - 1} steps after {SIM_WARM_STEPS + 1} warm-up; Numba "
                    f"{numba.get_num_threads()} threads, layer {layer}"}


def _core_cell(spec: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.sim_throughput import team_batch_stepper

    return _time_steps(team_batch_stepper(spec["battles"], 2, 2), spec["battles"],
                       spec["seconds"])


def _duel_cell(spec: dict[str, Any]) -> dict[str, Any]:
    from benchmarks.sim_throughput import RED_LEVEL, random_actions
    from envs.vec_env import BattalionVecEnv

    n = spec["battles"]
    env = BattalionVecEnv(n, curriculum_level=RED_LEVEL)  # L5, as time_vec's
    env.seed(0)
    env.reset()
    actions = random_actions(64, n, seed=1)
    given = [0]

    def step() -> int:
        env.step(actions[given[0] % len(actions)])
        given[0] += 1
        return n

    return _time_steps(step, n, spec["seconds"])


def _machine_cell(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    machine: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
                               "torch_cuda": torch.version.cuda}
    if machine["cuda"]:
        properties = torch.cuda.get_device_properties(0)
        machine.update(gpu=properties.name, gpu_memory_gib=properties.total_memory / 2**30,
                       gpu_count=torch.cuda.device_count())
    return machine


CELLS = {"mappo": _mappo_cell, "wfm1": _wfm1_cell, "core": _core_cell, "duel": _duel_cell,
         "machine": _machine_cell}


def cell_main(spec_json: str) -> None:
    """A row's process: run the cell ``spec_json`` names and print its result as one
    :data:`RESULT_MARK` line (an exception becomes the result's ``error``)."""
    spec = json.loads(spec_json)
    try:
        result = CELLS[spec["kind"]](spec)
    except Exception as error:  # the probe goes on: the row prints what went wrong
        traceback.print_exc()
        result = {"error": f"{type(error).__name__}: {error}"}
    print(RESULT_MARK + json.dumps(result), flush=True)


_CELL_COMMAND = "import sys; from benchmarks.gpu_probe import cell_main; cell_main(sys.argv[1])"


def run_cell(spec: dict[str, Any], numba_threads: int, timeout: float,
             wait_policy: str) -> dict[str, Any]:
    """Run a cell in a fresh Python process with ``numba_threads`` Numba threads; its
    result, or ``{"error": ...}`` when it crashed, timed out or answered nothing."""
    # The wait policy goes in the environment rather than relying on envs.sim.jit's
    # default: torch and Numba share one libgomp here, and torch imported first reads
    # the policy before the project's import sets it (Numba's idle threads then spin).
    env = {**os.environ, "NUMBA_NUM_THREADS": str(numba_threads), "OMP_WAIT_POLICY": wait_policy}
    try:
        done = subprocess.run([sys.executable, "-c", _CELL_COMMAND, json.dumps(spec)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit status {done.returncode}: {last}"}


# --- the probe -------------------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def describe_machine(wait_policy: str) -> dict[str, Any]:
    """The CPU, the cores, the memory, the versions, and the GPU (asked of torch in its
    own process, so that this one never starts CUDA)."""
    machine: dict[str, Any] = {
        "cpu": _cpu_model(), "cpu_count": os.cpu_count(), "cores": usable_cores(),
        "memory_gib": _memory_gib(), "python": platform.python_version(),
        "numba": _version("numba"), "numpy": _version("numpy"), "wait_policy": wait_policy}
    found = run_cell({"kind": "machine"}, 1, 120.0, wait_policy)
    if "error" in found:
        machine.update(torch=_version("torch"), cuda=None, cuda_error=found["error"])
    else:
        machine.update(found)
    return machine


def _header(machine: dict[str, Any]) -> list[str]:
    memory = machine["memory_gib"]
    lines = [f"CPU: {machine['cpu']}, {machine['cores']} usable cores "
             f"(os.cpu_count() {machine['cpu_count']})"
             + (f", {memory:.0f} GiB memory" if memory else "")]
    if machine.get("cuda"):
        lines.append(f"GPU: {machine['gpu']}, {machine['gpu_memory_gib']:.1f} GiB "
                     f"(CUDA {machine['torch_cuda']}, {machine['gpu_count']} device(s))")
    elif machine.get("cuda") is None:
        lines.append(f"GPU: unknown, torch failed: {machine.get('cuda_error')}")
    else:
        lines.append(f"GPU: {NO_GPU}")
    lines.append(f"python {machine['python']}, torch {machine['torch']}, numba "
                 f"{machine['numba']}, numpy {machine['numpy']}; "
                 f"OMP_WAIT_POLICY={machine['wait_policy']}")
    return lines


def precompile(timeout: float) -> dict[str, Any]:
    """``python -m envs.precompile`` (every kernel into the Numba cache, so that no row's
    process compiles): its seconds, or the error."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "envs.precompile"], cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": timeout, "error": f"timed out after {timeout:.0f} s"}
    seconds = time.perf_counter() - start
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"seconds": seconds, "error": f"exit status {done.returncode}: {last}"}
    return {"seconds": seconds, "error": None}


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def table_row(row: Row, result: dict[str, Any]) -> str:
    rate, seconds = result.get("rate"), result.get("seconds")
    note = result.get("note", "")
    if result.get("error"):
        note = f"error: {result['error']}" + (f"; {note}" if note else "")
    return (f"| {row.what} | {row.battles:,} | {row.device} | {row.threads} | "
            + ("—" if rate is None else f"{rate:,.0f}") + " | "
            + ("—" if seconds is None else f"{seconds:.1f}") + f" | {_cell(note)} |")


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected a positive number "
                                         "of seconds")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--tiny", action="store_true",
                        help="windows of a fraction of a second: checks that every row runs "
                             "(about a minute on two cores with a warm Numba cache)")
    parser.add_argument("--json", metavar="PATH", type=Path,
                        help="also write the results to PATH (replaced after every row)")
    parser.add_argument("--rows", nargs="+", choices=GROUPS, default=list(GROUPS),
                        metavar="GROUP",
                        help=f"groups of rows to run, of {', '.join(GROUPS)} (default: all)")
    parser.add_argument("--seconds", type=_positive_seconds,
                        help="timed window of every row (default: per group, "
                             + ", ".join(f"{g} {s:g} s" for g, s in FULL.seconds.items())
                             + "; with --tiny a fraction of a second)")
    parser.add_argument("--deadline", type=_positive_seconds,
                        help=f"seconds the whole probe may take; rows past it are skipped "
                             f"(default {FULL.deadline:g}, with --tiny {TINY.deadline:g})")
    parser.add_argument("--wait-policy", choices=("ACTIVE", "PASSIVE"),
                        help="OMP_WAIT_POLICY of every row (default: the environment's, else "
                             f"the project's {WAIT_POLICY}; ACTIVE suits a machine running "
                             "nothing else)")
    args = parser.parse_args(argv)
    if args.json is not None:
        if args.json.is_dir():
            parser.error(f"--json {str(args.json)!r} is invalid: it is a folder, expected a "
                         "file path")
        if not args.json.resolve().parent.is_dir():
            parser.error(f"--json {str(args.json)!r} is invalid: its folder "
                         f"{str(args.json.resolve().parent)!r} does not exist")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    budget = TINY if args.tiny else FULL
    deadline_s = args.deadline or budget.deadline
    wait_policy = args.wait_policy or os.environ.get("OMP_WAIT_POLICY") or WAIT_POLICY
    started = time.perf_counter()
    deadline = started + deadline_s

    machine = describe_machine(wait_policy)
    print("# GPU probe: whole-loop training and simulator throughput" +
          (" (--tiny: windows too short to quote)" if args.tiny else ""))
    print()
    for line in _header(machine):
        print(line)
    print("compiling the simulator's kernels (python -m envs.precompile) ...", file=sys.stderr,
          flush=True)
    compiled = precompile(max(1.0, min(PRECOMPILE_LIMIT, deadline - time.perf_counter())))
    print(f"kernels: python -m envs.precompile {compiled['seconds']:.1f} s"
          + (f" (failed: {compiled['error']}; rows compile what they need)"
             if compiled["error"] else " (a warm cache: a few seconds; cold: minutes)"))
    print()
    print("| what | battles | device | threads | env-steps/s (WFM-1: battle-steps/s) "
          "| seconds measured | note |")
    print("|---|---:|---|---|---:|---:|---|")
    sys.stdout.flush()

    rows = plan(args.rows, machine["cores"])
    report: dict[str, Any] = {
        "probe": "benchmarks.gpu_probe", "argv": sys.argv[1:] if argv is None else argv,
        "tiny": args.tiny, "machine": machine, "precompile": compiled,
        "budget": {"seconds": {g: args.seconds or s for g, s in budget.seconds.items()},
                   "allowance": budget.allowance, "deadline": deadline_s},
        "rows": [], "core_parallel_efficiency": None}
    core_rates: dict[int, float] = {}
    for row in rows:
        left = deadline - time.perf_counter()
        seconds = args.seconds or budget.seconds[row.group]
        if row.device == "cuda" and machine.get("cuda") is False:
            result: dict[str, Any] = {"note": NO_GPU}  # known already: no process to start
        elif left < MIN_ROW_SECONDS:
            result = {"error": f"skipped: {left:.0f} s left of the probe's {deadline_s:g} s "
                               "deadline (--deadline)"}
        else:
            spec = {"kind": row.group, "battles": row.battles, "device": row.device,
                    "torch_threads": row.torch_threads, "seconds": seconds,
                    "n_steps": WFM1_STEPS[args.tiny],
                    "rollout_steps": MAPPO_ROLLOUT_STEPS[args.tiny]}
            began = time.perf_counter()
            result = run_cell(spec, row.numba_threads, min(seconds + budget.allowance, left),
                              wait_policy)
            # The process's whole wall time (start-up, building, warm-up, window): what a
            # later probe's budget has to allow for.
            result["wall_seconds"] = time.perf_counter() - began
            print(f"{row.id}: {result['wall_seconds']:.1f} s", file=sys.stderr, flush=True)
        if row.group == "core" and result.get("rate"):
            core_rates[row.numba_threads] = result["rate"]
            efficiency = parallel_efficiency(core_rates)
            if efficiency and efficiency[0] == row.numba_threads:
                result["note"] += f"; efficiency vs 2 threads {efficiency[1]:.2f}"
        result = {"rate": None, "seconds": None, "steps": None, "note": "", "error": None,
                  "wall_seconds": None, **result}
        print(table_row(row, result), flush=True)
        report["rows"].append({**asdict(row), "threads": row.threads, "unit": row.unit,
                               **result})
        report["total_seconds"] = time.perf_counter() - started
        if args.json is not None:  # every row, so that a probe cut short keeps what it did
            atomic_write_text(args.json, json.dumps(report, indent=2) + "\n")

    print()
    if "core" in args.rows:
        efficiency = parallel_efficiency(core_rates)
        if efficiency is None:
            print("2v2 core's parallel efficiency: n/a (needs rates at 2 threads and above; "
                  f"{machine['cores']} usable cores)")
        else:
            most, value = efficiency
            report["core_parallel_efficiency"] = {"threads": most, "efficiency": value}
            print(f"2v2 core's parallel efficiency from 2 to {most} Numba threads: {value:.2f} "
                  f"((rate_{most} / rate_2) / ({most} / 2))")
    report["total_seconds"] = time.perf_counter() - started
    print(f"probe: {report['total_seconds']:.0f} s in all (deadline {deadline_s:g} s)")
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
