"""The ``command`` adapter's protocol: what a program gets on stdin and may write on stdout.

Each turn of a trial runs the program once. It reads one JSON object, the *request*
(:data:`REQUEST_SCHEMA`: the chat so far, the tools, the ``response_format``, the sampling
fields), and writes one JSON object, the *reply* (:data:`REPLY_SCHEMA`): ``{"message": {...}}``,
an OpenAI chat completion, or ``{"content": "..."}``. ``docs/command-agent.md`` is the
protocol for a person, with real examples; ``docs/command-agent.request.schema.json`` and
``docs/command-agent.reply.schema.json`` are these two schemas, written out (a test keeps them
equal).

:func:`read_reply` checks a reply against :data:`REPLY_SCHEMA` (the validator is built once)
and says, when it does not fit, which field and what was expected; the caller records that as
a ``malformed`` error on the trial. What the *answer* inside a valid reply must be is the
answer protocol's business (:mod:`harness.agent.answers`): a wrong answer type is not a malformed
reply but an unparsed answer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.agent.answers import ANSWER_KINDS, describe_value
from mindledger.errors import AgentError, InputError
from mindledger.jsonin import parse_json

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["DOC", "REPLY_SCHEMA", "REQUEST_SCHEMA", "Reply", "read_reply", "reply_problem"]

DOC = "docs/command-agent.md"
"""Where the protocol is written down for a person (named in error messages)."""

_DRAFT = "https://json-schema.org/draft/2020-12/schema"

_CONTENT: dict[str, Any] = {
    "description": "Text, null, or OpenAI content parts (their texts are joined).",
    "type": ["string", "null", "array"],
    "items": {
        "type": "object",
        "required": ["type", "text"],
        "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
    },
}

_TOOL_CALL: dict[str, Any] = {
    "description": "A call of one of the request's tools, as OpenAI writes it.",
    "type": "object",
    "required": ["function"],
    "properties": {
        "id": {
            "description": "Echoed as the tool_call_id of the tool message that answers it.",
            "type": "string",
        },
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "properties": {
                "name": {"description": "The name of a tool in the request.", "type": "string"},
                "arguments": {
                    "description": (
                        'The arguments as JSON text (a string), e.g. "{\\"answer\\": \\"box\\", '
                        '\\"confidence\\": 0.9}".'
                    ),
                    "type": "string",
                },
            },
        },
    },
}

_ASSISTANT: dict[str, Any] = {
    "description": (
        "One assistant turn: text in content, or tool calls (or both). Keys other than these "
        "are kept and sent back in later requests of the trial."
    ),
    "type": "object",
    "properties": {
        "role": {"const": "assistant"},
        "content": {"$ref": "#/$defs/content"},
        "tool_calls": {
            "type": ["array", "null"],
            "items": {"$ref": "#/$defs/tool_call"},
        },
    },
}

REPLY_SCHEMA: dict[str, Any] = {
    "$schema": _DRAFT,
    "title": "mindledger command agent: the reply (one JSON object on stdout)",
    "description": (
        f"What a command agent writes on stdout for one turn; see {DOC}. One of message, "
        "choices or content is required; when several are present, message is read first, "
        "then choices, then content. Other keys are ignored."
    ),
    "type": "object",
    "anyOf": [{"required": ["message"]}, {"required": ["choices"]}, {"required": ["content"]}],
    "properties": {
        "message": {"$ref": "#/$defs/assistant_message"},
        "choices": {
            "description": "An OpenAI chat completion's choices: the first one is read.",
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["message"],
                "properties": {
                    "message": {"$ref": "#/$defs/assistant_message"},
                    "finish_reason": {"type": ["string", "null"]},
                },
            },
        },
        "content": {
            "description": 'Plain text: the same as {"message": {"content": ...}}.',
            "type": "string",
        },
        "model": {"description": "Recorded with the trial.", "type": ["string", "null"]},
        "usage": {
            "description": "Tokens of this turn, summed over the trial (0 when left out).",
            "type": ["object", "null"],
            "properties": {
                "prompt_tokens": {"type": "integer", "minimum": 0},
                "completion_tokens": {"type": "integer", "minimum": 0},
            },
        },
    },
    "$defs": {
        "assistant_message": _ASSISTANT,
        "tool_call": _TOOL_CALL,
        "content": _CONTENT,
    },
}
"""The reply's JSON Schema (draft 2020-12)."""


def _closed(
    properties: dict[str, Any], *, required: Sequence[str] | None = None, **more: Any
) -> dict[str, Any]:
    """An object schema with these ``properties`` and no others, all of them required unless
    ``required`` names which; ``more`` adds keywords (a description …)."""
    return {
        **more,
        "type": "object",
        "required": list(properties) if required is None else list(required),
        "properties": properties,
        "additionalProperties": False,
    }


_PROBABILITY = {"type": "number", "minimum": 0, "maximum": 1}


