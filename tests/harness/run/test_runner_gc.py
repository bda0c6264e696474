"""The runner makes garbage collection cheap while trials are in flight (objects alive at the
start frozen, a higher youngest-generation threshold) and puts the collector back as it found it
when the run ends: normally, on an error, when runs overlap, and without undoing another freeze."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

import games
from harness.agent.agents import Attempt, ReferenceAgent
from harness.run import runner
from harness.run.runner import _GC_YOUNGEST, execute_run
from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.items import Item

ITEMS = games.generate_items(3, 4, conditions=("recursive",))


class Probe(ReferenceAgent):
    """An oracle that notes the collector's settings during each attempt, and may fail."""

    def __init__(self, name: str, *, fail: bool = False, gate: asyncio.Event | None = None):
        super().__init__(name, "oracle", seed=1)
        self.fail = fail
        self.gate = gate
        self.started = asyncio.Event()
        self.seen: list[tuple[tuple[int, ...], int]] = []

    async def attempt(self, item: Item) -> Attempt:
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        self.seen.append((gc.get_threshold(), gc.get_freeze_count()))
        if self.fail:
            raise RuntimeError("the agent has a bug")
        return await super().attempt(item)


@pytest.fixture(autouse=True)
def collector() -> Iterator[tuple[int, ...]]:
    """Distinctive thresholds for the test, and the process's own put back after it."""
    saved = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    gc.set_threshold(900, 11, 12)
    try:
        yield (900, 11, 12)
    finally:
        gc.set_threshold(*saved)
        gc.unfreeze()


def store_with(sqlite_url: str, *runs: str) -> Store:
    store = Store(open_engine(sqlite_url))
    for run_id in runs:
        store.create_run(run_id, suite="t", seed=1, held_out=False, params={},
                         agents=[RunAgent("p", "agent", {})], items=ITEMS)
    return store


def test_a_run_freezes_the_heap_and_puts_the_collector_back(
    sqlite_url: str, collector: tuple[int, ...]
) -> None:
    store = store_with(sqlite_url, "r")
    probe = Probe("p")
    asyncio.run(execute_run(store, "r", [probe], ITEMS, concurrency={"p": 2}))
    assert len(probe.seen) == len(ITEMS)
    for thresholds, frozen in probe.seen:
        assert thresholds == (_GC_YOUNGEST, 11, 12) and frozen > 0
    assert gc.get_threshold() == collector and gc.get_freeze_count() == 0
    assert len(store.trials("r")) == len(ITEMS)


def test_the_collector_is_put_back_when_the_run_raises(
    sqlite_url: str, collector: tuple[int, ...]
) -> None:
    store = store_with(sqlite_url, "r")
    with pytest.raises(RuntimeError, match="the agent has a bug"):
        asyncio.run(execute_run(store, "r", [Probe("p", fail=True)], ITEMS,
                                concurrency={"p": 1}))
    assert gc.get_threshold() == collector and gc.get_freeze_count() == 0


def test_overlapping_runs_put_it_back_once_the_last_ends(
    sqlite_url: str, collector: tuple[int, ...]
) -> None:
    store = store_with(sqlite_url, "r1", "r2")

    async def both() -> None:
        gate = asyncio.Event()
        slow = Probe("p", gate=gate)
        later = asyncio.create_task(
            execute_run(store, "r2", [slow], ITEMS, concurrency={"p": 1})
        )
        await slow.started.wait()  # r2 is running its trials, held at the gate
        await execute_run(store, "r1", [Probe("p")], ITEMS, concurrency={"p": 1})
        # r1 is over; r2 is still running, with the collector as a run sets it
        assert gc.get_threshold() == (_GC_YOUNGEST, 11, 12) and gc.get_freeze_count() > 0
        gate.set()
        await later

    asyncio.run(both())
    assert gc.get_threshold() == collector and gc.get_freeze_count() == 0
    assert len(store.trials("r1")) == len(store.trials("r2")) == len(ITEMS)


def test_a_freeze_made_by_someone_else_is_left_alone(
    sqlite_url: str, collector: tuple[int, ...]
) -> None:
    store = store_with(sqlite_url, "r")
    gc.freeze()  # e.g. a server about to fork its workers
    frozen = gc.get_freeze_count()
    asyncio.run(execute_run(store, "r", [Probe("p")], ITEMS, concurrency={"p": 2}))
    assert gc.get_freeze_count() >= frozen > 0  # still frozen: not undone by the run
    assert gc.get_threshold() == collector


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_garbage_alive_at_the_start_is_collected_not_frozen(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead reference cycle when a run starts is freed before the freeze: frozen, it would
    wait for the end of the run, and with runs back to back (the daemon) for ever."""
    store = store_with(sqlite_url, "r")
    seen: list[bool] = []

    class Watch(Probe):
        async def attempt(self, item: Item) -> Attempt:
            seen.append(dead() is None)
            return await super().attempt(item)

    monkeypatch.setattr(runner, "_gc_started", 1)  # a run before: runs follow each other here
    gc.disable()  # no automatic collection: only the run's own can free the cycle
    try:
        dead = weakref.ref(_Cycle())  # garbage at once: only a collection frees a cycle
        assert dead() is not None
        asyncio.run(execute_run(store, "r", [Watch("p")], ITEMS, concurrency={"p": 1}))
    finally:
        gc.enable()
    assert seen == [True] * len(ITEMS)


def test_a_process_first_run_freezes_without_a_full_collection(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process's first run (``mindledger run``) freezes the heap as it is: its garbage is its
    start-up's, and a collection would walk every object alive; the runs after it collect
    first (a daemon's runs follow each other)."""
    collections: list[int] = []

    def collect(*generation: int) -> int:
        collections.append(1)
        return 0

    monkeypatch.setattr(runner, "_gc_started", 0)
    monkeypatch.setattr(runner.gc, "collect", collect)
    store = store_with(sqlite_url, "r1", "r2")
    for run_id in ("r1", "r2"):
        asyncio.run(execute_run(store, run_id, [Probe("p")], ITEMS, concurrency={"p": 1}))
    assert collections == [1]  # the second run's, none for the first
    assert runner._gc_started == 2 and gc.get_freeze_count() == 0
