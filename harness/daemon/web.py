"""HTTP plumbing shared by the API and the proxy: the JSON error shape and body parsing.

Every error is ``{"error": {"code", "message", "field"}}``: ``field`` names what was wrong and
``message`` says what was expected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

__all__ = [
    "MAX_BODY",
    "ApiError",
    "check_keys",
    "error_response",
    "json_object",
    "kind_of",
    "text_field",
]

MAX_BODY = 4 * 1024 * 1024
"""Largest request body accepted (bytes)."""


class ApiError(Exception):
    """An HTTP error with a JSON body naming the field at fault."""

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
    body: dict[str, Any] = {"error": {"code": code, "message": message, "field": field}}
    body.update(extra or {})
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


async def json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object, or a 400 naming ``body``."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise ApiError(413, "too_large", f"expected a body of at most {MAX_BODY} bytes")
    if not raw.strip():
        raise ApiError(
            400, "invalid_body", "expected a JSON object, got an empty body", field="body"
        )
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(
            400, "invalid_json", f"expected a JSON object: {exc}", field="body"
        ) from None
    if not isinstance(obj, dict):
        raise ApiError(
            400, "invalid_body", f"expected a JSON object, got {type(obj).__name__}", field="body"
        )
    return obj


def check_keys(body: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in body:
        if key not in allowed:
            raise ApiError(
                400,
                "unknown_field",
                f"unknown field (expected some of: {', '.join(allowed)})",
                field=key,
            )


def text_field(body: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if value is None:
        raise ApiError(400, "missing_field", "expected a non-empty string, got nothing", field=key)
    if not isinstance(value, str) or not value:
        raise ApiError(
            400, "invalid_field", f"expected a non-empty string, got {kind_of(value)}", field=key
        )
    return value


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
