"""Runs past one machine: batches of trials queued as procrastinate tasks on PostgreSQL.

:func:`enqueue_run` cuts the (agent, item) pairs of a stored run that still lack a trial into
batches and defers one ``mindledger.run_batch`` job per batch; any number of
``mindledger worker`` processes, on any machines, execute them. A batch is idempotent: it
rebuilds its agent from the spec stored with the run and attempts only the items of the batch
that still have no trial, and the database keeps one trial per (run, agent, item) whatever
runs twice. Nothing about a run lives in a worker's memory: whichever batch finds no pair
missing marks the run complete (once, by a conditional update).

Workers die (SIGKILL, OOM, a lost machine) and leave their batches ``doing``. Every worker
sends procrastinate a heartbeat every third of ``stalled_after`` seconds; a batch whose worker
has sent none for ``stalled_after`` seconds is *stalled* (procrastinate's
``JobManager.get_stalled_jobs``). :func:`recover_stalled_work` puts stalled batches back in the
queue with ``JobManager.retry_job`` (the same job, one attempt more; after
:data:`MAX_ATTEMPTS` it is failed instead, so a batch that kills its worker cannot kill them
all), and marks complete any run whose trials are all stored but which nobody marked,
revealing the self-forecasts the service holds for it (as the batch that settles a run does).
Each worker runs it when it starts and every heartbeat while it runs; `enqueue_run` runs it too.
One sweep at a time (an advisory lock), so two sweepers never retry one job twice.

**Matrix runs** (suite ``matrix``, :mod:`harness.matrix.runs`) are queued the same way, as
``mindledger.run_matrix_batch`` jobs of whole items (:data:`MATRIX_BATCH_SIZE` by default):
an item's protocol involves every predictor and every target (all predictions about it are
committed to the ledger before any target is asked it), so an item is the unit of work and a
batch is a slice of the run's items, each executed by
:func:`harness.matrix.runs.execute_matrix_batch`, the same function the in-process matrix calls.
An item's trials are stored in one transaction, so a killed batch leaves its items whole or
absent; its retry runs the absent ones again (their earlier commitments stay in the ledger,
unrevealed, and expire). Each worker opens the prediction ledger of its data directory: every
worker that executes matrix batches needs the service key the ledger was opened with.

**The nightly matrix** (:mod:`harness.matrix.nightly`) is one ``mindledger.nightly_matrix``
job the daemon defers beside a nightly suite run (:func:`defer_nightly_matrix`; one per suite
run, by procrastinate's queueing lock): the worker that takes it plans the matrix run (its
pilot asks every target), then queues the run's items as above. Run again (retried after its
worker died), it finds the run stored and queues only what is missing.

Queueing needs PostgreSQL; procrastinate's schema is applied on first use, under an advisory
lock, so concurrent first workers do not race.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import procrastinate
import procrastinate.exceptions
import psycopg
from procrastinate.jobs import Status
from procrastinate.schema import SchemaManager

from harness.config.settings import Settings
from harness.config.workspace import SeedPolicy, Workspace
from harness.matrix.nightly import matrix_run_id, plan_matrix_beside, schedule_from_json
from harness.matrix.runs import (
    MatrixBatchResult,
    is_matrix_run,
    matrix_run_done,
    missing_matrix_items,
)
from harness.matrix.runs import execute_matrix_batch as run_matrix_batch
from harness.model.local_model import ModelEndpoint
from harness.run.build import needs_local_model
from harness.run.execution import (
    LocalModelSource,
    PendingWork,
    embedded_model,
    model_at,
    settle_run,
    settle_status,
)
from harness.run.execution import execute_batch as run_batch
from harness.run.forecasting import reveal_ended
from harness.run.progress import LineProgress
from harness.run.runner import RunSummary
from ledger.db import mask, normalise_url, parse_url
from ledger.predictions import Ledger
from ledger.store import Store
from mindledger.errors import UserError

__all__ = [
    "MATRIX_BATCH_SIZE",
    "MATRIX_TASK",
    "MAX_ATTEMPTS",
    "NIGHTLY_MATRIX_TASK",
    "QUEUE",
    "STALLED_AFTER",
    "TASKS",
    "TASK_NAME",
    "Batch",
    "Enqueued",
    "MatrixBatch",
    "Recovery",
    "WorkerRuntime",
    "conninfo",
    "defer_nightly_matrix",
    "enqueue_run",
    "ensure_schema",
    "execute_batch",
    "execute_matrix_batch",
    "finish_if_done",
    "make_app",
    "missing_batches",
    "missing_matrix_batches",
    "pending_jobs",
    "recover_stalled_work",
    "run_worker",
]

log = logging.getLogger("mindledger.queue")

QUEUE = "mindledger"
TASK_NAME = "mindledger.run_batch"
MATRIX_TASK = "mindledger.run_matrix_batch"
"""The task of a matrix run's batch: some of its items, each with every predictor and target."""
NIGHTLY_MATRIX_TASK = "mindledger.nightly_matrix"
"""The task that plans the nightly matrix beside a suite run and queues its items."""
TASKS = (TASK_NAME, MATRIX_TASK, NIGHTLY_MATRIX_TASK)
MATRIX_BATCH_SIZE = 5
"""Items per queued batch of a matrix run, by default (each item is n² predictions and n·K
target samples for n agents)."""
MAX_ATTEMPTS = 3
"""Retries of a batch, whether it raised or its worker died; then it is failed (and
`mindledger enqueue` queues its missing trials afresh)."""
STALLED_AFTER = 30.0
"""Seconds without a heartbeat after which a worker counts as dead and its batches as stalled.
Workers beat every third of it; give every worker and `enqueue` the same value."""
_SCHEMA_LOCK = int.from_bytes(hashlib.sha256(b"mindledger:procrastinate-schema").digest()[:7])
_SWEEP_LOCK = int.from_bytes(hashlib.sha256(b"mindledger:stalled-sweep").digest()[:7])


