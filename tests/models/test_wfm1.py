"""WFM-1: shapes, padding and order invariance, the FiLM adapter, sampling, files, checks."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from envs.battles.entity_tokens import ENTITY_TOKEN_DIM, TOKEN
from envs.sim.constants import KEEP_FORMATION, SQUARE
from models.wfm1 import (
    CARD_DIM,
    ECHELON_BRIGADE,
    ECHELON_CORPS,
    ECHELON_DIVISION,
    GIS_SALAMANCA,
    N_ECHELONS,
    WEATHER_FOG,
    WEATHER_SNOW,
    CrossEchelonTransformer,
    EchelonEncoder,
    ScenarioCard,
    WFM1Batch,
    WFM1Policy,
    own_formation_error,
)
from storage.files import UntrustedCheckpointError

ACT = 3
SMALL = dict(d_model=32, n_heads=4, n_echelon_layers=2, n_cross_layers=1,
             actor_hidden_sizes=(48, 24), critic_hidden_sizes=(48, 24), card_hidden_size=16)


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make(**changes) -> WFM1Policy:
    torch.manual_seed(0)
    return WFM1Policy(**{**SMALL, **changes})


def tokens(batch: int, n: int, seed: int = 1) -> torch.Tensor:
    """Random tokens with positions in [0, 1] (the rest of the features need not be valid)."""
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randn(batch, n, ENTITY_TOKEN_DIM, generator=generator)
    rows[..., TOKEN["x"]] = torch.rand(batch, n, generator=generator)
    rows[..., TOKEN["y"]] = torch.rand(batch, n, generator=generator)
    return rows


def padding(batch: int, n: int, lengths: list[int]) -> torch.Tensor:
    """A pad mask with ``lengths[b]`` real tokens at the front of row ``b``."""
    return torch.arange(n)[None, :] >= torch.tensor(lengths)[:, None]


def batch_of(policy: WFM1Policy, *args, **kwargs) -> WFM1Batch:
    """``policy``'s checked batch of the inputs given (as :meth:`WFM1Policy.act` takes them)."""
    return WFM1Batch.checked(policy, *args, **kwargs)


def means(policy: WFM1Policy, *args, **kwargs) -> torch.Tensor:
    return policy.act(*args, deterministic=True, **kwargs)[0]


def tweaked_card() -> ScenarioCard:
    return ScenarioCard(map_scale=0.8, echelon_level=ECHELON_BRIGADE, weather_code=WEATHER_FOG,
                        n_blue_units=12, n_red_units=20, terrain_type=GIS_SALAMANCA,
                        cavalry_fraction=0.25, artillery_fraction=0.125, supply_pressure=0.5,
                        time_of_day=0.75)


# ----------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("n", [1, 8, 33])
@pytest.mark.parametrize("batch", [1, 4])
def test_shapes_for_any_number_of_tokens_and_battles(n, batch):
    policy = make()
    rows, mask = tokens(batch, n), padding(batch, n, [max(n - b, 1) for b in range(batch)])
    actions, log_probs = policy.act(rows, mask)
    assert actions.shape == (batch, n, ACT) and log_probs.shape == (batch, n)
    assert policy.get_value(batch_of(policy, rows, mask)).shape == (batch,)
    log_prob, entropy, value = policy.evaluate_actions(batch_of(policy, rows, mask), actions)
    assert log_prob.shape == entropy.shape == (batch, n) and value.shape == (batch,)
    assert log_prob.requires_grad and value.requires_grad
    per_token, pooled = policy.encoder.encode(rows, 0, mask)
    assert per_token.shape == (batch, n, 32) and pooled.shape == (batch, 32)


def test_defaults_use_the_entity_token_and_about_1_4_million_parameters():
    policy = WFM1Policy()
    assert policy.token_dim == ENTITY_TOKEN_DIM and CARD_DIM == 16
    assert 1_300_000 < policy.n_parameters() < 1_500_000
    adapter = sum(p.numel() for p in policy.adapter_parameters())
    base = sum(p.numel() for p in policy.base_parameters())
    assert adapter + base == policy.n_parameters() and adapter > 0
    rebuilt = WFM1Policy(**policy.kwargs)
    assert rebuilt.n_parameters() == policy.n_parameters()
    assert policy.kwargs["actor_hidden_sizes"] == [256, 128]


# ----------------------------------------------------------------------------- invariances


def test_padded_tokens_change_nothing_else():
    policy = make().eval()
    rows, mask = tokens(3, 10), padding(3, 10, [10, 6, 2])
    before_actions = means(policy, rows, mask)
    before_value = policy.get_value(batch_of(policy, rows, mask))
    changed = rows.clone()
    changed[mask] = torch.randn(int(mask.sum()), ENTITY_TOKEN_DIM) * 50
    after_actions = means(policy, changed, mask)
    torch.testing.assert_close(after_actions, before_actions, rtol=0, atol=1e-6)
    torch.testing.assert_close(policy.get_value(batch_of(policy, changed, mask)), before_value,
                               rtol=0, atol=1e-6)
    assert torch.all(after_actions[mask] == 0)  # padding has no action


def test_permuting_tokens_permutes_actions_and_keeps_the_value():
    policy = make()
    rows, mask = tokens(2, 12), padding(2, 12, [12, 9])
    order = torch.cat((torch.randperm(9, generator=torch.Generator().manual_seed(3)),
                       torch.arange(9, 12)))
    actions = means(policy, rows, mask)
    permuted = means(policy, rows[:, order], mask[:, order])
    torch.testing.assert_close(permuted, actions[:, order], rtol=0, atol=1e-5)
    torch.testing.assert_close(policy.get_value(batch_of(policy, rows[:, order], mask[:, order])),
                               policy.get_value(batch_of(policy, rows, mask)), rtol=0, atol=1e-5)


