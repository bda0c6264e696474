"""One path for executing a stored run's trials, in process or by a queue worker.

The unit is a *batch*: some (or all) of a stored run's agents, some (or all) of its items.
:func:`execute_batch` attempts the pairs of the batch that still have no trial and then does
the run's completion bookkeeping. `mindledger run` (:func:`harness.run.runs.execute_stored_run`)
executes the whole run as one batch; a queue worker (:mod:`harness.queue.batches`) executes one
agent's slice at a time. The two differ only where their situations differ, and say so in
arguments:

- where the embedded model comes from (:data:`LocalModelSource`): started for the batch and
  stopped after it, or the worker's, kept for the worker's life;
- whether other work of the run may be pending (:data:`PendingWork`): never in process; in a
  queue, the run's other batches that are queued or running;
- what a failure leaves: in process the run becomes ``interrupted`` (and `mindledger run
  --resume` finishes it); a queued batch leaves the status to the queue's retries.

Run status moves only by the store's compare-and-set (:meth:`ledger.store.Store.transition_run`),
and every blocking storage call here runs in a thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from harness.config.settings import Settings
from harness.model.local_model import ModelEndpoint
from harness.run.build import built_agents, concurrency_of, needs_local_model
from harness.run.episodes import Seats, control_seats
from harness.run.forecasting import reveal_ended
from harness.run.runner import ProgressSink, RunSummary, execute_run
from ledger.store import RunAgent, Store
from mindledger.errors import UserError
from mindledger.items import Item

if TYPE_CHECKING:
    from ledger.predictions import Ledger

__all__ = [
    "BatchResult",
    "LocalModelSource",
    "PendingWork",
    "embedded_model",
    "execute_batch",
    "model_at",
    "model_per_batch",
    "nothing_pending",
    "seal_run",
    "settle_run",
    "settle_status",
]

log = logging.getLogger("mindledger.execution")

T = TypeVar("T")

LocalModelSource = Callable[[], contextlib.AbstractContextManager[ModelEndpoint]]
"""Gives the embedded model to one batch: calling it and entering what it returns gives the
model's base URL(s); leaving releases it (stops it, or keeps it for the next batch). Both may
block; they are called in a thread, and only when an agent of the batch needs the model."""

PendingWork = Callable[[], bool]
"""Whether other work of the run (besides this batch) is queued or running. Blocking; called
in a thread."""

_RUNNING_UNLESS = ("running", "complete")
"""A batch with work to do moves its run to ``running``, unless it is running or complete."""


def nothing_pending() -> bool:
    """No other work of the run can be pending: the run executes in this process alone."""
    return False


@contextlib.contextmanager
def embedded_model(settings: Settings) -> Iterator[ModelEndpoint]:
    """The embedded model's servers as ``settings`` size them (``model_servers``,
    ``model_threads``), their logs in the data directory; stopped on leaving, whatever
    happens. Yields their base URLs."""
    from harness.model.local_model import running_local_model  # deferred: starts processes

    with running_local_model(
        servers=settings.model_servers,
        threads=settings.model_threads,
        log_dir=settings.home / "logs",
        weights=settings.model_weights,
    ) as pool:
        yield pool.base_urls


def model_per_batch(settings: Settings) -> LocalModelSource:
    """Start the embedded model for the batch and stop it after, whatever happens."""
    return lambda: embedded_model(settings)


def model_at(base_url: ModelEndpoint) -> LocalModelSource:
    """An embedded model someone else runs at ``base_url`` (one URL or several)."""
    return lambda: contextlib.nullcontext(base_url)


@dataclass(frozen=True)
class BatchResult:
    """What one :func:`execute_batch` did."""

    summary: RunSummary | None
    """The runner's summary; None when every pair of the batch already had a trial (nothing
    was attempted, no agent built)."""
    status: str | None
    """The status the completion bookkeeping wrote (``complete`` or ``incomplete``), if any."""


async def execute_batch(
    store: Store,
    settings: Settings,
    run_id: str,
    *,
    agents: Collection[str] | None = None,
    item_ids: Collection[str] | None = None,
    local_model: LocalModelSource | None = None,
    progress: ProgressSink | None = None,
    others_pending: PendingWork | None = nothing_pending,
    interrupt_on_failure: bool = True,
    ledger: Ledger | None = None,
) -> BatchResult:
    """Attempt every pair of the batch (``agents`` × ``item_ids`` of the stored run, by name
    and id; None means all of them) that has no trial yet; then settle the run (:func:`settle_run`).

    With work to do, the run moves to ``running`` first (unless it is complete) and is sealed
    in the ledger (:func:`seal_run`) before any trial is written. The embedded
    model comes from ``local_model`` (default: started for this batch) and is asked for only
    if an agent of the batch needs it. If the batch raises or is cancelled, the run becomes
    ``interrupted`` when ``interrupt_on_failure`` (unless it is complete), else its status is
    left as it was; either way the error propagates.

    Once the status says the run ended, the self-forecasts the service holds for it are
    revealed and scored (:func:`harness.run.forecasting.reveal_ended`, with ``ledger`` or one
    opened from the settings; a failure there is logged, never raised).

    Idempotent: executing a batch twice, or twice at once, stores each trial once."""
    run = await asyncio.to_thread(store.get_run, run_id)
    planned = await asyncio.to_thread(store.run_agents, run_id)
    everyone = planned
    if agents is not None:
        agents = {agents} if isinstance(agents, str) else set(agents)
        known = {ra.name for ra in planned}
        for name in agents:
            if name not in known:
                raise UserError(f"run {run_id} has no agent named {name!r}")
        planned = [ra for ra in planned if ra.name in agents]
    ids = await asyncio.to_thread(store.run_item_ids, run_id)
    wanted = set(ids) if item_ids is None else set(item_ids)
    if unknown := wanted.difference(ids):
        log.warning("run %s has no item(s) %s; skipped", run_id, ", ".join(sorted(unknown)))
    done = await asyncio.to_thread(store.done_pairs, run_id)
    # the positions of the batch's items that some agent of the batch has no trial for
    positions = [
        i
        for i, item_id in enumerate(ids)
        if item_id in wanted and any((ra.name, item_id) not in done for ra in planned)
    ]

    summary: RunSummary | None = None
    if positions:
        await asyncio.to_thread(store.transition_run, run_id, "running", unless=_RUNNING_UNLESS)
        items = await asyncio.to_thread(
            _batch_items, store, run_id, ids, positions, whole=item_ids is None
        )
        # the agents in the batch's agents' control seats (repeated games against an agent of
        # the run) are built too when the batch leaves them out; they play no trials of their own
        control_of = control_seats(everyone)
        names = {ra.name for ra in planned}
        seated = {control_of[n] for n in names if n in control_of} - names
        with_seats = [*planned, *(ra for ra in everyone if ra.name in seated)]
        try:
            await asyncio.to_thread(seal_run, store, settings, run_id)
            async with (
                _local_model_url(
                    local_model or model_per_batch(settings),
                    needed=needs_local_model(with_seats),
                ) as base_url,
                built_agents(
                    with_seats, settings, seed=run.seed, store=store, local_base_url=base_url
                ) as built,
            ):
                summary = await execute_run(
                    store,
                    run_id,
                    built[: len(planned)],
                    items,
                    concurrency=_concurrency(planned, settings),
                    progress=progress,
                    seats=Seats.of(built, control_of),
                )
        except BaseException:
            if interrupt_on_failure:
                await _to_thread_to_the_end(lambda: _interrupt(store, run_id))
            raise
    status = await asyncio.to_thread(settle_run, store, run_id, others_pending=others_pending)
    if status is not None:
        await asyncio.to_thread(reveal_ended, store, settings, run_id, ledger)
    return BatchResult(summary, status)


def seal_run(store: Store, settings: Settings, run_id: str) -> None:
    """Seal the run in the ledger (:meth:`ledger.predictions.Ledger.seal_run`: its
    ``run-start`` entry; idempotent) before any of its trials is written, so that the ledger
    alone shows which self-forecasts of it were committed before its first trial, and takes
    none after. Blocking. A failure propagates: a run that cannot be sealed does not start.

    The seal neither checks nor moves the data directory's head witness, and keeps no heads
    file: one data directory may serve the runs of several databases (``--db-url``, tests),
    and a run must not fail because another database's ledger was witnessed there. The head
    is still checked (its hash and the service key's signature), and what the witness guards
    against (a cut-off tail, a replaced ledger) is still caught by every witnessed append — a
    forecast's commit among them — and by ``ledger verify``."""
    from harness.config.workspace import SeedPolicy, Workspace  # the ledger loads on first use

    workspace = Workspace(settings, store.engine, store, SeedPolicy.of(settings))
    ledger = workspace.new_ledger(heads_file=False, witness=False)
    try:
        ledger.seal_run(run_id)
    finally:
        ledger.close()


def settle_run(store: Store, run_id: str, *, others_pending: PendingWork | None) -> str | None:
    """The run's completion bookkeeping, safe from any process at any time (blocking).

    No pair missing: the run becomes ``complete`` (only the first caller writes). Pairs missing
    and ``others_pending()`` false: ``incomplete`` (it stops here; resuming or enqueueing it
    again finishes it). ``others_pending`` None means that cannot be known: nothing is written.
    Returns the status written, if any."""
    return settle_status(store, run_id, done=not store.missing_pairs(run_id),
                         others_pending=others_pending)


def settle_status(
    store: Store, run_id: str, *, done: bool, others_pending: PendingWork | None
) -> str | None:
    """Write the status a run's completion bookkeeping reaches (a suite or a matrix run):
    ``done`` (every trial stored), ``complete`` — only the first caller writes; else
    ``incomplete`` when ``others_pending()`` says no other batch of it is queued or running
    (None: that cannot be known, nothing is written). Returns the status written, if any."""
    if done:
        return (
            "complete" if store.transition_run(run_id, "complete", unless=("complete",)) else None
        )
    if (
        others_pending is not None
        and not others_pending()
        and store.transition_run(run_id, "incomplete", unless=("complete", "incomplete"))
    ):
        return "incomplete"
    return None


def _batch_items(
    store: Store, run_id: str, ids: Sequence[str], positions: Sequence[int], *, whole: bool
) -> Sequence[Item]:
    """The run's items for the runner: all of them for a whole run (so that its progress counts
    the ones already done), else those at ``positions`` (and only those are read)."""
    if whole:
        return store.run_items(run_id)
    return store.items_by_id([ids[i] for i in positions])


def _interrupt(store: Store, run_id: str) -> None:
    """Mark the run ``interrupted`` (unless complete); a failure to say so is logged, so that
    the error that interrupted the run is the one raised."""
    try:
        store.transition_run(run_id, "interrupted", unless=("complete",))
    except Exception:
        log.warning("could not mark run %s interrupted", run_id, exc_info=True)


def _concurrency(planned: Collection[RunAgent], settings: Settings) -> dict[str, int]:
    return {ra.name: concurrency_of(ra, settings) for ra in planned}


@contextlib.asynccontextmanager
async def _local_model_url(
    source: LocalModelSource, *, needed: bool
) -> AsyncIterator[ModelEndpoint | None]:
    """The embedded model's URL for the batch (None when no agent needs it), entered and left
    in a thread. A model being started when the batch is cancelled is still stopped."""
    if not needed:
        yield None
        return
    stack = contextlib.ExitStack()
    try:
        url = await _to_thread_to_the_end(lambda: stack.enter_context(source()))
        yield url
    finally:
        await _to_thread_to_the_end(stack.close)


async def _to_thread_to_the_end(fn: Callable[[], T]) -> T:
    """``fn()`` in a thread, awaited until it returns even if this task is cancelled meanwhile
    (the cancellation is re-raised afterwards): so what it starts or writes is never left
    half-done behind a Ctrl-C."""
    fut = asyncio.ensure_future(asyncio.to_thread(fn))
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(fut)
            break
        except asyncio.CancelledError:
            if fut.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
