"""Scoring repeated games: seed 003's opponent-comprehension round m, the best-response
benchmark, exploitation, adaptation latency after a switch, invalid moves and efficiency."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from games.repeated import (
    B6_OPPONENTS,
    COUNTERFACTUALS,
    GAMES,
    OPPONENTS,
    Episode,
    Round,
    episode_from_item,
    generate_episodes,
    make_episode,
    make_episode_item,
    play_moves,
    play_reference,
    reference_answer,
    reference_move,
    score,
    score_episode,
)
from mindledger.errors import InputError


def play(ep: Episode, pick: Callable[[int, str], str | None]) -> list[Round]:
    history: list[Round] = []
    for t in range(ep.rounds):
        b = ep.opponent_move(history)
        history.append((pick(t, b), b))
    return history


def win(ep: Episode, b: str) -> str:
    g = ep.game
    return next(x for x in g.labels if g.payoff[g.index(x)][g.index(b)] > 0)


def lose(ep: Episode, b: str) -> str:
    g = ep.game
    return next(x for x in g.labels if g.payoff[g.index(x)][g.index(b)] < 0)


def rps_pattern(rounds: int = 24) -> Episode:
    return make_episode(1, {"game": "rps", "opponent": "pattern", "rounds": rounds})


# ----------------------------------------------------------------------- comprehension round m


@pytest.mark.parametrize(("lost", "m"), [
    (set(), 1),                          # never below the opponent: m = 1
    ({1, 2, 3}, 2),                      # from round 2: 21/23 ≥ 90%; from round 1: 21/24
    (set(range(1, 11)), 10),             # from round 10: 14/15; from round 9: 14/16
    ({1, 2, 3, 4, 5, 20}, 5),            # from round 5: 18 of 20 rounds = exactly 90%
    ({1, 2, 3, 4, 5, 6, 20}, 7),         # from round 7: 17/18; from round 6: 17/19 < 90%
    (set(range(1, 25)), 25),             # always below: m exceeds the game length
    (set(range(1, 24)), 24),             # only the last round: 1 of 1
    (set(range(1, 23)) | {24}, 25),      # no suffix reaches 90%
    ({24}, 1),                           # 23 of 24 from round 1: the earliest round counts
])
def test_comprehension_round_follows_the_seeds_definition(lost: set[int], m: int) -> None:
    ep = rps_pattern()
    history = play(ep, lambda t, b: lose(ep, b) if t + 1 in lost else win(ep, b))
    s = score_episode(ep, history)
    assert s["comprehension_round"] == m
    assert s["comprehended"] is (m <= 24)


def test_ties_and_mutual_cooperation_count_as_no_lower_than_the_opponent() -> None:
    ep = rps_pattern(10)
    ties = score_episode(ep, play(ep, lambda t, b: b))
    assert ties["total"] == 0 and ties["comprehension_round"] == 1
    pd = make_episode(1, {"game": "pd", "opponent": "tit-for-tat"})
    coop = score_episode(pd, play(pd, lambda t, b: "cooperation"))
    assert coop["total"] == 64 and coop["comprehension_round"] == 1
    # being the sucker in the last 2 of 16 rounds: 14/16 < 90% from round 1, 0% later
    sucker = make_episode(1, {"game": "pd", "opponent": "always-defect"})
    late = score_episode(sucker, play(sucker, lambda t, b: "cooperation" if t >= 14
                                      else "defection"))
    assert late["comprehension_round"] == 17 and not late["comprehended"]


def test_best_response_round_applies_the_same_rule_to_best_responses() -> None:
    ep = rps_pattern(20)
    # ties (never a best response to a pattern) in rounds 1-5, then best responses: from
    # round 5 on that is 15 of 16 rounds, from round 4 only 15 of 17
    s = score_episode(ep, play(ep, lambda t, b: win(ep, b) if t >= 5 else b))
    assert s["best_response_round"] == 5
    assert s["comprehension_round"] == 1  # ties are "no lower" all along
    assert s["best_response_rate"] == 15 / 20


# --------------------------------------------------------------------------------- benchmark


@pytest.mark.parametrize("game", GAMES)
def test_the_oracle_achieves_the_benchmark_against_every_opponent(game: str) -> None:
    for cf in COUNTERFACTUALS:
        for opp in OPPONENTS[game]:
            rounds = 30 if opp in B6_OPPONENTS else None
            ep = make_episode(13, {"game": game, "counterfactual": cf, "opponent": opp,
                                   "rounds": rounds})
            s = score_episode(ep, play_reference(ep, "oracle", np.random.default_rng(0)))
            assert s["total"] == s["benchmark_realized"], (cf, opp)
            assert s["regret"] == 0 and s["best_response_rate"] == 1.0
            assert s["best_response_round"] == 1
            if opp in ("pattern", "tit-for-tat", "grim", "always-cooperate", "always-defect",
                       "cycle-switch"):  # no coin flips: the expectation is the realization
                assert s["total"] == s["benchmark"] and s["exploitation"] == 1


def test_benchmark_is_the_best_response_to_the_script_not_to_the_next_move() -> None:
    ep = make_episode(1, {"game": "pd", "opponent": "tit-for-tat"})
    oracle = score_episode(ep, play_reference(ep, "oracle", np.random.default_rng(0)))
    myopic = score_episode(ep, play_reference(ep, "myopic", np.random.default_rng(0)))
    # cooperate for 15 rounds, defect in the last: 15 × 4 + 6
    assert oracle["benchmark"] == oracle["total"] == 66
    assert oracle["moves"] == ["cooperation"] * 15 + ["defection"]
    # the myopic best reply to "cooperation" is to defect, and tit-for-tat retaliates
    assert myopic["total"] == 6 + 15 * 2
    # against an opponent that ignores the agent both are the same
    pat = make_episode(1, {"game": "rps", "opponent": "biased"})
    assert (play_reference(pat, "oracle", np.random.default_rng(0))
            == play_reference(pat, "myopic", np.random.default_rng(0)))


def test_benchmark_of_stochastic_bots_is_an_expectation() -> None:
    ep = make_episode(2, {"game": "rps", "opponent": "biased"})
    s = score_episode(ep, play_reference(ep, "oracle", np.random.default_rng(0)))
    # best reply to a 3:1:1 bot wins 3/5, ties 1/5, loses 1/5 per round
    assert s["benchmark"] == pytest.approx(24 * (3 - 1) / 5)
    assert s["random_expected"] == 0
    eq = make_episode(2, {"game": "rps", "counterfactual": "payoff", "opponent": "equilibrium"})
    se = score_episode(eq, play_reference(eq, "oracle", np.random.default_rng(0)))
    assert se["benchmark"] == 0 and se["exploitation"] is None  # nothing to exploit


def test_exploitation_is_one_for_the_oracle_and_zero_for_random_play_on_average() -> None:
    values = []
    for seed in range(120):
        ep = make_episode(seed, {"game": "rps", "opponent": "pattern"})
        s = score_episode(ep, play_reference(ep, "random", np.random.default_rng(seed)))
        values.append(s["exploitation"])
    assert abs(float(np.mean(values))) < 0.06
    ep = make_episode(0, {"game": "pd", "opponent": "always-defect"})
    allc = score_episode(ep, play(ep, lambda t, b: "cooperation"))
    # benchmark 32, random play expects 16 × 1.5 = 24: (16 − 24) / (32 − 24)
    assert allc["random_expected"] == 24 and allc["exploitation"] == -1


# ------------------------------------------------------------------------ adaptation latency


def test_adaptation_latency_counts_rounds_from_the_switch() -> None:
    ep = make_episode(1, {"game": "rps", "opponent": "cycle-switch", "rounds": 30})
    at = ep.switch_round
    assert at == 16  # rounds 16…30 follow the new cycle: 15 rounds

    def missing(k: int) -> Callable[[int, str], str | None]:
        # best responses, except ties (never a best response to a cycle) in the k rounds
        # from the switch on
        return lambda t, b: b if at - 1 <= t < at - 1 + k else win(ep, b)

    s = score_episode(ep, play(ep, missing(6)))
    # from the 7th round after the switch: 9 of 9; from the 6th: 9 of 10 = 90%; the 5th: 9/11
    assert s["switch_round"] == 16
    assert s["adaptation_latency"] == 5 and s["adapted"] is True
    assert s["total_before_switch"] == 15 and s["total_after_switch"] == 9
    never = score_episode(ep, play(ep, missing(15)))
    assert never["adaptation_latency"] is None and never["adapted"] is False
    oracle = score_episode(ep, play_reference(ep, "oracle", np.random.default_rng(0)))
    assert oracle["adaptation_latency"] == 0
    plain = score_episode(rps_pattern(), play_reference(rps_pattern(), "oracle",
                                                        np.random.default_rng(0)))
    assert plain["switch_round"] is None and plain["adaptation_latency"] is None
    assert plain["adapted"] is None


# ------------------------------------------------------------------ invalid moves, efficiency


def test_invalid_moves_score_the_worst_outcome() -> None:
    pd = make_episode(1, {"game": "pd", "opponent": "always-cooperate"})
    assert pd.payoffs(None, "cooperation") == (1, 6)
    rps = make_episode(1, {"game": "rps", "counterfactual": "payoff", "opponent": "pattern"})
    assert rps.payoffs(None, "scissors") == (-3, 3)
    item = make_episode_item(1, {"game": "pd", "opponent": "always-cooperate"})
    result = score(item, {"moves": [None] * 16, "tokens": 500})
    d = result.details
    assert d["total"] == 16 and d["opponent_total"] == 96
    assert d["invalid_rounds"] == list(range(1, 17)) and d["invalid_rate"] == 1.0
    assert not result.correct and result.primary_error == "invalid_moves"
    assert result.error_codes == ("invalid_moves", "no_comprehension", "not_best_response")
    # a move that is not an action, or a missing one, is invalid too
    short = score(item, {"moves": ["defection", "betray"]})
    assert short.details["invalid_rounds"] == list(range(2, 17))
    assert short.details["answer_length"] == 2


def test_efficiency_is_points_per_thousand_tokens() -> None:
    ep = make_episode(1, {"game": "pd", "opponent": "always-defect"})
    history = play(ep, lambda t, b: "defection")
    assert score_episode(ep, history, 6400)["efficiency"] == pytest.approx(32 / 6400 * 1000)
    assert score_episode(ep, history, 0)["efficiency"] is None
    assert score_episode(ep, history)["efficiency"] is None
    with pytest.raises(InputError) as err:
        score_episode(ep, history, -5)
    assert err.value.where == "tokens"


def test_incomplete_history_is_refused() -> None:
    ep = make_episode(1, {"game": "pd", "opponent": "always-defect"})
    with pytest.raises(InputError) as err:
        score_episode(ep, play(ep, lambda t, b: "defection")[:5])
    assert err.value.where == "history"


def test_action_shares_and_cooperation_rate() -> None:
    ep = make_episode(1, {"game": "pd", "opponent": "tit-for-tat", "rounds": 4})
    s = score_episode(ep, play(ep, lambda t, b: [None, "cooperation", "defection",
                                                 "cooperation"][t]))
    assert s["action_counts"] == {"cooperation": 2, "defection": 1}
    assert s["action_shares"]["cooperation"] == pytest.approx(2 / 3)
    assert s["cooperation_rate"] == 0.5


# --------------------------------------------------------------------- the family's scorer


def test_score_matches_score_episode_and_reference_answers_are_deterministic() -> None:
    for item in generate_episodes(21, 6):
        rng = np.random.default_rng(5)
        answer = reference_answer(item, "oracle", rng)
        result = score(item, answer)
        assert result.correct and result.value == pytest.approx(
            1.0 if result.details["exploitation"] is None
            else min(1.0, max(0.0, result.details["exploitation"])))
        ep = episode_from_item(item)
        assert result.details["total"] == score_episode(ep, play_moves(ep, answer["moves"]),
                                                        0)["total"]
        a = reference_answer(item, "random", np.random.default_rng(9))
        assert a == reference_answer(item, "random", np.random.default_rng(9))
        assert score(item, a["moves"]).details["moves"] == a["moves"]  # a bare list works


def test_correct_means_best_responses_in_at_least_ninety_percent_of_rounds() -> None:
    item = make_episode_item(1, {"game": "pd", "opponent": "tit-for-tat"})
    # always cooperating misses only the last round's defection: 15/16
    coop = score(item, {"moves": ["cooperation"] * 16})
    assert coop.correct and coop.details["total"] == 64 and coop.error_codes == ()
    assert coop.value == pytest.approx((64 - coop.details["random_expected"])
                                       / (66 - coop.details["random_expected"]))
    late = score(item, {"moves": ["cooperation"] * 13 + ["defection"] * 3})  # 14/16
    assert not late.correct and late.primary_error == "not_best_response"
    # against an opponent that cannot be exploited every move is a best response
    eq = make_episode_item(1, {"game": "rps", "opponent": "equilibrium"})
    anything = score(eq, {"moves": ["rock"] * 24})
    assert anything.correct and anything.details["exploitation"] is None
    assert anything.value == 1.0


def test_unknown_reference_policy_is_refused() -> None:
    ep = rps_pattern()
    with pytest.raises(InputError) as err:
        reference_move(ep, "level:2", [], np.random.default_rng(0))
    assert err.value.where == "policy"
