"""The daemon as a witness of other ledgers (see :mod:`ledger.cosign`), and as a witnessed one.

=======  =======================================  ==============================================
POST     /witness/cosign                          ``{"log", "old", "proof", "tree_head"}`` → the
                                                  cosigned head, or 404 / 403 / 409 / 400
GET      /witness/heads?log=NAME                  the latest head cosigned for log NAME
=======  =======================================  ==============================================

Both are open (no token): what authenticates a head is the log's own signature, checked
against the public key the witness's operator registered for the log (``mindledger witness
add-log``); a log nobody registered gets 404 and nothing is written. Bodies are capped at
64 KiB, and each client address may make ``api_rate_limit`` requests a second (429 beyond).
The refusals follow C2SP tlog-witness's ``add-checkpoint``: 404 an unknown log, 403 a head not
signed by its key, 409 with ``"size"`` (the latest size cosigned) when ``old`` is not that
size, and 409 for a smaller tree, another root at the same size or a failing consistency proof
(tlog-witness answers 422 for the last; here every head that does not extend the cosigned one
is a conflict with it).

:class:`HeadSender` is the other side: the daemon sends each head it signs to the ledger's
witnesses (``[[witnesses]]``), again with the next head when one was down.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harness.daemon.web import ApiError, check_keys, known_query, read_body
from harness.settings import Settings
from harness.witnesses import COSIGNATURES_FILE, CosignatureLog, WitnessOutcome, send_head
from ledger.cosign import (
    LOG_NAME,
    MAX_PROOF,
    WITNESS_DIR,
    WitnessRefusal,
    WitnessStore,
    check_log_name,
)
from ledger.keys import load_or_create_witness_key
from ledger.predictions import Ledger
from ledger.tree import TreeHead
from mindledger.errors import InputError
from mindledger.jsonin import parse_json

__all__ = ["WITNESS_PATHS", "HeadSender", "witness_routes"]

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


def witness_routes(
    settings: Settings,
    *,
    limit: Callable[[str], float],
    now: Callable[[], float] = time.time,
) -> list[Route]:
    """The witness's routes over ``settings.home``; ``limit(key)`` is the rate limiter's
    ``take`` (seconds to wait, or 0), ``now`` the clock of cosignatures (POSIX seconds)."""
    home = Path(settings.home)
    store = WitnessStore(home / WITNESS_DIR)

    def throttle(request: Request) -> None:
        client = request.client.host if request.client is not None else "unknown"
        wait = limit(f"witness:{client}")
        if wait > 0:
            raise ApiError(
                429,
                "rate_limited",
                f"more than {settings.api_rate_limit:g} requests a second from this address",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )

    async def cosign(request: Request) -> Response:
        throttle(request)
        raw = await read_body(request, MAX_COSIGN_BODY)
        try:
            body = parse_json(raw, max_bytes=MAX_COSIGN_BODY)
        except InputError as exc:
            raise ApiError(
                400, "invalid_json", f"expected a JSON object: {exc}", field="body"
            ) from None
        if not isinstance(body, dict):
            raise ApiError(400, "invalid_body", "expected a JSON object", field="body")
        check_keys(body, ("log", "old", "proof", "tree_head"))
        signed = body.get("tree_head")
        if isinstance(signed, dict) and isinstance(signed.get("tree_head"), dict):
            fields = signed["tree_head"]
            signed = {
                **signed,
                "tree_head": {**fields, **{k: _whole(fields.get(k)) for k in ("size", "v")}},
            }
        try:
            log = check_log_name(body.get("log"))  # type: ignore[arg-type]
            head = TreeHead.from_dict(signed, where="tree_head")
        except InputError as exc:
            raise ApiError(400, "invalid_field", str(exc), field=exc.where) from None
        old, proof = _whole(body.get("old")), body.get("proof")
        if type(old) is not int or old < 0:
            raise ApiError(400, "invalid_field", "expected a tree size ≥ 0", field="old")
        if (
            not isinstance(proof, list)
            or len(proof) > MAX_PROOF
            or not all(isinstance(h, str) for h in proof)
        ):
            raise ApiError(
                400,
                "invalid_field",
                f"expected a list of at most {MAX_PROOF} hashes (sha256:<hex>)",
                field="proof",
            )

        def run() -> dict[str, Any]:
            key = load_or_create_witness_key(home)
            return store.cosign(log, head, old, proof, key=key, time=int(now())).to_dict()

        try:
            return JSONResponse(await run_in_threadpool(run))
        except WitnessRefusal as exc:
            extra = {} if exc.size is None else {"size": exc.size}
            raise ApiError(STATUS[exc.code], exc.code, str(exc), extra=extra) from None

    async def latest(request: Request) -> Response:
        throttle(request)
        name = request.query_params.get("log")
        if name is None:
            raise ApiError(400, "missing_field", "expected ?log=NAME", field="log")
        try:
            check_log_name(name)
        except InputError as exc:
            raise ApiError(400, "invalid_field", str(exc), field="log") from None
        record = await run_in_threadpool(store.record, name)
        if record is None:
            raise ApiError(404, "unknown_log", f"this witness does not witness {name!r}")
        if record.cosigned is None:
            raise ApiError(404, "not_found", f"this witness has cosigned no head of {name!r}")
        return JSONResponse(record.cosigned.to_dict())

    return [
        Route("/witness/cosign", known_query(cosign), methods=["POST"]),
        Route("/witness/heads", known_query(latest, "log"), methods=["GET"]),
    ]


def _whole(value: Any) -> Any:
    """``value``, or the int it equals if it is a float with no fraction (JSON has one number
    type: ``2.0`` is the size 2, and a head's canonical form, which its signature covers, has
    the int)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class HeadSender:
    """Sends the ledger's newest signed head to its witnesses when it grew past what each
    cosigned, or when the last attempt failed (a witness that was down gets the next head)."""

    def __init__(self, settings: Settings, ledger: Ledger):
        self.settings = settings
        self.ledger = ledger
        self.kept = CosignatureLog(Path(settings.home) / COSIGNATURES_FILE)
        self._cosigned: dict[str, int] = {}
        """Per witness URL: the size it last cosigned in this process."""

    def send(self, head: TreeHead | None) -> list[WitnessOutcome]:
        """Send ``head`` to every witness that has not cosigned it (or a larger one)."""
        if head is None:
            return []
        due = [w for w in self.settings.witnesses if self._cosigned.get(w.url, -1) < head.size]
        if not due:
            return []
        outcomes = send_head(self.ledger, head, due, self.kept)
        for outcome in outcomes:
            if outcome.cosigned is not None:
                self._cosigned[outcome.witness.url] = outcome.cosigned.tree_head.size
        return outcomes


