"""Runs past one machine: a run cut into procrastinate batches, executed by two workers.

On real PostgreSQL (``MINDLEDGER_TEST_PG_URL``), each test in a database of its own, since
procrastinate keeps its tables, types and functions in the database's default schema.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from harness.build import plan_agents
from harness.cli.main import main
from harness.runs import create_run
from harness.settings import Settings, load_settings
from ledger.db import normalise_url, open_engine
from ledger.store import Store

PG_URL = os.environ.get("MINDLEDGER_TEST_PG_URL", "")
REFERENCES = ("oracle", "random")


@pytest.fixture
def pg_database() -> Iterator[str]:
    """The URL of a fresh, empty database on the test server, dropped afterwards."""
    if not PG_URL:
        if os.environ.get("CI"):
            pytest.fail("MINDLEDGER_TEST_PG_URL is not set under CI: PostgreSQL tests must run")
        pytest.skip("MINDLEDGER_TEST_PG_URL not set")
    name = "mlq_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(normalise_url(PG_URL), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _setup(url: str) -> tuple[Store, Settings, str, int]:
    settings = load_settings(None, flags={"db_url": url})
    store = Store(open_engine(url))
    planned = plan_agents(settings, agents=(), references=REFERENCES)
    run_id, _, n_items = create_run(store, settings, suite="quick", planned=planned, seed=12)
    return store, settings, run_id, n_items


def _trial_counts(store: Store, run_id: str) -> list[int]:
    """How many trials each (agent, item) pair of the run has."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT count(*) FROM trials WHERE run_id = :r GROUP BY agent, item_id"),
            {"r": run_id},
        ).all()
    return [n for (n,) in rows]


def _cli(url: str, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = os.environ["MINDLEDGER_HOME"]
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli.main", "--db", url, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.postgres
def test_two_workers_run_every_pair_once(pg_database: str, isolated_home: Path) -> None:
    from harness.queue import conninfo, enqueue_run, pending_jobs

    store, settings, run_id, n_items = _setup(pg_database)
    enq = _cli(pg_database, "enqueue", run_id, "--batch-size", "3")
    out, err = enq.communicate(timeout=60)
    assert enq.returncode == 0, err
    n_batches = len(REFERENCES) * -(-n_items // 3)
    assert f"queued {n_batches} batch(es)" in out
    assert store.get_run(run_id).status == "queued"
    # queued once: enqueueing again before any worker ran queues nothing new
    assert enqueue_run(store, settings, run_id, batch_size=3) == 0
    assert len(pending_jobs(conninfo(settings), run_id)) == n_batches

    workers = [_cli(pg_database, "worker", "--once", "--name", f"w{i}") for i in (1, 2)]
    logs = [w.communicate(timeout=90) for w in workers]
    for w, (_, err) in zip(workers, logs, strict=True):
        assert w.returncode == 0, err

    counts = _trial_counts(store, run_id)
    assert len(counts) == len(REFERENCES) * n_items
    assert set(counts) == {1}
    run = store.get_run(run_id)
    assert run.status == "complete"
    assert run.finished_at is not None
    assert pending_jobs(conninfo(settings), run_id) == []
    assert sum(err.count(" trial(s) in ") for _, err in logs) == n_batches
    # a complete run queues nothing
    assert enqueue_run(store, settings, run_id, batch_size=3) == 0
    again = _cli(pg_database, "enqueue", run_id)
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 0
    assert "is complete" in out


@pytest.mark.postgres
def test_batch_executed_twice_writes_nothing_twice(pg_database: str, isolated_home: Path) -> None:
    from harness.queue import execute_batch, missing_batches

    store, settings, run_id, n_items = _setup(pg_database)
    batches = missing_batches(store, run_id, batch_size=n_items)
    assert [b.agent for b in batches] == [f"ref:{p}" for p in REFERENCES]
    first = batches[0]

    async def twice_at_once() -> list[int]:
        results = await asyncio.gather(
            *(execute_batch(store, settings, run_id, first.agent, first.item_ids) for _ in "ab")
        )
        return [s.per_agent[first.agent].trials if s is not None else 0 for s in results]

    stored = asyncio.run(twice_at_once())
    assert sum(stored) == n_items  # whoever lost the race stored nothing
    assert (
        asyncio.run(execute_batch(store, settings, run_id, first.agent, first.item_ids)) is None
    )  # and a third time there is nothing left to do
    counts = _trial_counts(store, run_id)
    assert len(counts) == n_items and set(counts) == {1}
    # the other agent has no trial and nothing is queued for it: incomplete, until enqueued
    assert store.get_run(run_id).status == "incomplete"

    second = batches[1]
    summary = asyncio.run(execute_batch(store, settings, run_id, second.agent, second.item_ids))
    assert summary is not None and summary.attempted == n_items
    assert store.get_run(run_id).status == "complete"
    assert set(_trial_counts(store, run_id)) == {1}
    assert missing_batches(store, run_id, batch_size=5) == []


@pytest.mark.postgres
def test_schema_applied_once(pg_database: str) -> None:
    from harness.queue import ensure_schema

    dsn = pg_database
    assert ensure_schema(dsn) is True
    assert ensure_schema(dsn) is False


@pytest.mark.parametrize("command", [["worker", "--once"], ["enqueue", "some-run"]])
def test_sqlite_is_refused(
    command: list[str], isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "x.db"
    with pytest.raises(SystemExit) as exc:
        main(["--db", f"sqlite:///{db}", *command])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "needs PostgreSQL" in err
    assert not db.exists()  # refused before anything was opened


@pytest.mark.postgres
def test_waiting_worker_picks_up_a_run_and_stops_on_sigterm(
    pg_database: str, isolated_home: Path
) -> None:
    import signal
    import time

    from harness.queue import enqueue_run

    store, settings, run_id, n_items = _setup(pg_database)
    worker = _cli(pg_database, "worker", "--concurrency", "2")
    try:
        assert enqueue_run(store, settings, run_id, batch_size=8) > 0
        deadline = time.monotonic() + 40
        while store.get_run(run_id).status != "complete" and time.monotonic() < deadline:
            assert worker.poll() is None, worker.communicate()
            time.sleep(0.3)
        assert store.get_run(run_id).status == "complete"
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert len(_trial_counts(store, run_id)) == len(REFERENCES) * n_items
    assert set(_trial_counts(store, run_id)) == {1}
