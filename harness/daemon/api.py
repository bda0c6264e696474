"""The daemon's HTTP API: an ASGI app (Starlette) over the store, the ledger and the scheduler.

Every path but ``/health`` and the witness's ``/witness/…`` needs ``Authorization: Bearer
<token>`` (``mindledger serve token`` makes one). An ``agent`` token acts as its agent: it commits and reveals that agent's
predictions, calls the query proxy as that caller and requests that agent's runs. An
``operator`` token records observations, sees held-out seeds and requests runs of any agent.

=======  =======================================  ==============================================
GET      /health                                  liveness (no token needed)
GET      /openapi.json                            this API as an OpenAPI 3.1 document (no token)
GET      /metrics                                 counts: runs, trials, predictions; ledger head
                                                  (operators only)
GET      /whoami                                  the token's id, scope and agent
GET      /runs?limit=N                            the latest runs (an agent token: its own)
GET      /runs/{id}                               a run's summary and trial counts per agent
GET      /runs/{id}/profile                       the run's profile (as ``report --format json``)
POST     /runs                                    run-now: ``{"suite", "agent"?, "references"?,
                                                  "ablate"?}`` (modules of the agent)
POST     /predictions                             commit: ``{"target", "commitment", "request"
                                                  | "messages", "query"?}`` or ``{"target",
                                                  "query", "commitment"}``
GET      /predictions/{id}                        a prediction's state (its predictor's token
                                                  or an operator's; 404 for any other)
POST     /predictions/{id}/observe                ``{"answer", "request"?}`` (operators only)
POST     /predictions/{id}/reveal                 ``{"prediction", "salt"}`` → scores, or 409
GET      /calls?agent=NAME                        the proxy's record per caller: calls, calls
                                                  with a prediction, refusals, obligations
                                                  (opened, met, pending, abandoned)
GET      /ledger/head                             the latest signed tree head
GET      /ledger/proof?seq=N&size=M               inclusion proof of entry N in the first M
GET      /ledger/consistency?old=M&new=N          consistency proof between two tree sizes
POST     /proxy/{target}/v1/chat/completions      the query proxy (see :mod:`.proxy`)
POST     /witness/cosign                          cosign another ledger's head (no token; see
GET      /witness/heads?log=NAME                  :mod:`.witness_api`)
=======  =======================================  ==============================================

Errors are JSON: ``{"error": {"code", "message", "field"}}`` — 400 for a malformed body or
field (``field`` names it, ``message`` says what was expected), 401 without a valid token, 403
for what the token's scope may not do, 404 for an unknown id, 409 for a request that does not
fit the prediction's state (and for a reveal that does not match its commitment, which is
recorded), 428 from the proxy when a prediction is owed, 429 (with ``Retry-After``) when a
token has as many runs open as it may, 503 when the database or the ledger cannot be used. Bad
input never yields a 500.

**Who may call what** is one table, :data:`harness.daemon.access.ACCESS`: each route is built
by ``route`` (in :func:`create_app`), whose guard authenticates the token and refuses the scope
the table refuses (403) before the handler runs; the handler then scopes what an agent token
reads to its own agent's things. The OpenAPI document states the same table (``x-roles``).

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
import json
import logging
import math
import re
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.build import PlanFields, plan_agents
from harness.daemon import tokens
from harness.daemon.access import access_of
from harness.daemon.openapi import openapi_document
from harness.daemon.proxy import Draw, Proxy, TransportFactory, system_draw
from harness.daemon.scheduler import DaemonScheduler
from harness.daemon.tokens import Principal, claim_run_request, release_run_request
from harness.daemon.web import (
    ApiError,
    Handler,
    check_keys,
    error_response,
    json_object,
    kind_of,
    known_query,
    scrub_logs,
    text_field,
)
from harness.daemon.witness_api import HeadSender, witness_routes
from harness.runs import new_run_id
from harness.settings import MODULES, Settings
from harness.suites import SUITES
from ledger.calls import CallTally, summarise
from ledger.db import Clock, utc_now
from ledger.errors import LedgerIntegrityError, LedgerKeyError, LedgerStateError
from ledger.models import RunRow
from ledger.predictions import Ledger
from ledger.protocol import is_digest, provenance, query_hash, query_text, response_hash
from ledger.store import Store
from mindledger.disclosure import disclosed_params, withholds
from mindledger.errors import ConfigError, InputError, NotFoundError, StorageError, UserError

__all__ = ["create_app"]

log = logging.getLogger("mindledger.daemon")

RETRY_AFTER = 60
"""Seconds a client at its cap of open runs is told to wait (``Retry-After``)."""
MAX_ABLATIONS = 8
"""Most modules one run request may ablate (each adds a variant running the whole suite)."""
REVEAL_PARAM = "reveal_held_out"
"""The query parameter with which an operator token asks for held-out seeds and items."""
Guarded = Callable[[Request, Principal], Awaitable[Response]]
"""A handler of a route that needs a token: it gets the caller the guard authenticated."""
RUN_FIELDS = PlanFields(agent="agent", control="control", reference="references", ablate="ablate")
"""The fields of ``POST /runs`` that name agents, as the run planner's errors name them."""


