"""Bounded by declaration, before allocation: architecture fields have upper bounds
(:mod:`models.limits`) checked by the constructors and by the checkpoint readers before
anything is built, and the size check counts only weights a file really stores.

Every hostile file here is refused by name (file, field, value, limit) in under 1 GiB of
extra memory (:func:`tests.reliability.test_loading_door.measured`; its seconds are
printed, never asserted).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from models import limits
from models.mappo_files import load_policy, save_policy
from models.mappo_policy import MAPPOPolicy
from models.wfm1 import WFM1Policy
from storage.files import UnreadableFileError
from tests.reliability.hostile import rewritten_sb3_data
from tests.reliability.test_loading_door import measured

MiB = 2**20
LIMIT_BYTES = 2**30


def small_wfm1() -> WFM1Policy:
    return WFM1Policy(d_model=16, n_heads=2, n_echelon_layers=1, n_cross_layers=1,
                      actor_hidden_sizes=[8], critic_hidden_sizes=[8], card_hidden_size=8)


def small_mappo() -> MAPPOPolicy:
    return MAPPOPolicy(obs_dim=22, action_dim=3, state_dim=25, n_agents=2,
                       actor_hidden_sizes=(16,), critic_hidden_sizes=(16,))


def refused_quickly(call, *expected: str) -> str:
    raised, seconds, extra_mib = measured(call)
    assert isinstance(raised, ValueError), raised
    message = str(raised)
    for text in expected:
        assert text in message, (text, message)
    assert extra_mib * MiB < LIMIT_BYTES, extra_mib
    print(f"{type(raised).__name__} in {seconds:.2f} s, {extra_mib:.0f} MiB: {message[:160]}")
    return message


# --- the bounds themselves --------------------------------------------------------------------

def test_the_defaults_and_every_config_are_within_bounds():
    from training.wfm1.config import WFM1TrainConfig

    WFM1Policy(**WFM1TrainConfig().model_kwargs())  # would raise past a bound
    limits.check_architecture(WFM1Policy().kwargs, "defaults")
    import yaml

    def walk(node, source: str) -> None:
        if isinstance(node, dict):
            limits.check_architecture({k: v for k, v in node.items() if isinstance(k, str)},
                                      source)
            for value in node.values():
                walk(value, source)
        elif isinstance(node, list):
            for value in node:
                walk(value, source)

    configs = sorted((Path(__file__).resolve().parents[2] / "configs").rglob("*.yaml"))
    assert configs
    for path in configs:
        walk(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))


@pytest.mark.parametrize("field, value, limit", [
    ("n_echelon_layers", 3_000_000, limits.MAX_LAYERS),
    ("n_cross_layers", limits.MAX_LAYERS + 1, limits.MAX_LAYERS),
    ("d_model", 16384, limits.MAX_WIDTH),
    ("n_heads", 512, limits.MAX_HEADS),
    ("card_hidden_size", 10**9, limits.MAX_WIDTH),
    ("token_dim", 10**7, limits.MAX_INPUT_DIM),
])
def test_a_wfm1_field_past_its_bound_is_refused_before_building(field, value, limit):
    message = refused_quickly(lambda: WFM1Policy(**{field: value}), field, str(limit))
    assert f"{value}" in message.replace(",", "")


def test_a_hidden_size_list_of_millions_is_refused_at_once_with_a_short_message():
    message = refused_quickly(
        lambda: MAPPOPolicy(obs_dim=4, action_dim=3, state_dim=4,
                            actor_hidden_sizes=[8] * 2_000_000),
        "actor_hidden_sizes", "2,000,000", str(limits.MAX_LAYERS))
    assert len(message) < 300


@pytest.mark.parametrize("field, value", [("n_agents", 10**6), ("obs_dim", 10**9),
                                          ("critic_hidden_sizes", [10**6])])
def test_a_mappo_field_past_its_bound_is_refused(field, value):
    kwargs = dict(obs_dim=4, action_dim=3, state_dim=4)
    refused_quickly(lambda: MAPPOPolicy(**{**kwargs, field: value}), field)


# --- files that ask for more than they hold ----------------------------------------------------

def test_a_meta_tensor_does_not_count_as_weights(tmp_path):
    path = tmp_path / "meta.pt"
    policy = small_wfm1()
    state = dict(policy.state_dict())
    state["padding"] = torch.empty(10**12, device="meta")
    config = {**policy.kwargs, "d_model": 16384, "n_heads": 8}
    torch.save({"config": config, "state_dict": state}, path)
    # d_model is past its bound: refused before any build.
    refused_quickly(lambda: WFM1Policy.load_checkpoint(path), str(path), "d_model", "16384")
    # Within the bounds, the meta tensor itself is refused by name.
    torch.save({"config": policy.kwargs, "state_dict": state}, path)
    refused_quickly(lambda: WFM1Policy.load_checkpoint(path), str(path), "padding", "meta")


def test_an_expanded_view_counts_the_numbers_stored_not_the_numbers_shown(tmp_path):
    path = tmp_path / "expanded.pt"
    policy = small_mappo()
    big = {**policy.kwargs, "actor_hidden_sizes": [4096, 4096], "critic_hidden_sizes": [4096]}
    state = {"padding": torch.zeros(1).expand(10**9)}  # one number stored
    torch.save({"kwargs": big, "state_dict": state}, path)
    refused_quickly(lambda: load_policy(path), str(path), "holds 1 weights")


@pytest.mark.parametrize("field, value", [("n_echelon_layers", 3_000_000),
                                          ("actor_hidden_sizes", [64] * 2_000_000)])
def test_a_wfm1_checkpoint_past_a_bound_is_refused_naming_file_field_and_limit(
        tmp_path, field, value):
    path = tmp_path / "policy.pt"
    policy = small_wfm1()
    torch.save({"config": {**policy.kwargs, field: value}, "state_dict": policy.state_dict()},
               path)
    refused_quickly(lambda: WFM1Policy.load_checkpoint(path), str(path), field,
                    str(limits.MAX_LAYERS))


def test_every_wfm1_reader_refuses_an_unbounded_architecture(tmp_path):
    from training.wfm1.config import WFM1TrainConfig
    from training.wfm1.trainer import WFM1Trainer

    path = tmp_path / "policy.pt"
    policy = small_wfm1()
    torch.save({"config": {**policy.kwargs, "n_echelon_layers": 3_000_000},
                "state_dict": policy.state_dict()}, path)
    config = WFM1TrainConfig(checkpoint_dir=str(tmp_path / "c"), log_dir=str(tmp_path / "l"),
                             enable_wandb=False, warm_start_steps=0)
    refused_quickly(lambda: WFM1Trainer(config, init_policy=path), str(path),
                    "n_echelon_layers")


def test_every_mappo_reader_refuses_an_unbounded_architecture(tmp_path):
    from training.mappo.pool import TeamOpponentPool
    from training.policy_registry import PolicyRegistry

    path = tmp_path / "team_snapshot_v000001.pt"
    save_policy(small_mappo(), path, version=1)
    data = torch.load(path, weights_only=True)
    data["kwargs"]["actor_hidden_sizes"] = [16] * 2_000_000
    torch.save(data, path)
    refused_quickly(lambda: load_policy(path), str(path), "actor_hidden_sizes", "2,000,000")
    refused_quickly(lambda: TeamOpponentPool(tmp_path).sample_latest(), "actor_hidden_sizes")
    registry = PolicyRegistry()
    registry.register("battalion", "v1", path)
    refused_quickly(lambda: registry.load("battalion", "v1", obs_dim=22, action_dim=3,
                                          state_dim=25, n_agents=2),
                    "actor_hidden_sizes")


def test_an_sb3_archive_past_the_net_arch_bounds_is_refused(tmp_path):
    from stable_baselines3 import PPO

    from envs.vec_env import BattalionVecEnv
    from training.ppo.checkpoints import load_ppo, save_ppo

    valid = save_ppo(PPO("MlpPolicy", BattalionVecEnv(2), n_steps=8, batch_size=16,
                         device="cpu"), tmp_path / "valid.zip")
    path = rewritten_sb3_data(tmp_path / "wide.zip", valid, lambda data: data.update(
        policy_kwargs={"net_arch": [64] * 2_000_000}))
    refused_quickly(lambda: load_ppo(path), str(path), "net_arch", "2,000,000",
                    str(limits.MAX_LAYERS))


def test_a_valid_file_still_loads(tmp_path):
    path = save_policy(small_mappo(), tmp_path / "p.pt")
    assert load_policy(path).kwargs == small_mappo().kwargs
    wfm1 = small_wfm1().save_checkpoint(tmp_path / "w.pt")
    assert WFM1Policy.load_checkpoint(wfm1).kwargs == small_wfm1().kwargs


def test_the_size_check_refuses_a_meta_tensor_by_name():
    from models.weights import check_module_size

    with pytest.raises(UnreadableFileError, match="w as a torch.strided tensor on the meta"):
        check_module_size(lambda: torch.nn.Linear(2, 2), {"w": torch.empty(4, device="meta")},
                          "test file")
