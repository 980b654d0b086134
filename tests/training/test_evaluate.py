"""Evaluation: W/D/L on known matchups, batched episodes, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from envs.battalion_env import BattalionEnv
from envs.commanders.doctrine import DisciplinedCommander, ScriptedCommander
from training.evaluate import EvaluationResult, main, run_episodes_with_model

ROOT = Path(__file__).resolve().parents[2]


class HoldPosition:
    def predict(self, observation, deterministic=True):
        return np.zeros((len(observation), 3), np.float32), None


def test_known_matchups():
    assert run_episodes_with_model(HoldPosition(), "scripted_l1", 20, seed=0).draws == 20
    disciplined = run_episodes_with_model(DisciplinedCommander(), "scripted_l1", 40, seed=0)
    assert disciplined.win_rate >= 0.9 and disciplined.losses == 0
    mirror = run_episodes_with_model(ScriptedCommander(5), "scripted_l5", 40, seed=0)
    assert mirror.draw_rate >= 0.8
    passive = run_episodes_with_model(HoldPosition(), "scripted_l5", 40, seed=0)
    assert passive.wins == 0 and passive.losses > 0


def test_episode_i_is_the_battle_seeded_seed_plus_i():
    batched = run_episodes_with_model(DisciplinedCommander(), "scripted_l5", 6, seed=30)
    outcomes = []
    for i in range(6):
        env = BattalionEnv(curriculum_level=5)
        obs, _ = env.reset(seed=30 + i)
        while True:
            obs, _, terminated, truncated, info = env.step(
                DisciplinedCommander().predict(obs)[0])
            if terminated or truncated:
                break
        blue_out = info["blue_routed"] or info["blue_destroyed"]
        red_out = info["red_routed"] or info["red_destroyed"]
        outcomes.append(int(red_out and not blue_out) - int(blue_out and not red_out))
    assert batched == EvaluationResult.from_outcomes(np.array(outcomes))


def test_rates_and_validation():
    result = EvaluationResult.from_outcomes(np.array([1, 1, 0, -1]))
    assert (result.wins, result.draws, result.losses) == (2, 1, 1)
    assert result.win_rate == 0.5 and result.score == 0.625
    with pytest.raises(ValueError, match="n_episodes"):
        run_episodes_with_model(HoldPosition(), n_episodes=0)
    with pytest.raises(ValueError, match="opponent"):
        run_episodes_with_model(HoldPosition(), "scripted_l9", 2)


def test_cli_reports_and_updates_elo(tiny_checkpoint, tmp_path, capsys):
    registry = tmp_path / "elo.json"
    main(["--checkpoint", str(tiny_checkpoint), "--opponent", "scripted_l1",
          "--n-episodes", "4", "--seed", "0", "--elo-registry", str(registry),
          "--agent-name", "tiny"])
    out = capsys.readouterr().out
    assert "vs scripted_l1 over 4 battles" in out and "Elo of tiny" in out
    assert json.loads(registry.read_text())["game_counts"] == {"tiny": 4}


def test_cli_runs_as_a_script(tiny_checkpoint):
    done = subprocess.run(
        [sys.executable, str(ROOT / "training" / "evaluate.py"), "--checkpoint",
         str(tiny_checkpoint), "--opponent", "random", "--n-episodes", "3", "--seed", "1"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "vs random over 3 battles" in done.stdout


# --- silent acceptance ---------------------------------------------------------------------

def test_a_string_deterministic_flag_is_refused_before_anything_is_loaded(tmp_path):
    from training.evaluate import evaluate

    missing = tmp_path / "no_such_checkpoint.zip"
    with pytest.raises(ValueError, match="deterministic='false' is invalid: expected true or"):
        evaluate(str(missing), deterministic="false")
    with pytest.raises(ValueError, match="deterministic='false' is invalid"):
        run_episodes_with_model(HoldPosition(), "scripted_l1", 2, deterministic="false")


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_episodes=10**12), r"n_episodes=1000000000000 is invalid: .* GiB"),
    (dict(n_episodes=2.0), "n_episodes=2.0"),
    (dict(seed=2**63 - 1), r"seed=9223372036854775807 is invalid"),
    (dict(env_kwargs={"curriculum_level": 1}), "env_kwargs key 'curriculum_level'"),
    (dict(env_kwargs={"max_steps": "3"}), "max_steps='3'"),
    (dict(opponent="a\0b"), "opponent="),
])
def test_evaluation_arguments_are_checked(kwargs, match):
    settings = dict(model=HoldPosition(), opponent="scripted_l1", n_episodes=2, seed=0)
    settings.update(kwargs)
    with pytest.raises(ValueError, match=match):
        run_episodes_with_model(**settings)


def test_play_keeps_each_battles_first_end():
    from contextlib import nullcontext

    from training.common.play import DRAW, LOSS, WIN, play, score

    class Scripted:
        """Battles that end on steps 1, 3 and 2, then stay over with the opposite outcome
        (as a restarted battle may)."""

        def __init__(self):
            self.t = 0
            self.ends = np.array([1, 3, 2])
            self.first = np.array([WIN, LOSS, DRAW], np.int8)

        def step(self):
            self.t += 1
            return self.t >= self.ends

        def outcomes(self):
            return np.where(self.t == self.ends, self.first, -self.first).astype(np.int8)

    class Settings:
        def battles(self, blue, red, n, seed):
            return nullcontext(Scripted())

    outcomes = play(None, None, 3, 0, Settings())
    assert outcomes.tolist() == [WIN, LOSS, DRAW] and outcomes.dtype == np.int8
    assert score(outcomes) == 0.5


def test_the_installed_command_names_itself_in_its_usage():
    script = Path(sys.executable).parent / "wargames-evaluate"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: wargames-evaluate ")
