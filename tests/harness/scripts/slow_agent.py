"""A `command` agent for the resume test: sleeps, then answers 'yes'/first choice/lowest number
through submit_answer, so that a run takes long enough to be killed in the middle."""

import json
import sys
import time

request = json.load(sys.stdin)
time.sleep(0.15)
props = (
    request["tools"][0]["function"]["parameters"]["properties"]["answer"]
    if request.get("tools")
    else {}
)
if "enum" in props:
    value = props["enum"][0]
elif props.get("type") == "integer":
    value = props.get("minimum", 0)
else:
    value = "yes"
tool = request["tools"][0]["function"] if request.get("tools") else {"name": "submit_answer", "parameters": {"required": ["answer"]}}
args = json.dumps({tool["parameters"]["required"][0]: value, "confidence": 0.5})
print(
    json.dumps(
        {
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "1",
                        "type": "function",
                        "function": {"name": tool["name"], "arguments": args},
                    }
                ],
            }
        }
    )
)