def _plan_error(exc: UserError, *, agent: str | None) -> ApiError:
    """A 400 for a run request the planner refused, naming the body's field at fault: the one
    the error names, else ``agent`` (a declared agent that cannot run) or ``references``."""
    named = None
    if isinstance(exc, InputError):
        named = exc.where
    elif isinstance(exc, ConfigError):
        named = exc.key
    if named not in (RUN_FIELDS.agent, RUN_FIELDS.reference, RUN_FIELDS.ablate):
        named = RUN_FIELDS.agent if agent else RUN_FIELDS.reference
    return ApiError(400, "invalid_field", str(exc), field=named)


_CLI_HINT = re.compile(r" \(see `mindledger [^`]*`\)$")
"""The pointer to a command that some stored-data errors end with, for people at the command
line; the API's answers leave it out."""


class RateLimiter:
    """A token bucket per API token: ``rate`` requests a second, bursts up to ``burst``.
    ``take`` spends one request and returns 0, or the seconds until one is available."""

    def __init__(self, rate: float, *, burst: float, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.burst = max(burst, 1.0)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str) -> float:
        now = self.clock()
        level, then = self._buckets.get(key, (self.burst, now))
        level = min(self.burst, level + (now - then) * self.rate)
        if level < 1:
            self._buckets[key] = (level, now)
            return (1 - level) / self.rate
        self._buckets[key] = (level - 1, now)
        return 0.0


def _path_id(request: Request) -> str:
    pid = str(request.path_params["id"])
    if not pid or len(pid) > 200:
        raise ApiError(404, "not_found", "no such id")
    return pid


