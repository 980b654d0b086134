"""The league report: a league directory's files as four pictures and one page.

:func:`write_league_report` reads a league directory (the layout the roles of
:mod:`training.league.role` write: ``<role>/pool.json``, ``<role>/history.jsonl``,
``matches.jsonl``, ``elo.json``) and writes into it, each file replaced atomically:
``league_elo.png``, ``league_payoff.png``, ``league_nash.png``, ``league_diversity.png``
and ``league_report.html``, a page with a summary table and the four pictures embedded
(it needs no other file, fetches nothing and runs no script). :func:`read_league`
gathers the numbers (:class:`LeagueData`) apart from the drawing.
``docs/league_training_guide.md`` ("League report") says what each picture shows. From
the command line::

    python -m training.league.report checkpoints/league
"""

from __future__ import annotations

import argparse
import base64
import html
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from storage.files import atomic_write_bytes, atomic_write_text, read_json_lines
from training.elo import TEAM_BASELINE_RATINGS, TeamEloRegistry
from training.league.agent_pool import AgentPool
from training.league.layout import ELO_FILE, HISTORY_FILE, MATCHES_FILE, POOL_FILE
from training.league.match_database import MatchDatabase
from training.league.records import AgentRecord, AgentType
from training.plots import figure as _figure  # Agg, pyplot untouched, loaded when drawn
from training.plots import png_bytes as _png

REPORT_FILE = "league_report.html"
ROLE_ORDER = [t.value for t in AgentType]
ROLE_COLOURS = {AgentType.MAIN_AGENT.value: "tab:blue",
                AgentType.MAIN_EXPLOITER.value: "tab:red",
                AgentType.LEAGUE_EXPLOITER.value: "tab:green"}
NASH_BARS = 30
"""Members shown in the Nash bar chart (the heaviest)."""
LABELLED_CELLS = 40
"""Rows or columns of the payoff matrix beyond which their ids are not written."""
ANNOTATED_CELLS = 400
"""Payoff cells up to which every known cell has its win rate written in."""


class Point(NamedTuple):
    """One value of a series: ``y`` at ``x`` on the report's step axis."""

    x: float
    y: float


class Reset(NamedTuple):
    """An exploiter's reset: at its own ``step``, drawn at ``x``."""

    step: int
    x: float


@dataclass(frozen=True)
class Evaluation:
    """One line of a role's ``history.jsonl`` (written by
    :func:`training.league.role_hooks.record_history`).

    Attributes:
        agent_id, role: the learner that evaluated and its role.
        step: the learner's env-steps.
        time: when (Unix time).
        x: where it is drawn: the main agent's env-steps at ``time``
            (:attr:`LeagueData.clock`).
        elo: every non-anchor rating of the league at that moment.
        nash: the Nash distribution over the members then.
        metrics: the evaluation's numbers, by metric name.
    """

    agent_id: str
    role: str
    step: int
    time: float
    x: float
    elo: dict[str, float]
    nash: dict[str, float]
    metrics: dict[str, float]

    def metric(self, name: str) -> float | None:
        """The metric called ``name``, or ``<prefix>/<name>`` for any prefix (the roles
        name theirs ``main_agent/...``, ``exploiter/...``, ``league_exploiter/...``)."""
        if name in self.metrics:
            return self.metrics[name]
        return next((v for k, v in self.metrics.items() if k.endswith("/" + name)), None)


@dataclass(frozen=True)
class Learner:
    """A live learner of the league.

    Attributes:
        agent_id, role: its id and role.
        step: its env-steps at its last evaluation (None before the first).
        elo: its rating then (the Elo file's before the first evaluation).
        resets: its resets, oldest first; None for a learner whose evaluations carry no
            reset count (one that never resets).
    """

    agent_id: str
    role: str
    step: int | None
    elo: float | None
    resets: list[Reset] | None