# -- connection -------------------------------------------------------------------------------


def conninfo(settings: Settings) -> str:
    """The libpq URL of the configured database; a UserError unless it is PostgreSQL."""
    return _libpq_url(settings.database_url)


def _store_dsn(store: Store) -> str | None:
    """The libpq URL of the store's database, or None when it is not PostgreSQL."""
    url = store.engine.url
    if url.get_backend_name() != "postgresql":
        return None
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _libpq_url(url: str) -> str:
    parse_url(url)  # a StorageError naming the URL as given, and what is wrong with it
    parsed = parse_url(normalise_url(url))
    if parsed.get_backend_name() != "postgresql":
        raise UserError(
            f"queueing trials for workers needs PostgreSQL, but the database is {mask(url)}; "
            "set db_url (or --db) to a postgresql:// URL shared by every worker, or run the "
            "suite in one process with `mindledger run`"
        )
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def ensure_schema(dsn: str) -> bool:
    """Apply procrastinate's schema unless it is there already. Returns True if it was applied.

    Idempotent and safe when several workers start at once: the check and the creation run in
    one transaction holding an advisory lock."""
    with psycopg.connect(dsn, connect_timeout=5) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        row = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()
        if row and row[0]:
            return False
        schema = SchemaManager.get_schema()
        conn.execute(schema)  # no parameters: sent as is, several statements at once
        return True


# -- the app and its task ---------------------------------------------------------------------


@dataclass
class WorkerRuntime:
    """What a worker's tasks share: the store, the settings and (started on first need, stopped
    when the worker ends) the embedded model."""

    store: Store
    settings: Settings
    local_base_url: ModelEndpoint | None = None
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ledger: Ledger | None = None

    def ledger(self) -> Ledger:
        """The prediction ledger of the worker's data directory (for matrix batches), opened
        by the first batch that needs it and closed when the worker ends."""
        with self._lock:
            if self._ledger is None:
                ws = Workspace(self.settings, self.store.engine, self.store,
                               SeedPolicy.of(self.settings))
                self._ledger = self._stack.enter_context(contextlib.closing(ws.new_ledger()))
            return self._ledger

    def local_model_url(self) -> ModelEndpoint:
        with self._lock:
            if self.local_base_url is None:
                self.local_base_url = self._stack.enter_context(embedded_model(self.settings))
            return self.local_base_url

    def local_model(self) -> contextlib.AbstractContextManager[ModelEndpoint]:
        """The worker's embedded model for one batch (a :data:`LocalModelSource`): started by
        the first batch that needs it, kept running until the worker ends."""
        return contextlib.nullcontext(self.local_model_url())

    def close(self) -> None:
        self._stack.close()


