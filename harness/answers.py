"""The answer protocol: how an agent is asked for an answer and how its reply is read.

In order of preference an agent answers through an OpenAI tool call (``submit_answer``), a
JSON-schema constrained response (``response_format``), or free text whose last line holds the
answer. :func:`parse_reply` reads any of the three from one assistant message, so a model that
ignores the requested form is still understood when it can be.

Everything here is pure: it builds request pieces and parses replies; it does no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindledger.errors import InputError
from mindledger.jsonin import parse_json

__all__ = [
    "ANSWER_TOOL",
    "OPEN_ANSWER_MAX",
    "ParsedAnswer",
    "answer_json_schema",
    "answer_tool",
    "instructions",
    "nudge_message",
    "parse_reply",
    "response_format",
]

ANSWER_TOOL = "submit_answer"

OPEN_ANSWER_MAX = 200
"""Longest free-text answer (characters) an ``open`` answer may be."""


@dataclass(frozen=True)
class ParsedAnswer:
    """What was read from a reply: the answer (None when nothing parseable), the stated
    confidence, and how it was read (``tool``, ``json``, ``text``)."""

    answer: Any
    confidence: float | None
    via: str | None
    problem: str | None = None


def _value_schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    kind = spec.get("kind")
    if kind == "choice":
        return {"type": "string", "enum": list(spec["choices"])}
    if kind == "yesno":
        return {"type": "string", "enum": ["yes", "no"]}
    if kind == "integer":
        schema: dict[str, Any] = {"type": "integer"}
        if "min" in spec:
            schema["minimum"] = spec["min"]
        if "max" in spec:
            schema["maximum"] = spec["max"]
        return schema
    if kind == "open":
        return {"type": "string", "minLength": 1, "maxLength": OPEN_ANSWER_MAX}
    if kind == "distribution":
        choices = [str(c) for c in spec["choices"]]
        return {
            "type": "object",
            "properties": {c: {"type": "number", "minimum": 0, "maximum": 1} for c in choices},
            "required": choices,
            "additionalProperties": False,
        }
    raise ValueError(f"unknown answer kind {kind!r}")


ANSWER_FIELDS = ("answer", "action")
"""Keys an answer object may carry its answer under (``action`` is the games paper's)."""


def answer_json_schema(spec: Mapping[str, Any], field: str = "answer") -> dict[str, Any]:
    """JSON schema of an answer object: ``{"answer": …, "confidence": 0..1}``."""
    return {
        "type": "object",
        "properties": {
            field: _value_schema(spec),
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": [field, "confidence"],
        "additionalProperties": False,
    }


def answer_tool(spec: Mapping[str, Any], name: str = ANSWER_TOOL) -> dict[str, Any]:
    """The answer tool as an OpenAI function spec: ``submit_answer``, or a task's own name for
    it (the games paper's ``submit_action``, whose value is called ``action``)."""
    field = "action" if name == "submit_action" else "answer"
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "Submit your final answer and how confident you are in it (0 to 1).",
            "parameters": answer_json_schema(spec, field),
        },
    }


