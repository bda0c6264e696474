"""The daemon's HTTP API: an ASGI app (Starlette) over the store, the ledger and the scheduler.

Every path but ``/health`` needs ``Authorization: Bearer <token>`` (``mindledger serve token
AGENT`` makes one); the token names the agent, who commits and reveals as that predictor.

=======  =======================================  ==============================================
GET      /health                                  liveness (no token needed)
GET      /metrics                                 counts: runs, trials, predictions; ledger head
GET      /runs?limit=N                            the latest runs
GET      /runs/{id}                               a run's summary and trial counts per agent
GET      /runs/{id}/profile                       the run's profile (as ``report --format json``)
POST     /runs                                    run-now: ``{"suite", "agent"?, "references"?}``
POST     /predictions                             commit: ``{"target", "query", "commitment"}``
GET      /predictions/{id}                        a prediction's state
POST     /predictions/{id}/observe                ``{"answer"}`` (the predictor or the target)
POST     /predictions/{id}/reveal                 ``{"prediction", "salt"}`` → scores, or 409
POST     /proxy/{target}/v1/chat/completions      the query proxy (see :mod:`.proxy`)
=======  =======================================  ==============================================

Errors are JSON: ``{"error": {"code", "message", "field"}}`` — 400 for a malformed body or
field (``field`` names it, ``message`` says what was expected), 401 without a valid token, 403
for another agent's prediction, 404 for an unknown id, 409 for a request that does not fit the
prediction's state (and for a reveal that does not match its commitment, which is recorded),
503 when the database or the ledger cannot be used. Bad input never yields a 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import sqlalchemy as sa
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.daemon.proxy import Proxy, TransportFactory
from harness.daemon.scheduler import DaemonScheduler
from harness.daemon.tokens import agent_for_token
from harness.daemon.web import (
    ApiError,
    check_keys,
    error_response,
    json_object,
    kind_of,
    text_field,
)
from harness.settings import Settings
from harness.suites import SUITES
from ledger.db import Clock, utc_now
from ledger.ledger_errors import LedgerIntegrityError, LedgerKeyError, LedgerStateError
from ledger.models import RunRow
from ledger.predictions import Ledger
from ledger.store import Store
from mindledger.errors import InputError, NotFoundError, StorageError, UserError

__all__ = ["create_app"]

log = logging.getLogger("mindledger.daemon")


def _path_id(request: Request) -> str:
    pid = str(request.path_params["id"])
    if not pid or len(pid) > 200:
        raise ApiError(404, "not_found", "no such id")
    return pid


# -- the app ------------------------------------------------------------------------------------


def create_app(
    settings: Settings,
    *,
    store: Store,
    ledger: Ledger,
    scheduler: DaemonScheduler | None = None,
    transport_factory: TransportFactory | None = None,
    sampling_key: bytes = b"",
    clock: Clock = utc_now,
    profile_boot: int = 2000,
    on_shutdown: Sequence[Callable[[], None]] = (),
) -> Starlette:
    """The API over ``store`` and ``ledger``; run-now requests go to ``scheduler`` (None: they
    get a 503). ``transport_factory`` and ``sampling_key`` are the proxy's (see
    :class:`~harness.daemon.proxy.Proxy`); ``on_shutdown`` runs (in a worker thread) when the
    server shuts down, before uvicorn re-raises the signal that stopped it."""
    engine = store.engine
    proxy = Proxy(settings, ledger, transport_factory=transport_factory, sampling_key=sampling_key)

    async def authenticate(request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(
                401,
                "unauthorized",
                "expected an Authorization: Bearer <token> header "
                "(create a token with `mindledger serve token AGENT`)",
                field="Authorization",
                headers={"WWW-Authenticate": "Bearer"},
            )
        agent = await run_in_threadpool(agent_for_token, engine, token.strip())
        if agent is None:
            raise ApiError(
                401,
                "unauthorized",
                "unknown token",
                field="Authorization",
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        return agent

    # -- health and metrics --

    async def health(request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "scheduler": "running" if scheduler is not None and scheduler.running else "off",
            }
        )

    def _metrics() -> dict[str, Any]:
        with engine.connect() as conn:
            runs = conn.execute(sa.text("SELECT count(*) FROM runs")).scalar_one()
            trials = conn.execute(sa.text("SELECT count(*) FROM trials")).scalar_one()
            predictions = conn.execute(
                sa.text("SELECT count(*) FROM ledger_entries WHERE kind = 'commit'")
            ).scalar_one()
        head = ledger.head()
        return {
            "runs": int(runs),
            "trials": int(trials),
            "predictions": int(predictions),
            "ledger": {
                "entries": 0 if head is None else head.seq,
                "head": None if head is None else head.hash,
                "public_key": ledger.public_key_hex,
            },
        }

    async def metrics(request: Request) -> Response:
        await authenticate(request)
        return JSONResponse(await run_in_threadpool(_metrics))

    # -- runs --

    async def list_runs(request: Request) -> Response:
        await authenticate(request)
        raw = request.query_params.get("limit", "50")
        try:
            limit = int(raw)
        except ValueError:
            limit = -1
        if not 1 <= limit <= 1000:
            raise ApiError(
                400,
                "invalid_field",
                f"expected an integer from 1 to 1000, got {raw!r}",
                field="limit",
            )
        rows = await run_in_threadpool(store.list_runs, limit)
        return JSONResponse({"runs": [_run_dict(r) for r in rows]})

    def _run_detail(run_id: str) -> dict[str, Any]:
        run = store.get_run(run_id)
        agents = store.run_agents(run_id)
        return {
            **_run_dict(run),
            "agents": [
                {"name": a.name, "role": a.role, "base_agent": a.base_agent} for a in agents
            ],
            "items": len(store.run_items(run_id)),
            "trial_counts": store.trial_counts(run_id),
        }

    async def get_run(request: Request) -> Response:
        await authenticate(request)
        return JSONResponse(await run_in_threadpool(_run_detail, _path_id(request)))

    async def run_profile(request: Request) -> Response:
        await authenticate(request)
        run_id = _path_id(request)
        from reports.profile import build_profile
        from reports.render import render_json

        def build() -> str:
            store.get_run(run_id)  # 404 before any analysis
            return render_json(build_profile(store, run_id, n_boot=profile_boot), indent=None)

        text = await run_in_threadpool(build)
        return Response(text, media_type="application/json")

    async def post_run(request: Request) -> Response:
        agent = await authenticate(request)
        body = await json_object(request)
        check_keys(body, ("suite", "agent", "references"))
        suite = text_field(body, "suite", required=False) or scheduler_suite()
        if suite not in SUITES:
            raise ApiError(
                400,
                "invalid_field",
                f"expected one of {', '.join(SUITES)}, got {suite!r}",
                field="suite",
            )
        who = text_field(body, "agent", required=False)
        refs = body.get("references", [])
        if not isinstance(refs, list) or not all(isinstance(r, str) and r for r in refs):
            raise ApiError(
                400,
                "invalid_field",
                "expected a list of reference policy names",
                field="references",
            )
        if who is None and not refs:
            raise ApiError(
                400,
                "missing_field",
                "expected an agent or some references to run",
                field="agent",
            )
        if who is not None and who != agent:
            raise ApiError(
                403, "forbidden", f"this token may request runs of {agent!r} only", field="agent"
            )
        if scheduler is None or not scheduler.running:
            raise ApiError(503, "scheduler_off", "the scheduler is off (--no-scheduler)")
        sched = scheduler

        def plan() -> tuple[str, str]:
            try:
                run_id = sched.context.plan_run(
                    suite=suite, agents=(who,) if who else (), references=refs
                )
            except UserError as exc:
                raise ApiError(
                    400, "invalid_field", str(exc), field="agent" if who else "references"
                ) from None
            return run_id, sched.run_now(run_id)

        run_id, job = await run_in_threadpool(plan)
        run = await run_in_threadpool(store.get_run, run_id)
        return JSONResponse({"run": _run_dict(run), "job": job}, status_code=202)

    def scheduler_suite() -> str:
        return scheduler.suite if scheduler is not None else "quick"

    # -- predictions --

    async def commit(request: Request) -> Response:
        agent = await authenticate(request)
        body = await json_object(request)
        check_keys(
            body,
            ("predictor", "target", "query", "commitment", "item", "condition", "agent_signature"),
        )
        predictor = text_field(body, "predictor", required=False) or agent
        if predictor != agent:
            raise ApiError(
                403, "forbidden", f"this token commits as {agent!r} only", field="predictor"
            )
        target = text_field(body, "target")
        query = text_field(body, "query")
        commitment = text_field(body, "commitment")
        item = text_field(body, "item", required=False)
        signature = text_field(body, "agent_signature", required=False)
        assert target is not None and query is not None and commitment is not None
        receipt = await run_in_threadpool(
            lambda: ledger.commit(
                predictor,
                target,
                query,
                commitment,
                item=item,
                condition=body.get("condition"),
                agent_signature=signature,
            )
        )
        return JSONResponse(receipt.to_dict(), status_code=201)

    async def show_prediction(request: Request) -> Response:
        await authenticate(request)
        pid = _path_id(request)
        state = await run_in_threadpool(ledger.prediction, pid)
        return JSONResponse(state.to_dict(clock()))

    async def observe(request: Request) -> Response:
        agent = await authenticate(request)
        pid = _path_id(request)
        body = await json_object(request)
        check_keys(body, ("answer",))
        if not isinstance(body.get("answer"), str):
            raise ApiError(
                400,
                "invalid_field",
                f"expected the answer as a string, got {kind_of(body.get('answer'))}",
                field="answer",
            )
        answer = str(body["answer"])
        state = await run_in_threadpool(ledger.prediction, pid)
        if agent not in (state.predictor, state.target):
            raise ApiError(
                403,
                "forbidden",
                f"only the predictor or the target may record answers to {pid}",
            )
        entry = await run_in_threadpool(ledger.observe, pid, answer)
        return JSONResponse({"id": pid, "seq": entry.seq, "entry": entry.hash}, status_code=201)

    async def reveal(request: Request) -> Response:
        agent = await authenticate(request)
        pid = _path_id(request)
        body = await json_object(request)
        check_keys(body, ("prediction", "salt"))
        revealed = body.get("prediction")
        if not isinstance(revealed, dict):
            raise ApiError(
                400,
                "invalid_field",
                f"expected the committed prediction as a JSON object, got {kind_of(revealed)}",
                field="prediction",
            )
        salt = text_field(body, "salt")
        state = await run_in_threadpool(ledger.prediction, pid)
        if state.predictor != agent:
            raise ApiError(403, "forbidden", f"only {state.predictor!r} may reveal {pid}")
        result = await run_in_threadpool(ledger.reveal, pid, revealed, str(salt))
        if result.accepted:
            return JSONResponse(result.to_dict())
        return error_response(
            409,
            "reveal_" + result.status,
            f"the reveal was recorded as {result.status}: {result.reason}",
            field="prediction" if result.status == "rejected" else None,
            extra={"result": result.to_dict()},
        )

    # -- the proxy --

    async def proxy_chat(request: Request) -> Response:
        agent = await authenticate(request)
        return await proxy.handle(request, agent, str(request.path_params["target"]))

    # -- errors --

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(
            exc.status, exc.code, exc.message, field=exc.field, headers=exc.headers, extra=exc.extra
        )

    async def on_user_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, NotFoundError):
            return error_response(404, "not_found", str(exc))
        if isinstance(exc, LedgerStateError):
            return error_response(
                409, "conflict", str(exc), extra={"state": exc.state, "id": exc.prediction}
            )
        if isinstance(exc, LedgerKeyError):
            return error_response(503, "ledger_key", str(exc))
        where = exc.where if isinstance(exc, InputError) else None
        return error_response(400, "invalid_field", str(exc), field=where)

    async def on_unavailable(request: Request, exc: Exception) -> Response:
        log.error("service unavailable: %s", exc)
        return error_response(503, "unavailable", str(exc))

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail), headers=exc.headers)

    async def on_bug(request: Request, exc: Exception) -> Response:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(500, "internal", "internal error (a bug): see the daemon's log")

    @asynccontextmanager
    async def lifespan(app: Starlette):  # type: ignore[no-untyped-def]
        try:
            yield
        finally:
            await proxy.aclose()
            for hook in on_shutdown:
                await run_in_threadpool(hook)

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/runs", list_runs, methods=["GET"]),
        Route("/runs", post_run, methods=["POST"]),
        Route("/runs/{id}", get_run, methods=["GET"]),
        Route("/runs/{id}/profile", run_profile, methods=["GET"]),
        Route("/predictions", commit, methods=["POST"]),
        Route("/predictions/{id}", show_prediction, methods=["GET"]),
        Route("/predictions/{id}/observe", observe, methods=["POST"]),
        Route("/predictions/{id}/reveal", reveal, methods=["POST"]),
        Route("/proxy/{target}/v1/chat/completions", proxy_chat, methods=["POST"]),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        ApiError: on_api_error,
        UserError: on_user_error,
        StorageError: on_unavailable,
        LedgerIntegrityError: on_unavailable,
        HTTPException: on_http,
        Exception: on_bug,
    }
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)


def _run_dict(run: RunRow) -> dict[str, Any]:
    """A run's summary. The seed of a held-out run is withheld: knowing it, an agent under test
    could regenerate the held-out items."""
    try:
        params = json.loads(run.params_json)
    except ValueError:
        params = {}
    if run.held_out:
        params.pop("seed", None)
    return {
        "id": run.id,
        "suite": run.suite,
        "seed": None if run.held_out else run.seed,
        "held_out": run.held_out,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "params": params,
    }
