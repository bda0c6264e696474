"""One operation of the API, declared: :class:`Endpoint` names its method and path, its request
models (path, query, body), its answer and its handler; :func:`route` makes the Starlette route
that enforces them, and :mod:`harness.daemon.openapi` documents the same declaration.

A request is answered in one order, the same for every route:

1. a query parameter the query model does not name, or one given twice: 400;
2. the token (401), its quota (429) and its scope as :data:`harness.daemon.access.ACCESS` says
   (403) — for the routes that need one; the caller's address and its quota (429) for an open
   route that counts them;
3. the path (an id that cannot be one: 404), the query's values and the body (400; 413 past
   :data:`~harness.daemon.web.MAX_BODY`), each validated by its model;
4. the handler, ``handler(services, call)``, which answers with a response model (status
   ``ok``), a JSON object, or a ready Starlette ``Response``.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.daemon import tokens
from harness.daemon.access import access_of
from harness.daemon.models import Query, parse, query_names
from harness.daemon.services import Services
from harness.daemon.tokens import Principal
from harness.daemon.web import MAX_BODY, ApiError, json_object

__all__ = [
    "ROUTE_KEY",
    "Answer",
    "Call",
    "Endpoint",
    "Handler",
    "authenticate",
    "caller_label",
    "route",
    "throttle",
]

P = TypeVar("P")
Q = TypeVar("Q")
B = TypeVar("B")

Answer = BaseModel | Mapping[str, Any] | Response
"""What a handler returns: a model or a JSON object (sent with the endpoint's ``ok`` status),
or a response it made itself (another status, another media type, the proxy's pass-through)."""


@dataclass(frozen=True)
class Call(Generic[P, Q, B]):
    """One request, validated: its caller, its path, query and body as their models (None where
    the endpoint has none), and the request itself (for what reads it further: the proxy)."""

    principal: Principal | None
    path: P
    query: Q
    body: B
    request: Request

    @property
    def caller(self) -> Principal:
        """The token's principal (the route needs a token: its guard found one)."""
        assert self.principal is not None, "an open route has no caller"
        return self.principal


Handler = Callable[[Services, Call[Any, Any, Any]], Awaitable[Answer]]


@dataclass(frozen=True)
class Endpoint:
    """One operation: ``method`` ``path``, answered by ``handler``."""

    method: str
    path: str
    handler: Handler
    summary: str
    description: str = ""
    path_params: type[BaseModel] | None = None
    query: type[Query] | None = None
    body: type[BaseModel] | None = None
    answer: type[BaseModel] | None = None
    """The success answer's model (None: a JSON object the domain shapes)."""
    ok: int = 200
    errors: tuple[int, ...] = ()
    """The refusals it may answer besides 400 (and, with a token, 401, 429 and 503)."""
    headers: type[BaseModel] | None = None
    """Request headers it reads (documented; the handler reads them in its own order)."""
    reads_body: bool = False
    """The handler validates ``body`` itself, after checks that come first (the proxy: its
    target before its body)."""
    passes_through: str = ""
    """Said of other answers passed on unchanged (the proxy's target's), if any."""
    max_body: int = MAX_BODY
    """Largest body read (413 beyond)."""
    per_address: bool = False
    """An open route whose callers are held to the quota by their address (the witness's)."""
    answered_as: tuple[int, ...] = ()
    """Other statuses answered with the ``answer`` model rather than an error body (``/health``:
    503)."""
    media_types: tuple[str, ...] = ()
    """Media types the success answer may take besides JSON (documented as text)."""


ROUTE_KEY = "mindledger.route"
"""Where a route notes, in the request's ASGI scope, its path template and caller (for the
request metrics: :class:`harness.daemon.api.TimedRequests`)."""


def caller_label(principal: Principal | None) -> str:
    """Who called, as the request metrics label it: the agent, ``operator`` or
    ``anonymous``."""
    if principal is None:
        return "anonymous"
    return "operator" if principal.is_operator else (principal.agent or "anonymous")


async def authenticate(services: Services, request: Request) -> Principal:
    """The principal of the request's bearer token (401 without a valid one; 429 past the
    token's quota)."""
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
        lambda: tokens.authenticate(services.engine, token.strip(), now=services.clock())
    )
    if principal is None:
        raise ApiError(
            401,
            "unauthorized",
            "unknown token",
            field="Authorization",
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
        )
    throttle(services, principal.token_id, "from this token: slow down")
    return principal


def throttle(services: Services, key: str, whose: str) -> None:
    """429 when ``key`` has spent its quota of requests."""
    wait = services.quota.take(key)
    if wait > 0:
        raise ApiError(
            429,
            "rate_limited",
            f"more than {services.settings.api_rate_limit:g} requests a second {whose}",
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )


def _known_query(request: Request, allowed: tuple[str, ...]) -> None:
    seen: set[str] = set()
    for key, _ in request.query_params.multi_items():
        if key not in allowed:
            expected = f"some of: {', '.join(allowed)}" if allowed else "none"
            raise ApiError(
                400,
                "unknown_field",
                f"unknown query parameter (expected {expected})",
                field=key[:100],
            )
        if key in seen:
            raise ApiError(400, "invalid_field", "given more than once", field=key)
        seen.add(key)


def _no_such_id(field: str) -> ApiError:
    return ApiError(404, "not_found", "no such id")


def route(endpoint: Endpoint, services: Services) -> Route:
    """The Starlette route of ``endpoint`` over ``services`` (see the module's docstring for
    the order in which a request is checked)."""
    access = access_of(endpoint.method, endpoint.path)
    allowed = () if endpoint.query is None else query_names(endpoint.query)

    async def answer(request: Request) -> Response:
        request.scope[ROUTE_KEY] = (endpoint.path, "anonymous")
        _known_query(request, allowed)
        principal = None
        if access.needs_token:
            principal = await authenticate(services, request)
            request.scope[ROUTE_KEY] = (endpoint.path, caller_label(principal))
            why = access.refusal(principal)
            if why is not None:
                raise ApiError(403, "forbidden", why, field="Authorization")
        elif endpoint.per_address:
            client = request.client.host if request.client is not None else "unknown"
            throttle(services, f"address:{client}", "from this address")
        path = None
        if endpoint.path_params is not None:
            path = parse(endpoint.path_params, dict(request.path_params), refused=_no_such_id)
        query = (
            None if endpoint.query is None else parse(endpoint.query, dict(request.query_params))
        )
        body = None
        if endpoint.body is not None and not endpoint.reads_body:
            raw = await json_object(request, endpoint.max_body)
            body = parse(endpoint.body, raw, context={"caller": principal})
        out = await endpoint.handler(services, Call(principal, path, query, body, request))
        if isinstance(out, Response):
            return out
        if isinstance(out, BaseModel):
            return JSONResponse(out.model_dump(mode="json"), status_code=endpoint.ok)
        return JSONResponse(dict(out), status_code=endpoint.ok)

    return Route(endpoint.path, answer, methods=[endpoint.method])
