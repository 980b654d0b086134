"""A brigade or division commander as a league learner: SB3 PPO whose opponents command
Red's echelon.

:class:`EchelonLearner` is what a :class:`~training.league.role.LeagueRole` drives when the
league's agents are brigadiers or division commanders instead of battalion commanders. It
keeps the :class:`~training.common.learner.Learner` protocol, as :class:`MAPPOTrainer`
does: ``collect_rollout`` then ``learn_from`` once a rollout, ``deal`` the league's members
into the battles, ``play_matches`` for the evaluations, snapshots and resumable
checkpoints. The battles are the echelon's, Blue's lower echelon the config's frozen
policies or the drills; a dealt member commands Red's echelon in its share of the battles,
in Red's own frame, over the same lower echelon as Blue's; the anchors are Red's
battalions under ``scripted_team_l5`` or ``doctrine_team``. Steps are the commander's (one
command per battle); a snapshot is the commander's SB3 archive. ``docs/echelons.md``
("Brigadiers and division commanders in the league") has the details.
"""

from __future__ import annotations

import copy
import io
import json
import logging
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import HumanOutputFormat, KVWriter, Logger

from envs.battles.multi_battalion_batch import BLUE
from envs.echelons.division_batch import DIVISION_COMMANDS
from envs.echelons.echelon_env import EchelonVecEnv
from storage.files import atomic_write_bytes, check_archive, loads_json
from training.common.dealing import deal_battles
from training.common.imitation import make_doctrine
from training.echelons.brigade import brigade_battles
from training.echelons.config import BrigadeConfig, DivisionConfig
from training.echelons.division import division_battles, load_frozen_brigade_policy
from training.echelons.trainer import (
    evaluate_commander,
    imitate_doctrine,
    load_commander,
    load_frozen_battalion_policy,
    make_commander_ppo,
)

logger = logging.getLogger(__name__)

LEARNER_STATE = "echelon_learner.json"
"""The archive entry of a checkpoint that holds the learner's counters and generators."""


@dataclass
class EchelonRollout:
    """What the role reads of one rollout: every battle that ended in it (the learner's
    score, 1 won, 0.5 drawn, 0 lost; the battle's index; whether it won), and battle 0's
    commands and its Blue battalions' mean position (the behaviour embedding's
    trajectory)."""

    scores: list[float]
    episode_battles: list[int]
    actions: np.ndarray
    """(T, n_commanded) battle 0's commands."""
    positions: np.ndarray
    """(T, 2) battle 0's Blue battalions' mean position over the map's size."""

    @property
    def wins(self) -> list[bool]:
        return [score == 1.0 for score in self.scores]


class _RolloutRecorder(BaseCallback):
    """Notes each step's ended battles and battle 0's behaviour during SB3's
    ``collect_rollouts``."""

    def __init__(self, learner: EchelonLearner) -> None:
        super().__init__()
        self.learner = learner
        self.clear()

    def clear(self) -> None:
        self.scores: list[float] = []
        self.battles: list[int] = []
        self.actions: list[np.ndarray] = []
        self.positions: list[np.ndarray] = []

    def _on_step(self) -> bool:
        for i in np.flatnonzero(self.locals["dones"]):
            winner = self.locals["infos"][i].get("winner")
            self.scores.append(1.0 if winner == "blue" else 0.0 if winner == "red" else 0.5)
            self.battles.append(int(i))
        self.actions.append(np.asarray(self.locals["actions"])[0].astype(np.float64))
        self.positions.append(self.learner.blue_position())
        return True

    def rollout(self) -> EchelonRollout:
        return EchelonRollout(self.scores, self.battles, np.array(self.actions),
                              np.array(self.positions))


