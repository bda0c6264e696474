"""The NestToM and Hi-ToM families' design records (issue 13, item 1): what reports read
instead of the items' meta keys."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mindledger.design import DesignRecord
from mindledger.items import Item
from nesttom import DEPTHS, generate_items
from nesttom.family import HITOM, NESTTOM, depth_number


def _story_item(family: str = "nesttom", *, meta: dict[str, Any],
                params: dict[str, Any] | None = None,
                answer: dict[str, Any] | None = None) -> Item:
    return Item(family=family, generator="hand", version="1", seed=1, params=params or {},
                prompt="Where does Ann think the ball is?",
                answer=answer or {"kind": "choice", "choices": ["box", "bag", "tin"]},
                truth={"answer": "box"}, meta=meta)


def test_a_hand_built_nesttom_item_carries_its_meta_into_the_record() -> None:
    item = _story_item(
        meta={"depth": "R3-loop", "depth_n": 3, "belief": "FALSE", "question": "belief",
              "story_id": "s-1", "length": 12, "selection": "Adversarial", "mechanism": "lie",
              "form": "log", "block": "b2", "reality_check": False, "r2_self": False,
              "ambiguous": ["reality_leak=own_belief"]},
        params={"stream": 2},
    )
    assert NESTTOM.design(item) == DesignRecord(
        depth="R3-loop", depth_n=3.0, belief="false", question="belief", story="s-1",
        length=12.0, n_choices=3.0, truth_answer="box", in_blocks=True, block="B2",
        block_name="b2", stream="2", selection="adversarial", mechanism="lie", form="log",
        ambiguous=("reality_leak=own_belief",),
    )


def test_a_legacy_nesttom_item_gets_its_factors_from_the_depth_label() -> None:
    # an item written before the generator named depth_n, blocks, R0 and R2-self: a bare depth
    # number, the older ``suite_block`` spelling, no flags, no question kind
    r0 = NESTTOM.design(_story_item(meta={"depth": 0, "suite_block": "B1"}))
    assert (r0.depth, r0.depth_n, r0.question) == ("R0", 0.0, "belief")
    assert r0.reality_check and not r0.r2_self
    assert (r0.block, r0.block_name, r0.stream) == ("B1", None, "")
    r2 = NESTTOM.design(_story_item(meta={"depth": "R2-self", "block": "quick"},
                                    answer={"kind": "yesno"}))
    assert (r2.depth_n, r2.r2_self, r2.reality_check) == (2.0, True, False)
    assert (r2.block, r2.block_name, r2.n_choices) == ("", "quick", 2.0)  # reports infer it
    bare = NESTTOM.design(_story_item(meta={}))
    assert bare.in_blocks and bare.depth == "" and math.isnan(bare.depth_n)
    assert not bare.reality_check and bare.ambiguous == ()


def test_generated_items_records_agree_with_their_meta() -> None:
    for item in generate_items(5, 16):
        rec = NESTTOM.design(item)
        m = item.meta
        assert (rec.depth, rec.depth_n, rec.belief) == (m["depth"], m["depth_n"], m["belief"])
        assert (rec.question, rec.story, rec.length) == (m["question"], m["story_id"],
                                                         m["length"])
        assert (rec.reality_check, rec.r2_self) == (m["reality_check"], m["r2_self"])
        assert rec.ambiguous == tuple(m["ambiguous"])
        assert rec.n_choices == len(item.answer["choices"])
        assert rec.truth_answer == item.truth["answer"] and rec.in_blocks


def test_hitom_items_have_no_baseline_block_and_no_nesttom_flags() -> None:
    item = _story_item("hitom", meta={"depth": "R0", "depth_n": 0, "belief": None,
                                      "question": "belief", "form": "hitom",
                                      "story_id": "h-1", "block": "B1"})
    rec = HITOM.design(item)
    assert (rec.depth, rec.depth_n, rec.belief, rec.form, rec.story) == (
        "R0", 0.0, "", "hitom", "h-1")
    assert not rec.in_blocks and rec.block == "" and rec.block_name is None
    assert not rec.reality_check  # R0 as a Hi-ToM order is not NestToM's reality check
    assert HITOM.design(_story_item("hitom", meta={"depth": 4})).depth == "R4"


@pytest.mark.parametrize(("label", "n"), [("R0", 0), ("R2-self", 2), ("R3-loop", 3),
                                          ("R5", 5), ("R7", 7)])
def test_depth_numbers(label: str, n: int) -> None:
    assert depth_number(label) == n


def test_depth_number_of_what_is_no_depth_is_nan() -> None:
    assert math.isnan(depth_number("deep")) and math.isnan(depth_number(""))
    assert all(not math.isnan(depth_number(d)) for d in DEPTHS)
