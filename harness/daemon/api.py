"""The daemon's HTTP API: an ASGI app (Starlette) over the store, the ledger and the scheduler.

Every path but ``/health`` and the witness's ``/witness/…`` needs ``Authorization: Bearer
<token>`` (``mindledger serve token`` makes one). An ``agent`` token acts as its agent: it commits and reveals that agent's
predictions, calls the query proxy as that caller and requests that agent's runs. An
``operator`` token records observations, sees held-out seeds and requests runs of any agent.

=======  =======================================  ==============================================
GET      /health                                  scheduler, database and ledger alive: 200 or
                                                  503 (no token; an operator's: the findings)
GET      /openapi.json                            this API as an OpenAPI 3.1 document (no token)
GET      /metrics                                 Prometheus metrics (``?format=json``: counts
                                                  and the ledger head; operators only)
GET      /whoami                                  the token's id, scope and agent
GET      /runs?limit=N                            the latest runs (an agent token: its own)
GET      /runs/{id}                               a run's summary and trial counts per agent
GET      /runs/{id}/profile                       the run's profile (as ``report --format json``)
POST     /runs                                    run-now: ``{"suite", "agent"?, "references"?,
                                                  "ablate"?, "forecasts"?}`` (modules of the
                                                  agent; its self-forecasts for the run)
POST     /predictions                             commit: ``{"target", "commitment", "request"
                                                  | "messages", "query"?}`` or ``{"target",
                                                  "query", "commitment"}``
GET      /predictions/{id}                        a prediction's state (its predictor's token
                                                  or an operator's; 404 for any other)
POST     /predictions/{id}/observe                ``{"answer", "request"?}`` (operators only)
POST     /predictions/{id}/reveal                 ``{"prediction", "salt"}`` → scores, or 409
POST     /forecasts                               a self-forecast for a run: ``{"run", "figure",
                                                  "commitment" | "forecast", "reason"?,
                                                  "predictor"?}`` (409 after the deadline)
GET      /forecasts?run=ID&agent=NAME             forecasts (an agent token: its own)
GET      /forecasts/{id}                          a forecast's state and, revealed, its scores
POST     /forecasts/{id}/reveal                   ``{"forecast", "reason", "salt"}`` once the run
                                                  has ended (409 before)
GET      /schedule/next?agent=NAME                the next nightly runs: run id, suite, deadline
                                                  and the figures to forecast
GET      /calls?agent=NAME                        the proxy's record per caller: calls, calls
                                                  with a prediction, refusals, obligations
                                                  (opened, met, pending, abandoned)
GET      /ledger/head                             the latest signed tree head
GET      /ledger/proof?seq=N&size=M               inclusion proof of entry N in the first M
GET      /ledger/consistency?old=M&new=N          consistency proof between two tree sizes
POST     /proxy/{target}/v1/chat/completions      the query proxy (see :mod:`.proxy`)
POST     /witness/cosign                          cosign another ledger's head (no token; see
GET      /witness/heads?log=NAME                  :mod:`.routes.witness`)
=======  =======================================  ==============================================

Errors are JSON: ``{"error": {"code", "message", "field"}}`` — 400 for a malformed body or
field (``field`` names it, ``message`` says what was expected), 401 without a valid token, 403
for what the token's scope may not do, 404 for an unknown id, 409 for a request that does not
fit the prediction's state (and for a reveal that does not match its commitment, which is
recorded), 428 from the proxy when a prediction is owed, 429 (with ``Retry-After``) when a
token has as many runs open as it may, 503 when the database or the ledger cannot be used. Bad
input never yields a 500.

**Resources.** Each resource's operations are declared in its own module of
:mod:`harness.daemon.routes` (runs, predictions, forecasts, calls, ledger, tokens, proxy, witness, and the
service itself): an :class:`~harness.daemon.endpoint.Endpoint` names the request's models and a
plain handler over :class:`~harness.daemon.services.Services`; the models validate the request
and :mod:`harness.daemon.openapi` generates ``/openapi.json`` from them.

**Who may call what** is one table, :data:`harness.daemon.access.ACCESS`: each route's guard
(:func:`harness.daemon.endpoint.route`) authenticates the token and refuses the scope the table
refuses (403) before the handler runs; the handler then scopes what an agent token reads to its
own agent's things. The OpenAPI document states the same table (``x-roles``).

**Whose runs.** An agent token lists and reads only its agent's own runs and profiles: those in
which the agent is the agent under test or the base of a derived agent (its control, its
ablations), and those its token requested, unless another agent is under test in them too
(:meth:`ledger.store.Store.owns_run`). Any other run is answered 404, as an unknown one is, so
ids are not confirmed. An operator token reads every run.

**Held-out runs** (:mod:`mindledger.disclosure`): a held-out run's seeds, item ids and item
bodies, and the query, item and observed answers of a prediction made on one of its items,
are withheld from every answer unless an operator token asks with ``?reveal_held_out=true``
(on ``/runs``, ``/runs/{id}``, ``/runs/{id}/profile`` and ``GET /predictions/{id}``); an
agent token that asks gets 403.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from harness.config.settings import MODULES, Settings
from harness.daemon.access import access_of
from harness.daemon.endpoint import ROUTE_KEY, route
from harness.daemon.openapi import openapi_document
from harness.daemon.proxy import Draw, Proxy, TransportFactory, system_draw
from harness.daemon.routes import ENDPOINTS
from harness.daemon.scheduler import DaemonScheduler
from harness.daemon.services import RequestQuota, Services
from harness.daemon.telemetry import Telemetry
from harness.daemon.web import ApiError, error_response, scrub_logs
from harness.daemon.witness_api import HeadSender
from ledger.cosign import WITNESS_DIR, WitnessStore
from ledger.db import Clock, utc_now
from ledger.errors import LedgerIntegrityError, LedgerKeyError, LedgerStateError
from ledger.predictions import Ledger
from ledger.store import Store
from mindledger.errors import InputError, NotFoundError, StorageError, UserError

__all__ = ["ERROR_HANDLERS", "TimedRequests", "create_app", "services_for"]

log = logging.getLogger("mindledger.daemon")

_CLI_HINT = re.compile(r" \(see `mindledger [^`]*`\)$")
"""The pointer to a command that some stored-data errors end with, for people at the command
line; the API's answers leave it out."""


