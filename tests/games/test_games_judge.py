"""The extraction judge (Appendix D) on the paper's worked example (Figure 5), from a scripted
judge reply: its fields come back as the figure shows them, the derived quantities follow, and
a quote not found in the chain of thought is dropped and counted. No model is called."""

from __future__ import annotations

import json
from typing import Any

import pytest

from games import (
    MENTALIZING_FIELDS,
    judge_messages,
    make_trial,
    parse_judge_reply,
    read_extraction,
    score,
)
from mindledger.errors import InputError

COT = (
    "Level 0 ignores the bonuses entirely and just takes the biggest number, so L0 plays 70. "
    "Against 70, the 24 bonus needs 68, worth 92, versus 69 with the 8 bonus at 77, versus 70 "
    "alone at 70. So L1 = 68. The same comparison holds at every step: undercutting by 2 is "
    "always worth 24 against a base difference of 2, so each level subtracts 2. L2 = 66, "
    "L3 = 64, L4 = 62, L5 = 60. My opponent is Level 5, so they will choose 60. I should "
    "best-respond to 60, which means 58 (payoff 58 + 24 = 82), better than 59 (59 + 8 = 67) "
    "or 70 (70)."
)

CHAIN = [(70, "L0 plays 70"), (68, "So L1 = 68"), (66, "L2 = 66"), (64, "L3 = 64"),
         (62, "L4 = 62"), (60, "L5 = 60")]


def figure_5_extraction() -> dict[str, Any]:
    """Figure 5's extraction, with the quotes the figure elides filled in from its CoT."""
    return {
        "anchor_present": True,
        "anchor_value": 70,
        "anchor_value_quote": "takes the biggest number, so L0 plays 70",
        "anchor_concept": "base_payoff_maximizer",
        "chain": [{"value": v, "attributed_to": "opponent", "quote": q} for v, q in CHAIN],
        "iteration_verbalized": "YES",
        "final_belief_point": 60,
        "final_belief_point_quote": "so they will choose 60",
        "final_belief_ambiguous": False,
        "final_belief_candidates": [],
        "belief_is_distribution": False,
        "belief_support": [],
        "claimed_br": 58,
        "claimed_br_quote": "I should best-respond to 60, which means 58",
        "payoff_computations": [],
        "opponent_models_me": False,
    }


@pytest.fixture
def item() -> Any:
    return make_trial(0, {"game": "11-20", "condition": "recursive", "target_depth": 6})


def scripted_reply(extraction: dict[str, Any]) -> str:
    """What a judge that follows its prompt returns: one JSON object, nothing else."""
    return json.dumps(extraction)


def test_judge_sees_rules_and_cot_only(item: Any) -> None:
    system, user = judge_messages(item, COT)
    assert system["role"] == "system" and "EXTRACTION ONLY" in system["content"]
    text = user["content"]
    assert COT in text and item.prompt.split("\n\n", 1)[0] in text
    # not the opponent description, level, target or action
    assert "Level 5. A Level k player" not in text and "submit_action" not in text


def test_figure_5_extraction_reproduces_its_fields(item: Any) -> None:
    extraction = parse_judge_reply(scripted_reply(figure_5_extraction()))
    assert extraction["anchor_present"] is True and extraction["anchor_value"] == 70
    assert extraction["anchor_concept"] == "base_payoff_maximizer"
    assert [e["value"] for e in extraction["chain"]] == [70, 68, 66, 64, 62, 60]
    assert {e["attributed_to"] for e in extraction["chain"]} == {"opponent"}
    assert extraction["iteration_verbalized"] == "YES"
    assert extraction["final_belief_point"] == 60 and extraction["final_belief_ambiguous"] is False
    assert extraction["belief_is_distribution"] is False and extraction["claimed_br"] == 58
    assert extraction["opponent_models_me"] is False

    reading = read_extraction(extraction, COT, require_grounding=True)
    assert reading.grounded_fraction == 1.0 and reading.ungrounded == 0
    assert reading.dropped == ()
    assert reading.chain == [70, 68, 66, 64, 62, 60]
    assert reading.stated_belief == {"final_belief_point": 60}
    assert reading.mentalizing is False

    # Figure 5's derived quantities, through the family scorer
    d = score(item, reading.answer(58)).details
    assert d["K_B"] == 6 and d["K_L"] == 6 and d["K_L_matches"] == [5]
    assert d["br_set"] == [58] and d["br_consistent"] is True
    assert d["chain_length"] == 6 and d["chain_consistency"] == 1.0
    assert d["mentalizing"] is False
    assert d["br_chance"] == pytest.approx(1 / 21)  # one best response among 50…70


def test_an_ungrounded_quote_is_dropped_and_counted(item: Any) -> None:
    extraction = figure_5_extraction()
    extraction["chain"][2]["quote"] = "L2 is 66"  # not in the transcript
    extraction["final_belief_point_quote"] = "the opponent picks 60"  # paraphrase, not a quote
    reading = read_extraction(parse_judge_reply(scripted_reply(extraction)), COT,
                              require_grounding=True)
    assert reading.ungrounded == 2
    assert set(reading.dropped) == {"chain[2]", "final_belief_point"}
    assert reading.chain == [70, 68, 64, 62, 60]
    assert reading.stated_belief is None
    d = score(item, reading.answer(58)).details
    assert d["K_L_status"] == "none" and d["br_consistent"] is None
    assert d["K_B"] == 6 and d["chain_steps"][1] is False  # 68 → 64 skips a step

    # the paper's default keeps every value and records the grounding outcome
    lenient = read_extraction(extraction, COT)
    assert lenient.dropped == () and lenient.ungrounded == 2
    assert lenient.chain == [70, 68, 66, 64, 62, 60]


def test_a_point_belief_without_any_quote_is_ungrounded() -> None:
    reading = read_extraction({"final_belief_point": 60}, COT, require_grounding=True)
    assert reading.stated_belief is None and reading.dropped == ("final_belief_point",)


def test_mentalizing_flag_per_condition() -> None:
    assert MENTALIZING_FIELDS == ("opponent_models_me", "spurious_recursion")
    cot = "They expect me to choose 15, so they will pick 14."
    yes = read_extraction({"spurious_recursion": True,
                           "spurious_recursion_quote": "They expect me to choose 15"}, cot)
    assert yes.mentalizing is True
    unquoted = read_extraction({"spurious_recursion": True,
                                "spurious_recursion_quote": "they model me"}, cot,
                               require_grounding=True)
    assert unquoted.mentalizing is None and unquoted.dropped == ("spurious_recursion",)


@pytest.mark.parametrize("reply", [
    "```json\n{\"final_belief_point\": 60}\n```",
    "Here it is: {\"final_belief_point\": 60}",
])
def test_judge_reply_tolerates_a_fence_or_chatter(reply: str) -> None:
    assert parse_judge_reply(reply) == {"final_belief_point": 60}


@pytest.mark.parametrize("reply", ["", "no json here", "[1, 2]", "{broken"])
def test_judge_reply_without_an_object_is_an_input_error(reply: str) -> None:
    with pytest.raises(InputError):
        parse_judge_reply(reply)
