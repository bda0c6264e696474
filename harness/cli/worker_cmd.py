"""``mindledger worker`` and ``mindledger enqueue``: runs past one machine (PostgreSQL only)."""

from __future__ import annotations

import asyncio
import logging

import click

from harness.cli.common import get_settings, get_store


def _log_to_stderr() -> None:
    logger = logging.getLogger("mindledger.queue")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


@click.command()
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Batches executed at a time by this worker (each batch runs its trials concurrently).",
)
@click.option("--once", is_flag=True, help="Execute the batches queued now, then exit.")
@click.option("--name", default=None, help="Worker name in the queue (default: host:pid).")
def worker(concurrency: int, once: bool, name: str | None) -> None:
    """Execute queued batches of trials (PostgreSQL + procrastinate).

    Start any number of workers, on any machines, against the same PostgreSQL database. Each
    batch rebuilds its agent from the spec stored with the run and attempts only the items
    that still lack a trial, so a batch run twice stores nothing twice. The worker that
    finishes a run's last batch marks the run complete. Stop with Ctrl-C (or SIGTERM): batches
    in progress finish first.

    \b
    Examples:
      mindledger --db postgresql://user@dbhost/mindledger worker --concurrency 4
      mindledger worker --once        # drain the queue and exit
    """
    from harness.queue import conninfo, run_worker

    ctx = click.get_current_context()
    settings = get_settings(ctx)
    conninfo(settings)  # refuse SQLite before opening it
    store = get_store(ctx)
    _log_to_stderr()
    asyncio.run(run_worker(store, settings, concurrency=concurrency, once=once, name=name))


@click.command()
@click.argument("run_id")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Items of one agent per queued batch.",
)
def enqueue(run_id: str, batch_size: int) -> None:
    """Cut a stored run into batches of trials and queue them for workers.

    Only the (agent, item) pairs without a trial, and not already in a queued batch, are
    queued, so enqueueing again after an interruption or a failed batch finishes the run.
    Create the run first (e.g. `mindledger run ... --queue`); then start `mindledger worker`.

    \b
    Example:
      mindledger enqueue 20261130-031500-ab12cd --batch-size 20
    """
    from harness.queue import conninfo, enqueue_run

    ctx = click.get_current_context()
    settings = get_settings(ctx)
    conninfo(settings)  # refuse SQLite before opening it
    store = get_store(ctx)
    n = enqueue_run(store, settings, run_id, batch_size=batch_size)
    if n:
        click.echo(f"queued {n} batch(es) of run {run_id}; start workers with `mindledger worker`")
    elif store.get_run(run_id).status == "complete":
        click.echo(f"nothing to queue: run {run_id} is complete")
    else:
        click.echo(
            f"nothing new to queue: every missing trial of run {run_id} is in a queued batch"
        )
