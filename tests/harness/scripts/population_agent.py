"""A `command` agent for the LLM-population tests: plays the lowest number the answer tool
allows and predicts that everyone else does too (all probability on the first choice)."""

import json
import sys

request = json.load(sys.stdin)
tool = request["tools"][0]["function"]
field = tool["parameters"]["required"][0]
schema = tool["parameters"]["properties"][field]
if schema["type"] == "integer":
    value = schema["minimum"]
else:
    choices = schema["required"]
    value = {c: (1.0 if i == 0 else 0.0) for i, c in enumerate(choices)}
args = json.dumps({field: value, "confidence": 0.5})
print(json.dumps({"message": {"role": "assistant", "content": None, "tool_calls": [
    {"id": "1", "type": "function", "function": {"name": tool["name"], "arguments": args}}]},
    "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "model": "low"}))
