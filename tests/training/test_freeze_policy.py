"""Freezing trained policies, and loading them frozen without running pickled code."""

from __future__ import annotations

import base64
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO

from envs.vec_env import BattalionVecEnv
from models.mappo_files import save_policy
from models.mappo_policy import MAPPOPolicy
from storage.files import UntrustedCheckpointError
from tests.reliability.hostile import rewritten_sb3_data
from training.mappo.checkpoints import save_checkpoint
from training.mappo.config import MAPPOConfig
from training.ppo.checkpoints import save_ppo
from training.utils.freeze_policy import (
    assert_frozen,
    freeze_mappo_policy,
    freeze_sb3_policy,
    load_and_freeze_mappo,
    load_and_freeze_sb3,
)

DIMS = dict(obs_dim=6, action_dim=3, state_dim=10, n_agents=2)


def small_policy(**changes) -> MAPPOPolicy:
    torch.manual_seed(0)
    return MAPPOPolicy(**{**DIMS, **changes}, actor_hidden_sizes=[16],
                       critic_hidden_sizes=[16])


def write_trainer_checkpoint(path: Path, policy: MAPPOPolicy) -> Path:
    """A checkpoint exactly as the MAPPO trainer writes one (MAPPOTrainer.save)."""
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    return save_checkpoint(path, policy, optimizer, total_steps=64, episodes=2,
                           config=MAPPOConfig(), scheduler=None,
                           rng=np.random.default_rng(0), generator=torch.Generator(),
                           self_play_version=0)


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def fully_frozen(module: torch.nn.Module) -> bool:
    return all(not p.requires_grad for p in module.parameters()) and \
        not any(m.training for m in module.modules())


def _touch(path: str) -> None:
    Path(path).write_text("the payload ran")


