"""Exported commanders: for every policy kind, ONNX Runtime gives the actions the
project's own deterministic play gives, on 1,000 observations recorded from real battles;
the metadata says what the inputs and outputs mean; bad input is refused by name."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from envs.battles.multi_battalion_batch import MultiBattalionBatch
from envs.battles.multi_observation import CRITIC_STATE_DIM, OBS_DIM
from envs.commanders.orders import ORDER_DIM, ORDER_FEATURES
from envs.echelons.brigade_batch import brigade_obs_dim, brigade_observation_features
from envs.echelons.division_batch import (
    DIVISION_COMMANDS,
    division_obs_dim,
    division_observation_features,
)
from envs.sim.constants import ACTION_DIM, ACTION_HIGH, ACTION_LOW, ACTION_NAMES
from models.export import DRILLS, METADATA_KEY, mappo_graph
from models.mappo_files import save_policy
from models.mappo_policy import MAPPOPolicy
from models.weights import TrainingCheckpoint, save_weights, write_checkpoint
from models.wfm1 import CARD_DIM, CARD_FEATURES, WFM1Policy
from training.commander_files import ACCEPTED, identify_checkpoint, load_commander_policy
from training.export import check_output, export_checkpoint, main

N_OBSERVATIONS = 1000
TOLERANCE = 1e-5
BATTLES = 50  # recorded in parallel, N_OBSERVATIONS / BATTLES steps each (MAPPO: per unit)


@dataclass
class Case:
    """An exported commander, what was recorded for it, and torch's actions on it."""

    kind: str
    onnx: Path
    feeds: dict[str, np.ndarray]
    expected: np.ndarray
    printed: str = ""


def _widen(linear: torch.nn.Linear, std: float) -> None:
    """Re-draw an action head wider than its initialisation (gain 0.01, which leaves every
    action near zero): the actions then reach past the box, so that the clipping is
    exercised, and discrete choices differ between observations, as a trained one's do."""
    with torch.no_grad():
        linear.weight.normal_(0.0, std, generator=torch.Generator().manual_seed(1))


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _run(case: Case) -> np.ndarray:
    return _session(case.onnx).run(["action"], case.feeds)[0]


# --- the 1v1 PPO commander and the echelon commanders (SB3) ------------------------------


def _sb3_observations(reset, step, actions) -> np.ndarray:
    """N_OBSERVATIONS observations of BATTLES battles stepped with ``actions(rng)``."""
    rng = np.random.default_rng(0)
    seen = [reset()]
    while len(seen) * BATTLES < N_OBSERVATIONS:
        seen.append(step(actions(rng)))
    return np.concatenate(seen).astype(np.float32)


def _echelon_observations(batch, n_commanded: int) -> np.ndarray:
    batch.reset(np.arange(BATTLES), list(range(BATTLES)), np.zeros(BATTLES, np.int64))

    def step(action):
        result = batch.step(action)
        if result.battle_over.any():  # keep every battle going: new episodes where one ended
            batch.next_episode(np.flatnonzero(result.battle_over))
        return batch.observe()

    return _sb3_observations(batch.observe, step,
                             lambda rng: rng.integers(0, 6, (BATTLES, n_commanded)))


