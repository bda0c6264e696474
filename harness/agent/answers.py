"""The answer protocol: how an agent is asked for an answer and how its reply is read.

In order of preference an agent answers through an OpenAI tool call (``submit_answer``), a
JSON-schema constrained response (``response_format``), or free text whose last line holds the
answer. :func:`parse_reply` reads any of the three from one assistant message, so a model that
ignores the requested form is still understood when it can be.

**Typed answers are checked as typed.** An *answer object* — the arguments of the answer tool,
or a JSON object with an ``answer`` (or ``action``) key in the content — must match the schema
the request sent (:func:`answer_json_schema`): its answer of the spec's JSON type (a string for
a choice, an integer for a number), and ``confidence``, a number from 0 to 1. Anything else is
not an answer: :func:`parse_reply` returns ``answer=None`` with a problem that names the field,
what was expected and what came (``submit_action.action: expected an integer from 0 to 2, got
the string "0"``), so that the trial counts as unparsed instead of being scored as a wrong
answer. Within the right type a choice is read leniently (case, spaces or underscores, a
leading article). Free text is text by nature: its ``ANSWER:`` line is read as the spec's form
("17" is 17), and its ``CONFIDENCE:`` line is optional (a number from 0 to 1, or a percentage).

Everything here is pure: it builds request pieces and parses replies; it does no I/O.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mindledger.errors import InputError
from mindledger.jsonin import parse_json

__all__ = [
    "ANSWER_FIELDS",
    "ANSWER_KINDS",
    "ANSWER_TOOL",
    "OPEN_ANSWER_MAX",
    "ParsedAnswer",
    "answer_field",
    "answer_json_schema",
    "answer_tool",
    "describe_value",
    "expected_value",
    "instructions",
    "nudge_message",
    "parse_reply",
    "response_format",
]

ANSWER_TOOL = "submit_answer"

ANSWER_KINDS = ("choice", "yesno", "integer", "open", "distribution")
"""The answer spec kinds (``spec["kind"]``)."""

OPEN_ANSWER_MAX = 200
"""Longest free-text answer (characters) an ``open`` answer may be."""


@dataclass(frozen=True)
class ParsedAnswer:
    """What was read from a reply: the answer (None when nothing parseable), the stated
    confidence, how it was read (``tool``, ``json``, ``text``) and, when there is no answer,
    why (a phrase naming the field, what was expected and what came)."""

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


def answer_field(tool: str = ANSWER_TOOL) -> str:
    """The key the answer tool ``tool`` takes the answer under: ``action`` for the games
    paper's ``submit_action``, ``answer`` for every other."""
    return "action" if tool == "submit_action" else "answer"


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
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "Submit your final answer and how confident you are in it (0 to 1).",
            "parameters": answer_json_schema(spec, answer_field(name)),
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


def _quoted(values: Any) -> str:
    return ", ".join(json.dumps(str(v), ensure_ascii=False) for v in values)


def expected_value(spec: Mapping[str, Any]) -> str:
    """What an answer object's answer must be, in JSON's terms: ``an integer from 0 to 2``,
    ``one of the strings "box", "chest"`` …"""
    kind = spec.get("kind")
    if kind == "choice":
        return f"one of the strings {_quoted(spec['choices'])}"
    if kind == "yesno":
        return 'the string "yes" or "no"'
    if kind == "integer":
        lo, hi = spec.get("min"), spec.get("max")
        if lo is not None and hi is not None:
            return f"an integer from {lo} to {hi}"
        if lo is not None or hi is not None:
            return f"an integer {'≥ ' + str(lo) if lo is not None else '≤ ' + str(hi)}"
        return "an integer"
    if kind == "open":
        return f"a string of 1 to {OPEN_ANSWER_MAX} characters"
    if kind == "distribution":
        return f"an object with a probability (a number from 0 to 1) for each of {_quoted(spec['choices'])}"
    return "an answer"


_SHOWN_MAX = 60


def describe_value(value: Any) -> str:
    """A JSON value as a person reads it in a problem: ``the string "0"``, ``the number 1.5``,
    ``the boolean true``, ``null``, ``an object {…}`` (long values cut short)."""
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if value is None:
        return "null"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _SHOWN_MAX:
        text = text[: _SHOWN_MAX - 1] + "…"
    if isinstance(value, str):
        return f"the string {text}"
    if isinstance(value, int | float):
        return f"the number {text}"
    if isinstance(value, list | tuple):
        return f"an array {text}"
    if isinstance(value, Mapping):
        return f"an object {text}"
    return text


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


def nudge_message(
    spec: Mapping[str, Any], mode: str, tool: str = ANSWER_TOOL, problem: str | None = None
) -> str:
    """The one follow-up turn sent when a reply had no parseable answer; it says what was
    wrong when ``problem`` (a :attr:`ParsedAnswer.problem`) is given."""
    said = f" What was wrong: {problem}." if problem else ""
    return f"I could not find an answer in your reply.{said} " + instructions(spec, mode, tool)


