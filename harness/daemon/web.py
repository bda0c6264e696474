"""HTTP plumbing shared by the API and the proxy: the JSON error shape and reading a body (its
fields are checked by the request models, :mod:`harness.daemon.models`).

Every error is ``{"error": {"code", "message", "field"}}``: ``field`` names what was wrong and
``message`` says what was expected.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from mindledger.errors import InputError, UserError, readable
from mindledger.jsonin import parse_json
from mindledger.secrets import scrub

__all__ = [
    "MAX_BODY",
    "ApiError",
    "ScrubSecrets",
    "error_response",
    "json_object",
    "kind_of",
    "read_body",
    "scrub_logs",
]

MAX_BODY = 4 * 1024 * 1024
"""Largest request body accepted (bytes)."""


class ApiError(UserError):
    """An HTTP error with a JSON body naming the field at fault.

    A :class:`~mindledger.errors.UserError` (the request is at fault, or not allowed now);
    the API answers it with its own ``status``: its handler is found before ``UserError``'s.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    field: str | None = None,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "error": {
            "code": code,
            "message": readable(scrub(message)),
            "field": None if field is None else readable(field, 200),
        }
    }
    body.update(extra or {})
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The request body, read as it streams in and refused (413) as soon as it would pass
    ``limit`` bytes — a declared ``Content-Length`` over the limit before reading anything —
    so a huge body never sits in memory."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise ApiError(413, "too_large", f"expected a body of at most {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "too_large", f"expected a body of at most {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def json_object(request: Request, limit: int = MAX_BODY) -> dict[str, Any]:
    """The request body as a JSON object (:func:`mindledger.jsonin.parse_json`'s rule), or a
    400 naming ``body`` (413 past ``limit`` bytes)."""
    raw = await read_body(request, limit)
    if not raw.strip():
        raise ApiError(
            400, "invalid_body", "expected a JSON object, got an empty body", field="body"
        )
    try:
        obj = parse_json(raw, max_bytes=limit)
    except InputError as exc:
        raise ApiError(400, "invalid_json", f"expected a JSON object: {exc}", field="body") from None
    if not isinstance(obj, dict):
        raise ApiError(
            400, "invalid_body", f"expected a JSON object, got {type(obj).__name__}", field="body"
        )
    return obj


def kind_of(value: Any) -> str:
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


class ScrubSecrets(logging.Filter):
    """Masks credentials (:func:`mindledger.secrets.scrub`) in log records: a token sent in a
    query string, a URL with a password. uvicorn's access log formats from ``args``, so they
    are scrubbed one by one rather than merged into the message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = scrub(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(scrub(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: scrub(v) if isinstance(v, str) else v for k, v in record.args.items()}
        return True


LOGGERS = ("uvicorn.access", "uvicorn.error", "mindledger", "mindledger.daemon")


def scrub_logs() -> None:
    """Install :class:`ScrubSecrets` on the daemon's loggers (once; after uvicorn configured
    logging, which it does when it starts)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ScrubSecrets) for f in logger.filters):
            logger.addFilter(ScrubSecrets())