@pytest.fixture(scope="module", params=["gaussian", "choices", "volleys"])
def ppo_case(tmp_path_factory, request) -> Case:
    """The 1v1 commander with each order head (``policy_orders``)."""
    from stable_baselines3 import PPO

    from envs.vec_env import BattalionVecEnv
    from models.battalion_policy import BattalionMlpPolicy
    from models.order_choices import FIRING, READINESS_FEATURE, most_likely_orders
    from training.ppo.checkpoints import save_ppo

    folder = tmp_path_factory.mktemp("ppo")
    env = BattalionVecEnv(BATTLES, max_steps=100)
    # The policy training.train builds (GuidedPPO is PPO with an extra loss term).
    model = PPO(BattalionMlpPolicy, env, n_steps=8, batch_size=40, seed=0, device="cpu",
                policy_kwargs={"net_arch": [32, 32], "log_std_init": -0.5,
                               "normalize_observations": True, "orders": request.param})
    # Narrower for the choices: the wheel, one output of six, must stay inside its bounds.
    _widen(model.policy.action_net, 0.5 if request.param == "gaussian" else 0.2)
    if request.param == "volleys":  # firing likeliest often, so that the bar decides orders
        with torch.no_grad():
            model.policy.action_net.bias[:len(FIRING)] += 2.0 * torch.tensor(FIRING)
    # Statistics far from the identity, so that the graph must carry them.
    model.policy.fit_observation_statistics(torch.rand(500, 25) * 0.5 + 0.2)
    path = save_ppo(model, folder / "ppo_battalion_final.zip")
    env.seed(0)
    low, high = np.array(ACTION_LOW), np.array(ACTION_HIGH)
    observations = _sb3_observations(env.reset, lambda a: env.step(a)[0],
                                     lambda rng: rng.uniform(low, high, (BATTLES, ACTION_DIM)))
    if request.param == "volleys":  # the recorded battalions are loaded: half reloading
        observations[::2, READINESS_FEATURE] = np.random.default_rng(2).uniform(
            0.0, 1.0, len(observations[::2]))
    expected = model.predict(observations, deterministic=True)[0]
    if request.param == "volleys":  # some unloaded battalion's likeliest pair must be barred
        policy = model.policy
        with torch.no_grad():
            features = policy.extract_features(torch.as_tensor(observations))
            free = most_likely_orders(policy.action_net(policy.mlp_extractor.forward_actor(
                features))).numpy()
        assert ((free[:, 2] > 0.5) & (expected[:, 2] < 0.5)).any()
    output = export_checkpoint(path, folder / "ppo.onnx").output
    return Case("ppo", output, {"observation": observations}, expected)


def _echelon_case(folder: Path, kind: str) -> Case:
    from training.echelons.config import BrigadeConfig, DivisionConfig
    from training.echelons.trainer import make_commander_ppo
    from training.ppo.checkpoints import save_ppo

    if kind == "brigade":
        from envs.echelons.brigade_env import make_brigade_batch, make_brigade_vec_env

        config = BrigadeConfig(n_envs=2, n_steps=8, batch_size=16, verbose=0)
        vec_env = make_brigade_vec_env(2, n_blue=2, n_red=2)
        batch = make_brigade_batch(BATTLES, 2, 3, temporal_ratio=4)
    else:
        from envs.echelons.division_env import make_division_batch, make_division_vec_env

        config = DivisionConfig(n_envs=2, n_steps=8, batch_size=16, verbose=0)
        vec_env = make_division_vec_env(2, n_brigades=2, n_blue_per_brigade=2)
        batch = make_division_batch(BATTLES, 2, 2, temporal_ratio=4)
    # The commander train_brigade and train_division build, saved as they save it.
    model = make_commander_ppo(config, vec_env, tensorboard=False)
    _widen(model.policy.action_net, 1.0)
    path = save_ppo(model, folder / f"ppo_{kind}_final.zip")
    observations = _echelon_observations(batch, 2)
    expected = model.predict(observations, deterministic=True)[0]
    output = export_checkpoint(path, folder / f"{kind}.onnx").output
    return Case(kind, output, {"observation": observations}, expected)


@pytest.fixture(scope="module")
def brigade_case(tmp_path_factory) -> Case:
    return _echelon_case(tmp_path_factory.mktemp("brigade"), "brigade")


@pytest.fixture(scope="module")
def division_case(tmp_path_factory) -> Case:
    return _echelon_case(tmp_path_factory.mktemp("division"), "division")


# --- MAPPO ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def team_observations() -> tuple[np.ndarray, np.ndarray]:
    """(N_OBSERVATIONS, OBS_DIM) battalions' observations of 2-vs-2 battles, and each one's
    agent index (its place in its side, as the project's battles give it)."""
    batch = MultiBattalionBatch(BATTLES, 2, 2, reward_weights=None)
    batch.reset(np.arange(BATTLES), list(range(BATTLES)), np.zeros(BATTLES, np.int64))
    rows = []
    while len(rows) * BATTLES * 4 < N_OBSERVATIONS:
        rows.append(batch.observation.copy())
        result = batch.step(batch.scripted_actions(np.arange(4), 5))
        if result.battle_over.any():
            batch.next_episode(np.flatnonzero(result.battle_over))
    observations = np.concatenate(rows)  # (steps * battles, 4 units, OBS_DIM)
    agents = np.broadcast_to(np.array([0, 1, 0, 1]), observations.shape[:2])
    return (observations.reshape(-1, OBS_DIM)[:N_OBSERVATIONS],
            agents.reshape(-1)[:N_OBSERVATIONS].astype(np.int64))


