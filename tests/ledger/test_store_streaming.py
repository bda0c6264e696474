"""Runs created from a stream of items, read back a page at a time, and trials written in groups
(issue 13: the runner at scale), on SQLite and real PostgreSQL."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from ledger.db import open_engine
from ledger.store import RunAgent, Store, StoredItems, TrialRecord
from mindledger.errors import NotFoundError
from mindledger.items import Item

AGENTS = [RunAgent("a", "agent", {"adapter": "reference", "policy": "oracle"})]


def item(i: int, family: str = "t") -> Item:
    return Item(family=family, generator="g", version="1", seed=i, params={}, prompt=f"q{i}",
                answer={"kind": "yesno"}, truth={"answer": "yes"})


def stream(n: int, *, fail_at: int | None = None) -> Iterator[Item]:
    for i in range(n):
        if i == fail_at:
            raise RuntimeError("the generator broke")
        yield item(i, "t" if i % 3 else "u")


def trial(item_id: str, agent: str = "a", **fields: object) -> TrialRecord:
    rec = TrialRecord(run_id="r", agent=agent, item_id=item_id, status="ok",
                      transcript=[{"role": "user", "content": "q"}])
    for name, value in fields.items():
        setattr(rec, name, value)
    return rec


def test_a_generator_streams_in_with_its_counts(db_url: str) -> None:
    store = Store(open_engine(db_url))
    counts: Counter[str] = Counter()

    def counted() -> Iterator[Item]:  # more items than one chunk, and one given twice
        for it in [*stream(1200), item(5, "t")]:
            counts[it.family] += 1
            yield it

    run = store.create_run("r", suite="s", seed=1, held_out=False, agents=AGENTS,
                           params=lambda: {"counts": dict(counts)}, items=counted())
    assert run.params_json == '{"counts":{"t":801,"u":400}}'
    stored = store.run_items("r")
    assert isinstance(stored, StoredItems)
    assert stored.ids == [it.id for it in stream(1200)]  # the repeat is in the run once
    assert stored == list(stream(1200))
    assert Counter(stored.families) == {"t": 800, "u": 400}


def test_a_failing_generator_stores_nothing(db_url: str) -> None:
    store = Store(open_engine(db_url))
    with pytest.raises(RuntimeError, match="the generator broke"):
        # fails after two chunks of items were written in the transaction
        store.create_run("r", suite="s", seed=1, held_out=False, params={}, agents=AGENTS,
                         items=stream(1200, fail_at=1100))
    with pytest.raises(NotFoundError):
        store.get_run("r")
    assert store.item_bodies([it.id for it in stream(1100)]) == {}
    assert len(store.run_items("r")) == 0
    # and the run can then be created whole
    store.create_run("r", suite="s", seed=1, held_out=False, params={}, agents=AGENTS,
                     items=stream(1200))
    assert len(store.run_items("r")) == 1200


def test_stored_items_read_a_page_at_a_time(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(open_engine(db_url))
    items = list(stream(10))
    store.create_run("r", suite="s", seed=1, held_out=False, params={}, agents=AGENTS,
                     items=items)
    monkeypatch.setattr(StoredItems, "PAGE", 3)
    monkeypatch.setattr(StoredItems, "PAGES_KEPT", 2)
    loads: list[int] = []
    load = StoredItems._load

    def counting(self: StoredItems, number: int) -> list[Item]:
        loads.append(number)
        return load(self, number)

    monkeypatch.setattr(StoredItems, "_load", counting)
    stored = store.run_items("r")
    assert loads == []  # nothing read until asked for
    assert len(stored) == 10 and stored.ids == [it.id for it in items]
    assert [stored[i] for i in range(10)] == items and loads == [0, 1, 2, 3]
    assert stored[-1] == items[-1] and stored[7] == items[7] and loads == [0, 1, 2, 3]
    assert stored[0] == items[0] and loads == [0, 1, 2, 3, 0]  # page 0 was let go
    assert len(stored._pages) == 2
    assert stored[2:5] == items[2:5]
    assert list(stored) == items and stored == items and items == stored
    assert stored != items[:9]
    with pytest.raises(IndexError):
        stored[10]


def test_a_group_of_trials_is_one_transaction_and_a_bad_one_costs_no_other(db_url: str) -> None:
    store = Store(open_engine(db_url))
    items = list(stream(6))
    store.create_run("r", suite="s", seed=1, held_out=False, params={}, agents=AGENTS,
                     items=items)
    assert store.record_trial(trial(items[1].id)) is True
    with store.trial_group_writer() as write_group:
        assert write_group([trial(items[0].id), trial(items[2].id)]) == [True, True]
        outcomes = write_group([
            trial(items[3].id),
            trial(items[1].id),  # already stored
            trial(items[4].id, transcript=[{"x": float("nan")}]),  # canonical JSON refuses NaN
            trial("sha256:not-an-item"),  # no such item
            trial(items[5].id),
        ])
        assert write_group([]) == []
    assert outcomes[:2] == [True, False] and outcomes[4] is True
    assert isinstance(outcomes[2], ValueError) and isinstance(outcomes[3], Exception)
    stored = [t.item_id for t in store.trials("r")]
    assert sorted(stored) == sorted(items[i].id for i in (0, 1, 2, 3, 5))  # each once
