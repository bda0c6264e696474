"""Predictions: ``POST /predictions`` (commit), ``GET /predictions/{id}``,
``POST /predictions/{id}/observe`` (operators only) and ``POST /predictions/{id}/reveal``.

A prediction is read by its predictor's token or an operator's; any other token is answered
404, as for an unknown id, so that another agent's ids are not confirmed. A held-out
prediction's query, item and observed answers are withheld unless an operator token asks with
``?reveal_held_out=true``.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import Field, PlainValidator, ValidationInfo, model_validator
from starlette.concurrency import run_in_threadpool

from harness.daemon.endpoint import Answer, Call, Endpoint
from harness.daemon.models import (
    Body,
    ChatRequest,
    Digest,
    JsonObject,
    Messages,
    Model,
    Name,
    PathId,
    Scalar,
    Text,
    not_null,
)
from harness.daemon.routes.runs import RevealQuery, reveals
from harness.daemon.services import Services
from harness.daemon.tokens import Principal
from harness.daemon.web import ApiError, error_response, kind_of
from ledger.protocol import PredictionState, provenance, query_hash, query_text, response_hash
from mindledger.errors import InputError

__all__ = [
    "ENDPOINTS",
    "CommitRequest",
    "ObserveRequest",
    "RevealRequest",
    "commit",
    "observe",
    "reveal",
    "show_prediction",
]


def _any(value: Any) -> Any:
    return value


def _only(given: str, without: tuple[str, ...]) -> dict[str, Any]:
    """The body names ``given`` and none of ``without``."""
    return {"required": [given], "not": {"anyOf": [{"required": [k]} for k in without]}}


class CommitRequest(Body):
    """Either ``query`` alone (the request is that text as one user message), or the chat
    ``request`` the prediction is about (or just its ``messages``): its query hash covers every
    field but model, stream and user, and the call through the proxy must hash the same. With a
    request, ``query`` is derived (the last user message's text); a ``query`` or
    ``query_hash`` sent with it must equal what it derives, else 400 naming the field
    (``query_mismatch`` for the text). A ``query_hash`` without the request is refused (400,
    field ``request``)."""

    model_config = Body.model_config | {
        "json_schema_extra": {
            "oneOf": [
                _only("query", ("request", "messages", "query_hash")),
                _only("request", ("messages", "query", "query_hash")),
                _only("messages", ("request", "query", "query_hash")),
            ],
        }
    }

    predictor: Name | None = None
    """The predicting agent (default: the token's)."""

    @model_validator(mode="before")
    @classmethod
    def _as_the_caller(cls, data: Any, info: ValidationInfo) -> Any:
        """403 for a body, with no unknown field, that names a predictor the caller may not
        commit as — before any other field is read (the role table's ``other_agent``)."""
        caller = (info.context or {}).get("caller")
        if not isinstance(caller, Principal) or not isinstance(data, dict):
            return data
        predictor = data.get("predictor")
        known = set(data) <= set(cls.model_fields)
        if (
            known
            and isinstance(predictor, str)
            and predictor
            and not caller.may_predict_as(predictor)
        ):
            raise ApiError(
                403, "forbidden", f"this token commits as {caller.agent!r} only", field="predictor"
            )
        return data

    target: Name
    """The agent whose answer is predicted."""
    query: Text | None = Field(None, json_schema_extra=not_null)
    """The question, as text."""
    commitment: Digest
    """The salted hash of the prediction (:func:`ledger.protocol.commitment`)."""
    item: Text | None = None
    condition: Annotated[
        Any, PlainValidator(_any, json_schema_input_type=Scalar | dict[str, Scalar])
    ] = None
    agent_signature: Text | None = None
    request: Annotated[Any, PlainValidator(_any, json_schema_input_type=ChatRequest)] = Field(
        None, json_schema_extra=not_null
    )
    messages: Messages = Field(None, json_schema_extra=not_null)
    query_hash: Digest | None = Field(None, json_schema_extra=not_null)


class PredictionPath(Model):
    id: PathId
    """The prediction's id."""


class ObserveRequest(Body):
    answer: Annotated[str, Field(strict=True)]
    """The target's answer."""
    request: Annotated[Text, Field(max_length=200)] | None = Field(None, json_schema_extra=not_null)
    """The id of the request that got it (default: a new one)."""


class RevealRequest(Body):
    prediction: JsonObject
    """The committed prediction."""
    salt: Text


class Observed(Model):
    id: str
    seq: int
    """The ledger entry that recorded the answer."""
    entry: str
    """That entry's hash."""
    provenance: dict[str, Any]


# -- handlers -----------------------------------------------------------------------------


def _clip(text: str, n: int = 80) -> str:
    return repr(text if len(text) <= n else text[: n - 1] + "…")


def committed_query(body: CommitRequest) -> tuple[str, str | None]:
    """The query text and query hash a commit states: both from the chat ``request`` (or its
    ``messages``) it predicts, when it carries one — the text, when given, must be the
    messages' :func:`~ledger.protocol.query_text`, so the ledger never states a question that
    was not asked — else the text alone (its hash is that of the text as one user message). A
    bare ``query_hash`` is refused: nothing would tie the stated text to it."""
    given = body.model_fields_set
    query, named = body.query, body.query_hash
    if "request" in given and "messages" in given:
        raise ApiError(
            400, "invalid_field", "give the request or its messages, not both", field="messages"
        )
    if "request" not in given and "messages" not in given:
        if named is not None:
            raise ApiError(
                400,
                "missing_field",
                "a commit naming a query_hash carries the request it is the hash of (this "
                "call's JSON body), so the ledger's query text can be checked against it",
                field="request",
            )
        if query is None:
            raise ApiError(
                400, "missing_field", "expected a non-empty string, got nothing", field="query"
            )
        return query, None
    where = "request" if "request" in given else "messages"
    request = body.request if where == "request" else {"messages": body.messages}
    if not isinstance(request, dict):
        raise ApiError(
            400,
            "invalid_field",
            f"expected the chat request as a JSON object, got {kind_of(request)}",
            field="request",
        )
    try:
        qhash = query_hash(request)
        text = query_text(request["messages"])
    except InputError as exc:
        field = (
            exc.where if where == "messages" or exc.where == "request" else f"request.{exc.where}"
        )
        raise ApiError(400, "invalid_field", str(exc), field=field) from None
    if named is not None and named != qhash:
        raise ApiError(
            400,
            "invalid_field",
            f"the {where} do not hash to the query_hash given (they hash to {qhash})",
            field="query_hash",
        )
    if query is not None and query != text:
        raise ApiError(
            400,
            "query_mismatch",
            f"the query must be the committed messages' question, the text of the last user "
            f"message ({_clip(text)}), not {_clip(query)}: the ledger states what was asked",
            field="query",
        )
    return text, qhash


async def commit(services: Services, call: Call[None, None, CommitRequest]) -> dict[str, Any]:
    principal, body = call.caller, call.body
    agent = principal.agent
    predictor = body.predictor or agent
    assert predictor is not None  # the guard let an agent token through, and only one
    if not principal.may_predict_as(predictor):  # (the model refused it already)
        raise ApiError(403, "forbidden", f"this token commits as {agent!r} only", field="predictor")
    query, qhash = committed_query(body)
    receipt = await run_in_threadpool(
        lambda: services.ledger.commit(
            predictor,
            body.target,
            query,
            body.commitment,
            item=body.item,
            condition=body.condition,
            agent_signature=body.agent_signature,
            query_hash=qhash,
        )
    )
    state = await run_in_threadpool(services.ledger.prediction, receipt.id)
    return {**receipt.to_dict(), "query": state.query, "query_hash": state.query_hash}


async def readable_state(services: Services, principal: Principal, pid: str) -> PredictionState:
    """The prediction, if this token may read it: 404 otherwise, as for an unknown id, so
    that another agent's ids are not confirmed."""
    state = await run_in_threadpool(services.ledger.prediction, pid)
    if not principal.may_read_prediction(state.predictor):
        raise ApiError(404, "not_found", f"no prediction with id {pid!r}")
    return state


async def show_prediction(
    services: Services, call: Call[PredictionPath, RevealQuery, None]
) -> dict[str, Any]:
    reveal = reveals(call.caller, call.query.reveal_held_out)
    state = await readable_state(services, call.caller, call.path.id)
    record = state.to_dict(services.clock())
    return await run_in_threadpool(
        lambda: services.store.disclosed_predictions([record], reveal_held_out=reveal)[0]
    )


async def observe(services: Services, call: Call[PredictionPath, None, ObserveRequest]) -> Observed:
    principal, body, pid = call.caller, call.body, call.path.id
    if not principal.may_observe:  # the guard refused them already (access.ACCESS)
        raise ApiError(403, "forbidden", "operator tokens only", field="Authorization")
    rid = body.request or f"api-{uuid.uuid4().hex}"
    source = provenance(
        "operator",
        rid,
        response_hash(body.answer),
        operator=principal.name,
        token=principal.token_id,
        via="api",
    )
    entry = await run_in_threadpool(services.ledger.observe, pid, body.answer, source)
    return Observed(id=pid, seq=entry.seq, entry=entry.hash, provenance=source)


async def reveal(services: Services, call: Call[PredictionPath, None, RevealRequest]) -> Answer:
    pid, body = call.path.id, call.body
    state = await readable_state(services, call.caller, pid)
    if not call.caller.may_predict_as(state.predictor):
        raise ApiError(403, "forbidden", f"only {state.predictor!r} may reveal {pid}")
    result = await run_in_threadpool(services.ledger.reveal, pid, body.prediction, body.salt)
    if result.accepted:
        return result.to_dict()
    return error_response(
        409,
        "reveal_" + result.status,
        f"the reveal was recorded as {result.status}: {result.reason}",
        field="prediction" if result.status == "rejected" else None,
        extra={"result": result.to_dict()},
    )


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "POST",
        "/predictions",
        commit,
        "commit a prediction (its hash only)",
        description=CommitRequest.__doc__ or "",
        body=CommitRequest,
        ok=201,
        errors=(403, 409, 413),
    ),
    Endpoint(
        "GET",
        "/predictions/{id}",
        show_prediction,
        "a prediction's state (404: unknown, or another agent's)",
        path_params=PredictionPath,
        query=RevealQuery,
        errors=(403, 404),
    ),
    Endpoint(
        "POST",
        "/predictions/{id}/observe",
        observe,
        "record an answer (operators only)",
        path_params=PredictionPath,
        body=ObserveRequest,
        answer=Observed,
        ok=201,
        errors=(403, 404, 409, 413),
    ),
    Endpoint(
        "POST",
        "/predictions/{id}/reveal",
        reveal,
        "reveal and score",
        path_params=PredictionPath,
        body=RevealRequest,
        errors=(403, 404, 409, 413),
    ),
)
