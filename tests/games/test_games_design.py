"""The games families' design records (issue 13, item 1): the scenario key, however an item
spells it, is one field."""

from __future__ import annotations

import math
from typing import Any

import pytest

from games._strategic import make_abc_scenario
from games._trials import make_trial
from games.family import GAMES, REPEATED, SCENARIO_KEYS
from games.repeated import make_episode_item
from mindledger.design import DesignRecord
from mindledger.items import Item


def test_a_level_k_trial_record() -> None:
    item = make_trial(3, {"game": "11-20", "condition": "inductive", "target_depth": 2,
                          "lambda": 10, "variant": False})
    rec = GAMES.design(item)
    assert (rec.game, rec.condition, rec.target_depth, rec.lam) == (
        item.meta["game"], "inductive", 2.0, 10.0)
    assert rec.question == "" and rec.group == "" and rec.abc_differ is None
    assert rec.excluded is item.meta["excluded"]
    assert rec.truth_answer == item.truth["target_action"]
    assert rec.n_choices == item.answer["max"] - item.answer["min"] + 1
    assert rec.depth == "" and not rec.in_blocks


def test_an_abc_scenario_shares_one_group() -> None:
    items = make_abc_scenario(4, "guessing")
    records = [GAMES.design(i) for i in items]
    assert [r.question for r in records] == ["A", "B", "C", "K"]
    assert {r.group for r in records} == {items[0].meta["scenario"]}
    assert {r.condition for r in records} == {"abc"}
    assert all(r.abc_differ is items[0].truth["abc_differ"] for r in records)
    assert [r.truth_answer for r in records] == [i.truth["target_action"] for i in items]
    assert math.isnan(records[0].target_depth)


def _legacy(meta: dict[str, Any], truth: dict[str, Any]) -> Item:
    return Item(family="games", generator="hand", version="0", seed=1, params={},
                prompt="Pick a number.", answer={"kind": "integer", "min": 11, "max": 20},
                truth=truth, meta=meta)


@pytest.mark.parametrize("key", SCENARIO_KEYS)
def test_every_spelling_of_the_scenario_key_gives_the_group(key: str) -> None:
    # stored and imported items (and synthetic runs, ``scenario_id``) spell it their way
    item = _legacy({"game": "beauty-contest", "question": "B", key: "sc-7"},
                   {"answer": 11, "abc_differ": True})
    assert GAMES.design(item) == DesignRecord(
        game="beauty-contest", question="B", group="sc-7", n_choices=10.0, truth_answer=11,
        abc_differ=True)


def test_the_generators_spelling_wins_and_a_missing_group_is_empty() -> None:
    both = _legacy({"scenario": "new", "scenario_id": "old"}, {"target_action": [12]})
    assert GAMES.design(both).group == "new"
    assert GAMES.design(_legacy({"game": "g"}, {})).group == ""
    odd = GAMES.design(_legacy({"excluded": "yes", "abc_differ": True}, {"abc_differ": "no"}))
    assert odd.excluded is False and odd.abc_differ is None  # only real booleans count


def test_a_repeated_episode_record_names_its_game() -> None:
    item = make_episode_item(2, {"game": "rps", "counterfactual": "default",
                                 "opponent": "pattern"})
    assert REPEATED.design(item) == DesignRecord(
        game="rps", n_choices=len(item.answer["choices"]), counterfactual="default",
        opponent="pattern", matched=f"rps/pattern/24/{item.seed}")
