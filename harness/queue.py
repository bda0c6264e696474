"""Runs past one machine: batches of trials queued as procrastinate tasks on PostgreSQL.

:func:`enqueue_run` cuts the (agent, item) pairs of a stored run that still lack a trial into
batches and defers one ``mindledger.run_batch`` job per batch; any number of
``mindledger worker`` processes, on any machines, execute them. A batch is idempotent: it
rebuilds its agent from the spec stored with the run and attempts only the items of the batch
that still have no trial, and the database keeps one trial per (run, agent, item) whatever
runs twice. Nothing about a run lives in a worker's memory: whichever batch finds no pair
missing marks the run complete (once, by a conditional update).

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
import psycopg
import sqlalchemy as sa
from procrastinate.schema import SchemaManager
from sqlalchemy.exc import ArgumentError

from harness.build import built_agents, concurrency_of, needs_local_model
from harness.runner import RunSummary, execute_run
from harness.settings import Settings
from ledger.db import mask, normalise_url
from ledger.store import Store
from mindledger.errors import UserError

__all__ = [
    "QUEUE",
    "TASK_NAME",
    "Batch",
    "WorkerRuntime",
    "conninfo",
    "enqueue_run",
    "ensure_schema",
    "execute_batch",
    "finish_if_done",
    "make_app",
    "missing_batches",
    "pending_jobs",
    "run_worker",
]

log = logging.getLogger("mindledger.queue")

QUEUE = "mindledger"
TASK_NAME = "mindledger.run_batch"
_SCHEMA_LOCK = int.from_bytes(hashlib.sha256(b"mindledger:procrastinate-schema").digest()[:7])


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
    try:
        parsed = sa.engine.make_url(normalise_url(url))
    except ArgumentError:
        raise UserError(f"not a database URL: {mask(url)!r}") from None
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
    local_base_url: str | None = None
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def local_model_url(self) -> str:
        with self._lock:
            if self.local_base_url is None:
                from harness.local_model import running_local_model

                srv = self._stack.enter_context(
                    running_local_model(
                        threads=self.settings.model_threads, log_dir=self.settings.home / "logs"
                    )
                )
                self.local_base_url = str(srv.base_url)
            return self.local_base_url

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


def make_app(settings: Settings, *, max_pool: int = 8) -> procrastinate.App:
    """A procrastinate app over the configured PostgreSQL database, with the batch task."""
    dsn = conninfo(settings)
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=dsn, min_size=1, max_size=max(2, max_pool), kwargs={"connect_timeout": 5}
        )
    )
    app.task(
        name=TASK_NAME,
        queue=QUEUE,
        pass_context=True,
        retry=procrastinate.RetryStrategy(max_attempts=3, wait=10),
    )(_run_batch)
    return app


# -- bookkeeping ------------------------------------------------------------------------------


def pending_jobs(dsn: str, run_id: str, *, exclude_job: int | None = None) -> list[dict[str, Any]]:
    """Arguments of this run's batch jobs that are queued or running (not finished)."""
    with psycopg.connect(dsn, connect_timeout=5) as conn:
        if not conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
            return []
        rows = conn.execute(
            "SELECT id, args FROM procrastinate_jobs WHERE task_name = %s "
            "AND status IN ('todo', 'doing') AND args->>'run_id' = %s",
            (TASK_NAME, run_id),
        ).fetchall()
    return [dict(args) for job_id, args in rows if job_id != exclude_job]


def _missing(store: Store, run_id: str) -> list[tuple[str, str]]:
    """(agent, item id) pairs of the run without a trial, in the run's order."""
    done = store.done_pairs(run_id)
    items = store.run_items(run_id)
    return [
        (ra.name, it.id)
        for ra in store.run_agents(run_id)
        for it in items
        if (ra.name, it.id) not in done
    ]


def _set_status(store: Store, run_id: str, status: str, *, unless: Sequence[str]) -> bool:
    """Set the run's status unless it is one of ``unless``; True if this call changed it."""
    finished = status in ("complete", "incomplete")
    with store.engine.begin() as conn:
        res = conn.execute(
            sa.text(
                "UPDATE runs SET status = :status, finished_at = :fin "
                "WHERE id = :id AND status NOT IN :unless"
            ).bindparams(sa.bindparam("unless", expanding=True)),
            {
                "status": status,
                "fin": store.clock() if finished else None,
                "id": run_id,
                "unless": list(unless),
            },
        )
        return bool(res.rowcount)


def finish_if_done(
    store: Store, run_id: str, *, dsn: str | None = None, exclude_job: int | None = None
) -> str | None:
    """Run completion bookkeeping, safe from any worker at any time.

    No pair missing: the run becomes ``complete`` (only the first caller writes). Pairs missing
    and no batch of the run queued or running (``dsn`` given): ``incomplete``, so that
    `mindledger enqueue` can finish it. Returns the status written, if any."""
    if not _missing(store, run_id):
        return "complete" if _set_status(store, run_id, "complete", unless=["complete"]) else None
    if (
        dsn is not None
        and not pending_jobs(dsn, run_id, exclude_job=exclude_job)
        and _set_status(store, run_id, "incomplete", unless=["complete", "incomplete"])
    ):
        return "incomplete"
    return None


