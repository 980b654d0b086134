"""MAPPO with an order of battle: the observations carry the arms, the actors order
formations, the scripted Red and the combined-arms doctrine use theirs, and a run
imitates the combined-arms doctrine, formations included."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from envs.battles.multi_observation import ARMS_OBS_DIM, ARMS_STATE_DIM, OBS_DIM
from envs.play.commanders import BatchedRed, CombinedArmsRed
from envs.rendering import write_replay_html
from envs.sim import constants as C
from models.formation_orders import formation_kl
from models.mappo_policy import MAPPOPolicy
from tests.training.test_train_mappo import ROLLOUT
from tests.training.test_train_mappo import tiny as team_settings
from training.mappo.battles import (
    PolicyCommander,
    TeamSettings,
    make_team_battles,
    play_team_battles,
    record_team_battle,
)
from training.mappo.config import MAPPOConfig
from training.mappo.trainer import MAPPOTrainer
from training.mappo.warm_start import TeamDemonstrations, clone_team
from training.train_mappo import policy_from_checkpoint, train_mappo

ARMS = {"blue": ["infantry", "cavalry"], "red": ["infantry", {"type": "artillery",
                                                              "formation": "limbered"}]}


def tiny(tmp_path, **changes) -> MAPPOConfig:
    return MAPPOConfig(**{**team_settings(tmp_path), "order_of_battle": ARMS, **changes})


def policy(formation_orders: bool = True, **changes) -> MAPPOPolicy:
    torch.manual_seed(0)
    return MAPPOPolicy(ARMS_OBS_DIM, C.ACTION_DIM, ARMS_OBS_DIM + ARMS_STATE_DIM,
                       formation_orders=formation_orders, **changes)


def test_an_order_of_battle_is_checked_and_sizes_the_networks(tmp_path):
    config = tiny(tmp_path)
    assert config.obs_dim() == ARMS_OBS_DIM
    assert config.critic_dim() == ARMS_OBS_DIM + ARMS_STATE_DIM
    assert tiny(tmp_path, order_of_battle=None).obs_dim() == OBS_DIM
    assert tiny(tmp_path, order_of_battle="combined_arms", n_blue=4, n_red=4).forces().arm \
        == (0, 0, 1, 2) * 2
    with pytest.raises(ValueError, match="order_of_battle.*expected n_blue=2"):
        tiny(tmp_path, order_of_battle="combined_arms")
    with pytest.raises(ValueError, match="order_of_battle='nowhere'"):
        tiny(tmp_path, order_of_battle="nowhere")
    with pytest.raises(ValueError, match="order_of_battle"):
        tiny(tmp_path, order_of_battle={"blue": ["dragoons"], "red": ["infantry"]})
    with pytest.raises(ValueError, match="curriculum"):
        tiny(tmp_path, curriculum=True)
    with pytest.raises(ValueError, match="formation_pull=0.5 is invalid without an order_of"):
        tiny(tmp_path, order_of_battle=None, formation_pull=0.5)
    with pytest.raises(ValueError, match="formation_pull"):
        tiny(tmp_path, formation_pull=-1.0)


def test_the_formation_head_orders_reach_the_engine():
    square = policy()
    with torch.no_grad():  # every Blue unit orders square whatever it sees
        square.actor.formation_head.bias[C.SQUARE + 1] = 100.0
    settings = TeamSettings(order_of_battle=ARMS)
    with settings.battles(square, 5, 4, seed=3) as battles:
        for _ in range(12):
            battles.step()
        formation = battles.battles.state.formation
    # Infantry forms square; cavalry cannot, and keeps its line.
    assert (formation[:, 0] == C.SQUARE).all() and (formation[:, 1] == C.LINE).all()


def test_arms_battles_are_played_against_every_kind_of_red():
    blue = policy()
    for red in (5, CombinedArmsRed(), policy(formation_orders=False), blue):
        outcomes = play_team_battles(blue, red, n_episodes=3, seed=5, order_of_battle=ARMS,
                                     env_kwargs={"max_steps": 40})
        assert outcomes.shape == (3,)
        again = play_team_battles(blue, red, n_episodes=3, seed=5, order_of_battle=ARMS,
                                  env_kwargs={"max_steps": 40})
        assert np.array_equal(outcomes, again)
    with pytest.raises(TypeError, match="opponent"):
        play_team_battles(blue, object(), n_episodes=1, order_of_battle=ARMS)


def test_a_team_battle_is_recorded_as_played_formations_included(tmp_path):
    square = policy()
    with torch.no_grad():  # every Blue unit orders square whatever it sees
        square.actor.formation_head.bias[C.SQUARE + 1] = 100.0
    env_kwargs = {"max_steps": 60}
    for seed in (2, 3):
        replay = record_team_battle(square, 5, seed=seed, order_of_battle=ARMS,
                                    env_kwargs=env_kwargs, metadata={"red": "L5"})
        outcome = play_team_battles(square, 5, n_episodes=1, seed=seed, order_of_battle=ARMS,
                                    env_kwargs=env_kwargs)[0]
        assert replay.metadata["outcome"] == {1: "blue", 0: "draw", -1: "red"}[int(outcome)]
        assert replay.metadata["red"] == "L5" and replay.metadata["seed"] == seed
        assert replay.n_steps == replay.metadata["steps"] <= 60
        assert list(replay.arm) == [C.INFANTRY, C.CAVALRY, C.INFANTRY, C.ARTILLERY]
        formation = replay.tracks["formation"]
        # the deployment, then the infantry's square as ordered (after its drill)
        assert formation[0, 0] == C.LINE and formation[-1, 0] == C.SQUARE
        assert (formation[:, 1] == C.LINE).all()
    path = write_replay_html(replay, tmp_path / "battle.html")
    assert "window.viewer" in path.read_text()
    with pytest.raises(ValueError, match="seed"):
        record_team_battle(square, 5, seed=-1, order_of_battle=ARMS)
    with pytest.raises(TypeError, match="opponent"):
        record_team_battle(square, object(), order_of_battle=ARMS)


def test_a_run_imitates_the_combined_arms_doctrine_then_learns(tmp_path):
    config = tiny(tmp_path, warm_start_doctrine="disciplined", warm_start_steps=4 * ROLLOUT,
                  total_timesteps=6 * ROLLOUT, warm_start_epochs=2, max_steps=20)
    trainer = MAPPOTrainer(config)
    try:
        assert trainer.policy.formation_orders and trainer.policy.obs_dim == ARMS_OBS_DIM
        assert isinstance(trainer.battles.doctrine, CombinedArmsRed)
        assert np.isfinite(trainer.pending_metrics["warm_start/action_loss"])
        rollout = trainer.collect_rollout()
    finally:
        trainer.close()
    codes = rollout.actions[..., C.ACTION_DIM][torch.from_numpy(rollout.valid)]
    assert set(codes.unique().tolist()) <= {-1.0, 0.0, 1.0, 2.0, 3.0}
    # The whole run, evaluation and checkpoints included.
    result = train_mappo(config)
    # The imitation's rounds (28 of 8 battles), then whole rollouts until the budget of
    # six is reached: five.
    assert result.total_steps == 28 * 8 + 5 * ROLLOUT and result.policy.formation_orders
    assert "eval/win_rate" in result.history[-1]
    assert policy_from_checkpoint(result.final_checkpoint).formation_orders


def test_the_clone_learns_the_teachers_formation_orders():
    """Demonstrations whose teacher forms square when its first feature is high and keeps
    its formation otherwise: the cloned head picks the same."""
    rng = np.random.default_rng(0)
    n = 2048
    observations = rng.uniform(0, 1, (n, ARMS_OBS_DIM)).astype(np.float32)
    codes = np.where(observations[:, 0] > 0.5, C.SQUARE, C.KEEP_FORMATION)
    actions = np.concatenate((rng.uniform(-1, 1, (n, C.ACTION_DIM)), codes[:, None]),
                             1).astype(np.float32)
    demonstrations = TeamDemonstrations(
        observations, rng.normal(size=(n, ARMS_OBS_DIM + ARMS_STATE_DIM)).astype(np.float32),
        actions, rng.normal(size=n).astype(np.float32), np.zeros(n, np.int64))
    student = policy()
    clone_team(student, demonstrations, epochs=30, batch_size=256, learning_rate=3e-3)
    chosen = student.act(observations, deterministic=True)[0][:, C.ACTION_DIM].numpy()
    assert (chosen == codes).mean() > 0.95
    with pytest.raises(ValueError, match="order_width"):
        clone_team(policy(formation_orders=False), demonstrations, epochs=1)


def test_a_formation_head_commands_red_in_the_play_tool():
    battles = make_team_battles(3, 2, 2, order_of_battle=ARMS)
    battles.reset(np.arange(3), [0, 1, 2], np.zeros(3, np.int64))
    square = policy()
    with torch.no_grad():
        square.actor.formation_head.bias[C.SQUARE + 1] = 100.0
    red = np.array([2, 3])
    orders, formations = BatchedRed(PolicyCommander(square, deterministic=True),
                                    "mappo").orders(battles, red)
    assert orders.shape == (3, 2, C.ACTION_DIM) and (formations == C.SQUARE).all()
    orders, formations = BatchedRed(PolicyCommander(policy(False), deterministic=True),
                                    "mappo").orders(battles, red)
    assert orders.shape == (3, 2, C.ACTION_DIM) and formations is None


def _formation_drift(trainer: MAPPOTrainer, start: MAPPOPolicy) -> float:
    """Mean KL from ``start``'s formation choices to the trainer's on its last rollout."""
    rollout = trainer.rollout
    valid = torch.from_numpy(rollout.valid)
    obs = rollout.obs[valid]
    agents = (torch.arange(rollout.valid.shape[2]).expand(rollout.valid.shape)
              % start.n_agents)[valid]
    return float(formation_kl(start.formation_logits(obs, agents),
                              trainer.policy.formation_logits(obs, agents)).mean())


def test_the_formation_pull_holds_the_formation_choices_the_run_started_from(tmp_path):
    drift = {}
    for pull in (0.0, 20.0):
        config = tiny(tmp_path / str(pull), warm_start_doctrine="disciplined",
                      warm_start_steps=4 * ROLLOUT, total_timesteps=12 * ROLLOUT,
                      warm_start_epochs=2, max_steps=40, learning_rate=3e-3, n_epochs=4,
                      formation_pull=pull)
        trainer = MAPPOTrainer(config)
        try:
            start = copy.deepcopy(trainer.policy)
            assert (trainer.formation_reference is None) == (pull == 0.0)
            metrics = [trainer.learn_from(trainer.collect_rollout()) for _ in range(8)]
            drift[pull] = _formation_drift(trainer, start)
        finally:
            trainer.close()
        assert ("train/formation_kl" in metrics[-1]) == (pull > 0)
    # Unpulled, the choices wander from where the imitation left them; pulled, they stay.
    assert drift[0.0] > 0.01
    assert drift[20.0] < drift[0.0] / 3


def test_a_resumed_run_pulls_toward_the_formations_its_run_started_from(tmp_path):
    config = tiny(tmp_path, warm_start_doctrine="disciplined", warm_start_steps=4 * ROLLOUT,
                  total_timesteps=12 * ROLLOUT, warm_start_epochs=2, max_steps=40,
                  learning_rate=3e-3, formation_pull=1.0)
    trainer = MAPPOTrainer(config)
    try:
        started = {k: v.clone() for k, v in trainer.formation_reference.state_dict().items()}
        trainer.learn_from(trainer.collect_rollout())
        path = trainer.save(tmp_path / "run.pt")
    finally:
        trainer.close()
    resumed = MAPPOTrainer(config, resume=path)
    try:
        reference = resumed.formation_reference.state_dict()
        assert all(torch.equal(reference[k], v) for k, v in started.items())
        assert not all(torch.equal(resumed.policy.state_dict()[k], v) for k, v in started.items())
        assert not any(p.requires_grad for p in resumed.formation_reference.parameters())
    finally:
        resumed.close()
    # A checkpoint of a run without the pull: the pull starts from its weights.
    unpulled = MAPPOTrainer(tiny(tmp_path, formation_pull=0.0, total_timesteps=12 * ROLLOUT))
    try:
        path = unpulled.save(tmp_path / "unpulled.pt")
        weights = unpulled.policy.state_dict()
    finally:
        unpulled.close()
    resumed = MAPPOTrainer(config, resume=path)
    try:
        assert all(torch.equal(resumed.formation_reference.state_dict()[k], v)
                   for k, v in weights.items())
    finally:
        resumed.close()