def test_a_fully_padded_row_gives_finite_zeros():
    policy = make()
    rows, mask = tokens(3, 5), padding(3, 5, [5, 0, 2])
    actions, log_probs = policy.act(rows, mask)
    assert torch.all(actions[1] == 0) and torch.all(log_probs[1] == 0)
    assert torch.isfinite(actions).all()
    assert torch.isfinite(policy.get_value(batch_of(policy, rows, mask))).all()
    per_token, pooled = policy.encoder.encode(rows, 0, mask)
    assert torch.all(per_token[1] == 0) and torch.all(pooled[1] == 0)
    # No NaN reaches the gradients either.
    log_prob, entropy, value = policy.evaluate_actions(batch_of(policy, rows, mask), actions)
    (log_prob.sum() + entropy.sum() + value.sum()).backward()
    assert all(torch.isfinite(p.grad).all() for p in policy.parameters() if p.grad is not None)
    # A batch of empty rows alone.
    empty = torch.ones(2, 4, dtype=torch.bool)
    assert torch.all(policy.act(tokens(2, 4), empty)[0] == 0)
    assert torch.isfinite(policy.get_value(batch_of(policy, tokens(2, 4), empty))).all()


# ----------------------------------------------------------------------------- the adapter


def test_the_card_adapter_is_the_identity_at_initialisation():
    policy = make()
    rows, mask = tokens(2, 6), padding(2, 6, [6, 4])
    plain = means(policy, rows, mask)
    with_card = means(policy, rows, mask, card=tweaked_card())
    with_vectors = means(policy, rows, mask, card_vec=torch.rand(2, CARD_DIM))
    assert torch.equal(with_card, plain) and torch.equal(with_vectors, plain)
    cards = [tweaked_card(), ScenarioCard()]
    assert torch.equal(policy.get_value(batch_of(policy, rows, mask, card=cards)),
                       policy.get_value(batch_of(policy, rows, mask)))


def test_a_step_on_the_adapter_alone_changes_outputs_with_a_card():
    policy = make()
    rows, mask = tokens(2, 6), padding(2, 6, [6, 4])
    card = tweaked_card()
    base_before = [p.detach().clone() for p in policy.base_parameters()]
    before = means(policy, rows, mask, card=card)
    optimiser = torch.optim.Adam(policy.adapter_parameters(), lr=1e-2)
    log_prob, _, value = policy.evaluate_actions(batch_of(policy, rows, mask, card=card),
                                                 torch.ones(2, 6, ACT))
    (-log_prob.sum() + value.pow(2).sum()).backward()
    optimiser.step()
    assert not torch.allclose(means(policy, rows, mask, card=card), before)
    assert torch.equal(means(policy, rows, mask), means(policy, rows, mask))
    assert all(torch.equal(p, q) for p, q in zip(policy.base_parameters(), base_before,
                                                 strict=True))


def test_freeze_base_leaves_only_the_adapter_trainable():
    policy = make()
    policy.freeze_base()
    adapter = {id(p) for p in policy.adapter_parameters()}
    trainable = {id(p) for p in policy.parameters() if p.requires_grad}
    assert trainable == adapter
    policy.unfreeze_base()
    assert all(p.requires_grad for p in policy.parameters())


def test_finetune_loss_is_zero_at_the_means_and_falls_when_the_adapter_trains():
    policy = make()
    rows, mask = tokens(4, 8), padding(4, 8, [8, 8, 5, 3])
    own = mask.clone().logical_not_()
    own[:, 4:] = False  # the first four tokens are the side's units
    card_vec = tweaked_card().to_tensor()
    targets = means(policy, rows, mask, own_mask=own, card_vec=card_vec)
    batch = batch_of(policy, rows, mask, own_mask=own, card_vec=card_vec)
    assert float(policy.finetune_loss(batch, targets).detach()) == pytest.approx(0.0, abs=1e-12)

    targets = targets + torch.tensor([0.3, -0.2, 0.1])
    policy.freeze_base()
    optimiser = torch.optim.Adam(policy.adapter_parameters(), lr=3e-2)
    losses = []
    for _ in range(15):
        loss = policy.finetune_loss(batch, targets)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]
    with pytest.raises(ValueError, match="actions"):
        policy.finetune_loss(batch, targets[..., :2])
    with pytest.raises(TypeError, match="batch=.*expected a WFM1Batch"):
        policy.finetune_loss({"tokens": rows}, targets)


# ----------------------------------------------------------------------------- acting


def test_evaluate_actions_matches_the_log_probs_act_drew():
    policy = make()
    rows, mask = tokens(3, 7), padding(3, 7, [7, 5, 1])
    own = ~mask
    own[0, 3:] = False
    with torch.no_grad():
        policy.log_std.fill_(-0.5)
    for mode in (policy.train, policy.eval):
        mode()
        actions, log_probs = policy.act(rows, mask, own_mask=own, card=tweaked_card())
        log_prob, entropy, _ = policy.evaluate_actions(
            batch_of(policy, rows, mask, own_mask=own, card=tweaked_card()), actions)
        torch.testing.assert_close(log_prob.detach(), log_probs, rtol=0, atol=1e-5)
        assert torch.all(log_probs[~own] == 0) and torch.all(actions[~own] == 0)
        assert torch.all(entropy[~own] == 0) and torch.all(entropy[own] > 0)


def test_deterministic_actions_are_the_means_and_noise_is_used_as_given():
    policy = make()
    rows, mask = tokens(2, 5), padding(2, 5, [5, 3])
    with torch.no_grad():
        mean, _ = policy(batch_of(policy, rows, mask))
        policy.log_std.copy_(torch.tensor([-1.0, 0.0, 0.5]))
    mean = mean.masked_fill(mask[..., None], 0.0)
    torch.testing.assert_close(means(policy, rows, mask), mean)
    noise = torch.randn(2, 5, ACT)
    drawn, _ = policy.act(rows, mask, noise=noise)
    expected = (mean + policy.log_std.exp().detach() * noise).masked_fill(mask[..., None], 0.0)
    torch.testing.assert_close(drawn, expected)
    assert torch.equal(policy.act(rows, mask, noise=noise)[0], drawn)
    actions, log_probs, values = policy.act_and_value(batch_of(policy, rows, mask), noise=noise)
    assert torch.equal(actions, drawn)
    assert torch.equal(log_probs, policy.act(rows, mask, noise=noise)[1])
    assert torch.equal(values, policy.get_value(batch_of(policy, rows, mask)))
    with pytest.raises(ValueError, match="noise"):
        policy.act(rows, mask, noise=torch.randn(2, 5, 2))


