"""Runs past one machine: a run cut into procrastinate batches, executed by two workers, some
of which die.

On real PostgreSQL (``MINDLEDGER_TEST_PG_URL``), each test in a database of its own, since
procrastinate keeps its tables, types and functions in the database's default schema.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from harness.cli.main import main
from harness.config.settings import Settings, load_settings
from harness.run.build import plan_agents
from harness.run.runs import create_run
from ledger.db import normalise_url, open_engine
from ledger.store import Store
from tests.postgres import fresh_database

REFERENCES = ("oracle", "random")


@pytest.fixture
def pg_database() -> Iterator[str]:
    """The URL of a fresh, empty database on the test server, dropped afterwards."""
    with fresh_database("mlq_") as url:
        yield url


def _setup(
    url: str, *, agents: tuple[str, ...] = (), references: tuple[str, ...] = REFERENCES
) -> tuple[Store, Settings, str, int]:
    settings = load_settings(None, flags={"db_url": url})
    store = Store(open_engine(url))
    planned = plan_agents(settings, agents=agents, references=references)
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
    from harness.queue.batches import Enqueued, conninfo, enqueue_run, pending_jobs

    store, settings, run_id, n_items = _setup(pg_database)
    enq = _cli(pg_database, "enqueue", run_id, "--batch-size", "3")
    out, err = enq.communicate(timeout=60)
    assert enq.returncode == 0, err
    n_batches = len(REFERENCES) * -(-n_items // 3)
    assert f"queued {n_batches} new batch(es)" in out
    assert store.get_run(run_id).status == "queued"
    # queued once: enqueueing again before any worker ran queues nothing new
    requeue = enqueue_run(store, settings, run_id, batch_size=3)
    assert (requeue.deferred, requeue.retried, requeue.held) == (0, 0, n_batches)
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
    assert enqueue_run(store, settings, run_id, batch_size=3) == Enqueued(0, 0, 0, complete=True)
    again = _cli(pg_database, "enqueue", "latest")  # a run is named as everywhere else
    out, _ = again.communicate(timeout=60)
    assert again.returncode == 0
    assert f"run {run_id} is complete" in out
    unknown = _cli(pg_database, "enqueue", "nosuchrun")
    _, err = unknown.communicate(timeout=60)
    assert unknown.returncode == 2 and "nosuchrun" in err, err


@pytest.mark.postgres
def test_batch_executed_twice_writes_nothing_twice(pg_database: str, isolated_home: Path) -> None:
    from harness.queue.batches import execute_batch, missing_batches

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
    from harness.queue.batches import ensure_schema

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

    from harness.queue.batches import enqueue_run

    store, settings, run_id, n_items = _setup(pg_database)
    worker = _cli(pg_database, "worker", "--concurrency", "2")
    try:
        assert enqueue_run(store, settings, run_id, batch_size=8).deferred > 0
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


# -- workers that die ---------------------------------------------------------------------------


def _jobs(url: str) -> dict[int, tuple[str, int, dict[str, object]]]:
    """Every batch job: id → (status, attempts, arguments)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT id, status, attempts, args FROM procrastinate_jobs").fetchall()
    return {job_id: (str(status), attempts, dict(args)) for job_id, status, attempts, args in rows}


