"""Pictures of a run, drawn from what it logged, so it can be read without TensorBoard or W&B.

:func:`write_run_plots` reads the TensorBoard event files a trainer wrote into a folder
(:func:`read_scalars`) and writes PNGs beside them, each replaced atomically, only those
it has numbers for: ``learning_curves.png``, ``elo.png``, ``coordination.png`` and
``losses.png``. The trainers and the league's roles call it at the end of a run
(:func:`plot_run`); the benchmarks draw their results with
:func:`draw_historical_benchmark`, :func:`draw_transfer_benchmark` and
:func:`draw_wfm1_benchmark`. Drawing uses matplotlib's bare
:class:`~matplotlib.figure.Figure`, which renders with Agg and never touches pyplot or
the process's backend. ``docs/training.md`` ("Pictures of a run") says what each picture
shows. From the command line, for a run in progress or one that was killed::

    python -m training.plots logs/mappo
"""

from __future__ import annotations

import argparse
import io
import logging
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from storage.files import atomic_write_bytes, clean_stale_temporaries
from training.elo import BASELINE_RATINGS, TEAM_BASELINE_RATINGS

logger = logging.getLogger(__name__)

LEARNING_CURVES_FILE = "learning_curves.png"
ELO_FILE = "elo.png"
COORDINATION_FILE = "coordination.png"
LOSSES_FILE = "losses.png"
MAX_NAMED_OPPONENTS = 8
"""Opponents whose win-rate lines are labelled; beyond that, the opponents that are not
anchors are drawn thin and grey under one label (a league meets many members)."""
ANCHOR_RATINGS: dict[str, float] = {**BASELINE_RATINGS, **TEAM_BASELINE_RATINGS}
"""The fixed ratings of the opponents that anchor every Elo table (:mod:`training.elo`)."""


class Series(NamedTuple):
    """One logged scalar: its values at env-steps ``steps`` (ascending)."""

    steps: np.ndarray
    values: np.ndarray


Scalars = Mapping[str, Series]


# --- reading ------------------------------------------------------------------------------


def read_scalars(log_dir: str | Path) -> dict[str, Series]:
    """Every scalar logged in the TensorBoard event files directly in ``log_dir``.

    A run that was resumed writes more event files into the same folder; where a later
    file repeats steps (a resume from an earlier checkpoint), the values written last
    are kept, one per step.

    Returns:
        Tag -> its :class:`Series`; empty for a folder without event files.

    Raises:
        FileNotFoundError: if ``log_dir`` is not a folder.
    """
    folder = Path(log_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"log folder {folder} does not exist or is not a folder")
    if not any(folder.glob("events.out.tfevents.*")):
        return {}
    from tensorboard.backend.event_processing.event_accumulator import (
        SCALARS,
        EventAccumulator,
    )

    events = EventAccumulator(str(folder), size_guidance={SCALARS: 0})  # 0: keep every point
    events.Reload()
    found = {}
    for tag in events.Tags()[SCALARS]:
        latest = {e.step: e.value for e in sorted(events.Scalars(tag),
                                                  key=lambda e: e.wall_time)}
        steps, values = zip(*sorted(latest.items()), strict=True)
        found[tag] = Series(np.array(steps, np.int64), np.array(values, np.float64))
    return found


def anchors_in(scalars: Scalars) -> dict[str, float]:
    """The anchors (:data:`ANCHOR_RATINGS`) that ``scalars`` name as opponents
    (``elo/win_rate_vs_<name>``, ``elo/rating_vs_<name>``, ``matchup/win_rate/<name>``)."""
    named = {_opponent(tag) for tag in scalars} - {None}
    return {name: rating for name, rating in ANCHOR_RATINGS.items() if name in named}


def _opponent(tag: str) -> str | None:
    for prefix in ("elo/win_rate_vs_", "elo/rating_vs_", "matchup/win_rate/"):
        if tag.startswith(prefix):
            return tag[len(prefix):]
    return None


# --- drawing helpers ------------------------------------------------------------------------