def test_several_echelons_fuse_in_the_cross_echelon_transformer():
    policy = make()
    battalions, mask = tokens(2, 9), padding(2, 9, [9, 4])
    brigades = tokens(2, 3, seed=5)
    brigade_mask = padding(2, 3, [3, 2])
    given = dict(tokens_per_echelon={ECHELON_BRIGADE: brigades},
                 pad_masks={ECHELON_BRIGADE: brigade_mask})
    actions, log_probs = policy.act(battalions, mask, **given)
    assert actions.shape == (2, 9, ACT) and log_probs.shape == (2, 9)
    value = policy.get_value(batch_of(policy, battalions, mask, **given))
    assert value.shape == (2,)
    assert not torch.allclose(value, policy.get_value(batch_of(policy, battalions, mask)))
    moved = dict(given, tokens_per_echelon={ECHELON_BRIGADE: brigades + 1.0})
    assert not torch.allclose(policy.get_value(batch_of(policy, battalions, mask, **moved)),
                              value)
    log_prob, _, _ = policy.evaluate_actions(batch_of(policy, battalions, mask, **given),
                                             actions)
    torch.testing.assert_close(log_prob.detach(), log_probs, rtol=0, atol=1e-5)
    three = {ECHELON_BRIGADE: brigades, ECHELON_DIVISION: tokens(2, 2, seed=6)}
    assert policy.get_value(batch_of(policy, battalions, mask,
                                     tokens_per_echelon=three)).shape == (2,)
    with pytest.raises(ValueError, match="acting echelon"):
        policy.act(battalions, mask, tokens_per_echelon={0: brigades})
    with pytest.raises(ValueError, match="rows"):
        policy.act(battalions, mask, tokens_per_echelon={ECHELON_BRIGADE: tokens(3, 3)})


@pytest.mark.parametrize("share", [True, False])
def test_per_battle_echelons_match_one_echelon_at_a_time(share):
    policy = make(share_echelon_encoders=share)
    assert hasattr(policy, "encoder") == share
    assert share or len(policy.encoders) == N_ECHELONS
    rows, mask = tokens(4, 6), padding(4, 6, [6, 5, 4, 3])
    echelons = torch.tensor([0, ECHELON_CORPS, 0, ECHELON_BRIGADE])
    mixed = means(policy, rows, mask, echelon=echelons)
    values = policy.get_value(batch_of(policy, rows, mask, echelon=echelons))
    for b, level in enumerate(echelons.tolist()):
        alone = means(policy, rows[b:b + 1], mask[b:b + 1], echelon=level)
        torch.testing.assert_close(mixed[b:b + 1], alone, rtol=0, atol=1e-5)
        torch.testing.assert_close(values[b:b + 1],
                                   policy.get_value(batch_of(policy, rows[b:b + 1],
                                                             mask[b:b + 1], echelon=level)),
                                   rtol=0, atol=1e-5)
    assert not torch.allclose(means(policy, rows, mask, echelon=0),
                              means(policy, rows, mask, echelon=ECHELON_CORPS))


# ----------------------------------------------------------------------------- formations


def test_a_formation_head_adds_the_formation_code_to_every_order():
    policy, plain = make(formation_orders=True), make()
    assert policy.order_width == ACT + 1 and policy.kwargs["formation_orders"] is True
    assert plain.order_width == ACT and "formation_orders" not in plain.kwargs
    rows, mask = tokens(16, 8), padding(16, 8, [8 - b % 4 for b in range(16)])
    own = ~mask
    own[:, 0] = False  # an enemy token: no order
    actions, log_probs = policy.act(rows, mask, own_mask=own)
    codes = actions[..., ACT]
    assert actions.shape == (16, 8, ACT + 1) and log_probs.shape == (16, 8)
    assert torch.equal(codes, codes.round()) and codes.min() >= -1 and codes.max() <= 3
    assert torch.all(actions[~own] == 0) and torch.all(log_probs[~own] == 0)
    # A fresh head keeps the formation most of the time: every change costs drill steps.
    assert (codes[own] == KEEP_FORMATION).float().mean() > 0.8
    log_prob, entropy, _, orders = policy.evaluate_actions(
        batch_of(policy, rows, mask, own_mask=own), actions, return_orders=True)
    mean = orders.gaussian.mean
    torch.testing.assert_close(log_prob.detach(), log_probs, rtol=0, atol=1e-5)
    # The rest of the network starts as without the head, so the difference is the
    # categorical's: its log-probability of the chosen code, and its entropy.
    base_log_prob, base_entropy, _ = plain.evaluate_actions(
        batch_of(plain, rows, mask, own_mask=own), actions[..., :ACT])
    logits = policy.heads(batch_of(policy, rows, mask))[1]
    chosen = torch.log_softmax(logits, -1).gather(-1, (codes + 1).long()[..., None])[..., 0]
    torch.testing.assert_close((log_prob - base_log_prob)[own], chosen[own], rtol=0, atol=1e-5)
    assert torch.all((entropy - base_entropy)[own] > 0)
    # forward and the returned orders' Gaussian give the same means.
    assert mean.shape == (16, 8, ACT)
    torch.testing.assert_close(mean, policy(batch_of(policy, rows, mask))[0], rtol=0, atol=0)
    deterministic = means(policy, rows, mask, own_mask=own)
    assert torch.all(deterministic[..., ACT][own] == KEEP_FORMATION)  # the likeliest choice
    torch.testing.assert_close(deterministic[..., :ACT][own], means(plain, rows, mask)[own])