def _team_actions(policy: MAPPOPolicy, observations: np.ndarray) -> np.ndarray:
    """The project's deterministic MAPPO orders (what the team battles play), clipped into
    the action box as the battles clip them; each side's two battalions as one row."""
    from training.mappo.battles import team_actions

    sides = observations.reshape(-1, 2, OBS_DIM)
    actions = team_actions(policy, sides, deterministic=True).reshape(-1, ACTION_DIM)
    return np.clip(actions, ACTION_LOW, ACTION_HIGH)


def _team(share_parameters: bool) -> MAPPOPolicy:
    torch.manual_seed(0)
    # As MAPPOTrainer builds it for a 2-battalion team.
    policy = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=2,
                         share_parameters=share_parameters, actor_hidden_sizes=(32, 32),
                         critic_hidden_sizes=(32, 32), normalize_observations=True)
    for actor in policy.all_actors():
        _widen(actor.action_mean, 0.5)
    # Statistics far from the identity, so that the graph must carry them.
    policy.fit_observation_statistics(torch.rand(500, OBS_DIM) * 3 + 0.5,
                                      torch.rand(500, CRITIC_STATE_DIM))
    return policy.eval()


@pytest.fixture(scope="module")
def mappo_case(tmp_path_factory, team_observations) -> Case:
    folder = tmp_path_factory.mktemp("mappo")
    policy = _team(share_parameters=False)
    path = save_policy(policy, folder / "team.pt")
    observations, agents = team_observations
    expected = _team_actions(policy, observations)
    # Exported by the command line (each export takes seconds: one serves both tests).
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([str(path), "-o", str(folder / "team.onnx")]) == 0
    return Case("mappo", folder / "team.onnx", {"observation": observations, "agent": agents},
                expected, printed.getvalue())


