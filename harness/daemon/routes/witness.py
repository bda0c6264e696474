"""The daemon as a witness of other ledgers (see :mod:`ledger.cosign` and
:mod:`harness.daemon.witness_api`): ``POST /witness/cosign`` and ``GET /witness/heads?log=NAME``.

Both are open (no token): what authenticates a head is the log's own signature, checked
against the public key the witness's operator registered for the log (``mindledger witness
add-log``); a log nobody registered gets 404 and nothing is written. Bodies are capped at
64 KiB, and each client address may make ``api_rate_limit`` requests a second (429 beyond).
The refusals follow C2SP tlog-witness's ``add-checkpoint``: 404 an unknown log, 403 a head not
signed by its key, 409 with ``"size"`` (the latest size cosigned) when ``old`` is not that
size, and 409 for a smaller tree, another root at the same size or a failing consistency proof
(tlog-witness answers 422 for the last; here every head that does not extend the cosigned one
is a conflict with it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from starlette.concurrency import run_in_threadpool

from harness.daemon.endpoint import Call, Endpoint
from harness.daemon.models import DIGEST_PATTERN, Body, Digest, Model, Query, Scalar, refuse
from harness.daemon.services import Services
from harness.daemon.web import ApiError, kind_of
from ledger.cosign import LOG_NAME, MAX_PROOF, WitnessRefusal, check_log_name
from ledger.keys import load_or_create_witness_key
from ledger.tree import TreeHead
from mindledger.errors import InputError

__all__ = ["ENDPOINTS", "MAX_COSIGN_BODY", "CosignRequest", "cosign", "latest"]

MAX_COSIGN_BODY = 64 * 1024
"""Largest ``POST /witness/cosign`` body (a head and at most 64 proof hashes are ~6 KiB)."""
STATUS = {
    "unknown_log": 404,
    "bad_signature": 403,
    "bad_request": 400,
    "old_size_mismatch": 409,
    "smaller_tree": 409,
    "inconsistent": 409,
}
TREE_SIZE_MAX = 2**53


def _whole(value: Any) -> Any:
    """``value``, or the int it equals if it is a float with no fraction (JSON has one number
    type: ``2.0`` is the size 2, and a head's canonical form, which its signature covers, has
    the int)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _log_name(value: Any) -> Any:
    try:
        return check_log_name(value)
    except InputError as exc:
        raise refuse(str(exc)) from None


def _tree_size(value: Any) -> Any:
    value = _whole(value)
    if type(value) is not int or value < 0:
        raise refuse(f"expected a tree size ≥ 0, got {kind_of(value)}")
    return value


def _proof(value: Any) -> Any:
    if (
        not isinstance(value, list)
        or len(value) > MAX_PROOF
        or not all(isinstance(h, str) for h in value)
    ):
        raise refuse(f"expected a list of at most {MAX_PROOF} hashes (sha256:<hex>)")
    return value


LogName = Annotated[
    str,
    BeforeValidator(
        _log_name, json_schema_input_type=Annotated[str, Field(pattern=f"^{LOG_NAME.pattern}$")]
    ),
]
"""A log's name (a checkpoint origin such as ``lab.example/piper``)."""
TreeSize = Annotated[
    int, Field(ge=0, json_schema_extra={"maximum": TREE_SIZE_MAX}), BeforeValidator(_tree_size)
]


class TreeHeadFields(Model):
    """What a tree head states (:class:`ledger.tree.TreeHead`)."""

    ledger: Annotated[str, Field(pattern=DIGEST_PATTERN)]
    size: Annotated[int, Field(ge=0, le=TREE_SIZE_MAX)]
    root: Annotated[str, Field(pattern=DIGEST_PATTERN)]
    head: Annotated[str, Field(pattern=DIGEST_PATTERN)] | None
    time: str
    public_key: Annotated[str, Field(pattern="^[0-9a-f]{64}$")]
    v: Literal[1]


class SignedTreeHead(Model):
    """A tree head and the log's signature of its canonical form."""

    model_config = Model.model_config | {"extra": "allow"}
    # further fields are scalars as every body's (mindledger.jsonin: an integer of at most 30
    # digits): documented so, a schema-valid head is never refused for one (schemathesis drew
    # a 32-digit integer under an undocumented key)
    __pydantic_extra__: dict[str, Scalar] = Field(init=False)  # type: ignore[assignment]

    tree_head: TreeHeadFields
    signature: Annotated[str, Field(pattern="^[0-9a-f]{128}$")]


def _object(value: Any) -> Any:
    if not isinstance(value, dict):
        raise refuse(f"expected a signed tree head (a JSON object), got {kind_of(value)}")
    return value


class CosignRequest(Body):
    log: LogName
    """The log's name."""
    tree_head: Annotated[
        dict[str, Any], BeforeValidator(_object, json_schema_input_type=SignedTreeHead)
    ]
    """The log's newest signed tree head."""
    old: TreeSize
    """The size of the head this witness last cosigned for the log (0: none)."""
    proof: Annotated[
        list[str],
        BeforeValidator(
            _proof, json_schema_input_type=Annotated[list[Digest], Field(max_length=MAX_PROOF)]
        ),
    ]
    """The consistency proof from that size to this head's."""


class HeadsQuery(Query):
    log: LogName
    """The log's name (?log=NAME)."""


def _signed_head(signed: dict[str, Any]) -> TreeHead:
    fields = signed.get("tree_head")
    if isinstance(fields, dict):
        signed = {
            **signed,
            "tree_head": {**fields, **{k: _whole(fields.get(k)) for k in ("size", "v")}},
        }
    try:
        return TreeHead.from_dict(signed, where="tree_head")
    except InputError as exc:
        raise ApiError(400, "invalid_field", str(exc), field=exc.where) from None


async def cosign(services: Services, call: Call[None, None, CosignRequest]) -> dict[str, Any]:
    body = call.body
    head = _signed_head(body.tree_head)

    def run() -> dict[str, Any]:
        key = load_or_create_witness_key(services.home)
        return services.witness.cosign(
            body.log, head, body.old, body.proof, key=key, time=int(services.now())
        ).to_dict()

    try:
        return await run_in_threadpool(run)
    except WitnessRefusal as exc:
        extra = {} if exc.size is None else {"size": exc.size}
        raise ApiError(STATUS[exc.code], exc.code, str(exc), extra=extra) from None


async def latest(services: Services, call: Call[None, HeadsQuery, None]) -> dict[str, Any]:
    name = call.query.log
    record = await run_in_threadpool(services.witness.record, name)
    if record is None:
        raise ApiError(404, "unknown_log", f"this witness does not witness {name!r}")
    if record.cosigned is None:
        raise ApiError(404, "not_found", f"this witness has cosigned no head of {name!r}")
    return record.cosigned.to_dict()


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "POST",
        "/witness/cosign",
        cosign,
        "cosign another ledger's signed tree head (as its witness)",
        body=CosignRequest,
        max_body=MAX_COSIGN_BODY,
        per_address=True,
        errors=(403, 404, 409, 413, 429, 503),
    ),
    Endpoint(
        "GET",
        "/witness/heads",
        latest,
        "the latest head this witness cosigned for a log",
        query=HeadsQuery,
        per_address=True,
        errors=(404, 429, 503),
    ),
)
