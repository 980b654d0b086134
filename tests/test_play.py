"""Playing a battle against a commander: the orders a person gives, the live battle, the
server that must be safe to leave running, and the command line that resolves Red and
rates the player. The browser plays it in ``tests/test_play_browser.py``."""

from __future__ import annotations

import http.client
import json
import math
import re
import socket
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from envs.battles.multi_observation import OBS_DIM, STATE_DIM
from envs.play.battle import LiveBattle, OrderError, PlayField
from envs.play.commanders import BatchedRed, CombinedArmsRed
from envs.play.orders import ARRIVED
from envs.play.server import MAX_BODY_BYTES, PlayServer
from envs.rendering.replay import load_replay
from envs.scenario import load_scenario_file
from envs.scenario_battle import scenario_placement
from envs.sim import constants as C
from models.mappo_files import save_policy
from models.mappo_policy import MAPPOPolicy
from models.wfm1 import WFM1Policy
from training.elo import TeamEloRegistry
from training.play import build_server, resolve_field, resolve_red


def hold(battles, units):
    """Red stands still and holds fire."""
    return np.zeros((battles.n_battles, len(units), C.ACTION_DIM), np.float32)


def small_battle(max_steps: int = 200, seed: int = 3) -> LiveBattle:
    return LiveBattle(PlayField.procedural(2, 1, max_steps=max_steps),
                      BatchedRed(hold, "hold"), seed=seed, notes={"blue": "tester"})


# --- the orders and the live battle --------------------------------------------------------

def test_a_unit_marches_to_its_point_and_then_turns_as_ordered():
    battle = small_battle()
    state = battle.battles.state
    goal = [float(state.x[0, 0]) + 80.0, float(state.y[0, 0]) - 50.0]
    battle.order(0, {"move": goal, "face": math.pi / 2, "formation": "column"})
    other = (float(state.x[0, 1]), float(state.y[0, 1]))
    distances = []
    for _ in range(120):
        battle.step()
        state = battle.battles.state
        distances.append(math.hypot(state.x[0, 0] - goal[0], state.y[0, 0] - goal[1]))
    assert distances[-1] <= ARRIVED
    assert np.all(np.diff(distances) <= 1e-3)  # it closes in and never overshoots
    assert state.theta[0, 0] == pytest.approx(math.pi / 2, abs=1e-3)
    assert state.formation[0, 0] == C.COLUMN
    # Unordered, the other battalion stood fast.
    assert (state.x[0, 1], state.y[0, 1]) == pytest.approx(other)
    battle.order(0, {"move": None})
    here = (float(state.x[0, 0]), float(state.y[0, 0]))
    battle.step()
    assert (battle.battles.state.x[0, 0], battle.battles.state.y[0, 0]) == pytest.approx(here)
    assert battle.view()["orders"]["0"] == {"move": None, "face": pytest.approx(math.pi / 2),
                                             "fire": True, "formation": "column"}


def test_fire_orders_reach_the_engine():
    battle = small_battle()
    battle.order(1, {"fire": False})
    actions = battle.orders.actions(battle.battles.state, battle.blue_units,
                                    battle.battles.config)
    assert actions[:, 2].tolist() == [1.0, 0.0]  # fire at will by default, then held


@pytest.mark.parametrize("unit, changes, status, named", [
    (0, {"move": [100.0, 100.0], "fire": "yes"}, 400, "fire='yes'"),
    (0, {"move": [5000.0, 100.0]}, 400, "move=[5000.0, 100.0]"),
    (0, {"move": [float("nan"), 1.0]}, 400, "move=[nan, 1.0]"),
    (0, {"move": "north"}, 400, "move='north'"),
    (0, {"face": True}, 400, "face=True"),
    (0, {"formation": "limbered"}, 400, "['line', 'column', 'square']"),
    (0, {"charge": True}, 400, "['charge']"),
    (0, {}, 400, "no field"),
    ("0", {"fire": True}, 400, "unit='0'"),
    (True, {"fire": True}, 400, "unit=True"),
    (7, {"fire": True}, 404, "units 0 to 2"),
    (-1, {"fire": True}, 404, "unit=-1"),
    (2, {"fire": True}, 403, "Red's"),
])
def test_an_order_is_checked_whole_and_refused_by_name(unit, changes, status, named):
    battle = small_battle()
    before = battle.view()
    with pytest.raises(OrderError, match=re.escape(named)) as error:
        battle.order(unit, changes)
    assert error.value.status == status
    assert battle.view() == before  # nothing changed, not even the valid part