async def _run_batch(
    context: procrastinate.JobContext, run_id: str, agent: str, item_ids: list[str]
) -> dict[str, Any]:
    runtime = context.additional_context.get("mindledger")
    if not isinstance(runtime, WorkerRuntime):
        raise RuntimeError("mindledger.run_batch needs a worker started by `mindledger worker`")
    job_id = context.job.id
    summary = await execute_batch(
        runtime.store,
        runtime.settings,
        run_id,
        agent,
        item_ids,
        runtime=runtime,
        exclude_job=job_id,
    )
    return {"attempted": summary.attempted if summary else 0}


async def _run_matrix_batch(
    context: procrastinate.JobContext, run_id: str, item_ids: list[str]
) -> dict[str, Any]:
    runtime = context.additional_context.get("mindledger")
    if not isinstance(runtime, WorkerRuntime):
        raise RuntimeError(
            "mindledger.run_matrix_batch needs a worker started by `mindledger worker`"
        )
    ledger = await asyncio.to_thread(runtime.ledger)
    result = await execute_matrix_batch(
        runtime.store, runtime.settings, ledger, run_id, item_ids,
        runtime=runtime, exclude_job=context.job.id,
    )
    return {"items": result.items}


async def _nightly_matrix(
    context: procrastinate.JobContext, suite_run: str, schedule: dict[str, Any]
) -> dict[str, Any]:
    runtime = context.additional_context.get("mindledger")
    if not isinstance(runtime, WorkerRuntime):
        raise RuntimeError(
            "mindledger.nightly_matrix needs a worker started by `mindledger worker`"
        )
    run_id = await asyncio.to_thread(nightly_matrix, runtime, suite_run, schedule)
    return {"matrix_run": run_id}


def nightly_matrix(runtime: WorkerRuntime, suite_run: str, schedule: dict[str, Any]) -> str | None:
    """Plan the matrix beside ``suite_run`` (or find it stored) and queue what it lacks;
    returns its run id (None: no agent of the suite run can take part). Blocking."""
    store, settings = runtime.store, runtime.settings
    planned = store.run_agents(suite_run)
    model = runtime.local_model_url() if needs_local_model(planned) else None
    run_id = plan_matrix_beside(
        store, settings, suite_run, schedule_from_json(schedule), local_base_url=model
    )
    if run_id is not None:
        done = enqueue_run(store, settings, run_id)
        log.info("matrix run %s beside run %s: %d batch(es) queued%s", run_id, suite_run,
                 done.deferred, ", complete" if done.complete else "")
    return run_id


def defer_nightly_matrix(settings: Settings, suite_run: str, schedule: dict[str, Any]) -> str:
    """Queue the job that plans the matrix beside ``suite_run`` and queues its items, for
    ``mindledger worker`` processes; returns the matrix run's id-to-be
    (:func:`harness.matrix.nightly.matrix_run_id`). Deferred once per suite run: while one
    such job is queued, deferring it again queues nothing."""
    dsn = conninfo(settings)
    ensure_schema(dsn)
    app = make_app(settings, max_pool=2)
    with app.open():
        try:
            app.tasks[NIGHTLY_MATRIX_TASK].configure(
                queueing_lock=f"nightly-matrix:{suite_run}"
            ).defer(suite_run=suite_run, schedule=schedule)
        except procrastinate.exceptions.AlreadyEnqueued:
            log.info("the matrix beside run %s is queued already", suite_run)
    return matrix_run_id(suite_run)


def make_app(settings: Settings, *, max_pool: int = 8) -> procrastinate.App:
    """A procrastinate app over the configured PostgreSQL database, with the batch tasks (a
    suite run's and a matrix run's) and the nightly matrix's planning task."""
    dsn = conninfo(settings)
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=dsn, min_size=1, max_size=max(2, max_pool), kwargs={"connect_timeout": 5}
        )
    )
    for name, task in (
        (TASK_NAME, _run_batch),
        (MATRIX_TASK, _run_matrix_batch),
        (NIGHTLY_MATRIX_TASK, _nightly_matrix),
    ):
        app.task(
            name=name,
            queue=QUEUE,
            pass_context=True,
            retry=procrastinate.RetryStrategy(max_attempts=MAX_ATTEMPTS, wait=10),
        )(task)
    return app


# -- bookkeeping ------------------------------------------------------------------------------


