"""Play a battle against any commander of the project in the browser, and rate the player.

Usage::

    wargames-play --name alice --red L5                       # or python -m training.play
    wargames-play --name alice --red checkpoints/run/final.zip --field site:waterloo

It starts the play server of :mod:`envs.play.server` on ``127.0.0.1`` and a free port,
opens the page in the browser (or prints its address with ``--no-browser``) and serves
until interrupted, or until the battle is over with ``--exit-when-over``; the replay is
then written to ``--out`` and the player's rating under ``--name`` updated in the Elo file
``--elo`` (:class:`~training.elo.TeamEloRegistry`). Red (``--red``, :func:`resolve_red`) is
any commander the project has, read as the project reads files from elsewhere; the field
(``--field``, :func:`resolve_field`) is procedural ground, a battle site's sector, a
historical battle or a scenario file. ``docs/play.md`` lists every choice.
"""

from __future__ import annotations

import argparse
import re
import sys
import webbrowser
from pathlib import Path
from typing import Any

import numpy as np
import torch

from data.gis.sectors import SITE_WINDOWS, site_terrain
from data.historical import load_battles
from envs.battles.entity_tokens import ENTITY_TOKEN_DIM, entity_tokens
from envs.battles.multi_battalion_batch import RED, MultiBattalionBatch
from envs.battles.multi_observation import OBS_DIM
from envs.battles.observation import OBS_DIM as DUEL_OBS_DIM
from envs.commanders.arms_doctrine import CombinedArmsDoctrine
from envs.commanders.doctrine import DisciplinedCommander
from envs.play.battle import MAX_SIDE, LiveBattle, PlayField
from envs.play.commanders import BatchedRed, CombinedArmsRed, RedCommander, ScriptedRed
from envs.play.server import DEFAULT_SPEED, PlayResult, PlayServer
from envs.scenario import load_scenario_file
from envs.sim import constants as C
from models.mappo_policy import MAPPOPolicy
from models.wfm1 import ECHELON_BATTALION, ScenarioCard, WFM1Batch, WFM1Policy
from training.commander_files import identify_checkpoint, load_commander_policy
from training.elo import TeamEloRegistry
from training.mappo.battles import PolicyCommander
from training.planners import PLAY_SEARCH, make_planner
from training.wfm1.battles import put_token_orders
from training.wfm1.scenarios import CARD_MAP_SCALE, TERRAINS
from training.wfm1.scenarios import MAX_SIDE as WFM1_MAX_SIDE

CONSOLE_SCRIPT = "wargames-play"
"""The command pyproject.toml installs for :func:`main`."""
DEFAULT_ELO_FILE = "checkpoints/elo_registry.json"
DEFAULT_OUT = "plays"
_LEVEL = re.compile(r"(?:l|scripted_l)([1-9][0-9]*)", re.IGNORECASE)
_SIZE = re.compile(r"([0-9]+)v([0-9]+)")
RED_CHOICES = ("L1..L5", "scripted_l1..scripted_l5", "doctrine", "combined_arms", "planner",
               "an SB3 .zip", "a MAPPO or WFM-1 .pt", "league:POOL.json:AGENT_ID")
RED_FILE_KINDS = ("ppo", "mappo", "wfm1")
"""The kinds of commander file (:data:`models.export.KINDS`) that can command Red."""