def test_a_finished_battle_and_a_fallen_unit_take_no_orders():
    battle = small_battle(max_steps=3)
    for _ in range(3):
        battle.step()
    assert battle.over and battle.winner == "draw"
    for call in (lambda: battle.order(0, {"fire": True}), battle.step):
        with pytest.raises(OrderError, match="over") as error:
            call()
        assert error.value.status == 409
    battle = small_battle()
    battle.battles.state.routed[0, 1] = True
    with pytest.raises(OrderError, match="out of the fight") as error:
        battle.order(1, {"fire": True})
    assert error.value.status == 409


SCENARIO = """\
id: close_quarters
field: {width_m: 600, height_m: 400, max_steps: 400}
terrain: flat
units:
  blue:
    - {type: infantry, x: 250, y: 200, facing_deg: 0}
  red:
    - {type: infantry, x: 330, y: 200, facing_deg: 180}
    - {type: cavalry, x: 500, y: 100, facing_deg: 180}
victory: {break_fraction: 0.2}
"""


def test_a_scenario_places_its_units_and_ends_by_its_break_rule(tmp_path):
    path = tmp_path / "close.yaml"
    path.write_text(SCENARIO)
    field, site = resolve_field(str(path))
    assert site is None and (field.n_blue, field.n_red) == (1, 2)
    battle = LiveBattle(field, CombinedArmsRed(), seed=5)
    state = battle.battles.state
    scenario = load_scenario_file(path)
    assert np.abs(state.x[0] - scenario.array("x")).max() < 100  # jittered, not redeployed
    assert state.arm.tolist() == [C.INFANTRY, C.INFANTRY, C.CAVALRY]
    while not battle.over:
        battle.step()
    # Decided by the break rule (a fifth of a side lost), long before anyone is wiped out.
    assert battle.step_count < 400 and battle.winner in ("blue", "red")
    assert battle.replay().metadata["outcome"] == battle.winner
    placement = scenario_placement(scenario, 1, 0)
    duel = LiveBattle(PlayField.procedural(1, 1), CombinedArmsRed()).battles
    with pytest.raises(ValueError, match=r"placement.x has shape \(1, 3\): expected \(2,\)"):
        duel.reset(np.zeros(1, np.intp), [0], np.zeros(1), placement)  # a scenario of 3 units


# --- the server ---------------------------------------------------------------------------

