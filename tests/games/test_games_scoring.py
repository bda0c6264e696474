"""Scoring per Appendix D, including the paper's worked example (Figure 5)."""

from __future__ import annotations

import pytest

from games import make_trial, read_extraction, score, score_reply, summarize
from mindledger.items import Item


def _trial(game: str, k: int, condition: str = "recursive") -> Item:
    params: dict[str, object] = {"game": game, "condition": condition, "target_depth": k}
    if condition == "inductive":
        params["lambda"] = 10
    return make_trial(0, params)


def test_worked_example_figure_5() -> None:
    """11–20, recursive, opponent level 5: K_B = 6, K_L = 6, C = 1, m = 6, consistent."""
    item = _trial("11-20", 6)
    assert item.meta["opponent_level"] == 5
    assert item.prompt.startswith(
        "I am playing a two-player game. My opponent and I each simultaneously choose an "
        "integer from 50 to 70. My payoff equals my chosen number, plus a bonus of 24 if my "
        "number is exactly 2 less than my opponent\u2019s, or a bonus of 8 if my number is "
        "exactly 1 less than my opponent\u2019s.")
    assert item.prompt.endswith(
        "Your opponent is Level 5. A Level k player best-responds to a Level (k-1) player, all "
        "the way down to Level 0, which is defined as follows: Your opponent plays naively. "
        "They have no strategic awareness and simply try to maximize their own base payoff "
        "without considering how your choice might interact with theirs.")
    extraction = {
        "anchor_present": True, "anchor_value": 70, "anchor_concept": "base_payoff_maximizer",
        "chain": [{"value": v, "attributed_to": "opponent", "quote": q} for v, q in [
            (70, "L0 plays 70"), (68, "So L1 = 68"), (66, "L2 = 66"), (64, "L3 = 64"),
            (62, "L4 = 62"), (60, "L5 = 60")]],
        "iteration_verbalized": "YES", "final_belief_point": 60,
        "final_belief_point_quote": "they will choose 60", "final_belief_ambiguous": False,
        "belief_is_distribution": False, "claimed_br": 58, "opponent_models_me": False,
    }
    cot = ("Level 0 ignores the bonuses entirely and just takes the biggest number, so L0 plays "
           "70. Against 70, the 24 bonus needs 68, worth 92, versus 69 with the 8 bonus at 77, "
           "versus 70 alone at 70. So L1 = 68. The same comparison holds at every step: "
           "undercutting by 2 is always worth 24 against a base difference of 2, so each level "
           "subtracts 2. L2 = 66, L3 = 64, L4 = 62, L5 = 60. My opponent is Level 5, so they "
           "will choose 60. I should best-respond to 60, which means 58 (payoff 58 + 24 = 82), "
           "better than 59 (59 + 8 = 67) or 70 (70).")
    reading = read_extraction(extraction, cot)
    assert reading.grounded_fraction == 1.0
    s = score_reply(item, {"action": 58}, reading.stated_belief, reading.chain)
    d = s.details
    assert s.correct and s.value == 1.0 and s.error_codes == ()
    assert d["K_B"] == 6 and d["K_B_matches"] == [6]
    assert d["K_L"] == 6 and d["K_L_matches"] == [5]
    assert d["br_set"] == [58] and d["br_consistent"] is True
    assert d["chain"] == [70, 68, 66, 64, 62, 60]
    assert d["chain_length"] == 6 == item.truth["target_depth"]
    assert d["chain_consistency"] == 1.0 and d["within_one"] is True


def test_no_action_is_incorrect_not_dropped() -> None:
    item = _trial("all-pay", 3)
    for answer in (None, "", {"action": None}):
        s = score(item, answer)
        assert not s.correct and s.primary_error == "no_action" and s.details["no_action"]
        assert s.details["K_B_status"] == "none"


def test_signals_unmatched_ambiguous_none() -> None:
    ring = _trial("ring-11-20", 5)  # a(5) = 15
    assert score(ring, 8).details["K_B_status"] == "unmatched"  # extrapolated -3 step
    assert score(ring, 8).primary_error == "off_sequence"
    ambiguous = score(ring, 20).details
    assert ambiguous["K_B_status"] == "ambiguous" and ambiguous["K_B_matches"] == [0, 10]
    assert score(ring, 20).primary_error == "ambiguous"
    assert score_reply(ring, 15, None, None).details["K_L_status"] == "none"
    assert score_reply(ring, 15, {"final_belief_point": 5}, None).details["K_L_status"] == (
        "unmatched")
    assert score_reply(ring, 15, {"final_belief_point": 20}, None).details["K_L_status"] == (
        "ambiguous")


def test_non_integer_and_out_of_range_actions_match_no_depth() -> None:
    item = _trial("11-20", 2)
    for bad in (66.5, 71, 49, "sixty-six", True):
        s = score(item, bad)
        assert not s.correct and s.details["K_B"] is None
        assert s.primary_error == "invalid_action"
    assert score(item, 66.0).correct and score(item, " 66 ").correct


def test_depth_errors_are_coded() -> None:
    item = _trial("nash-demand", 5)  # a(5) = 15
    under = score(item, 17)
    assert under.primary_error == "under_iteration" and under.details["depth_error"] == -2
    assert not under.details["within_one"]
    over = score(item, 14)
    assert over.primary_error == "over_iteration" and over.details["within_one"]