# --- WFM-1 ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wfm1_case(tmp_path_factory) -> Case:
    from training.wfm1.battles import ScenarioBattles
    from training.wfm1.scenarios import WFMScenario

    folder = tmp_path_factory.mktemp("wfm1")
    torch.manual_seed(0)
    policy = WFM1Policy(d_model=16, n_heads=2, n_echelon_layers=1, n_cross_layers=1,
                        actor_hidden_sizes=(32,), critic_hidden_sizes=(32,))
    _widen(policy.action_mean, 0.5)
    # A trained card adapter (it starts as the identity, which would leave the card unused).
    _widen(policy.card_encoder.gamma, 0.3)
    _widen(policy.card_encoder.beta, 0.3)
    path = policy.save_checkpoint(folder / "wfm1_final.pt")
    # Two kinds of battle in one batch: the smaller one's rows are padded.
    battles = ScenarioBattles([WFMScenario("three", "procedural", "clear", 3, 3, 77),
                               WFMScenario("two", "procedural", "rain", 2, 2, 5)],
                              BATTLES // 2, max_steps=60, seed=0)
    rows: dict[str, list[np.ndarray]] = {"tokens": [], "pad_mask": [], "own_mask": [],
                                         "card": []}
    while len(rows["tokens"]) * BATTLES < N_OBSERVATIONS:
        view = battles.observe()
        for name in ("tokens", "pad_mask", "own_mask"):
            rows[name].append(getattr(view, name).copy())
        rows["card"].append(battles.cards.astype(np.float32))
        battles.step(None)  # Blue and Red under the doctrine: real battles, moving on
    feeds = {name: np.concatenate(parts) for name, parts in rows.items()}
    # As play_out asks WFM-1 for its orders; the battles clip them into the box.
    actions = policy.act(torch.from_numpy(feeds["tokens"]), torch.from_numpy(feeds["pad_mask"]),
                         card_vec=torch.from_numpy(feeds["card"]),
                         own_mask=torch.from_numpy(feeds["own_mask"]), deterministic=True)[0]
    expected = np.clip(actions.numpy(), ACTION_LOW, ACTION_HIGH)
    output = export_checkpoint(path, folder / "wfm1.onnx").output
    return Case("wfm1", output, feeds, expected)


# --- each kind: parity and metadata ------------------------------------------------------
#
# One test a kind: an export takes seconds, and under pytest-xdist every worker that runs a
# test of a module fixture builds it again.


def _check_parity(case: Case) -> np.ndarray:
    """ONNX Runtime's actions on the recorded observations, checked against torch's."""
    assert next(iter(case.feeds.values())).shape[0] == N_OBSERVATIONS
    actions = _run(case)
    assert actions.shape == case.expected.shape
    if case.expected.dtype.kind == "f":
        # The battles' actions are not all alike, and some were clipped: a graph that
        # ignored its input or lost the clip would fail below.
        at_bound = np.isclose(case.expected, ACTION_LOW) | np.isclose(case.expected, ACTION_HIGH)
        assert at_bound.any() and (~at_bound).any()
        assert len(np.unique(case.expected.round(4), axis=0)) > N_OBSERVATIONS // 10
        assert actions.dtype == np.float32
        assert np.abs(actions - case.expected).max() <= TOLERANCE
    else:
        assert len(np.unique(case.expected)) > 1
        assert actions.dtype == np.int64
        np.testing.assert_array_equal(actions, case.expected)
    return actions


def _description(path: Path) -> dict:
    return json.loads(_session(path).get_modelmeta().custom_metadata_map[METADATA_KEY])


def _check_metadata(case: Case, source: str) -> None:
    """The metadata names every input and output as the graph has them, with layouts and
    bounds that fit what the battles showed."""
    session = _session(case.onnx)
    description = _description(case.onnx)
    assert description["kind"] == case.kind and description["source"] == source
    assert description["project_version"] == metadata.version("wargames-training")
    assert description["deterministic"] is True
    described = {port["name"]: port for port in description["inputs"]}
    assert [i.name for i in session.get_inputs()] == list(described) == list(case.feeds)
    for name, port in described.items():
        value = case.feeds[name]
        assert len(port["shape"]) == value.ndim and port["dtype"] == str(value.dtype)
        if "features" in port:
            assert len(port["features"]) == value.shape[-1] == port["shape"][-1]
            assert len(port["low"]) == len(port["high"]) == value.shape[-1]
            # What the battles showed lies within the bounds the metadata gives.
            low = np.array([-np.inf if b is None else b for b in port["low"]])
            high = np.array([np.inf if b is None else b for b in port["high"]])
            assert (value >= low - 1e-6).all() and (value <= high + 1e-6).all()
    (action,) = description["outputs"]
    assert action["name"] == "action"
    if case.kind in ("ppo", "mappo", "wfm1"):
        assert action["features"] == list(ACTION_NAMES)
        assert (action["low"], action["high"]) == (list(ACTION_LOW), list(ACTION_HIGH))
    else:
        unit = "battalion" if case.kind == "brigade" else "brigade"
        assert action["features"] == [f"{unit}_0", f"{unit}_1"]
        choices = DRILLS if case.kind == "brigade" else tuple(DIVISION_COMMANDS)
        assert action["choices"] == list(choices)


def test_the_1v1_commander_exports(ppo_case):
    _check_parity(ppo_case)
    _check_metadata(ppo_case, "ppo_battalion_final.zip")


def test_a_mappo_team_exports_by_the_command_line(mappo_case):
    _check_parity(mappo_case)
    _check_metadata(mappo_case, "team.pt")
    assert mappo_case.printed == (
        f"wrote {mappo_case.onnx}: mappo commander, observation float32[\"batch\", {OBS_DIM}], "
        'agent int64["batch"] -> action float32["batch", 3]\n')
    folder = mappo_case.onnx.parent
    assert sorted(os.listdir(folder)) == ["team.onnx", "team.pt"]  # no temporary file left


def test_wfm1_exports_and_orders_its_own_tokens_only(wfm1_case):
    actions = _check_parity(wfm1_case)
    _check_metadata(wfm1_case, "wfm1_final.pt")
    own, pad = wfm1_case.feeds["own_mask"], wfm1_case.feeds["pad_mask"]
    assert pad.any() and (~own & ~pad).any()  # padded rows, and enemy tokens
    assert (actions[~own] == 0).all() and (actions[own] != 0).any()


def test_formation_heads_export_their_likeliest_formations(tmp_path, team_observations):
    from training.wfm1.battles import ScenarioBattles
    from training.wfm1.scenarios import WFMScenario

    torch.manual_seed(0)
    team = MAPPOPolicy(OBS_DIM, ACTION_DIM, CRITIC_STATE_DIM, n_agents=2,
                       share_parameters=False, actor_hidden_sizes=(32, 32),
                       critic_hidden_sizes=(32, 32), formation_orders=True).eval()
    for actor in team.all_actors():
        _widen(actor.action_mean, 0.5)
        _widen(actor.formation_head, 2.0)  # the choices differ between observations
    observations, agents = team_observations
    from training.mappo.battles import team_actions

    orders = team_actions(team, observations.reshape(-1, 2, OBS_DIM),
                          deterministic=True).reshape(-1, ACTION_DIM + 1)
    onnx_path = export_checkpoint(save_policy(team, tmp_path / "team.pt"),
                                  tmp_path / "team.onnx").output
    action, formation = _session(onnx_path).run(
        ["action", "formation"], {"observation": observations, "agent": agents})
    assert formation.dtype == np.int64 and len(np.unique(formation)) > 1
    np.testing.assert_array_equal(formation, orders[:, ACTION_DIM].astype(np.int64))
    assert np.abs(action - np.clip(orders[:, :ACTION_DIM], ACTION_LOW, ACTION_HIGH)).max() \
        <= TOLERANCE
    assert [port["name"] for port in _description(onnx_path)["outputs"]] == \
        ["action", "formation"]

    wfm1 = WFM1Policy(d_model=16, n_heads=2, n_echelon_layers=1, n_cross_layers=1,
                      actor_hidden_sizes=(32,), critic_hidden_sizes=(32,),
                      formation_orders=True).eval()
    _widen(wfm1.formation_head, 2.0)
    battles = ScenarioBattles([WFMScenario("three", "procedural", "clear", 3, 3, 77),
                               WFMScenario("two", "procedural", "rain", 2, 2, 5)], 8,
                              max_steps=60, seed=0)
    view = battles.observe()
    feeds = {"tokens": view.tokens, "pad_mask": view.pad_mask, "own_mask": view.own_mask,
             "card": battles.cards.astype(np.float32)}
    codes = wfm1.act(*(torch.from_numpy(feeds[k]) for k in ("tokens", "pad_mask")),
                     card_vec=torch.from_numpy(feeds["card"]),
                     own_mask=torch.from_numpy(feeds["own_mask"]),
                     deterministic=True)[0][..., ACTION_DIM].numpy()
    onnx_path = export_checkpoint(wfm1.save_checkpoint(tmp_path / "wfm1_final.pt"),
                                  tmp_path / "wfm1.onnx").output
    (formation,) = _session(onnx_path).run(["formation"], feeds)
    own = view.own_mask
    assert len(np.unique(formation[own])) > 1 and (formation[~own] == -1).all()
    np.testing.assert_array_equal(formation[own], codes[own].astype(np.int64))


@pytest.mark.parametrize("kind", ["brigade", "division"])
def test_an_echelon_commander_exports(kind, request):
    case: Case = request.getfixturevalue(f"{kind}_case")
    _check_parity(case)
    _check_metadata(case, f"ppo_{kind}_final.zip")


def test_the_layouts_named_in_metadata_have_the_sizes_of_the_observations():
    for n in (1, 2, 5):
        assert len(brigade_observation_features(n)) == brigade_obs_dim(n)
        assert len(division_observation_features(n)) == division_obs_dim(n)
    assert len(CARD_FEATURES) == CARD_DIM
    # An order-following battalion reads its order after its observation.
    policy = MAPPOPolicy(OBS_DIM + ORDER_DIM, ACTION_DIM, CRITIC_STATE_DIM + ORDER_DIM)
    (observation,) = mappo_graph(policy).inputs  # shared actor: no agent input
    assert observation.features[-ORDER_DIM:] == ORDER_FEATURES
    assert len(observation.features) == len(observation.low) == OBS_DIM + ORDER_DIM


# --- files: kinds, command line, errors ----------------------------------------------------


def _training_checkpoint(path: Path, kind: str, policy: torch.nn.Module) -> Path:
    return write_checkpoint(path, TrainingCheckpoint(
        kind=kind, kwargs=policy.kwargs, weights=policy.state_dict(), optimizer={},
        counters={"total_steps": 0, "episodes": 0}, rng={}, extras={}))


def test_training_checkpoints_are_told_from_policy_files_and_load_the_same_policy(tmp_path):
    team = _team(share_parameters=True)
    wfm1 = WFM1Policy(d_model=8, n_heads=2, n_echelon_layers=1, n_cross_layers=1)
    for kind, policy in (("mappo", team), ("wfm1", wfm1)):
        found = identify_checkpoint(_training_checkpoint(tmp_path / f"{kind}.pt", kind, policy))
        assert (found.kind, found.training_checkpoint) == (kind, True)
        loaded = load_commander_policy(found)
        for name, tensor in policy.state_dict().items():
            torch.testing.assert_close(loaded.state_dict()[name], tensor, rtol=0, atol=0)


def test_a_shared_actor_takes_no_agent_input(team_observations):
    policy = _team(share_parameters=True)
    graph = mappo_graph(policy)
    assert [port.name for port in graph.inputs] == ["observation"]
    observations, _ = team_observations
    with torch.no_grad():
        actions = graph.module(torch.from_numpy(observations)).numpy()
    assert np.abs(actions - _team_actions(policy, observations)).max() <= TOLERANCE


def test_the_command_line_reports_a_bad_checkpoint_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "missing.zip"), "-o", str(tmp_path / "out.onnx")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "error: checkpoint=" in err and "missing.zip" in err and "no such file" in err
    assert not (tmp_path / "out.onnx").exists()