_ERROR = {"$ref": "#/components/schemas/Error"}
_DIGEST = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
_LOG = {"type": "string", "pattern": f"^{LOG_NAME.pattern}$"}
_TREE_HEAD = {
    "type": "object",
    "required": ["tree_head", "signature"],
    "properties": {
        "signature": {"type": "string", "pattern": "^[0-9a-f]{128}$"},
        "tree_head": {
            "type": "object",
            "required": ["ledger", "size", "root", "head", "time", "public_key", "v"],
            "properties": {
                "ledger": _DIGEST,
                "size": {"type": "integer", "minimum": 0, "maximum": 2**53},
                "root": _DIGEST,
                "head": {"anyOf": [_DIGEST, {"type": "null"}]},
                "time": {"type": "string"},
                "public_key": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "v": {"const": 1},
            },
        },
    },
}
_REFUSED = {
    "description": "refused (see `error.code`)",
    "content": {"application/json": {"schema": _ERROR}},
}
WITNESS_PATHS: dict[str, Any] = {
    "/witness/cosign": {
        "post": {
            "summary": "cosign another ledger's signed tree head (as its witness)",
            "security": [],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["log", "old", "proof", "tree_head"],
                            "properties": {
                                "log": _LOG,
                                "old": {"type": "integer", "minimum": 0, "maximum": 2**53},
                                "proof": {"type": "array", "maxItems": MAX_PROOF, "items": _DIGEST},
                                "tree_head": _TREE_HEAD,
                            },
                        }
                    }
                },
            },
            "responses": {
                "200": {
                    "description": "the cosigned head",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                **{str(code): _REFUSED for code in (400, 403, 404, 409, 413, 429, 503)},
            },
        }
    },
    "/witness/heads": {
        "get": {
            "summary": "the latest head this witness cosigned for a log",
            "security": [],
            "parameters": [
                {
                    "name": "log",
                    "in": "query",
                    "required": True,
                    "schema": _LOG,
                }
            ],
            "responses": {
                "200": {
                    "description": "the cosigned head",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
                **{str(code): _REFUSED for code in (400, 404, 429, 503)},
            },
        }
    },
}
"""The witness's routes in the daemon's OpenAPI document."""
