"""A `command` agent for repeated-game tests: plays the policy named by its first argument
(tit-for-tat, always-cooperate, always-defect; fail: exits with an error) from what the round prompt shows, answering with
the submit_answer tool; 10 prompt + 2 completion tokens per turn.

"Cooperate" is the first action the prompt lists, "defect" the second, so the policy is the same
whatever the labels (cooperation/defection, stag/hare)."""

import json
import re
import sys

policy = sys.argv[1]
request = json.load(sys.stdin)
prompt = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
labels = [x.strip() for x in re.search(r"one of ([^.\n]+)\.", prompt).group(1).split(",")]
played = re.findall(r"^Round \d+: (.+?) / (.+?): -?\d+ / -?\d+$", prompt, re.MULTILINE)
if policy == "always-cooperate":
    move = labels[0]
elif policy == "always-defect":
    move = labels[1]
elif policy == "fail":
    print("upstream exploded", file=sys.stderr)
    sys.exit(3)
elif policy == "tit-for-tat":
    move = played[-1][1] if played and played[-1][1] in labels else labels[0]
else:
    sys.exit(f"unknown policy {policy}")
tool = request["tools"][0]["function"]
args = json.dumps({tool["parameters"]["required"][0]: move, "confidence": 0.5})
print(json.dumps({"message": {"role": "assistant", "content": None, "tool_calls": [
    {"id": "1", "type": "function", "function": {"name": tool["name"], "arguments": args}}]},
    "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "model": "pd"}))