def _age_heartbeat(url: str, worker_id: int) -> None:
    """Make a registered worker look dead: its last heartbeat an hour ago."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute(
            "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 hour' "
            "WHERE id = %s",
            (worker_id,),
        )


async def _take(settings: Settings, takers: list[str]) -> dict[str, list[int]]:
    """Register a procrastinate worker per distinct name in ``takers`` and let it fetch one job
    (status ``doing``) per mention, without running it. Returns job ids by worker name, and
    worker ids under ``"id:NAME"``."""
    from harness.queue.batches import QUEUE, make_app

    app = make_app(settings, max_pool=2)
    out: dict[str, list[int]] = {}
    async with app.open_async():
        jm = app.job_manager
        for name in takers:
            if f"id:{name}" not in out:
                out[f"id:{name}"] = [await jm.register_worker()]
            job = await jm.fetch_job(queues=[QUEUE], worker_id=out[f"id:{name}"][0])
            assert job is not None and job.id is not None
            out.setdefault(name, []).append(job.id)
    return out


async def _fail(settings: Settings, job_id: int) -> None:
    from procrastinate.jobs import Status

    from harness.queue.batches import make_app

    app = make_app(settings, max_pool=2)
    async with app.open_async():
        await app.job_manager.finish_job_by_id_async(job_id, Status.FAILED, delete_job=False)


@pytest.mark.postgres
def test_enqueue_requeues_what_no_live_worker_holds(pg_database: str, isolated_home: Path) -> None:
    from harness.queue.batches import Enqueued, enqueue_run, pending_jobs

    store, settings, run_id, n_items = _setup(pg_database)
    half = -(-n_items // 2)
    assert enqueue_run(store, settings, run_id, batch_size=half).deferred == 4
    taken = asyncio.run(_take(settings, ["dead", "live", "live"]))
    (dead_job,), (live_job, failed_job) = taken["dead"], taken["live"]
    asyncio.run(_fail(settings, failed_job))  # the live worker's second batch raised for good
    _age_heartbeat(pg_database, taken["id:dead"][0])
    (waiting_job,) = set(_jobs(pg_database)) - {dead_job, live_job, failed_job}

    again = enqueue_run(store, settings, run_id, batch_size=half)
    # the dead worker's batch goes back to the queue (the same job, one attempt more), the
    # failed batch's trials go out in a new one, and the live and the queued batch stay
    assert again == Enqueued(deferred=1, retried=1, held=2, complete=False)
    jobs = _jobs(pg_database)
    assert jobs[dead_job][:2] == ("todo", 1)
    assert jobs[live_job][:2] == ("doing", 0)
    assert jobs[failed_job][0] == "failed"
    assert jobs[waiting_job][:2] == ("todo", 0)
    (new_job,) = set(jobs) - {dead_job, live_job, failed_job, waiting_job}
    assert jobs[new_job][2] == jobs[failed_job][2]
    assert len(pending_jobs(pg_database, run_id)) == 4
    # and nothing is queued twice
    assert enqueue_run(store, settings, run_id, batch_size=half) == Enqueued(0, 0, 4, False)
    cli = _cli(pg_database, "enqueue", run_id)
    out, err = cli.communicate(timeout=60)
    assert cli.returncode == 0, err
    assert "running on a live worker" in out and "no heartbeat for 30 s" in out


@pytest.mark.postgres
def test_batch_that_keeps_dying_is_failed_then_enqueue_and_a_worker_finish(
    pg_database: str, isolated_home: Path
) -> None:
    from harness.queue.batches import (
        MAX_ATTEMPTS,
        Recovery,
        conninfo,
        enqueue_run,
        make_app,
        recover_stalled_work,
        run_worker,
    )

    store, settings, run_id, n_items = _setup(pg_database, references=("oracle",))
    assert enqueue_run(store, settings, run_id, batch_size=n_items).deferred == 1
    taken = asyncio.run(_take(settings, ["dead"]))
    (job_id,) = taken["dead"]
    _age_heartbeat(pg_database, taken["id:dead"][0])
    with sa.create_engine(normalise_url(pg_database)).begin() as conn:
        conn.execute(
            sa.text("UPDATE procrastinate_jobs SET attempts = :n WHERE id = :id"),
            {"n": MAX_ATTEMPTS, "id": job_id},
        )

    async def sweep() -> Recovery:
        app = make_app(settings, max_pool=2)
        async with app.open_async():
            return await recover_stalled_work(app, store, conninfo(settings))

    assert asyncio.run(sweep()) == Recovery(failed=(job_id,))
    assert _jobs(pg_database)[job_id][0] == "failed"
    assert store.get_run(run_id).status == "incomplete"  # nothing of it is pending any more
    assert asyncio.run(sweep()) == Recovery()  # swept once

    assert enqueue_run(store, settings, run_id).deferred == 1
    asyncio.run(run_worker(store, settings, once=True, install_signal_handlers=False))
    assert store.get_run(run_id).status == "complete"
    assert _trial_counts(store, run_id) == [1] * n_items


def test_store_lists_runs_with_every_trial_but_not_marked_complete(
    db_url: str, isolated_home: Path
) -> None:
    from harness.run.runs import execute_stored_run

    store, settings, done_id, _ = _setup(db_url, references=("oracle",))
    asyncio.run(execute_stored_run(store, settings, done_id))
    _, _, empty_id, _ = _setup(db_url, references=("oracle",))
    assert store.get_run(empty_id).status == "running"
    assert store.complete_but_unmarked_runs() == []
    store.set_run_status(done_id, "running")  # its process died before it said complete
    assert store.complete_but_unmarked_runs() == [done_id]
    with store.engine.begin() as conn:  # one trial short is not complete
        conn.execute(
            sa.text("DELETE FROM trials WHERE id = (SELECT min(id) FROM trials WHERE run_id = :r)"),
            {"r": done_id},
        )
    assert store.complete_but_unmarked_runs() == []


@pytest.mark.postgres
def test_worker_and_enqueue_mark_complete_a_run_whose_trials_are_all_stored(
    pg_database: str, isolated_home: Path
) -> None:
    from harness.queue.batches import Enqueued, enqueue_run, run_worker
    from harness.run.runs import execute_stored_run

    store, settings, first, _ = _setup(pg_database, references=("oracle",))
    _, _, second, _ = _setup(pg_database, references=("oracle",))
    asyncio.run(execute_stored_run(store, settings, first))
    store.set_run_status(first, "running")  # left running by a process that died
    assert enqueue_run(store, settings, first) == Enqueued(0, 0, 0, complete=True)
    assert store.get_run(first).finished_at is not None
    asyncio.run(execute_stored_run(store, settings, second))
    store.set_run_status(second, "interrupted")  # say, Ctrl-C as the last trial was stored
    asyncio.run(run_worker(store, settings, once=True, install_signal_handlers=False))
    assert store.get_run(second).status == "complete"
    assert store.get_run(second).finished_at is not None


def _held_forecast(settings: Settings, run_id: str, predictor: str) -> str:
    """Commit a forecast of ``predictor``'s false-belief accuracy in ``run_id`` that the
    service holds (it reveals it when the run ends); returns its id."""
    from harness.config.workspace import Workspace
    from ledger import new_salt
    from ledger.protocol import commitment
    from mindledger.forecasts import forecast_body, parse_forecast

    quantiles = {"form": "quantiles", "levels": [0.05, 0.5, 0.95], "values": [0.5, 0.9, 1.0]}
    body, salt = forecast_body(parse_forecast(quantiles), "the oracle knows"), new_salt()
    ws = Workspace.open(settings)
    try:
        state = ws.ledger.commit_forecast(predictor, run_id, "false_belief_accuracy",
                                          commitment(body, salt), held=(body, salt.hex()))  # fmt: skip
    finally:
        ws.ledger.close()
        ws.engine.dispose()
    return state.id


def _executed_unsettled(store: Store, settings: Settings, run_id: str) -> None:
    """Execute the run as a process that died after its last trial, before it settled the
    run (so before it revealed the run's held forecasts): the run stays ``running``."""
    from harness.run.runs import execute_stored_run

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("harness.run.execution.settle_run", lambda *a, **kw: None)
        asyncio.run(execute_stored_run(store, settings, run_id))
    assert store.get_run(run_id).status == "running"


def test_finishing_a_run_nobody_marked_reveals_the_forecasts_held_for_it(
    db_url: str, isolated_home: Path
) -> None:
    """The queue's recovery completes a run whose trials are all stored
    (:func:`finish_if_done`): with the settings it reveals and scores the run's held forecasts,
    as the batch that settles a run does."""
    from harness.queue.batches import finish_if_done
    from ledger.forecasts import read_forecasts

    store, settings, run_id, _ = _setup(db_url, references=("oracle",))
    (oracle,) = (ra.name for ra in store.run_agents(run_id))
    fid = _held_forecast(settings, run_id, oracle)
    _executed_unsettled(store, settings, run_id)
    assert [f.status for f in read_forecasts(store.engine, run_id=run_id)] == ["committed"]
    assert finish_if_done(store, run_id, settings=settings) == "complete"
    (state,) = read_forecasts(store.engine, run_id=run_id)
    assert (state.id, state.status, state.outcome) == (fid, "scored", 1.0)
    assert finish_if_done(store, run_id, settings=settings) is None  # complete already


@pytest.mark.postgres
def test_the_recovery_sweep_reveals_what_it_completes(
    pg_database: str, isolated_home: Path
) -> None:
    """A worker's sweep (:func:`recover_stalled_work`, when it starts) completes the runs whose
    trials are all stored and reveals the forecasts held for them."""
    from harness.queue.batches import enqueue_run, run_worker
    from ledger.forecasts import read_forecasts

    ids = []
    for _ in range(2):
        store, settings, run_id, _ = _setup(pg_database, references=("oracle",))
        (oracle,) = (ra.name for ra in store.run_agents(run_id))
        _held_forecast(settings, run_id, oracle)
        _executed_unsettled(store, settings, run_id)
        ids.append(run_id)
    asyncio.run(run_worker(store, settings, once=True, install_signal_handlers=False))
    for run_id in ids:
        assert store.get_run(run_id).status == "complete"
        (state,) = read_forecasts(store.engine, run_id=run_id)
        assert state.status == "scored", state
    assert enqueue_run(store, settings, ids[0]).complete


@pytest.mark.parametrize("command", ["worker", "enqueue"])
def test_help_says_what_happens_to_stalled_work(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.queue.batches import MAX_ATTEMPTS, STALLED_AFTER

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--stalled-after" in text and f"default: {STALLED_AFTER}" in text
    assert "heartbeat" in text and "stalled" in text and "put back in the queue" in text
    if command == "worker":
        assert f"retried at most {MAX_ATTEMPTS} times" in text


@pytest.mark.postgres
def test_sigkill_both_workers_then_a_new_worker_finishes_the_run(
    pg_database: str, isolated_home: Path
) -> None:
    """Two workers are killed mid-run; a third, started afterwards, re-queues their stalled
    batches once their heartbeats are 6 s old and completes the run: every trial once."""
    import re
    import signal
    import time

    from harness.queue.batches import Enqueued, enqueue_run, pending_jobs
    from harness.testing import FakeOpenAI

    stalled_after = "6"  # heartbeats every 2 s
    with FakeOpenAI(latency=0.2) as fake:  # ≈0.4 s a trial (an answer and a nudge)
        Path("mindledger.toml").write_text(
            f'[agents.slowbot]\nadapter = "openai"\nendpoint = "{fake.base_url}"\n'
            'model = "m"\nconcurrency = 1\n'
        )
        store, settings, run_id, n_items = _setup(pg_database, agents=("slowbot",), references=())
        total = 2 * n_items  # slowbot and its control
        n_batches = enqueue_run(store, settings, run_id, batch_size=4).deferred
        assert n_batches == 2 * -(-n_items // 4)

        def wait_for(what: str, ok: Callable[[], bool], procs: list[subprocess.Popen[str]]) -> None:
            deadline = time.monotonic() + 90
            while not ok():
                for p in procs:
                    assert p.poll() is None, p.communicate()
                assert time.monotonic() < deadline, f"timed out waiting for {what}"
                time.sleep(0.05)

        args = ("worker", "--stalled-after", stalled_after)
        first = [_cli(pg_database, *args, "--name", f"w{i}") for i in (1, 2)]
        try:
            wait_for("a stored trial", lambda: len(_trial_counts(store, run_id)) >= 1, first)
        finally:
            for w in first:
                w.send_signal(signal.SIGKILL)
                w.communicate(timeout=30)
        stored = len(_trial_counts(store, run_id))
        assert 0 < stored < total
        stranded = {j for j, (status, _, _) in _jobs(pg_database).items() if status == "doing"}
        assert stranded  # each killed worker was in the middle of a batch
        assert store.get_run(run_id).status == "running"
        # nothing to queue afresh: every missing trial is in a batch, queued or held
        held = len(pending_jobs(pg_database, run_id))
        assert enqueue_run(store, settings, run_id, stalled_after=3600) == Enqueued(
            0, 0, held, False
        )

        third = _cli(pg_database, *args, "--concurrency", "4", "--name", "w3")
        try:
            wait_for(
                "the run to complete", lambda: store.get_run(run_id).status == "complete", [third]
            )
            # a killed batch whose trials were all stored is re-queued too, then finds nothing
            wait_for("no batch left", lambda: not pending_jobs(pg_database, run_id), [third])
        finally:
            third.send_signal(signal.SIGTERM)
            _, err = third.communicate(timeout=60)
    assert third.returncode == 0, err

    counts = _trial_counts(store, run_id)
    assert len(counts) == total and set(counts) == {1}
    assert store.get_run(run_id).finished_at is not None
    assert pending_jobs(pg_database, run_id) == []
    requeued = {int(j) for m in re.findall(r"\(job ([\d, ]+)\)", err) for j in m.split(", ")}
    assert stranded <= requeued, err  # the new worker put the dead ones' batches back
