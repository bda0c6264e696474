"""What the harness hands the dashboard: the daemon's schedule (from the ``[schedule]`` cron
expression and the jobs the daemon stored) and the worker queue (procrastinate's tables on
PostgreSQL; none on SQLite), read from real databases."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa

from harness.cli.dashboard_cmd import queue_reader, schedule_reader
from harness.config.settings import AgentConfig, Settings, load_settings
from harness.daemon import DaemonContext, DaemonScheduler
from ledger.db import open_engine
from ledger.store import Store
from tests.postgres import fresh_database
from tui.operations import queue_view, schedule_view

from .conftest import Seeded


def _settings(tmp_path: Path, db_url: str, *agents: str, schedule: str = "0 3 * * *") -> Settings:
    settings = load_settings(None, env={}, flags={"db_url": db_url, "home": str(tmp_path)})
    return replace(settings, schedule=schedule, agents={
        n: AgentConfig(name=n, adapter="reference", policy="oracle") for n in agents})


def test_jobs_not_stored_yet_are_computed_from_the_cron_expression(
    nightly: Seeded, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, "sqlite://", "piper", "wren", schedule="15 */8 * * *")
    settings = replace(settings, schedule_ablations={"piper": ("tom",)})
    snap = schedule_reader(settings, nightly.store, suite="synthetic", clock=nightly.clock)()
    assert snap.expression == "15 */8 * * *"
    assert snap.now == "2026-03-05T12:00:00+00:00"
    piper, wren = snap.jobs
    assert (piper.id, wren.id) == ("nightly:piper", "nightly:wren")
    assert not piper.stored and piper.trigger == "15 */8 * * *"
    assert piper.next_runs == ("2026-03-05T16:15:00+00:00", "2026-03-06T00:15:00+00:00",
                               "2026-03-06T08:15:00+00:00")  # fmt: skip
    # the last held-out run of the agent under test, not the development run-a
    assert piper.last_run is not None and piper.last_run.id == "night-4"
    assert piper.last_run.seed is None  # withheld
    assert wren.last_run is None
    view = schedule_view(snap)
    assert view.rows[0][2:5] == ("2026-03-05 16:15", "in 4 h 15 min", "03-06 00:15 · 03-06 08:15")
    assert "has not stored these jobs yet" in view.notes[0]
    assert view.details[0] == (
        "nightly:piper: nightly synthetic suite and matrix of piper, ablating tom · next runs "
        "2026-03-05 16:15, 2026-03-06 00:15, 2026-03-06 08:15 · last run night-4, complete: "
        "piper 60% · piper-control 72% · flat 77%")
    # another suite's runs are not this job's: the quick suite's last is run-empty, running
    other = schedule_reader(settings, nightly.store, suite="quick", clock=nightly.clock)()
    last = other.jobs[0].last_run
    assert last is not None and (last.id, last.status) == ("run-empty", "running")


def test_a_bad_cron_expression_is_named(nightly: Seeded, tmp_path: Path) -> None:
    settings = _settings(tmp_path, "sqlite://", "piper", schedule="every night")
    snap = schedule_reader(settings, nightly.store, clock=nightly.clock)()
    assert snap.notes[0].startswith("schedule: expected a cron expression like '0 3 * * *', "
                                    "got 'every night'")
    assert snap.jobs[0].next_runs == ()


def test_jobs_the_daemon_stored_keep_their_stored_next_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    settings = _settings(tmp_path, url, "piper")
    store = Store(open_engine(url))
    daemon = DaemonScheduler(store.engine, DaemonContext(settings, store), expire_every=300)
    daemon.start(paused=True)
    stored = {j["id"]: j for j in daemon.jobs()}
    daemon.shutdown()
    snap = schedule_reader(_settings(tmp_path, url, "piper", "wren"), store)()
    jobs = {j.id: j for j in snap.jobs}
    assert set(jobs) == {"nightly:piper", "nightly:wren", "expire-predictions"}
    assert jobs["nightly:piper"].stored and not jobs["nightly:wren"].stored
    assert jobs["nightly:piper"].next_runs[0] == stored["nightly:piper"]["next_run_time"]
    assert all(t.endswith("T03:00:00+00:00") for t in jobs["nightly:piper"].next_runs)
    expire = jobs["expire-predictions"]
    assert expire.trigger == "every 300 s" and expire.name == "expire overdue predictions"
    first = dt.datetime.fromisoformat(expire.next_runs[0])
    assert [dt.datetime.fromisoformat(t) - first for t in expire.next_runs] == [
        dt.timedelta(seconds=s) for s in (0, 300, 600)]
    view = schedule_view(snap)
    assert view.notes == ("Not stored by the daemon yet (computed from the schedule): "
                          "nightly:wren",)
    store.engine.dispose()


def test_no_queue_on_sqlite(seeded: Seeded) -> None:
    snap = queue_reader(seeded.store)()
    assert not snap.available
    view = queue_view(snap)
    assert view.headline.startswith("no queue: the database is SQLite")
    assert view.batch_rows == () and view.worker_rows == ()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database on the test server (procrastinate's schema is per database)."""
    with fresh_database("mlt_") as url:
        yield url


