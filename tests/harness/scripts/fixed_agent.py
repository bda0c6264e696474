"""A `command` agent for tests: answers every question by calling submit_answer with the value
in $FIXED_ANSWER (or fails when it is 'FAIL'), and logs each request to $AGENT_LOG."""

import json
import os
import sys

request = json.load(sys.stdin)
log = os.environ.get("AGENT_LOG")
if log:
    with open(log, "a") as f:
        f.write(json.dumps(request) + "\n")
answer = os.environ.get("FIXED_ANSWER", "15")
if answer == "FAIL":
    print("upstream exploded", file=sys.stderr)
    sys.exit(3)
value = int(answer) if answer.lstrip("-").isdigit() else answer
tool = request["tools"][0]["function"] if request.get("tools") else {"name": "submit_answer", "parameters": {"required": ["answer"]}}
args = json.dumps({tool["parameters"]["required"][0]: value, "confidence": 0.5})
print(json.dumps({"message": {"role": "assistant", "content": None, "tool_calls": [
    {"id": "1", "type": "function", "function": {"name": tool["name"], "arguments": args}}]},
    "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "model": "fixed"}))
