"""MAPPO networks: decentralised Gaussian actors and one centralised critic.

Each battalion acts from its own local observation through an actor (decentralised
execution), shared by all agents of a team (``share_parameters=True``) or one per agent.
One critic, shared by the team, values each battalion's situation from its *critic
state*: its own observation followed by its side's global state
(:func:`envs.battles.multi_observation.critic_states`), so there is one value per
battalion (centralised training). The networks line up layer for layer with the v1 SB3
policy of :mod:`models.battalion_policy`, so a trained v1 commander can seed a MAPPO team
(:func:`models.v1_transfer.load_v1_weights_into_mappo`). Actions are an unsquashed
diagonal Gaussian, as in SB3 PPO; with ``formation_orders`` the actors also choose each
battalion's formation (:class:`Orders`, :data:`FORMATION_CHOICES`, re-exported from
:mod:`models.formation_orders`). Policies are saved and rebuilt by
:mod:`models.mappo_files`, tensors and plain values only. ``docs/mappo.md`` ("How it
works") describes the networks.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Normal

from envs.sim.validation import check_int, check_number, check_real_array
from models.battalion_policy import ACTIVATIONS, FIRE_ACTION
from models.formation_orders import FORMATION_CHOICES, Orders, make_formation_head
from models.limits import check_dimension, check_hidden_sizes
from models.standardize import Standardize
from models.weights import RebuildablePolicy

__all__ = ["FORMATION_CHOICES", "MAPPOActor", "MAPPOCritic", "MAPPOPolicy", "Orders"]


class Tanh(nn.Module):
    """The hyperbolic tangent, computed as ``2 * sigmoid(2x) - 1`` when no gradient is
    needed.

    Same function (to 2e-7); on this project's CPU build ``torch.tanh`` takes 0.86 ms
    for a 2048 x 128 batch and the sigmoid form 0.40 ms, which matters in rollouts,
    where every step runs the actor and the critic on every battalion. With
    gradients ``torch.tanh`` is kept: its backward pass is the cheaper one. (The v1
    SB3 policy keeps ``nn.Tanh``, so its documented runs reproduce exactly.)
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():
            return torch.tanh(x)
        return torch.sigmoid(x * 2) * 2 - 1


_ACTIVATION_MODULES: dict[str, type[nn.Module]] = {"tanh": Tanh, "relu": nn.ReLU}

DEFAULT_HIDDEN = (128, 128)
POLICY_FILE_KEYS = ("kwargs", "state_dict")
"""Keys every file written by :func:`models.mappo_files.save_policy` holds."""

# SB3's orthogonal initialisation gains, so a fresh MAPPO network starts like a
# fresh v1 one: small action means, unit-scale values.
_HIDDEN_GAIN = math.sqrt(2.0)
_ACTION_GAIN = 0.01
_VALUE_GAIN = 1.0


def _check_activation(value: Any) -> str:
    if not isinstance(value, str) or value not in ACTIVATIONS:
        raise ValueError(f"activation={value!r} is invalid: expected one of {sorted(ACTIVATIONS)}")
    return value


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}={value!r} is invalid: expected True or False")
    return bool(value)


def _build_trunk(in_dim: int, hidden_sizes: tuple[int, ...], activation: str,
                 layer_norm: bool) -> nn.Sequential:
    """[Linear, (LayerNorm), activation] per hidden size, orthogonally initialised."""
    layers: list[nn.Module] = []
    for size in hidden_sizes:
        linear = nn.Linear(in_dim, size)
        _orthogonal_(linear, _HIDDEN_GAIN)
        layers.append(linear)
        if layer_norm:
            layers.append(nn.LayerNorm(size))
        layers.append(_ACTIVATION_MODULES[activation]())
        in_dim = size
    return nn.Sequential(*layers)


def _orthogonal_(linear: nn.Linear, gain: float) -> None:
    nn.init.orthogonal_(linear.weight, gain=gain)
    nn.init.zeros_(linear.bias)