class Payload:
    """Unpickles by calling ``_touch``: what a malicious file would do with os.system."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return _touch, (self.marker,)


@pytest.fixture(scope="module")
def ppo_model():
    return PPO("MlpPolicy", BattalionVecEnv(2), n_steps=32, batch_size=32, device="cpu",
               seed=0)


# --- freezing ---------------------------------------------------------------------


def test_a_frozen_mappo_policy_has_no_trainable_parameter_and_is_in_eval_mode():
    policy = small_policy()
    assert policy.training and all(p.requires_grad for p in policy.parameters())
    assert freeze_mappo_policy(policy) is policy
    assert fully_frozen(policy)
    assert_frozen(policy)
    value = policy.get_value(torch.zeros(4, DIMS["state_dim"]))
    assert not value.requires_grad
    with pytest.raises(RuntimeError):  # nothing to differentiate: no weight can move
        value.sum().backward()


def test_assert_frozen_names_the_first_trainable_parameter():
    policy = small_policy()
    first = next(name for name, _ in policy.named_parameters())
    with pytest.raises(RuntimeError, match=f"'{first}'"):
        assert_frozen(policy)
    freeze_mappo_policy(policy)
    policy.critic.value_head.weight.requires_grad_(True)
    with pytest.raises(RuntimeError, match="'critic.value_head.weight'"):
        assert_frozen(policy)


def test_freezing_refuses_what_is_not_a_network():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        freeze_mappo_policy(object())
    with pytest.raises(AttributeError, match="no 'policy' attribute"):
        freeze_sb3_policy(object())
    with pytest.raises(AttributeError, match="no 'policy' attribute"):
        assert_frozen(object())


def test_a_frozen_sb3_model_has_a_frozen_policy():
    model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=32, batch_size=32, device="cpu")
    with pytest.raises(RuntimeError, match="requires grad"):
        assert_frozen(model)
    assert freeze_sb3_policy(model) is model
    assert fully_frozen(model.policy)
    assert_frozen(model)
    assert_frozen(model.policy)


# --- loading MAPPO policies ---------------------------------------------------------------


def test_a_trainer_checkpoint_loads_frozen_with_the_same_weights(tmp_path):
    policy = small_policy()
    path = write_trainer_checkpoint(tmp_path / "mappo_policy.pt", policy)
    loaded = load_and_freeze_mappo(path, **DIMS)
    assert isinstance(loaded, MAPPOPolicy) and loaded is not policy
    assert same_weights(loaded, policy)
    assert fully_frozen(loaded)
    obs = torch.randn(5, DIMS["obs_dim"])
    assert torch.equal(loaded.act(obs, deterministic=True)[0],
                       policy.eval().act(obs, deterministic=True)[0])


def test_a_save_policy_file_loads_too(tmp_path):
    policy = small_policy(share_parameters=False)
    path = save_policy(policy, tmp_path / "snapshot.pt", version=3)
    loaded = load_and_freeze_mappo(str(path), **DIMS)
    assert same_weights(loaded, policy) and fully_frozen(loaded)


@pytest.mark.parametrize("field", ["obs_dim", "action_dim", "state_dim", "n_agents"])
def test_sizes_that_differ_from_the_file_name_the_field(tmp_path, field):
    path = write_trainer_checkpoint(tmp_path / "mappo_policy.pt", small_policy())
    with pytest.raises(ValueError, match=f"has {field}={DIMS[field]} but {field}=99"):
        load_and_freeze_mappo(path, **{**DIMS, field: 99})


def test_n_agents_none_takes_a_policy_of_any_number_of_agents(tmp_path):
    path = write_trainer_checkpoint(tmp_path / "mappo_policy.pt", small_policy())
    loaded = load_and_freeze_mappo(path, **{**DIMS, "n_agents": None})
    assert loaded.n_agents == DIMS["n_agents"] and fully_frozen(loaded)
    # The other sizes are still compared.
    with pytest.raises(ValueError, match="has obs_dim=6 but obs_dim=99"):
        load_and_freeze_mappo(path, **{**DIMS, "n_agents": None, "obs_dim": 99})


def test_missing_and_foreign_mappo_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.pt"):
        load_and_freeze_mappo(tmp_path / "nothing.pt", **DIMS)
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="other.pt is not a MAPPO policy"):
        load_and_freeze_mappo(tmp_path / "other.pt", **DIMS)
    (tmp_path / "junk.pt").write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match="junk.pt"):
        load_and_freeze_mappo(tmp_path / "junk.pt", **DIMS)


def test_a_mappo_file_with_a_pickled_payload_is_refused_without_running_it(tmp_path):
    # The control shows the payload is live: plain unpickling runs it.
    control = tmp_path / "control"
    pickle.loads(pickle.dumps(Payload(control)))
    assert control.exists()

    marker = tmp_path / "marker"
    policy = small_policy()
    path = tmp_path / "evil.pt"
    torch.save({"kwargs": policy.kwargs, "state_dict": policy.state_dict(),
                "payload": Payload(marker)}, path)
    with pytest.raises(UntrustedCheckpointError, match="evil.pt"):
        load_and_freeze_mappo(path, **DIMS)
    assert not marker.exists()


# --- loading SB3 models -------------------------------------------------------------------


def test_an_sb3_model_loads_frozen_with_the_same_weights(tmp_path, ppo_model):
    path = save_ppo(ppo_model, tmp_path / "brigade")
    loaded = load_and_freeze_sb3(path)
    assert loaded is not ppo_model
    assert same_weights(loaded.policy, ppo_model.policy)
    assert fully_frozen(loaded.policy)
    obs = np.random.default_rng(0).uniform(0, 1, (4, 25)).astype(np.float32)
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0],
                          ppo_model.predict(obs, deterministic=True)[0])
    with pytest.raises(FileNotFoundError):
        load_and_freeze_sb3(tmp_path / "nothing.zip")


def test_an_sb3_archive_with_a_pickled_payload_is_refused_without_running_it(tmp_path,
                                                                              ppo_model):
    marker = tmp_path / "marker"
    clean = save_ppo(ppo_model, tmp_path / "clean")
    evil = rewritten_sb3_data(tmp_path / "evil.zip", clean, lambda fields: fields.update(evil={
        ":type:": "<class 'tests.Payload'>",
        ":serialized:": base64.b64encode(pickle.dumps(Payload(marker))).decode()}))
    with pytest.raises(UntrustedCheckpointError, match="stores a pickled 'evil'"):
        load_and_freeze_sb3(evil)
    assert not marker.exists()