# -- executing a batch ------------------------------------------------------------------------


async def execute_batch(
    store: Store,
    settings: Settings,
    run_id: str,
    agent: str,
    item_ids: Sequence[str],
    *,
    runtime: WorkerRuntime | None = None,
    local_base_url: str | None = None,
    exclude_job: int | None = None,
) -> RunSummary | None:
    """Attempt the items of ``item_ids`` that ``agent`` has no trial for yet in ``run_id``;
    then do the run's completion bookkeeping. Returns None when nothing was left to do.

    Idempotent: executing the same batch twice (or concurrently) stores each trial once."""
    run = await asyncio.to_thread(store.get_run, run_id)
    planned = [ra for ra in await asyncio.to_thread(store.run_agents, run_id) if ra.name == agent]
    if not planned:
        raise UserError(f"run {run_id} has no agent named {agent!r}")
    wanted = set(item_ids)
    done = await asyncio.to_thread(store.done_pairs, run_id)
    all_items = await asyncio.to_thread(store.run_items, run_id)
    unknown = wanted - {it.id for it in all_items}
    if unknown:
        log.warning("run %s has no item(s) %s; skipped", run_id, ", ".join(sorted(unknown)))
    items = [it for it in all_items if it.id in wanted and (agent, it.id) not in done]
    summary: RunSummary | None = None
    if items:
        await asyncio.to_thread(
            _set_status, store, run_id, "running", unless=["running", "complete"]
        )
        base = local_base_url
        if base is None and needs_local_model(planned):
            if runtime is None:
                raise UserError("agent needs the embedded model; pass local_base_url")
            base = await asyncio.to_thread(runtime.local_model_url)
        async with built_agents(
            planned, settings, seed=run.seed, store=store, local_base_url=base
        ) as agents:
            summary = await execute_run(
                store,
                run_id,
                agents,
                items,
                concurrency={agent: concurrency_of(planned[0], settings)},
            )
        log.info(
            "run %s, agent %s: %d trial(s) in %.1f s",
            run_id,
            agent,
            summary.attempted,
            summary.wall_s,
        )
    dsn = _store_dsn(store)
    status = await asyncio.to_thread(
        finish_if_done, store, run_id, dsn=dsn, exclude_job=exclude_job
    )
    if status:
        log.info("run %s is %s", run_id, status)
    return summary


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
    for agent, item_id in _missing(store, run_id):
        if (agent, item_id) not in queued:
            by_agent.setdefault(agent, []).append(item_id)
    return [
        Batch(run_id, agent, tuple(ids[i : i + batch_size]))
        for agent, ids in by_agent.items()
        for i in range(0, len(ids), batch_size)
    ]


def enqueue_run(store: Store, settings: Settings, run_id: str, batch_size: int = 50) -> int:
    """Queue every (agent, item) pair of the stored run that has no trial and is not already in
    a queued or running batch, in batches of ``batch_size``. Returns how many batches were
    deferred (0 when nothing is missing; the run is then marked complete)."""
    dsn = conninfo(settings)
    store.get_run(run_id)  # NotFoundError before anything is queued
    ensure_schema(dsn)
    queued = {
        (str(args["agent"]), str(item_id))
        for args in pending_jobs(dsn, run_id)
        for item_id in args.get("item_ids") or ()
    }
    batches = missing_batches(store, run_id, batch_size, queued=queued)
    if not batches:
        finish_if_done(store, run_id)
        return 0
    app = make_app(settings, max_pool=2)
    with app.open():
        task = app.tasks[TASK_NAME]
        task.batch_defer(*(b.kwargs() for b in batches))
    _set_status(store, run_id, "queued", unless=["queued", "complete"])
    return len(batches)


# -- the worker -------------------------------------------------------------------------------


async def run_worker(
    store: Store,
    settings: Settings,
    *,
    concurrency: int = 1,
    once: bool = False,
    name: str | None = None,
    install_signal_handlers: bool = True,
) -> None:
    """Execute queued batches until stopped (SIGINT/SIGTERM), or with ``once`` until none is
    left. ``concurrency`` batches run at a time."""
    dsn = conninfo(settings)
    ensure_schema(dsn)
    runtime = WorkerRuntime(store, settings)
    app = make_app(settings, max_pool=concurrency + 4)
    try:
        async with app.open_async():
            await app.run_worker_async(
                queues=[QUEUE],
                concurrency=max(1, concurrency),
                wait=not once,
                name=name or f"{socket.gethostname()}:{os.getpid()}",
                delete_jobs="successful",
                fetch_job_polling_interval=2.0,
                listen_notify=not once,
                install_signal_handlers=install_signal_handlers,
                additional_context={"mindledger": runtime},
            )
    finally:
        await asyncio.to_thread(runtime.close)