def test_keyed_noise_decides_the_formation_choice_by_its_probabilities():
    policy = make(formation_orders=True)
    with torch.no_grad():
        policy.formation_head.bias.zero_()  # near-even choices, to see each drawn
    rows = tokens(1, 1).repeat(4000, 1, 1)
    noise = torch.randn(4000, 1, ACT + 1, generator=torch.Generator().manual_seed(2))
    actions, log_probs = policy.act(rows, noise=noise)
    again, _, _ = policy.act_and_value(batch_of(policy, rows), noise=noise)
    assert torch.equal(actions, again)
    probs = torch.softmax(policy.heads(batch_of(policy, rows[:1]))[1][0, 0], -1).detach()
    shares = torch.bincount((actions[:, 0, ACT] + 1).long(), minlength=5) / 4000.0
    torch.testing.assert_close(shares, probs, atol=0.03, rtol=0)
    # The continuous orders are mean + std * noise, as without the head.
    mean = policy(batch_of(policy, rows[:1]))[0][0, 0].detach()
    torch.testing.assert_close(actions[:5, 0, :ACT],
                               mean + policy.log_std.exp().detach() * noise[:5, 0, :ACT])
    with pytest.raises(ValueError, match=r"noise has shape \(4000, 1, 3\).*formation code"):
        policy.act(rows, noise=noise[..., :ACT])


def test_finetune_loss_fits_the_formation_head_to_target_codes():
    policy = make(formation_orders=True)
    rows, mask = tokens(4, 6), padding(4, 6, [6, 6, 4, 2])
    own = ~mask
    targets = means(policy, rows, mask).clone()
    # Three numbers: the means' error alone, zero at the means.
    batch = batch_of(policy, rows, mask, own_mask=own)
    assert float(policy.finetune_loss(batch, targets[..., :ACT]).detach()) == pytest.approx(
        0.0, abs=1e-12)
    # Four: plus the head's cross-entropy against the codes (the padding's ignored).
    targets[..., ACT] = SQUARE
    targets[mask] = 99.0
    logits = policy.heads(batch_of(policy, rows, mask))[1]
    expected = own_formation_error(logits, targets[..., ACT], own)
    cross_entropy = -torch.log_softmax(logits, -1)[..., SQUARE + 1][own].mean()
    torch.testing.assert_close(expected, cross_entropy)
    torch.testing.assert_close(policy.finetune_loss(batch, targets), expected)
    optimiser = torch.optim.Adam(policy.parameters(), lr=3e-2)
    for _ in range(10):
        loss = policy.finetune_loss(batch, targets)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert float(policy.finetune_loss(batch, targets).detach()) < 0.1 * float(expected.detach())
    assert torch.all(means(policy, rows, mask)[..., ACT][own] == SQUARE)
    for code, found in ((1.5, r"\[1.5\]"), (7.0, r"\[7.0\]"), (-2.0, r"\[-2.0\]")):
        targets[0, 0, ACT] = code
        with pytest.raises(ValueError, match=rf"actions\[\.\.\., 3\] holds formation codes "
                                             rf"{found}: expected whole numbers -1 \(keep\)"):
            policy.finetune_loss(batch, targets)
    with pytest.raises(ValueError, match="formation_orders=False"):
        make().finetune_loss(batch, targets.clamp(-1, 3).round())


def test_formation_orders_are_checked_where_they_come_in():
    policy = make(formation_orders=True)
    rows, mask = tokens(2, 4), padding(2, 4, [4, 2])
    with pytest.raises(ValueError, match="formation_orders='yes'"):
        make(formation_orders="yes")
    with pytest.raises(ValueError, match=r"actions has shape \(2, 4, 3\): expected "
                                         r"\(2, 4, 4\).*formation_orders=True"):
        policy.evaluate_actions(batch_of(policy, rows, mask), torch.zeros(2, 4, ACT))
    with pytest.raises(ValueError, match=r"actions has shape \(2, 4, 4\): expected "
                                         r"\(2, 4, 3\).*formation_orders=False"):
        make().evaluate_actions(batch_of(policy, rows, mask), torch.zeros(2, 4, ACT + 1))
    actions = torch.zeros(2, 4, ACT + 1)
    actions[1, 3, ACT] = 9.0  # padding: ignored
    log_prob, _, _ = policy.evaluate_actions(batch_of(policy, rows, mask), actions)
    assert log_prob[1, 3] == 0
    actions[0, 1, ACT] = 4.0  # an own unit: a code no formation has
    with pytest.raises(ValueError, match=r"actions\[\.\.\., 3\] holds formation codes \[4.0\]"):
        policy.evaluate_actions(batch_of(policy, rows, mask), actions)


def test_checkpoints_with_and_without_the_formation_head(tmp_path):
    rows, mask = tokens(2, 5), padding(2, 5, [5, 3])
    # A policy without the head writes the file it always did: no formation_orders key,
    # no head weights, three-number orders.
    plain = make()
    old = plain.save_checkpoint(tmp_path / "old.pt")
    saved = torch.load(old, weights_only=True)
    assert "formation_orders" not in saved["config"]
    assert not any(key.startswith("formation_head") for key in saved["state_dict"])
    loaded = WFM1Policy.load_checkpoint(old)
    assert not loaded.formation_orders and loaded.order_width == ACT
    actions, log_probs = loaded.act(rows, mask, deterministic=True)
    assert actions.shape == (2, 5, ACT)
    assert torch.equal(actions, means(plain.eval(), rows, mask))
    with pytest.raises(ValueError, match="asks for a network of"):  # no head weights
        WFM1Policy.load_checkpoint(old, formation_orders=True)
    # One with the head round-trips with it.
    policy = make(formation_orders=True)
    with torch.no_grad():
        policy.formation_head.bias[SQUARE + 1] = 10.0
    path = policy.save_checkpoint(tmp_path / "head.pt")
    again = WFM1Policy.load_checkpoint(path)
    assert again.kwargs == policy.kwargs and again.kwargs["formation_orders"] is True
    policy.eval()
    assert torch.equal(means(again, rows, mask), means(policy, rows, mask))
    assert torch.all(means(again, rows, mask)[..., ACT][~mask] == SQUARE)
    drawn, drawn_log_probs = again.act(rows, mask)
    torch.testing.assert_close(again.evaluate_actions(batch_of(again, rows, mask), drawn)[0],
                               policy.evaluate_actions(batch_of(policy, rows, mask), drawn)[0])
    with pytest.raises(ValueError, match="do not fit"):
        WFM1Policy.load_checkpoint(path, formation_orders=False)