def services_for(
    settings: Settings,
    *,
    store: Store,
    ledger: Ledger,
    scheduler: DaemonScheduler | None = None,
    transport_factory: TransportFactory | None = None,
    draw: Draw = system_draw,
    clock: Clock = utc_now,
    profile_boot: int = 2000,
) -> Services:
    """What the handlers of :func:`create_app` work over (a test calls a handler with it)."""
    proxy = Proxy(settings, ledger, transport_factory=transport_factory, draw=draw)
    telemetry = Telemetry(store.engine, ledger, scheduler)
    proxy.on_upstream = telemetry.observe_upstream
    return Services(
        settings=settings,
        store=store,
        ledger=ledger,
        proxy=proxy,
        telemetry=telemetry,
        quota=RequestQuota(settings.api_rate_limit, burst=2 * settings.api_rate_limit),
        witness=WitnessStore(Path(settings.home) / WITNESS_DIR),
        scheduler=scheduler,
        clock=clock,
        profile_boot=profile_boot,
        document=openapi_document(
            settings.agents,
            modules=[*MODULES, *(m for a in settings.agents.values() for m in a.own_modules)],
        ),
    )


def create_app(
    settings: Settings,
    *,
    store: Store,
    ledger: Ledger,
    scheduler: DaemonScheduler | None = None,
    transport_factory: TransportFactory | None = None,
    draw: Draw = system_draw,
    clock: Clock = utc_now,
    profile_boot: int = 2000,
    on_shutdown: Sequence[Callable[[], None]] = (),
) -> Starlette:
    """The API over ``store`` and ``ledger``; run-now requests go to ``scheduler`` (None: they
    get a 503). ``transport_factory`` and ``draw`` are the proxy's (see
    :class:`~harness.daemon.proxy.Proxy`); ``on_shutdown`` runs (in a worker thread) when the
    server shuts down, before uvicorn re-raises the signal that stopped it."""
    services = services_for(
        settings,
        store=store,
        ledger=ledger,
        scheduler=scheduler,
        transport_factory=transport_factory,
        draw=draw,
        clock=clock,
        profile_boot=profile_boot,
    )
    routes = [route(endpoint, services) for endpoint in ENDPOINTS]
    for r in routes:  # every operation has its row in the table
        for method in r.methods or ():
            if method != "HEAD":
                access_of(method, r.path)
    assert services.telemetry is not None
    return Starlette(
        routes=routes,
        middleware=[Middleware(TimedRequests, telemetry=services.telemetry)],
        exception_handlers=ERROR_HANDLERS,
        lifespan=_lifespan(services, HeadSender(settings, ledger), on_shutdown),
    )


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class TimedRequests:
    """ASGI middleware: each HTTP request's time until its answer is sent, observed in the
    request histogram under its route's path template and caller as the route noted them
    (:data:`~harness.daemon.endpoint.ROUTE_KEY`; a path no route matched: ``unmatched``)."""

    def __init__(self, app: ASGIApp, telemetry: Telemetry):
        self.app = app
        self.telemetry = telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.monotonic()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            path, caller = scope.get(ROUTE_KEY, ("unmatched", "anonymous"))
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.telemetry.observe_request(method, path, caller, status, time.monotonic() - start)


