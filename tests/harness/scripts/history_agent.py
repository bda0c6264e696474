"""A `command` agent for the history tests: answers every item it finds in the database at
$HISTORY_DB correctly, except that from run $HISTORY_DROP_AT on (its run number is the integer
in the file $HISTORY_RUN_FILE, written by the test) it answers the false-belief questions with
the object's real place (a reality leak). Its accuracy on everything else never changes."""

import json
import os
import sqlite3
import sys
from typing import Any

request = json.load(sys.stdin)
text = "\n".join(str(m.get("content") or "") for m in request.get("messages", []))
with open(os.environ["HISTORY_RUN_FILE"]) as f:
    run = int(f.read().strip())
drop_at = int(os.environ.get("HISTORY_DROP_AT", "8"))
db = sqlite3.connect(os.environ["HISTORY_DB"], timeout=60)
item: dict[str, Any] | None = None
latest = "SELECT id FROM runs ORDER BY created_at DESC LIMIT 1"  # the run being executed
rows = db.execute("SELECT i.body_json FROM items i JOIN run_items r ON r.item_id = i.id "
                  f"WHERE r.run_id = ({latest})")
for (body,) in rows:
    candidate = json.loads(body)
    prompt = candidate.get("prompt") or ""
    if prompt and prompt in text and (item is None or len(prompt) > len(item["prompt"])):
        item = candidate
db.close()
answer = 0
if item is not None:
    truth, meta = item["truth"], item.get("meta") or {}
    if item["family"] == "games":
        answer = truth.get("target_action", 0)
    else:
        answer = truth["answer"]
        false_belief = meta.get("belief") == "false" and meta.get("question") == "belief" \
            and float(meta.get("depth_n") or 0) >= 1
        if false_belief and run >= drop_at and truth.get("reality"):
            answer = truth["reality"]
tool: dict[str, Any] = request["tools"][0]["function"] if request.get("tools") else {
    "name": "submit_answer", "parameters": {"required": ["answer"]}}
args = json.dumps({tool["parameters"]["required"][0]: answer, "confidence": 0.9})
print(json.dumps({"message": {"role": "assistant", "content": None, "tool_calls": [
    {"id": "1", "type": "function", "function": {"name": tool["name"], "arguments": args}}]},
    "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "model": "history-agent"}))
