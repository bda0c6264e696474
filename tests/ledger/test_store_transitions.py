"""Run status moves by the store's compare-and-set, on SQLite and real PostgreSQL; and the
store's counts that the daemon and the queue read."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator

import pytest

from ledger.db import open_engine
from ledger.store import RunAgent, Store, TrialRecord
from mindledger.errors import NotFoundError
from mindledger.items import Item


class Ticks:
    """A clock that moves one second per reading (ISO 8601 UTC strings, as stored)."""

    def __init__(self) -> None:
        self.now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def __call__(self) -> str:
        self.now += dt.timedelta(seconds=1)
        return self.now.isoformat(timespec="microseconds")


def _items(n: int) -> list[Item]:
    return [
        Item(family="t", generator="g", version="1", seed=i, params={}, prompt=f"q{i}",
             answer={"kind": "yesno"}, truth={"answer": "yes"})
        for i in range(n)
    ]  # fmt: skip


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = Store(open_engine(db_url), clock=Ticks())
    agents = [RunAgent("a", "agent", {}), RunAgent("b", "agent", {})]
    s.create_run("r", suite="s", seed=1, held_out=False, params={}, agents=agents, items=_items(3))
    yield s
    s.engine.dispose()


def test_a_transition_is_refused_from_a_status_in_unless(store: Store) -> None:
    assert store.get_run("r").status == "running"
    assert store.transition_run("r", "running", unless=("running", "complete")) is False
    assert store.transition_run("r", "queued", unless=("queued", "complete")) is True
    assert store.get_run("r").status == "queued"
    assert store.transition_run("r", "complete", unless=("complete",)) is True
    done = store.get_run("r")
    assert done.status == "complete" and done.finished_at is not None

    # a complete run is not moved back to running, nor finished a second time
    assert store.transition_run("r", "running", unless=("running", "complete")) is False
    assert store.transition_run("r", "complete", unless=("complete",)) is False
    assert store.transition_run("r", "interrupted", unless=("complete",)) is False
    again = store.get_run("r")
    assert (again.status, again.finished_at) == ("complete", done.finished_at)


def test_finished_at_is_set_for_complete_and_incomplete_and_cleared_otherwise(
    store: Store,
) -> None:
    assert store.transition_run("r", "incomplete")
    first = store.get_run("r").finished_at
    assert first is not None
    assert store.transition_run("r", "running")
    assert store.get_run("r").finished_at is None
    assert store.transition_run("r", "complete")
    later = store.get_run("r").finished_at
    assert later is not None and later > first  # the store's clock, read at each transition


def test_an_unknown_run_is_not_found_rather_than_refused(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no run with id 'nope'"):
        store.transition_run("nope", "running", unless=("complete",))


def test_of_racing_transitions_exactly_one_wins(store: Store) -> None:
    start = threading.Barrier(6)
    won: list[bool] = []
    lock = threading.Lock()

    def race() -> None:
        start.wait()
        changed = store.transition_run("r", "complete", unless=("complete",))
        with lock:
            won.append(changed)

    threads = [threading.Thread(target=race) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == [False] * 5 + [True]
    assert store.get_run("r").status == "complete"


def test_missing_pairs_and_totals(store: Store) -> None:
    items = store.run_items("r")
    assert store.missing_pairs("r") == [(a, it.id) for a in ("a", "b") for it in items]
    assert store.totals() == {"runs": 1, "trials": 0}
    store.record_trial(TrialRecord("r", "b", items[1].id, "ok", transcript=[]))
    assert store.missing_pairs("r") == [
        *(("a", it.id) for it in items),
        ("b", items[0].id),
        ("b", items[2].id),
    ]
    assert store.totals() == {"runs": 1, "trials": 1}
    assert store.missing_pairs("no-such-run") == []


def test_items_by_id_reads_those_items_in_the_order_asked(store: Store) -> None:
    items = list(store.run_items("r"))
    assert store.run_item_ids("r") == [it.id for it in items]
    wanted = [items[2].id, items[0].id]
    assert store.items_by_id(wanted) == [items[2], items[0]]
    assert store.items_by_id([]) == []
    with pytest.raises(NotFoundError, match="no item with id 'sha256:nope'"):
        store.items_by_id([items[1].id, "sha256:nope"])
