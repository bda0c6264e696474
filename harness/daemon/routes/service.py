"""The service itself: ``GET /health`` (no token), ``GET /openapi.json`` (no token) and
``GET /metrics`` (operators only)."""

from __future__ import annotations

from typing import Literal

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from harness.daemon.endpoint import Call, Endpoint
from harness.daemon.models import Model
from harness.daemon.services import Services

__all__ = ["ENDPOINTS", "Health", "Metrics", "health", "metrics", "openapi"]


class Health(Model):
    status: Literal["ok"]
    scheduler: Literal["running", "off"]


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


async def health(services: Services, call: Call[None, None, None]) -> Health:
    scheduler = services.scheduler
    return Health(
        status="ok", scheduler="running" if scheduler is not None and scheduler.running else "off"
    )


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


async def metrics(services: Services, call: Call[None, None, None]) -> Metrics:
    return await run_in_threadpool(_metrics, services)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/health", health, "liveness", answer=Health),
    Endpoint("GET", "/openapi.json", openapi, "this document"),
    Endpoint("GET", "/metrics", metrics, "counts and the ledger head", answer=Metrics),
)