def _value_schemas() -> list[dict[str, Any]]:
    """The shapes an answer's value schema takes, one per answer kind (see
    :func:`harness.agent.answers.answer_json_schema`)."""
    shapes: dict[str, dict[str, Any]] = {
        "choice": _closed(
            {
                "type": {"const": "string"},
                "enum": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            },
            description="choice: one of the strings listed.",
        ),
        "yesno": {
            "description": "yesno: the string yes or no.",
            "const": {"type": "string", "enum": ["yes", "no"]},
        },
        "integer": _closed(
            {
                "type": {"const": "integer"},
                "minimum": {"type": "integer"},
                "maximum": {"type": "integer"},
            },
            required=["type"],
            description="integer: a whole number, usually with bounds.",
        ),
        "open": _closed(
            {
                "type": {"const": "string"},
                "minLength": {"const": 1},
                "maxLength": {"type": "integer"},
            },
            description="open: a short free-text answer.",
        ),
        "distribution": _closed(
            {
                "type": {"const": "object"},
                "properties": {"type": "object", "additionalProperties": {"const": _PROBABILITY}},
                "required": {"type": "array", "items": {"type": "string"}},
                "additionalProperties": {"const": False},
            },
            description="distribution: a probability (0 to 1) for every choice.",
        ),
    }
    assert tuple(shapes) == ANSWER_KINDS
    return list(shapes.values())


def _answer_parameters(keys: Sequence[str]) -> dict[str, Any]:
    """The schema of an answer object's schema: its answer under one of ``keys``."""
    return _closed(
        {
            "type": {"const": "object"},
            "properties": {
                "type": "object",
                "required": ["confidence"],
                "minProperties": 2,
                "maxProperties": 2,
                "properties": {"confidence": {"const": _PROBABILITY}},
                "propertyNames": {"enum": [*keys, "confidence"]},
                "additionalProperties": {"$ref": "#/$defs/answer_value"},
            },
            "required": {
                "type": "array",
                "prefixItems": [{"enum": list(keys)}, {"const": "confidence"}],
                "minItems": 2,
                "maxItems": 2,
            },
            "additionalProperties": {"const": False},
        },
        description=(
            "The answer object: the answer under its key (answer, or action for submit_action) "
            "and confidence, both required; nothing else."
        ),
    )


def _message(role: str, description: str, **more: Any) -> dict[str, Any]:
    return _closed(
        {"role": {"const": role}, "content": {"type": "string"}, **more}, description=description
    )


REQUEST_SCHEMA: dict[str, Any] = {
    "$schema": _DRAFT,
    "title": "mindledger command agent: the request (one JSON object on stdin)",
    "description": (
        f"What a command agent reads on stdin for one turn; see {DOC}. The same fields as an "
        "OpenAI chat completions request, every key always present, written as canonical JSON "
        "(UTF-8, sorted keys, no spaces)."
    ),
    "type": "object",
    "required": ["messages", "tools", "response_format", "temperature", "max_tokens"],
    "additionalProperties": False,
    "properties": {
        "messages": {
            "description": "The chat so far, oldest first; the last one is what to answer.",
            "type": "array",
            "minItems": 1,
            "items": {
                "oneOf": [
                    {"$ref": "#/$defs/system_message"},
                    {"$ref": "#/$defs/user_message"},
                    {"$ref": "#/$defs/assistant_message"},
                    {"$ref": "#/$defs/tool_message"},
                ]
            },
        },
        "tools": {
            "description": (
                "null on a turn without tools (a scaffold step, the json and text answer "
                "modes). Otherwise the answer tool first, then the item's own tools."
            ),
            "type": ["array", "null"],
            "minItems": 1,
            "prefixItems": [{"$ref": "#/$defs/answer_tool"}],
            "items": {"$ref": "#/$defs/tool"},
        },
        "response_format": {
            "description": "null, or (answer_mode json, on the answer turn) the answer object's schema.",
            "anyOf": [{"type": "null"}, {"$ref": "#/$defs/response_format"}],
        },
        "temperature": {
            "description": "The agent's temperature setting.",
            "type": "number",
            "minimum": 0,
        },
        "max_tokens": {
            "description": "The agent's max_tokens (256 on a scaffold step).",
            "type": "integer",
            "minimum": 1,
        },
    },
    "$defs": {
        "system_message": _message(
            "system", "The agent's system prompt and the task's own, joined."
        ),
        "user_message": _message("user", "A prompt: the item, a scaffold step, or the nudge."),
        "assistant_message": {
            **_ASSISTANT,
            "description": "A reply the agent gave earlier in this trial, as it gave it (keys with null values left out).",
            "required": ["role"],
        },
        "tool_message": _message(
            "tool",
            "The answer to one tool call: the item's tool result, or why an answer was not accepted.",
            tool_call_id={
                "description": 'The id of the call it answers ("" if it had none).',
                "type": "string",
            },
        ),
        "tool_call": _TOOL_CALL,
        "content": _CONTENT,
        "tool": {
            "description": "A function the agent may call (an item's own tool, e.g. query_opponent_history).",
            "type": "object",
            "required": ["type", "function"],
            "properties": {
                "type": {"const": "function"},
                "function": {
                    "type": "object",
                    "required": ["name", "parameters"],
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "parameters": {"type": "object"},
                    },
                },
            },
        },
        "answer_tool": _closed(
            {
                "type": {"const": "function"},
                "function": _closed(
                    {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "parameters": _answer_parameters(["answer", "action"]),
                    }
                ),
            },
            description="The tool to answer with: submit_answer, or submit_action for the games.",
        ),
        "response_format": _closed(
            {
                "type": {"const": "json_schema"},
                "json_schema": _closed(
                    {
                        "name": {"const": "answer"},
                        "strict": {"const": True},
                        "schema": _answer_parameters(["answer"]),
                    }
                ),
            }
        ),
        "answer_value": {
            "description": "The schema of the answer's value, by the item's answer kind.",
            "anyOf": _value_schemas(),
        },
    },
}
"""The request's JSON Schema (draft 2020-12)."""