@dataclass(frozen=True)
class LeagueData:
    """What a league directory says, ready to draw.

    Attributes:
        league_dir: the folder.
        clock: ``main_agent``: every ``x`` is the main agent's env-steps at the
            evaluation's time (interpolated between its evaluations and snapshots);
            ``own`` (no main-agent history): each evaluation's own role's env-steps.
        members: every pool's records, oldest first.
        learners: the live learners by id, main agent first.
        evaluations: every role's history, oldest first.
        anchors: the fixed-rating opponents the league played, with their ratings.
        elo: member or learner id -> its ratings over ``x``, closed by the Elo file's.
        payoff_rows, payoff_columns, payoff: the win rate of each row (learners, then
            members that recorded matches) against each column (members, then
            anchors) from the match log; NaN where the row never met the column.
    """

    league_dir: Path
    clock: str
    members: list[AgentRecord]
    learners: dict[str, Learner]
    evaluations: list[Evaluation]
    anchors: dict[str, float]
    elo: dict[str, list[Point]]
    payoff_rows: list[str]
    payoff_columns: list[str]
    payoff: np.ndarray

    @property
    def x_label(self) -> str:
        return ("main agent env-steps" if self.clock == "main_agent"
                else "env-steps of the evaluating role")

    @property
    def latest_nash(self) -> Evaluation | None:
        """The newest evaluation with a Nash distribution."""
        return next((e for e in reversed(self.evaluations) if e.nash), None)

    def role_of(self, agent_id: str) -> str:
        """The role of a learner or member (``""`` for an unknown id)."""
        if agent_id in self.learners:
            return self.learners[agent_id].role
        return next((m.agent_type.value for m in self.members if m.agent_id == agent_id), "")

    def series(self, name: str) -> dict[str, list[Point]]:
        """Each learner's values of the metric ``name`` (:meth:`Evaluation.metric`)."""
        found: dict[str, list[Point]] = {}
        for evaluation in self.evaluations:
            value = evaluation.metric(name)
            if value is not None:
                found.setdefault(evaluation.agent_id, []).append(Point(evaluation.x, value))
        return found

    def latest(self, name: str) -> float | None:
        """The newest evaluation's value of the metric ``name`` (None if none has it)."""
        values = (e.metric(name) for e in reversed(self.evaluations))
        return next((v for v in values if v is not None), None)


# --- reading ------------------------------------------------------------------------------


def read_league(league_dir: str | Path) -> LeagueData:
    """Gather what a league directory's files say.

    Args:
        league_dir: the folder holding the roles' folders (``<role>/pool.json``, one
            level below it), ``matches.jsonl`` and ``elo.json``.

    Returns:
        The league's :class:`LeagueData`.

    Raises:
        FileNotFoundError: if ``league_dir`` is not a folder, or no ``pool.json`` lies
            one level below it.
        ValueError: if a history line is not an evaluation (the message names the file),
            or a pool manifest or the Elo file is corrupt.
    """
    folder = Path(league_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"league directory {folder} does not exist or is not a folder")
    pools = sorted(folder.glob(f"*/{POOL_FILE}"))
    if not pools:
        raise FileNotFoundError(f"{folder} is not a league directory: no <role>/{POOL_FILE} "
                                f"one level below it (e.g. {folder / 'main_agent' / POOL_FILE})")
    members = _members(pools)
    rows = sorted((row for path in sorted(folder.glob(f"*/{HISTORY_FILE}"))
                   for row in _history(path)), key=lambda row: row["time"])
    clock, x_of, now = _clock(rows, members)
    evaluations = [Evaluation(**row, x=x_of(row)) for row in rows]
    ratings = TeamEloRegistry(folder / ELO_FILE).all_ratings()
    matches = MatchDatabase(folder / MATCHES_FILE)
    learners = _learners(evaluations, members, ratings)
    played = {r.opponent_id for r in matches.results} | {
        key.removeprefix("matchup/win_rate/") for e in evaluations for key in e.metrics
        if key.startswith("matchup/win_rate/")}
    anchors = {name: rating for name, rating in sorted(TEAM_BASELINE_RATINGS.items(),
                                                       key=lambda item: item[1])
               if name in played}
    elo = _elo_series(evaluations, ratings, {*learners, *(m.agent_id for m in members)}, now)
    return LeagueData(folder, clock, members, learners, evaluations, anchors, elo,
                      *_payoff(matches, [*learners], members, [*anchors]))