def pending_jobs(dsn: str, run_id: str, *, exclude_job: int | None = None) -> list[dict[str, Any]]:
    """Arguments of this run's batch jobs (a suite run's or a matrix run's) that are queued
    or running (not finished)."""
    return [args for job_id, args in _pending(dsn, run_id) if job_id != exclude_job]


def _pending(dsn: str, run_id: str) -> list[tuple[int, dict[str, Any]]]:
    """(job id, arguments) of this run's batch jobs that are queued or running."""
    with psycopg.connect(dsn, connect_timeout=5) as conn:
        if not conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
            return []
        rows = conn.execute(
            "SELECT id, args FROM procrastinate_jobs WHERE task_name = ANY(%s) "
            "AND status IN ('todo', 'doing') AND args->>'run_id' = %s ORDER BY id",
            (list(TASKS), run_id),
        ).fetchall()
    return [(int(job_id), dict(args)) for job_id, args in rows]


def _others_pending(dsn: str | None, run_id: str, exclude_job: int | None) -> PendingWork | None:
    """Whether the run has batches queued or running besides ``exclude_job``; None (cannot be
    known) without a PostgreSQL database to hold the queue."""
    if dsn is None:
        return None
    return lambda: bool(pending_jobs(dsn, run_id, exclude_job=exclude_job))


def finish_if_done(
    store: Store,
    run_id: str,
    *,
    dsn: str | None = None,
    exclude_job: int | None = None,
    settings: Settings | None = None,
) -> str | None:
    """Run completion bookkeeping, safe from any worker at any time
    (:func:`harness.run.execution.settle_run`).

    No pair missing: the run becomes ``complete`` (only the first caller writes). Pairs missing
    and no batch of the run queued or running (``dsn`` given): ``incomplete``, so that
    `mindledger enqueue` can finish it. A matrix run is done when every item has every trial,
    its predictions' included (:func:`harness.matrix.runs.matrix_run_done`), not only its
    targets' on the run's items. Returns the status written, if any.

    When it writes the status, the self-forecasts the service holds for the run are revealed
    and scored, as a batch that settles the run does (:func:`harness.run.forecasting.
    reveal_ended`, with a ledger opened from ``settings``; never raises). Without ``settings``
    they stay committed (``mindledger forecast reveal RUN`` reveals them)."""
    pending = _others_pending(dsn, run_id, exclude_job)
    if is_matrix_run(store, run_id):
        status = settle_status(store, run_id, done=matrix_run_done(store, run_id),
                               others_pending=pending)  # fmt: skip
    else:
        status = settle_run(store, run_id, others_pending=pending)
    if status is not None and settings is not None:
        reveal_ended(store, settings, run_id)
    return status


# -- executing a batch ------------------------------------------------------------------------


def _no_local_model() -> contextlib.AbstractContextManager[str]:
    raise UserError("agent needs the embedded model; pass local_base_url")


def _batch_local_model(runtime: WorkerRuntime | None,
                       local_base_url: ModelEndpoint | None) -> LocalModelSource:
    """The embedded model a batch uses: at ``local_base_url``, else the worker's, else none
    (an agent that needs it fails with a one-line error)."""
    if local_base_url is not None:
        return model_at(local_base_url)
    if runtime is not None:
        return runtime.local_model
    return _no_local_model


async def execute_batch(
    store: Store,
    settings: Settings,
    run_id: str,
    agent: str,
    item_ids: Sequence[str],
    *,
    runtime: WorkerRuntime | None = None,
    local_base_url: ModelEndpoint | None = None,
    exclude_job: int | None = None,
) -> RunSummary | None:
    """Attempt the items of ``item_ids`` that ``agent`` has no trial for yet in ``run_id``;
    then do the run's completion bookkeeping. Returns None when nothing was left to do.

    The queue's side of :func:`harness.run.execution.execute_batch`: the embedded model is the
    worker's (``runtime``) or at ``local_base_url``; the run becomes ``incomplete`` only when
    no other batch of it (besides job ``exclude_job``) is queued or running; a failure leaves
    the run's status to the queue's retries.

    Idempotent: executing the same batch twice (or concurrently) stores each trial once."""
    local_model = _batch_local_model(runtime, local_base_url)
    result = await run_batch(
        store,
        settings,
        run_id,
        agents=(agent,),
        item_ids=item_ids,
        local_model=local_model,
        # a worker's log shows a long batch moving, as `mindledger run` does on stderr
        progress=LineProgress(emit=log.info, label=f"run {run_id} · {agent}:"),
        others_pending=_others_pending(_store_dsn(store), run_id, exclude_job),
        interrupt_on_failure=False,
    )
    if result.summary is not None:
        summary = result.summary
        log.info(
            "run %s, agent %s: %d trial(s) in %.1f s",
            run_id,
            agent,
            summary.attempted,
            summary.wall_s,
        )
    if result.status:
        log.info("run %s is %s", run_id, result.status)
    return result.summary


