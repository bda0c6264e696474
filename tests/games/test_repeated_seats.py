"""Agent-seat repeated games (issue 15 item 4): items against ``agent:control`` and
``agent:self``, their two-sided prompts and their exact scoring from both seats' moves."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import family as games_family
from games.repeated import (
    AGENT_OPPONENTS,
    COUNTERFACTUALS,
    agent_seat,
    agent_seat_design,
    episode_from_item,
    make_episode_item,
    reference_answer,
    score,
    score_seats,
    seat_episode_from_item,
)
from mindledger.errors import InputError

C, D = "cooperation", "defection"


def pd_item(seat: str = "control", **params: object):
    return make_episode_item(3, {"game": "pd", "opponent": f"agent:{seat}", **params})


def test_an_agent_seat_item_regenerates_and_carries_no_script() -> None:
    item = pd_item()
    assert make_episode_item(item.seed, item.params).to_dict() == item.to_dict()
    assert item.truth["opponent"] == {"kind": "agent", "seat": "control"}
    assert "noise" not in item.truth and "benchmark" not in item.truth
    assert agent_seat(item) == "control" and agent_seat(pd_item("self")) == "self"
    assert agent_seat(make_episode_item(3, {"game": "pd", "opponent": "grim"})) is None
    with pytest.raises(InputError, match="agent-seat"):
        episode_from_item(item)
    d = games_family.REPEATED.design(item)
    assert (d.opponent, d.counterfactual, d.b6) == ("agent:control", "default", False)
    assert d.matched.startswith("pd/agent:control/16/")


def test_each_seat_reads_its_own_side() -> None:
    ep = seat_episode_from_item(pd_item(rounds=3))
    mine, theirs = [C, "nonsense"], [D, C]
    a = ep.round_prompt(mine, theirs)
    b = ep.round_prompt(theirs, mine)
    assert "Round 1: cooperation / defection: 1 / 6" in a
    assert "Round 1: defection / cooperation: 6 / 1" in b
    # an invalid move is its player's worst outcome, seen from either side
    assert "Round 2: (no valid action) / cooperation: 1 / 6" in a
    assert "Round 2: cooperation / (no valid action): 6 / 1" in b
    assert "Total so far: you 2, your opponent 12." in a
    with pytest.raises(InputError):
        ep.round_prompt([C], [])


def test_tit_for_tat_against_always_defect_is_scored_exactly() -> None:
    ep = seat_episode_from_item(pd_item())
    tft, alld = [C] + [D] * 15, [D] * 16
    d = score_seats(ep, tft, alld, 192, 96)
    assert (d["total"], d["opponent_total"], d["joint_total"]) == (31, 36, 67)
    assert d["exploitation"] == 0.875 and d["regret"] == 1
    assert d["opponent_seat"]["exploitation"] == 1 and d["opponent_seat"]["regret"] == 0
    assert d["efficiency"] == pytest.approx(31 / 192 * 1000)
    assert d["opponent_seat"]["efficiency"] == pytest.approx(36 / 96 * 1000)
    assert d["comprehension_round"] == 1 and d["comprehended"]
    assert d["cooperation_rate"] == 1 / 16 and d["mutual_cooperation_rate"] == 0
    assert d["adaptation_latency"] is None
    assert d["not_estimable"]["adaptation_latency"].startswith("not estimable: ")
    # the scorer reads the trial's answer the same way
    s = score(pd_item(), {"moves": tft, "opponent_moves": alld, "tokens": 192,
                          "opponent_tokens": 96})
    assert s.correct and s.details["exploitation"] == 0.875


def test_a_late_comprehender_and_invalid_moves() -> None:
    # the agent is exploited for 8 rounds, then defects: m = 9 of 16 is the first round from
    # which it scores no less than the opponent in ≥ 90% of the rounds
    ep = seat_episode_from_item(pd_item())
    s = score(pd_item(), {"moves": [C] * 8 + [D] * 8, "opponent_moves": [D] * 16})
    assert s.details["comprehension_round"] == 9
    # a missing move is invalid and scores the agent's worst outcome
    s = score(pd_item(), {"moves": [D] * 15, "opponent_moves": [C] * 16})
    assert s.details["invalid_rounds"] == [16] and s.error_codes == ("invalid_moves",)
    assert s.details["payoffs"][-1] == 1 and s.details["opponent_payoffs"][-1] == 6
    both = score_seats(ep, [None] * 16, ["x"] * 16)
    assert both["total"] == both["opponent_total"] == 16
    assert both["exploitation"] is None  # every action scores the same against no moves


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["pd", "rps"]), st.sampled_from(COUNTERFACTUALS),
       st.lists(st.integers(0, 3), min_size=6, max_size=6),
       st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_the_two_seats_mirror_each_other(game: str, cf: str, a: list[int], b: list[int]) -> None:
    item = make_episode_item(1, {"game": game, "counterfactual": cf, "opponent": "agent:self",
                                 "rounds": 6})
    ep = seat_episode_from_item(item)
    lab = [*ep.labels, "invalid"]
    mine, theirs = [lab[i % len(lab)] for i in a], [lab[i % len(lab)] for i in b]
    one, two = score_seats(ep, mine, theirs), score_seats(ep, theirs, mine)
    assert one["payoffs"] == two["opponent_payoffs"] and one["total"] == two["opponent_total"]
    for key in ("exploitation", "comprehension_round", "total", "benchmark"):
        assert one["opponent_seat"][key] == two[key]
    assert one["benchmark"] >= one["random_expected"]


def test_the_design_is_balanced_in_matched_sets() -> None:
    items = agent_seat_design(12, 2)
    assert len(items) == 32 == len({i.id for i in items})
    cells = Counter((i.params["game"], i.params["opponent"], i.params["counterfactual"])
                    for i in items)
    assert set(cells.values()) == {2} and len(cells) == 2 * 2 * 4
    sets = Counter(games_family.REPEATED.design(i).matched for i in items)
    assert len(sets) == 8 and set(sets.values()) == {4}  # each set in the four settings
    assert agent_seat_design(12, 2) == items
    with pytest.raises(InputError, match="seat"):
        agent_seat_design(12, 1, seats=("judge",))
    with pytest.raises(InputError, match="opponent"):
        make_episode_item(1, {"game": "pd", "opponent": "agent:judge"})
    assert set(AGENT_OPPONENTS) == {"agent:control", "agent:self"}


def test_only_random_plays_an_agent_seat_item_among_the_references() -> None:
    rng = np.random.default_rng(4)
    answer = reference_answer(pd_item("self"), "random", rng)
    assert len(answer["moves"]) == len(answer["opponent_moves"]) == 16
    assert score(pd_item("self"), answer).details["tokens"] == 0
    with pytest.raises(InputError, match="scripted opponent"):
        reference_answer(pd_item("self"), "oracle", rng)
