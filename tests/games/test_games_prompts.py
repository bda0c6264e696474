"""The prompts are the paper's, verbatim (Appendix B, Tables 5–6), and variants' rules texts
are written from their own parameters."""

from __future__ import annotations

import pytest

from games import (
    INDUCTIVE_SYSTEM_APPENDIX,
    INDUCTIVE_USER_TEXT,
    SYSTEM_PROMPT,
    build_game,
    get_game,
    opponent_description,
    system_prompt,
    user_prompt,
)

APOS = "\u2019"

PAPER_RULES = {
    "11-20": (
        "I am playing a two-player game. My opponent and I each simultaneously choose an "
        "integer from 50 to 70. My payoff equals my chosen number, plus a bonus of 24 if my "
        f"number is exactly 2 less than my opponent{APOS}s, or a bonus of 8 if my number is "
        f"exactly 1 less than my opponent{APOS}s. I want to maximize my payoff. What integer "
        "should I choose?"
    ),
    "all-pay": (
        "I am playing a two-player all-pay auction. My opponent and I each simultaneously "
        "choose a bid from 0 to 10 (integers only). Both of us pay our bid regardless of the "
        "outcome. If my bid is strictly higher, I win a prize of 12. If we tie, I receive 6. If "
        "my bid is lower, I receive nothing. My payoff is: prize (if any) minus my bid. I want "
        "to maximize my payoff. What integer should I bid?"
    ),
    "nash-demand": (
        "I am playing a two-player Nash demand game. A prize of 20 is at stake. My opponent "
        "and I each simultaneously demand an integer from 1 to 20. If our demands sum to 20 or "
        "less, I receive my demand. If our demands exceed 20 but my demand is strictly less "
        f"than my opponent{APOS}s, I receive 80% of my demand. Otherwise I receive nothing. I "
        "want to maximize my payoff. What integer should I demand?"
    ),
    "ring-11-20": (
        "I am one of 5 players arranged in a ring (so player 1 neighbors players 2 and 5, "
        "etc.). Each of us simultaneously chooses an integer from 1 to 20. My payoff equals my "
        "chosen number, plus a bonus of 10 if my number is exactly 3 less than my left "
        f"neighbor{APOS}s number, plus a bonus of 3 if my number is exactly 7 more than my right "
        f"neighbor{APOS}s number. I want to maximize my payoff. What integer should I choose?"
    ),
}

PAPER_L3 = {
    "all-pay": (
        "Your opponent is a deeply strategic thinker. They assume you are moderately "
        "sophisticated --- someone who just barely outbids basic strategists --- and they "
        "choose the bid that best responds to that deeper level of reasoning."
    ),
    "ring-11-20": (
        "Your opponents are deeply strategic thinkers. They assume other players are "
        "moderately sophisticated --- those who best-respond to basic strategists --- and they "
        "choose the action that best responds to that deeper level of reasoning."
    ),
}


@pytest.mark.parametrize("name", list(PAPER_RULES))
def test_rules_text_is_verbatim(name: str) -> None:
    assert get_game(name).rules == PAPER_RULES[name]


@pytest.mark.parametrize("name", list(PAPER_L3))
def test_l3_descriptions_are_verbatim(name: str) -> None:
    assert opponent_description(get_game(name), 3) == PAPER_L3[name]


def test_worked_example_user_turn() -> None:
    """Figure 5: rules, then the templated L5 description."""
    expected = (
        PAPER_RULES["11-20"] + "\n\n"
        "Your opponent is Level 5. A Level k player best-responds to a Level (k-1) player, all "
        "the way down to Level 0, which is defined as follows: Your opponent plays naively. They "
        "have no strategic awareness and simply try to maximize their own base payoff without "
        "considering how your choice might interact with theirs."
    )
    assert user_prompt(get_game("11-20"), "recursive", 5) == expected


def test_ring_template_is_plural() -> None:
    text = opponent_description(get_game("ring-11-20"), 7)
    assert text.startswith("Your opponents are Level 7. A Level k player best-responds")
    assert text.endswith(get_game("ring-11-20").descriptions[0])


def test_system_prompts_and_inductive_text() -> None:
    assert SYSTEM_PROMPT == (
        "You are a rational game-theory player. Think step by step about your strategy. Show "
        "all your reasoning, then call the submit_action tool with your final chosen number. "
        "You MUST use the tool to submit --- do not just state your answer in text."
    )
    assert system_prompt("recursive") == SYSTEM_PROMPT
    assert system_prompt("inductive") == SYSTEM_PROMPT + "\n\n" + INDUCTIVE_SYSTEM_APPENDIX
    assert INDUCTIVE_SYSTEM_APPENDIX.startswith("You also have access to a "
                                                "query_opponent_history tool")
    inductive = user_prompt(get_game("all-pay"), "inductive", 4)
    assert inductive == PAPER_RULES["all-pay"] + "\n\n" + INDUCTIVE_USER_TEXT
    for word in ("level", "Level", "best respon", "best-respon"):
        assert word not in INDUCTIVE_USER_TEXT


def test_variant_rules_are_written_from_its_parameters() -> None:
    spec = build_game("ring-11-20", {"players": 7, "lo": 3, "hi": 31, "bonus": 13, "gap": 4,
                                     "small_bonus": 5, "small_gap": 9})
    assert "I am one of 7 players" in spec.rules and "players 2 and 7" in spec.rules
    assert "from 3 to 31" in spec.rules and "bonus of 13 if my number is exactly 4 less" in (
        spec.rules)
    assert "bonus of 5 if my number is exactly 9 more" in spec.rules
    allpay = build_game("all-pay", {"top": 60, "step": 5, "prize": 70, "tie": 20})
    assert "from 0 to 60 (multiples of 5 only)" in allpay.rules
    assert allpay.actions == tuple(range(0, 61, 5))