async def execute_matrix_batch(
    store: Store,
    settings: Settings,
    ledger: Ledger,
    run_id: str,
    item_ids: Sequence[str],
    *,
    runtime: WorkerRuntime | None = None,
    local_base_url: ModelEndpoint | None = None,
    exclude_job: int | None = None,
) -> MatrixBatchResult:
    """Run the items of ``item_ids`` that lack a trial in the matrix run ``run_id``; then do
    the run's completion bookkeeping: the queue's side of
    :func:`harness.matrix.runs.execute_matrix_batch`, as :func:`execute_batch` is of a suite run's
    batch (the worker's embedded model; ``incomplete`` only when no other batch of the run,
    besides job ``exclude_job``, is queued or running; a failure leaves the run's status to
    the queue's retries). Idempotent: an item whose trials are stored is not run again."""
    local_model = _batch_local_model(runtime, local_base_url)
    result = await run_matrix_batch(
        store,
        settings,
        ledger,
        run_id,
        item_ids=item_ids,
        local_model=local_model,
        others_pending=_others_pending(_store_dsn(store), run_id, exclude_job),
        interrupt_on_failure=False,
    )
    log.info("matrix run %s: %d item(s) run of a batch of %d", run_id, result.items,
             len(item_ids))
    if result.status:
        log.info("run %s is %s", run_id, result.status)
    return result


# -- stalled work ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Recovery:
    """What one sweep for stalled work did."""

    retried: tuple[int, ...] = ()
    """Job ids of stalled batches put back in the queue."""
    failed: tuple[int, ...] = ()
    """Job ids of stalled batches given up: failed after MAX_ATTEMPTS attempts (or aborted, if
    an abort was requested)."""
    completed: tuple[str, ...] = ()
    """Runs marked complete: every trial stored, and nobody had said so."""


async def recover_stalled_work(
    app: procrastinate.App,
    store: Store,
    dsn: str,
    *,
    stalled_after: float = STALLED_AFTER,
    settings: Settings | None = None,
) -> Recovery:
    """Re-queue the batches of dead workers and mark complete the runs nobody marked (and,
    with ``settings``, reveal the forecasts the service holds for each run it settles:
    :func:`finish_if_done`).

    A batch is stalled when it is ``doing`` and its worker has sent no heartbeat for
    ``stalled_after`` seconds (or was pruned as dead): procrastinate's
    ``JobManager.get_stalled_jobs``. It goes back to the queue by ``JobManager.retry_job``
    unless it has had :data:`MAX_ATTEMPTS` attempts already (then it is failed) or an abort
    was requested (aborted); a run given up on that way is marked ``incomplete`` if nothing
    else of it is pending. ``app`` must be open.

    Safe from any number of processes at once: the sweep holds an advisory lock (and skips when
    another process holds it), so no job is retried twice — nor after a live worker took it
    again."""
    retried: list[int] = []
    failed: list[int] = []
    failed_runs: set[str] = set()
    # the lock is the transaction's: released when the connection commits and closes
    async with await psycopg.AsyncConnection.connect(dsn, connect_timeout=5) as lock:
        cur = await lock.execute("SELECT pg_try_advisory_xact_lock(%s)", (_SWEEP_LOCK,))
        row = await cur.fetchone()
        if not (row and row[0]):
            return Recovery()  # another process is sweeping right now
        jm = app.job_manager
        await jm.prune_stalled_workers(stalled_after)
        stalled = [
            job
            for task in TASKS
            for job in await jm.get_stalled_jobs(
                queue=QUEUE, task_name=task, seconds_since_heartbeat=stalled_after
            )
        ]
        for job in stalled:
            assert job.id is not None
            if job.attempts < MAX_ATTEMPTS and not job.abort_requested:
                await jm.retry_job(job)
                retried.append(job.id)
            else:
                end = Status.ABORTED if job.abort_requested else Status.FAILED
                await jm.finish_job(job, end, delete_job=False)
                failed.append(job.id)
                if job.task_kwargs.get("run_id"):  # a batch (the nightly matrix job has none)
                    failed_runs.add(str(job.task_kwargs["run_id"]))
    if retried:
        log.info(
            "re-queued %d stalled batch(es) (job %s): their worker sent no heartbeat for %g s",
            len(retried),
            ", ".join(map(str, retried)),
            stalled_after,
        )
    if failed:
        log.warning(
            "gave up %d stalled batch(es) (job %s) after %d attempts or an abort request; "
            "`mindledger enqueue RUN` queues their trials again",
            len(failed),
            ", ".join(map(str, failed)),
            MAX_ATTEMPTS,
        )
    for run_id in sorted(failed_runs):
        await asyncio.to_thread(finish_if_done, store, run_id, dsn=dsn, settings=settings)
    completed: list[str] = []
    for run_id in await asyncio.to_thread(store.complete_but_unmarked_runs):
        if await asyncio.to_thread(finish_if_done, store, run_id, settings=settings) == "complete":
            log.info("run %s is complete (every trial was stored)", run_id)
            completed.append(run_id)
    return Recovery(tuple(retried), tuple(failed), tuple(completed))