# ----------------------------------------------------------------------------- files


class Plain:
    """Any Python object: unpickling one could run code, so files holding one are refused."""


def test_checkpoints_round_trip_and_take_overrides(tmp_path):
    policy = make(share_echelon_encoders=False)
    with torch.no_grad():
        policy.card_encoder.gamma.bias.add_(0.5)
    rows, mask = tokens(2, 7), padding(2, 7, [7, 3])
    path = policy.save_checkpoint(tmp_path / "sub" / "wfm1.pt")
    assert path.is_file() and not list(path.parent.glob("*.tmp"))
    loaded = WFM1Policy.load_checkpoint(path)
    assert loaded.kwargs == policy.kwargs and not loaded.training
    policy.eval()
    card = tweaked_card()
    assert torch.equal(means(loaded, rows, mask, card=card), means(policy, rows, mask, card=card))
    assert torch.equal(loaded.get_value(batch_of(loaded, rows, mask, echelon=2)),
                       policy.get_value(batch_of(policy, rows, mask, echelon=2)))
    assert WFM1Policy.load_checkpoint(path, dropout=0.1).kwargs["dropout"] == 0.1
    with pytest.raises(ValueError, match="asks for a network of"):
        WFM1Policy.load_checkpoint(path, action_dim=4)
    with pytest.raises(ValueError, match="do not fit"):
        WFM1Policy.load_checkpoint(path, action_dim=2)
    with pytest.raises(ValueError, match="invalid WFM1Policy arguments"):
        WFM1Policy.load_checkpoint(path, n_layers=3)


def test_load_checkpoint_refuses_pickled_objects_and_missing_or_wrong_keys(tmp_path):
    policy = make()
    state = policy.state_dict()
    pickled = tmp_path / "pickled.pt"
    torch.save({"config": policy.kwargs, "state_dict": state, "extra": Plain()}, pickled)
    with pytest.raises(UntrustedCheckpointError):
        WFM1Policy.load_checkpoint(pickled)
    missing = tmp_path / "missing.pt"
    torch.save({"state_dict": state}, missing)
    with pytest.raises(ValueError, match="config"):
        WFM1Policy.load_checkpoint(missing)
    wrong = tmp_path / "wrong.pt"
    torch.save({"config": [1, 2], "state_dict": state}, wrong)
    with pytest.raises(ValueError, match="config"):
        WFM1Policy.load_checkpoint(wrong)
    not_tensors = tmp_path / "not_tensors.pt"
    torch.save({"config": policy.kwargs, "state_dict": {"log_std": [0.0]}}, not_tensors)
    with pytest.raises(ValueError, match="state_dict"):
        WFM1Policy.load_checkpoint(not_tensors)
    bad_config = tmp_path / "bad_config.pt"
    torch.save({"config": {**policy.kwargs, "n_heads": 5}, "state_dict": state}, bad_config)
    with pytest.raises(ValueError, match="invalid WFM1Policy arguments"):
        WFM1Policy.load_checkpoint(bad_config)
    with pytest.raises(FileNotFoundError):
        WFM1Policy.load_checkpoint(tmp_path / "nowhere.pt")


# ----------------------------------------------------------------------------- the card


def test_scenario_card_layout():
    vector = tweaked_card().to_tensor()
    assert vector.dtype == torch.float32 and vector.shape == (CARD_DIM,)
    expected = [0.8, 0, 1, 0, 0, 0, 0, 1, 0, 12 / 64, 20 / 64, 1.0,
                0.25, 0.125, 0.5, 0.75]
    torch.testing.assert_close(vector, torch.tensor(expected))
    default = ScenarioCard().to_tensor()
    torch.testing.assert_close(default, torch.tensor(
        [0.5, 1, 0, 0, 0, 1, 0, 0, 0, 0.125, 0.125, 0.0, 0, 0, 0, 0.5]))


def test_scenario_card_clamps_codes_and_fractions_changed_after_construction():
    card = ScenarioCard()
    card.echelon_level, card.weather_code, card.terrain_type = 9, -2, 7
    card.cavalry_fraction, card.time_of_day = 1.5, -0.5
    vector = card.to_tensor()
    assert vector[1 + ECHELON_CORPS] == 1 and vector[1:5].sum() == 1
    assert vector[5] == 1 and vector[5:9].sum() == 1  # clear weather
    assert vector[11] == 1.0 and vector[12] == 1.0 and vector[15] == 0.0
    assert vector[5 + WEATHER_SNOW] == 0


@pytest.mark.parametrize("field, value", [
    ("max_units", 0), ("max_units", 2.5), ("cavalry_fraction", 1.2),
    ("artillery_fraction", -0.1), ("supply_pressure", float("nan")), ("time_of_day", 2),
    ("echelon_level", 4), ("weather_code", -1), ("terrain_type", 5), ("n_blue_units", -1),
    ("map_scale", float("inf")), ("echelon_level", 1.0),
])
def test_scenario_card_refuses_invalid_fields(field, value):
    with pytest.raises(ValueError, match=field):
        ScenarioCard(**{field: value})
    assert dataclasses.fields(ScenarioCard)[-1].name == "max_units"


# ----------------------------------------------------------------------------- checks