def _int_param(request: Request, name: str, *, default: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0 or len(raw) > 19:
        raise ApiError(
            400, "invalid_field", f"expected a whole number ≥ 0, got {raw[:40]!r}", field=name
        )
    return value


def _acting_agent(principal: Principal, what: str) -> str:
    """The agent an agent token acts as; 403 for an operator token."""
    if principal.scope != "agent" or principal.agent is None:
        raise ApiError(
            403,
            "forbidden",
            f"an operator token does not {what}: use the agent's own token",
            field="Authorization",
        )
    return principal.agent


def _reveal(request: Request, principal: Principal) -> bool:
    """Whether this request gets a held-out run's seeds and items: an operator token that asks
    with ``?reveal_held_out=true``. 400 for another value, 403 for an agent token that asks."""
    raw = request.query_params.get(REVEAL_PARAM)
    if raw is None:
        return False
    if raw not in ("true", "false"):
        raise ApiError(
            400, "invalid_field", f"expected true or false, got {raw[:40]!r}", field=REVEAL_PARAM
        )
    asked = raw == "true"
    if asked and not principal.sees_held_out:
        raise ApiError(
            403,
            "forbidden",
            "held-out runs' seeds and items are for operator tokens only",
            field=REVEAL_PARAM,
        )
    return principal.reveals(asked)


# -- the app ------------------------------------------------------------------------------------


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
    engine = store.engine
    document = openapi_document(
        settings.agents,
        modules=[*MODULES, *(m for a in settings.agents.values() for m in a.own_modules)],
        max_ablations=MAX_ABLATIONS,
    )
    limiter = RateLimiter(settings.api_rate_limit, burst=2 * settings.api_rate_limit)
    proxy = Proxy(settings, ledger, transport_factory=transport_factory, draw=draw)
    witnessed = HeadSender(settings, ledger)

    async def authenticate(request: Request) -> Principal:
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
        principal = await run_in_threadpool(
            lambda: tokens.authenticate(engine, token.strip(), now=clock())
        )
        if principal is None:
            raise ApiError(
                401,
                "unauthorized",
                "unknown token",
                field="Authorization",
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        wait = limiter.take(principal.token_id)
        if wait > 0:
            raise ApiError(
                429,
                "rate_limited",
                f"more than {settings.api_rate_limit:g} requests a second from this token: "
                "slow down",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )
        return principal

    # -- health and metrics --

    async def health(request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "scheduler": "running" if scheduler is not None and scheduler.running else "off",
            }
        )

    def _metrics() -> dict[str, Any]:
        totals = store.totals()
        head = ledger.head()
        return {
            "runs": totals["runs"],
            "trials": totals["trials"],
            "predictions": ledger.count("commit"),
            "ledger": {
                "entries": 0 if head is None else head.seq,
                "head": None if head is None else head.hash,
                "public_key": ledger.public_key_hex,
            },
        }

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def whoami(request: Request, principal: Principal) -> Response:
        return JSONResponse(
            {
                "token": principal.token_id,
                "scope": principal.scope,
                "agent": principal.agent,
                "label": principal.label,
            }
        )

    async def metrics(request: Request, principal: Principal) -> Response:
        return JSONResponse(await run_in_threadpool(_metrics))

    # -- runs --

    async def list_runs(request: Request, principal: Principal) -> Response:
        raw = request.query_params.get("limit", "50")
        try:
            limit = int(raw)
        except ValueError:
            limit = -1
        if not 1 <= limit <= 1000:
            raise ApiError(
                400,
                "invalid_field",
                f"expected an integer from 1 to 1000, got {raw[:40]!r}",
                field="limit",
            )
        reveal = _reveal(request, principal)
        rows = await run_in_threadpool(
            lambda: store.list_runs(limit, owner=principal.owner, token_id=principal.token_id)
        )
        return JSONResponse({"runs": [_run_dict(r, reveal=reveal) for r in rows]})

    def _readable_run(principal: Principal, run_id: str) -> RunRow:
        """The run, if this token may read it (404 otherwise, as for an unknown run)."""
        run = store.get_run(run_id)
        owner = principal.owner
        if owner is not None and not store.owns_run(run_id, owner, principal.token_id):
            raise ApiError(404, "not_found", f"no run with id {run_id!r}")
        return run

    def _run_detail(principal: Principal, run_id: str, reveal: bool) -> dict[str, Any]:
        run = _readable_run(principal, run_id)
        agents = store.run_agents(run_id)
        return {
            **_run_dict(run, reveal=reveal),
            "agents": [
                {"name": a.name, "role": a.role, "base_agent": a.base_agent} for a in agents
            ],
            "items": len(store.run_items(run_id)),
            "trial_counts": store.trial_counts(run_id),
        }

    async def get_run(request: Request, principal: Principal) -> Response:
        run_id = _path_id(request)
        reveal = _reveal(request, principal)
        detail = await run_in_threadpool(_run_detail, principal, run_id, reveal)
        return JSONResponse(detail)

    async def run_profile(request: Request, principal: Principal) -> Response:
        run_id = _path_id(request)
        from reports.profile import build_profile
        from reports.render import render_json

        reveal = _reveal(request, principal)

        def build() -> str:
            _readable_run(principal, run_id)  # 404 before any analysis
            profile = build_profile(store, run_id, n_boot=profile_boot, reveal_held_out=reveal)
            return render_json(profile, indent=None, reveal_held_out=reveal)

        text = await run_in_threadpool(build)
        return Response(text, media_type="application/json")

    async def post_run(request: Request, principal: Principal) -> Response:
        body = await json_object(request)
        check_keys(body, ("suite", "agent", "references", "ablate"))
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
        ablate = body.get("ablate", [])
        if (
            not isinstance(ablate, list)
            or not all(isinstance(m, str) and m for m in ablate)
            or len(set(ablate)) != len(ablate)
            or len(ablate) > MAX_ABLATIONS
        ):
            raise ApiError(
                400,
                "invalid_field",
                f"expected a list of at most {MAX_ABLATIONS} distinct module names",
                field="ablate",
            )
        if ablate and who is None:
            raise ApiError(
                400, "missing_field", "expected the agent whose modules to ablate", field="agent"
            )
        if who is not None and not principal.may_request_runs_of(who):
            raise ApiError(
                403,
                "forbidden",
                f"this token may request runs of {principal.agent!r} only",
                field="agent",
            )
        try:  # the request's agents, references and ablations, checked before anything else
            plan_agents(settings, agents=(who,) if who else (), references=refs, ablate=ablate,
                        fields=RUN_FIELDS)
        except UserError as exc:
            raise _plan_error(exc, agent=who) from None
        if scheduler is None or not scheduler.running:
            raise ApiError(503, "scheduler_off", "the scheduler is off (--no-scheduler)")
        sched = scheduler
        run_id = new_run_id()
        cap = principal.run_cap(settings.api_max_queued_runs)
        claimed = await run_in_threadpool(
            lambda: claim_run_request(engine, principal.token_id, run_id, cap=cap, now=clock())
        )
        if not claimed:
            raise ApiError(
                429,
                "too_many_runs",
                f"this token has {cap} run(s) queued or running, as many as it may: retry "
                "when one finishes",
                headers={"Retry-After": str(RETRY_AFTER)},
            )

        def plan() -> str:
            try:
                sched.context.plan_run(
                    suite=suite,
                    agents=(who,) if who else (),
                    references=refs,
                    ablate=ablate,
                    run_id=run_id,
                    fields=RUN_FIELDS,
                )
            except UserError as exc:
                release_run_request(engine, run_id)
                raise _plan_error(exc, agent=who) from None
            except BaseException:
                release_run_request(engine, run_id)
                raise
            return sched.run_now(run_id)

        job = await run_in_threadpool(plan)
        run = await run_in_threadpool(store.get_run, run_id)
        return JSONResponse({"run": _run_dict(run), "job": job}, status_code=202)

    def scheduler_suite() -> str:
        return scheduler.suite if scheduler is not None else "quick"

    # -- predictions --

    async def commit(request: Request, principal: Principal) -> Response:
        agent = _acting_agent(principal, "commit predictions")
        body = await json_object(request)
        check_keys(
            body,
            (
                "predictor",
                "target",
                "query",
                "commitment",
                "item",
                "condition",
                "agent_signature",
                "messages",
                "request",
                "query_hash",
            ),
        )
        predictor = text_field(body, "predictor", required=False) or agent
        if not principal.may_predict_as(predictor):
            raise ApiError(
                403, "forbidden", f"this token commits as {agent!r} only", field="predictor"
            )
        target = text_field(body, "target")
        commitment = text_field(body, "commitment")
        item = text_field(body, "item", required=False)
        signature = text_field(body, "agent_signature", required=False)
        query, qhash = _committed_query(body)
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
                query_hash=qhash,
            )
        )
        state = await _state(receipt.id)
        return JSONResponse(
            {**receipt.to_dict(), "query": state.query, "query_hash": state.query_hash},
            status_code=201,
        )

    async def _state(pid: str) -> Any:
        return await run_in_threadpool(ledger.prediction, pid)

    async def _readable_state(principal: Principal, pid: str) -> Any:
        """The prediction, if this token may read it: 404 otherwise, as for an unknown id, so
        that another agent's ids are not confirmed."""
        state = await _state(pid)
        if not principal.may_read_prediction(state.predictor):
            raise ApiError(404, "not_found", f"no prediction with id {pid!r}")
        return state

    async def show_prediction(request: Request, principal: Principal) -> Response:
        pid = _path_id(request)
        reveal = _reveal(request, principal)
        state = await _readable_state(principal, pid)
        record = state.to_dict(clock())
        shown = await run_in_threadpool(
            lambda: store.disclosed_predictions([record], reveal_held_out=reveal)[0]
        )
        return JSONResponse(shown)

    async def observe(request: Request, principal: Principal) -> Response:
        pid = _path_id(request)
        if not principal.may_observe:  # the guard refused them already (access.ACCESS)
            raise ApiError(403, "forbidden", "operator tokens only", field="Authorization")
        body = await json_object(request)
        check_keys(body, ("answer", "request"))
        if not isinstance(body.get("answer"), str):
            raise ApiError(
                400,
                "invalid_field",
                f"expected the answer as a string, got {kind_of(body.get('answer'))}",
                field="answer",
            )
        answer = str(body["answer"])
        rid = text_field(body, "request", required=False) or f"api-{uuid.uuid4().hex}"
        if len(rid) > 200:
            raise ApiError(400, "invalid_field", "expected at most 200 characters", field="request")
        source = provenance(
            "operator",
            rid,
            response_hash(answer),
            operator=principal.name,
            token=principal.token_id,
            via="api",
        )
        entry = await run_in_threadpool(ledger.observe, pid, answer, source)
        return JSONResponse(
            {"id": pid, "seq": entry.seq, "entry": entry.hash, "provenance": source},
            status_code=201,
        )

    async def reveal(request: Request, principal: Principal) -> Response:
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
        state = await _readable_state(principal, pid)
        if not principal.may_predict_as(state.predictor):
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

    # -- the proxy's record --

    async def calls(request: Request, principal: Principal) -> Response:
        who = request.query_params.get("agent")
        if not principal.is_operator:
            own = _acting_agent(principal, "see other agents' calls")
            if who not in (None, own):
                raise ApiError(
                    403, "forbidden", f"this token sees {own!r}'s calls only", field="agent"
                )
            who = own
        tallies = await run_in_threadpool(ledger.calls, who)
        if not principal.is_operator:
            tallies = [_as_the_proxy_answered(t) for t in tallies]
        head = await run_in_threadpool(ledger.head)
        as_of = None if head is None else head.time  # obligations age by the ledger's time
        return JSONResponse(
            {
                "agents": summarise(tallies, as_of),
                "pairs": [t.to_dict(as_of) for t in tallies],
                "prediction_share": settings.prediction_share,
                "as_of": as_of,
            }
        )

    # -- the ledger as a transparency log --

    async def tree_head(request: Request, principal: Principal) -> Response:
        head = await run_in_threadpool(ledger.tree_head)
        if head is None:
            raise ApiError(404, "not_found", "the ledger is empty: there is no head yet")
        return JSONResponse(head.to_dict())

    async def inclusion(request: Request, principal: Principal) -> Response:
        seq = _int_param(request, "seq")
        if seq is None:
            raise ApiError(400, "missing_field", "expected ?seq=<entry>", field="seq")
        size = _int_param(request, "size")
        return JSONResponse(await run_in_threadpool(ledger.inclusion_proof, seq, size))

    async def consistency(request: Request, principal: Principal) -> Response:
        old = _int_param(request, "old")
        if old is None:
            raise ApiError(400, "missing_field", "expected ?old=<tree size>", field="old")
        new = _int_param(request, "new")
        return JSONResponse(await run_in_threadpool(ledger.consistency_proof, old, new))

    # -- the proxy --

    async def proxy_chat(request: Request, principal: Principal) -> Response:
        caller = _acting_agent(principal, "call the query proxy")
        return await proxy.handle(request, caller, str(request.path_params["target"]))

    # -- errors --

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(
            exc.status, exc.code, exc.message, field=exc.field, headers=exc.headers, extra=exc.extra
        )

    async def on_user_error(request: Request, exc: Exception) -> Response:
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

    async def sign_heads() -> None:
        """Sign a tree head every ``head_interval`` seconds while the ledger grows (each one
        goes to the heads file, and to the ledger's witnesses)."""
        while True:
            await asyncio.sleep(settings.head_interval)
            try:
                await run_in_threadpool(lambda: witnessed.send(ledger.tree_head()))
            except (StorageError, LedgerIntegrityError, LedgerKeyError) as exc:
                log.error("could not sign a tree head: %s", exc)

    @asynccontextmanager
    async def lifespan(app: Starlette):  # type: ignore[no-untyped-def]
        scrub_logs()
        signer = asyncio.create_task(sign_heads()) if settings.head_interval > 0 else None
        try:
            yield
        finally:
            if signer is not None:
                signer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await signer
            await proxy.aclose()
            for hook in on_shutdown:
                await run_in_threadpool(hook)

    def route(method: str, path: str, handler: Guarded, *params: str) -> Route:
        """The route of one operation of :data:`~harness.daemon.access.ACCESS`: an unknown
        query parameter is refused (400), then the token (401) and its scope (403) as the
        table says, then ``handler`` answers with the caller in hand."""
        access = access_of(method, path)
        assert access.needs_token, path

        async def guarded(request: Request) -> Response:
            principal = await authenticate(request)
            why = access.refusal(principal)
            if why is not None:
                raise ApiError(403, "forbidden", why, field="Authorization")
            return await handler(request, principal)

        return Route(path, known_query(guarded, *params), methods=[method])

    def open_route(method: str, path: str, handler: Handler) -> Route:
        assert not access_of(method, path).needs_token, path
        return Route(path, known_query(handler), methods=[method])

    routes = [
        open_route("GET", "/health", health),
        open_route("GET", "/openapi.json", openapi),
        route("GET", "/metrics", metrics),
        route("GET", "/whoami", whoami),
        route("GET", "/runs", list_runs, "limit", REVEAL_PARAM),
        route("POST", "/runs", post_run),
        route("GET", "/runs/{id}", get_run, REVEAL_PARAM),
        route("GET", "/runs/{id}/profile", run_profile, REVEAL_PARAM),
        route("POST", "/predictions", commit),
        route("GET", "/predictions/{id}", show_prediction, REVEAL_PARAM),
        route("POST", "/predictions/{id}/observe", observe),
        route("POST", "/predictions/{id}/reveal", reveal),
        route("GET", "/calls", calls, "agent"),
        route("GET", "/ledger/head", tree_head),
        route("GET", "/ledger/proof", inclusion, "seq", "size"),
        route("GET", "/ledger/consistency", consistency, "old", "new"),
        route("POST", "/proxy/{target}/v1/chat/completions", proxy_chat),
        *witness_routes(settings, limit=limiter.take),
    ]
    for r in routes:  # the witness's routes too: every operation has its row in the table
        for method in r.methods or ():
            if method != "HEAD":
                access_of(method, r.path)
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        ApiError: on_api_error,
        UserError: on_user_error,
        StorageError: on_unavailable,
        LedgerIntegrityError: on_unavailable,
        HTTPException: on_http,
        Exception: on_bug,
    }
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)


