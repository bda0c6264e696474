"""The query proxy: ``POST /proxy/{target}/v1/chat/completions``, OpenAI-compatible.

An agent points its "ask another reasoner" calls here instead of at the target. For each call
the proxy

1. finds the target among the declared agents (an ``openai`` agent: its ``endpoint``, its
   ``model``, and the environment variable named by ``api_key_env`` holding its key);
2. hashes the call: its messages and every other field that can change the answer, all but
   ``model``, ``stream`` and ``user`` (:func:`ledger.protocol.query_hash`);
3. **without** a prediction named in ``X-Mindledger-Prediction``: refuses with **428** when the
   caller owes this target a prediction (an *obligation*); else forwards a query the target
   already answered this caller (its answer is known: nothing is left to predict), and draws,
   with the service's own randomness, whether any other call must carry one (share
   ``settings.prediction_share``); a sampled call is refused with 428 and opens an obligation
   bound to *its* query hash. Until a call of that query carries a prediction bound to it and
   is answered, every call of that caller to that target without a prediction is refused: no
   change of fields, whitespace, headers or connection lifts it, a prediction of another query
   unlocks only its own call, and it survives restarts (it is folded from the ledger,
   :mod:`ledger.calls`);
4. **with** a prediction: forwards the call only if the prediction is the caller's, about this
   target, open, unused, committed to exactly this query (its query hash), and the caller has
   not put this query to this target before (it would know the answer); a prediction unlocks
   one answered call. Another caller's prediction is answered 404 ``unknown_prediction``,
   word for word as an id that names none, so the answer confirms no one's id (the ledger's
   ``refuse`` entry records ``wrong_predictor``, for operators);
5. forwards the body (with the target's declared ``model``, or none: never the caller's) and
   returns the target's response unchanged, and records in the ledger, in one transaction, the
   call (``call`` entry) and, for a predicted call, the target's answer against the prediction
   with the proxy's provenance (``observe``). Every refusal is a ``refuse`` entry. The response
   says which entry recorded the answer in ``X-Mindledger-Observed``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

import httpx
from pydantic import Field, PlainValidator
from pydantic_core import PydanticCustomError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from harness.adapters.registry import adapter_kind
from harness.adapters.transports import default_transport
from harness.config.settings import AgentConfig, Settings
from harness.daemon.models import Messages, OpenBody, PassedOn, parse
from harness.daemon.web import ApiError, error_response, json_object
from ledger.calls import Obligation, QueryHashes
from ledger.errors import LedgerStateError
from ledger.predictions import Ledger
from ledger.protocol import (
    REFUSALS,
    UNHASHED_FIELDS,
    PredictionState,
    query_hash,
    response_hash,
    unlock_refusal,
)
from mindledger.errors import InputError, NotFoundError

__all__ = [
    "MAX_PREDICTION_ID",
    "OBSERVED_HEADER",
    "PREDICTION_HEADER",
    "ChatCompletion",
    "Draw",
    "Proxy",
    "TransportFactory",
    "answer_text",
    "system_draw",
]

PREDICTION_HEADER = "X-Mindledger-Prediction"
"""Request header naming the caller's commitment (a prediction id) for this query."""
OBSERVED_HEADER = "X-Mindledger-Observed"
"""Response header: the ledger entry (seq) recording the answer, or ``none``."""
MAX_PREDICTION_ID = 64
"""Longest value of :data:`PREDICTION_HEADER` read as a prediction id."""
REQUEST_HEADER = "X-Mindledger-Request"
"""Response header: the id under which the proxy recorded this call or its refusal."""

TransportFactory = Callable[[str], httpx.AsyncBaseTransport]
"""Target base URL → the transport of the proxy's client for it."""
Draw = Callable[[], float]
"""A source of uniform numbers in [0, 1): the service's dice."""

_STATUS = {
    "unknown_prediction": 404,
    "wrong_target": 409,
    "query_mismatch": 409,
    "query_asked": 409,
    "prediction_used": 409,
    "prediction_closed": 409,
}


def _not_streamed(value: Any) -> Any:
    if value:
        raise PydanticCustomError("invalid_field", "expected false: the proxy does not stream")
    return value