@pytest.mark.parametrize("changes, name", [
    (dict(d_model=30, n_heads=4), "d_model"), (dict(n_heads=0), "n_heads"),
    (dict(n_echelon_layers=0), "n_echelon_layers"), (dict(action_dim=0), "action_dim"),
    (dict(actor_hidden_sizes=()), "actor_hidden_sizes"),
    (dict(critic_hidden_sizes=(8, -1)), "critic_hidden_sizes"), (dict(dropout=1.0), "dropout"),
    (dict(share_echelon_encoders="yes"), "share_echelon_encoders"),
    (dict(token_dim=3), "token_dim"), (dict(card_hidden_size=0), "card_hidden_size"),
])
def test_invalid_constructor_arguments_are_named(changes, name):
    with pytest.raises(ValueError, match=name):
        make(**changes)


def test_invalid_inputs_are_named():
    policy = make()
    rows, mask = tokens(2, 4), padding(2, 4, [4, 2])
    for echelon in (N_ECHELONS, -1, torch.tensor([0, 4])):
        with pytest.raises(ValueError, match="echelon"):
            policy.act(rows, mask, echelon=echelon)
    with pytest.raises(ValueError, match="echelon"):
        policy.encoder.encode(rows, 7, mask)
    with pytest.raises(ValueError, match="echelon"):
        policy.encoder(rows, torch.tensor([1, 5]), mask)
    with pytest.raises(ValueError, match=f"expected \\(batch >= 1, n_tokens >= 1, "
                                         f"{ENTITY_TOKEN_DIM}\\)"):
        policy.act(tokens(2, 4)[..., :16], mask)
    with pytest.raises(ValueError, match="tokens"):
        WFM1Batch.checked(policy, rows[0], mask)
    with pytest.raises(ValueError, match="pad_mask"):
        policy.act(rows, mask[:, :3])
    with pytest.raises(TypeError, match="pad_mask"):
        policy.act(rows, mask.long())
    with pytest.raises(ValueError, match="own_mask"):
        policy.act(rows, mask, own_mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="actions"):
        policy.evaluate_actions(batch_of(policy, rows, mask), torch.zeros(2, 4, 2))
    with pytest.raises(ValueError, match="non-finite"):
        policy.act(torch.full((2, 4, ENTITY_TOKEN_DIM), float("nan")), mask)
    with pytest.raises(ValueError, match="card"):
        policy.act(rows, mask, card=ScenarioCard(), card_vec=torch.zeros(CARD_DIM))
    with pytest.raises(ValueError, match="card_vec"):
        policy.act(rows, mask, card_vec=torch.zeros(3, CARD_DIM))
    with pytest.raises(ValueError, match="card"):
        policy.act(rows, mask, card=[ScenarioCard()] * 3)
    with pytest.raises(TypeError, match="card"):
        policy.act(rows, mask, card="clear")


def test_a_batch_is_checked_once_and_read_as_it_is():
    policy = make().eval()
    rows, mask = tokens(2, 5), padding(2, 5, [5, 3])
    own = ~mask
    own[0, 4] = False
    card = tweaked_card()
    batch = WFM1Batch.checked(policy, rows.numpy(), mask.numpy().tolist(), own_mask=own,
                              card=card)
    assert batch.tokens.dtype == torch.float32 and batch.pad_mask.dtype == torch.bool
    assert batch.card.shape == (1, CARD_DIM) and batch.others == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.tokens = rows
    # The keyword form of act builds the same batch; a trusted one of the same tensors
    # reads the same.
    expected = policy.act(rows, mask, own_mask=own, card=card, deterministic=True)
    trusted = WFM1Batch.trusted(rows, mask, own, card.to_tensor()[None])
    for given in (batch, trusted):
        for got, want in zip(policy.act(given, deterministic=True), expected, strict=True):
            assert torch.equal(got, want)
    assert torch.equal(WFM1Batch.trusted(rows, mask).own_mask, ~mask)
    noise = torch.randn(2, 5, ACT)
    actions, log_probs, values = policy.act_and_value(batch, noise=noise)
    assert torch.equal(actions, policy.act(batch, noise=noise)[0])
    assert torch.equal(values, policy.get_value(batch))
    torch.testing.assert_close(policy.evaluate_actions(batch, actions)[0].detach(), log_probs,
                               rtol=0, atol=1e-5)


def test_raw_inputs_and_batches_are_not_mixed():
    policy = make()
    rows, mask = tokens(2, 4), padding(2, 4, [4, 2])
    batch = batch_of(policy, rows, mask)
    for call in (lambda: policy.get_value(rows), lambda: policy.act_and_value(rows),
                 lambda: policy.evaluate_actions(rows, torch.zeros(2, 4, ACT)),
                 lambda: policy.heads(rows), lambda: policy(rows),
                 lambda: policy.finetune_loss(rows, torch.zeros(2, 4, ACT))):
        with pytest.raises(TypeError, match="batch=.*expected a WFM1Batch"):
            call()
    with pytest.raises(ValueError, match="pad_mask, own_mask given with a WFM1Batch"):
        policy.act(batch, mask, own_mask=~mask)
    with pytest.raises(ValueError, match="deterministic"):
        policy.act_and_value(batch, deterministic="yes")
    with pytest.raises(TypeError, match="unknown"):
        policy.act(rows, mask, unknown=1)


def test_the_encoder_and_cross_transformer_alone():
    torch.manual_seed(0)
    encoder = EchelonEncoder(d_model=16, n_heads=2, n_layers=1, use_spatial_pe=False,
                             use_echelon_embedding=False)
    assert not hasattr(encoder, "echelon_embedding") and not hasattr(encoder, "frequencies")
    assert torch.equal(encoder.out_proj.weight, torch.eye(16))
    pooled = encoder(tokens(3, 5), torch.tensor([0, 1, 3]))
    assert pooled.shape == (3, 16)
    cross = CrossEchelonTransformer(d_model=16, n_heads=2, n_layers=1)
    assert cross(torch.randn(3, 2, 16)).shape == (3, 16)
    with pytest.raises(ValueError, match="at most"):
        cross(torch.randn(3, 5, 16))
    with pytest.raises(ValueError, match="d_model"):
        EchelonEncoder(d_model=10, n_heads=4)


