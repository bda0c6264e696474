"""Suite presets: their item counts, their determinism by seed, their families, and the metadata
every NestToM item carries for the reports."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

import nesttom
from harness.run.suites import get_suite
from mindledger.items import Item

DEPTHS = {"R0", "R1", "R2", "R2-self", "R3", "R3-loop", "R4", "R5"}
BLOCKS = {"quick": {"quick"}, "baseline": {"B1", "B2", "B4"}}


@cache
def suite_items(name: str) -> tuple[Item, ...]:
    return tuple(get_suite(name).build(12))


def test_quick_counts_and_determinism() -> None:
    suite = get_suite("quick")
    items = suite.build(12)
    assert len(items) == suite.total == 26
    assert [i.id for i in items] == [i.id for i in suite.build(12)]
    assert [i.id for i in items] != [i.id for i in suite.build(13)]
    depths = Counter(
        i.meta["depth"] for i in items if i.family == "nesttom" and i.meta["question"] == "belief"
    )
    assert set(depths) == DEPTHS
    # no companions in quick; its judgments have both polarities
    assert {i.meta["selection"] for i in items if i.family == "nesttom"} == {
        "adversarial",
        "control",
    }
    judged = Counter(i.truth["answer"] for i in items if i.meta.get("question") == "judgment")
    assert judged["yes"] and judged["no"]


def test_baseline_has_every_block() -> None:
    items = suite_items("baseline")
    fam = Counter(i.family for i in items)
    suite = get_suite("baseline")
    blocks = Counter(i.meta["block"] for i in items if i.family == "nesttom")
    companions = sum(1 for i in items if i.meta.get("selection") == "companion")
    assert companions == suite.counts["B1_companions"]
    assert blocks == {
        "B1": suite.counts["B1"] + companions,
        "B2": suite.counts["B2"],
        "B4": suite.counts["B4"],
    }
    assert (fam["repeated"] == suite.counts["B6"] + suite.counts["repeated"]
            + suite.counts["repeated_agents"] == 20 + 64 + 32)
    b6 = [i for i in items if i.family == "repeated" and i.meta.get("rounds") == 30]
    assert len(b6) == 20
    assert (fam["games"] == suite.counts["B5_level_k"] + suite.counts["B5_abc"]
            + suite.counts["B5_abc_llm"] == 60 + 400 + 240)
    llm = Counter((i.meta["kind"], i.meta["question"]) for i in items
                  if i.meta.get("population") == "llm")
    assert llm == {("beauty", "play"): 100, ("beauty", "C-llm"): 20,
                   ("11-20", "play"): 100, ("11-20", "C-llm"): 20}
    assert len({i.id for i in items}) == len(items)
    # B1, B2 and B4 are nesttom's own builders, as `mindledger nesttom generate --suite` writes
    built = nesttom.baseline_items(12)
    assert [i.id for i in items if i.family == "nesttom"] == [
        i.id for block in built.values() for i in block
    ]


@pytest.mark.parametrize("name", ["quick", "baseline"])
def test_nesttom_items_carry_the_metadata_the_reports_read(name: str) -> None:
    for item in suite_items(name):
        if item.family != "nesttom":
            continue
        m, t = item.meta, item.truth
        assert m["block"] in BLOCKS[name]
        assert m["depth"] in DEPTHS and m["depth_n"] == len(t["chain"])
        assert m["reality_check"] is (m["depth"] == "R0")
        assert m["r2_self"] is (m["depth"] == "R2-self")
        assert m["length"] == len(t["story"]["events"]) and m["form"] in nesttom.FORMS
        assert m["mechanism"] in nesttom.MECHANISMS
        assert set(m["features"]) <= set(nesttom.MECHANISMS)
        assert set(m["causes"]) <= set(m["features"])
        if m["belief"] == "true" or m["reality_check"]:
            assert m["causes"] == []
        elif m["role"] == "main":  # something made the false belief
            assert m["causes"]
        if m["r2_self"]:
            assert m["own_belief"] == t["self_belief"] and m["own_belief"] in item.answer.get(
                "choices", [m["own_belief"]]
            )
        else:
            assert m["own_belief"] is None
        assert m["ambiguous"] == nesttom.ambiguities(t, item.answer)
        assert m["role"] in ("main", "behaviour", "judgment") or m["role"].startswith("prefix:")
        assert (m["selection"] == "companion") is m["role"].startswith("prefix:")


def test_companions_are_tied_to_their_main_question() -> None:
    items = [i for i in suite_items("baseline") if i.family == "nesttom"]
    by_id = {i.id: i for i in items}
    companions = [i for i in items if i.meta["selection"] == "companion"]
    assert companions
    for c in companions:
        main = by_id[c.meta["companion_of"]]
        # the contract of reports' joint accuracy: same story, a belief question, shallower
        assert main.meta["role"] == "main" and main.meta["belief"] == "false"
        assert c.meta["story_id"] == main.meta["story_id"] and c.meta["question"] == "belief"
        k = int(c.meta["role"].split(":")[1])
        assert c.truth["chain"] == main.truth["chain"][:k] and c.meta["depth_n"] == k
        assert c.meta["block"] == main.meta["block"] == "B1"
    per_main = Counter(c.meta["companion_of"] for c in companions)
    assert all(per_main[m] == by_id[m].meta["depth_n"] for m in per_main)
    # every false-belief B1 story has them (R0 has no shallower question), no other story
    mains = {
        i.id
        for i in items
        if i.meta["block"] == "B1"
        and i.meta["role"] == "main"
        and i.meta["belief"] == "false"
        and i.meta["depth_n"] > 0
    }
    assert set(per_main) == mains


def test_smoke_is_three_of_quicks_kinds_of_item() -> None:
    smoke, quick = get_suite("smoke"), get_suite("quick")
    items = smoke.build(12)
    assert len(items) == smoke.total == 3
    assert Counter(i.family for i in items) == {"nesttom": 2, "games": 1}
    assert [i.id for i in items] == [i.id for i in smoke.build(12)]
    # its belief questions are quick's first two, from the same seed
    assert [i.id for i in items[:2]] == [i.id for i in quick.build(12)[:2]]