def _committed_query(body: Mapping[str, Any]) -> tuple[str, str | None]:
    """The query text and query hash a commit states: both from the chat ``request`` (or its
    ``messages``) it predicts, when it carries one — the text, when given, must be the
    messages' :func:`~ledger.protocol.query_text`, so the ledger never states a question that
    was not asked — else the text alone (its hash is that of the text as one user message). A
    bare ``query_hash`` is refused: nothing would tie the stated text to it."""
    query = text_field(body, "query", required=False)
    named = text_field(body, "query_hash", required=False)
    if named is not None and not is_digest(named):
        raise ApiError(
            400, "invalid_field", "expected sha256: and 64 lowercase hex digits", field="query_hash"
        )
    if "request" in body and "messages" in body:
        raise ApiError(
            400, "invalid_field", "give the request or its messages, not both", field="messages"
        )
    if "request" not in body and "messages" not in body:
        if named is not None:
            raise ApiError(
                400,
                "missing_field",
                "a commit naming a query_hash carries the request it is the hash of (this "
                "call's JSON body), so the ledger's query text can be checked against it",
                field="request",
            )
        if query is None:
            raise ApiError(400, "missing_field", "expected a non-empty string, got nothing",
                           field="query")  # fmt: skip
        return query, None
    where = "request" if "request" in body else "messages"
    request = body["request"] if where == "request" else {"messages": body["messages"]}
    if not isinstance(request, dict):
        raise ApiError(
            400, "invalid_field", f"expected the chat request as a JSON object, got "
            f"{kind_of(request)}", field="request",
        )  # fmt: skip
    try:
        qhash = query_hash(request)
        text = query_text(request["messages"])
    except InputError as exc:
        field = exc.where if where == "messages" or exc.where == "request" else f"request.{exc.where}"
        raise ApiError(400, "invalid_field", str(exc), field=field) from None
    if named is not None and named != qhash:
        raise ApiError(
            400, "invalid_field", f"the {where} do not hash to the query_hash given (they hash "
            f"to {qhash})", field="query_hash",
        )  # fmt: skip
    if query is not None and query != text:
        raise ApiError(
            400,
            "query_mismatch",
            f"the query must be the committed messages' question, the text of the last user "
            f"message ({_clip(text)}), not {_clip(query)}: the ledger states what was asked",
            field="query",
        )
    return text, qhash


