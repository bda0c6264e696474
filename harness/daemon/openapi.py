"""The daemon's API, specified: an OpenAPI 3.1 document generated from the endpoints
(:data:`harness.daemon.routes.ENDPOINTS`) and their models, served at ``GET /openapi.json``.

Nothing here restates a route: each operation's parameters, request body and answer are the
JSON schemas of the models that validate them (:mod:`harness.daemon.models`); its refusals are
those the endpoint declares and those every route shares; who may call it is the ``x-roles``
extension, stated from the one table the route guards enforce
(:data:`harness.daemon.access.ACCESS`). The daemon's own configuration fills in what the models
mark as such (the declared agents, the modules a run may ablate).

A test keeps the document in step with the routes (every route is documented, nothing else is),
and ``schemathesis`` runs against a live daemon in CI to check that no request yields a 500, a
response outside the document, or an answer without a valid token.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.daemon.access import access_of
from harness.daemon.endpoint import Endpoint
from harness.daemon.models import DAEMON_ENUM, Model
from harness.daemon.routes import ENDPOINTS

__all__ = ["ROLES_RULE", "ErrorBody", "openapi_document"]

REF = "#/components/schemas/{model}"
OBJECT: dict[str, Any] = {"type": "object"}
ERROR = {"$ref": REF.format(model="ErrorBody")}
REASONS = {
    400: "a malformed body or field: `field` names it, `message` says what was expected",
    401: "no valid bearer token",
    403: "the token's scope may not do this",
    404: "no such id, target or path",
    409: "the request does not fit the prediction's state; from the proxy, the prediction "
    "cannot unlock this call (`query_mismatch`: the call does not hash to the committed query)",
    413: "the body is larger than the route reads (4 MiB; the witness's: 64 KiB)",
    428: "this call must carry a prediction: it was sampled, or a sampled query is still owed "
    "a prediction bound to it (`owed` names its query hash)",
    429: "too many requests from this token or address, or as many runs open as it may "
    "(Retry-After)",
    502: "the target did not answer",
    503: "the database, the ledger or the scheduler is unavailable",
}
"""What each refusal means, as every operation's responses say it."""
TOKEN_REFUSALS = (401, 429, 503)
"""What any route that needs a token may answer besides its own refusals."""
ROLES_RULE = (
    "**Who may call what.** Each operation's `x-roles` says, for a caller with no token "
    "(`anonymous`), an agent token on its own agent's things (`agent`), an agent token naming "
    "another agent's things (`other_agent`: another agent's run or prediction id, or its name) "
    "and an operator token (`operator`), the status it gets and what it reads (null: the "
    "operation names nothing of another agent's). The route guards enforce the same table. "
    "Refusals: 401 without a valid token; 404 where any other answer would confirm another "
    "agent's id (its run, profile or prediction is answered exactly as an unknown id); 403 "
    "where what was asked is public knowledge (a route for the other scope; another agent's "
    "name — the declared agents are listed in this document). The ledger's routes serve hashes "
    "and proofs to any token, never an entry's body."
)
"""The rule of the ``x-roles`` extension, as the document's description states it."""
DESCRIPTION = (
    "Runs, profiles, the prediction ledger and the query proxy. Every path but /health, "
    "/openapi.json and /witness/… needs `Authorization: Bearer <token>` (`mindledger serve "
    "token`).\n\n" + ROLES_RULE
)


class ErrorDetail(Model):
    code: str
    """What went wrong, for programs (``invalid_field``, ``not_found``…)."""
    message: str
    """What was expected, for people."""
    field: str | None
    """The field, parameter or header at fault (None: the request as a whole)."""


class ErrorBody(Model):
    """Every refusal's body (some add fields beside ``error``: a reveal's ``result``, the
    proxy's ``owed``…)."""

    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True)

    error: ErrorDetail


def openapi_document(
    agents: Iterable[str] = (),
    *,
    modules: Iterable[str] = (),
    endpoints: Iterable[Endpoint] = ENDPOINTS,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``endpoints`` for a daemon whose declared agents are
    ``agents`` and whose modules a run may ablate ``modules`` (the reference scaffold's and
    the agents' own)."""
    facts = {"agents": sorted(set(agents)), "modules": sorted(set(modules))}
    components: dict[str, Any] = {}
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        operation = _operation(endpoint, components)
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation
    components["ErrorBody"] = _schema(ErrorBody, "serialization", components)
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "mindledger daemon", "version": "1", "description": DESCRIPTION},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": dict(sorted(components.items())),
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }
    return _filled(document, facts)


