"""A league of brigade (or division) commanders: the three roles trained in turns, then
every member measured.

1. The main agent, the main exploiter and the league exploiter, each an
   :class:`~training.league.echelon_learner.EchelonLearner` with HRL phase 2's
   settings (``configs/hrl/phase2_brigade.yaml``; phase 3's for ``--echelon
   division``) over the given frozen lower echelon (``--battalion-policy``, phase 1's
   order-following battalions; ``--brigade-policy`` for a division), trained in turns
   (:func:`~training.league.role.train_in_turns`) on one league folder: league members
   command Red's echelon in their share of the battles, scripted Red the rest.
2. The league's table: every role's Elo, pool and matches.
3. Each role's final commander against scripted Red (L3, L5) and the doctrine, and
   head to head (both sides commanded by frozen commanders: the final main agent
   against its first snapshot, the exploiters, and ``--reference``, a commander
   trained alone, e.g. HRL phase 2's).

Usage::

    python -m benchmarks.echelon_league --battalion-policy PATH [--steps 100000]
        [--echelon brigade] [--reference PATH] [--episodes 200] [--out DIR]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import argument_parser
from training.echelons.config import BrigadeConfig, DivisionConfig
from training.echelons.curriculum import HRLPhase
from training.echelons.pipeline import phase_settings
from training.echelons.trainer import evaluate_commander
from training.elo import TeamEloRegistry
from training.league import AgentPool, MatchDatabase
from training.league.echelon_learner import EchelonLearner
from training.league.launch import role_class
from training.league.layout import ANCHORS, POOL_FILE
from training.league.role import train_in_turns

ROLES = ("main_agent", "main_exploiter", "league_exploiter")
SEEDS = {"main_agent": 42, "main_exploiter": 43, "league_exploiter": 44}
EVALUATION_SEED = 900_000


def role_settings(role: str, folder: Path, steps: int) -> dict[str, Any]:
    """The league arguments of ``role`` (the seeds' defaults, frequencies scaled to the
    budget)."""
    pools = {"main_agent": ["main_exploiter", "league_exploiter"],
             "main_exploiter": ["main_agent"],
             "league_exploiter": ["main_agent", "main_exploiter"]}[role]
    settings = dict(snapshot_freq=max(steps // 5, 1), eval_freq=max(steps // 10, 1),
                    checkpoint_freq=steps, n_eval_episodes=20,
                    scripted_share=0.25 if role == "main_agent" else 0.0,
                    league_pools=[folder / other / POOL_FILE for other in pools])
    if role != "main_agent":
        settings.update(reset_win_rate_threshold=0.3, reset_window_size=5)
    return settings


def rates(outcomes: np.ndarray) -> str:
    """``won / drawn / lost`` in percent: one table cell."""
    return " / ".join(f"{np.mean(outcomes == v):.0%}" for v in (1, 0, -1))


def head_to_head(blue: Any, red: Any, learner: EchelonLearner, n: int) -> np.ndarray:
    """Outcomes (Blue's side) of ``n`` battles, ``blue`` commanding Blue and ``red``
    Red's echelon, both on their mode."""
    batch = learner.make_batch(n)
    batch.red_commanders.deal([(red, np.arange(n))], deterministic=True)
    return evaluate_commander(blue, batch, n, EVALUATION_SEED)


def main() -> None:
    parser = argument_parser(__doc__, __spec__.name)
    parser.add_argument("--echelon", choices=("brigade", "division"), default="brigade")
    parser.add_argument("--battalion-policy", required=True,
                        help="phase 1's order-following battalion policy (a MAPPO file)")
    parser.add_argument("--brigade-policy", help="phase 2's brigadier (division only)")
    parser.add_argument("--reference", help="a commander of the echelon trained alone")
    parser.add_argument("--steps", type=int, default=100_000, help="commands per role")
    parser.add_argument("--episodes", type=int, default=200, help="battles per measurement")
    parser.add_argument("--out", help="league folder (default: a temporary one)")
    args = parser.parse_args()
    folder = Path(args.out or tempfile.mkdtemp(prefix="echelon_league_"))
    phase = HRLPhase.PHASE_2_BRIGADE if args.echelon == "brigade" else HRLPhase.PHASE_3_DIVISION
    lower = {HRLPhase.PHASE_1_BATTALION: Path(args.battalion_policy)}
    if args.brigade_policy:
        lower[HRLPhase.PHASE_2_BRIGADE] = Path(args.brigade_policy)
    config_class = BrigadeConfig if args.echelon == "brigade" else DivisionConfig

    started = time.perf_counter()
    roles = {}
    for role in ROLES:
        settings = phase_settings(phase, folder / "runs", lower, {
            "total_timesteps": args.steps, "seed": SEEDS[role],
            "log_dir": str(folder / "logs" / role), "enable_wandb": False,
            "progress_bar": False, "verbose": 0})
        learner = EchelonLearner(config_class(**settings))
        roles[role] = role_class(role).in_league(learner, folder,
                                                 **role_settings(role, folder, args.steps))
    train_in_turns(list(roles.values()))
    wall = time.perf_counter() - started

    main_agent = roles["main_agent"]
    ratings = TeamEloRegistry(folder / "elo.json").all_ratings()
    matches = MatchDatabase(folder / "matches.jsonl").results
    print(f"# A league of {args.echelon} commanders: {args.steps:,} commands a role, "
          f"{wall / 60:.1f} min in all\n")
    print("| role | Elo | snapshots | resets | matches recorded |")
    print("|---|---:|---:|---:|---:|")
    for name, role in roles.items():
        own = AgentPool(role.pool.manifest_path).list()
        print(f"| {name} | {ratings[role.agent_id]:.0f} | {len(own)} | {role.reset_count} | "
              f"{sum(r.agent_id == role.agent_id for r in matches)} |")
    registry = TeamEloRegistry(folder / "elo.json")
    print("\nAnchors (fixed): " + ", ".join(f"{name} {registry.get_rating(name):.0f}"
                                          for name in ANCHORS))

    n = args.episodes
    print(f"\nEach final commander as Blue, {n} battles a cell, won / drawn / lost:\n")
    print("| commander | vs L3 | vs L5 | vs doctrine |")
    print("|---|---|---|---|")
    for name, role in roles.items():
        doctrine = role.trainer.anchors()["doctrine_team"]
        played = role.trainer.play_matches({"l3": 3, "l5": 5, "doctrine": doctrine}, n,
                                           EVALUATION_SEED, opponent_deterministic=True)
        print(f"| {name} | {rates(played['l3'])} | {rates(played['l5'])} | "
              f"{rates(played['doctrine'])} |")

    learner = main_agent.trainer
    final = learner.load_snapshot(main_agent.trainer.final_checkpoint)
    first = learner.load_snapshot(
        main_agent.pool.resolve_snapshot(f"{main_agent.agent_id}_v000000"))
    opponents = {"its first snapshot (its warm start, if any)": first,
                 **{f"final {name}": learner.load_snapshot(role.trainer.final_checkpoint)
                    for name, role in roles.items() if name != "main_agent"}}
    if args.reference:
        opponents["the reference (trained alone)"] = learner.load_snapshot(args.reference)
    print(f"\nHead to head, {n} battles each way, won / drawn / lost for the main agent:\n")
    print("| opponent | main agent Blue | main agent Red |")
    print("|---|---|---|")
    for name, opponent in opponents.items():
        as_blue = head_to_head(final, opponent, learner, n)
        as_red = -head_to_head(opponent, final, learner, n)
        print(f"| {name} | {rates(as_blue)} | {rates(as_red)} |")
    print(f"\nleague folder: {folder}")


if __name__ == "__main__":
    main()