def test_a_file_of_no_commander_kind_is_refused_naming_it_and_the_kinds(tmp_path):
    from stable_baselines3 import PPO

    other = tmp_path / "pendulum.zip"
    PPO("MlpPolicy", "Pendulum-v1", n_steps=8, batch_size=8, device="cpu").save(other)
    weights = save_weights(tmp_path / "weights.pt", {"weights": torch.zeros(3)})
    league = _training_checkpoint(tmp_path / "league.pt", "league", _team(True))
    text = tmp_path / "notes.zip"
    text.write_text("not an archive")
    for path, found in ((other, "an SB3 archive for observations of shape (3,)"),
                        (weights, "a torch file with keys ['weights']"),
                        (league, "a training checkpoint of kind 'league'")):
        with pytest.raises(ValueError) as error:
            identify_checkpoint(path)
        message = str(error.value)
        assert message.startswith(f"checkpoint {path} is {found}"), message
        assert message.endswith(f"expected {ACCEPTED}"), message
    with pytest.raises(ValueError, match=re.escape(f"checkpoint {text} is not a readable")) \
            as error:
        identify_checkpoint(text)
    assert str(error.value).endswith(f"expected {ACCEPTED}")
    with pytest.raises(FileNotFoundError, match="checkpoint='nowhere/policy.pt': no such file"):
        identify_checkpoint("nowhere/policy.pt")