# --- brigade and division tokens ------------------------------------------------------------


def hand_view():
    """One battle of six tokens: three own battalions (units 0, 1, 3; unit 2 is out of the
    fight), two believed enemies, one padding position."""
    import numpy as np

    from envs.battles.entity_tokens import EntityView

    tokens = np.zeros((1, 6, ENTITY_TOKEN_DIM), np.float32)

    def put(i, arm, x, y, heading, strength, morale, formation, own):
        tokens[0, i, TOKEN["arm_infantry"] + arm] = 1.0
        tokens[0, i, TOKEN["x"]], tokens[0, i, TOKEN["y"]] = x, y
        tokens[0, i, TOKEN["heading_cos"]] = np.cos(heading)
        tokens[0, i, TOKEN["heading_sin"]] = np.sin(heading)
        tokens[0, i, TOKEN["strength"]], tokens[0, i, TOKEN["morale"]] = strength, morale
        if formation is not None:
            tokens[0, i, TOKEN["formation_line"] + formation] = 1.0
        tokens[0, i, TOKEN["team_own" if own else "team_enemy"]] = 1.0

    put(0, 0, 0.1, 0.2, 0.0, 1.0, 1.0, 0, True)
    put(1, 1, 0.3, 0.4, np.pi / 2, 0.5, 0.4, 1, True)
    put(2, 0, 0.5, 0.9, 0.0, 0.8, 0.6, 0, True)  # unit 3, the second brigade's
    put(3, 2, 0.7, 0.5, np.pi, 1.0, 0.5, None, False)  # formation unseen
    put(4, 0, 0.9, 0.7, np.pi, 0.6, 1.0, 0, False)
    pad = np.array([[False] * 5 + [True]])
    own = np.array([[True] * 3 + [False] * 3])
    unit = np.array([[0, 1, 3, 5, 4, -1]])
    return EntityView(tokens, pad, own, unit)


def test_brigade_tokens_group_units_by_the_order_of_battle():
    import numpy as np

    from envs.battles.echelon_tokens import echelon_tokens

    out = echelon_tokens(hand_view(), brigade_size=2)
    # Six tokens: three positions a side; own brigades {0, 1} and {3 (2 out)}, enemy groups
    # of two in token order.
    assert out.brigade.shape == (1, 6, ENTITY_TOKEN_DIM) and out.brigade_size == 2
    assert out.brigade_pad.tolist() == [[False, False, True, False, True, True]]
    first, lone, enemy = out.brigade[0, 0], out.brigade[0, 1], out.brigade[0, 3]
    assert first[TOKEN["x"]] == pytest.approx(0.2) and first[TOKEN["y"]] == pytest.approx(0.3)
    assert first[TOKEN["arm_infantry"]] == first[TOKEN["arm_cavalry"]] == pytest.approx(0.5)
    assert first[TOKEN["formation_line"]] == first[TOKEN["formation_column"]] == 0.5
    assert first[TOKEN["strength"]] == pytest.approx(0.75)  # the plain mean
    assert first[TOKEN["morale"]] == pytest.approx((1.0 + 0.5 * 0.4) / 1.5)  # by strength
    # The mean of east and north headings, normalised: north-east.
    assert first[TOKEN["heading_cos"]] == pytest.approx(np.sqrt(0.5), abs=1e-6)
    assert first[TOKEN["heading_sin"]] == pytest.approx(np.sqrt(0.5), abs=1e-6)
    assert first[TOKEN["team_own"]] == 1 and first[TOKEN["team_enemy"]] == 0
    # The brigade of units 2 and 3, unit 2 out of the fight: unit 3 alone.
    np.testing.assert_allclose(lone, hand_view().tokens[0, 2], atol=1e-6)
    assert enemy[TOKEN["x"]] == pytest.approx(0.8) and enemy[TOKEN["team_enemy"]] == 1
    assert enemy[TOKEN["formation_line"]] == 0.5 and enemy[TOKEN["formation_column"]] == 0
    assert enemy[TOKEN["arm_artillery"]] == enemy[TOKEN["arm_infantry"]] == 0.5
    assert (out.brigade[out.brigade_pad] == 0).all()
    # The divisions: every own battalion, every believed enemy.
    assert out.division_pad.tolist() == [[False, False]]
    assert out.division[0, 0, TOKEN["x"]] == pytest.approx(0.3)
    assert out.division[0, 0, TOKEN["arm_infantry"]] == pytest.approx(2 / 3)
    assert out.division[0, 1, TOKEN["y"]] == pytest.approx(0.6)
    # Brigades of four: one own group, one enemy group; Red counts from its first unit.
    four = echelon_tokens(hand_view(), 4)
    assert four.brigade_pad.tolist() == [[False, True, False, True]]
    np.testing.assert_allclose(four.brigade[0, 0], out.division[0, 0], atol=1e-6)
    shifted = dataclasses.replace(hand_view(), unit=hand_view().unit + 10)
    np.testing.assert_array_equal(echelon_tokens(shifted, 2, first_unit=10).brigade,
                                  out.brigade)
    with pytest.raises(ValueError, match="first_unit"):
        echelon_tokens(shifted, 2)
    with pytest.raises(ValueError, match="brigade_size"):
        echelon_tokens(hand_view(), 0)
    with pytest.raises(TypeError, match="EntityView"):
        echelon_tokens(None, 2)
    for first in (-1, 1.7, np.array([10, 10]), True):  # below 0, fractional, rows, a flag
        with pytest.raises(ValueError, match=r"first_unit=.*whole number"):
            echelon_tokens(shifted, 2, first_unit=first)
    narrow = dataclasses.replace(hand_view(), tokens=hand_view().tokens[..., :16])
    with pytest.raises(ValueError, match="16 features"):
        echelon_tokens(narrow, 2)


