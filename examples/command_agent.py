#!/usr/bin/env python3
"""A mindledger ``command`` agent that follows the protocol on every kind of turn.

It is not clever: it answers the first choice, "yes", the smallest number allowed, an even
distribution or "I do not know", always with confidence 0.5. What it shows is the protocol
(docs/command-agent.md): mindledger runs the program once per turn, writes the request, one
JSON object, on its stdin, and reads the reply, one JSON object, from its stdout. Declare it in
``mindledger.toml``:

    [agents.example]
    adapter = "command"
    command = ["python3", "examples/command_agent.py"]
    modules = ["perspective", "opponent_sim"]   # optional: the scaffold's tool-less steps

and run ``mindledger run --suite quick --agent example``. On each turn it does this:

- **tools offered** (``answer_mode = "tools"``, the command adapter's default): when the item
  brings tools of its own (``query_opponent_history`` in the games' inductive condition) and
  none has been answered yet, it calls each of them once and gets their results in the next
  request as ``tool`` messages; then it calls the answer tool (the first tool: ``submit_answer``,
  or ``submit_action`` for the games) with the answer under the key that tool's schema
  requires (``answer`` or ``action``), typed as its schema says, and a ``confidence``;
- **a response_format** (``answer_mode = "json"``): the same answer object as JSON content;
- **neither** (a scaffold step such as ``perspective`` or ``opponent_sim``, which asks for notes
  before the answer): a short note as plain content.

It uses only Python's standard library. Set ``EXAMPLE_AGENT_LOG`` to a file's path to append
every request it gets to that file, one JSON object per line: the quickest way to see what
mindledger sends.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def first_value(schema: dict[str, Any]) -> Any:
    """The simplest value the answer's JSON schema allows."""
    if "enum" in schema:
        return schema["enum"][0]  # a choice, or "yes"
    kind = schema.get("type")
    if kind == "integer":
        return schema.get("minimum", 0)
    if kind == "object":  # a distribution: an even probability for every choice
        choices = list(schema.get("properties", {}))
        return {c: 1 / len(choices) for c in choices}
    return "I do not know"  # an open answer


def answer_object(parameters: dict[str, Any]) -> dict[str, Any]:
    """An answer object for an answer tool's parameters (or a response_format's schema):
    the required answer key with the first value it allows, and a confidence."""
    key = next(k for k in parameters["required"] if k != "confidence")
    return {key: first_value(parameters["properties"][key]), "confidence": 0.5}


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    # OpenAI's form: the arguments are a JSON *string*, not an object
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def reply_to(request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for one request."""
    messages = request["messages"]
    tools = request["tools"]
    if tools:
        answer_tool, *item_tools = (t["function"] for t in tools)
        answered = any(m["role"] == "tool" for m in messages)
        if item_tools and not answered:
            calls = [
                tool_call(f"call_{len(messages)}_{i}", t["name"], {})
                for i, t in enumerate(item_tools)
            ]
            return {"role": "assistant", "content": None, "tool_calls": calls}
        args = answer_object(answer_tool["parameters"])
        call = tool_call(f"call_{len(messages)}", answer_tool["name"], args)
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if request["response_format"]:
        schema = request["response_format"]["json_schema"]["schema"]
        return {"role": "assistant", "content": json.dumps(answer_object(schema))}
    return {
        "role": "assistant",
        "content": "Notes: I keep track of who saw what, and answer in the next turn.",
    }


def main() -> None:
    request = json.load(sys.stdin)
    log = os.environ.get("EXAMPLE_AGENT_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(request) + "\n")
    message = reply_to(request)
    words = sum(len(str(m.get("content") or "").split()) for m in request["messages"])
    json.dump(
        {
            "message": message,
            "model": "example-agent",
            "usage": {"prompt_tokens": words, "completion_tokens": 10},
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
