"""The v1 commander's network: an SB3 actor-critic MLP for the 1v1 duel.

Separate actor and critic MLPs of 128-128 units with Tanh. The actor's trunk
(``mlp_extractor.policy_net``), its action head (``action_net``) and ``log_std`` have
the shapes the MAPPO actor of :mod:`models.mappo_policy` uses, so a v1 policy can seed a
multi-agent one layer for layer. With ``orders="choices"`` the march and the fire are
one categorical choice of a pair and the wheel alone Gaussian (:mod:`models.order_choices`);
the action head then has seven outputs, and such a policy does not seed a MAPPO actor.
``orders="volleys"`` is the same choice for a battalion that fires only when loaded
(:class:`~models.order_choices.VolleyChoices`). Constructor arguments are plain JSON
values (``activation="tanh"``, not a torch class), so SB3 stores them readably in a
checkpoint and loading one needs no unpickling.
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from envs.sim.constants import ACTION_NAMES
from envs.sim.validation import check_real_array
from models.order_choices import OrderChoices, VolleyChoices
from models.standardize import StandardizedFlatten, fit_policy_inputs

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}
DEFAULT_HIDDEN = (128, 128)
ORDER_HEADS = ("gaussian", "choices", "volleys")
"""How a policy gives its orders: a Gaussian over all three, move and fire as choices
(:class:`~models.order_choices.OrderChoices`), or as choices with fire only when loaded
(:class:`~models.order_choices.VolleyChoices`)."""
CHOICE_HEADS = {"choices": OrderChoices, "volleys": VolleyChoices}
"""The order heads whose march and fire are choices, and their distributions."""
FIRE_ACTION = ACTION_NAMES.index("fire")
"""Index of the fire order in a battalion's ``[move, rotate, fire]`` action (2)."""


