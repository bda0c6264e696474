"""One execution path: `mindledger run` (in process) and the queue's batches run the same
:func:`harness.run.execution.execute_batch`, so one suite runs both and expects the same trials,
the same final status, the same resume, and differs only where the paths are meant to: what a
failure leaves behind and what pending work means.

Ways to execute a whole stored run:

- ``in-process``: :func:`harness.run.runs.execute_stored_run`, as `mindledger run` does;
- ``queued``: the queue's batch entry point (:func:`harness.queue.batches.execute_batch`) called
  directly for every missing batch, without procrastinate;
- ``worker`` (PostgreSQL only): `enqueue_run` and a real procrastinate worker
  (:func:`harness.queue.batches.run_worker` with ``once``), in a database of its own.

The agents: ``bot`` (and its control) over the fake OpenAI server on 127.0.0.1, and the
``oracle`` and ``random`` reference policies.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from harness.config.settings import AgentConfig, Settings, load_settings
from harness.run.build import plan_agents
from harness.run.execution import execute_batch
from harness.run.runs import create_run, execute_stored_run
from harness.testing import FakeOpenAI
from ledger.db import open_engine
from ledger.store import Store
from mindledger.errors import ConfigError, UserError
from tests.postgres import fresh_database

BATCH = 4

Trials = dict[tuple[str, str], tuple[Any, ...]]


# -- the ways -------------------------------------------------------------------------------


async def _in_process(store: Store, settings: Settings, run_id: str) -> None:
    await execute_stored_run(store, settings, run_id)


async def _queued(store: Store, settings: Settings, run_id: str) -> None:
    from harness.queue.batches import execute_batch as queued_batch
    from harness.queue.batches import missing_batches

    for b in await asyncio.to_thread(missing_batches, store, run_id, BATCH):
        await queued_batch(store, settings, run_id, b.agent, b.item_ids)


def _worker(store: Store, settings: Settings, run_id: str) -> None:
    from harness.queue.batches import enqueue_run, run_worker

    assert enqueue_run(store, settings, run_id, batch_size=BATCH).deferred > 0
    asyncio.run(run_worker(store, settings, once=True, install_signal_handlers=False))


ASYNC_WAYS: dict[str, Callable[[Store, Settings, str], Awaitable[None]]] = {
    "in-process": _in_process,
    "queued": _queued,
}


@dataclass(frozen=True)
class Way:
    name: str
    url: str

    def execute(self, store: Store, settings: Settings, run_id: str) -> None:
        if self.name == "worker":
            _worker(store, settings, run_id)
        else:
            asyncio.run(ASYNC_WAYS[self.name](store, settings, run_id))


@pytest.fixture(
    params=[
        "in-process",
        "queued",
        pytest.param("in-process:pg", marks=pytest.mark.postgres),
        pytest.param("queued:pg", marks=pytest.mark.postgres),
        pytest.param("worker:pg", marks=pytest.mark.postgres),
    ]
)
def way(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Way]:
    name, _, db = str(request.param).partition(":")
    if db == "pg":
        with fresh_database("mlx_") as url:
            yield Way(name, url)
    else:
        yield Way(name, f"sqlite:///{tmp_path / f'{name}.db'}")


@pytest.fixture(params=list(ASYNC_WAYS))
def async_way(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


# -- helpers --------------------------------------------------------------------------------


def _settings(home: Path, url: str, fake_url: str, **bot: Any) -> Settings:
    settings = load_settings(None, env={}, flags={"db_url": url, "home": str(home)})
    config = AgentConfig(name="bot", endpoint=fake_url, model="m", concurrency=2, **bot)
    return replace(settings, agents={"bot": config})


def _setup(
    home: Path,
    url: str,
    fake_url: str,
    *,
    agents: tuple[str, ...] = ("bot",),
    references: tuple[str, ...] = ("oracle", "random"),
    **bot: Any,
) -> tuple[Store, Settings, str, int]:
    settings = _settings(home, url, fake_url, **bot)
    store = Store(open_engine(url))
    planned = plan_agents(settings, agents=agents, references=references)
    run_id, _, n_items = create_run(store, settings, suite="quick", planned=planned, seed=12)
    return store, settings, run_id, n_items


def _trials(store: Store, run_id: str) -> Trials:
    """Every trial of the run by (agent, item), with what it stored; a pair stored twice
    fails."""
    out: Trials = {}
    for t in store.trials(run_id):
        key = (t.agent, t.item_id)
        assert key not in out, f"{key} stored twice"
        out[key] = (t.status, t.answer_json, t.correct, t.score_value, t.primary_error, t.error)
    return out


def _pairs(store: Store, run_id: str) -> int:
    return len(store.run_agents(run_id)) * len(store.run_items(run_id))


# -- the same work, every way -----------------------------------------------------------------


def test_every_way_stores_the_same_trials_and_completes_the_run(
    way: Way, fake: FakeOpenAI, tmp_path: Path
) -> None:
    # a data directory of its own: each database's ledger (the run's seal) has its witness
    base_store, base_settings, base_run, _ = _setup(
        tmp_path / "baseline", f"sqlite:///{tmp_path / 'baseline.db'}", fake.base_url
    )
    asyncio.run(execute_stored_run(base_store, base_settings, base_run))
    expected = _trials(base_store, base_run)
    assert len(expected) == _pairs(base_store, base_run)
    assert {status for status, *_ in expected.values()} >= {"ok"}

    store, settings, run_id, _ = _setup(tmp_path, way.url, fake.base_url)
    way.execute(store, settings, run_id)
    assert _trials(store, run_id) == expected
    run = store.get_run(run_id)
    assert run.status == "complete" and run.finished_at is not None
    assert store.missing_pairs(run_id) == []

    # executing a complete run again attempts nothing, stores nothing and leaves it complete
    # as it was (finished when it was first finished)
    requests = fake.stats()["requests"]
    if way.name == "worker":
        from harness.queue.batches import Enqueued, enqueue_run

        assert enqueue_run(store, settings, run_id) == Enqueued(0, 0, 0, complete=True)
    else:
        way.execute(store, settings, run_id)
    assert fake.stats()["requests"] == requests
    again = store.get_run(run_id)
    assert (again.status, again.finished_at) == ("complete", run.finished_at)
    assert _trials(store, run_id) == expected
    store.engine.dispose()


def test_a_batch_executed_twice_at_once_stores_each_trial_once(
    async_way: str, db_url: str, fake: FakeOpenAI, tmp_path: Path
) -> None:
    store, settings, run_id, _ = _setup(tmp_path, db_url, fake.base_url)
    execute = ASYNC_WAYS[async_way]

    async def twice() -> None:
        await asyncio.gather(*(execute(store, settings, run_id) for _ in "ab"))

    asyncio.run(twice())
    assert len(_trials(store, run_id)) == _pairs(store, run_id)
    assert store.get_run(run_id).status == "complete"


# -- interrupted, then resumed ----------------------------------------------------------------


class Gate:
    """An answer function for the fake server that answers ``open_for`` requests, then holds
    every further one (and the server with it) until :meth:`open`; so a run cannot finish
    before the test has interrupted it, however slow the machine."""

    def __init__(self, open_for: int):
        self.left = open_for
        self.reached = threading.Event()
        self._open = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self._lock:
            self.left -= 1
            closed = self.left < 0
        if closed:
            self.reached.set()
            self._open.wait(timeout=60)
        return "ok"

    def open(self) -> None:
        self._open.set()


async def _interrupt(
    execute: Awaitable[None], store: Store, run_id: str, gate: Gate
) -> BaseException | None:
    """Run ``execute`` until the gate holds a request and some trial is stored; cancel it
    (as Ctrl-C does under asyncio.run) and return what it raised."""
    task = asyncio.ensure_future(execute)
    deadline = time.monotonic() + 60
    while not (gate.reached.is_set() and await asyncio.to_thread(store.done_pairs, run_id)):
        assert not task.done(), task.result()
        assert time.monotonic() < deadline, "no trial stored in 60 s"
        await asyncio.sleep(0.02)
    task.cancel()
    try:
        await task
    except BaseException as exc:
        return exc
    return None


def test_interrupted_then_resumed_stores_every_trial_once(
    async_way: str, db_url: str, tmp_path: Path
) -> None:
    gate = Gate(open_for=6)
    with FakeOpenAI(answer=gate) as server:
        store, settings, run_id, _ = _setup(tmp_path, db_url, server.base_url, references=())
        execute = ASYNC_WAYS[async_way]
        try:
            raised = asyncio.run(_interrupt(execute(store, settings, run_id), store, run_id, gate))
        finally:
            gate.open()
        assert isinstance(raised, asyncio.CancelledError)
        stored = len(store.done_pairs(run_id))
        assert 0 < stored < _pairs(store, run_id)
        # in process the run says it was interrupted (`mindledger run --resume` finishes it);
        # a queued batch leaves the status to the queue's retries
        expected = "interrupted" if async_way == "in-process" else "running"
        assert store.get_run(run_id).status == expected
        assert store.get_run(run_id).finished_at is None

        asyncio.run(execute(store, settings, run_id))
    trials = _trials(store, run_id)
    assert len(trials) == _pairs(store, run_id)
    run = store.get_run(run_id)
    assert run.status == "complete" and run.finished_at is not None


def test_a_failing_batch_interrupts_in_process_and_leaves_a_queued_run_to_its_retries(
    async_way: str, sqlite_url: str, fake: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MINDLEDGER_TEST_MISSING_KEY", raising=False)
    store, settings, run_id, _ = _setup(
        tmp_path, sqlite_url, fake.base_url, api_key_env="MINDLEDGER_TEST_MISSING_KEY"
    )
    assert store.transition_run(run_id, "queued")
    with pytest.raises(ConfigError, match="MINDLEDGER_TEST_MISSING_KEY is not set"):
        asyncio.run(ASYNC_WAYS[async_way](store, settings, run_id))
    status = store.get_run(run_id).status
    assert status == ("interrupted" if async_way == "in-process" else "running")
    assert fake.stats()["requests"] == 0


# -- the one function, directly -----------------------------------------------------------------


class Recorder:
    """A local model source that records when it is entered and left."""

    def __init__(self, url: str):
        self.url = url
        self.events: list[str] = []

    def __call__(self) -> contextlib.AbstractContextManager[str]:
        @contextlib.contextmanager
        def model() -> Iterator[str]:
            self.events.append("start")
            try:
                yield self.url
            finally:
                self.events.append("stop")

        return model()


def test_a_batch_is_agents_times_items_and_reports_what_it_did(
    sqlite_url: str, fake: FakeOpenAI, tmp_path: Path
) -> None:
    store, settings, run_id, n_items = _setup(tmp_path, sqlite_url, fake.base_url)
    ids = [it.id for it in store.run_items(run_id)]
    model = Recorder(fake.base_url)

    first = asyncio.run(
        execute_batch(store, settings, run_id, agents=["ref:oracle"], item_ids=ids[:3],
                      local_model=model, others_pending=lambda: True)
    )  # fmt: skip
    assert first.summary is not None and first.summary.attempted == 3
    assert store.done_pairs(run_id) == {("ref:oracle", i) for i in ids[:3]}
    assert first.status is None  # pairs missing, other work pending: still running
    assert store.get_run(run_id).status == "running"
    assert model.events == []  # no agent of the batch needed the embedded model

    again = asyncio.run(
        execute_batch(store, settings, run_id, agents=["ref:oracle"], item_ids=ids[:3])
    )
    assert again.summary is None  # nothing left to attempt
    assert again.status == "incomplete"  # and nothing else pending: it stops here

    with pytest.raises(UserError, match="has no agent named 'nobody'"):
        asyncio.run(execute_batch(store, settings, run_id, agents=["nobody"]))

    rest = asyncio.run(execute_batch(store, settings, run_id, local_model=model))
    assert rest.summary is not None
    assert rest.summary.attempted == _pairs(store, run_id) - 3
    assert rest.status == "complete"
    assert store.missing_pairs(run_id) == []
    assert len(_trials(store, run_id)) == 4 * n_items


def test_the_embedded_model_is_asked_for_once_per_batch_and_released_on_failure(
    sqlite_url: str, fake: FakeOpenAI, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, sqlite_url, fake.base_url)
    settings = replace(
        settings, agents={"loc": AgentConfig(name="loc", adapter="local", concurrency=2)}
    )
    store = Store(open_engine(sqlite_url))
    planned = plan_agents(settings, agents=["loc"], references=["oracle"])
    run_id, _, _ = create_run(store, settings, suite="quick", planned=planned, seed=12)
    model = Recorder(fake.base_url)

    result = asyncio.run(execute_batch(store, settings, run_id, local_model=model))
    assert result.status == "complete"
    assert model.events == ["start", "stop"]
    assert fake.stats()["requests"] > 0  # the local agents talked to the model it gave

    # a batch that fails after the model was started still releases it
    settings = replace(
        settings,
        agents={
            **settings.agents,
            "keyless": AgentConfig(
                name="keyless", endpoint=fake.base_url, api_key_env="MINDLEDGER_TEST_NO_KEY"
            ),
        },
    )
    planned = plan_agents(settings, agents=["loc", "keyless"])
    run_2, _, _ = create_run(store, settings, suite="quick", planned=planned, seed=12)
    model.events.clear()
    with pytest.raises(ConfigError, match="MINDLEDGER_TEST_NO_KEY is not set"):
        asyncio.run(execute_batch(store, settings, run_2, local_model=model))
    assert model.events == ["start", "stop"]
    assert store.get_run(run_2).status == "interrupted"
    assert store.trials(run_2) == []
