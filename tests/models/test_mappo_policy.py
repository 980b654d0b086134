"""MAPPO networks: shapes, actor routing, sampling, saving and argument checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models import MAPPOActor, MAPPOCritic, MAPPOPolicy
from models.battalion_policy import FIRE_ACTION
from models.mappo_files import load_policy, save_policy

OBS, ACT, STATE = 22, 3, 25


def make(**changes) -> MAPPOPolicy:
    torch.manual_seed(0)
    return MAPPOPolicy(**{"obs_dim": OBS, "action_dim": ACT, "state_dim": STATE, **changes})


def test_act_and_value_shapes_for_one_and_many_observations():
    policy = make()
    actions, log_probs = policy.act(torch.randn(OBS))
    assert actions.shape == (1, ACT) and log_probs.shape == (1,)
    actions, log_probs = policy.act(np.random.default_rng(0).normal(size=(5, OBS)))
    assert actions.shape == (5, ACT) and log_probs.shape == (5,)
    assert policy.get_value(torch.randn(STATE)).shape == (1,)
    assert policy.get_value(torch.randn(7, STATE)).shape == (7,)
    log_prob, entropy, values = policy.evaluate_actions(
        torch.randn(4, OBS), torch.randn(4, ACT), torch.randn(4, STATE))
    assert log_prob.shape == entropy.shape == values.shape == (4,)
    assert values.requires_grad and log_prob.requires_grad


def test_shared_policy_has_one_actor_for_every_agent():
    policy = make(n_agents=3)
    assert policy.get_actor(0) is policy.get_actor(2) is policy.actor
    assert not hasattr(policy, "actors")
    obs = torch.randn(3, OBS)
    same = policy.act(obs, agent_idx=0, deterministic=True)[0]
    assert torch.equal(policy.act(obs, agent_idx=2, deterministic=True)[0], same)


def test_per_sample_agent_indices_route_to_each_agents_own_actor():
    policy = make(n_agents=2, share_parameters=False)
    assert len(policy.actors) == 2 and policy.get_actor(1) is policy.actors[1]
    with torch.no_grad():
        policy.actors[1].log_std.fill_(-1.0)
    obs = torch.randn(6, OBS)
    agents = torch.tensor([0, 1, 1, 0, 1, 0])
    mixed, _ = policy.act(obs, agent_idx=agents, deterministic=True)
    by_0, _ = policy.act(obs, agent_idx=0, deterministic=True)
    by_1, _ = policy.act(obs, agent_idx=1, deterministic=True)
    assert not torch.allclose(by_0, by_1)
    expected = torch.where((agents == 1)[:, None], by_1, by_0)
    torch.testing.assert_close(mixed, expected)
    actions = torch.randn(6, ACT)
    log_prob, entropy, _ = policy.evaluate_actions(obs, actions, torch.randn(6, STATE), agents)
    lp0, ent0, _ = policy.evaluate_actions(obs, actions, torch.randn(6, STATE), 0)
    lp1, ent1, _ = policy.evaluate_actions(obs, actions, torch.randn(6, STATE), 1)
    torch.testing.assert_close(log_prob, torch.where(agents == 1, lp1, lp0))
    torch.testing.assert_close(entropy, torch.where(agents == 1, ent1, ent0))
    # Gradients reach exactly the actors that acted.
    policy.zero_grad()
    policy.evaluate_actions(obs[:2], actions[:2], torch.randn(2, STATE),
                            torch.tensor([0, 0]))[0].sum().backward()
    assert policy.actors[0].trunk[0].weight.grad.abs().sum() > 0
    assert policy.actors[1].trunk[0].weight.grad is None


def test_deterministic_act_is_the_mean_and_repeatable():
    policy = make(initial_fire_bias=-2.0)
    obs = torch.randn(8, OBS)
    first, _ = policy.act(obs, deterministic=True)
    again, _ = policy.act(obs, deterministic=True)
    mean, std = policy.actor(obs)
    assert torch.equal(first, again)
    torch.testing.assert_close(first, mean)
    assert std.shape == mean.shape and torch.all(std == 1.0)  # log_std_init 0
    assert policy.actor.action_mean.bias[FIRE_ACTION].item() == -2.0


def test_sampled_log_prob_matches_evaluate_actions_on_the_same_actions():
    policy = make(n_agents=2, share_parameters=False, log_std_init=-0.5)
    torch.manual_seed(1)
    obs = torch.randn(16, OBS)
    agents = torch.arange(16) % 2
    actions, log_probs = policy.act(obs, agent_idx=agents)
    assert not torch.allclose(actions, policy.act(obs, agent_idx=agents, deterministic=True)[0])
    log_prob, _, _ = policy.evaluate_actions(obs, actions, torch.randn(16, STATE), agents)
    torch.testing.assert_close(log_prob.detach(), log_probs)
    # Actions are the raw draws: nothing clips them to the env's box.
    wide = make(log_std_init=2.0).act(torch.randn(200, OBS))[0]
    assert wide.abs().max() > 1.0


def test_parameter_count_sums_every_parameter():
    shared, separate = make(n_agents=3), make(n_agents=3, share_parameters=False)
    for policy in (shared, separate):
        counts = policy.parameter_count()
        assert counts["total"] == sum(p.numel() for p in policy.parameters())
        assert counts["critic"] == sum(p.numel() for p in policy.critic.parameters())
        assert counts["actor"] + counts["critic"] == counts["total"]
    assert separate.parameter_count()["actor"] == 3 * shared.parameter_count()["actor"]
    # The reference design's hand-counted 2v2 network (128-64 with LayerNorm).
    reference = make(actor_hidden_sizes=(128, 64), critic_hidden_sizes=(128, 64),
                     layer_norm=True)
    assert reference.parameter_count() == {"actor": 11_782, "critic": 12_033, "total": 23_815}


def test_save_and_load_round_trip_gives_identical_outputs(tmp_path):
    policy = make(n_agents=2, share_parameters=False, actor_hidden_sizes=[64, 32],
                  activation="relu", layer_norm=True, log_std_init=-0.3)
    path = save_policy(policy, tmp_path / "sub" / "team.pt", version=7)
    assert path.is_file()
    assert [p.name for p in path.parent.iterdir()] == ["team.pt"]  # no temp files left
    loaded = load_policy(path)
    assert not loaded.training and loaded.kwargs == policy.kwargs
    assert MAPPOPolicy(**policy.kwargs).kwargs == policy.kwargs
    obs, state = torch.randn(5, OBS), torch.randn(5, STATE)
    agents = torch.tensor([0, 1, 1, 0, 1])
    actions = torch.randn(5, ACT)
    for got, want in zip(loaded.evaluate_actions(obs, actions, state, agents),
                         policy.evaluate_actions(obs, actions, state, agents), strict=True):
        assert torch.equal(got, want)
    assert torch.load(path, weights_only=True)["version"] == 7


def test_standardised_inputs_are_the_identity_until_fitted_and_saved_with_the_weights(
        tmp_path):
    plain, standardised = make(n_agents=2, share_parameters=False), make(
        n_agents=2, share_parameters=False, normalize_observations=True)
    assert "normalize_observations" not in plain.kwargs  # earlier files keep their kwargs
    obs, state = torch.randn(6, OBS), torch.randn(6, STATE)
    assert torch.equal(plain.act(obs, 1, deterministic=True)[0],
                       standardised.act(obs, 1, deterministic=True)[0])
    assert torch.equal(plain.get_value(state), standardised.get_value(state))

    recorded_obs, recorded_states = torch.rand(400, OBS) * 4 + 2, torch.rand(400, STATE) - 3
    standardised.fit_observation_statistics(recorded_obs, recorded_states)
    obs_mean, obs_std = recorded_obs.mean(0), recorded_obs.std(0)
    state_mean, state_std = recorded_states.mean(0), recorded_states.std(0)
    with torch.no_grad():
        torch.testing.assert_close(standardised.act(obs, 1, deterministic=True)[0],
                                   plain.act((obs - obs_mean) / obs_std, 1,
                                             deterministic=True)[0])
        torch.testing.assert_close(standardised.get_value(state),
                                   plain.get_value((state - state_mean) / state_std))
    assert not any(name.endswith(("mean", "std")) and "standardize" in name
                   for name, _ in standardised.named_parameters())  # never trained

    loaded = load_policy(save_policy(standardised, tmp_path / "team.pt"))
    assert loaded.kwargs == standardised.kwargs
    assert torch.equal(loaded.act(obs, 1, deterministic=True)[0],
                       standardised.act(obs, 1, deterministic=True)[0])
    with pytest.raises(ValueError, match="normalize_observations=True"):
        plain.fit_observation_statistics(recorded_obs, recorded_states)


def test_load_refuses_missing_garbage_and_foreign_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load_policy(tmp_path / "nope.pt")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"this is not a torch file")
    with pytest.raises(ValueError, match="garbage.pt"):
        load_policy(garbage)
    other = tmp_path / "other.pt"
    torch.save({"policy_state_dict": {}}, other)
    with pytest.raises(ValueError, match=r"other\.pt.*kwargs"):
        load_policy(other)
    wrong = tmp_path / "wrong.pt"
    torch.save({"kwargs": make().kwargs, "state_dict": make(obs_dim=10).state_dict()}, wrong)
    with pytest.raises(ValueError, match="wrong.pt"):
        load_policy(wrong)
    with pytest.raises(TypeError, match="MAPPOPolicy"):
        save_policy(torch.nn.Linear(2, 2), tmp_path / "x.pt")
    with pytest.raises(ValueError, match="reserved"):
        save_policy(make(), tmp_path / "x.pt", kwargs={})


@pytest.mark.parametrize("changes, field", [
    ({"obs_dim": 0}, "obs_dim"),
    ({"action_dim": 2.5}, "action_dim"),
    ({"state_dim": -1}, "state_dim"),
    ({"n_agents": 0}, "n_agents"),
    ({"share_parameters": "yes"}, "share_parameters"),
    ({"actor_hidden_sizes": ()}, "actor_hidden_sizes"),
    ({"critic_hidden_sizes": (64, 0)}, r"critic_hidden_sizes\[1\]"),
    ({"activation": "gelu"}, "activation"),
    ({"layer_norm": 1}, "layer_norm"),
    ({"log_std_init": float("nan")}, "log_std_init"),
    ({"initial_fire_bias": float("inf")}, "initial_fire_bias"),
    ({"action_dim": 2, "initial_fire_bias": -1.0}, "initial_fire_bias"),
])
def test_constructor_errors_name_the_field(changes, field):
    with pytest.raises((ValueError, TypeError), match=field):
        make(**changes)


def test_call_errors_name_the_input():
    policy = make(n_agents=2, share_parameters=False)
    with pytest.raises(ValueError, match="obs has shape"):
        policy.act(torch.randn(3, OBS + 1))
    with pytest.raises(ValueError, match="obs contains non-finite"):
        policy.act(torch.full((OBS,), float("nan")))
    with pytest.raises(ValueError, match="agent_idx"):
        policy.act(torch.randn(OBS), agent_idx=2)
    with pytest.raises(ValueError, match="agent_idx"):
        policy.act(torch.randn(2, OBS), agent_idx=torch.tensor([0, 1, 1]))
    with pytest.raises(TypeError, match="agent_idx"):
        policy.act(torch.randn(2, OBS), agent_idx=torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="state has shape"):
        policy.get_value(torch.randn(2, STATE - 1))
    with pytest.raises(ValueError, match="batch sizes differ"):
        policy.evaluate_actions(torch.randn(2, OBS), torch.randn(3, ACT), torch.randn(2, STATE))


def test_actor_and_critic_modules_alone():
    actor = MAPPOActor(OBS, ACT, hidden_sizes=(16,), layer_norm=True, log_std_init=-1.0)
    assert [type(m).__name__ for m in actor.trunk] == ["Linear", "LayerNorm", "Tanh"]
    dist = actor.distribution(torch.randn(4, OBS))
    torch.testing.assert_close(dist.stddev, torch.full((4, ACT), float(np.exp(-1.0))))
    log_prob, entropy = actor.evaluate_actions(torch.randn(4, OBS), torch.randn(4, ACT))
    assert log_prob.shape == entropy.shape == (4,)
    critic = MAPPOCritic(STATE, hidden_sizes=[8, 8], activation="relu")
    assert critic(torch.randn(3, STATE)).shape == (3,)
    with pytest.raises(ValueError, match="hidden_sizes"):
        MAPPOCritic(STATE, hidden_sizes="128")


# --- the formation head ------------------------------------------------------------------


def test_a_formation_head_adds_the_formation_code_to_every_order():
    policy = make(formation_orders=True, n_agents=2, share_parameters=False)
    assert policy.order_width == ACT + 1 and policy.kwargs["formation_orders"] is True
    obs = torch.randn(64, OBS)
    agents = torch.arange(64) % 2
    actions, log_probs = policy.act(obs, agent_idx=agents)
    codes = actions[:, ACT]
    assert actions.shape == (64, ACT + 1)
    assert torch.equal(codes, codes.round()) and codes.min() >= -1 and codes.max() <= 3
    # A fresh head keeps the formation most of the time: every change costs drill steps.
    assert (codes == -1).float().mean() > 0.8
    log_prob, entropy, _ = policy.evaluate_actions(obs, actions, torch.randn(64, STATE),
                                                   agent_idx=agents)
    torch.testing.assert_close(log_prob, log_probs)
    gaussian_only = make(n_agents=2, share_parameters=False).evaluate_actions(
        obs, actions[:, :ACT], torch.randn(64, STATE), agent_idx=agents)[1]
    assert (entropy > gaussian_only).all()  # the categorical's entropy is added


def test_keyed_draws_decide_the_formation_choice_by_its_probabilities():
    policy = make(formation_orders=True)
    obs = torch.randn(1, OBS).repeat(20_000, 1)
    noise = torch.randn(20_000, ACT + 1, generator=torch.Generator().manual_seed(1))
    actions, _ = policy.act(obs, noise=noise)
    again, _ = policy.act(obs, noise=noise)
    assert torch.equal(actions, again)
    probs = torch.softmax(policy.actor.heads(obs[:1])[0, ACT:], -1)
    shares = torch.bincount((actions[:, ACT] + 1).long(), minlength=5) / 20_000.0
    torch.testing.assert_close(shares, probs.detach(), atol=0.01, rtol=0)
    # The continuous orders are mean + std * noise, as without the head.
    mean = policy.act(obs[:1], deterministic=True)[0][0, :ACT]
    std = policy.actor.log_std.exp()
    torch.testing.assert_close(actions[:5, :ACT], mean + std * noise[:5, :ACT])
    with pytest.raises(ValueError, match="noise"):
        policy.act(obs[:2], noise=noise[:2, :ACT])


def test_a_policy_without_the_head_keeps_its_file_and_its_orders():
    plain = make()
    assert "formation_orders" not in plain.kwargs and plain.order_width == ACT
    head = make(formation_orders=True)
    obs = torch.randn(8, OBS)
    # The head is its own layer: the trunk and the Gaussian start the same.
    torch.testing.assert_close(head.act(obs, deterministic=True)[0][:, :ACT],
                               plain.act(obs, deterministic=True)[0])
    with pytest.raises(ValueError, match="formation_orders"):
        plain.actor.heads(obs)
    with pytest.raises(TypeError, match="formation_orders"):
        make(formation_orders="yes")


def test_a_policy_with_the_head_saves_and_loads(tmp_path):
    policy = make(formation_orders=True)
    loaded = load_policy(save_policy(policy, tmp_path / "p.pt"))
    obs = torch.randn(8, OBS)
    assert torch.equal(loaded.act(obs, deterministic=True)[0],
                       policy.act(obs, deterministic=True)[0])


def test_the_formation_heads_logits_and_orders_serve_a_pull_toward_a_reference():
    from torch.distributions import Categorical, kl_divergence

    from models.formation_orders import FORMATION_CHOICES, formation_kl

    policy, other = make(formation_orders=True), make(formation_orders=True)
    with torch.no_grad():
        other.actor.formation_head.bias.add_(torch.arange(FORMATION_CHOICES, dtype=torch.float32))
    obs = torch.randn(6, OBS)
    logits = policy.formation_logits(obs)
    assert logits.shape == (6, FORMATION_CHOICES) and not logits.requires_grad
    actions, _ = policy.act(obs)
    *terms, orders = policy.evaluate_actions(obs, actions, torch.randn(6, STATE),
                                             return_orders=True)
    assert len(terms) == 3 and torch.allclose(orders.formation_logits, logits)
    assert orders.formation_logits.requires_grad
    assert len(policy.evaluate_actions(obs, actions, torch.randn(6, STATE))) == 3
    # KL(reference || policy): nothing between a head and itself, the textbook value else.
    assert torch.allclose(formation_kl(logits, logits), torch.zeros(6), atol=1e-6)
    reference = other.formation_logits(obs)
    assert torch.allclose(formation_kl(reference, logits),
                          kl_divergence(Categorical(logits=reference), Categorical(logits=logits)),
                          atol=1e-5)
    assert bool((formation_kl(reference, logits) > 0).all())
    # By hand: KL([1/2, 1/2, 0...] || uniform over the choices) = log(choices / 2).
    half = torch.full((1, FORMATION_CHOICES), -1e9)
    half[0, :2] = 0.0
    assert float(formation_kl(half, torch.zeros(1, FORMATION_CHOICES))) == pytest.approx(
        float(np.log(FORMATION_CHOICES / 2)), abs=1e-5)
    with pytest.raises(ValueError, match="formation_orders=True"):
        make().formation_logits(obs)
    with pytest.raises(TypeError, match="return_orders"):
        policy.evaluate_actions(obs, actions, torch.randn(6, STATE), return_orders=1)
