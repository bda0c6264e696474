"""Reports read each item's factors from its family's design record (issue 13, item 1), never
from meta keys: a new family's record reaches the columns and the statistics, and an item of an
unregistered family gets only what every item carries."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from ledger.store import RunAgent
from mindledger import family
from mindledger.design import DesignRecord
from mindledger.items import Item
from nesttom import DEPTHS
from reports._data import DEPTH_ORDER, ItemTable, run_data
from reports.profile import profile_from_data
from tests.harness import toy_family
from tests.harness.toy_family import TOY, ToySum


def _table(items: list[Item]) -> ItemTable:
    return ItemTable.from_bodies([it.to_dict() for it in items])


def test_reports_read_the_toy_familys_record() -> None:
    items = toy_family.generate(4, 6)
    with family.registered(TOY):
        table = _table(items)
    assert table.question.tolist() == ["sum"] * 6
    assert table.group.tolist() == [f"max-{max(i.meta['terms'])}" for i in items]
    assert table.n_choices.tolist() == [21.0] * 6
    assert table.truth_answer == [i.truth["answer"] for i in items]
    assert table.block.tolist() == [""] * 6 and table.block_source == "none"


def test_an_unregistered_familys_items_get_only_what_every_item_carries() -> None:
    # meta keys that another family would read mean nothing here: reports do not guess
    items = [replace(i, family="tarot", meta={**i.meta, "depth": "R2", "scenario": "sc",
                                               "game": "pd", "block": "B1"}, id="")
             for i in toy_family.generate(2, 3)]
    table = _table(items)
    assert table.family.tolist() == ["tarot"] * 3
    assert set(table.depth.tolist()) == set(table.group.tolist()) == {""}
    assert set(table.game.tolist()) == set(table.question.tolist()) == {""}
    assert table.n_choices.tolist() == [21.0] * 3  # from the answer spec
    assert table.truth_answer == [i.truth["answer"] for i in items]
    assert not table.excluded.any() and table.block_source == "none"


@dataclass(frozen=True)
class _OddSumsExcluded(ToySum):
    """The toy family, but its design leaves odd sums out of its accuracy."""

    def design(self, item: Item) -> DesignRecord:
        return replace(super().design(item), excluded=item.truth["answer"] % 2 == 1)


def _trials(items: list[Item], agent: str) -> list[dict[str, Any]]:
    return [{"agent": agent, "item_id": i.id, "status": "ok", "correct": True,
             "confidence": None, "score_value": 1.0, "primary_error": None,
             "tokens_in": 0, "tokens_out": 0, "latency_s": 0.0,
             "score_json": None, "answer_json": None, "error": None} for i in items]


def test_a_records_exclusion_reaches_the_familys_accuracy() -> None:
    items = toy_family.generate(9, 20)
    even = sum(1 for i in items if i.truth["answer"] % 2 == 0)
    assert 0 < even < 20
    run = {"id": "r", "suite": "toy", "seed": 0, "held_out": False, "status": "complete",
           "created_at": None, "finished_at": None, "params": {}}
    agents = [RunAgent("ref:oracle", "reference", {"policy": "oracle"})]
    bodies = [i.to_dict() for i in items]
    with family.registered(_OddSumsExcluded()):
        data = run_data(run, agents, bodies, _trials(items, "ref:oracle"))
        section = profile_from_data(data, n_boot=20).to_json()["agents"]["ref:oracle"]["families"]
    assert (section["toy-sum"]["k"], section["toy-sum"]["n"]) == (even, even)


def test_the_depth_labels_are_nesttoms_not_a_copy() -> None:
    assert DEPTH_ORDER is DEPTHS


@pytest.mark.parametrize("name", ["nesttom", "hitom", "games", "repeated"])
def test_every_built_in_family_declares_a_design(name: str) -> None:
    item = replace(toy_family.make_item(1, {}), family=name, meta={}, id="")
    assert isinstance(family.get(name).design(item), DesignRecord)
