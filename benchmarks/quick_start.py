"""Do the seed's quick-start forms learn? Run them as written, beside the default config.

Runs ``tests/examples/quick_start.py`` (the training API's quick-start, both
forms, copied from the seed) at its full budgets, timing each ``train`` call,
then ``train(enable_wandb=False)`` (the default config); the runs' own output
(SB3's tables, progress bars) goes to ``train.log`` in the output folder. Each
trained commander
then fights 100 deterministic battles against each scripted level and random
orders (seeds 100000..100099, unseen in training). Prints, per run: env-steps,
training minutes, env-steps/s and won/drawn/lost per opponent.

Usage::

    python -m benchmarks.quick_start [--episodes 100] [--out DIR]
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

import training
from benchmarks import argument_parser
from tests.doc_examples import run_source
from training.evaluate import run_episodes_with_model
from training.ppo.opponents import NAMED_OPPONENTS

EVAL_SEED = 100_000
EXAMPLE = "tests/examples/quick_start.py"
FORMS = ("train(total_timesteps=500_000, n_envs=4, enable_wandb=False)",
         "train(TrainingConfig(total_timesteps=1_000_000, n_envs=8, curriculum_level=3, "
         "enable_self_play=True, wandb_project=\"my_project\"))")
DEFAULT = "train(enable_wandb=False) (default config: 1M steps, n_envs=64)"


def main(argv: list[str] | None = None) -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None, help="keep the runs' files here")
    args = parser.parse_args(argv)
    out = (args.out or Path(tempfile.mkdtemp(prefix="quick_start_"))).resolve()
    os.environ.setdefault("WANDB_MODE", "offline")  # the config form logs to W&B

    real_train = training.train
    runs: list[tuple[float, object]] = []

    def timed_train(*call_args, **kwargs):
        start = time.perf_counter()
        model = real_train(*call_args, **kwargs)
        runs.append((time.perf_counter() - start, model))
        return model

    training.train = timed_train  # what `from training import train` hands the example
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "train.log", "w", encoding="utf-8") as log, \
            contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            run_source(EXAMPLE, out / "seed_forms", full=True)
            run_source_default(out / "default")
        finally:
            training.train = real_train

    print(f"# quick_start: the seed's forms as written, beside the default config "
          f"({args.episodes} unseen battles per opponent)")
    print()
    print("| run | env-steps | training min | env-steps/s | "
          + " | ".join(NAMED_OPPONENTS) + " |")
    print("|---|---:|---:|---:|" + "---|" * len(NAMED_OPPONENTS))
    for label, (seconds, model) in zip((*FORMS, DEFAULT), runs, strict=True):
        cells = []
        for opponent in NAMED_OPPONENTS:
            r = run_episodes_with_model(model, opponent, args.episodes, deterministic=True,
                                        seed=EVAL_SEED)
            cells.append(f"{r.wins}/{r.draws}/{r.losses}")
        print(f"| `{label}` | {model.num_timesteps:,} | {seconds / 60:.1f} | "
              f"{model.num_timesteps / seconds:,.0f} | " + " | ".join(cells) + " |")
    print()
    print("cells: won/drawn/lost; training time includes the warm start and periodic "
          f"evaluation. Files: {out}")


def run_source_default(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    training.train(enable_wandb=False)


if __name__ == "__main__":
    main()
