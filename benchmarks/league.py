"""League training against plain self-play and scripted-only training, at the same compute.

Three arms train 2v2 MAPPO for the same total env-steps, all from the same warm
start, made once: the disciplined doctrine imitated for ``--warm-start-steps``, or
the weights of a v1 commander (``--v1-checkpoint``):

- ``league``: the three roles on one league directory, ``alphastar`` matchmaking and
  the gate reset rule; the main agent gets ``--main-share`` of the env-steps (70 %
  by default: at half, docs/performance.md, it trained too little), each exploiter
  half of the rest; the roles take turns one rollout at a time
  (:func:`~training.league.role.train_in_turns`: one process, the same files three
  processes would share).
- ``self_play``: MAPPO with the team self-play pool (half the battles against past
  snapshots, half against scripted L5).
- ``scripted``: MAPPO against scripted L5 only.

Each arm's final policy then plays, deterministically, 200 unseen battles against
scripted L5 and the doctrine team, the other finals (both chairs), and its
**exploiter**: a fresh learner from the same warm start trained with a fixed budget
(``--exploiter-steps``) against the frozen final policy; the exploiter's win rate
over 200 unseen battles is the arm's exploitability (lower is better). The
league's diagnostics come from its own files: resets, Nash entropy, diversity,
Elo of every member and the main agent's Elo against the fixed anchors; its report
(:mod:`training.league.report`) is written into the league directory.

Every phase keeps its results in ``--dir`` (a policy file or a JSON file, written
atomically); run again with the same ``--dir`` to reuse what is done.

Usage::

    python -m benchmarks.league [--steps 3000000] [--exploiter-steps 600000] [--dir DIR]
    python -m benchmarks.league --arms league --exploiter-steps 0   # the main agent alone
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import argument_parser
from models.mappo_files import load_policy, save_policy
from storage.files import atomic_write_text, read_json_lines
from training.elo import TEAM_BASELINE_RATINGS
from training.evaluate import EvaluationResult
from training.league import AgentPool
from training.league.config import (
    LeagueExploiterConfig,
    MainAgentConfig,
    MainExploiterConfig,
    league_dir_settings,
)
from training.league.launch import role_class
from training.league.layout import ANCHORS, ELO_FILE, HISTORY_FILE, POOL_FILE
from training.league.role import train_in_turns
from training.mappo.battles import DOCTRINE_TEAM, play_team_battles, score
from training.mappo.config import MAPPOConfig
from training.mappo.trainer import MAPPOTrainer
from training.train_mappo import train_mappo

ARMS = ("league", "self_play", "scripted")
EVAL_SEED = 900_000
"""Base seed of the final evaluations: battles no arm trained on."""
N_BLUE = N_RED = 2
ROLES = ("main_agent", "main_exploiter", "league_exploiter")
"""The league arm's roles; the main agent gets ``--main-share`` of the env-steps, each
exploiter half of the rest."""
ROLE_CONFIGS = {"main_agent": MainAgentConfig, "main_exploiter": MainExploiterConfig,
                "league_exploiter": LeagueExploiterConfig}


def common(args: Any, folder: Path) -> dict[str, Any]:
    """The settings every learner of every arm shares: the arms choose their opponents
    (no doctrine battles, whatever MAPPO's default)."""
    return dict(n_blue=N_BLUE, n_red=N_RED, n_envs=args.n_envs, rollout_steps=args.rollout_steps,
                doctrine_share=0.0,
                init_policy=str(folder / "warm_start.pt"), enable_wandb=False,
                progress_bar=False, verbose=0)


def cached_json(path: Path, make: Callable[[], Any]) -> Any:
    """``make()``'s result, kept in ``path`` (reused when it exists)."""
    if path.exists():
        return json.loads(path.read_text())
    result = make()
    atomic_write_text(path, json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result


# --- the warm start and the arms ----------------------------------------------------------

def warm_start(args: Any, folder: Path) -> Path:
    """The shared starting policy: a v1 commander's weights (``--v1-checkpoint``), or
    the doctrine imitated for ``--warm-start-steps``."""
    path = folder / "warm_start.pt"
    if not path.exists():
        config = MAPPOConfig(n_blue=N_BLUE, n_red=N_RED, n_envs=args.n_envs,
                             rollout_steps=args.rollout_steps,
                             v1_checkpoint=args.v1_checkpoint,
                             warm_start_steps=args.warm_start_steps,
                             # A phase of its own: the whole imitation, then one rollout.
                             warm_start_max_share=1.0,
                             total_timesteps=args.warm_start_steps + args.rollout_steps,
                             seed=args.seed, checkpoint_dir=str(folder / "warm_start"),
                             enable_wandb=False, progress_bar=False, verbose=0)
        save_policy(MAPPOTrainer(config).policy, path)
    return path


def train_mappo_arm(args: Any, folder: Path, arm: str) -> dict[str, Any]:
    """The ``self_play`` or ``scripted`` arm: :func:`train_mappo` for ``--steps``."""
    where = folder / arm
    config = MAPPOConfig(**common(args, folder), total_timesteps=args.steps, seed=args.seed,
                         enable_self_play=arm == "self_play",
                         self_play_pool_dir=str(where / "pool"),
                         checkpoint_dir=str(where), log_dir=str(where / "logs"),
                         elo_registry_path=str(where / "elo.json"))
    started = time.perf_counter()
    result = train_mappo(config)
    save_policy(result.policy, folder / f"{arm}_final.pt")
    return {"env_steps": result.total_steps, "minutes": (time.perf_counter() - started) / 60}


def role_config(args: Any, folder: Path, role: str) -> Any:
    """The league arm's config of ``role``: its share of ``--steps``, every file under
    ``folder / "league"``, ``alphastar`` matchmaking and gate."""
    share = args.main_share if role == "main_agent" else (1 - args.main_share) / 2
    resets = {} if role == "main_agent" else dict(
        reset_rule="alphastar", gate_min_steps=args.gate_min_steps,
        gate_max_steps=args.gate_max_steps)
    return ROLE_CONFIGS[role](
        **common(args, folder), **league_dir_settings(role, folder / "league"), **resets,
        total_timesteps=int(args.steps * share), seed=args.seed + ROLES.index(role),
        snapshot_freq=args.snapshot_freq, eval_freq=args.eval_freq, matchmaking="alphastar")


def train_league_arm(args: Any, folder: Path) -> dict[str, Any]:
    """The ``league`` arm: the three roles, one rollout at a time, the one furthest
    behind its budget first; then each role's final snapshot and checkpoint."""
    started = time.perf_counter()
    roles = train_in_turns([role_class(role).from_config(role_config(args, folder, role))
                            for role in ROLES])
    save_policy(roles[0].trainer.policy, folder / "league_final.pt")
    return {"env_steps": sum(r.trainer.total_steps for r in roles),
            "minutes": (time.perf_counter() - started) / 60,
            "role_env_steps": {r.agent_id: r.trainer.total_steps for r in roles},
            "reset_count": {r.agent_id: r.reset_count for r in roles}}


# --- what the finals are worth ------------------------------------------------------------

def outcomes_row(outcomes: np.ndarray) -> dict[str, float]:
    """The won / drawn / lost shares of Blue's ``outcomes``."""
    result = EvaluationResult.from_outcomes(outcomes)
    return {"won": result.win_rate, "drawn": result.draw_rate, "lost": result.loss_rate}


def against_scripted(args: Any, policy: Any) -> dict[str, dict[str, float]]:
    """Won / drawn / lost over ``--eval-battles`` unseen battles against each anchor."""
    return {name: outcomes_row(play_team_battles(
        policy, opponent, n_blue=N_BLUE, n_red=N_RED, n_episodes=args.eval_battles,
        seed=EVAL_SEED)) for name, opponent in (("scripted_team_l5", 5),
                                                ("doctrine_team", DOCTRINE_TEAM))}


def cross_play(args: Any, finals: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each final's mean score (win 1, draw 0.5) against each other, half the battles
    from each chair, both sides deterministic."""
    half = args.eval_battles // 2
    table: dict[str, dict[str, float]] = {arm: {} for arm in finals}
    for i, a in enumerate(finals):
        for b in list(finals)[i + 1:]:
            blue_a = play_team_battles(finals[a], finals[b], n_blue=N_BLUE, n_red=N_RED,
                                       n_episodes=half, seed=EVAL_SEED,
                                       opponent_deterministic=True)
            blue_b = play_team_battles(finals[b], finals[a], n_blue=N_BLUE, n_red=N_RED,
                                       n_episodes=half, seed=EVAL_SEED,
                                       opponent_deterministic=True)
            score_a = score(np.concatenate([blue_a, -blue_b]))
            table[a][b], table[b][a] = score_a, 1 - score_a
    return table


def exploit(args: Any, folder: Path, arm: str, target: Any) -> dict[str, Any]:
    """Train a fresh exploiter from the warm start against the frozen ``target`` for
    ``--exploiter-steps``, the target acting on its policy's mean as it does when
    deployed; the exploiter's win rate (both deterministic) before and after, over
    unseen battles."""
    config = MAPPOConfig(**common(args, folder), total_timesteps=args.exploiter_steps,
                         seed=args.seed + 1000, checkpoint_dir=str(folder / f"exploit_{arm}"),
                         log_dir=str(folder / f"exploit_{arm}" / "logs"))
    trainer = MAPPOTrainer(config)

    def win_rate() -> dict[str, float]:
        return outcomes_row(play_team_battles(
            trainer.policy, target, n_blue=N_BLUE, n_red=N_RED,
            n_episodes=args.eval_battles, seed=EVAL_SEED + 50_000,
            opponent_deterministic=True))

    before = win_rate()
    trainer.battles.deal([target], 0.0, deterministic=True)
    while trainer.total_steps + trainer.rollout_steps <= config.total_timesteps:
        trainer.learn_from(trainer.collect_rollout())
    return {"before": before, "after": win_rate(), "env_steps": trainer.total_steps}


# --- the league's own record --------------------------------------------------------------

def league_diagnostics(folder: Path) -> dict[str, Any]:
    """Resets, Nash entropy, diversity, Elo of every member and the main agent's Elo
    over its evaluations, from the league directory's files."""
    league = folder / "league"
    ratings = json.loads((league / ELO_FILE).read_text())["ratings"]
    members = [r.agent_id for pool in league.glob(f"*/{POOL_FILE}") for r in AgentPool(pool).list()]
    history = {role: read_json_lines(league / role / HISTORY_FILE)[0] for role in ROLES}
    main = history["main_agent"]
    return {
        "members": len(members), "members_rated": sum(m in ratings for m in members),
        "resets": json.loads((folder / "league.json").read_text())["reset_count"],
        "nash_entropy": [row["metrics"].get("league/nash_entropy") for row in main],
        "diversity": [row["metrics"].get("league/diversity_score") for row in main],
        "main_elo": [(row["step"], row["metrics"]["elo/main_agent"]) for row in main],
        "learner_elo": {role: rows[-1]["metrics"][f"elo/{role}"] for role, rows in
                        history.items() if rows},
        "anchors": {name: TEAM_BASELINE_RATINGS[name] for name in ANCHORS},
    }


# --- the table ----------------------------------------------------------------------------

def percent(row: dict[str, float]) -> str:
    return f"{row['won']:.0%} / {row['drawn']:.0%} / {row['lost']:.0%}"


def print_tables(results: dict[str, Any]) -> None:
    arms = [arm for arm in ARMS if arm in results["arms"]]
    print("\n| arm | env-steps | training min | vs L5 (won/drawn/lost) | vs doctrine team | "
          "exploiter's win rate before -> after | exploitability |")
    print("|---|---:|---:|---|---|---|---:|")
    for arm in arms:
        run, scripted = results["arms"][arm], results["scripted"][arm]
        exploiter = results["exploit"].get(arm)
        exploited = ("not run", "-") if exploiter is None else (
            f"{exploiter['before']['won']:.0%} -> {exploiter['after']['won']:.0%}",
            f"{exploiter['after']['won']:.0%}")
        print(f"| {arm} | {run['env_steps']:,} | {run['minutes']:.1f} | "
              f"{percent(scripted['scripted_team_l5'])} | {percent(scripted['doctrine_team'])} "
              f"| {exploited[0]} | {exploited[1]} |")
    if len(arms) > 1:
        print_cross_play(results, arms)
    if "league" in results:
        print_league(results)
    if "report" in results:
        print(f"Report: {results['report']}")


def print_cross_play(results: dict[str, Any], arms: list[str]) -> None:
    print("\nCross-play, mean score of the row against the column (win 1, draw 0.5):\n")
    print("| | " + " | ".join(arms) + " |")
    print("|---|" + "---:|" * len(arms))
    for a in arms:
        cells = [("-" if a == b else f"{results['cross_play'][a][b]:.2f}") for b in arms]
        print(f"| {a} | " + " | ".join(cells) + " |")


def print_league(results: dict[str, Any]) -> None:
    league = results["league"]
    elo = league["main_elo"]
    print(f"\nLeague: {league['members']} members, {league['members_rated']} with an Elo "
          f"rating; resets {league['resets']}; Nash entropy (last) "
          f"{league['nash_entropy'][-1]:.3f} nats; diversity (last) {league['diversity'][-1]:.3f}; "
          f"learners' Elo {({k: round(v) for k, v in league['learner_elo'].items()})}; "
          f"anchors {league['anchors']}")
    print("Main agent's Elo over its evaluations: " + ", ".join(
        f"{step:,}: {rating:.0f}" for step, rating in elo[::max(1, len(elo) // 8)]) +
        f", final {elo[-1][0]:,}: {elo[-1][1]:.0f}")


def main() -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--steps", type=int, default=3_000_000,
                        help="env-steps per arm (the league's three roles together)")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS),
                        help="the arms to train and measure (default: all three)")
    parser.add_argument("--exploiter-steps", type=int, default=600_000,
                        help="env-steps of each final's exploiter; 0: no exploiters")
    parser.add_argument("--warm-start-steps", type=int, default=300_000,
                        help="env-steps of the doctrine imitated as the warm start")
    parser.add_argument("--v1-checkpoint", default=None,
                        help="start every arm from this v1 (duel) commander instead")
    parser.add_argument("--eval-battles", type=int, default=200)
    parser.add_argument("--n-envs", type=int, default=128)
    parser.add_argument("--rollout-steps", type=int, default=8192)
    parser.add_argument("--main-share", type=float, default=0.7,
                        help="the league's env-steps for its main agent (each exploiter: "
                        "half of the rest)")
    parser.add_argument("--snapshot-freq", type=int, default=100_000,
                        help="env-steps between a league role's snapshots")
    parser.add_argument("--eval-freq", type=int, default=50_000,
                        help="env-steps between a league role's evaluations")
    parser.add_argument("--gate-min-steps", type=int, default=200_000)
    parser.add_argument("--gate-max-steps", type=int, default=400_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None,
                        help="working folder (reused phases); default: a new temporary one")
    args = parser.parse_args()
    if not 0 < args.main_share < 1:
        parser.error(f"--main-share={args.main_share} is invalid: expected 0 < share < 1")
    if args.exploiter_steps < 0:
        parser.error(f"--exploiter-steps={args.exploiter_steps} is invalid: expected >= 0")
    arms = [arm for arm in ARMS if arm in args.arms]
    folder = (args.dir or Path(tempfile.mkdtemp(prefix="league_benchmark_"))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    print(f"working folder {folder}", flush=True)
    started = time.perf_counter()

    warm_start(args, folder)
    results: dict[str, Any] = {"arms": {}}
    for arm in arms:
        make = (lambda: train_league_arm(args, folder)) if arm == "league" else \
            (lambda arm=arm: train_mappo_arm(args, folder, arm))
        results["arms"][arm] = cached_json(folder / f"{arm}.json", make)
        print(f"{arm}: trained {results['arms'][arm]}", flush=True)
    finals = {arm: load_policy(folder / f"{arm}_final.pt") for arm in arms}
    # Each arm's evaluation is its own file, so a run of fewer arms reuses what it shares.
    results["scripted"] = {arm: cached_json(folder / f"scripted_eval_{arm}.json",
                                            lambda policy=policy: against_scripted(args, policy))
                           for arm, policy in finals.items()}
    if len(arms) > 1:
        results["cross_play"] = cached_json(
            folder / f"cross_play_{'_'.join(arms)}.json", lambda: cross_play(args, finals))
    results["exploit"] = {} if args.exploiter_steps == 0 else {
        arm: cached_json(folder / f"exploit_{arm}.json",
                         lambda arm=arm: exploit(args, folder, arm, finals[arm]))
        for arm in arms}
    if "league" in arms:
        results["league"] = league_diagnostics(folder)
        from training.league.report import write_league_report

        results["report"] = str(write_league_report(folder / "league"))
    print_tables(results)
    print(f"\nwhole benchmark: {(time.perf_counter() - started) / 60:.1f} min (phases reused "
          f"from {folder} are not timed again)")


if __name__ == "__main__":
    main()