def _payoff(matches: MatchDatabase, learners: Sequence[str], members: Sequence[AgentRecord],
            anchors: Sequence[str]) -> tuple[list[str], list[str], np.ndarray]:
    """The payoff matrix's rows (the learners, then the members that recorded matches),
    columns (the members by role, then the anchors) and win rates (NaN: never met)."""
    rows = [*learners, *(m.agent_id for m in members if matches.win_rates_for(m.agent_id))]
    by_role = sorted(members, key=lambda m: (_role_rank(m.agent_type.value), m.created_at))
    columns = [*(m.agent_id for m in by_role), *anchors]
    payoff = np.full((len(rows), len(columns)), math.nan)
    for i, row in enumerate(rows):
        rates = matches.win_rates_for(row)  # MatchDatabase.win_rate(row, column), by column
        for j, column in enumerate(columns):
            payoff[i, j] = rates.get(column, math.nan)
    return rows, columns, payoff


def _members(pools: Sequence[Path]) -> list[AgentRecord]:
    """Every pool's records, oldest first, each id once."""
    seen: dict[str, AgentRecord] = {}
    for path in pools:
        for record in AgentPool(path).list():
            seen.setdefault(record.agent_id, record)
    return sorted(seen.values(), key=lambda r: r.created_at)


def _history(path: Path) -> list[dict[str, Any]]:
    """The evaluations of one history file, as :class:`Evaluation`'s fields but ``x``."""
    rows, _ = read_json_lines(path)  # a torn last line is skipped (and logged)
    found = []
    for row in rows:
        try:
            found.append({"agent_id": str(row["agent_id"]), "role": str(row["role"]),
                          "step": int(row["step"]), "time": float(row["time"]),
                          "elo": {str(k): float(v) for k, v in row["elo"].items()},
                          "nash": {str(k): float(v) for k, v in row["nash"].items()},
                          "metrics": {str(k): float(v) for k, v in row["metrics"].items()}})
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"{path}: {row!r} is not an evaluation ({error!r}): expected "
                             "agent_id, role, step, time, elo, nash and metrics") from error
    return found


def _clock(rows: Sequence[dict[str, Any]], members: Sequence[AgentRecord]
           ) -> tuple[str, Callable[[dict[str, Any]], float], float]:
    """The report's step axis (:attr:`LeagueData.clock`), where a history row lies on it
    and where "now" does (the main agent's latest steps, or the largest step).

    The main agent's (time, env-steps) come from its evaluations and its snapshots (the
    first, at step 0, dates its start).
    """
    main = AgentType.MAIN_AGENT
    dates = [(row["time"], row["step"]) for row in rows if row["role"] == main.value]
    if not dates:
        return ("own", lambda row: float(row["step"]),
                float(max((row["step"] for row in rows), default=0)))
    dates += [(m.created_at, m.metadata["step"]) for m in members
              if m.agent_type is main and isinstance(m.metadata.get("step"), (int, float))]
    times, steps = np.array(sorted(dates), dtype=float).T
    # Between two of the main agent's dates its steps grew about linearly; before its
    # first and after its last they are those dates' steps.
    return ("main_agent", lambda row: float(np.interp(row["time"], times, steps)),
            float(steps[-1]))


