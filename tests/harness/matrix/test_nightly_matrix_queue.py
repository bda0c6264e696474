"""The nightly matrix on PostgreSQL: one job deferred beside the suite run, which a worker
turns into the matrix run (a fixed id) and its queued items; deferred again, or run again,
it plans nothing twice. And the daemon's nightly retention job.

On real PostgreSQL (``MINDLEDGER_TEST_PG_URL``), a database per test (see test_queue.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from harness.config.schedule_config import MatrixSchedule
from harness.config.settings import load_settings
from harness.config.workspace import Workspace
from harness.daemon import DaemonContext, DaemonScheduler
from harness.matrix.nightly import schedule_from_json, schedule_to_json
from harness.matrix.runs import stored_summary
from ledger.retention import pruned_transcript
from ledger.store import Store
from tests.harness.queue.test_queue import _jobs, pg_database  # noqa: F401  (a fixture)


def test_a_schedule_travels_as_a_job_argument_unchanged() -> None:
    for schedule in (
        MatrixSchedule(),
        MatrixSchedule(
            pilot=False,
            queue=True,
            candidates=40,
            kinds=("failure", "open"),
            conditions=("zero-shot", "observe:3"),
            second_order=True,
        ),
    ):
        assert schedule_from_json(schedule_to_json(schedule)) == schedule


@pytest.mark.postgres
def test_the_nightly_matrix_is_queued_planned_by_a_worker_and_never_twice(
    pg_database: str,  # noqa: F811
    isolated_home: Path,
) -> None:
    from harness.queue.batches import defer_nightly_matrix, run_worker

    settings = load_settings(None, flags={"db_url": pg_database})
    with Workspace.open(settings) as ws:
        ctx = DaemonContext(
            settings, ws.store, ws.ledger, matrix_items=3, matrix_samples=2, matrix_pilot=False
        )
        assert ctx.matrix.queued(True) and not ctx.matrix.queued(False)
        suite_run = ctx.plan_run(suite="quick", references=["habit", "projection"])
        ctx.execute(suite_run)
        matrix_run = ctx.run_matrix_beside(suite_run)
        assert matrix_run == f"{suite_run}-matrix"
        # queued, not run: no matrix run is stored until a worker plans it
        assert [r.suite for r in ws.store.list_runs()] == ["quick"]
        (job,) = _jobs(pg_database).values()
        assert job[2] == {"suite_run": suite_run, "schedule": schedule_to_json(ctx.matrix)}
        # deferred again while queued (the daemon restarted and ran the job again): one job
        assert defer_nightly_matrix(settings, suite_run, schedule_to_json(ctx.matrix)) == (
            matrix_run
        )
        assert len(_jobs(pg_database)) == 1
        # the dashboard's queue shows the job as the matrix run it will plan
        from harness.cli.dashboard_cmd import queue_reader

        (shown,) = queue_reader(ws.store)().batches
        assert (shown.run_id, shown.agent, shown.status) == (matrix_run, "plan (nightly)", "todo")

        asyncio.run(run_worker(ws.store, settings, once=True, install_signal_handlers=False))
        run = ws.store.get_run(matrix_run)
        assert run.status == "complete" and run.held_out
        summary = stored_summary(ws.store, matrix_run, n_boot=100).to_dict()
        assert summary["accompanies"] == suite_run and summary["n_items"] == 3
        assert summary["agents"] == ["ref:habit", "ref:projection"]
        trials = len(ws.store.trials(matrix_run))
        commits = [e for e in ws.ledger.entries() if e.kind == "commit"]
        assert len(commits) == 3 * 2 * 2  # items × predictors × targets

        # the job run again (a retry, or deferred once more after it finished): the run is
        # found stored and complete; nothing is piloted, asked or committed again
        defer_nightly_matrix(settings, suite_run, schedule_to_json(ctx.matrix))
        asyncio.run(run_worker(ws.store, settings, once=True, install_signal_handlers=False))
        assert len(ws.store.trials(matrix_run)) == trials
        assert len([e for e in ws.ledger.entries() if e.kind == "commit"]) == len(commits)
        assert [r.id for r in ws.store.list_runs() if r.suite == "matrix"] == [matrix_run]
        assert _jobs(pg_database) == {}  # every job succeeded (and was deleted)
        assert ws.ledger.verify() == []


def test_the_daemon_prunes_transcripts_nightly_when_retention_is_set(
    tmp_path: Path, sqlite_url: str
) -> None:
    base = load_settings(None, env={}, flags={"db_url": sqlite_url, "home": str(tmp_path)})
    with Workspace.open(base) as ws:
        ctx = DaemonContext(base, ws.store)
        old = ctx.plan_run(suite="quick", references=["oracle"])
        ctx.execute(old)
        sched = DaemonScheduler(ws.engine, ctx, expire_every=None)
        sched.start(paused=True)
        assert "prune-transcripts" not in {j["id"] for j in sched.jobs()}
        assert ctx.prune() is None  # no retention: nothing is pruned
        sched.shutdown()

        settings = replace(base, retention_transcripts_days=30)
        later = Store(ws.engine, clock=lambda: "2099-01-01T00:00:00.000000+00:00")
        ctx = DaemonContext(settings, later)
        sched = DaemonScheduler(ws.engine, ctx, expire_every=None)
        sched.start(paused=True)
        jobs = {j["id"]: j for j in sched.jobs()}
        assert jobs["prune-transcripts"]["trigger"] == str(sched.trigger)  # the nightly one
        report = ctx.prune()
        assert report is not None and report.trials == len(ws.store.trials(old)) > 0
        assert all(
            pruned_transcript(t.transcript_json) == "2099-01-01" for t in ws.store.trials(old)
        )
        sched.shutdown()
        # the setting removed: the stored job goes with it
        sched = DaemonScheduler(ws.engine, DaemonContext(base, ws.store), expire_every=None)
        sched.start(paused=True)
        assert "prune-transcripts" not in {j["id"] for j in sched.jobs()}
        sched.shutdown()


@pytest.mark.postgres
def test_a_nightly_matrix_job_whose_worker_died_is_retried_and_resumes_the_run(
    pg_database: str,  # noqa: F811
    isolated_home: Path,
) -> None:
    from harness.matrix.nightly import plan_matrix_beside
    from harness.queue.batches import run_worker
    from tests.harness.queue.test_queue import _age_heartbeat, _take

    settings = load_settings(None, flags={"db_url": pg_database})
    with Workspace.open(settings) as ws:
        ctx = DaemonContext(
            settings, ws.store, ws.ledger, matrix_items=3, matrix_samples=2, matrix_pilot=False
        )
        suite_run = ctx.plan_run(suite="quick", references=["habit", "projection"])
        ctx.execute(suite_run)
        matrix_run = ctx.run_matrix_beside(suite_run)
        taken = asyncio.run(_take(settings, ["dead"]))
        # the dead worker had planned the run, and queued nothing, when it died
        assert plan_matrix_beside(ws.store, settings, suite_run, ctx.matrix) == matrix_run
        assert ws.store.trials(str(matrix_run)) == []
        _age_heartbeat(pg_database, taken["id:dead"][0])

        asyncio.run(run_worker(ws.store, settings, once=True, install_signal_handlers=False))
        assert _jobs(pg_database) == {}  # retried by the stall sweep, then its batches ran
        assert ws.store.get_run(str(matrix_run)).status == "complete"
        assert [r.id for r in ws.store.list_runs() if r.suite == "matrix"] == [matrix_run]
        assert len([e for e in ws.ledger.entries() if e.kind == "commit"]) == 3 * 2 * 2
        assert ws.ledger.verify() == []