ROW_BLOCK = 32
"""Without gradients, networks run on batches padded with zero rows to a multiple of
this. CPU matrix products round a row differently depending on the batch size (with
MKL, batches of 1-7 or 31 rows go through other kernels than batches of 32), and
element-wise kernels finish an array's last partial vector with scalar code; on
whole blocks of 32 rows neither happens, so a row's output is the same in any batch:
a battle's orders do not depend on the battles beside it, nor on how a rollout is
split across workers (with one torch thread, the training default)."""


def _row_invariant(layers: Any, x: torch.Tensor) -> torch.Tensor:
    """``layers(x)``, computed in whole blocks of :data:`ROW_BLOCK` rows when no
    gradient is needed (training keeps the plain call: its batches are the same in a
    distributed run)."""
    if torch.is_grad_enabled():
        return layers(x)
    n = x.shape[0]
    pad = -n % ROW_BLOCK
    if pad:
        x = torch.cat((x, x.new_zeros(pad, x.shape[1])))
    return layers(x)[:n]


def _check_last_dim(name: str, tensor: torch.Tensor, expected: int) -> None:
    if tensor.ndim not in (1, 2) or tensor.shape[-1] != expected:
        raise ValueError(f"{name} has shape {tuple(tensor.shape)}: expected ({expected},) "
                         f"or (batch, {expected})")


class _Trunk(nn.Module):
    """What the actor and the critic share: the input standardisation and the hidden
    layers their heads read.

    Attributes:
        standardize: the input standardisation, or None.
        trunk: the hidden layers (``nn.Sequential``).
    """

    def _make_trunk(self, in_dim: int, hidden_sizes: Sequence[int], activation: str,
                    layer_norm: bool, normalize_observations: bool) -> int:
        """Check the arguments and build :attr:`standardize` and :attr:`trunk`.

        Args:
            in_dim: size of the input (checked already).
            hidden_sizes: hidden layer widths.
            activation: ``"tanh"`` or ``"relu"``.
            layer_norm: put a LayerNorm after each hidden Linear layer.
            normalize_observations: standardise the input by fixed statistics.

        Returns:
            The width of the last hidden layer.
        """
        self.standardize = Standardize(in_dim) if _check_bool(
            "normalize_observations", normalize_observations) else None
        hidden = check_hidden_sizes("hidden_sizes", hidden_sizes)
        activation = _check_activation(activation)
        layer_norm = _check_bool("layer_norm", layer_norm)
        self.trunk = _build_trunk(in_dim, hidden, activation, layer_norm)
        return hidden[-1]

    def _hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The last hidden layer's output for inputs ``x`` (B, in_dim), standardised first."""
        if self.standardize is not None:
            x = self.standardize(x)
        return self.trunk(x)