def request(server: PlayServer, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, json.loads(data) if data.startswith(b"{") else {}


def post(server: PlayServer, path: str, value, **headers) -> tuple[int, dict]:
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    return request(server, "POST", path, body, {
        "Content-Type": "application/json", "X-Play-Token": server.token, **headers})


def raw(server: PlayServer, data: bytes) -> bytes:
    """Send bytes as they are; return what comes back."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as connection:
        connection.sendall(data)
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
        return answer


def test_the_server_refuses_what_is_not_an_order_and_stays_up(tmp_path):
    battle = small_battle()
    with PlayServer(battle, player="tester", out_dir=tmp_path) as server:
        assert post(server, "/api/order", {"unit": 0, "move": [400.0, 300.0]})[0] == 200
        status, before = request(server, "GET", "/api/state")
        assert status == 200 and before["orders"]["0"]["move"] == [400.0, 300.0]
        token = {"Content-Type": "application/json", "X-Play-Token": server.token}
        refused = [
            (post(server, "/api/order", b"{not json"), 400),
            (post(server, "/api/order", b"[" * 3000 + b"]" * 3000), 413),
            (post(server, "/api/order", b"[" * 1500 + b"]" * 1500), 400),  # nested too deep
            (post(server, "/api/order", b"\xff\xfe"), 400),
            (post(server, "/api/order", [1, 2]), 400),
            (post(server, "/api/order", {"move": [1.0, 1.0]}), 400),
            (post(server, "/api/order", {"unit": 0, "move": [1e300, 1.0]}), 400),
            (post(server, "/api/order", b'{"unit": 0, "face": NaN}'), 400),
            (post(server, "/api/order", {"unit": 0, "fire": "always"}), 400),
            (post(server, "/api/order", {"unit": 99, "fire": True}), 404),
            (post(server, "/api/order", {"unit": 2, "fire": False}), 403),
            (post(server, "/api/order", {"unit": 0, "fire": False}, **{"X-Play-Token": "x"}),
             403),
            (post(server, "/api/order", {"unit": 0, "fire": False},
                  **{"Content-Type": "text/plain"}), 415),
            (post(server, "/api/clock", {"action": "rewind"}), 400),
            (post(server, "/api/clock", {"action": "run", "speed": 1e9}), 400),
            (post(server, "/api/clock", {"action": "run", "speed": "fast"}), 400),
            (post(server, "/api/state", {"unit": 0}), 405),
            (post(server, "/api/reset", {}), 404),
            (request(server, "POST", "/api/order", b"{}", {**token, "Content-Length": "-5"}),
             400),
            (request(server, "DELETE", "/api/order"), 405),
            (request(server, "PUT", "/api/order", b"{}", token), 405),
            (request(server, "GET", "/static/../server.py"), 404),
            (request(server, "GET", "/static/%2e%2e/battle.py"), 404),
            (request(server, "GET", "/static/"), 404),
            (request(server, "GET", "/etc/passwd"), 404),
            (request(server, "GET", "/api/state", None, {"Host": "evil.example:80"}), 400),
        ]
        for (status, body), expected in refused:
            assert status == expected, body
            assert "error" in body
        # A body larger than allowed is refused unread, whatever it holds.
        big = b"{" + b" " * (MAX_BODY_BYTES + 10) + b"}"
        assert post(server, "/api/order", big)[0] == 413
        host = f"Host: 127.0.0.1:{server.port}\r\n".encode()
        unsized = (b"POST /api/order HTTP/1.0\r\n" + host + b"Content-Type: application/json"
                   b"\r\nX-Play-Token: " + server.token.encode() + b"\r\n\r\n{}")
        assert raw(server, unsized).startswith(b"HTTP/1.0 411 ")
        assert b"Error code: 400" in raw(server, b"GARBAGE\r\n\r\n")  # HTTP/0.9: no status line
        assert raw(server, b"BREW /api/order HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 405 ")
        with socket.create_connection(("127.0.0.1", server.port)):  # a client that hangs
            pass
        status, after = request(server, "GET", "/api/state")
        assert status == 200 and after == before  # up, and the battle untouched
        assert request(server, "GET", "/static/play.js")[0] == 200
        assert post(server, "/api/order", {"unit": 1, "fire": False})[0] == 200


def test_the_clock_runs_steps_and_pauses_and_the_end_is_recorded(tmp_path):
    results = []
    with PlayServer(small_battle(max_steps=30), player="a/../b", out_dir=tmp_path,
                    on_result=lambda r: results.append(r) or {"note": "rated"}) as server:
        first = request(server, "GET", "/api/state")[1]["revision"]
        status, state = post(server, "/api/clock", {"action": "step"})
        assert status == 200 and state["step"] == 1 and not state["running"]
        assert state["revision"] > first  # every change counts, so the page keeps the newest
        post(server, "/api/order", {"unit": 0, "fire": True})
        assert request(server, "GET", "/api/state")[1]["revision"] > state["revision"]
        status, state = post(server, "/api/clock", {"action": "run", "speed": 100})
        assert state["running"] and state["speed"] == 100
        for _ in range(200):
            state = request(server, "GET", "/api/state")[1]
            if state["result"]:
                break
            time.sleep(0.02)
        assert state["over"] and state["step"] == 30 and not state["running"]
        assert post(server, "/api/clock", {"action": "run"})[0] == 409
        assert post(server, "/api/order", {"unit": 0, "fire": True})[0] == 409
    result = results[0]
    assert state["result"]["notes"] == {"note": "rated"}
    assert result.outcome == "draw" and result.score == 0.5 and result.steps == 30
    # The player's name is kept out of the path: the files stay in out_dir.
    assert result.replay.parent == tmp_path and result.page.parent == tmp_path
    replay = load_replay(result.replay)
    assert replay.n_steps == 30 and replay.metadata["outcome"] == "draw"
    assert replay.metadata["blue"] == "tester" and replay.metadata["red"] == "hold"


def test_the_server_binds_the_loopback_only(tmp_path):
    with PlayServer(small_battle(), player="tester", out_dir=tmp_path) as server:
        assert server._httpd.server_address[0] == "127.0.0.1"
        assert server.url == f"http://127.0.0.1:{server.port}/"
        page = request(server, "GET", "/")
        assert page[0] == 200


# --- the command line: Red, the fields, the Elo file -------------------------------------------

def sb3_checkpoint(path: Path) -> Path:
    from stable_baselines3 import PPO

    from envs.vec_env import BattalionVecEnv
    from training.ppo.checkpoints import save_ppo

    model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu",
                seed=0)  # unseeded, one init in a few dozen moved Red too little to tell
    return save_ppo(model, path)


def mappo_file(path: Path) -> Path:
    torch.manual_seed(0)
    return save_policy(MAPPOPolicy(OBS_DIM, C.ACTION_DIM, STATE_DIM, n_agents=2), path)


def wfm1_file(path: Path) -> Path:
    torch.manual_seed(0)
    return WFM1Policy(d_model=32, n_heads=4, n_echelon_layers=1,
                      n_cross_layers=1).save_checkpoint(path)


def league_pool(folder: Path) -> str:
    from training.league.agent_pool import AgentPool

    pool = AgentPool(folder / "pool.json")
    pool.add(mappo_file(folder / "snapshots" / "main_v1.pt"), agent_id="main_v1")
    pool.save()
    return f"league:{folder / 'pool.json'}:main_v1"


RED_KINDS = {
    "scripted": lambda tmp: ("L3", "scripted_team_l3"),
    "doctrine": lambda tmp: ("doctrine", "doctrine_team"),
    "combined_arms": lambda tmp: ("combined_arms", "combined_arms"),
    "planner": lambda tmp: ("planner", "planner"),
    "sb3": lambda tmp: (str(sb3_checkpoint(tmp / "duel.zip")),) * 2,
    "mappo": lambda tmp: (str(mappo_file(tmp / "mappo.pt")),) * 2,
    "wfm1": lambda tmp: (str(wfm1_file(tmp / "wfm1.pt")),) * 2,
    "league": lambda tmp: (league_pool(tmp), "main_v1"),
}


@pytest.mark.parametrize("kind", list(RED_KINDS))
def test_every_kind_of_red_commander_takes_the_field(kind, tmp_path):
    spec, elo_name = RED_KINDS[kind](tmp_path)
    field, site = resolve_field("site:waterloo", n_blue=2, n_red=2, max_steps=50)
    red, name = resolve_red(spec, field, site=site)
    assert name == elo_name
    battle = LiveBattle(field, red, seed=1)
    start = battle.battles.state
    x, y, theta = (start.x.copy(), start.y.copy(), start.theta.copy())
    for _ in range(10):
        battle.step()
    now, units = battle.battles.state, battle.red_units
    moved = np.hypot(now.x[0, units] - x[0, units], now.y[0, units] - y[0, units])
    turned = np.abs(now.theta[0, units] - theta[0, units])
    assert (moved + turned).max() > 0.01  # Red gave orders its units carried out


@pytest.mark.parametrize("spec, named", [
    ("L7", "L1 to L5"), ("general_staff", "doctrine, combined_arms"),
    ("league:nowhere.json:x", "nowhere.json"), ("missing.pt", "no such checkpoint"),
])
def test_a_red_that_is_not_a_commander_is_named(spec, named):
    field = PlayField.procedural(1, 1)
    with pytest.raises((ValueError, FileNotFoundError), match=re.escape(named)):
        resolve_red(spec, field)


def brigade_checkpoint(path: Path) -> Path:
    from envs.echelons.brigade_env import make_brigade_vec_env
    from training.echelons.config import BrigadeConfig
    from training.echelons.trainer import make_commander_ppo
    from training.ppo.checkpoints import save_ppo

    config = BrigadeConfig(n_envs=2, n_steps=8, batch_size=16, verbose=0)
    model = make_commander_ppo(config, make_brigade_vec_env(2, n_blue=2, n_red=2),
                               tensorboard=False)
    return save_ppo(model, path)


def test_a_commander_file_that_cannot_command_red_is_named_with_its_kind(tmp_path):
    field = PlayField.procedural(2, 2)
    brigade = brigade_checkpoint(tmp_path / "brigade.zip")
    with pytest.raises(ValueError, match=re.escape(f"red={str(brigade)!r} holds a brigade "
                                                   "commander: expected")) as error:
        resolve_red(str(brigade), field)
    assert "doctrine" in str(error.value)  # what --red accepts
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(ValueError, match=re.escape(f"red={str(other)!r} is invalid")) as error:
        resolve_red(str(other), field)
    assert "['weights']" in str(error.value) and "MAPPO" in str(error.value)


class Planted:
    """An object whose unpickling would write a file: a checkpoint must never run it."""

    marker: Path

    def __reduce__(self):
        return (Path.write_text, (self.marker, "code ran"))


def test_checkpoints_are_read_without_running_code(tmp_path, capsys):
    Planted.marker = tmp_path / "ran.txt"
    planted = tmp_path / "planted.pt"
    torch.save({"kwargs": {}, "state_dict": {}, "payload": Planted()}, planted)
    with pytest.raises(SystemExit):
        build_server(["--name", "tester", "--red", str(planted), "--out", str(tmp_path),
                      "--elo", str(tmp_path / "elo.json"), "--no-browser"])
    assert "pickled objects" in capsys.readouterr().err
    assert not Planted.marker.exists()
    # A league snapshot outside its pool's folder is refused.
    from training.league.agent_pool import AgentPool

    outside = mappo_file(tmp_path / "elsewhere.pt")
    pool = AgentPool(tmp_path / "league" / "pool.json")
    pool.add(outside, agent_id="stray")
    pool.save()
    with pytest.raises(ValueError, match="outside the league directory"):
        resolve_red(f"league:{tmp_path / 'league' / 'pool.json'}:stray",
                    PlayField.procedural(1, 1))


def test_the_command_line_plays_to_the_end_and_rates_the_player(tmp_path, capsys):
    elo = tmp_path / "elo.json"
    args = ["--name", "tester", "--red", "L2", "--size", "2v1", "--max-steps", "15",
            "--out", str(tmp_path / "plays"), "--elo", str(elo), "--no-browser"]
    for _ in range(2):  # two battles: the second merges into the file the first wrote
        server, parsed = build_server(args)
        assert parsed.no_browser and server.battle.field.name == "procedural"
        with server:
            for _ in range(15):
                assert post(server, "/api/clock", {"action": "step"})[0] == 200
        assert server.result is not None and "tester" in server.result.notes["Elo"]
    registry = TeamEloRegistry(elo)
    assert registry.get_game_count("tester") == 2
    assert registry.get_rating("scripted_team_l2") == 700.0  # a baseline is never moved
    assert len(list((tmp_path / "plays").glob("play_*_tester*.npz"))) == 2
    with pytest.raises(SystemExit):
        build_server([*args[:2], "--field", "historical:no_such_battle", *args[2:]])
    assert "no_such_battle" in capsys.readouterr().err


def test_a_wfm1_red_with_a_formation_head_orders_its_formations(tmp_path):
    torch.manual_seed(0)
    policy = WFM1Policy(d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1,
                        formation_orders=True)
    with torch.no_grad():
        policy.formation_head.bias[C.SQUARE + 1] = 100.0
    path = policy.save_checkpoint(tmp_path / "square.pt")
    field, site = resolve_field("site:waterloo", n_blue=2, n_red=2, max_steps=50)
    red, _ = resolve_red(str(path), field, site=site)
    battle = LiveBattle(field, red, seed=1)
    orders, formations = red.orders(battle.battles, battle.red_units)
    assert orders.shape == (1, 2, C.ACTION_DIM) and (formations == C.SQUARE).all()
    battle.step()
    assert (battle.battles.state.formation[0, battle.red_units] == C.SQUARE).all()
    # Without the head, the drill's orders (which do not form square here).
    plain, _ = resolve_red(str(wfm1_file(tmp_path / "plain.pt")), field, site=site)
    assert not (plain.orders(battle.battles, battle.red_units)[1] == C.SQUARE).any()


def test_a_wfm1_red_with_echelon_tokens_reads_reds_brigades(tmp_path):
    from envs.battles.echelon_tokens import echelon_tokens
    from envs.battles.entity_tokens import entity_tokens
    from envs.battles.multi_battalion_batch import RED

    torch.manual_seed(0)
    policy = WFM1Policy(d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1,
                        echelon_tokens=True, brigade_size=2)
    path = policy.save_checkpoint(tmp_path / "echelons.pt")
    field, site = resolve_field("site:waterloo", n_blue=2, n_red=3, max_steps=50)
    red, _ = resolve_red(str(path), field, site=site)
    battle = LiveBattle(field, red, seed=1)
    orders, _ = red.orders(battle.battles, battle.red_units)
    # Red's own tokens with Red's brigades (counted from Red's first unit).
    view = entity_tokens(battle.battles, RED)
    context = echelon_tokens(view, 2, first_unit=battle.battles.n_blue)
    expected = red.policy.act(torch.from_numpy(view.tokens), torch.from_numpy(view.pad_mask),
                              card=red.card, own_mask=torch.from_numpy(view.own_mask),
                              deterministic=True,
                              **red.policy.echelon_inputs(context))[0].numpy()
    column = {unit: i for i, unit in enumerate(battle.red_units)}
    for b, k in zip(*np.nonzero(view.own_mask), strict=True):
        np.testing.assert_allclose(orders[b, column[view.unit[b, k]]], expected[b, k])
    battle.step()