# -- enqueueing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    run_id: str
    agent: str
    item_ids: tuple[str, ...]

    def kwargs(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "agent": self.agent, "item_ids": list(self.item_ids)}


def missing_batches(
    store: Store, run_id: str, batch_size: int, *, queued: set[tuple[str, str]] | None = None
) -> list[Batch]:
    """The run's pairs without a trial (and not in ``queued``), cut into batches of at most
    ``batch_size`` items of one agent each."""
    if batch_size < 1:
        raise UserError(f"batch size must be at least 1, got {batch_size}")
    queued = queued or set()
    by_agent: dict[str, list[str]] = {}
    for agent, item_id in store.missing_pairs(run_id):
        if (agent, item_id) not in queued:
            by_agent.setdefault(agent, []).append(item_id)
    return [
        Batch(run_id, agent, tuple(ids[i : i + batch_size]))
        for agent, ids in by_agent.items()
        for i in range(0, len(ids), batch_size)
    ]


@dataclass(frozen=True)
class MatrixBatch:
    """Some items of a matrix run, each run whole (every predictor and every target)."""

    run_id: str
    item_ids: tuple[str, ...]

    def kwargs(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "item_ids": list(self.item_ids)}


def missing_matrix_batches(
    store: Store, run_id: str, batch_size: int, *, queued: set[str] | None = None
) -> list[MatrixBatch]:
    """The matrix run's items without every trial (and not in ``queued``), cut into batches
    of at most ``batch_size`` items, in the run's order."""
    if batch_size < 1:
        raise UserError(f"batch size must be at least 1, got {batch_size}")
    ids = [i for i in missing_matrix_items(store, run_id) if i not in (queued or set())]
    return [
        MatrixBatch(run_id, tuple(ids[i : i + batch_size])) for i in range(0, len(ids), batch_size)
    ]


@dataclass(frozen=True)
class Enqueued:
    """What :func:`enqueue_run` did to one run."""

    deferred: int
    """New batches queued, for missing trials that no queued or running batch covered."""
    retried: int
    """Stalled batches (their worker sent no heartbeat for ``stalled_after`` s) re-queued."""
    held: int
    """The run's batches left as they were: queued, or running on a live worker."""
    complete: bool
    """The run has every trial (and is marked complete)."""


