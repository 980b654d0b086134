"""The league reads as one road: the Learner protocol both learners keep, the matchmaker
every role asks, one PFSP draw, imports pointing one way, and the main agent's matches
where the league tutorial reads them."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from training.common.learner import LEARNER_MEMBERS, Learner, missing_members
from training.league import AgentPool, AgentType, MatchDatabase
from training.league.matchmaker import LeagueMatchmaker
from training.league.matchmaking import SELF
from training.league.pfsp import make_pfsp_weight_fn, pfsp_choice, pfsp_probabilities

ROOT = Path(__file__).resolve().parents[2]
ROLE = dict(snapshot_freq=128, eval_freq=128, n_eval_episodes=2, checkpoint_freq=128,
            opponents_per_rollout=2)


def mappo_learner(tmp_path):
    from training.mappo.config import MAPPOConfig
    from training.mappo.trainer import MAPPOTrainer

    return MAPPOTrainer(MAPPOConfig(n_envs=4, rollout_steps=128, total_timesteps=256,
                                    warm_start_doctrine=None, enable_wandb=False,
                                    progress_bar=False, checkpoint_dir=str(tmp_path / "ck"),
                                    log_dir=str(tmp_path / "logs")))


def echelon_learner(tmp_path):
    from training.echelons.config import BrigadeConfig
    from training.league.echelon_learner import EchelonLearner

    return EchelonLearner(BrigadeConfig(
        n_envs=4, n_steps=16, batch_size=32, n_epochs=1, total_timesteps=128,
        warm_start_doctrine=None, map_width=600.0, map_height=600.0, max_steps=40,
        temporal_ratio=5,
        randomize_terrain=False, enable_wandb=False, progress_bar=False,
        log_dir=str(tmp_path / "logs"), checkpoint_dir=str(tmp_path / "ck")))


LEARNERS = {"mappo": mappo_learner, "echelon": echelon_learner}


def _protocol_methods() -> dict[str, inspect.Signature]:
    return {name: inspect.signature(value) for name, value in vars(Learner).items()
            if not name.startswith("_") and inspect.isfunction(value)}


@pytest.mark.parametrize("kind", sorted(LEARNERS))
def test_both_learners_keep_the_protocol_and_a_role_drives_each(tmp_path, kind):
    from training.league.roles import MainAgentTrainer

    learner = LEARNERS[kind](tmp_path)
    assert isinstance(learner, Learner) and missing_members(learner) == []
    for name, declared in _protocol_methods().items():
        actual = inspect.signature(getattr(type(learner), name))
        assert [(p.name, p.kind) for p in actual.parameters.values()] == \
            [(p.name, p.kind) for p in declared.parameters.values()], (kind, name)
    for name in ("warm_started", "scripted_opponent_id"):
        assert isinstance(getattr(type(learner), name), property), (kind, name)

    league = tmp_path / "league"
    role = MainAgentTrainer.in_league(learner, league, scripted_share=0.5, **ROLE)
    assert role.trainer is learner
    metrics = role.train_step()
    assert learner.total_steps == learner.rollout_steps
    assert any(key.startswith("train/") for key in metrics)
    # The league's log and the role's own copy, where the tutorial reads the main agent's.
    shared = MatchDatabase(league / "matches.jsonl").results
    own = MatchDatabase(league / "main_agent" / "matches.jsonl").results
    assert shared and [(r.agent_id, r.opponent_id, r.outcome, r.metadata) for r in own] == \
        [(r.agent_id, r.opponent_id, r.outcome, r.metadata) for r in shared]
    # Self-play right after an update: a frozen copy of the weights, acting like them.
    copy = learner.frozen_copy()
    assert copy is not learner.policy and not copy.training
    for (name, mine), theirs in zip(learner.policy.state_dict().items(),
                                    copy.state_dict().values(), strict=True):
        assert mine.equal(theirs), name
    role.finish()


def test_a_role_refuses_what_is_not_a_learner_and_names_what_it_lacks(tmp_path):
    from training.league.roles import MainAgentTrainer

    class Half:
        rng = np.random.default_rng(0)

        def collect_rollout(self):
            return None

    with pytest.raises(TypeError, match="lacks CHECKPOINT_NAME.*learn_from"):
        MainAgentTrainer.in_league(Half(), tmp_path)
    assert "learn_from" in LEARNER_MEMBERS and "collect_rollout" not in missing_members(Half())


def _league(tmp_path):
    pool = AgentPool(tmp_path / "main_agent" / "pool.json")
    for name, kind in (("main_agent_001_v000000", AgentType.MAIN_AGENT),
                       ("exploiter_v1", AgentType.MAIN_EXPLOITER),
                       ("league_v1", AgentType.LEAGUE_EXPLOITER)):
        pool.add(f"{name}.pt", kind, agent_id=name,
                 metadata={"parent_agent_id": name.rsplit("_v", 1)[0]})
    return pool, LeagueMatchmaker(pool, MatchDatabase(tmp_path / "matches.jsonl"))


def test_roles_draw_through_the_matchmaker_and_its_weighting_is_live(tmp_path):
    pool, matchmaker = _league(tmp_path)
    members = pool.list()
    rates = {"main_agent_001_v000000": 0.9, "exploiter_v1": 0.2, "league_v1": 0.6}

    def draw(weighting, rule="pfsp", seed=3):
        matchmaker.set_weight_function(weighting)
        drawn = matchmaker.league_opponents(rule, AgentType.MAIN_AGENT, "main_agent_001",
                                            members, lambda i: rates.get(i, 0.5),
                                            np.random.default_rng(seed), 6)
        return [getattr(d, "agent_id", d) for d in drawn]

    # What the role drew before it asked the matchmaker: PFSP f_T over every member.
    rng = np.random.default_rng(3)
    p = pfsp_probabilities([rates[r.agent_id] for r in members], make_pfsp_weight_fn(0.5))
    expected = [members[int(rng.choice(3, p=p))].agent_id for _ in range(6)]
    assert draw(make_pfsp_weight_fn(0.5)) == expected
    # The matchmaker's weighting is the one used: all weight on the one it beats least.
    assert set(draw(lambda w: float(w < 0.5))) == {"exploiter_v1"}
    # Nash weights set on the matchmaker drive the nash rule; without them it is pfsp.
    matchmaker.set_nash_weights({"league_v1": 1.0})
    assert set(draw(None, "nash")) == {"league_v1"}
    matchmaker.set_nash_weights(None)
    assert draw(make_pfsp_weight_fn(0.5), "nash") == expected
    assert SELF in draw(None, "alphastar", seed=0) + draw(None, "alphastar", seed=1)
    with pytest.raises(ValueError, match="rule='elo'"):
        matchmaker.league_opponents("elo", AgentType.MAIN_AGENT, "m", members, rates.get,
                                    np.random.default_rng(0), 1)


def test_one_pfsp_draw_behind_the_pool_the_matchmaker_and_the_rules(tmp_path):
    pool, matchmaker = _league(tmp_path)
    ids = [r.agent_id for r in pool.list()]
    rates = [0.5, 0.1, 0.8]
    for seed in range(5):
        index = pfsp_choice(rates, "variance", np.random.default_rng(seed))
        p = pfsp_probabilities(rates, "variance")
        assert index == int(np.random.default_rng(seed).choice(3, p=p))
        assert pool.sample_pfsp(dict(zip(ids, rates, strict=True)), pfsp_weight_fn="variance",
                                rng=seed).agent_id == ids[index]
    assert pfsp_choice([], rng=0) is None


def test_the_role_modules_are_entry_points_and_imports_point_one_way():
    league = ROOT / "training" / "league"
    entry_points = {"train_main_agent", "train_exploiter", "train_league_exploiter"}

    def imported(path):
        tree = ast.parse(path.read_text())
        return {node.module.rsplit(".", 1)[-1] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("training.league.")}

    for module in ("launch", "launcher", "roles", "role", "exploiters"):
        assert not imported(league / f"{module}.py") & entry_points, module
    for module in entry_points:
        assert "launch" in imported(league / f"{module}.py")
    code = ("import sys, training.league.launch as l; print(l.role_class('main_agent').__name__,"
            " sorted(m for m in sys.modules if m.startswith('training.league.train_')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True, timeout=300)
    assert done.stdout.split() == ["MainAgentTrainer", "[]"]
    done = subprocess.run([sys.executable, "-m", "training.league.train_exploiter", "--help"],
                          capture_output=True, text=True, cwd=ROOT, check=False, timeout=300)
    assert done.returncode == 0 and "Powered by Hydra" in done.stdout, done.stderr[-2000:]
