"""``mindledger dashboard``: the terminal dashboard over the configured database.

The dashboard (:mod:`tui`) sits below the harness and may not import it, so what only the
harness knows is handed in as functions called in the dashboard's workers: the prediction
ledger's opener, the daemon's schedule (:func:`schedule_reader`) and the worker queue
(:func:`queue_reader`).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import pickle
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.cli.common import get_settings, get_workspace
from harness.cli.conventions import SEED
from harness.config.settings import Settings
from ledger.clock import Clock, utc_now
from mindledger.errors import NotFoundError
from tui.operations import QueueBatch, QueueSnapshot, QueueWorker, ScheduledJob, ScheduleSnapshot
from tui.source import DashboardSource, run_summary
from tui.state import RunSummary

if TYPE_CHECKING:  # SQLAlchemy, the Store and the ledger load when a screen first needs them
    import sqlalchemy as sa

    from harness.config.workspace import Workspace
    from ledger.predictions import Ledger
    from ledger.store import Store

__all__ = ["dashboard", "dashboard_source", "ledger_opener", "queue_reader", "schedule_reader"]


RUNS_AHEAD = 3
"""Next run times shown per scheduled job."""


def ledger_opener(workspace: Workspace) -> Callable[[], Ledger]:
    """A function (called in a worker) that opens a fresh prediction ledger of ``workspace``
    (the caller closes it); it refuses, rather than create a service key, when there is none."""

    def open_it() -> Ledger:
        from tui.source import NoLedger

        if not workspace.has_service_key:
            raise NoLedger(
                f"no service key in {workspace.settings.home} (nothing has been committed "
                "here yet; see `mindledger ledger --help`)"
            )
        return workspace.new_ledger(heads_file=False)

    return open_it


# -- the schedule -----------------------------------------------------------------------------


def _stored_jobs(engine: sa.Engine) -> dict[str, tuple[dt.datetime | None, dict[str, Any]]]:
    """The daemon's stored jobs (APScheduler's table): id → (next run time, job state)."""
    import sqlalchemy as sa

    from harness.daemon.scheduler import JOBS_TABLE

    if not sa.inspect(engine).has_table(JOBS_TABLE):
        return {}
    table = sa.table(JOBS_TABLE, sa.column("id"), sa.column("next_run_time"),
                     sa.column("job_state"))
    out: dict[str, tuple[dt.datetime | None, dict[str, Any]]] = {}
    with engine.connect() as conn:
        for job_id, nrt, state in conn.execute(sa.select(table)):
            try:
                # APScheduler's own pickle of its own job, in mindledger's own database
                job_state = pickle.loads(state)
            except Exception:  # a job of a function this version no longer has
                job_state = {}
            when = None if nrt is None else dt.datetime.fromtimestamp(float(nrt), dt.UTC)
            out[str(job_id)] = (when, job_state if isinstance(job_state, dict) else {})
    return out


def _next_runs(trigger: Any, first: dt.datetime | None, now: dt.datetime) -> tuple[str, ...]:
    """``RUNS_AHEAD`` fire times of ``trigger``: from ``first`` (the stored next run time) if
    given, else from ``now``."""
    times: list[dt.datetime] = []
    t = first if first is not None else trigger.get_next_fire_time(None, now)
    while t is not None and len(times) < RUNS_AHEAD:
        times.append(t)
        t = trigger.get_next_fire_time(t, t + dt.timedelta(microseconds=1))
    return tuple(x.astimezone(dt.UTC).isoformat() for x in times)


def _last_run(
    store: Store, agent: str | None, suite: str | None, run_id: str | None, share: float
) -> RunSummary | None:
    """The latest held-out suite run of ``agent`` as the agent under test (what its nightly
    job makes), or run ``run_id``; None when there is none."""
    import sqlalchemy as sa

    from ledger.models import RunAgentRow, RunRow

    if run_id is not None:
        try:
            return run_summary(store, run_id, max_failure_share=share)
        except NotFoundError:  # the run-now request's run is gone
            return None
    runs = RunRow.__table__  # type: ignore[attr-defined]
    ra = RunAgentRow.__table__  # type: ignore[attr-defined]
    stmt = (
        sa.select(runs.c.id)
        .join(ra, ra.c.run_id == runs.c.id)
        .where(ra.c.agent == agent, ra.c.role == "agent", runs.c.held_out.is_(True),
               runs.c.suite != "matrix")
        .order_by(runs.c.created_at.desc(), runs.c.id.desc())
        .limit(1)
    )
    if suite is not None:
        stmt = stmt.where(runs.c.suite == suite)
    with store.engine.connect() as conn:
        found = conn.execute(stmt).scalar()
    if found is None:
        return None
    return run_summary(store, str(found), max_failure_share=share)


def schedule_reader(
    settings: Settings, store: Store, *, suite: str = "quick", clock: Clock = utc_now
) -> Callable[[], ScheduleSnapshot]:
    """A function (called in a worker) that reads the daemon's schedule: the ``[schedule]``
    cron expression and, for every job, its next ``RUNS_AHEAD`` run times and the last run it
    made. A job the daemon has stored (``mindledger serve`` stores them) starts from its
    stored next run time; the nightly job of a declared agent not stored yet is computed from
    the expression as of ``clock()``. ``suite`` is the nightly suite assumed for jobs not
    stored yet (``serve --suite``)."""

    def read() -> ScheduleSnapshot:
        from harness.daemon.scheduler import NIGHTLY_PREFIX, RUN_PREFIX, crontab, nightly_agents

        now = dt.datetime.fromisoformat(clock()).astimezone(dt.UTC)
        notes: list[str] = []
        try:
            cron: Any = crontab(settings.schedule)
        except ValueError as exc:
            cron = None
            notes.append(f"schedule: expected a cron expression like '0 3 * * *', got "
                         f"{settings.schedule!r} ({exc})")
        stored = _stored_jobs(store.engine)
        limit = settings.max_failure_share
        ablations: Mapping[str, tuple[str, ...]] = getattr(settings, "schedule_ablations", {})
        jobs: list[ScheduledJob] = []
        wanted = {NIGHTLY_PREFIX + a: a for a in nightly_agents(settings)}
        for job_id in sorted(set(wanted) | {j for j in stored if j.startswith(NIGHTLY_PREFIX)}):
            agent = job_id[len(NIGHTLY_PREFIX):]
            when, state = stored.get(job_id, (None, {}))
            args = tuple(state.get("args") or ())
            job_suite = str(args[1]) if len(args) > 1 else suite
            trigger = state.get("trigger") or cron
            name = f"nightly {job_suite} suite and matrix of {agent}"
            if ablations.get(agent):
                name += ", ablating " + ", ".join(ablations[agent])
            if job_id not in wanted:
                name += " (no longer declared: the daemon removes it when it starts)"
            jobs.append(ScheduledJob(
                job_id, name,
                settings.schedule if trigger is cron else _trigger_text(trigger),
                () if trigger is None else _next_runs(trigger, when, now),
                stored=job_id in stored,
                last_run=_last_run(store, agent, job_suite, None, limit),
            ))
        for job_id in sorted(j for j in stored if not j.startswith(NIGHTLY_PREFIX)):
            when, state = stored[job_id]
            run_id = job_id[len(RUN_PREFIX):] if job_id.startswith(RUN_PREFIX) else None
            name = str(state.get("name") or job_id)
            trigger = state.get("trigger")
            jobs.append(ScheduledJob(
                job_id, name,
                "now" if run_id else _trigger_text(trigger),
                () if when is None  # paused
                else (when.isoformat(),) if trigger is None else _next_runs(trigger, when, now),
                stored=True,
                last_run=None if run_id is None else _last_run(store, None, None, run_id, limit),
            ))
        return ScheduleSnapshot(settings.schedule, now.isoformat(), tuple(jobs), tuple(notes))

    return read


def _trigger_text(trigger: Any) -> str:
    """APScheduler's trigger in a few words: ``cron 0 3 * * *``, ``every 300 s``."""
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    if isinstance(trigger, CronTrigger):
        f = {x.name: str(x) for x in trigger.fields}
        return " ".join(f[k] for k in ("minute", "hour", "day", "month", "day_of_week"))
    if isinstance(trigger, IntervalTrigger):
        return f"every {trigger.interval.total_seconds():g} s"
    return str(trigger) if trigger is not None else "—"