class _MetricsWriter(KVWriter):
    """Keeps what SB3's logger wrote at its last ``dump`` (the update's ``train/*``
    values), so that the learner reads them through the logger's public interface."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]],
              step: int = 0) -> None:
        self.values = dict(key_values)  # the logger clears its own dict after the dump

    def close(self) -> None:
        self.values = {}


class EchelonLearner:
    """A brigade or division commander learning in a league (module docstring).

    Args:
        config: a :class:`~training.echelons.config.BrigadeConfig` or
            :class:`~training.echelons.config.DivisionConfig` (the echelon, its battles,
            PPO's settings, ``total_timesteps`` in commander steps, ``seed``).
        resume: a checkpoint :meth:`save` wrote, to continue from.

    Raises:
        TypeError: for a config of another kind.
        ValueError: for a frozen policy file or a checkpoint that does not fit (named).
    """

    CHECKPOINT_NAME = "echelon_learner.zip"
    FINAL_CHECKPOINT_NAME = "echelon_learner_final.zip"
    SNAPSHOT_SUFFIX = ".zip"

    def __init__(self, config: BrigadeConfig | DivisionConfig, *,
                 resume: str | Path | None = None) -> None:
        if not isinstance(config, (BrigadeConfig, DivisionConfig)):
            raise TypeError(f"config={config!r} is invalid: expected a BrigadeConfig or a "
                            "DivisionConfig")
        torch.set_num_threads(config.torch_threads)
        self.config = config
        self.echelon = "brigade" if isinstance(config, BrigadeConfig) else "division"
        self._battalion = None if config.battalion_policy is None else \
            load_frozen_battalion_policy(config.battalion_policy)
        self._brigade = None if self.echelon == "brigade" or config.brigade_policy is None \
            else load_frozen_brigade_policy(config.brigade_policy)
        self.batch = self.make_batch(config.n_envs)
        if self.echelon == "brigade":
            self.n_choices, self.n_commanded = len(self.batch.options), self.batch.n_blue
        else:
            self.n_choices, self.n_commanded = len(DIVISION_COMMANDS), self.batch.n_brigades
        self.vec_env = EchelonVecEnv(self.batch, self.n_choices, self.n_commanded)
        self.vec_env.seed(config.seed)
        self.model = make_commander_ppo(config, self.vec_env, tensorboard=False)
        self.rng = np.random.default_rng(config.seed)
        self.rollout_steps = config.rollout_size()[1]  # the PPO model's n_steps * n_envs
        self.total_steps = self.episodes = 0
        self.opponents: list[tuple[Any, np.ndarray]] = []
        self.rollout: EchelonRollout | None = None
        self.final_checkpoint: Path | None = None
        self.resumed_extra: dict[str, Any] | None = None
        if resume is not None:
            self._restore(Path(resume))
        self._recorder = _RolloutRecorder(self)
        # The update's values reach the learner through a writer of its own (and the
        # terminal's table, as SB3's default logger prints it, when verbose).
        self._metrics = _MetricsWriter()
        outputs: list[KVWriter] = [self._metrics]
        if config.verbose >= 1:
            outputs.append(HumanOutputFormat(sys.stdout))
        self.model.set_logger(Logger(folder=None, output_formats=outputs))
        # As train_brigade: a brigadier first imitates its doctrine, the demonstrations
        # counted in the budget (a role resets to the clone).
        imitated = 0 if resume is not None else imitate_doctrine(self.model, self.vec_env,
                                                                  config)
        # SB3's set-up of a run without a rollout (a budget of 0 steps): the first
        # observations, so that the environments are reset here, before any deal.
        self.model.learn(total_timesteps=0, callback=self._recorder, log_interval=None,
                         reset_num_timesteps=resume is None, progress_bar=False)
        if imitated:
            self.total_steps = self.model.num_timesteps = imitated

    # --- what the role reads ---------------------------------------------------------

    @property
    def policy(self) -> torch.nn.Module:
        """The learner's SB3 policy (it has ``predict`` and the echelon's spaces, so a
        copy can command Red)."""
        return self.model.policy

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.model.policy.optimizer

    @property
    def warm_started(self) -> bool:
        """Whether the run started from trained weights (a resumed one did)."""
        return self.resumed_extra is not None

    @property
    def scripted_opponent_id(self) -> str:
        """The league id of Red's scripted battalions in the battles nobody is dealt."""
        return f"scripted_team_l{self.config.red_level}"

    def anchors(self) -> dict[str, Any]:
        """The league's fixed members (:data:`~training.league.layout.ANCHORS`) as
        opponents: Red's battalions under scripted L5, and under the disciplined doctrine
        (for this map's size)."""
        config = self.config
        return {"scripted_team_l5": 5,
                "doctrine_team": make_doctrine("disciplined", config.map_width, config.map_height)}

    def make_batch(self, n_battles: int, red_level: int | None = None) -> Any:
        """``n_battles`` battles of the echelon, Blue's lower echelon the config's."""
        config = self.config if red_level is None else self.config.replace(red_level=red_level)
        if self.echelon == "brigade":
            return brigade_battles(config, n_battles, self._battalion)
        return division_battles(config, n_battles, self._brigade, self._battalion)

    def blue_position(self) -> np.ndarray:
        """(2,) battle 0's Blue battalions in the fight: their mean position over the
        map's size (the centre when none is)."""
        battles = self._brigades(self.batch).battles
        state, config = battles.state, battles.config
        mine = state.active[0] & (battles.team == BLUE)
        if not mine.any():
            return np.array([0.5, 0.5])
        return np.array([state.x[0, mine].mean() / config.map_width,
                         state.y[0, mine].mean() / config.map_height])

    # --- who commands Red ----------------------------------------------------------------

    def deal(self, opponents: list[Any], scripted_share: float) -> None:
        """Give ``1 - scripted_share`` of the battles to ``opponents`` (frozen commanders
        of the echelon), in equal parts; they sample their commands."""
        self.opponents = deal_battles(self.rng, self.config.n_envs, opponents, scripted_share)
        self.batch.red_commanders.deal(self.opponents)

    def opponent_battles(self) -> list[tuple[Any, np.ndarray]]:
        """``(opponent, battle indices)`` of the last deal."""
        return self.opponents

    # --- a rollout and an update ---------------------------------------------------------

    def collect_rollout(self) -> EchelonRollout:
        """``n_steps`` commands in every battle, the learner sampling from its policy,
        then PPO's epochs on them: one call of SB3's ``learn`` for one rollout's steps
        (SB3 collects and updates in one call; :meth:`learn_from` reads the update)."""
        self._recorder.clear()
        model = self.model
        # ``learn`` continues the counters and the environments, collects ``n_steps``
        # in every battle (exactly the budget it is given) and trains once. The
        # learning rate and clip range are constant, so the progress SB3 computes
        # from this one-rollout budget changes no number of the update.
        model.learn(total_timesteps=model.n_steps * model.n_envs, callback=self._recorder,
                    log_interval=None, reset_num_timesteps=False, progress_bar=False)
        model.logger.dump(model.num_timesteps)
        self.rollout = self._recorder.rollout()
        return self.rollout

    def learn_from(self, rollout: EchelonRollout) -> dict[str, Any]:
        """The counters and metrics of the PPO update on ``rollout`` (SB3's ``train``,
        run by :meth:`collect_rollout` within ``learn``)."""
        if rollout is not self.rollout:
            raise ValueError("rollout is not the one collect_rollout returned last: an "
                             "EchelonLearner's update runs within its collection")
        metrics: dict[str, Any] = {key: value for key, value in self._metrics.values.items()
                                   if key.startswith("train/")}
        self.total_steps += self.rollout_steps
        self.episodes += len(rollout.scores)
        metrics.update({"time/total_steps": self.total_steps, "time/episodes": self.episodes,
                        "rollout/n_wins": int(sum(rollout.wins)),
                        "reward/n_episodes": len(rollout.scores)})
        if rollout.scores:
            metrics["rollout/win_rate"] = float(np.mean(rollout.wins))
        return metrics

    def behaviour_trajectory(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Battle 0's commands and positions over the last rollout, or None before one."""
        if self.rollout is None:
            return None
        return self.rollout.actions, self.rollout.positions

    # --- matches -------------------------------------------------------------------------

    def play_matches(self, opponents: dict[str, Any], n_episodes: int, seed: int, *,
                     opponent_deterministic: bool = False) -> dict[str, np.ndarray]:
        """Each opponent's outcomes (Blue's side: 1 won, 0 drawn, -1 lost) of
        ``n_episodes`` battles against the learner giving its deterministic commands,
        battle ``i`` seeded ``seed + i``.

        Args:
            opponents: name -> a scripted level (Red's battalions), a battalion
                commander (``predict`` on battalion observations, such as the doctrine)
                commanding Red's battalions, or a frozen commander of the echelon
                (anything with ``action_space``) commanding Red's echelon.
            opponent_deterministic: the echelon commanders act on their mode.
        """
        played = {}
        for name, opponent in opponents.items():
            if isinstance(opponent, (int, np.integer)):
                batch = self.make_batch(n_episodes, red_level=int(opponent))
            else:
                batch = self.make_batch(n_episodes)
                if hasattr(opponent, "action_space"):
                    batch.red_commanders.deal([(opponent, np.arange(n_episodes))],
                                              deterministic=opponent_deterministic)
                else:
                    self._brigades(batch).battalion_policy = opponent
            played[name] = evaluate_commander(self.model, batch, n_episodes, seed)
        return played

    # --- snapshots and checkpoints ---------------------------------------------------------

    def save_snapshot(self, path: Path, version: int) -> Path:
        """The commander's weights as an SB3 archive at ``path`` (atomically)."""
        buffer = io.BytesIO()
        self.model.save(buffer)
        atomic_write_bytes(path, buffer.getvalue())
        return path

    def load_snapshot(self, path: str | Path) -> Any:
        """A snapshot's frozen commander (loaded without running code from the file)."""
        return load_commander(path, self.batch.obs_dim, self.n_commanded, self.n_choices)

    def snapshot_weights(self, path: str | Path) -> dict[str, torch.Tensor]:
        """A snapshot's policy weights (to reset the learner to)."""
        return self.load_snapshot(path).policy.state_dict()

    def frozen_copy(self) -> Any:
        """The learner's current weights as a frozen commander (self-play)."""
        policy = self.model.policy
        # The action distribution keeps the last forward pass's distribution; after an
        # update its tensors belong to the update's graph, which deepcopy refuses. The
        # copy starts without one (its first forward pass makes its own).
        last = getattr(policy.action_dist, "distribution", None)
        memo: dict[int, Any] = {} if last is None else {id(last): None}
        return copy.deepcopy(policy, memo).eval()

    def save(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        """A resumable checkpoint, written atomically: the SB3 archive (weights and
        optimiser) with an entry of the counters, generators and the driver's ``extra``
        plain values (read back as :attr:`resumed_extra`)."""
        buffer = io.BytesIO()
        self.model.save(buffer)
        state = {"total_steps": self.total_steps, "episodes": self.episodes,
                 "numpy_rng": self.rng.bit_generator.state,
                 "torch_rng": torch.get_rng_state().tolist(), "extra": extra or {}}
        with zipfile.ZipFile(buffer, "a") as archive:
            archive.writestr(LEARNER_STATE, json.dumps(state))
        atomic_write_bytes(path, buffer.getvalue())
        return Path(path)

    def _restore(self, path: Path) -> None:
        check_archive(path, "echelon learner checkpoint")
        with zipfile.ZipFile(path) as archive:
            if LEARNER_STATE not in archive.namelist():
                raise ValueError(f"resume={str(path)!r} is not an echelon learner's checkpoint: "
                                 f"it has no {LEARNER_STATE}")
            state = loads_json(archive.read(LEARNER_STATE), str(path))
        self.model.set_parameters(str(path), exact_match=True, device=self.model.device)
        self.total_steps, self.episodes = int(state["total_steps"]), int(state["episodes"])
        self.model.num_timesteps = self.total_steps
        self.rng.bit_generator.state = state["numpy_rng"]
        torch.set_rng_state(torch.tensor(state["torch_rng"], dtype=torch.uint8))
        self.resumed_extra = state["extra"]
        logger.info("resuming %s at step %d", path, self.total_steps)

    def close(self) -> None:
        self.vec_env.close()

    # --- inside ------------------------------------------------------------------------

    @staticmethod
    def _brigades(batch: Any) -> Any:
        """The brigade battles under ``batch`` (itself, or a division's)."""
        return getattr(batch, "brigades", batch)


__all__ = ["EchelonLearner", "EchelonRollout", "LEARNER_STATE"]