def _as_the_proxy_answered(tally: CallTally) -> CallTally:
    """An agent's own record as the proxy answered its calls: a call that named another
    agent's prediction counts as one that named an unknown prediction, so the record confirms
    no more than the answer did (operators read the reason the ledger recorded)."""
    refusals = Counter(tally.refusals)
    theirs = refusals.pop("wrong_predictor", 0)
    if not theirs:
        return tally
    refusals["unknown_prediction"] += theirs
    return replace(tally, refusals=refusals)


def _clip(text: str, n: int = 80) -> str:
    return repr(text if len(text) <= n else text[: n - 1] + "…")


def _run_dict(run: RunRow, *, reveal: bool = False) -> dict[str, Any]:
    """A run's summary. The seed of a held-out run, and the item ids in its params, are
    withheld unless ``reveal`` (operators who ask): knowing them, an agent under test could
    regenerate or recognise the held-out items."""
    try:
        params = json.loads(run.params_json)
    except ValueError:
        params = {}
    withheld = withholds(held_out=bool(run.held_out), reveal_held_out=reveal)
    params = disclosed_params(params, held_out=bool(run.held_out), reveal_held_out=reveal)
    return {
        "id": run.id,
        "suite": run.suite,
        "seed": None if withheld else run.seed,
        "seed_withheld": withheld,
        "held_out": run.held_out,
        "status": run.status,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "params": params,
    }