def test_br_consistency_uses_the_full_set() -> None:
    """Ring belief 10: BR = {17, 20}; a tie broken the other way is still consistent."""
    item = _trial("ring-11-20", 3)
    for action in (17, 20):
        d = score_reply(item, action, {"final_belief_point": 10}, None).details
        assert d["br_set"] == [17, 20] and d["br_consistent"] is True
    d = score_reply(item, 14, {"final_belief_point": 10}, None).details
    assert d["br_consistent"] is False
    assert "not_best_response_to_belief" in score_reply(
        item, 14, {"final_belief_point": 10}, None).error_codes


def test_expected_utility_consistency_for_distributional_beliefs() -> None:
    item = _trial("11-20", 4, "inductive")
    belief = {"belief_support": [{"value": 64, "p": 0.5}, {"value": 62, "p": 0.5}]}
    # EU(62) = 0.5*(62+24) + 0.5*62 = 74; EU(60) = 0.5*60 + 0.5*84 = 72; EU(70) = 70
    d = score_reply(item, 62, belief, None).details
    assert d["eu_best_responses"] == [62] and d["br_consistent_eu"] is True
    assert d["belief_point"] is None and d["K_L_status"] == "none"
    d = score_reply(item, 60, belief, None).details
    assert d["br_consistent_eu"] is False
    d = score_reply(item, 60, {"final_belief_point": 62, **belief}, None).details
    assert d["br_consistent"] is True and d["br_consistent_eu"] is False
    # a distribution with a unique mode gives the point belief
    d = score_reply(item, 62, {"distribution": {"64": 0.7, "62": 0.3}}, None).details
    assert d["belief_point"] == 64 and d["belief_source"] == "distribution_mode"
    assert d["K_L"] == 4


def test_chain_consistency_counts_exact_best_response_steps() -> None:
    item = _trial("ring-11-20", 6)
    d = score_reply(item, 12, None, [20, 17, 14, 11, 8]).details  # extrapolated last step
    assert d["chain_steps"] == [True, True, True, False]
    assert d["chain_consistency"] == pytest.approx(0.75) and d["chain_length"] == 5
    d = score_reply(item, 12, None, [20]).details
    assert d["chain_consistency"] is None and d["chain_length"] == 1
    d = score_reply(item, 12, None, [{"value": 20}, {"value": "x"}]).details
    assert d["chain_steps"] == [False]


def test_ring_depth_ten_is_scored_but_excluded_from_summaries() -> None:
    ring10 = _trial("ring-11-20", 10)
    s = score(ring10, 20)
    assert s.details["excluded"] and s.correct and s.details["K_B_status"] == "ambiguous"
    ok = score(_trial("11-20", 1), 68)
    wrong = score(_trial("11-20", 1), 70)
    summary = summarize([s, ok, wrong])
    assert summary["n"] == 2
    assert summary["accuracy"] == {"n": 2, "rate": 0.5}
    assert summary["K_B"] == {"resolved": 2, "unmatched": 0, "ambiguous": 0, "none": 0}
    assert summary["K_L_coverage"]["rate"] == 0.0


def test_quote_grounding_flags_invented_quotes() -> None:
    cot = "I think   they will\nplay 60, so 58."
    extraction = {"final_belief_point": 60, "final_belief_point_quote": "they will play 60",
                  "chain": [{"value": 62, "quote": "L4 = 62"}]}
    reading = read_extraction(extraction, cot)
    assert reading.grounding == {"final_belief_point": True, "chain[0]": False}
    assert reading.chain == [62]
    strict = read_extraction(extraction, cot, require_grounding=True)
    assert strict.chain == [] and strict.dropped == ("chain[0]",)


def test_structured_reply_fields_feed_the_belief_and_chain() -> None:
    item = _trial("all-pay", 4)
    d = score(item, {"action": 4, "belief": 3, "chain": [0, 1, 2, 3]}).details
    assert d["K_B"] == 4 and d["K_L"] == 4 and d["br_consistent"] is True
    assert d["chain_consistency"] == 1.0 and d["chain_length"] == 4
    d = score(item, {"action": 4, "belief": "three"}).details
    assert d["K_L_status"] == "none" and d["belief_source"] is None


def test_the_chance_rate_is_the_share_of_actions_that_resolve_to_one_depth() -> None:
    from games import generate_items
    from games._scoring import resolve_chance

    by_game = {i.meta["game"]: i for i in generate_items(2041, 48)}
    # 11–20 (modified): 50…70, IDR 70, 68, …, 50 — eleven of twenty-one actions
    assert resolve_chance(by_game["11-20"].truth) == pytest.approx(11 / 21)
    # the all-pay auction on 0…10: every action is some depth's, chance leaves no room
    assert resolve_chance(by_game["all-pay"].truth) == 1.0
    # Ring 11–20: 20 is both a(0) and a(10), so nine of twenty actions resolve
    assert resolve_chance(by_game["ring-11-20"].truth) == pytest.approx(9 / 20)
    assert resolve_chance({"answer": 3}) is None