class ChatCompletion(OpenBody):
    """A chat completion request, passed on to the target as it is (its ``model`` replaced by
    the target's). Documented with scalar fields beside the messages; the proxy accepts every
    OpenAI-compatible field (tools, response_format… are objects and lists), and
    :func:`~ledger.protocol.query_hash` checks the messages."""

    __pydantic_extra__: dict[str, PassedOn] = Field(init=False)  # type: ignore[assignment]

    messages: Messages
    stream: Annotated[
        Any, PlainValidator(_not_streamed, json_schema_input_type=Literal[False])
    ] = None


def system_draw() -> float:
    """A uniform number in [0, 1) from the operating system's CSPRNG: no caller can predict
    or replay it."""
    return secrets.randbits(53) / 2**53


def answer_text(response: Any) -> str | None:
    """The target's answer in a chat completion: the first choice's text, else the arguments of
    its first tool call; None when there is neither."""
    try:
        message = response["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        return content
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        args = (calls[0].get("function") or {}).get("arguments")
        if isinstance(args, str) and args:
            return args
    return None



def _proxied(cfg: AgentConfig) -> bool:
    """Whether calls to the agent ``cfg`` go through the proxy: its kind is a proxy target and
    it declares an endpoint."""
    return adapter_kind(cfg.adapter, agent=cfg.name).proxy_target and bool(cfg.endpoint)

class Proxy:
    """Forwards chat completions to declared targets; keeps the obligations; records every
    call, refusal and answer in the ledger. ``draw`` is the service's dice (tests pass a
    seeded one). One daemon process serves a ledger's proxy: the obligations are cached
    here and folded from the ledger on a caller's first call after a start."""

    def __init__(
        self,
        settings: Settings,
        ledger: Ledger,
        *,
        transport_factory: TransportFactory | None = None,
        draw: Draw = system_draw,
    ):
        self.settings = settings
        self.ledger = ledger
        self.share = settings.prediction_share
        self.draw = draw
        self.transport_factory = transport_factory or default_transport
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._owed: dict[str, dict[str, Obligation | None]] = {}
        self._asked: dict[str, dict[str, QueryHashes]] = {}
        """The queries each caller put to each target that it answered (as digests: they
        grow with the proxy's traffic for as long as the daemon runs)."""
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._inflight: set[str] = set()
        self.on_upstream: Callable[[str, int | None, float], None] | None = None
        """Told of each call to a target: its name, its HTTP status (None: it did not
        answer) and the seconds until its answer (the daemon's metrics)."""

    def target(self, name: str) -> AgentConfig:
        cfg = self.settings.agents.get(name)
        if cfg is None or not _proxied(cfg):
            known = sorted(n for n, a in self.settings.agents.items() if _proxied(a))
            raise ApiError(
                404,
                "unknown_target",
                f"no proxy target named {name!r} (targets: {', '.join(known) or 'none'})",
                field="target",
            )
        return cfg

    def _client(self, cfg: AgentConfig) -> httpx.AsyncClient:
        assert cfg.endpoint is not None
        client = self._clients.get(cfg.name)
        if client is None:
            client = httpx.AsyncClient(
                transport=self.transport_factory(cfg.endpoint), timeout=self.settings.timeout
            )
            self._clients[cfg.name] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            await c.aclose()

    # -- obligations --

    async def _owes(self, caller: str) -> dict[str, Obligation | None]:
        """What ``caller`` owes each target (folded from the ledger once, with the queries it
        has put to each target)."""
        owed = self._owed.get(caller)
        if owed is None:
            tallies = await run_in_threadpool(self.ledger.calls, caller)
            self._asked.setdefault(caller, {t.target: t.asked for t in tallies})
            owed = self._owed.setdefault(caller, {t.target: t.obligation for t in tallies})
        return owed

    def _queries(self, caller: str, target: str) -> QueryHashes:
        return self._asked.setdefault(caller, {}).setdefault(target, QueryHashes())

    async def _refuse(
        self,
        caller: str,
        target: str,
        reason: str,
        rid: str,
        qhash: str | None,
        pid: str | None = None,
        *,
        owed: Obligation | None = None,
    ) -> Response:
        entry = await run_in_threadpool(
            lambda: self.ledger.record_refusal(
                caller, target, reason, request=rid, query_hash=qhash, prediction=pid
            )
        )
        headers = {REQUEST_HEADER: rid}
        if reason == "sampled":
            (await self._owes(caller))[target] = Obligation(entry.seq, entry.time, qhash)
            return error_response(
                428,
                "prediction_required",
                "this call was sampled for a prediction: commit a prediction of this exact "
                "call's answer (its query hash covers the messages and every field that can "
                "change the answer), then repeat the call unchanged with the header "
                f"{PREDICTION_HEADER}: <its id>. Until this query is answered with a "
                f"prediction bound to it, every call of yours to {target!r} without a "
                "prediction is refused.",
                field=PREDICTION_HEADER,
                headers=headers,
                extra={
                    "how": how_to_commit(target, qhash),
                    "refusal": entry.seq,
                    "owed": {"query_hash": qhash, "since": entry.seq},
                },
            )
        if reason == "obligation":
            assert owed is not None
            which = (
                f"the query {owed.query_hash} (the call sampled at entry {owed.seq})"
                if owed.query_hash is not None
                else f"the call sampled at entry {owed.seq}"
            )
            return error_response(
                428,
                "prediction_required",
                f"you owe {target!r} a prediction of {which}: repeat that call with a "
                f"prediction bound to it ({PREDICTION_HEADER}: <its id>). Until then every call "
                f"of yours to {target!r} must carry a prediction of its own answer, as this "
                "one may (see how).",
                field=PREDICTION_HEADER,
                headers=headers,
                extra={
                    "how": how_to_commit(target, qhash),
                    "refusal": entry.seq,
                    "owed": {"query_hash": owed.query_hash, "since": owed.seq},
                },
            )
        # another caller's prediction is answered as an unknown one, so that its id is not
        # confirmed (as GET /predictions/{id} answers it); the ledger records the reason
        said = "unknown_prediction" if reason == "wrong_predictor" else reason
        return error_response(
            _STATUS[said],
            said,
            f"prediction {pid} cannot unlock this call: {REFUSALS[said]}",
            field=PREDICTION_HEADER,
            headers=headers,
            extra={"refusal": entry.seq},
        )

    # -- a call --

    async def handle(self, request: Request, caller: str, target: str) -> Response:
        cfg = self.target(target)
        body = await json_object(request)
        parse(ChatCompletion, body)
        try:
            qhash = query_hash(body)
        except InputError as exc:
            raise ApiError(400, "invalid_field", str(exc), field=exc.where) from None
        rid = "proxy-" + uuid.uuid4().hex
        pid = request.headers.get(PREDICTION_HEADER, "").strip() or None
        if pid is None:
            async with self._locks.setdefault((caller, target), asyncio.Lock()):
                owed = (await self._owes(caller)).get(target)
                if owed is not None:
                    return await self._refuse(
                        caller, target, "obligation", rid, qhash, owed=owed
                    )
                # an answer the caller has seen is not sampled: a prediction of it would be
                # refused (query_asked), so the obligation could never be met
                if qhash not in self._queries(caller, target) and self.draw() < self.share:
                    return await self._refuse(caller, target, "sampled", rid, qhash)
            return await self._forward(cfg, body, caller, target, rid, qhash, None)
        if len(pid) > MAX_PREDICTION_ID:
            raise ApiError(400, "invalid_field", "expected a prediction id", field=PREDICTION_HEADER)
        try:
            state: PredictionState | None = await run_in_threadpool(self.ledger.prediction, pid)
        except NotFoundError:
            state = None
        if state is None:
            return await self._refuse(caller, target, "unknown_prediction", rid, qhash, pid)
        reason = unlock_refusal(state, caller, target, qhash, self.ledger.clock())
        if reason is None and pid in self._inflight:
            reason = "prediction_used"
        if reason is None:
            await self._owes(caller)
            if qhash in self._queries(caller, target):
                reason = "query_asked"
        if reason is not None:
            return await self._refuse(caller, target, reason, rid, qhash, pid)
        self._inflight.add(pid)
        try:
            return await self._forward(cfg, body, caller, target, rid, qhash, pid)
        finally:
            self._inflight.discard(pid)

    async def _forward(
        self,
        cfg: AgentConfig,
        body: dict[str, Any],
        caller: str,
        target: str,
        rid: str,
        qhash: str,
        pid: str | None,
    ) -> Response:
        # the target's declared headers and body fields go with every request to it, as
        # they do from the harness's own adapter (settings refuse credential headers and the
        # fields the caller's request sets, such as messages)
        headers = {**cfg.headers, "content-type": "application/json"}
        if cfg.api_key_env and os.environ.get(cfg.api_key_env):
            headers["authorization"] = f"Bearer {os.environ[cfg.api_key_env]}"
        # the caller's model never reaches the target (a query hash leaves it out): the
        # declared one does, or none, as from the harness's own adapter
        body = {k: v for k, v in body.items() if k != "model"}
        if cfg.extra_body:
            body = {**body, **cfg.extra_body}
        if cfg.model:
            body = {**body, "model": cfg.model}
        url = (cfg.endpoint or "").rstrip("/") + "/chat/completions"
        start = time.monotonic()
        try:
            upstream = await self._client(cfg).post(
                url, content=json.dumps(body).encode(), headers=headers
            )
        except httpx.HTTPError as exc:
            if self.on_upstream is not None:
                self.on_upstream(target, None, time.monotonic() - start)
            await run_in_threadpool(
                lambda: self.ledger.record_call(
                    caller, target, request=rid, query_hash=qhash, status=502, prediction=pid
                )
            )
            return error_response(
                502,
                "upstream_unreachable",
                f"target {target!r} did not answer: {type(exc).__name__}",
                headers={REQUEST_HEADER: rid},
            )
        if self.on_upstream is not None:
            self.on_upstream(target, upstream.status_code, time.monotonic() - start)
        answer: str | None = None
        if upstream.status_code == 200:
            self._queries(caller, target).add(qhash)  # the caller sees the answer
            try:
                answer = answer_text(upstream.json())
            except ValueError:
                answer = None
        digest = response_hash(upstream.content)
        try:
            entries = await run_in_threadpool(
                lambda: self.ledger.record_call(
                    caller,
                    target,
                    request=rid,
                    query_hash=qhash,
                    status=upstream.status_code,
                    prediction=pid,
                    answer=answer,
                    response=digest,
                )
            )
        except LedgerStateError as exc:
            raise ApiError(
                409, str(exc.state or "conflict"), str(exc), field=PREDICTION_HEADER
            ) from None
        out_headers: dict[str, str] = {REQUEST_HEADER: rid}
        if pid is not None:
            observed = [e for e in entries if e.kind == "observe"]
            if answer is not None and not observed:
                # the prediction closed or was used while the target answered: recorded as
                # an unanswered call, and the answer is withheld
                state = await run_in_threadpool(self.ledger.prediction, pid)
                reason = unlock_refusal(state, caller, target, qhash, self.ledger.clock())
                code = reason or "prediction_closed"
                return error_response(
                    409,
                    code,
                    f"prediction {pid} cannot take this answer: {REFUSALS[code]}",
                    field=PREDICTION_HEADER,
                    headers={REQUEST_HEADER: rid},
                )
            out_headers[PREDICTION_HEADER] = pid
            out_headers[OBSERVED_HEADER] = str(observed[0].seq) if observed else "none"
            owed = await self._owes(caller)
            ob = owed.get(target)
            if observed and ob is not None and ob.met_by(qhash):
                owed[target] = None
        return Response(
            upstream.content,
            status_code=upstream.status_code,
            headers=out_headers,
            media_type=upstream.headers.get("content-type", "application/json"),
        )


def how_to_commit(target: str, qhash: str | None) -> dict[str, Any]:
    """What the 428 body tells the caller to do, step by step."""
    return {
        "1_commit": {
            "method": "POST",
            "path": "/predictions",
            "json": {
                "target": target,
                "request": "<this call's JSON body, unchanged>",
                "query_hash": qhash,
                "commitment": "sha256:<hex>",
            },
        },
        "query_hash": "this call's: sha256 of canonical_json({request: the body without "
        f"{', '.join(UNHASHED_FIELDS)}; v: 2}}) (docs/ledger.md); optional in the commit, whose "
        "request must hash to it, as must the repeated call",
        "query": "optional in the commit; when given, the text of the last user message "
        "(ledger.protocol.query_text), as in the committed prediction",
        "commitment": "sha256: + hex(SHA-256(canonical_json(prediction) + salt)) with a secret "
        "32-byte salt; the prediction stays with you until the reveal (see docs/ledger.md, "
        "or ledger.prediction_body and ledger.commitment in Python)",
        "2_ask": f"repeat this call with the header {PREDICTION_HEADER}: <the id from step 1>",
        "3_reveal": {
            "method": "POST",
            "path": "/predictions/<id>/reveal",
            "json": {"prediction": "<the committed prediction>", "salt": "<hex>"},
        },
    }