def test_brigade_tokens_of_a_real_battle():
    import numpy as np

    from envs.battles.echelon_tokens import echelon_tokens
    from envs.battles.entity_tokens import entity_tokens
    from envs.battles.multi_battalion_batch import BLUE, RED, MultiBattalionBatch
    from envs.sim.config import BattleConfig

    battles = MultiBattalionBatch(
        3, 5, 3, config=BattleConfig(), terrain=None, randomize_terrain=True,
        visibility_radius=400.0, reward_weights=None,
        order_of_battle={"blue": ["infantry", "cavalry", "artillery", "infantry", "infantry"],
                         "red": ["infantry", "cavalry", "infantry"]})
    battles.reset(np.arange(3), [0, 1, 2], np.zeros(3, np.int64))
    for side, first, n_own in ((BLUE, 0, 5), (RED, 5, 3)):
        view = entity_tokens(battles, side)
        out = echelon_tokens(view, 2, first_unit=first)
        assert out.brigade.shape == (3, 8, ENTITY_TOKEN_DIM)
        own_groups = -(-n_own // 2)
        assert not out.brigade_pad[:, :own_groups].any()  # every battalion in the fight
        assert out.brigade_pad[:, own_groups:4].all()
        assert not out.division_pad.any()
        # Own brigades of two in unit order: the first is units first, first + 1.
        members = view.tokens[:, :2]
        np.testing.assert_allclose(out.brigade[:, 0, TOKEN["x"]],
                                   members[..., TOKEN["x"]].mean(axis=1), atol=1e-6)
        np.testing.assert_allclose(out.brigade[:, :, :3].sum(-1), ~out.brigade_pad, atol=1e-6)
        assert (out.brigade[:, :4, TOKEN["team_own"]] == ~out.brigade_pad[:, :4]).all()
        assert (out.brigade[:, 4:, TOKEN["team_enemy"]] == ~out.brigade_pad[:, 4:]).all()
        headings = np.hypot(out.brigade[..., TOKEN["heading_cos"]],
                            out.brigade[..., TOKEN["heading_sin"]])
        np.testing.assert_allclose(headings[~out.brigade_pad], 1.0, atol=1e-5)


def test_a_policy_with_echelon_tokens_reads_them():
    import numpy as np

    from envs.battles.echelon_tokens import echelon_tokens

    torch.manual_seed(0)
    view = hand_view()
    plain = WFM1Policy(**SMALL)
    torch.manual_seed(0)
    policy = WFM1Policy(**SMALL, echelon_tokens=True, brigade_size=2)
    # The setting adds no parameter: the same weights, and off the same orders as before.
    assert plain.state_dict().keys() == policy.state_dict().keys()
    assert "echelon_tokens" not in plain.kwargs and "brigade_size" not in plain.kwargs
    assert policy.kwargs["echelon_tokens"] is True and policy.kwargs["brigade_size"] == 2
    assert plain.echelon_context(view) is None and plain.echelon_inputs(None) == {}
    torch.manual_seed(0)
    off = WFM1Policy(**SMALL, echelon_tokens=False, brigade_size=7)  # brigade_size unused
    assert off.kwargs == plain.kwargs
    for name, value in plain.state_dict().items():  # built as before, draw for draw
        assert torch.equal(value, off.state_dict()[name])
    with torch.no_grad():
        for parameter in policy.parameters():  # trained-looking weights
            parameter.add_(0.3 * torch.randn_like(parameter))
    plain.load_state_dict(policy.state_dict())
    tokens, pad, own = (torch.from_numpy(a) for a in (view.tokens, view.pad_mask,
                                                       view.own_mask))

    def orders(echelons):
        return policy.act(tokens, pad, own_mask=own, deterministic=True,
                          **policy.echelon_inputs(echelons))[0]

    context = policy.echelon_context(view)
    np.testing.assert_array_equal(context.brigade, echelon_tokens(view, 2).brigade)
    moved = dataclasses.replace(context, brigade=context.brigade.copy())
    moved.brigade[0, 0, TOKEN["x"]] += 0.3  # the first own brigade elsewhere
    assert not torch.allclose(orders(context), orders(moved))
    assert not torch.allclose(orders(context), plain.act(tokens, pad, own_mask=own,
                                                         deterministic=True)[0])
    inputs = policy.echelon_inputs(context)
    assert set(inputs["tokens_per_echelon"]) == {ECHELON_BRIGADE, ECHELON_DIVISION}
    with pytest.raises(ValueError, match="echelon_tokens=True"):
        policy.act(tokens, pad, own_mask=own)
    with pytest.raises(ValueError, match="echelon_tokens=True"):
        policy.echelon_inputs(None)
    with pytest.raises(ValueError, match="brigade_size=3"):
        policy.echelon_inputs(echelon_tokens(view, 3))
    with pytest.raises(ValueError, match="brigade_size"):
        WFM1Policy(**SMALL, echelon_tokens=True, brigade_size=0)
    # A checked batch holds them, and a trusted one built from the context reads the same.
    checked = WFM1Batch.checked(policy, tokens, pad, own_mask=own, **inputs)
    trusted = WFM1Batch.trusted(tokens, pad, own, echelons=context)
    assert torch.equal(policy.act(checked, deterministic=True)[0], orders(context))
    assert torch.equal(policy.act(trusted, deterministic=True)[0], orders(context))
    assert float(policy.finetune_loss(checked, torch.zeros(1, 6, ACT)).detach()) > 0


def test_checkpoints_keep_the_echelon_token_setting(tmp_path):
    policy = WFM1Policy(**SMALL, echelon_tokens=True, brigade_size=3)
    loaded = WFM1Policy.load_checkpoint(policy.save_checkpoint(tmp_path / "p.pt"))
    assert loaded.echelon_tokens and loaded.brigade_size == 3
    assert loaded.kwargs == policy.kwargs
