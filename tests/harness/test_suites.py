"""Suite presets: their item counts, their determinism by seed, and their families."""

from __future__ import annotations

from collections import Counter

from harness.suites import get_suite


def test_quick_counts_and_determinism() -> None:
    suite = get_suite("quick")
    items = suite.build(12)
    assert len(items) == suite.total == 26
    assert [i.id for i in items] == [i.id for i in suite.build(12)]
    assert [i.id for i in items] != [i.id for i in suite.build(13)]
    depths = Counter(
        i.meta["depth"] for i in items if i.family == "nesttom" and i.meta["question"] == "belief"
    )
    assert set(depths) == {"R0", "R1", "R2", "R2-self", "R3", "R3-loop", "R4", "R5"}


def test_baseline_has_every_block() -> None:
    items = get_suite("baseline").build(12)
    fam = Counter(i.family for i in items)
    assert fam["nesttom"] == 960 + 180 + 150
    assert fam["repeated"] == 20 + 16
    b6 = [i for i in items if i.family == "repeated" and i.meta.get("rounds") == 30]
    assert len(b6) == 20
    assert fam["games"] >= 100
    assert len({i.id for i in items}) == len(items)