def _learners(evaluations: Sequence[Evaluation], members: Sequence[AgentRecord],
              ratings: dict[str, float]) -> dict[str, Learner]:
    """The live learners: those that evaluated and the parents of the members."""
    roles = {e.agent_id: e.role for e in evaluations}
    ids = {m.agent_id for m in members}
    for member in members:
        parent = member.metadata.get("parent_agent_id")
        if isinstance(parent, str) and parent not in ids:
            roles.setdefault(parent, member.agent_type.value)
    learners = {}
    for agent_id, role in sorted(roles.items(), key=lambda item: (_role_rank(item[1]), item)):
        own = [e for e in evaluations if e.agent_id == agent_id]
        last = own[-1] if own else None
        resets = None
        if any(e.metric("reset_count") is not None for e in own):
            resets = [Reset(e.step, e.x) for e in own if e.metric("reset_step") is not None]
        learners[agent_id] = Learner(
            agent_id, role, last.step if last else None,
            last.elo.get(agent_id) if last else ratings.get(agent_id), resets)
    return learners


def _role_rank(role: str) -> int:
    return ROLE_ORDER.index(role) if role in ROLE_ORDER else len(ROLE_ORDER)


def _elo_series(evaluations: Sequence[Evaluation], ratings: dict[str, float],
                names: set[str], now: float) -> dict[str, list[Point]]:
    """Each of ``names``' ratings from every evaluation's table, then the Elo file's at
    ``now`` (the file has the snapshots taken after the last evaluation)."""
    elo: dict[str, list[Point]] = {}
    for evaluation in evaluations:
        for name, rating in evaluation.elo.items():
            if name in names:
                elo.setdefault(name, []).append(Point(evaluation.x, rating))
    for name, rating in ratings.items():
        if name in names:
            elo.setdefault(name, []).append(Point(now, rating))
    return elo


# --- drawing -------------------------------------------------------------------------------


def _colour(role: str) -> str:
    return ROLE_COLOURS.get(role, "tab:gray")


def _plot(ax: Any, points: Sequence[Point], **style: Any) -> None:
    """A line through ``points`` (a dot when there is one)."""
    xs, ys = zip(*points, strict=True)
    ax.plot(xs, ys, marker="o" if len(points) == 1 else None, markersize=3, **style)


def _mark_resets(ax: Any, data: LeagueData) -> None:
    for learner in data.learners.values():
        for i, reset in enumerate(learner.resets or ()):
            ax.axvline(reset.x, color=_colour(learner.role), linestyle=":", linewidth=1.2,
                       label=f"{learner.agent_id} reset" if i == 0 else None)