class BattalionMlpPolicy(ActorCriticPolicy):
    """Actor-critic MLP policy for :class:`~envs.battalion_env.BattalionEnv`.

    Args:
        observation_space: as for SB3's ``ActorCriticPolicy``.
        action_space: as for SB3's ``ActorCriticPolicy``.
        lr_schedule: as for SB3's ``ActorCriticPolicy``.
        net_arch: hidden sizes, shared by actor and critic (list) or given as
            ``{"pi": [...], "vf": [...]}``; default 128-128 for both.
        activation: ``"tanh"`` (default) or ``"relu"``.
        initial_fire_bias: starting mean of the fire order (action index 2). A
            negative value makes the untrained commander hold fire by default,
            so that exploration meets the enemy with muskets loaded and can
            discover what a held volley is worth (see ``docs/training.md``).
        normalize_observations: standardise each observed feature by a mean and spread
            fitted on recorded play (:meth:`fit_observation_statistics`) before the MLPs;
            the statistics are saved with the weights.
        orders: ``"gaussian"`` (default): a diagonal Gaussian over ``[move, rotate,
            fire]``; ``"choices"``: march and fire chosen together from their bang-bang
            values, the wheel Gaussian (:class:`~models.order_choices.OrderChoices`);
            ``"volleys"``: the same choices, the firing ones barred while the battalion
            is not loaded (:class:`~models.order_choices.VolleyChoices`).
        **kwargs: passed to ``ActorCriticPolicy`` (e.g. ``log_std_init``).

    Raises:
        ValueError: for an unknown activation or order head, or an ``initial_fire_bias``
            with orders as choices (whose fire is a choice, not a mean).
    """

    def __init__(self, observation_space, action_space, lr_schedule,
                 net_arch: list[int] | dict[str, list[int]] | None = None,
                 activation: str = "tanh", initial_fire_bias: float = 0.0,
                 normalize_observations: bool = False, orders: str = "gaussian",
                 **kwargs: Any) -> None:
        if orders not in ORDER_HEADS:
            raise ValueError(f"orders={orders!r} is invalid: expected one of {ORDER_HEADS}")
        if orders in CHOICE_HEADS and getattr(action_space, "shape", None) \
                != (len(ACTION_NAMES),):
            raise ValueError(f"orders={orders!r} is invalid for action_space={action_space}: "
                             f"expected a Box of the {len(ACTION_NAMES)} orders {ACTION_NAMES}")
        if orders in CHOICE_HEADS and initial_fire_bias != 0.0:
            raise ValueError(f"initial_fire_bias={initial_fire_bias!r} is invalid with "
                             f"orders={orders!r}: expected 0 (the fire order is a choice)")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation={activation!r} is invalid: expected one of "
                             f"{sorted(ACTIVATIONS)}")
        if "activation_fn" in kwargs:
            raise ValueError("activation_fn is not accepted (it would be pickled into "
                             "checkpoints): pass activation='tanh' or 'relu' instead")
        if net_arch is None:
            net_arch = {"pi": list(DEFAULT_HIDDEN), "vf": list(DEFAULT_HIDDEN)}
        if "features_extractor_class" in kwargs:
            raise ValueError("features_extractor_class is not accepted (it would be pickled "
                             "into checkpoints): pass normalize_observations=True instead")
        self.activation = activation
        self.initial_fire_bias = float(initial_fire_bias)
        self.normalize_observations = bool(normalize_observations)
        self.orders = orders
        if self.normalize_observations:
            kwargs["features_extractor_class"] = StandardizedFlatten
        super().__init__(observation_space, action_space, lr_schedule, net_arch=net_arch,
                         activation_fn=ACTIVATIONS[activation], **kwargs)
        if orders == "gaussian":
            with torch.no_grad():
                self.action_net.bias[FIRE_ACTION] = self.initial_fire_bias

    def _build(self, lr_schedule) -> None:
        # SB3 builds the head from self.action_dist; OrderChoices is a Gaussian to it.
        if self.orders in CHOICE_HEADS:
            self.action_dist = CHOICE_HEADS[self.orders]()
        super()._build(lr_schedule)

    # With volleys the distribution reads which battalions are loaded from the
    # observation, which SB3 does not pass it: these three are the ways in.
    def _show(self, obs: torch.Tensor) -> None:
        if isinstance(self.action_dist, VolleyChoices):
            self.action_dist.observation = obs

    def forward(self, obs: torch.Tensor, deterministic: bool = False):
        self._show(obs)
        return super().forward(obs, deterministic)

    def evaluate_actions(self, obs: torch.Tensor, actions: torch.Tensor):
        self._show(obs)
        return super().evaluate_actions(obs, actions)

    def get_distribution(self, obs: torch.Tensor):
        self._show(obs)
        return super().get_distribution(obs)

    def predict(self, observation, state=None, episode_start=None, deterministic=False):
        """SB3's ``predict``, refusing observations that are not real numbers (strings,
        booleans, complex numbers, objects) instead of converting them.

        Raises:
            ValueError: naming ``observation``.
        """
        observation = check_real_array("observation", observation, finite=False)
        return super().predict(observation, state, episode_start, deterministic)

    def fit_observation_statistics(self, observations: torch.Tensor) -> None:
        """Fit the standardisation to ``observations`` (N, obs_dim); a policy built without
        ``normalize_observations`` has none to fit.

        Raises:
            ValueError: if the policy does not normalise its observations.
        """
        if not self.normalize_observations:
            raise ValueError("fit_observation_statistics needs a policy built with "
                             "normalize_observations=True")
        fit_policy_inputs(self, observations)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        parameters = super()._get_constructor_parameters()
        parameters.pop("activation_fn", None)
        parameters.pop("features_extractor_class", None)
        parameters["normalize_observations"] = self.normalize_observations
        parameters["activation"] = self.activation
        parameters["initial_fire_bias"] = self.initial_fire_bias
        parameters["orders"] = self.orders
        return parameters