@dataclass(frozen=True)
class Reply:
    """A reply that follows the protocol: the assistant message and what the turn cost."""

    message: dict[str, Any]
    model: str | None = None
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0


@functools.cache
def _reply_validator() -> Validator:
    """The reply schema's validator, built on first use (importing jsonschema costs time that
    a command that never runs a command agent should not pay)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(REPLY_SCHEMA)


_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "an array",
    "null": "null",
    "boolean": "true or false",
}


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _expected(schema: Mapping[str, Any]) -> str:
    """What a (sub)schema asks for, in a few words."""
    if "const" in schema:
        return json.dumps(schema["const"])
    kinds = schema.get("type")
    if isinstance(kinds, str):
        return _TYPES.get(kinds, kinds)
    if isinstance(kinds, list):
        return " or ".join(_TYPES.get(str(k), str(k)) for k in kinds)
    return "a value as the schema describes"


def reply_problem(data: Any) -> str | None:
    """Why ``data`` (a parsed stdout) is not a reply of the protocol, naming the field, what
    was expected and what came; None when it is one."""
    validator = _reply_validator()
    if validator.is_valid(data):
        return None
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(data))
    return _describe(error)


def _describe(error: ValidationError) -> str:
    where = _path(error.absolute_path)
    at = where or "the reply"
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "anyOf" and not where:
        return 'the reply has none of the keys "message", "choices" and "content"'
    if error.validator == "required":
        present = error.instance if isinstance(error.instance, Mapping) else {}
        missing = next((k for k in error.validator_value if k not in present), "?")
        sub = (schema.get("properties") or {}).get(missing, {})
        field = f"{where}.{missing}" if where else str(missing)
        return f"{field} is missing: expected {_expected(sub)}"
    got = describe_value(error.instance)
    if error.validator in ("type", "const"):
        expected = _expected(schema)
        if where.endswith("function.arguments"):
            expected += " (the arguments as JSON text)"
        return f"{at}: expected {expected}, got {got}"
    if error.validator == "minItems":
        return f"{at}: expected at least {error.validator_value} item, got an empty array"
    if error.validator == "minimum":
        return f"{at}: expected a number ≥ {error.validator_value}, got {got}"
    return f"{at}: {error.message}"


def read_reply(stdout: bytes, program: str) -> Reply:
    """The reply ``program`` wrote on stdout; AgentError (kind ``malformed``) with a sentence
    saying what is wrong when it wrote none that follows the protocol."""
    if not stdout.strip():
        raise AgentError(
            f"{program} wrote nothing on stdout; expected one JSON object (see {DOC})",
            kind="malformed",
        )
    try:
        data = parse_json(stdout)
    except InputError as exc:
        start = stdout[:60].decode("utf-8", errors="replace").strip()
        hint = (
            "; write only the reply on stdout, anything else on stderr"
            if "Extra data" in str(exc)
            else ""
        )
        raise AgentError(
            f"{program} wrote no JSON reply ({exc}); its stdout began {start!r}{hint}",
            kind="malformed",
        ) from None
    problem = reply_problem(data)
    if problem is not None:
        raise AgentError(
            f"the reply of {program} does not follow the protocol: {problem} (see {DOC})",
            kind="malformed",
        )
    finish = None
    if isinstance(data.get("message"), dict):
        message = data["message"]
    elif "choices" in data:
        first = data["choices"][0]
        message, finish = first["message"], first.get("finish_reason")
    else:
        message = {"role": "assistant", "content": data["content"]}
    usage = data.get("usage") or {}
    return Reply(
        message=message,
        model=data.get("model"),
        finish_reason=finish,
        tokens_in=usage.get("prompt_tokens", 0),
        tokens_out=usage.get("completion_tokens", 0),
    )