_NORMALISE = re.compile(r"[\s_\-]+")
_ARTICLES = re.compile(r"^(the|a|an)\s+")


@functools.lru_cache(maxsize=4096)  # the choices of every item of a run, normalised again and again
def _norm(text: str) -> str:
    text = text.strip().strip(".,;:!?\"'`*").lower()
    text = _ARTICLES.sub("", text)
    return _NORMALISE.sub(" ", text).strip()


_DIGITS = re.compile(r"-?\d+")


def coerce(value: Any, spec: Mapping[str, Any]) -> tuple[Any, str | None]:
    """Turn a raw answer value into the spec's form, leniently (as free text is read: the
    string "17" is 17, "in the drawer" is "drawer"); (None, problem) when it does not fit.
    Answer objects are type-checked before this (:func:`parse_reply`)."""
    kind = spec.get("kind")
    if kind in ("choice", "yesno"):
        choices = list(spec["choices"]) if kind == "choice" else ["yes", "no"]
        if isinstance(value, bool) and kind == "yesno":
            return ("yes" if value else "no"), None
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return None, f"expected {describe(spec)}, got {describe_value(value)}"
        wanted = _norm(str(value))
        by_norm = {_norm(str(c)): c for c in choices}
        if wanted in by_norm:
            return by_norm[wanted], None
        # a reply like "in the drawer" or "the key is in the safe": one choice mentioned alone
        mentioned = [c for n, c in by_norm.items() if re.search(rf"\b{re.escape(n)}\b", wanted)]
        if len(mentioned) == 1:
            return mentioned[0], None
        return None, f"expected {describe(spec)}, got {describe_value(value)}"
    if kind == "integer":
        if type(value) is int:  # the usual answers, taken as the checks below would take them
            number = value
        elif type(value) is str and value.isascii() and value.isdigit():
            number = int(value)
        elif isinstance(value, bool):
            return None, f"expected {describe(spec)}, got {describe_value(value)}"
        else:
            digits = _DIGITS.findall(value) if isinstance(value, str) else []
            if isinstance(value, int | float) and float(value).is_integer():
                number = int(value)
            elif len(digits) == 1:
                number = int(digits[0])
            else:
                return None, f"expected {describe(spec)}, got {describe_value(value)}"
        lo, hi = spec.get("min"), spec.get("max")
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            return None, f"expected {describe(spec)}, got {describe_value(value)}"
        return number, None
    if kind == "open":
        # free text, kept as given (trimmed); the item's own clusters map it to a label later
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return None, f"expected {describe(spec)}, got {describe_value(value)}"
        text = " ".join(str(value).split())
        if not text:
            return None, f"expected {describe(spec)}, got an empty answer"
        if len(text) > OPEN_ANSWER_MAX:
            return None, f"expected {describe(spec)}, got {len(text)} characters"
        return text, None
    if kind == "distribution":
        if not isinstance(value, Mapping):
            return None, f"expected a probability per choice, got {describe_value(value)}"
        out: dict[str, float] = {}
        for c in spec["choices"]:
            p = value.get(str(c), 0.0)
            if isinstance(p, bool) or not isinstance(p, int | float) or p < 0:
                name, got = json.dumps(str(c), ensure_ascii=False), describe_value(p)
                return None, f"expected a number ≥ 0 as the probability of {name}, got {got}"
            out[str(c)] = float(p)
        total = sum(out.values())
        if total <= 0:
            return None, "expected at least one probability above 0, got none"
        return {k: v / total for k, v in out.items()}, None
    return value, None


def _of_json_type(value: Any, spec: Mapping[str, Any]) -> bool:
    """Whether ``value`` has the JSON type the answer schema gives ``spec``'s answer (an
    integral number such as 3.0 is an integer, as in JSON Schema)."""
    kind = spec.get("kind")
    if kind in ("choice", "yesno", "open"):
        return type(value) is str
    if kind == "integer":
        if type(value) is int:
            return True
        return type(value) is float and math.isfinite(value) and value.is_integer()
    if kind == "distribution":
        return isinstance(value, Mapping)
    return True


def _typed(value: Any, spec: Mapping[str, Any], where: str) -> tuple[Any, str | None]:
    """An answer object's answer ``value`` (at ``where``) in the spec's form, type-checked."""
    if not _of_json_type(value, spec):
        return None, f"{where}: expected {expected_value(spec)}, got {describe_value(value)}"
    out, problem = coerce(value, spec)
    if problem is None:
        return out, None
    if spec.get("kind") == "distribution":
        return None, f"{where}: {problem}"
    return None, f"{where}: expected {expected_value(spec)}, got {describe_value(value)}"


CONFIDENCE_EXPECTED = "a number from 0 to 1"


