"""``mindledger worker`` and ``mindledger enqueue``: runs past one machine (PostgreSQL only)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import click

from harness.cli.common import get_settings, get_store, resolve_run
from harness.cli.conventions import BATCH, CONCURRENCY, an_id
from harness.queue.batches import STALLED_AFTER


def _log_to_stderr() -> None:
    logger = logging.getLogger("mindledger.queue")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def _stalled_after_option(f: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--stalled-after",
        type=click.FloatRange(min=0, min_open=True),
        default=STALLED_AFTER,
        show_default=True,
        metavar="SECONDS",
        help="A worker that sends no heartbeat for this long counts as dead, and its batches "
        "as stalled. Use the same value for every worker and enqueue.",
    )(f)


@click.command()
@click.option(
    "--concurrency",
    type=CONCURRENCY,
    default=1,
    show_default=True,
    help="Batches executed at a time by this worker (each batch runs its trials concurrently).",
)
@click.option("--once", is_flag=True, help="Execute the batches queued now, then exit.")
@click.option("--name", default=None, help="Worker name in the queue (default: host:pid).")
@_stalled_after_option
def worker(concurrency: int, once: bool, name: str | None, stalled_after: float) -> None:
    """Execute queued batches of trials (PostgreSQL + procrastinate).

    Start any number of workers, on any machines, against the same PostgreSQL database. Each
    batch rebuilds its agent from the spec stored with the run and attempts only the items
    that still lack a trial, so a batch run twice stores nothing twice. The worker that
    finishes a run's last batch marks the run complete. Stop with Ctrl-C (or SIGTERM): batches
    in progress finish first.

    A matrix run's batch is some of its items, each run whole (every prediction about it
    committed to the prediction ledger before its targets are asked). The worker writes to the
    ledger with the service key of its data directory: give every worker the key the ledger
    was opened with. The daemon's nightly matrix comes as one job per night: the worker that
    takes it pilots the matrix beside the suite run, stores it and queues its items.

    Stalled work: every worker sends a heartbeat every third of --stalled-after. A worker that
    dies (SIGKILL, out of memory, a lost machine) stops sending it; once it has been silent
    for --stalled-after seconds, its unfinished batches are put back in the queue by any
    running worker (each one checks at every heartbeat) or by the next one to start, and run
    again; the trials they had stored are kept and not redone. A batch is retried at most 3
    times, whether it raised or its worker died; then it is failed, and `mindledger enqueue
    RUN` queues its missing trials afresh. Workers also mark complete any run whose trials are
    all stored but that its last writer did not get to mark.

    \b
    Examples:
      mindledger --db postgresql://user@dbhost/mindledger worker --concurrency 4
      mindledger worker --once        # drain the queue and exit
    """
    from harness.queue.batches import conninfo, run_worker

    ctx = click.get_current_context()
    settings = get_settings(ctx)
    conninfo(settings)  # refuse SQLite before opening it
    store = get_store(ctx)
    _log_to_stderr()
    asyncio.run(
        run_worker(
            store,
            settings,
            concurrency=concurrency,
            once=once,
            name=name,
            stalled_after=stalled_after,
        )
    )


@click.command()
@click.argument("run_id", callback=an_id)
@click.option(
    "--batch-size",
    type=BATCH,
    default=None,
    help="Items per queued batch: of one agent for a suite run (default 50); of a matrix "
    "run, every predictor and target on each (default 5).",
)
@_stalled_after_option
def enqueue(run_id: str, batch_size: int | None, stalled_after: float) -> None:
    """Cut a stored run into batches of trials and queue them for workers.

    Queues what no live worker holds: the (agent, item) pairs without a trial that are in no
    queued or running batch (never queued, or their batch failed or was aborted) go out in
    new batches, and batches stalled on a dead worker (no heartbeat for --stalled-after
    seconds) are put back in the queue. Batches queued, or running on a worker that is still
    sending heartbeats, are left alone: if that worker has just died, its batches are
    re-queued once it has been silent for --stalled-after seconds (by any worker, or by
    enqueueing again). So enqueueing again after an interruption, a crash or a failed batch
    finishes the run; a run whose trials are all stored is marked complete.
    Create the run first (e.g. `mindledger run ... --queue`); then start `mindledger worker`.
    RUN_ID is a run's id, the start of its id, latest or latest~N.

    A matrix run (`mindledger matrix ... --queue`) is queued by items: a batch runs each of
    its items whole, every prediction about it committed to the ledger before any target is
    asked it, exactly as `mindledger matrix` does in one process.

    \b
    Example:
      mindledger enqueue 20261130-031500-ab12cd --batch-size 20
    """
    from harness.queue.batches import conninfo, enqueue_run

    ctx = click.get_current_context()
    settings = get_settings(ctx)
    conninfo(settings)  # refuse SQLite before opening it
    store = get_store(ctx)
    run_id = resolve_run(ctx, run_id)
    _log_to_stderr()
    done = enqueue_run(store, settings, run_id, batch_size=batch_size, stalled_after=stalled_after)
    if done.deferred or done.retried:
        parts = [f"queued {done.deferred} new batch(es)"] if done.deferred else []
        if done.retried:
            parts.append(f"re-queued {done.retried} stalled batch(es)")
        click.echo(f"{' and '.join(parts)} of run {run_id}; start workers with `mindledger worker`")
    elif done.complete:
        click.echo(f"nothing to queue: run {run_id} is complete")
    else:
        click.echo(
            f"nothing new to queue: every missing trial of run {run_id} is in one of "
            f"{done.held} batch(es) queued or running on a live worker; a batch whose worker "
            f"sends no heartbeat for {stalled_after:g} s is re-queued by the workers or by "
            "enqueueing again"
        )