class DuelView:
    """A 1v1 commander (an SB3 model or policy) commanding one battalion of an N-vs-M
    battle: it reads the duel's features, which lead every battalion's observation
    (:mod:`envs.battles.multi_observation`)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def predict(self, observation: np.ndarray,
                deterministic: bool = True) -> tuple[np.ndarray, None]:
        obs = np.asarray(observation, np.float32)[..., :DUEL_OBS_DIM]
        return self.model.predict(obs, deterministic=deterministic)[0], None


class WFM1Red:
    """A WFM-1 generalist commanding Red: Red's entity tokens in, one order per own token
    out, told the battle by ``card``; formations follow the combined-arms drill (the
    doctrine's formation orders), as in its training (:mod:`training.wfm1.battles`), but
    for a generalist with a formation head, whose likeliest formation choices replace
    the drill's orders. A generalist with ``echelon_tokens`` reads Red's brigade and
    division tokens too, as in its training."""

    def __init__(self, policy: WFM1Policy, card: ScenarioCard, name: str) -> None:
        self.policy, self.card, self.name = policy.eval(), card, name

    def orders(self, battles: MultiBattalionBatch,
               units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        view = entity_tokens(battles, RED)
        device = self.policy.device
        batch = WFM1Batch.trusted(
            *(torch.from_numpy(a).to(device) for a in (view.tokens, view.pad_mask,
                                                       view.own_mask)),
            self.card.to_tensor()[None].to(device),
            # Red's own brigades count from Red's first unit, after Blue's.
            self.policy.echelon_context(view, battles.n_blue))
        with torch.no_grad():
            actions = self.policy.act(batch, deterministic=True)[0].cpu().numpy()
        column = np.full(battles.n_units, -1, np.intp)
        column[units] = np.arange(len(units))
        orders = np.zeros((battles.n_battles, len(units), C.ACTION_DIM), np.float32)
        _, formations = CombinedArmsDoctrine(battles.config).orders(battles.state,
                                                                    battles.geometry)
        formations = formations[:, units]
        battle, token = np.nonzero(view.own_mask)
        put_token_orders(orders, formations, (battle, column[view.unit[battle, token]]),
                         actions[battle, token])
        return orders, formations


def scripted_level(spec: str) -> int | None:
    """The level of a scripted Red spec (``L3``, ``scripted_l3``), or None for another."""
    match = _LEVEL.fullmatch(spec)
    return None if match is None else int(match.group(1))


def _red_card(field: PlayField, site: str | None) -> ScenarioCard:
    """Red's scenario card for WFM-1: its own units first, as the card of the side it
    commands (:meth:`training.wfm1.scenarios.WFMScenario.card`)."""
    arms = np.array(field.order_of_battle.arm if field.order_of_battle is not None
                    else [C.INFANTRY] * (field.n_blue + field.n_red))
    red = arms[field.n_blue:]
    return ScenarioCard(
        map_scale=field.config.map_width / CARD_MAP_SCALE, echelon_level=ECHELON_BATTALION,
        n_blue_units=float(field.n_red), n_red_units=float(field.n_blue),
        terrain_type=TERRAINS[site or "procedural"],
        cavalry_fraction=float(np.mean(red == C.CAVALRY)),
        artillery_fraction=float(np.mean(red == C.ARTILLERY)), max_units=2 * WFM1_MAX_SIDE)


def _policy_red(policy: Any, name: str) -> RedCommander:
    """A MAPPO policy, or a battalion commander with ``predict``, commanding every Red
    battalion on its mean."""
    if isinstance(policy, MAPPOPolicy) and policy.obs_dim != OBS_DIM:
        raise ValueError(f"{name} is a MAPPO policy reading {policy.obs_dim} numbers: "
                         f"expected {OBS_DIM}, a battalion of the N-vs-M battles (an "
                         "order-following battalion policy commands under a brigade)")
    if not isinstance(policy, MAPPOPolicy):
        policy = DuelView(policy)
    return BatchedRed(PolicyCommander(policy, deterministic=True), name)


def _file_red(path: Path, field: PlayField, site: str | None) -> RedCommander:
    """The commander of a checkpoint file, of the kind the file itself holds
    (:func:`~training.commander_files.identify_checkpoint`): a 1v1 SB3 commander, a MAPPO
    policy file or training checkpoint, or WFM-1. A brigade or division commander is
    refused: it orders battalions' drills, not their moves."""
    try:
        found = identify_checkpoint(path)
    except ValueError as error:  # UnreadableFileError too, keeping its type
        raise type(error)(f"red={str(path)!r} is invalid: {error}") from None
    if found.kind not in RED_FILE_KINDS:
        raise ValueError(f"red={str(path)!r} holds a {found.kind} commander: expected a "
                         "commander of battalions (an SB3 .zip of a 1v1 commander, a MAPPO "
                         f"or WFM-1 .pt) or one of {', '.join(RED_CHOICES)}")
    policy = load_commander_policy(found)
    if found.kind != "wfm1":
        return _policy_red(policy, str(path))
    if policy.token_dim != ENTITY_TOKEN_DIM:
        raise ValueError(f"WFM-1 checkpoint {path} reads tokens of {policy.token_dim} "
                         f"numbers: expected {ENTITY_TOKEN_DIM} (envs.battles.entity_tokens)")
    return WFM1Red(policy, _red_card(field, site), str(path))


def resolve_red(spec: str, field: PlayField, *, site: str | None = None
                ) -> tuple[RedCommander, str]:
    """Red's commander for ``spec`` (``docs/play.md``) on ``field``, and its Elo name.

    Args:
        spec: what ``--red`` says.
        field: the battle's field (the doctrine reads distances by its map, WFM-1's card
            describes it).
        site: the battle site the field is a sector of, if any (WFM-1's card).

    Raises:
        ValueError: for a spec that names nothing of :data:`RED_CHOICES`, a scripted level
            outside 1 to 5, or a file that is not a commander of these kinds (named).
        FileNotFoundError: for a checkpoint or pool that does not exist.
        KeyError: for an agent id that is not in the pool.
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"red={spec!r} is invalid: expected one of {', '.join(RED_CHOICES)}")
    level = scripted_level(spec)
    if level is not None:
        if level not in C.SCRIPTED_LEVELS:
            raise ValueError(f"red={spec!r} is invalid: the scripted levels are L1 to "
                             f"L{C.NUM_CURRICULUM_LEVELS}")
        return ScriptedRed(level), f"scripted_team_l{level}"
    if spec == "doctrine":
        config = field.config
        doctrine = DisciplinedCommander(map_diagonal=config.diagonal,
                                        max_turn_rate=config.max_turn_rate)
        return BatchedRed(PolicyCommander(doctrine, deterministic=True), "doctrine"), \
            "doctrine_team"
    if spec == "combined_arms":
        red = CombinedArmsRed()
        return red, red.name
    if spec == "planner":
        # Several arms: the combined-arms doctrine's plans are its candidates.
        arms = field.order_of_battle is not None and len(set(field.order_of_battle.arm)) > 1
        red = make_planner("arms" if arms else "team", search=PLAY_SEARCH,
                           diagonal=field.config.diagonal, seed=0)
        return red, red.name
    if spec.startswith("league:"):
        manifest, _, agent = spec[len("league:"):].rpartition(":")
        if not manifest or not agent:
            raise ValueError(f"red={spec!r} is invalid: expected league:POOL.json:AGENT_ID")
        if not Path(manifest).is_file():
            raise FileNotFoundError(f"red={spec!r}: the league pool {manifest} does not exist")
        from training.league.agent_pool import AgentPool

        snapshot = AgentPool(manifest).load_snapshot(agent)
        return _policy_red(snapshot, f"league agent {agent}"), agent
    path = Path(spec)
    if path.suffix == ".pt" and not path.is_file():
        raise FileNotFoundError(f"red={spec!r}: no such checkpoint")
    if path.suffix == ".pt" or path.is_file() or path.with_name(path.name + ".zip").is_file():
        return _file_red(path, field, site), spec
    raise ValueError(f"red={spec!r} is invalid: expected one of {', '.join(RED_CHOICES)} "
                     "(a checkpoint path must exist)")


def resolve_field(spec: str, *, n_blue: int = 2, n_red: int = 2,
                  max_steps: int | None = None) -> tuple[PlayField, str | None]:
    """The field for ``spec`` (``docs/play.md``), and the battle site it is on, if any.

    Args:
        spec: ``procedural``, ``site:NAME``, ``historical:ID`` or a scenario file's path.
        n_blue: Blue's battalions on a procedural or site field.
        n_red: Red's battalions on a procedural or site field.
        max_steps: the step limit; None: the scenario's, else
            :data:`~envs.sim.constants.MAX_STEPS`.

    Raises:
        ValueError: for an unknown site or battle, or sizes out of range (named).
        FileNotFoundError: for a scenario file that does not exist.
        envs.scenario.ScenarioError: for a scenario file that is not valid.
    """
    steps = C.MAX_STEPS if max_steps is None else max_steps
    if spec == "procedural":
        return PlayField.procedural(n_blue, n_red, max_steps=steps), None
    if spec.startswith("site:"):
        site = spec[len("site:"):]
        if site not in SITE_WINDOWS:
            raise ValueError(f"field={spec!r} is invalid: expected site: and one of "
                             f"{', '.join(SITE_WINDOWS)}")
        return PlayField.on_ground(site_terrain(site), n_blue, n_red, name=f"site {site}",
                                   max_steps=steps), site
    if spec.startswith("historical:"):
        battle = spec[len("historical:"):]
        battles = {scenario.id: scenario for scenario in load_battles()}
        if battle not in battles:
            raise ValueError(f"field={spec!r} is invalid: expected historical: and a battle of "
                             f"data/historical/battles.json, e.g. {', '.join(list(battles)[:4])}")
        return PlayField.from_scenario(battles[battle], max_steps=max_steps), None
    return PlayField.from_scenario(load_scenario_file(spec), max_steps=max_steps), None


def _size(text: str) -> tuple[int, int]:
    match = _SIZE.fullmatch(text)
    if match is None or not all(1 <= int(n) <= MAX_SIDE for n in match.groups()):
        raise argparse.ArgumentTypeError(f"--size {text!r} is invalid: expected NvM with 1 to "
                                         f"{MAX_SIDE} battalions a side, e.g. 2v2")
    return int(match.group(1)), int(match.group(2))


def parser() -> argparse.ArgumentParser:
    """The command line's arguments (module docstring)."""
    installed = Path(sys.argv[0]).name == CONSOLE_SCRIPT
    p = argparse.ArgumentParser(prog=CONSOLE_SCRIPT if installed else "python -m training.play",
                                description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True, help="the player's name in the Elo file")
    p.add_argument("--red", default="L5", help=f"Red's commander: {', '.join(RED_CHOICES)}")
    p.add_argument("--field", default="procedural", help="procedural, site:NAME, "
                   "historical:ID or a scenario file (.yaml, .json)")
    p.add_argument("--size", type=_size, default=(2, 2),
                   help="battalions a side on a procedural or site field (default 2v2)")
    p.add_argument("--seed", type=int, default=0, help="the battle's seed")
    p.add_argument("--max-steps", type=int, default=None,
                   help=f"the step limit (default: the scenario's, else {C.MAX_STEPS})")
    p.add_argument("--speed", type=float, default=DEFAULT_SPEED,
                   help="the clock's starting speed in steps a second")
    p.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    p.add_argument("--out", type=Path, default=Path(DEFAULT_OUT),
                   help=f"where the replay is written (default {DEFAULT_OUT}/)")
    p.add_argument("--elo", type=Path, default=Path(DEFAULT_ELO_FILE),
                   help=f"the Elo file (default {DEFAULT_ELO_FILE})")
    p.add_argument("--no-browser", action="store_true",
                   help="print the page's address instead of opening a browser")
    p.add_argument("--exit-when-over", action="store_true",
                   help="stop serving once the battle is over and recorded")
    return p


def build_server(argv: list[str] | None = None) -> tuple[PlayServer, argparse.Namespace]:
    """The play server of a command line (not started) and its arguments: Red resolved,
    the field built, the Elo file checked, its update hooked to the battle's end.

    Raises:
        SystemExit: (argparse) for arguments that cannot be used, naming them.
    """
    p = parser()
    args = p.parse_args(argv)
    registry = _registry(p, args.elo, args.name)
    try:
        field, site = resolve_field(args.field, n_blue=args.size[0], n_red=args.size[1],
                                    max_steps=args.max_steps)
        red, elo_name = resolve_red(args.red, field, site=site)
        battle = LiveBattle(field, red, seed=args.seed, notes={"blue": args.name})
        server = PlayServer(battle, player=args.name, out_dir=args.out, port=args.port,
                            speed=args.speed, on_result=_rate(registry, args.name, elo_name))
    except (OSError, ValueError, KeyError, TypeError) as error:
        p.error(str(error))
    return server, args


def _registry(p: argparse.ArgumentParser, path: Path, name: str) -> TeamEloRegistry:
    """The Elo file, read now so that a broken one is reported before the battle."""
    try:
        registry = TeamEloRegistry(path)
    except (OSError, ValueError) as error:
        p.error(str(error))
    if registry.is_baseline(name):
        p.error(f"--name {name!r} is a fixed Elo baseline: choose a name of your own")
    return registry


def _rate(registry: TeamEloRegistry, player: str, opponent: str):
    """The result hook: one game of ``player`` against ``opponent`` in ``registry``, saved
    (merged under the file's lock, written atomically: :meth:`~training.elo.EloRegistry.save`)."""

    def rate(result: PlayResult) -> dict[str, Any]:
        delta = registry.update(player, opponent, result.score)
        registry.save()
        rating = registry.get_rating(player)
        return {"Elo": f"{player} {rating:.1f} ({delta:+.1f}) against {opponent} "
                       f"in {registry.path}"}

    return rate


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    server, args = build_server(argv)
    server.start()
    print(f"The battle is at {server.url} (Ctrl-C to stop)", flush=True)
    if not args.no_browser:
        webbrowser.open(server.url)
    try:
        while not server.wait(0.5):
            if server.result is not None and args.exit_when_over:
                break
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    result = server.result
    if result is None:
        print("Stopped before the battle was over: nothing recorded.")
        return 1
    print(f"{result.outcome} after {result.steps} steps; replay {result.replay}, "
          f"viewer {result.page}")
    for value in result.notes.values():
        print(value)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