def enqueue_run(
    store: Store,
    settings: Settings,
    run_id: str,
    batch_size: int | None = None,
    *,
    stalled_after: float = STALLED_AFTER,
) -> Enqueued:
    """Queue every (agent, item) pair of the stored run that has no trial and that no live
    worker holds, in batches of ``batch_size`` items of one agent (default 50). A matrix run
    is queued by items instead: each of its items that lacks a trial and is in no queued or
    running batch, in batches of ``batch_size`` items (default :data:`MATRIX_BATCH_SIZE`),
    every predictor and target on each.

    First the stalled batches of dead workers are put back in the queue (see
    :func:`recover_stalled_work`); then pairs in no queued or running batch (never queued, or
    their batch failed or was aborted) are deferred as new batches. With nothing missing, the
    run is marked complete."""
    dsn = conninfo(settings)
    store.get_run(run_id)  # NotFoundError before anything is queued
    ensure_schema(dsn)
    app = make_app(settings, max_pool=2)
    recovery = asyncio.run(_recover_once(app, store, dsn, stalled_after, settings))
    pending = _pending(dsn, run_id)
    batches: Sequence[Batch | MatrixBatch]
    if is_matrix_run(store, run_id):
        task = MATRIX_TASK
        batches = missing_matrix_batches(
            store,
            run_id,
            MATRIX_BATCH_SIZE if batch_size is None else batch_size,
            queued={str(i) for _, args in pending for i in args.get("item_ids") or ()},
        )
    else:
        task = TASK_NAME
        queued = {
            (str(args["agent"]), str(item_id))
            for _, args in pending
            for item_id in args.get("item_ids") or ()
        }
        batches = missing_batches(
            store, run_id, 50 if batch_size is None else batch_size, queued=queued
        )
    if batches:
        with app.open():
            app.tasks[task].batch_defer(*(b.kwargs() for b in batches))
        store.transition_run(run_id, "queued", unless=("queued", "complete"))
    else:
        finish_if_done(store, run_id, settings=settings)
    retried = sum(1 for job_id, _ in pending if job_id in recovery.retried)
    return Enqueued(
        deferred=len(batches),
        retried=retried,
        held=len(pending) - retried,
        complete=store.get_run(run_id).status == "complete",
    )


async def _recover_once(
    app: procrastinate.App, store: Store, dsn: str, stalled_after: float, settings: Settings
) -> Recovery:
    async with app.open_async():
        return await recover_stalled_work(
            app, store, dsn, stalled_after=stalled_after, settings=settings
        )


# -- the worker -------------------------------------------------------------------------------


async def run_worker(
    store: Store,
    settings: Settings,
    *,
    concurrency: int = 1,
    once: bool = False,
    name: str | None = None,
    install_signal_handlers: bool = True,
    stalled_after: float = STALLED_AFTER,
) -> None:
    """Execute queued batches until stopped (SIGINT/SIGTERM), or with ``once`` until none is
    left. ``concurrency`` batches run at a time.

    The worker sends a heartbeat every ``stalled_after / 3`` seconds. It re-queues the stalled
    batches of dead workers (:func:`recover_stalled_work`) when it starts and, until it stops,
    at every heartbeat."""
    if stalled_after <= 0:
        raise UserError(f"stalled_after must be positive, got {stalled_after}")
    dsn = conninfo(settings)
    ensure_schema(dsn)
    runtime = WorkerRuntime(store, settings)
    app = make_app(settings, max_pool=concurrency + 4)
    beat = stalled_after / 3
    try:
        async with app.open_async():
            await recover_stalled_work(
                app, store, dsn, stalled_after=stalled_after, settings=settings
            )
            sweeper = asyncio.create_task(
                _sweep_forever(
                    app, store, dsn, stalled_after=stalled_after, every=beat, settings=settings
                ),
                name="mindledger stalled-work sweep",
            )
            try:
                await app.run_worker_async(
                    queues=[QUEUE],
                    concurrency=max(1, concurrency),
                    wait=not once,
                    name=name or f"{socket.gethostname()}:{os.getpid()}",
                    delete_jobs="successful",
                    fetch_job_polling_interval=min(2.0, beat),
                    listen_notify=not once,
                    install_signal_handlers=install_signal_handlers,
                    additional_context={"mindledger": runtime},
                    update_heartbeat_interval=beat,
                    stalled_worker_timeout=stalled_after,
                )
            finally:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper
    finally:
        await asyncio.to_thread(runtime.close)


async def _sweep_forever(
    app: procrastinate.App,
    store: Store,
    dsn: str,
    *,
    stalled_after: float,
    every: float,
    settings: Settings | None = None,
) -> None:
    """:func:`recover_stalled_work` every ``every`` seconds; a failed sweep is logged and the
    next one tried (the worker keeps executing batches meanwhile)."""
    while True:
        await asyncio.sleep(every)
        try:
            await recover_stalled_work(
                app, store, dsn, stalled_after=stalled_after, settings=settings
            )
        except Exception:
            log.warning("sweep for stalled batches failed; trying again", exc_info=True)