def response_format(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A ``response_format`` that constrains the reply to the answer object."""
    return {
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": True, "schema": answer_json_schema(spec)},
    }


def describe(spec: Mapping[str, Any]) -> str:
    """A short phrase saying what form the answer takes."""
    kind = spec.get("kind")
    if kind == "choice":
        return "one of: " + ", ".join(str(c) for c in spec["choices"])
    if kind == "yesno":
        return "yes or no"
    if kind == "integer":
        return f"a whole number from {spec.get('min')} to {spec.get('max')}"
    if kind == "distribution":
        return "a probability for each of " + ", ".join(str(c) for c in spec["choices"])
    if kind == "open":
        return "a short answer of a few words"
    return "your answer"


def instructions(spec: Mapping[str, Any], mode: str, tool: str = ANSWER_TOOL) -> str:
    """The line appended to a prompt that says how to answer, for ``mode`` tools/json/text."""
    form = describe(spec)
    if mode == "tools":
        return f"Answer by calling {tool} with your answer ({form}) and your confidence."
    if mode == "json":
        return (
            f'Reply with a JSON object {{"answer": ..., "confidence": ...}}: the answer is {form}; '
            "confidence is a number from 0 to 1."
        )
    return (
        f"End your reply with a last line of the form 'ANSWER: <answer>' where the answer is {form}, "
        "optionally followed by 'CONFIDENCE: <0 to 1>'."
    )


def nudge_message(spec: Mapping[str, Any], mode: str, tool: str = ANSWER_TOOL) -> str:
    """The one follow-up turn sent when a reply had no parseable answer."""
    return "I could not find an answer in your reply. " + instructions(spec, mode, tool)


_NORMALISE = re.compile(r"[\s_\-]+")
_ARTICLES = re.compile(r"^(the|a|an)\s+")


@functools.lru_cache(maxsize=4096)  # the choices of every item of a run, normalised again and again
def _norm(text: str) -> str:
    text = text.strip().strip(".,;:!?\"'`*").lower()
    text = _ARTICLES.sub("", text)
    return _NORMALISE.sub(" ", text).strip()


_DIGITS = re.compile(r"-?\d+")


def coerce(value: Any, spec: Mapping[str, Any]) -> tuple[Any, str | None]:
    """Turn a raw answer value into the spec's form; (None, problem) when it does not fit."""
    kind = spec.get("kind")
    if kind in ("choice", "yesno"):
        choices = list(spec["choices"]) if kind == "choice" else ["yes", "no"]
        if isinstance(value, bool) and kind == "yesno":
            return ("yes" if value else "no"), None
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return None, f"expected {describe(spec)}, got {value!r}"
        wanted = _norm(str(value))
        by_norm = {_norm(str(c)): c for c in choices}
        if wanted in by_norm:
            return by_norm[wanted], None
        # a reply like "in the drawer" or "the key is in the safe": one choice mentioned alone
        mentioned = [c for n, c in by_norm.items() if re.search(rf"\b{re.escape(n)}\b", wanted)]
        if len(mentioned) == 1:
            return mentioned[0], None
        return None, f"expected {describe(spec)}, got {value!r}"
    if kind == "integer":
        if type(value) is int:  # the usual answers, taken as the checks below would take them
            number = value
        elif type(value) is str and value.isascii() and value.isdigit():
            number = int(value)
        elif isinstance(value, bool):
            return None, f"expected {describe(spec)}, got {value!r}"
        else:
            digits = _DIGITS.findall(value) if isinstance(value, str) else []
            if isinstance(value, int | float) and float(value).is_integer():
                number = int(value)
            elif len(digits) == 1:
                number = int(digits[0])
            else:
                return None, f"expected {describe(spec)}, got {value!r}"
        lo, hi = spec.get("min"), spec.get("max")
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            return None, f"{number} is outside {lo}..{hi}"
        return number, None
    if kind == "open":
        # free text, kept as given (trimmed); the item's own clusters map it to a label later
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return None, f"expected {describe(spec)}, got {value!r}"
        text = " ".join(str(value).split())
        if not text:
            return None, f"expected {describe(spec)}, got an empty answer"
        if len(text) > OPEN_ANSWER_MAX:
            return None, f"expected {describe(spec)}, got {len(text)} characters"
        return text, None
    if kind == "distribution":
        if not isinstance(value, Mapping):
            return None, f"expected a probability per choice, got {value!r}"
        out: dict[str, float] = {}
        for c in spec["choices"]:
            p = value.get(str(c), 0.0)
            if isinstance(p, bool) or not isinstance(p, int | float) or p < 0:
                return None, f"probability of {c!r} must be a number ≥ 0, got {p!r}"
            out[str(c)] = float(p)
        total = sum(out.values())
        if total <= 0:
            return None, "probabilities sum to zero"
        return {k: v / total for k, v in out.items()}, None
    return value, None


def _confidence(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        c = float(raw)
    except ValueError:
        return None
    if c > 1 and c <= 100:
        c /= 100
    return c if 0 <= c <= 1 else None


def _from_object(obj: Any, spec: Mapping[str, Any], via: str) -> ParsedAnswer | None:
    if type(obj) is not dict and not isinstance(obj, Mapping):
        return None
    for key in ANSWER_FIELDS:  # the first one the object has
        if key in obj:
            break
    else:
        return None
    value, problem = coerce(obj[key], spec)
    return ParsedAnswer(
        value, _confidence(obj.get("confidence")), via if value is not None else None, problem
    )


_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_ANSWER_LINE = re.compile(r"^\s*(?:final\s+)?answer\s*[:=]\s*(.+)$", re.IGNORECASE)
_CONF_LINE = re.compile(r"^\s*confidence\s*[:=]\s*([0-9.]+)\s*%?\s*$", re.IGNORECASE)


def parse_reply(
    message: Mapping[str, Any], spec: Mapping[str, Any], tool: str = ANSWER_TOOL
) -> ParsedAnswer:
    """Read the answer from an assistant message: a call of the answer tool ``tool``, then JSON
    content, then the last line of free text. Never raises on a malformed reply: it returns
    ``answer=None`` with the problem."""
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        fn = call.get("function") if type(call) is dict or isinstance(call, Mapping) else None
        if (type(fn) is not dict and not isinstance(fn, Mapping)) or fn.get("name") != tool:
            continue
        args = fn.get("arguments")
        try:
            obj = parse_json(args) if isinstance(args, str) else args
        except InputError:
            return ParsedAnswer(None, None, None, f"{tool} arguments are not JSON")
        parsed = _from_object(obj, spec, "tool")
        if parsed is not None:
            return parsed
        return ParsedAnswer(None, None, None, f"{tool} arguments lack an answer")
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    if not isinstance(content, str) or not content.strip():
        return ParsedAnswer(None, None, None, "empty reply")
    text = content.strip()
    match = _JSON_OBJECT.search(text)
    if match:
        try:
            parsed = _from_object(parse_json(match.group(0)), spec, "json")
        except InputError:
            parsed = None
        if parsed is not None and parsed.answer is not None:
            return parsed
    lines = [ln for ln in text.splitlines() if ln.strip()]
    confidence = None
    if lines and _CONF_LINE.match(lines[-1]):
        confidence = _confidence(_CONF_LINE.match(lines[-1]).group(1))  # type: ignore[union-attr]
        lines = lines[:-1]
    for line in reversed(lines):
        m = _ANSWER_LINE.match(line)
        if m:
            value, problem = coerce(m.group(1), spec)
            return ParsedAnswer(value, confidence, "text" if value is not None else None, problem)
    if lines:
        value, problem = coerce(lines[-1], spec)
        return ParsedAnswer(value, confidence, "text" if value is not None else None, problem)
    return ParsedAnswer(None, None, None, "no answer line")