# -- the queue --------------------------------------------------------------------------------


def queue_reader(store: Store, *, stalled_after: float | None = None) -> Callable[[], QueueSnapshot]:
    """A function (called in a worker) that reads the worker queue from procrastinate's tables:
    the batches queued, running (stalled when their worker sent no heartbeat for
    ``stalled_after`` seconds, as :func:`harness.queue.batches.recover_stalled_work` judges them) and
    failed, and the workers. Not ``available`` unless the database is PostgreSQL."""

    def read() -> QueueSnapshot:
        import sqlalchemy as sa

        backend = store.engine.url.get_backend_name()
        if backend != "postgresql":
            name = {"sqlite": "SQLite"}.get(backend, backend)
            return QueueSnapshot(False, f"no queue: the database is {name} (queueing runs for "
                                 "workers needs PostgreSQL; see `mindledger enqueue --help`)")
        from harness.matrix.nightly import matrix_run_id
        from harness.queue.batches import STALLED_AFTER, TASKS  # procrastinate: only with a queue

        after = STALLED_AFTER if stalled_after is None else stalled_after
        with store.engine.connect() as conn:
            now = conn.execute(sa.text("SELECT now()")).scalar_one()
            if not conn.execute(sa.text("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
                                ).scalar_one():
                return QueueSnapshot(True, batches=(), workers=(), stalled_after=after,
                                     now=now.astimezone(dt.UTC).isoformat())
            jobs = conn.execute(sa.text(
                "SELECT j.id, j.args, j.status, j.attempts, j.worker_id, "
                "EXTRACT(EPOCH FROM (now() - w.last_heartbeat)) "
                "FROM procrastinate_jobs j LEFT JOIN procrastinate_workers w ON w.id = j.worker_id "
                "WHERE j.task_name = ANY(:t) "  # a suite run's batches and a matrix run's
                "AND j.status IN ('todo', 'doing', 'failed', 'aborted') "
                "ORDER BY j.id DESC LIMIT 500"), {"t": list(TASKS)}).all()
            workers = conn.execute(sa.text(
                "SELECT w.id, w.last_heartbeat, EXTRACT(EPOCH FROM (now() - w.last_heartbeat)), "
                "count(j.id) FILTER (WHERE j.status = 'doing') "
                "FROM procrastinate_workers w LEFT JOIN procrastinate_jobs j ON j.worker_id = w.id "
                "GROUP BY w.id ORDER BY w.id")).all()
        batches = []
        for job_id, args, status, attempts, worker_id, since in jobs:
            a = args if isinstance(args, Mapping) else json.loads(args or "{}")
            since_s = None if since is None else float(since)
            stalled = str(status) == "doing" and (since_s is None or since_s > after)
            if "suite_run" in a:  # the nightly matrix's job: it plans the run, then queues it
                a = {"run_id": matrix_run_id(str(a["suite_run"])), "agent": "plan (nightly)"}
            batches.append(QueueBatch(
                int(job_id), str(a.get("run_id", "?")), str(a.get("agent", "all (matrix)")),
                len(a.get("item_ids") or ()), str(status), int(attempts),
                None if worker_id is None else int(worker_id), since_s, stalled,
            ))
        return QueueSnapshot(
            True,
            batches=tuple(batches),
            workers=tuple(QueueWorker(int(w), beat.astimezone(dt.UTC).isoformat(), float(s),
                                      int(n)) for w, beat, s, n in workers),
            stalled_after=after,
            now=now.astimezone(dt.UTC).isoformat(),
        )

    return read


def dashboard_source(
    settings: Settings,
    open_workspace: Callable[[], Workspace],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    suite: str = "quick",
) -> DashboardSource:
    """The dashboard's source over the database of ``settings``, as ``mindledger dashboard``
    builds it. A database at the current schema is read by a :class:`~ledger.reader.Reader`
    without SQLAlchemy, and the workspace (``open_workspace()``: SQLAlchemy, the Store, the
    ledger) is opened by the first screen that needs it, in its worker; any other database is
    opened (created or migrated) now. ``suite`` as :func:`schedule_reader` takes it."""
    from ledger.reader import Reader

    reader = Reader.open(settings.database_url)
    if reader is None:
        ws = open_workspace()
        return DashboardSource(
            ws.store, ledger_opener(ws), n_boot=n_boot, seed=seed,
            schedule=schedule_reader(settings, ws.store, suite=suite),
            queue=queue_reader(ws.store), max_failure_share=settings.max_failure_share,
        )  # fmt: skip
    lock = threading.Lock()

    @functools.cache
    def opened() -> Workspace:
        return open_workspace()

    def workspace() -> Workspace:
        with lock:  # screens' workers run in threads
            return opened()

    return DashboardSource(
        lambda: workspace().store,
        lambda: ledger_opener(workspace())(),
        n_boot=n_boot,
        seed=seed,
        schedule=lambda: schedule_reader(settings, workspace().store, suite=suite)(),
        queue=lambda: queue_reader(workspace().store)(),
        reader=reader,
        max_failure_share=settings.max_failure_share,
    )


# -- the command ------------------------------------------------------------------------------


@click.command("dashboard")
@click.option(
    "--refresh",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="Seconds between refreshes of the runs table and the queue (0: only on r).",
)
@click.option(
    "--export-dir",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="Where the run screen's m and h keys write reports.",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Bootstrap seed.")
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(100, 100_000),
    default=2000,
    show_default=True,
    help="Bootstrap replicates per interval.",
)
@click.option(
    "--suite",
    default="quick",
    show_default=True,
    help="The nightly suite the schedule screen assumes for jobs the daemon has not stored "
    "yet (as `serve --suite`).",
)
@click.pass_context
def dashboard(
    ctx: click.Context, refresh: float, export_dir: str, seed: int, n_boot: int, suite: str
) -> None:
    """Browse runs, profiles, comparisons, agents' histories, the schedule, the worker queue
    and the prediction ledger in the terminal.

    \b
    Keys: enter open a run · space mark it, c compare two ·
    a the agent's history · m/h export the run's report (Markdown/HTML) ·
    l the prediction ledger · s the schedule · w the queue · escape back ·
    ? help for the screen · q quit.

    \b
    Examples:
      mindledger dashboard
      mindledger --db postgresql://eval@db/mindledger dashboard --refresh 10
      mindledger dashboard --export-dir reports/ --bootstrap 500
    """
    from tui import DashboardApp

    source = dashboard_source(
        get_settings(ctx), lambda: get_workspace(ctx), n_boot=n_boot, seed=seed, suite=suite
    )
    try:
        DashboardApp(source, refresh_seconds=refresh, export_dir=Path(export_dir)).run()
    finally:
        if source.reader is not None:
            source.reader.close()