@pytest.mark.postgres
def test_the_queue_shows_batches_workers_and_a_stalled_batch(
    pg_url: str, tmp_path: Path
) -> None:
    from harness.queue.batches import enqueue_run
    from harness.run.build import plan_agents
    from harness.run.runs import create_run

    settings = load_settings(None, env={}, flags={"db_url": pg_url, "home": str(tmp_path)})
    store = Store(open_engine(pg_url))
    empty = queue_reader(store)()  # PostgreSQL, nothing ever queued
    assert empty.available and empty.batches == () and empty.workers == ()
    planned = plan_agents(settings, agents=(), references=("oracle",), no_control=True)
    run_id, _, n_items = create_run(store, settings, suite="quick", planned=planned, seed=12)
    enq = enqueue_run(store, settings, run_id, batch_size=3)
    snap = queue_reader(store, stalled_after=30)()
    assert len(snap.batches) == enq.deferred == -(-n_items // 3)
    assert {(b.run_id, b.agent, b.status) for b in snap.batches} == {(run_id, "ref:oracle",
                                                                       "todo")}
    assert sum(b.items for b in snap.batches) == n_items
    # two workers took a batch each; one has been silent for 100 s (dead), one beat just now
    first, second = sorted(b.job_id for b in snap.batches)[:2]
    with store.engine.begin() as conn:
        dead = conn.execute(sa.text(
            "INSERT INTO procrastinate_workers (last_heartbeat) VALUES "
            "(now() - interval '100 seconds') RETURNING id")).scalar_one()
        alive = conn.execute(sa.text(
            "INSERT INTO procrastinate_workers DEFAULT VALUES RETURNING id")).scalar_one()
        for job, worker in ((first, dead), (second, alive)):
            conn.execute(sa.text("UPDATE procrastinate_jobs SET status = 'doing', worker_id = :w, "
                                 "attempts = 1 WHERE id = :j"), {"w": worker, "j": job})
    snap = queue_reader(store, stalled_after=30)()
    by_id = {b.job_id: b for b in snap.batches}
    assert by_id[first].stalled and by_id[first].worker_id == dead
    assert not by_id[second].stalled and by_id[second].status == "doing"
    view = queue_view(snap)
    n = len(snap.batches)
    assert view.headline.startswith(
        f"{n - 2} queued · 1 running · 1 stalled · 0 failed · 1 of 2 workers alive")
    assert view.batch_states[:2] == ("stalled", "running")  # stalled first
    assert [r[4] for r in view.worker_rows] == ["stalled", "alive"]
    store.engine.dispose()