class MAPPOActor(_Trunk):
    """Gaussian actor: local observation -> mean action, with a state-independent std.

    Args:
        obs_dim: size of an agent's local observation (>= 1).
        action_dim: size of its action (>= 1).
        hidden_sizes: hidden layer widths (1 to :data:`models.limits.MAX_LAYERS` of them, each 1
            to :data:`models.limits.MAX_WIDTH`).
        activation: ``"tanh"`` or ``"relu"``.
        layer_norm: put a LayerNorm after each hidden Linear layer.
        log_std_init: initial log standard deviation of every action dimension.
        normalize_observations: standardise the observation by fixed statistics
            (:class:`~models.standardize.Standardize`, the identity until fitted) before
            the trunk.
        formation_orders: add a formation head: logits over :data:`FORMATION_CHOICES`
            from the trunk (:meth:`orders`).

    Raises:
        ValueError, TypeError: for an invalid argument (the message names it), such as
            an architecture field past its bound in :mod:`models.limits`.

    Attributes:
        standardize, trunk: as for every trunk (:class:`_Trunk`).
        action_mean: the linear head giving the Gaussian mean.
        log_std: the learned log standard deviation, shape ``(action_dim,)``.
        formation_head: the linear head giving the formation logits, or None.
    """

    def __init__(self, obs_dim: int, action_dim: int,
                 hidden_sizes: Sequence[int] = DEFAULT_HIDDEN, activation: str = "tanh",
                 layer_norm: bool = False, log_std_init: float = 0.0,
                 normalize_observations: bool = False, formation_orders: bool = False) -> None:
        super().__init__()
        self.obs_dim = check_dimension("obs_dim", obs_dim)
        self.action_dim = check_dimension("action_dim", action_dim)
        width = self._make_trunk(self.obs_dim, hidden_sizes, activation, layer_norm,
                                  normalize_observations)
        log_std_init = check_number("log_std_init", log_std_init)
        self.action_mean = nn.Linear(width, self.action_dim)
        _orthogonal_(self.action_mean, _ACTION_GAIN)
        self.log_std = nn.Parameter(torch.full((self.action_dim,), log_std_init))
        self.formation_head = None
        if _check_bool("formation_orders", formation_orders):
            self.formation_head = make_formation_head(width)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The Gaussian's mean and std for ``obs`` of shape ``(B, obs_dim)``; both ``(B, A)``."""
        _check_last_dim("obs", obs, self.obs_dim)
        mean = _row_invariant(self.mean_action, obs)
        return mean, self.log_std.exp().expand_as(mean)

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        """The Gaussian's mean for ``obs`` (B, obs_dim): standardisation, trunk and head."""
        return self.action_mean(self._hidden(obs))

    def distribution(self, obs: torch.Tensor) -> Normal:
        """The action distribution (a diagonal Normal, batch shape ``(B, A)``) for ``obs``."""
        mean, std = self(obs)
        return Normal(mean, std)

    get_distribution = distribution
    """Alias of :meth:`distribution` (the name the reference design uses)."""

    def evaluate_actions(self, obs: torch.Tensor,
                         actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probability and entropy of ``actions`` under the policy, summed over action dims.

        Returns:
            ``(log_prob, entropy)``, each of shape ``(B,)``.
        """
        dist = self.distribution(obs)
        return dist.log_prob(actions).sum(-1), dist.entropy().sum(-1)

    def heads(self, obs: torch.Tensor) -> torch.Tensor:
        """(B, action_dim + FORMATION_CHOICES) for ``obs`` (B, obs_dim): the Gaussian's
        mean, then the formation logits (the trunk run once).

        Raises:
            ValueError: if the actor has no formation head.
        """
        if self.formation_head is None:
            raise ValueError("heads needs an actor built with formation_orders=True")
        _check_last_dim("obs", obs, self.obs_dim)
        return _row_invariant(self._heads, obs)

    def _heads(self, obs: torch.Tensor) -> torch.Tensor:
        hidden = self._hidden(obs)
        return torch.cat((self.action_mean(hidden), self.formation_head(hidden)), 1)

    def orders(self, obs: torch.Tensor) -> Orders:
        """The distribution of the whole order (:class:`Orders`): the Gaussian, and the
        formation choice when the actor has a formation head."""
        if self.formation_head is None:
            return Orders(self.distribution(obs))
        heads = self.heads(obs)
        mean = heads[:, :self.action_dim]
        return Orders(Normal(mean, self.log_std.exp().expand_as(mean)),
                      Categorical(logits=heads[:, self.action_dim:]))


class MAPPOCritic(_Trunk):
    """Centralised critic: one agent's critic state -> the value of its situation.

    The critic state is fog-free and may cover the whole battle; in the team battles
    it is the battalion's observation followed by its side's global state
    (:func:`envs.battles.multi_observation.critic_states`), so agents of one battle get
    values of their own.

    Args:
        state_dim: size of the critic state (>= 1); ``CRITIC_STATE_DIM`` in the team
            battles.
        hidden_sizes: hidden layer widths (1 to :data:`models.limits.MAX_LAYERS` of them, each 1
            to :data:`models.limits.MAX_WIDTH`).
        activation: ``"tanh"`` or ``"relu"``.
        layer_norm: put a LayerNorm after each hidden Linear layer.
        normalize_observations: standardise the critic state by fixed statistics before
            the trunk, as the actor does its observation.

    Raises:
        ValueError, TypeError: for an invalid argument (the message names it), such as
            an architecture field past its bound in :mod:`models.limits`.

    Attributes:
        standardize, trunk: as for every trunk (:class:`_Trunk`).
        value_head: the linear output layer.
    """

    def __init__(self, state_dim: int, hidden_sizes: Sequence[int] = DEFAULT_HIDDEN,
                 activation: str = "tanh", layer_norm: bool = False,
                 normalize_observations: bool = False) -> None:
        super().__init__()
        self.state_dim = check_dimension("state_dim", state_dim)
        width = self._make_trunk(self.state_dim, hidden_sizes, activation, layer_norm,
                                  normalize_observations)
        self.value_head = nn.Linear(width, 1)
        _orthogonal_(self.value_head, _VALUE_GAIN)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        """Values of critic states ``state`` (shape ``(B, state_dim)``), shape ``(B,)``."""
        _check_last_dim("state", state, self.state_dim)
        return _row_invariant(self._value, state).squeeze(-1)

    def _value(self, state: torch.Tensor) -> torch.Tensor:
        return self.value_head(self._hidden(state))


class MAPPOPolicy(RebuildablePolicy):
    """A MAPPO team: Gaussian actor(s) on local observations, one centralised critic on
    each agent's critic state (see :class:`MAPPOCritic`).

    Shapes: every method takes batches (``(B, obs_dim)``, ``(B, state_dim)``,
    ``(B, action_dim)``); a single 1-D observation or state is treated as a
    batch of one, and results keep that batch dimension (``(1, A)``, ``(1,)``).
    Inputs may be tensors or array-likes; they are moved to the policy's device
    as float32.

    ``agent_idx`` selects the actor: an int for the whole batch, or a 1-D
    integer tensor/array of length ``B`` giving each sample's agent (as in a
    flattened rollout buffer). Indices must lie in ``[0, n_agents)`` in both
    modes; with shared parameters every index uses the one actor.

    Args:
        obs_dim: size of an agent's local observation.
        action_dim: size of an agent's action.
        state_dim: size of the critic state the critic reads (``CRITIC_STATE_DIM`` in
            the team battles: an agent's observation, then its side's global state).
        n_agents: agents of the team (>= 1).
        share_parameters: one actor for all agents (True) or one each.
        actor_hidden_sizes: hidden widths of each actor (bounded like ``hidden_sizes``).
        critic_hidden_sizes: hidden widths of the critic.
        activation: ``"tanh"`` or ``"relu"`` (actor and critic).
        layer_norm: LayerNorm after each hidden Linear layer (breaks exact v1
            weight transfer, which assumes plain MLPs).
        log_std_init: initial log std of every action dimension.
        initial_fire_bias: starting mean of the fire order (action index
            ``FIRE_ACTION`` = 2), as in the v1 policy; must be 0 when the
            action has no fire order (``action_dim <= 2``).
        normalize_observations: the actors standardise their observations and the
            critic its states by fixed statistics, the identity until
            :meth:`fit_observation_statistics`; saved with the weights.
        formation_orders: the actors also order formations (a categorical head over
            :data:`FORMATION_CHOICES`): an order is then ``action_dim + 1`` numbers, the
            last the formation code (:class:`Orders`; :attr:`order_width`).

    Raises:
        ValueError, TypeError: for an invalid argument (the message names it), such as
            an architecture field past its bound in :mod:`models.limits`.
    """

    def __init__(self, obs_dim: int, action_dim: int, state_dim: int, n_agents: int = 1,
                 share_parameters: bool = True,
                 actor_hidden_sizes: Sequence[int] = DEFAULT_HIDDEN,
                 critic_hidden_sizes: Sequence[int] = DEFAULT_HIDDEN,
                 activation: str = "tanh", layer_norm: bool = False,
                 log_std_init: float = 0.0, initial_fire_bias: float = 0.0,
                 normalize_observations: bool = False, formation_orders: bool = False) -> None:
        super().__init__()
        self.obs_dim = check_dimension("obs_dim", obs_dim)
        self.action_dim = check_dimension("action_dim", action_dim)
        self.state_dim = check_dimension("state_dim", state_dim)
        self.n_agents = check_dimension("n_agents", n_agents)
        self.share_parameters = _check_bool("share_parameters", share_parameters)
        actor_hidden = check_hidden_sizes("actor_hidden_sizes", actor_hidden_sizes)
        critic_hidden = check_hidden_sizes("critic_hidden_sizes", critic_hidden_sizes)
        self.activation = _check_activation(activation)
        self.layer_norm = _check_bool("layer_norm", layer_norm)
        log_std_init = check_number("log_std_init", log_std_init)
        initial_fire_bias = check_number("initial_fire_bias", initial_fire_bias)
        self.normalize_observations = _check_bool("normalize_observations",
                                                  normalize_observations)
        if initial_fire_bias != 0.0 and self.action_dim <= FIRE_ACTION:
            raise ValueError(f"initial_fire_bias={initial_fire_bias!r} is invalid for "
                             f"action_dim={self.action_dim}: the fire order is action index "
                             f"{FIRE_ACTION}, so expected 0.0 unless action_dim > {FIRE_ACTION}")
        self._kwargs: dict[str, Any] = dict(
            obs_dim=self.obs_dim, action_dim=self.action_dim, state_dim=self.state_dim,
            n_agents=self.n_agents, share_parameters=self.share_parameters,
            actor_hidden_sizes=list(actor_hidden), critic_hidden_sizes=list(critic_hidden),
            activation=self.activation, layer_norm=self.layer_norm, log_std_init=log_std_init,
            initial_fire_bias=initial_fire_bias)
        self.formation_orders = _check_bool("formation_orders", formation_orders)
        # Both absent from the files of earlier policies, which keep their bytes.
        if self.normalize_observations:
            self._kwargs["normalize_observations"] = True
        if self.formation_orders:
            self._kwargs["formation_orders"] = True
        self.order_width = self.action_dim + self.formation_orders
        """Numbers in one order: ``action_dim``, plus the formation code with a formation
        head."""

        def make_actor() -> MAPPOActor:
            actor = MAPPOActor(self.obs_dim, self.action_dim, actor_hidden, self.activation,
                               self.layer_norm, log_std_init, self.normalize_observations,
                               self.formation_orders)
            if self.action_dim > FIRE_ACTION:
                with torch.no_grad():
                    actor.action_mean.bias[FIRE_ACTION] = initial_fire_bias
            return actor

        if self.share_parameters:
            self.actor = make_actor()
        else:
            self.actors = nn.ModuleList(make_actor() for _ in range(self.n_agents))
        self.critic = MAPPOCritic(self.state_dim, critic_hidden, self.activation,
                                  self.layer_norm, self.normalize_observations)

    # ----------------------------------------------------------------- structure

    def fit_observation_statistics(self, observations: torch.Tensor,
                                   states: torch.Tensor) -> None:
        """Fit every actor's standardisation to ``observations`` (N, obs_dim) and the
        critic's to ``states`` (N, state_dim).

        Raises:
            ValueError: if the policy was built without ``normalize_observations``.
        """
        if not self.normalize_observations:
            raise ValueError("fit_observation_statistics needs a policy built with "
                             "normalize_observations=True")
        for actor in self.all_actors():
            actor.standardize.fit(observations)
        self.critic.standardize.fit(states)

    def all_actors(self) -> list[MAPPOActor]:
        """The distinct actors: one when parameters are shared, else ``n_agents``."""
        return [self.actor] if self.share_parameters else list(self.actors)

    def get_actor(self, idx: int = 0) -> MAPPOActor:
        """The actor of agent ``idx`` (the shared actor for every index when sharing).

        Raises:
            ValueError: if ``idx`` is not an integer in ``[0, n_agents)``.
        """
        idx = check_int("agent_idx", idx, minimum=0, maximum=self.n_agents - 1)
        return self.actor if self.share_parameters else self.actors[idx]

    def parameter_count(self) -> dict[str, int]:
        """Trainable parameters: ``{"actor": all actors, "critic": ..., "total": ...}``."""
        actor = sum(p.numel() for a in self.all_actors() for p in a.parameters())
        critic = sum(p.numel() for p in self.critic.parameters())
        return {"actor": actor, "critic": critic, "total": actor + critic}

    # ----------------------------------------------------------------- acting

    def _batch(self, name: str, value: Any, dim: int) -> torch.Tensor:
        """``value`` as a finite float32 ``(B, dim)`` tensor on the policy's device."""
        if isinstance(value, torch.Tensor):
            tensor = value.to(device=self.device, dtype=torch.float32)
        else:
            # Real numbers only (strings, booleans, complex numbers are refused); the
            # finiteness check below is torch's, one reduction.
            array = check_real_array(name, value, finite=False)
            tensor = torch.as_tensor(array, device=self.device)
        _check_last_dim(name, tensor, dim)
        if tensor.ndim == 1:
            tensor = tensor.unsqueeze(0)
        # The sum is finite for finite inputs except on overflow, so the full check
        # runs only then (one reduction instead of a boolean copy per call).
        if not bool(torch.isfinite(tensor.sum())) and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{name} contains non-finite values (NaN or inf): expected "
                             "finite numbers")
        return tensor

    def _agent_indices(self, agent_idx: Any, batch: int) -> int | torch.Tensor:
        """An int, or a ``(batch,)`` long tensor of agent indices, checked against n_agents."""
        if isinstance(agent_idx, (torch.Tensor, np.ndarray)) and agent_idx.ndim == 0:
            agent_idx = agent_idx.item()
        if isinstance(agent_idx, numbers.Integral) and not isinstance(agent_idx, bool):
            return check_int("agent_idx", agent_idx, minimum=0, maximum=self.n_agents - 1)
        if not isinstance(agent_idx, (torch.Tensor, np.ndarray)):
            raise TypeError(f"agent_idx={agent_idx!r} is invalid: expected an int or a 1-D "
                            "integer tensor of per-sample agent indices")
        if isinstance(agent_idx, np.ndarray) and agent_idx.dtype.kind not in "iu":
            raise TypeError(f"agent_idx has dtype {agent_idx.dtype}: expected integer indices")
        indices = torch.as_tensor(agent_idx)
        if indices.is_floating_point() or indices.is_complex() or indices.dtype == torch.bool:
            raise TypeError(f"agent_idx has dtype {indices.dtype}: expected integer indices")
        if indices.shape != (batch,):
            raise ValueError(f"agent_idx has shape {tuple(indices.shape)}: expected ({batch},), "
                             "one agent index per sample")
        if batch and (int(indices.min()) < 0 or int(indices.max()) >= self.n_agents):
            raise ValueError(f"agent_idx contains {int(indices.min())}..{int(indices.max())}: "
                             f"expected indices in [0, {self.n_agents - 1}]")
        return indices.to(device=self.device, dtype=torch.long)

    def _distribution(self, obs: torch.Tensor, agents: int | torch.Tensor) -> Orders:
        """The order distribution of each sample under its own agent's actor."""
        if isinstance(agents, int) or self.share_parameters:
            actor = self.actor if self.share_parameters else self.actors[agents]
            return actor.orders(obs)
        # Run each agent's actor on its own samples only; index_put keeps autograd.
        heads = self.action_dim + (FORMATION_CHOICES if self.formation_orders else 0)
        out = obs.new_zeros(obs.shape[0], heads)
        for k in torch.unique(agents).tolist():
            mask = agents == k
            actor = self.actors[k]
            part = actor.heads(obs[mask]) if self.formation_orders else actor(obs[mask])[0]
            out = out.index_put((mask,), part)
        log_std = torch.stack([actor.log_std for actor in self.actors])[agents]
        gaussian = Normal(out[:, :self.action_dim], log_std.exp())
        if not self.formation_orders:
            return Orders(gaussian)
        return Orders(gaussian, Categorical(logits=out[:, self.action_dim:]))

    def act(self, obs: Any, agent_idx: int | torch.Tensor = 0,
            deterministic: bool = False, noise: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Sample (or take the mean of) each agent's action, without gradients.

        Actions are the raw Gaussian draws, not clipped: the environment clips
        them to its action box, and the log-probability is that of the drawn
        value (as in SB3 PPO), so it matches :meth:`evaluate_actions` on the
        same actions.

        Args:
            obs: local observations ``(B, obs_dim)`` or one ``(obs_dim,)``.
            agent_idx: the acting agent, or one index per sample.
            deterministic: return the mean instead of a sample.
            noise: standard normal draws ``(B, order_width)`` to sample with
                (``mean + std * noise``, and the formation choice from the last draw:
                :meth:`Orders.sample`) instead of torch's generator: the battles' keyed
                draws
                (:meth:`~envs.battles.multi_battalion_batch.MultiBattalionBatch.action_noise`
                and ``formation_noise``), which make a battle's orders independent of its batch.

        Returns:
            ``(actions (B, order_width), log_probs (B,))``; ``B = 1`` for a 1-D obs.
            With a formation head the last column is the formation code
            (``deterministic``: the likeliest choice).

        Raises:
            ValueError, TypeError: for a wrong shape, non-finite value or index.
        """
        deterministic = _check_bool("deterministic", deterministic)
        with torch.no_grad():
            obs_t = self._batch("obs", obs, self.obs_dim)
            dist = self._distribution(obs_t, self._agent_indices(agent_idx, obs_t.shape[0]))
            if deterministic:
                actions = dist.mode()
            elif noise is None:
                actions = dist.sample()
            else:
                noise_t = self._batch("noise", noise, self.order_width)
                if noise_t.shape[0] != obs_t.shape[0]:
                    raise ValueError(f"noise has {noise_t.shape[0]} rows: expected one per "
                                     f"observation ({obs_t.shape[0]})")
                actions = dist.sample(noise_t)
            return actions, dist.log_prob(actions)

    def get_value(self, state: Any) -> torch.Tensor:
        """Critic values of critic states ``state`` (``(B, state_dim)`` or 1-D), shape
        ``(B,)``, no gradients.

        Raises:
            ValueError, TypeError: for a wrong shape or a non-finite value.
        """
        with torch.no_grad():
            return self.critic(self._batch("state", state, self.state_dim))

    def formation_logits(self, obs: Any, agent_idx: int | torch.Tensor = 0) -> torch.Tensor:
        """The formation head's logits ``(B, FORMATION_CHOICES)`` for local observations
        ``obs`` ``(B, obs_dim)``, without gradients (a reference to pull a learner toward:
        MAPPO's ``formation_pull``).

        Raises:
            ValueError: if the actors have no formation head; ValueError, TypeError for a
                wrong shape, non-finite value or index.
        """
        if not self.formation_orders:
            raise ValueError("formation_logits needs a policy built with formation_orders=True")
        with torch.no_grad():
            obs_t = self._batch("obs", obs, self.obs_dim)
            agents = self._agent_indices(agent_idx, obs_t.shape[0])
            return self._distribution(obs_t, agents).formation_logits

    def evaluate_actions(self, obs: Any, actions: Any, state: Any,
                         agent_idx: int | torch.Tensor = 0, *,
                         return_orders: bool = False) -> tuple[Any, ...]:
        """Log-probabilities, entropies and values for a PPO update, with gradients.

        Args:
            obs: local observations ``(B, obs_dim)``.
            actions: the actions taken ``(B, order_width)``.
            state: the agents' critic states ``(B, state_dim)``.
            agent_idx: the acting agent, or one index per sample.
            return_orders: also return the order distribution
                (:class:`~models.formation_orders.Orders`), for a loss on it beside PPO's
                from the same forward pass (MAPPO's ``formation_pull``).

        Returns:
            ``(log_prob, entropy, values)``, each ``(B,)``, and the distribution last with
            ``return_orders``; log-prob and entropy are summed over action dimensions.

        Raises:
            ValueError, TypeError: for a wrong shape, a batch-size mismatch, a
                non-finite value or an invalid index.
        """
        obs_t = self._batch("obs", obs, self.obs_dim)
        actions_t = self._batch("actions", actions, self.order_width)
        state_t = self._batch("state", state, self.state_dim)
        sizes = {"obs": obs_t.shape[0], "actions": actions_t.shape[0], "state": state_t.shape[0]}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"batch sizes differ: {sizes}; expected one size for obs, actions "
                             "and state")
        dist = self._distribution(obs_t, self._agent_indices(agent_idx, obs_t.shape[0]))
        terms = (dist.log_prob(actions_t), dist.entropy(), self.critic(state_t))
        return (*terms, dist) if _check_bool("return_orders", return_orders) else terms