def _object_confidence(obj: Mapping[str, Any], where: str) -> tuple[float | None, str | None]:
    """The required ``confidence`` of an answer object: a number from 0 to 1."""
    if "confidence" not in obj:
        return None, f"{where}.confidence is missing: expected {CONFIDENCE_EXPECTED}"
    c = obj["confidence"]
    if (type(c) is float or type(c) is int) and 0 <= c <= 1:
        return float(c), None
    return None, f"{where}.confidence: expected {CONFIDENCE_EXPECTED}, got {describe_value(c)}"


def _answer_object(
    obj: Mapping[str, Any], spec: Mapping[str, Any], via: str, where: str, key: str
) -> ParsedAnswer:
    """Read answer object ``obj`` (its answer under ``key``): every problem found, or the
    answer and its confidence."""
    problems = []
    value, problem = _typed(obj[key], spec, f"{where}.{key}")
    if problem:
        problems.append(problem)
    confidence, problem = _object_confidence(obj, where)
    if problem:
        problems.append(problem)
    if problems:
        return _unparsed("; ".join(problems))
    return ParsedAnswer(value, confidence, via)


def _unparsed(problem: str) -> ParsedAnswer:
    return ParsedAnswer(None, None, None, problem)


def _tool_answer(args: Any, spec: Mapping[str, Any], tool: str) -> ParsedAnswer:
    """The answer in the arguments of a call of the answer tool ``tool``."""
    if isinstance(args, str):
        try:
            args = parse_json(args)
        except InputError as exc:
            not_json = f"text that is not JSON ({exc})"
            return _unparsed(f"{tool}.arguments: expected a JSON object, got {not_json}")
    if type(args) is not dict and not isinstance(args, Mapping):
        return _unparsed(f"{tool}.arguments: expected a JSON object, got {describe_value(args)}")
    key = answer_field(tool)
    if key not in args:
        held = ", ".join(map(str, args)) or "nothing"
        return _unparsed(
            f"{tool}.{key} is missing: expected {expected_value(spec)} (the arguments hold: {held})"
        )
    return _answer_object(args, spec, "tool", tool, key)


_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_ANSWER_LINE = re.compile(r"^\s*(?:final\s+)?answer\s*[:=]\s*(.+)$", re.IGNORECASE)
_CONF_LINE = re.compile(r"^\s*confidence\s*[:=]\s*(.*?)\s*$", re.IGNORECASE)
_CONF_VALUE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(%?)")


def _text_confidence(text: str) -> tuple[float | None, str | None]:
    """The value of a ``CONFIDENCE:`` line: a number from 0 to 1, or a percentage."""
    m = _CONF_VALUE.fullmatch(text)
    if m:
        c = float(m.group(1)) / (100 if m.group(2) else 1)
        if 0 <= c <= 1:
            return c, None
    return None, (
        f"the CONFIDENCE line: expected {CONFIDENCE_EXPECTED} (or a percentage such as 80%), "
        f"got {json.dumps(text[:_SHOWN_MAX], ensure_ascii=False)}"
    )


def _text_answer(text: str, spec: Mapping[str, Any]) -> ParsedAnswer:
    """The answer in free text: its last ``ANSWER:`` line, else its last line."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    confidence = None
    conf = _CONF_LINE.match(lines[-1]) if lines else None
    if conf:
        confidence, problem = _text_confidence(conf.group(1))
        if problem:
            return _unparsed(problem)
        lines = lines[:-1]
    for line in reversed(lines):
        m = _ANSWER_LINE.match(line)
        if m:
            value, problem = coerce(m.group(1), spec)
            if problem:
                return _unparsed(f"the ANSWER line: {problem}")
            return ParsedAnswer(value, confidence, "text")
    if lines:
        value, problem = coerce(lines[-1], spec)
        if problem:
            return _unparsed(f"no ANSWER line, and the last line is not an answer: {problem}")
        return ParsedAnswer(value, confidence, "text")
    return _unparsed("the reply has no answer line")


def parse_reply(
    message: Mapping[str, Any], spec: Mapping[str, Any], tool: str = ANSWER_TOOL
) -> ParsedAnswer:
    """Read the answer from an assistant message: a call of the answer tool ``tool``, then a
    JSON answer object in the content, then the last line of free text (see the module
    docstring for what each must be). Never raises on a malformed reply: it returns
    ``answer=None`` with the problem."""
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        fn = call.get("function") if type(call) is dict or isinstance(call, Mapping) else None
        if (type(fn) is not dict and not isinstance(fn, Mapping)) or fn.get("name") != tool:
            continue
        return _tool_answer(fn.get("arguments"), spec, tool)
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    if not isinstance(content, str) or not content.strip():
        if calls:
            return _unparsed(f"the reply calls no {tool} and has no text")
        return _unparsed("the reply is empty")
    text = content.strip()
    match = _JSON_OBJECT.search(text)
    if match:
        try:
            obj = parse_json(match.group(0))
        except InputError:
            obj = None
        if type(obj) is dict:
            for key in ANSWER_FIELDS:  # the first one the object has
                if key in obj:
                    return _answer_object(obj, spec, "json", "content", key)
    return _text_answer(text, spec)