def figure(width: float, height: float) -> Any:
    """A bare matplotlib Figure (rendered with Agg; pyplot and the backend stay untouched).
    matplotlib is imported only here."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def png_bytes(fig: Any) -> bytes:
    """``fig`` as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def smoothed(values: np.ndarray) -> np.ndarray:
    """A centred moving average of ``values`` over about a 25th of them (itself when
    there are fewer than 25), the trend drawn over the raw line."""
    window = len(values) // 25
    if window < 2:
        return values
    kernel = np.ones(window) / window
    padded = np.pad(values, (window // 2, window - 1 - window // 2), mode="edge")
    return np.convolve(padded, kernel, mode="valid")


def _line(ax: Any, series: Series, **style: Any) -> None:
    """``series`` as a line (a dot when it is one point); when it is long, its trend
    (:func:`smoothed`) over the raw values drawn faint in the same colour."""
    if len(series.steps) == 1:
        ax.plot(series.steps, series.values, **{**style, "marker": "o", "markersize": 4,
                                                "linestyle": ""})
        return
    trend = smoothed(series.values)
    few = len(series.steps) < 40
    (line,) = ax.plot(series.steps, trend, marker="." if few else None, **style)
    if trend is not series.values:
        ax.plot(series.steps, series.values, color=line.get_color(), alpha=0.25,
                linewidth=0.8)


def _legend(ax: Any) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")


def _grid(n_panels: int, columns: int, panel: tuple[float, float], title: str
          ) -> tuple[Any, list[Any]]:
    """A figure of ``n_panels`` axes, ``columns`` a row at most, each ``panel`` inches."""
    columns = min(columns, n_panels)
    rows = math.ceil(n_panels / columns)
    fig = figure(panel[0] * columns, panel[1] * rows)
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig, list(axes[:n_panels])


# --- a run's pictures ---------------------------------------------------------------------------


def _win_rate_lines(scalars: Scalars, anchors: Mapping[str, float]
                    ) -> list[tuple[str, Series, dict[str, Any]]]:
    """(label, series, style) of every win rate: training, evaluation, self-play, and
    against each named opponent (the anchors first; past :data:`MAX_NAMED_OPPONENTS`
    the others grey and unlabelled but for one)."""
    lines = []
    for tag, label in (("rollout/win_rate", "training battles"),
                       ("eval/win_rate", "evaluation"),
                       ("validation/win_rate", "validation battles"),
                       ("self_play/win_rate_vs_pool", "vs self-play pool")):
        if tag in scalars:
            lines.append((label, scalars[tag], {"linewidth": 2}))
    if "rollout/draw_rate" in scalars:  # a learner settling for draws shows here first
        lines.append(("drawn, training battles", scalars["rollout/draw_rate"],
                      {"linewidth": 1.2, "linestyle": "--"}))
    opponents = sorted(((_opponent(tag), tag) for tag in scalars
                        if tag.startswith(("elo/win_rate_vs_", "matchup/win_rate/"))),
                       key=lambda item: (item[0] not in anchors, item[0]))
    crowded = len(opponents) > MAX_NAMED_OPPONENTS
    others = 0
    for name, tag in opponents:
        if crowded and name not in anchors:
            label = "other opponents" if others == 0 else None
            others += 1
            lines.append((label, scalars[tag], {"color": "0.6", "linewidth": 0.8}))
        else:
            lines.append((f"vs {name}", scalars[tag], {"linewidth": 1.4}))
    return lines


def draw_learning_curves(scalars: Scalars, title: str = "",
                         anchors: Mapping[str, float] | None = None) -> bytes | None:
    """``learning_curves.png``: win rates, rewards and episode lengths over env-steps;
    None when ``scalars`` hold none of them."""
    anchors = anchors_in(scalars) if anchors is None else anchors
    panels: list[tuple[str, str, list[tuple[str, Series, dict[str, Any]]]]] = []
    win_rates = _win_rate_lines(scalars, anchors)
    if win_rates:
        panels.append(("Win rate", "share of battles won", win_rates))
    for name, ylabel, tags in (
            ("Reward", "return per battle", (("rollout/ep_rew_mean", "training battles"),
                                             ("eval/mean_reward", "evaluation"),
                                             ("reward/team_mean", "team return"),
                                             ("reward/step_mean", "reward per step"))),
            ("Battle length", "steps", (("rollout/ep_len_mean", "training battles"),
                                        ("eval/mean_ep_length", "evaluation")))):
        lines = [(label, scalars[tag], {"linewidth": 1.6}) for tag, label in tags
                 if tag in scalars]
        if lines:
            panels.append((name, ylabel, lines))
    if not panels:
        return None
    fig, axes = _grid(len(panels), 3, (5.2, 3.8), title)
    for ax, (name, ylabel, lines) in zip(axes, panels, strict=True):
        for label, series, style in lines:
            _line(ax, series, label=label, **style)
        if name == "Win rate":
            ax.set_ylim(-0.03, 1.03)
        ax.set(title=name, xlabel="env-steps", ylabel=ylabel)
        ax.grid(alpha=0.3)
        _legend(ax)
    return png_bytes(fig)


def _rating_tags(scalars: Scalars) -> list[str]:
    return sorted(tag for tag in scalars if (tag.startswith("elo/") or tag == "self_play/elo")
                  and "win_rate" not in tag and "delta" not in tag)


def draw_elo(scalars: Scalars, title: str = "",
             anchors: Mapping[str, float] | None = None) -> bytes | None:
    """``elo.png``: every rating the run logged over env-steps, the ``anchors`` (name ->
    fixed rating; by default those the run played, :func:`anchors_in`) as labelled
    dashed lines; None when the run logged no rating."""
    tags = _rating_tags(scalars)
    if not tags:
        return None
    anchors = anchors_in(scalars) if anchors is None else anchors
    fig = figure(9, 5)
    ax = fig.subplots()
    for tag in tags:
        name = tag.removeprefix("elo/")
        label = (f"rating after games vs {name.removeprefix('rating_vs_')}"
                 if name.startswith("rating_vs_") else name)
        _line(ax, scalars[tag], label=label, linewidth=2)
    for name, rating in sorted(anchors.items(), key=lambda item: item[1]):
        ax.axhline(rating, color="0.35", linestyle="--", linewidth=1)
        ax.annotate(f"{name} ({rating:.0f})", (0, rating), xycoords=("axes fraction", "data"),
                    xytext=(4, 3), textcoords="offset points", fontsize=8, color="0.25")
    ax.set(title=f"Elo{': ' + title if title else ''}", xlabel="env-steps", ylabel="Elo")
    ax.grid(alpha=0.3)
    _legend(ax)
    return png_bytes(fig)


def draw_coordination(scalars: Scalars, title: str = "") -> bytes | None:
    """``coordination.png``: one panel per coordination metric (0 to 1) over env-steps;
    None when the run logged none."""
    # The metrics' module loads the simulator; pictures of other runs need not.
    from envs.metrics.coordination import METRICS, PREFIX

    names = [name for name in METRICS if PREFIX + name in scalars]
    if not names:
        return None
    fig, axes = _grid(len(names), 3, (4.6, 3.4), f"Coordination{': ' + title if title else ''}")
    for ax, name in zip(axes, names, strict=True):
        _line(ax, scalars[PREFIX + name], color="tab:blue", linewidth=1.6)
        ax.set(title=name.replace("_", " "), xlabel="env-steps", ylim=(-0.03, 1.03))
        ax.grid(alpha=0.3)
    return png_bytes(fig)


def draw_losses(scalars: Scalars, title: str = "") -> bytes | None:
    """``losses.png``: each ``train/*`` number that changed during the run, a panel each;
    None when there is none."""
    tags = sorted(tag for tag, series in scalars.items()
                  if tag.startswith("train/") and np.ptp(series.values) > 0)
    if not tags:
        return None
    fig, axes = _grid(len(tags), 4, (3.6, 2.8), f"Updates{': ' + title if title else ''}")
    for ax, tag in zip(axes, tags, strict=True):
        _line(ax, scalars[tag], color="tab:purple", linewidth=1.4)
        ax.set_title(tag.removeprefix("train/").replace("_", " "), fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    return png_bytes(fig)


RUN_FILES = (LEARNING_CURVES_FILE, ELO_FILE, COORDINATION_FILE, LOSSES_FILE)
"""The pictures of a run, in the order :func:`write_run_plots` draws them."""


def write_run_plots(log_dir: str | Path, *, anchors: Mapping[str, float] | None = None,
                    out_dir: str | Path | None = None, title: str | None = None) -> list[Path]:
    """Draw the pictures of the run logged in ``log_dir`` and write them (atomically).

    Args:
        log_dir: the folder of the run's TensorBoard event files.
        anchors: fixed-rating opponents to draw on the Elo picture, added to those the
            run's metrics name (:func:`anchors_in`).
        out_dir: where the PNGs go (``log_dir`` when None).
        title: the pictures' title (the folder's name when None).

    Returns:
        The paths written: only the pictures the logs have numbers for.

    Raises:
        FileNotFoundError: if ``log_dir`` is not a folder.
    """
    folder = Path(log_dir)
    scalars = read_scalars(folder)
    target = Path(out_dir) if out_dir is not None else folder
    title = folder.name if title is None else title
    every_anchor = {**anchors_in(scalars), **(anchors or {})}
    clean_stale_temporaries(target)  # a picture's writer killed mid-write (a run resumed)
    pictures = {LEARNING_CURVES_FILE: draw_learning_curves(scalars, title, every_anchor),
                ELO_FILE: draw_elo(scalars, title, every_anchor),
                COORDINATION_FILE: draw_coordination(scalars, title),
                LOSSES_FILE: draw_losses(scalars, title)}
    written = [write_png(target / name, image) for name, image in pictures.items()
               if image is not None]
    logger.info("%d pictures of %s in %s", len(written), folder, target)
    return written


def plot_run(log_dir: str | Path | None, *, anchors: Mapping[str, float] | None = None,
             title: str | None = None) -> list[Path]:
    """:func:`write_run_plots` at the end of a training run: nothing when the run logged
    nowhere (``log_dir`` None or missing); a failure is logged with its traceback and
    does not fail the run, whose checkpoints are already written."""
    if log_dir is None or not Path(log_dir).is_dir():
        return []
    try:
        return write_run_plots(log_dir, anchors=anchors, title=title)
    except Exception:
        logger.exception("could not draw the pictures of the run logged in %s; "
                         "`python -m training.plots %s` draws them later", log_dir, log_dir)
        return []


# --- the benchmarks' pictures -----------------------------------------------------------------


def draw_historical_benchmark(names: Sequence[str], fidelity: Sequence[float],
                              winner_matches: Sequence[bool],
                              simulated_casualties: np.ndarray,
                              historical_casualties: np.ndarray,
                              predictors: Mapping[str, tuple[float, float]] | None = None,
                              held_out: Sequence[bool] | None = None) -> bytes:
    """The historical benchmark: each battle's fidelity (green where the simulated winner
    is history's), the simulated against the historical casualties of both sides, and,
    when given, the held-out winner match and Brier score of the simulation beside the
    baselines'.

    Args:
        names: the battles' names, in the order of the other arguments.
        fidelity: each battle's fidelity score (0 to 1).
        winner_matches: whether its simulated winner is history's.
        simulated_casualties, historical_casualties: (n, 2) Blue's and Red's casualties
            as shares of their strength.
        predictors: each predictor's name -> its (winner match, Brier score) on the
            held-out battles, the simulation first.
        held_out: whether each battle is held out (its bar is hatched).
    """
    simulated = np.asarray(simulated_casualties, float).reshape(-1, 2)
    historical = np.asarray(historical_casualties, float).reshape(-1, 2)
    n = len(names)
    if predictors:  # the battles above, casualties and predictors side by side below
        fig = figure(max(12.0, 0.16 * n + 3), 11)
        axes = fig.subplot_mosaic([["bars", "bars"], ["scatter", "predictors"]],
                                  height_ratios=[1, 1.1])
        bars, scatter = axes["bars"], axes["scatter"]
    else:
        fig = figure(max(10.0, 0.22 * n + 5), 6)
        bars, scatter = fig.subplots(1, 2, width_ratios=[max(2.0, n / 12), 1])
    colours = ["tab:green" if ok else "tab:red" for ok in winner_matches]
    drawn = bars.bar(range(n), fidelity, color=colours)
    for bar, out in zip(drawn, held_out or [False] * n, strict=True):
        if out:
            bar.set_hatch("///")
    bars.set_xticks(range(n), labels=names, rotation=90, fontsize=6)
    matched = sum(bool(ok) for ok in winner_matches)
    bars.set(ylim=(0, 1), ylabel="fidelity",
             title=f"Fidelity per battle (green: winner matches history, {matched}/{n}"
             + ("; hatched: held out)" if held_out else ")"))
    for side, (label, colour) in enumerate((("Blue", "tab:blue"), ("Red", "tab:red"))):
        scatter.scatter(historical[:, side], simulated[:, side], s=14, color=colour,
                        label=label, alpha=0.8)
    scatter.plot([0, 1], [0, 1], color="0.5", linestyle="--", linewidth=1)
    scatter.set(xlim=(0, 1), ylim=(0, 1), xlabel="historical casualties (share)",
                ylabel="simulated casualties (share)", title="Casualties", aspect="equal")
    scatter.legend(fontsize=8)
    if predictors:
        ax = axes["predictors"]
        labels = list(predictors)
        y = np.arange(len(labels))
        match = [predictors[k][0] for k in labels]
        brier = [predictors[k][1] for k in labels]
        ax.barh(y - 0.2, match, height=0.4, color="tab:green", label="winner match")
        ax.barh(y + 0.2, brier, height=0.4, color="tab:purple", label="Brier score")
        ax.set_yticks(y, labels=[_wrap(k, 30) for k in labels], fontsize=9)
        ax.invert_yaxis()
        ax.set(xlim=(0, max(1.0, *brier)), title="Held out: simulation vs baselines")
        ax.legend(fontsize=8, loc="lower right")
    return png_bytes(fig)


def _wrap(text: str, width: int = 22) -> str:
    """``text`` broken into lines of at most ``width`` characters (a long tick label)."""
    return "\n".join(textwrap.wrap(text, width)) or text


def draw_transfer_benchmark(site: str, conditions: Sequence[str], win_rates: Sequence[float],
                            draw_rates: Sequence[float], loss_rates: Sequence[float],
                            finetune_steps: int = 0) -> bytes:
    """The transfer benchmark of one site: won, drawn and lost shares of each condition
    (procedural ground, the site zero-shot, the site after ``finetune_steps`` of
    fine-tuning) as stacked bars."""
    fig = figure(7, 4.5)
    ax = fig.subplots()
    x = np.arange(len(conditions))
    bottom = np.zeros(len(conditions))
    for label, shares, colour in (("won", win_rates, "tab:green"),
                                  ("drawn", draw_rates, "0.7"),
                                  ("lost", loss_rates, "tab:red")):
        shares = np.asarray(shares, float)
        ax.bar(x, shares, bottom=bottom, color=colour, label=label)
        bottom += shares
    for i, share in enumerate(win_rates):
        ax.text(i, share / 2, f"{share:.0%}", ha="center", va="center", fontsize=9)
    labels = [c.replace("_", " ") + (f"\n({finetune_steps:,} steps)" if c.startswith("finetuned")
                                     else "") for c in conditions]
    ax.set_xticks(x, labels=labels, fontsize=8)
    ax.set(ylim=(0, 1), ylabel="share of battles", title=f"Transfer to {site}")
    ax.legend(fontsize=8, loc="upper right")
    return png_bytes(fig)


def draw_wfm1_benchmark(scenarios: Sequence[str], conditions: Sequence[str],
                        shares: np.ndarray) -> bytes:
    """WFM-1's benchmark: for each held-out scenario, a stacked bar of won, drawn and lost
    per condition (told apart by their hatching).

    Args:
        scenarios: the scenarios' names.
        conditions: the conditions measured (``zero_shot``, ``finetuned``, ...).
        shares: ``(len(scenarios), len(conditions), 3)`` won, drawn and lost shares (NaN
            where a condition was not measured).
    """
    from matplotlib.patches import Patch

    shares = np.asarray(shares, float)
    n, k = len(scenarios), len(conditions)
    fig = figure(max(10.0, 0.75 * n + 3), 5.5)
    ax = fig.subplots()
    width = 0.8 / k
    hatches = ("", "//", "..", "xx")
    outcomes = (("won", "tab:green"), ("drawn", "0.7"), ("lost", "tab:red"))
    for j in range(k):
        x = np.arange(n) + (j - (k - 1) / 2) * width
        bottom = np.zeros(n)
        for part, (_, colour) in enumerate(outcomes):
            values = np.nan_to_num(shares[:, j, part])
            ax.bar(x, values, width * 0.95, bottom=bottom, color=colour,
                   hatch=hatches[j % len(hatches)], edgecolor="white", linewidth=0.3)
            bottom += values
    means = np.nanmean(shares[:, :, 0], axis=0)
    names = [c.replace("_", " ") for c in conditions]
    ax.set_xticks(np.arange(n), labels=scenarios, rotation=60, ha="right", fontsize=7)
    ax.set(ylim=(0, 1), ylabel="share of battles", title="WFM-1 on the held-out scenarios, "
           "mean won: " + ", ".join(f"{c} {m:.0%}" for c, m in zip(names, means, strict=True)))
    handles = [Patch(facecolor=colour, label=label) for label, colour in outcomes] + [
        Patch(facecolor="white", edgecolor="0.3", hatch=hatches[j % len(hatches)] * 2,
              label=f"bar {j + 1}: {name}") for j, name in enumerate(names)]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8)
    return png_bytes(fig)


def write_png(path: str | Path, image: bytes) -> Path:
    """Write PNG bytes to ``path`` atomically (its folder created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, image)
    return target


# --- command line ---------------------------------------------------------------------------


def _anchor(text: str) -> tuple[str, float]:
    name, _, rating = text.partition("=")
    try:
        return name, float(rating)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=RATING") from None


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m training.plots LOG_DIR [--anchor NAME=RATING ...]``: draw a run's
    pictures from its TensorBoard logs and print their paths."""
    parser = argparse.ArgumentParser(
        prog="python -m training.plots",
        description="Draw a run's learning curves, Elo, coordination and update pictures "
                    "from its TensorBoard event files, beside them.")
    parser.add_argument("log_dir", type=Path, help="the folder of the run's event files, "
                        "e.g. logs/mappo or logs/ppo_battalion_1")
    parser.add_argument("--anchor", type=_anchor, action="append", default=[],
                        metavar="NAME=RATING", help="a fixed rating to draw on elo.png")
    parser.add_argument("--out", type=Path, help="where the pictures go (default LOG_DIR)")
    args = parser.parse_args(argv)
    try:
        written = write_run_plots(args.log_dir, anchors=dict(args.anchor), out_dir=args.out)
    except FileNotFoundError as error:
        parser.error(str(error))
    if not written:
        parser.exit(1, f"no scalars logged in {args.log_dir}: nothing drawn\n")
    for path in written:
        print(path)


__all__ = ["ANCHOR_RATINGS", "COORDINATION_FILE", "ELO_FILE", "LEARNING_CURVES_FILE",
           "LOSSES_FILE", "RUN_FILES", "Series", "anchors_in", "draw_coordination",
           "draw_elo", "draw_historical_benchmark", "draw_learning_curves", "draw_losses",
           "draw_transfer_benchmark", "draw_wfm1_benchmark", "figure", "main", "plot_run",
           "png_bytes", "read_scalars", "smoothed", "write_png", "write_run_plots"]

if __name__ == "__main__":
    main()
