"""The daemon's API, specified: an OpenAPI 3.1 document, served at ``GET /openapi.json``.

Who may call each operation is the ``x-roles`` extension, stated from the one table the route
guards enforce (:data:`harness.daemon.access.ACCESS`). A test keeps the document in step with
the routes (every route is documented, nothing else is), and
``schemathesis`` runs against a live daemon in CI to check that no request yields a 500, a
response outside the document, or an answer without a valid token.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.daemon.access import Access, access_of
from harness.daemon.witness_api import WITNESS_PATHS
from harness.suites import SUITES
from mindledger.names import AGENT_NAME_PATTERN

__all__ = ["openapi_document"]

DIGEST = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
TEXT = {"type": "string", "minLength": 1}
NAME = {"type": "string", "pattern": AGENT_NAME_PATTERN}
"""An agent name (:mod:`mindledger.names`): the predictor and target of a commit."""
POLICY = "^(oracle|random|reality-leak|not-reality|depth-capped:[0-9]|level:[0-9])$"
"""The reference agents a run may name (the daemon accepts larger N and K too)."""
ERROR = {"$ref": "#/components/schemas/Error"}
ANY_OBJECT = {"type": "object"}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _responses(ok: int, *errors: int, ok_schema: dict[str, Any] = ANY_OBJECT) -> dict[str, Any]:
    out: dict[str, Any] = {str(ok): {"description": "success", **_json(ok_schema)}}
    for code in sorted({400, 401, 429, 503, *errors}):
        out[str(code)] = {"description": _REASONS[code], **_json(ERROR)}
    return out


_REASONS = {
    400: "a malformed body or field: `field` names it, `message` says what was expected",
    401: "no valid bearer token",
    403: "the token's scope may not do this",
    404: "no such id, target or path",
    409: "the request does not fit the prediction's state; from the proxy, the prediction "
    "cannot unlock this call (`query_mismatch`: the call does not hash to the committed query)",
    413: "the body is larger than 4 MiB",
    428: "this call must carry a prediction: it was sampled, or a sampled query is still owed "
    "a prediction bound to it (`owed` names its query hash)",
    429: "too many requests from this token, or as many runs open as it may (Retry-After)",
    502: "the target did not answer",
    503: "the database, the ledger or the scheduler is unavailable",
}


def _path_id(description: str) -> dict[str, Any]:
    return {
        "name": "id",
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", "minLength": 1, "maxLength": 200},
    }


def _query_int(name: str, description: str, *, required: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": {"type": "integer", "minimum": 0, "maximum": 2**53},
    }


SCALAR = {
    "anyOf": [
        {"type": "string"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "number", "minimum": -1e15, "maximum": 1e15},
    ]
}
"""A JSON scalar as the daemon accepts it (its one input rule, mindledger.jsonin: integers of
at most 30 digits, finite numbers; documented here within ±10¹⁵)."""
_MESSAGES = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "required": ["role"],
        "properties": {
            "role": {"type": "string"},
            "content": {"type": ["string", "null"]},
            "name": {"type": "string"},
        },
        "additionalProperties": SCALAR,
    },
}


REVEAL: dict[str, Any] = {
    "name": "reveal_held_out",
    "in": "query",
    "description": "operator tokens only (an agent token gets 403): include a held-out run's "
    "seeds, item ids and item bodies, and a held-out prediction's query, item and observed "
    "answers, which are otherwise withheld",
    "schema": {"enum": ["true", "false"]},
}


_REQUEST = {
    "type": "object",
    "description": "the chat completion request as the call will send it (any "
    "OpenAI-compatible field: tools, response_format… are objects and lists)",
    "required": ["messages"],
    "properties": {"messages": _MESSAGES},
    "additionalProperties": SCALAR,
}


def _only(given: str, without: tuple[str, ...]) -> dict[str, Any]:
    """The body names ``given`` and none of ``without``."""
    return {"required": [given], "not": {"anyOf": [{"required": [k]} for k in without]}}


def openapi_document(
    agents: Iterable[str] = (), *, modules: Iterable[str] = (), max_ablations: int = 8
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of :func:`harness.daemon.api.create_app`'s routes, for a
    daemon whose declared agents are ``agents`` and whose modules a run may ablate ``modules``
    (the reference scaffold's and the agents' own; at most ``max_ablations`` a run)."""
    agents = list(agents)
    modules = sorted(set(modules))
    secured: list[dict[str, list[str]]] = [{"bearer": []}]
    body = _responses
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "mindledger daemon",
            "version": "1",
            "description": "Runs, profiles, the prediction ledger and the query proxy. Every "
            "path but /health, /openapi.json and /witness/… needs `Authorization: Bearer <token>` "
            "(`mindledger serve token`).\n\n" + ROLES_RULE,
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["code", "message", "field"],
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                                "field": {"type": ["string", "null"]},
                            },
                        }
                    },
                },
            },
        },
        "security": secured,
        "paths": {
            "/health": {
                "get": {
                    "summary": "liveness",
                    "security": [],
                    "responses": {
                        "200": {"description": "alive", **_json(ANY_OBJECT)},
                        "400": {"description": _REASONS[400], **_json(ERROR)},
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "this document",
                    "security": [],
                    "responses": {
                        "200": {"description": "the document", **_json(ANY_OBJECT)},
                        "400": {"description": _REASONS[400], **_json(ERROR)},
                    },
                }
            },
            "/metrics": {"get": {"summary": "counts and the ledger head", "responses": body(200)}},
            "/whoami": {"get": {"summary": "the token's id, scope and agent", "responses": body(200)}},
            "/runs": {
                "get": {
                    "summary": "the latest runs (an agent token: its agent's own)",
                    "parameters": [
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
                        },
                        REVEAL,
                    ],
                    "responses": body(200, 400, 403),
                },
                "post": {
                    "summary": "run a suite now (held-out seed)",
                    "requestBody": {
                        "required": True,
                        **_json(
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    "suite": {"enum": list(SUITES)},
                                    **({"agent": {"enum": sorted(agents)}} if agents else {}),
                                    "references": {
                                        "type": "array",
                                        "items": {"type": "string", "pattern": POLICY},
                                        "minItems": 1,
                                        "maxItems": 4,
                                        "uniqueItems": True,
                                    },
                                    **(
                                        {
                                            "ablate": {
                                                "description": "modules of the agent to switch "
                                                "off, one ablation variant each (its own "
                                                "modules or the reference scaffold's)",
                                                "type": "array",
                                                "items": {"enum": modules},
                                                "maxItems": max_ablations,
                                                "uniqueItems": True,
                                            }
                                        }
                                        if agents and modules
                                        else {}
                                    ),
                                },
                                **(
                                    {"dependentRequired": {"ablate": ["agent"]}}
                                    if agents and modules
                                    else {}
                                ),
                                "anyOf": [{"required": ["references"]}]
                                + ([{"required": ["agent"]}] if agents else []),
                            }
                        ),
                    },
                    "responses": body(202, 400, 403, 413, 429),
                },
            },
            "/runs/{id}": {
                "get": {
                    "summary": "a run and its trial counts (404: unknown, or not the agent's)",
                    "parameters": [_path_id("the run's id"), REVEAL],
                    "responses": body(200, 400, 403, 404),
                }
            },
            "/runs/{id}/profile": {
                "get": {
                    "summary": "the run's profile (404: unknown, or not the agent's)",
                    "parameters": [_path_id("the run's id"), REVEAL],
                    "responses": body(200, 400, 403, 404),
                }
            },
            "/predictions": {
                "post": {
                    "summary": "commit a prediction (its hash only)",
                    "description": "Either `query` alone (the request is that text as one "
                    "user message), or the chat `request` the prediction is about (or just its "
                    "`messages`): its query hash covers every field but model, stream and user, "
                    "and the call through the proxy must hash the same. With a request, "
                    "`query` is derived (the last user message's text); a `query` or "
                    "`query_hash` sent with it must equal what it derives, else 400 naming the "
                    "field (`query_mismatch` for the text). A `query_hash` without the request "
                    "is refused (400, field `request`).",
                    "requestBody": {
                        "required": True,
                        **_json(
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["target", "commitment"],
                                "oneOf": [
                                    _only("query", ("request", "messages", "query_hash")),
                                    _only("request", ("messages", "query", "query_hash")),
                                    _only("messages", ("request", "query", "query_hash")),
                                ],
                                "properties": {
                                    "predictor": NAME,
                                    "target": NAME,
                                    "query": TEXT,
                                    "commitment": DIGEST,
                                    "item": {"type": ["string", "null"], "minLength": 1},
                                    "condition": {
                                        "anyOf": [
                                            SCALAR,
                                            {"type": "object", "additionalProperties": SCALAR},
                                        ]
                                    },
                                    "agent_signature": {"type": ["string", "null"]},
                                    "request": _REQUEST,
                                    "messages": _MESSAGES,
                                    "query_hash": DIGEST,
                                },
                            }
                        ),
                    },
                    "responses": body(201, 400, 403, 409, 413),
                }
            },
            "/predictions/{id}": {
                "get": {
                    "summary": "a prediction's state (404: unknown, or another agent's)",
                    "parameters": [_path_id("the prediction's id"), REVEAL],
                    "responses": body(200, 400, 403, 404),
                }
            },
            "/predictions/{id}/observe": {
                "post": {
                    "summary": "record an answer (operators only)",
                    "parameters": [_path_id("the prediction's id")],
                    "requestBody": {
                        "required": True,
                        **_json(
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["answer"],
                                "properties": {
                                    "answer": {"type": "string"},
                                    "request": {"type": "string", "maxLength": 200},
                                },
                            }
                        ),
                    },
                    "responses": body(201, 400, 403, 404, 409, 413),
                }
            },
            "/predictions/{id}/reveal": {
                "post": {
                    "summary": "reveal and score",
                    "parameters": [_path_id("the prediction's id")],
                    "requestBody": {
                        "required": True,
                        **_json(
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["prediction", "salt"],
                                "properties": {
                                    "prediction": {"type": "object"},
                                    "salt": TEXT,
                                },
                            }
                        ),
                    },
                    "responses": body(200, 400, 403, 404, 409, 413),
                }
            },
            "/calls": {
                "get": {
                    "summary": "the query proxy's record per agent",
                    "parameters": [{"name": "agent", "in": "query", "schema": {"type": "string"}}],
                    "responses": body(200, 403),
                }
            },
            "/ledger/head": {
                "get": {"summary": "the latest signed tree head", "responses": body(200, 404)}
            },
            "/ledger/proof": {
                "get": {
                    "summary": "an inclusion proof",
                    "parameters": [
                        _query_int("seq", "the entry", required=True),
                        _query_int("size", "the tree size (default: all)"),
                    ],
                    "responses": body(200, 400, 404),
                }
            },
            "/ledger/consistency": {
                "get": {
                    "summary": "a consistency proof",
                    "parameters": [
                        _query_int("old", "the earlier tree size", required=True),
                        _query_int("new", "the later tree size (default: all)"),
                    ],
                    "responses": body(200, 400, 404),
                }
            },
            "/proxy/{target}/v1/chat/completions": {
                "post": {
                    "summary": "the query proxy: an OpenAI-compatible call to a declared target",
                    "parameters": [
                        {
                            "name": "target",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "minLength": 1},
                        },
                        {
                            "name": "X-Mindledger-Prediction",
                            "in": "header",
                            "schema": {"type": "string", "maxLength": 64},
                        },
                    ],
                    "requestBody": {
                        "required": True,
                        **_json(
                            {
                                "type": "object",
                                "required": ["messages"],
                                "properties": {"messages": _MESSAGES, "stream": {"const": False}},
                                "additionalProperties": SCALAR,
                            }
                        ),
                    },
                    "responses": {
                        **body(200, 400, 403, 404, 409, 413, 428, 502),
                        "default": {"description": "the target's own answer, passed through"},
                    },
                }
            },
            **WITNESS_PATHS,
        },
    }
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            _add_roles(operation, access_of(method.upper(), path))
    return document


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


def _add_roles(operation: dict[str, Any], access: Access) -> None:
    """State ``access`` in ``operation``: its ``x-roles``, and a documented response for every
    status the table gives a caller."""
    operation["x-roles"] = access.x_roles()
    responses = operation["responses"]
    for status in sorted(access.statuses()):
        if str(status) not in responses:
            reason = _REASONS.get(status, "success")
            schema = ERROR if status >= 400 else ANY_OBJECT
            responses[str(status)] = {"description": reason, **_json(schema)}
    operation["responses"] = dict(sorted(responses.items()))
