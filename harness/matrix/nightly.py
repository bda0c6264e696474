"""The nightly prediction matrix beside a suite run: planned (piloted when ``[schedule.matrix]``
says so) as a matrix run of a fixed id, in the daemon's process or on a queue worker.

The daemon's nightly job (:class:`harness.daemon.scheduler.DaemonContext`) runs the suite, then
the matrix over the suite run's agents (its ablation variants apart). On SQLite it plans and
executes the matrix in its own process. On PostgreSQL (``[schedule.matrix] queue = "auto"``,
the default) it defers one ``mindledger.nightly_matrix`` job instead
(:func:`harness.queue.batches.defer_nightly_matrix`): a worker plans the run with
:func:`plan_matrix_beside` — the pilot included, which asks every target — and queues its
items in batches for the workers (:func:`harness.queue.batches.enqueue_run`).

**Resumable.** The matrix run beside suite run ``S`` has the id ``S-matrix``
(:func:`matrix_run_id`), so planning it is idempotent: a job run again (its worker died, it
was retried, the daemon deferred it twice) finds the run already stored and only queues what
it still lacks, and a matrix run already stored is never piloted again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from harness.config.schedule_config import MatrixSchedule, parse_matrix_schedule
from harness.config.settings import Settings
from harness.matrix.runs import (
    MatrixOptions,
    PilotOptions,
    create_matrix_run,
    matrix_agents,
    plan_matrix_run,
)
from harness.model.local_model import ModelEndpoint
from ledger.store import Store
from mindledger.errors import NotFoundError

__all__ = [
    "matrix_run_id",
    "plan_matrix_beside",
    "schedule_from_json",
    "schedule_to_json",
]

log = logging.getLogger("mindledger.daemon")

SUFFIX = "-matrix"


def matrix_run_id(suite_run: str) -> str:
    """The id of the nightly matrix run beside the suite run ``suite_run``."""
    return suite_run + SUFFIX


def schedule_to_json(schedule: MatrixSchedule) -> dict[str, Any]:
    """``schedule`` as a queued job's argument (:func:`schedule_from_json` reads it back)."""
    return {k: v for k, v in schedule.public_dict().items() if v is not None}


def schedule_from_json(data: Mapping[str, Any]) -> MatrixSchedule:
    """A :class:`MatrixSchedule` from :func:`schedule_to_json`, every key checked as the
    settings file's are."""
    return parse_matrix_schedule(dict(data), source="the nightly matrix job")


def _stored(store: Store, run_id: str) -> bool:
    try:
        store.get_run(run_id)
    except NotFoundError:
        return False
    return True


def plan_matrix_beside(
    store: Store,
    settings: Settings,
    suite_run: str,
    schedule: MatrixSchedule,
    *,
    local_base_url: ModelEndpoint | None = None,
) -> str | None:
    """Store the matrix run beside ``suite_run`` (held-out seed, ``accompanies`` it) over the
    agents of that run that can take part (not its ablation variants), piloted when
    ``schedule.pilots`` the number of agents; return its id (:func:`matrix_run_id`), or None
    when no agent can take part. A run already stored under that id is returned as it is.
    Blocking: a pilot asks every target every candidate K times."""
    run_id = matrix_run_id(suite_run)
    if _stored(store, run_id):
        log.info("matrix run %s beside run %s is stored already", run_id, suite_run)
        return run_id
    # ablation variants measure a module's credit in the suite: not matrix seats (each seat
    # adds a row and a column of predictions)
    seats = [ra for ra in store.run_agents(suite_run) if ra.role != "ablation"]
    planned = matrix_agents(seats)
    if not planned:
        log.info("no agent of run %s can take part in the matrix", suite_run)
        return None
    options = MatrixOptions(
        n_items=schedule.items,
        samples=schedule.samples,
        conditions=schedule.conditions,
        second_order=schedule.second_order,
        held_out=True,
        accompanies=suite_run,
    )
    if schedule.pilots(len(planned)):
        _, _, record = plan_matrix_run(
            store,
            settings,
            planned=planned,
            options=options,
            pilot=PilotOptions(kinds=schedule.kinds, n_candidates=schedule.candidates),
            local_base_url=local_base_url,
            run_id=run_id,
        )
        log.info("matrix pilot beside run %s: %s", suite_run, record.verdict)
    else:
        log.info(
            "no pilot of the matrix beside run %s ([schedule.matrix] pilot = %s, %d agent(s)): "
            "the seed's arbitrary-choice items, unfiltered",
            suite_run,
            "auto" if schedule.pilot is None else "false",
            len(planned),
        )
        create_matrix_run(store, settings, planned=planned, options=options, run_id=run_id)
    log.info("matrix run %s planned beside run %s", run_id, suite_run)
    return run_id