def _nothing(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")


def draw_elo(data: LeagueData) -> bytes:
    """``league_elo.png``: every member's Elo (thin, by role) and every learner's (thick)
    over the step axis; the anchors dashed; the resets dotted."""
    figure = _figure(11, 6)
    ax = figure.subplots()
    labelled = set()
    # Snapshots first, so the learners' lines lie on top.
    for name, points in sorted(data.elo.items(), key=lambda item: (
            item[0] in data.learners, _role_rank(data.role_of(item[0])))):
        role = data.role_of(name)
        if name in data.learners:
            _plot(ax, points, color=_colour(role), linewidth=2.4, label=name, zorder=3)
        else:
            label = None if role in labelled else f"{role or 'other'} snapshots"
            labelled.add(role)
            _plot(ax, points, color=_colour(role), linewidth=0.8, alpha=0.45, label=label)
    for name, rating in data.anchors.items():
        ax.axhline(rating, color="0.35", linestyle="--", linewidth=1)
        ax.annotate(f"{name} ({rating:.0f})", (0, rating), xycoords=("axes fraction", "data"),
                    xytext=(4, 3), textcoords="offset points", fontsize=8, color="0.25")
    _mark_resets(ax, data)
    if not data.elo:
        _nothing(ax, "no ratings yet")
    ax.set(xlabel=data.x_label, ylabel="Elo", title="Elo of the league's members")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _png(figure)


def draw_payoff(data: LeagueData) -> bytes:
    """``league_payoff.png``: the payoff matrix as a heatmap, unknown cells grey."""
    from matplotlib import colormaps

    n_rows, n_columns = data.payoff.shape
    figure = _figure(min(5 + 0.4 * n_columns, 24), min(4 + 0.4 * n_rows, 16))
    ax = figure.subplots()
    if data.payoff.size == 0:
        _nothing(ax, "no learner and no match yet")
    else:
        colours = colormaps["RdYlGn"].with_extremes(bad="0.85")
        image = ax.imshow(np.ma.masked_invalid(data.payoff), cmap=colours, vmin=0, vmax=1,
                          aspect="auto", interpolation="nearest")
        figure.colorbar(image, ax=ax, label="win rate")
        ax.set_xticks(range(n_columns) if n_columns <= LABELLED_CELLS else [],
                      labels=data.payoff_columns if n_columns <= LABELLED_CELLS else [],
                      rotation=90, fontsize=7)
        ax.set_yticks(range(n_rows) if n_rows <= LABELLED_CELLS else [],
                      labels=data.payoff_rows if n_rows <= LABELLED_CELLS else [], fontsize=7)
        if data.payoff.size <= ANNOTATED_CELLS:
            for (i, j), rate in np.ndenumerate(data.payoff):
                if math.isfinite(rate):
                    ax.text(j, i, f"{rate:.2f}", ha="center", va="center", fontsize=7)
    ax.set(title="Payoff: win rate of each agent (row) against each member and anchor",
           xlabel="opponent: members by role, then anchors", ylabel="agent")
    return _png(figure)


def draw_nash(data: LeagueData) -> bytes:
    """``league_nash.png``: the latest Nash distribution (its heaviest members) and the
    Nash entropy of every learner's evaluations."""
    figure = _figure(13, 6)
    bars, entropy = figure.subplots(1, 2)
    source = data.latest_nash
    if source is None:
        _nothing(bars, "no Nash distribution yet")
    else:
        heaviest = sorted(source.nash.items(), key=lambda item: -item[1])[:NASH_BARS]
        names, weights = zip(*heaviest, strict=True)
        # Horizontal bars, heaviest on top: the ids stay readable.
        bars.barh(range(len(names)), weights, color=[_colour(data.role_of(n)) for n in names])
        bars.set_yticks(range(len(names)), labels=names, fontsize=7)
        bars.invert_yaxis()
        shown = f" (the {len(names)} heaviest of {len(source.nash)})" \
            if len(names) < len(source.nash) else ""
        bars.set(xlabel="probability", title=f"Nash distribution at {source.agent_id}'s "
                 f"step {source.step}{shown}")
    for agent_id, points in data.series("league/nash_entropy").items():
        _plot(entropy, points, color=_colour(data.role_of(agent_id)), linewidth=2,
              label=agent_id)
    entropy.set(xlabel=data.x_label, ylabel="entropy (nats)", title="Nash entropy")
    if entropy.get_legend_handles_labels()[0]:
        entropy.legend(fontsize=8)
    return _png(figure)


def draw_diversity(data: LeagueData) -> bytes:
    """``league_diversity.png``: every learner's diversity score, the resets dotted."""
    figure = _figure(11, 5)
    ax = figure.subplots()
    for agent_id, points in data.series("league/diversity_score").items():
        _plot(ax, points, color=_colour(data.role_of(agent_id)), linewidth=2, label=agent_id)
    _mark_resets(ax, data)
    ax.set(xlabel=data.x_label, ylabel="diversity score",
           title="Behavioural diversity of the league")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _png(figure)


PICTURES: tuple[tuple[str, Callable[[LeagueData], bytes], str], ...] = (
    ("league_elo.png", draw_elo, "Elo over training: learners thick, snapshots thin, anchors "
     "dashed, exploiter resets dotted."),
    ("league_payoff.png", draw_payoff, "Win rate of each learner (row) against each member "
     "and anchor (column) in the match log; grey: never met."),
    ("league_nash.png", draw_nash, "The latest Nash distribution over the members, and the "
     "Nash entropy at each evaluation."),
    ("league_diversity.png", draw_diversity, "Diversity score of the league at each "
     "evaluation, exploiter resets dotted."),
)
"""The report's pictures: file name, drawing function, caption."""


# --- the page ------------------------------------------------------------------------------

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1300px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: left; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 2em 0; }
img { max-width: 100%; }
figcaption { color: #555; }
"""


def render_html(data: LeagueData, images: dict[str, bytes]) -> str:
    """The report page: the summary of ``data`` and ``images`` (file name -> PNG bytes,
    in :data:`PICTURES`' order) as data URIs."""
    e = html.escape

    def number(value: float | None, digits: int) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    summary = [("Members", str(len(data.members))),
               ("Last Nash entropy", number(data.latest("league/nash_entropy"), 3)),
               ("Last diversity score", number(data.latest("league/diversity_score"), 3))]
    exploitability = data.latest("exploitability")
    if exploitability is not None:
        summary.append(("Last exploitability", number(exploitability, 3)))
    learners = "".join(
        f"<tr><td>{e(learner.role)}</td><td>{e(learner.agent_id)}</td>"
        f"<td class=\"number\">{'–' if learner.step is None else learner.step}</td>"
        f"<td class=\"number\">{number(learner.elo, 0)}</td>"
        f"<td class=\"number\">{'–' if learner.resets is None else len(learner.resets)}"
        "</td></tr>" for learner in data.learners.values())
    pictures = "".join(
        f"<figure><img alt=\"{e(name)}\" src=\"data:image/png;base64,"
        f"{base64.b64encode(images[name]).decode('ascii')}\">"
        f"<figcaption>{e(caption)}</figcaption></figure>"
        for name, _, caption in PICTURES)
    written = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>League report: {e(data.league_dir.name)}</title>\n<style>{_STYLE}</style>\n"
        "</head>\n<body>\n"
        f"<h1>League report: {e(data.league_dir.name)}</h1>\n"
        f"<p>League directory <code>{e(str(data.league_dir))}</code>, written {written}; "
        f"steps on the pictures' x axes: {e(data.x_label)}.</p>\n"
        "<table>" + "".join(f"<tr><th>{e(k)}</th><td class=\"number\">{e(v)}</td></tr>"
                            for k, v in summary) + "</table>\n"
        "<h2>Learners</h2>\n<table><tr><th>Role</th><th>Learner</th><th>Step</th>"
        f"<th>Elo</th><th>Resets</th></tr>{learners}</table>\n"
        f"<h2>Pictures</h2>\n{pictures}\n</body>\n</html>\n")


def write_league_report(league_dir: str | Path) -> Path:
    """Write the four pictures and the page into ``league_dir``, each atomically.

    Args:
        league_dir: a league directory (:func:`read_league`).

    Returns:
        The page's path, ``<league_dir>/league_report.html``.

    Raises:
        FileNotFoundError: if ``league_dir`` is not a league directory.
        ValueError: if one of its files is corrupt.
    """
    data = read_league(league_dir)
    images = {}
    for name, draw, _ in PICTURES:
        images[name] = draw(data)
        atomic_write_bytes(data.league_dir / name, images[name])
    page = data.league_dir / REPORT_FILE
    atomic_write_text(page, render_html(data, images))
    return page


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m training.league.report LEAGUE_DIR``: write the report, print its paths.

    Args:
        argv: the arguments (``sys.argv[1:]`` when None).
    """
    parser = argparse.ArgumentParser(
        prog="python -m training.league.report",
        description="Draw a league directory's Elo, payoff, Nash and diversity pictures "
                    "and write league_report.html beside them.")
    parser.add_argument("league_dir", type=Path,
                        help="the league directory, e.g. checkpoints/league")
    args = parser.parse_args(argv)
    try:
        page = write_league_report(args.league_dir)
    except (FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    for name, _, _ in PICTURES:
        print(page.parent / name)
    print(page)


__all__ = ["Evaluation", "LeagueData", "Learner", "PICTURES", "Point", "REPORT_FILE", "Reset",
           "draw_diversity", "draw_elo", "draw_nash", "draw_payoff", "main", "read_league",
           "render_html", "write_league_report"]

if __name__ == "__main__":
    main()
