"""What became of a stored trial, read from its columns alone (no I/O, no SQLAlchemy): the
profile's sections and :mod:`reports.trials`' listings tell an outcome, and an API error's
kind, by these same rules."""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["NO_ANSWER", "Outcome", "error_kind", "outcome_of"]

Outcome = Literal["ok", "wrong", "unparsed", "error", "answered", "n/a"]

NO_ANSWER = "no answer could be read from the reply"
"""Why an answer could not be read, when its score says nothing more."""

_KIND = re.compile(r"^([a-z_]+): ")


def outcome_of(status: str, answer_json: str | None, correct: bool | None) -> Outcome:
    """The outcome of a stored trial from its status, stored answer and correctness."""
    if status == "api_error":
        return "error"
    if status == "not_applicable":
        return "n/a"
    if answer_json is None or answer_json == "null":
        return "unparsed"
    if correct is None:
        return "answered"
    return "ok" if correct else "wrong"


def error_kind(error: str | None) -> tuple[str, str]:
    """(kind, message) of an API error's stored text, ``kind: message``: its kind as the adapter
    named it (``timeout``, ``malformed``…), or ``error`` with the whole text when it names
    none."""
    text = error or ""
    m = _KIND.match(text)
    return (m.group(1), text[m.end() :]) if m else ("error", text)