def test_the_output_is_checked_before_anything_is_read(tmp_path):
    checkpoint = save_policy(_team(True), tmp_path / "team.pt")
    for output, error, message in (
            (tmp_path / "team.txt", ValueError, "expected a file name ending in .onnx"),
            (tmp_path / "missing" / "team.onnx", FileNotFoundError,
             f"its folder {tmp_path / 'missing'} does not exist"),
            ("", ValueError, "expected a non-empty file path")):
        with pytest.raises(error, match="output=") as raised:
            export_checkpoint(checkpoint, output)
        assert message in str(raised.value)
    (tmp_path / "folder.onnx").mkdir()
    with pytest.raises(ValueError, match="it is a folder"):
        check_output(tmp_path / "folder.onnx")
    misnamed = save_policy(_team(True), tmp_path / "team_policy.onnx")
    with pytest.raises(ValueError, match="it is the checkpoint itself"):
        export_checkpoint(misnamed, misnamed)


def test_a_failed_export_leaves_an_earlier_file_whole(tmp_path):
    output = tmp_path / "commander.onnx"
    output.write_bytes(b"an earlier export")
    broken = save_weights(tmp_path / "broken.pt", {"kwargs": {"obs_dim": -1},
                                                   "state_dict": {}})
    with pytest.raises(ValueError, match=f"MAPPO policy file {broken}"):
        export_checkpoint(broken, output)
    assert output.read_bytes() == b"an earlier export"
    assert sorted(os.listdir(tmp_path)) == ["broken.pt", "commander.onnx"]


def test_a_wfm1_policy_with_echelon_tokens_is_refused(tmp_path):
    from models.export import wfm1_graph

    policy = WFM1Policy(d_model=32, n_heads=4, n_echelon_layers=1, n_cross_layers=1,
                        echelon_tokens=True)
    with pytest.raises(ValueError, match="model.echelon_tokens"):
        wfm1_graph(policy)
    path = policy.save_checkpoint(tmp_path / "echelons.pt")
    with pytest.raises(ValueError, match="echelon_tokens"):
        export_checkpoint(path, tmp_path / "echelons.onnx")
    assert not (tmp_path / "echelons.onnx").exists()
