"""LeagueMatchmaker: PFSP weightings by name, Nash override, eligibility, validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from training.league import (
    PFSP_WEIGHTINGS,
    AgentPool,
    AgentType,
    LeagueMatchmaker,
    MatchDatabase,
    make_nash_weight_fn,
    pfsp_probabilities,
)

WIN_RATES = {"o1": 0.2, "o2": 0.5, "o3": 0.9}

# Exact AlphaStar weightings for the win rates above (x = 0.2, 0.5, 0.9).
EXPECTED = {
    "squared": [0.64, 0.25, 0.01],  # (1 - x)^2
    "variance": [0.16, 0.25, 0.09],  # x (1 - x)
    "linear": [0.8, 0.5, 0.1],  # 1 - x
    "linear_capped": [0.5, 0.5, 0.1],  # min(0.5, 1 - x)
}


@pytest.fixture
def league(tmp_path: Path) -> LeagueMatchmaker:
    pool = AgentPool(tmp_path / "pool.json")
    pool.add("/dev/null", AgentType.MAIN_AGENT, agent_id="focal")
    pool.add("/dev/null", AgentType.MAIN_AGENT, agent_id="o1")
    pool.add("/dev/null", AgentType.MAIN_EXPLOITER, agent_id="o2")
    pool.add("/dev/null", AgentType.LEAGUE_EXPLOITER, agent_id="o3")
    db = MatchDatabase(tmp_path / "matches.jsonl")
    for opponent, rate in WIN_RATES.items():
        db.record("focal", opponent, rate)
    return LeagueMatchmaker(pool, db)


def expected_probs(name: str) -> dict[str, float]:
    weights = EXPECTED[name]
    return {o: w / sum(weights) for o, w in zip(WIN_RATES, weights, strict=True)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_named_weightings_give_exact_probabilities(league: LeagueMatchmaker, name: str) -> None:
    league.set_weight_function(name)
    assert league.weighting_name == name
    probs = league.opponent_probabilities("focal")
    assert list(probs) == ["o1", "o2", "o3"]
    for opponent, p in expected_probs(name).items():
        assert probs[opponent] == pytest.approx(p, abs=1e-12)
    constructed = LeagueMatchmaker(league.agent_pool, league.match_database, pfsp_weight_fn=name)
    assert constructed.opponent_probabilities("focal") == probs


def test_default_is_squared_and_none_reverts_to_it(league: LeagueMatchmaker) -> None:
    assert league.weighting_name == "squared"
    default = league.opponent_probabilities("focal")
    assert default["o1"] == pytest.approx(0.64 / 0.9)
    league.set_weight_function(lambda x: x)  # the tutorial's easy-first warm-up
    assert league.weighting_name is None
    easy = league.opponent_probabilities("focal")
    assert easy["o3"] == pytest.approx(0.9 / 1.6)
    league.set_weight_function(None)
    assert league.opponent_probabilities("focal") == default


def test_weighting_registry_functions() -> None:
    assert sorted(PFSP_WEIGHTINGS) == ["linear", "linear_capped", "squared", "variance"]
    for name, weights in EXPECTED.items():
        got = [PFSP_WEIGHTINGS[name](x) for x in WIN_RATES.values()]
        assert got == pytest.approx(weights, abs=1e-15)
    with pytest.raises(TypeError):
        PFSP_WEIGHTINGS["cubic"] = lambda x: x  # type: ignore[index]


def test_unplayed_opponents_use_unknown_win_rate(league: LeagueMatchmaker) -> None:
    league.agent_pool.add("/dev/null", AgentType.MAIN_AGENT, agent_id="new")
    probs = league.opponent_probabilities("focal")
    total = 0.64 + 0.25 + 0.01 + 0.25
    assert probs["new"] == pytest.approx(0.25 / total)
    strict = LeagueMatchmaker(league.agent_pool, league.match_database, unknown_win_rate=0.0)
    assert strict.opponent_probabilities("focal")["new"] == pytest.approx(1.0 / (0.9 + 1.0))


def test_tiny_total_weight_means_uniform(tmp_path: Path) -> None:
    pool = AgentPool(tmp_path / "pool.json")
    for name in ("focal", "a", "b"):
        pool.add("/dev/null", agent_id=name)
    db = MatchDatabase(tmp_path / "m.jsonl")
    db.record("focal", "a", 1.0)
    db.record("focal", "b", 1.0)
    mm = LeagueMatchmaker(pool, db)  # squared: (1 - 1)^2 = 0 for both
    assert mm.opponent_probabilities("focal") == {"a": 0.5, "b": 0.5}
    mm.set_weight_function(lambda x: -3.0)  # negative weights count as 0
    assert mm.opponent_probabilities("focal") == {"a": 0.5, "b": 0.5}
    assert np.allclose(pfsp_probabilities([0.3, 0.7], lambda x: 1e-12), [0.5, 0.5])


def test_bad_weightings_are_rejected(league: LeagueMatchmaker) -> None:
    with pytest.raises(ValueError, match="'cubic'.*linear, linear_capped, squared, variance"):
        league.set_weight_function("cubic")
    with pytest.raises(TypeError, match="int"):
        league.set_weight_function(3)  # type: ignore[arg-type]
    league.set_weight_function(lambda x: float("nan"))
    with pytest.raises(ValueError, match="nan"):
        league.opponent_probabilities("focal")
    with pytest.raises(ValueError, match="unknown_win_rate"):
        LeagueMatchmaker(league.agent_pool, league.match_database, unknown_win_rate=1.5)
    with pytest.raises(TypeError, match="agent_pool has type str without get"):
        LeagueMatchmaker("pool.json", league.match_database)  # type: ignore[arg-type]


def test_nash_weights_override_pfsp_while_set(league: LeagueMatchmaker) -> None:
    league.set_nash_weights({"o1": 0.2, "o2": 0.6, "focal": 0.2})
    probs = league.opponent_probabilities("focal")
    assert probs == pytest.approx({"o1": 0.25, "o2": 0.75, "o3": 0.0})
    assert league.nash_weights == {"o1": 0.2, "o2": 0.6, "focal": 0.2}
    rng = np.random.default_rng(0)
    assert {league.select_opponent("focal", rng=rng).agent_id for _ in range(200)} == {"o1", "o2"}
    league.set_weight_function("linear")  # changing PFSP does not cancel Nash
    assert league.opponent_probabilities("focal") == probs
    league.set_nash_weights({"focal": 1.0})  # nothing eligible has weight -> uniform
    assert league.opponent_probabilities("focal") == pytest.approx(
        {"o1": 1 / 3, "o2": 1 / 3, "o3": 1 / 3})
    league.set_nash_weights(None)
    assert league.nash_weights is None
    assert league.opponent_probabilities("focal")["o1"] == pytest.approx(0.8 / 1.4)
    for bad, error in (({"o1": -0.1}, ValueError), ({"o1": float("nan")}, ValueError),
                       ({"o1": "x"}, TypeError), ([0.5], TypeError)):
        with pytest.raises(error, match="nash weight"):
            league.set_nash_weights(bad)  # type: ignore[arg-type]


def test_make_nash_weight_fn() -> None:
    fn = make_nash_weight_fn({"a": 0.7, "b": 0.3})
    assert (fn("a"), fn("b"), fn("zzz")) == (0.7, 0.3, 0.0)
    assert LeagueMatchmaker.make_nash_weight_fn({"a": 1.0})("a") == 1.0
    with pytest.raises(ValueError):
        make_nash_weight_fn({"a": -1.0})


def test_eligibility_by_role(league: LeagueMatchmaker) -> None:
    pool = league.agent_pool
    assert set(league.opponent_probabilities("o2")) == {"focal", "o1"}  # main exploiter
    assert set(league.opponent_probabilities("o3")) == {"focal", "o1", "o2"}
    assert set(league.opponent_probabilities("focal", candidate_types=["main_exploiter"])) == {
        "o2"}
    assert league.select_opponent("o2", candidate_types=[AgentType.LEAGUE_EXPLOITER]).agent_id \
        == "o3"
    with pytest.raises(KeyError, match="'ghost'"):
        league.select_opponent("ghost")
    with pytest.raises(ValueError, match="agent_type='wizard'"):
        league.opponent_probabilities("focal", candidate_types=["wizard"])
    for name in ("o1", "o2", "o3"):
        pool.remove(name)
    assert league.select_opponent("focal") is None
    assert league.opponent_probabilities("focal") == {}


def test_sampling_follows_the_probabilities(league: LeagueMatchmaker) -> None:
    league.set_weight_function("linear")
    rng = np.random.default_rng(123)
    draws = [league.select_opponent("focal", rng=rng).agent_id for _ in range(4000)]
    for opponent, p in expected_probs("linear").items():
        assert draws.count(opponent) / len(draws) == pytest.approx(p, abs=0.03)
    first = [league.select_opponent("focal", rng=7).agent_id for _ in range(3)]
    assert first == [league.select_opponent("focal", rng=7).agent_id for _ in range(3)]
