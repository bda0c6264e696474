"""The API's request models: the base classes of bodies, queries and paths, the field types they
share, and the one translation of a refused value into the API's 400.

A model is both halves of a contract: :func:`parse` validates a request with it, and
:mod:`harness.daemon.openapi` generates the document's schema from it, so the two cannot drift.

Where the daemon accepts more than it documents — chat messages are OpenAI-compatible, and the
run planner knows reference agents the document only samples — the field validates the way the
domain does (``BeforeValidator`` / ``PlainValidator`` with today's messages) and documents, with
``json_schema_input_type``, the subset a client can rely on: every documented request is
accepted (schemathesis checks it), not every accepted request is documented.

A refusal is ``{"error": {"code", "message", "field"}}`` with status 400: ``unknown_field`` for a
name the model does not know, ``missing_field`` for a required one left out, ``invalid_field``
otherwise (or the code a validator names); ``field`` is the field's name (``a.b[0]`` inside it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
)
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from harness.daemon.web import ApiError, kind_of
from mindledger.names import AGENT_NAME_PATTERN

__all__ = [
    "DIGEST_PATTERN",
    "MAX_ID",
    "Body",
    "ChatMessage",
    "ChatRequest",
    "Digest",
    "Messages",
    "Model",
    "Name",
    "OpenBody",
    "PassedOn",
    "PathId",
    "Query",
    "Reveal",
    "Scalar",
    "Text",
    "WholeNumber",
    "daemon_enum",
    "not_null",
    "parse",
    "query_names",
    "refuse",
]

M = TypeVar("M", bound=BaseModel)

MAX_ID = 200
"""Longest id a path may name (a longer one is answered as an unknown id, 404)."""
DIGEST_PATTERN = "^sha256:[0-9a-f]{64}$"
DAEMON_ENUM = "x-daemon-enum"
"""Marks a schema whose values are the daemon's configuration (its declared agents, the modules
a run may ablate): :mod:`harness.daemon.openapi` fills in the ``enum`` when it states the API of
one daemon."""


class Model(BaseModel):
    """A value of the API: immutable, and refusing names it does not know."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Body(Model):
    """A JSON request body: strict (a number is not a string, ``true`` is not 1)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True
    )


class OpenBody(Model):
    """A JSON request body that passes fields it does not name on (the proxy's chat requests)."""

    model_config = ConfigDict(
        extra="allow", frozen=True, strict=True, use_attribute_docstrings=True
    )


class Query(Model):
    """A request's query parameters (each a string on the wire: its field type parses it)."""


def refuse(message: str, code: str = "invalid_field") -> PydanticCustomError:
    """The error a field validator raises: ``message`` said to the client, with ``code``."""
    return PydanticCustomError(code, message)


def not_null(schema: dict[str, Any]) -> None:
    """Document an optional field as one that may be left out, not sent as null: the daemon
    reads null as absent, but a field whose presence chooses the request's form (``query``,
    ``request``, ``agent``) is documented only as what it is when given."""
    branches = schema.pop("anyOf", None)
    if branches is not None:
        (kept,) = [b for b in branches if b != {"type": "null"}]
        schema.update(kept)
    schema.pop("default", None)


def daemon_enum(what: str) -> dict[str, Any]:
    """A string schema whose ``enum`` is ``what`` of the daemon being documented (``agents``,
    ``modules``)."""
    return {DAEMON_ENUM: what}


# -- field types --------------------------------------------------------------------------


def _text(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        raise refuse(f"expected a non-empty string, got {kind_of(value)}")
    return value


def _whole_number(value: Any) -> int:
    """A query parameter's whole number ≥ 0 (at most 19 digits), as ``int`` reads it."""
    raw = str(value)
    try:
        number = int(raw)
    except ValueError:
        number = -1
    if number < 0 or len(raw) > 19:
        raise refuse(f"expected a whole number ≥ 0, got {raw[:40]!r}")
    return number


def _reveal(value: Any) -> bool:
    if isinstance(value, bool):  # made in Python, not read from a query string
        return value
    if value not in ("true", "false"):
        raise refuse(f"expected true or false, got {str(value)[:40]!r}")
    return value == "true"


def _json_value(value: Any) -> Any:
    """Any JSON value: the domain checks it (and says what it expected)."""
    return value


Text = Annotated[str, Field(min_length=1), BeforeValidator(_text)]
"""A non-empty string."""
Name = Annotated[str, Field(pattern=AGENT_NAME_PATTERN), BeforeValidator(_text)]
"""An agent's name (:mod:`mindledger.names`)."""
Digest = Annotated[str, Field(pattern=DIGEST_PATTERN), BeforeValidator(_text)]
"""A hash: ``sha256:`` and 64 lowercase hex digits."""
PathId = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
"""An id in a path."""
WholeNumber = Annotated[
    int, Field(ge=0, json_schema_extra={"maximum": 2**53}), BeforeValidator(_whole_number)
]
"""A query parameter's whole number: a tree size or an entry's sequence number."""
Reveal = Annotated[
    bool,
    BeforeValidator(_reveal, json_schema_input_type=Literal["true", "false"]),
    Field(
        description="operator tokens only (an agent token gets 403): include a held-out run's "
        "seeds, item ids and item bodies, and a held-out prediction's query, item and observed "
        "answers, which are otherwise withheld"
    ),
]
"""``?reveal_held_out=true|false``."""
Scalar = str | bool | None | Annotated[float, Field(ge=-1e15, le=1e15)]
"""A JSON scalar as the daemon accepts it (its one input rule, :mod:`mindledger.jsonin`:
integers of at most 30 digits, finite numbers; documented here within ±10¹⁵)."""
JsonValue = TypeAliasType(
    "JsonValue",
    "Scalar | list[JsonValue] | dict[str, JsonValue]",  # type: ignore[arg-type]
)
"""Any JSON value whose numbers are :data:`Scalar`'s (nested lists and objects)."""


def _as_given(value: Any) -> Any:
    return value


JsonObject = Annotated[
    dict[str, Any], BeforeValidator(_as_given, json_schema_input_type=dict[str, JsonValue])
]
"""A JSON object taken as sent, documented as :data:`JsonValue`'s: a client drawing from the
document never sends a number the body parser refuses (an integer of more than 30 digits)."""


class ChatMessage(BaseModel):
    """One chat message, as documented (any further field a scalar)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Scalar] = Field(init=False)  # type: ignore[assignment]

    role: str
    content: str | None = None
    name: str = ""


class ChatRequest(BaseModel):
    """The chat completion request as the call will send it (any OpenAI-compatible field:
    tools, response_format… are objects and lists)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Scalar] = Field(init=False)  # type: ignore[assignment]

    messages: Annotated[list[ChatMessage], Field(min_length=1)]


PassedOn = Annotated[Any, PlainValidator(_json_value, json_schema_input_type=Scalar)]
"""A field a chat request passes on to its target: any JSON value, documented as a scalar."""
Messages = Annotated[
    Any,
    PlainValidator(
        _json_value, json_schema_input_type=Annotated[list[ChatMessage], Field(min_length=1)]
    ),
]
"""A chat request's messages: documented as the messages above; checked by
:func:`ledger.protocol.query_hash`, which accepts every OpenAI-compatible message."""


# -- validation -----------------------------------------------------------------------------

_CODES = ("invalid_field", "missing_field", "unknown_field", "query_mismatch")
_SHOULD = re.compile(r"^\w+ should (?:be |have )?")


def parse(
    model: type[M],
    data: Mapping[str, Any],
    *,
    refused: Callable[[str], ApiError] | None = None,
    context: Mapping[str, Any] | None = None,
) -> M:
    """``data`` as ``model``, or the API's 400 for the first thing wrong in it: a name the
    model does not know before anything else (as the daemon always answered). ``refused``
    makes another error of a refusal (a path's id: 404). ``context`` is pydantic's validation
    context (the endpoint passes the ``caller``: a model may refuse, with the API's own error,
    what the caller may not name before it reads the rest)."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        field = _field(first["loc"])
        if refused is not None:
            raise refused(field) from None
        raise _refusal(model, first, field) from None


def _field(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out[:100]


def _refusal(model: type[BaseModel], error: Any, field: str) -> ApiError:
    kind = error["type"]
    if kind == "extra_forbidden":
        names = query_names(model)
        where = "query parameter" if issubclass(model, Query) else "field"
        return ApiError(
            400,
            "unknown_field",
            f"unknown {where} (expected {'some of: ' + ', '.join(names) if names else 'none'})",
            field=field,
        )
    if kind == "missing":
        info = model.model_fields.get(field)
        said = (info.description or "").split("\n\n")[0].strip().rstrip(".") if info else ""
        what = said[:1].lower() + said[1:] if said else "a value"
        return ApiError(400, "missing_field", f"expected {what}, got nothing", field=field)
    if kind in _CODES:
        return ApiError(400, kind, error["msg"], field=field)
    expected = _SHOULD.sub("expected ", error["msg"])
    return ApiError(400, "invalid_field", f"{expected}, got {kind_of(error['input'])}", field=field)


def query_names(model: type[BaseModel]) -> tuple[str, ...]:
    """The names a model reads (its fields' aliases), in order."""
    return tuple(info.alias or name for name, info in model.model_fields.items())
