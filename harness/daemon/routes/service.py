"""The service itself: ``GET /health`` (no token), ``GET /openapi.json`` (no token) and
``GET /metrics`` (operators only).

``/health`` answers 200 when the scheduler, the database and the ledger are all ok and 503
otherwise (:mod:`harness.daemon.health`), to anyone: its status and the scheduler's state. An
operator token gets each check's findings too, and how the last nightly job ended (they name
runs and errors: the operator's to read).

``/metrics`` is the Prometheus text format (:mod:`harness.daemon.telemetry`);
``/metrics?format=json`` is the earlier JSON summary (runs, trials, predictions, the ledger's
head).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import sqlalchemy as sa
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from harness.daemon import tokens
from harness.daemon.endpoint import Call, Endpoint
from harness.daemon.health import (
    CHECK_TIMEOUT,
    SchedulerState,
    check_all,
    in_thread,
    scheduler_state,
)
from harness.daemon.models import Model, Query
from harness.daemon.services import Services
from harness.daemon.telemetry import CONTENT_TYPE
from harness.daemon.web import ApiError

__all__ = ["ENDPOINTS", "Health", "Metrics", "MetricsQuery", "health", "metrics", "openapi"]


class Health(Model):
    status: Literal["ok", "unavailable"]
    """ok: every check passed (200); unavailable: one did not (503)."""
    scheduler: SchedulerState
    """off: the daemon runs no scheduler (``serve --no-scheduler``), which is not a fault."""
    checks: dict[str, dict[str, Any]] | None = None
    """Operator tokens only: each check (scheduler, database, ledger), ``ok`` and its
    findings."""
    last_nightly: dict[str, Any] | None = None
    """Operator tokens only: the nightly job that ended last since the daemon started (when,
    failed or ended, its run and the run's status)."""


class LedgerCounts(Model):
    entries: int
    """Entries in the ledger."""
    head: str | None
    """The hash of the latest entry (None: the ledger is empty)."""
    public_key: str


class Metrics(Model):
    runs: int
    trials: int
    predictions: int
    ledger: LedgerCounts


class MetricsQuery(Query):
    format: Literal["prometheus", "json"] = "prometheus"
    """prometheus: the Prometheus text format (version 0.0.4); json: the counts as one object."""


async def _is_operator(services: Services, request: Request) -> bool:
    """Whether the request carries a valid operator token (a read only, within the checks'
    timeout: a locked database leaves the caller anonymous rather than the answer waiting)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return False
    try:
        principal = await asyncio.wait_for(
            in_thread(
                lambda: tokens.authenticate(
                    services.engine, token.strip(), now=services.clock(), record_use=False
                )
            ),
            CHECK_TIMEOUT,
        )
    except Exception:
        return False
    return principal is not None and principal.is_operator


async def health(services: Services, call: Call[None, None, None]) -> Response:
    ok, detail = await check_all(services)
    body = Health(status="ok" if ok else "unavailable", scheduler=scheduler_state(services))
    out = body.model_dump(mode="json", exclude_none=True)
    if await _is_operator(services, call.request):
        out.update(detail)
    return JSONResponse(out, status_code=200 if ok else 503)


async def openapi(services: Services, call: Call[None, None, None]) -> Response:
    return JSONResponse(services.document)


def _metrics(services: Services) -> Metrics:
    totals = services.store.totals()
    ledger = services.ledger
    head = ledger.head()
    return Metrics(
        runs=totals["runs"],
        trials=totals["trials"],
        predictions=ledger.count("commit"),
        ledger=LedgerCounts(
            entries=0 if head is None else head.seq,
            head=None if head is None else head.hash,
            public_key=ledger.public_key_hex,
        ),
    )


async def metrics(services: Services, call: Call[None, MetricsQuery, None]) -> Metrics | Response:
    if call.query.format == "json":
        return await run_in_threadpool(_metrics, services)
    telemetry = services.telemetry
    assert telemetry is not None, "the app's services have their telemetry"
    try:
        text = await run_in_threadpool(telemetry.exposition)
    except sa.exc.SQLAlchemyError as exc:
        raise ApiError(
            503, "unavailable", f"the database could not be read: {type(exc).__name__}"
        ) from None
    return Response(text, media_type=CONTENT_TYPE)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "GET",
        "/health",
        health,
        "whether the scheduler, the database and the ledger are alive",
        description="200 when every check passes, 503 (the same body) when one does not. "
        "An operator token also gets each check's findings and how the last nightly job ended.",
        answer=Health,
        answered_as=(503,),
    ),
    Endpoint("GET", "/openapi.json", openapi, "this document"),
    Endpoint(
        "GET",
        "/metrics",
        metrics,
        "the daemon's metrics in the Prometheus text format (?format=json: counts and the "
        "ledger head)",
        query=MetricsQuery,
        answer=Metrics,
        media_types=(CONTENT_TYPE.split(";")[0],),
    ),
)