def _lifespan(
    services: Services, witnessed: HeadSender, on_shutdown: Sequence[Callable[[], None]]
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """While the app serves: sign a tree head every ``head_interval`` seconds while the ledger
    grows (each one goes to the heads file, and to the ledger's witnesses); at shutdown, close
    the proxy's clients and run ``on_shutdown``."""
    settings, ledger = services.settings, services.ledger

    async def verify_ledger() -> None:
        telemetry = services.telemetry
        assert telemetry is not None
        while True:
            verified = await run_in_threadpool(telemetry.verify_ledger)
            if not verified.ok:
                log.error(
                    "the ledger failed verification: %s",
                    verified.error or "; ".join(verified.failures[:3]),
                )
            await asyncio.sleep(settings.verify_interval)

    async def sign_heads() -> None:
        while True:
            await asyncio.sleep(settings.head_interval)
            try:
                await run_in_threadpool(lambda: witnessed.send(ledger.tree_head()))
            except (StorageError, LedgerIntegrityError, LedgerKeyError) as exc:
                log.error("could not sign a tree head: %s", exc)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        scrub_logs()
        tasks = [
            asyncio.create_task(loop())
            for loop, period in ((sign_heads, settings.head_interval),
                                 (verify_ledger, settings.verify_interval))
            if period > 0
        ]  # fmt: skip
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await services.proxy.aclose()
            for hook in on_shutdown:
                await run_in_threadpool(hook)

    return lifespan


# -- errors: every one a JSON body (web.error_response) -----------------------------------------


async def _on_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(
        exc.status, exc.code, exc.message, field=exc.field, headers=exc.headers, extra=exc.extra
    )


async def _on_user_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, NotFoundError):
        return error_response(404, "not_found", _CLI_HINT.sub("", str(exc)))
    if isinstance(exc, LedgerStateError):
        return error_response(
            409, "conflict", str(exc), extra={"state": exc.state, "id": exc.prediction}
        )
    if isinstance(exc, LedgerKeyError):
        return error_response(503, "ledger_key", str(exc))
    where = exc.where if isinstance(exc, InputError) else None
    return error_response(400, "invalid_field", str(exc), field=where)


async def _on_unavailable(request: Request, exc: Exception) -> Response:
    log.error("service unavailable: %s", exc)
    return error_response(503, "unavailable", str(exc))


async def _on_http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    message = str(exc.detail)
    if exc.status_code == 404:  # a route that does not exist (ids not found say so themselves)
        message = (
            f"no such route: {request.method} {request.url.path[:200]} (the daemon's routes are "
            "listed in GET /openapi.json; GET /health says whether it is well)"
        )
    return error_response(exc.status_code, code, message, headers=exc.headers)


async def _on_bug(request: Request, exc: Exception) -> Response:
    log.exception("internal error on %s %s", request.method, request.url.path)
    return error_response(500, "internal", "internal error (a bug): see the daemon's log")


ERROR_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    ApiError: _on_api_error,
    UserError: _on_user_error,
    StorageError: _on_unavailable,
    LedgerIntegrityError: _on_unavailable,
    HTTPException: _on_http,
    Exception: _on_bug,
}
"""How the API answers an exception: its own refusals, a user's error, an unavailable store or
ledger, Starlette's 404 and 405, and a bug (500, logged)."""
