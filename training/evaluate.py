"""Evaluate a commander against an opponent: wins, draws and losses over many battles.

Opponents are ``scripted_l1`` .. ``scripted_l5`` (the built-in scripted Red of that
curriculum level), ``random`` (uniformly random orders), or the path of an SB3 ``.zip``
checkpoint that then commands Red. Blue wins when Red is routed or destroyed while Blue
is neither; it loses in the mirror case; anything else (both broken on the same step, or
the step limit) is a draw. This module, the path the reference API documents, holds the
command line and hands on the objects of :mod:`training.ppo.evaluation` (where the SB3
stack's callbacks take them from).

Usage::

    python training/evaluate.py --checkpoint checkpoints/run/final --opponent scripted_l3 \\
        --n-episodes 100 --seed 0 --elo-registry checkpoints/elo_registry.json \\
        --agent-name my_run_v1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from training.ppo.evaluation import (
    DuelSettings,
    EvaluationResult,
    env_kwargs_of,
    evaluate,
    evaluate_detailed,
    play_duels,
    run_episodes_with_model,
)

__all__ = ["DuelSettings", "EvaluationResult", "env_kwargs_of", "evaluate", "evaluate_detailed",
           "main", "play_duels", "run_episodes_with_model"]

CONSOLE_SCRIPT = "wargames-evaluate"
"""The command pyproject.toml installs for :func:`main`."""


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    # The usage line names the command as it was run: the installed script or the file.
    installed = Path(sys.argv[0]).name == CONSOLE_SCRIPT
    parser = argparse.ArgumentParser(
        prog=CONSOLE_SCRIPT if installed else "python training/evaluate.py",
        description="Evaluate a PPO checkpoint against an opponent.")
    parser.add_argument("--checkpoint", required=True, help="SB3 .zip (suffix optional)")
    parser.add_argument("--opponent", default="scripted_l5",
                        help="scripted_l1..scripted_l5, random, or a checkpoint path")
    parser.add_argument("--n-episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--stochastic", action="store_true",
                        help="sample Blue's actions instead of taking the mean")
    parser.add_argument("--elo-registry", default=None,
                        help="update this Elo registry (JSON) with the result")
    parser.add_argument("--agent-name", default=None,
                        help="name of the evaluated agent in the Elo registry")
    args = parser.parse_args(argv)
    if args.elo_registry and not args.agent_name:
        parser.error("--elo-registry needs --agent-name")

    result = evaluate_detailed(args.checkpoint, args.n_episodes, not args.stochastic,
                               args.seed, args.opponent)
    print(f"{args.checkpoint} vs {args.opponent} over {result.n_episodes} battles: "
          f"{result.wins} won, {result.draws} drawn, {result.losses} lost "
          f"(win rate {result.win_rate:.1%})")
    if args.elo_registry:
        from training.elo import EloRegistry

        registry = EloRegistry(args.elo_registry)
        delta = registry.update(args.agent_name, args.opponent, result.score,
                                n_games=result.n_episodes)
        registry.save()
        print(f"Elo of {args.agent_name}: {registry.get_rating(args.agent_name):.1f} "
              f"({delta:+.1f}) in {args.elo_registry}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