def _operation(endpoint: Endpoint, components: dict[str, Any]) -> dict[str, Any]:
    access = access_of(endpoint.method, endpoint.path)
    operation: dict[str, Any] = {"summary": endpoint.summary}
    if endpoint.description:
        operation["description"] = " ".join(endpoint.description.split())
    if not access.needs_token:
        operation["security"] = []
    parameters = [
        *_parameters(endpoint.path_params, "path"),
        *_parameters(endpoint.query, "query"),
        *_parameters(endpoint.headers, "header"),
    ]
    if parameters:
        operation["parameters"] = parameters
    if endpoint.body is not None:
        schema = _schema(endpoint.body, "validation", components)
        operation["requestBody"] = {"required": True, **_json(schema)}
    answer = (
        OBJECT if endpoint.answer is None else _schema(endpoint.answer, "serialization", components)
    )
    success = _json(answer)
    for media in endpoint.media_types:
        success["content"][media] = {"schema": {"type": "string"}}
    responses: dict[str, Any] = {str(endpoint.ok): {"description": "success", **success}}
    for status in endpoint.answered_as:
        responses[str(status)] = {"description": REASONS[status], **_json(answer)}
    refusals = {400, *endpoint.errors, *(TOKEN_REFUSALS if access.needs_token else ())}
    for status in sorted(refusals | access.statuses()):
        if str(status) in responses:
            continue
        if status < 400:
            responses[str(status)] = {"description": "success", **_json(OBJECT)}
        else:
            responses[str(status)] = {"description": REASONS[status], **_json(ERROR)}
    if endpoint.passes_through:
        responses["default"] = {"description": endpoint.passes_through}
    operation["responses"] = dict(sorted(responses.items()))
    operation["x-roles"] = access.x_roles()
    return operation


def _json(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _schema(model: type[BaseModel], mode: str, components: dict[str, Any]) -> dict[str, Any]:
    """``model``'s JSON schema, its nested models moved to ``components``."""
    schema = _clean(model.model_json_schema(ref_template=REF, mode=mode))  # type: ignore[arg-type]
    for name, nested in schema.pop("$defs", {}).items():
        assert components.get(name, nested) == nested, f"two schemas named {name}"
        components[name] = nested
    return schema


def _parameters(model: type[BaseModel] | None, where: str) -> list[dict[str, Any]]:
    """The parameters ``model`` reads from the path, the query or the headers."""
    if model is None:
        return []
    schema = _clean(model.model_json_schema(mode="validation"))
    required = set(schema.get("required", ()))
    out = []
    for name, prop in schema.get("properties", {}).items():
        branches = prop.pop("anyOf", None)  # an optional parameter is left out, never null
        for branch in branches or ():
            if branch != {"type": "null"}:
                prop.update(branch)
        parameter = {"name": name, "in": where, "required": name in required or where == "path"}
        if "description" in prop:
            parameter["description"] = prop.pop("description")
        out.append({**parameter, "schema": prop})
    return out


_EMPTY_DEFAULTS: tuple[Any, ...] = (None, "", [])


def _clean(node: Any) -> Any:
    """A pydantic schema without what says nothing to a client: titles, and the defaults of
    fields that may be left out (None, "" or [])."""
    if isinstance(node, list):
        return [_clean(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value in _EMPTY_DEFAULTS:
            continue
        if key in ("properties", "$defs", "dependentRequired"):
            out[key] = {k: _clean(v) for k, v in value.items()}
        else:
            out[key] = _clean(value)
    return out


def _filled(node: Any, facts: Mapping[str, list[str]]) -> Any:
    """``node`` with each schema marked :data:`~harness.daemon.models.DAEMON_ENUM` stating the
    daemon's values (an empty ``enum``: none is accepted)."""
    if isinstance(node, list):
        return [_filled(n, facts) for n in node]
    if not isinstance(node, dict):
        return node
    if DAEMON_ENUM in node:
        rest = {k: v for k, v in node.items() if k not in (DAEMON_ENUM, "type")}
        return {**rest, "enum": list(facts[node[DAEMON_ENUM]])}
    return {k: _filled(v, facts) for k, v in node.items()}
