"""The runner's writer thread: group commit, durability before progress, failures kept apart,
back-pressure; and a run executed over items read lazily from storage."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import games
from harness.agent.agents import ReferenceAgent
from harness.run.runner import TrialWriter, execute_run
from ledger.db import open_engine
from ledger.store import RunAgent, Store, StoredItems, TrialRecord


def make_store(url: str, n: int) -> tuple[Store, list[str]]:
    items = games.generate_items(4, n, conditions=("recursive",))
    store = Store(open_engine(url))
    store.create_run("r", suite="t", seed=1, held_out=False, params={},
                     agents=[RunAgent("a", "agent", {})], items=items)
    return store, [it.id for it in items]


def trial(item_id: str, **fields: object) -> TrialRecord:
    rec = TrialRecord(run_id="r", agent="a", item_id=item_id, status="ok",
                      transcript=[{"role": "user", "content": "q"}])
    for name, value in fields.items():
        setattr(rec, name, value)
    return rec


def test_every_trial_is_stored_once_and_committed_before_its_callback(db_url: str) -> None:
    store, ids = make_store(db_url, 40)
    reported: list[tuple[str, bool]] = []
    durable: list[bool] = []

    async def go() -> TrialWriter:
        writer = TrialWriter(store, asyncio.get_running_loop())
        loop_thread = threading.get_ident()

        def done(item_id: str) -> object:
            def cb(inserted: bool) -> None:
                assert threading.get_ident() == loop_thread
                reported.append((item_id, inserted))
                if len(reported) % 10 == 1:  # the trial is in the database already
                    durable.append(("a", item_id) in store.done_pairs("r"))

            return cb

        for i, item_id in enumerate(ids):
            writer.submit(trial(item_id), done(item_id))
            if i % 7 == 0:
                await asyncio.sleep(0)  # let groups form and commit as the loop turns
        writer.submit(trial(ids[0]), done(ids[0]))  # a second trial for a stored pair
        await asyncio.to_thread(writer.close)
        return writer

    writer = asyncio.run(go())
    assert sorted(reported) == sorted([(i, True) for i in ids] + [(ids[0], False)])
    assert durable and all(durable)
    assert sorted(t.item_id for t in store.trials("r")) == sorted(ids)
    assert 1 <= writer.groups <= len(ids) + 1


def test_a_trial_that_cannot_be_stored_loses_no_other(sqlite_url: str) -> None:
    store, ids = make_store(sqlite_url, 6)
    reported: list[str] = []
    writer = TrialWriter(store)  # no loop: callbacks on the writer thread
    for i, item_id in enumerate(ids):
        bad = {"transcript": [{"x": float("nan")}]} if i == 2 else {}
        writer.submit(trial(item_id, **bad), lambda ok, item_id=item_id: reported.append(item_id))
    with pytest.raises(ValueError, match="JSON"):
        writer.close()
    good = [item_id for i, item_id in enumerate(ids) if i != 2]
    assert sorted(reported) == sorted(good)
    assert sorted(t.item_id for t in store.trials("r")) == sorted(good)


def test_a_writer_that_cannot_connect_fails_every_trial_and_hangs_nothing(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ids = make_store(sqlite_url, 3)

    def broken() -> object:
        raise OSError("no database")

    monkeypatch.setattr(store, "trial_group_writer", broken)
    writer = TrialWriter(store)
    for item_id in ids:
        writer.submit(trial(item_id), lambda ok: pytest.fail("reported a trial never stored"))
    with pytest.raises(OSError, match="no database"):
        writer.close()
    assert store.trials("r") == []


def test_room_waits_while_too_many_trials_wait_to_be_stored(sqlite_url: str) -> None:
    store, ids = make_store(sqlite_url, 30)
    seen: list[int] = []

    async def go() -> None:
        writer = TrialWriter(store, asyncio.get_running_loop())
        writer.MAX_BACKLOG = 4
        for item_id in ids:
            writer.submit(trial(item_id), lambda ok: None)
            await writer.room()
            seen.append(writer.backlog)
        await asyncio.to_thread(writer.close)
        assert writer.backlog == 0

    asyncio.run(go())
    assert max(seen) <= 4
    assert len(store.trials("r")) == 30


def test_a_run_over_stored_items_reads_them_lazily(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ids = make_store(f"sqlite:///{tmp_path / 't.db'}", 25)
    monkeypatch.setattr(StoredItems, "PAGE", 4)
    monkeypatch.setattr(StoredItems, "PAGES_KEPT", 2)
    items = store.run_items("r")
    agent = ReferenceAgent("a", "oracle", seed=1)
    summary = asyncio.run(execute_run(store, "r", [agent], items, concurrency={"a": 3}))
    assert summary.attempted == 25 and summary.per_agent["a"].trials == 25
    assert len(items._pages) <= 2
    assert sorted(t.item_id for t in store.trials("r")) == sorted(ids)
    again = asyncio.run(execute_run(store, "r", [agent], store.run_items("r"),
                                    concurrency={"a": 3}))
    assert again.attempted == 0
