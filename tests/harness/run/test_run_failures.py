"""Failures are loud: a run whose agent mostly fails exits 3 and says why (each cause with its
count and an example, then the command that lists them), and `doctor` sends every agent real
items and marks one whose replies cannot be used. Real command agents, real SQLite."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path

import pytest

from harness.cli.run_cmd import tolerated_failures
from mindledger.errors import RunFailedError
from tests.cli import run_main

GARBAGE = "print('hello, not json')"
ZEROS = """
import json, sys
request = json.load(sys.stdin)
tools = request.get("tools") or []
if not tools:
    print(json.dumps({"content": "Noted."}))
    raise SystemExit
fn = tools[0]["function"]
key = [k for k in fn["parameters"]["required"] if k != "confidence"][0]
args = json.dumps({key: "0", "confidence": 0.5})
print(json.dumps({"message": {"tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": fn["name"], "arguments": args}}]}}))
"""


def declare(home: Path, **programs: str) -> None:
    text = ""
    for name, source in programs.items():
        text += (f"[agents.{name}]\nadapter = \"command\"\n"
                 f"command = [{json.dumps(sys.executable)}, \"-c\", {json.dumps(source)}]\n\n")
    (home.parent / "work" / "mindledger.toml").write_text(text)


def test_a_run_whose_agent_replies_garbage_exits_3_naming_the_cause(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    declare(isolated_home, brokenbot=GARBAGE)
    code, out, err = run_main(capsys, "run", "--agent", "brokenbot", "--no-control",
                              "--reference", "oracle", "--progress", "none")
    assert code == RunFailedError.exit_code == 3
    assert "brokenbot: 26 of its 26 trials failed (100%; a run may lose 20%" in err
    assert "   26 × malformed: " in err and "wrote no JSON reply" in err
    assert "'hello, not json'" in err
    run_id = out.split("run ", 1)[1].split()[0]
    assert f"mindledger trials {run_id} --agent brokenbot --status error,unparsed" in err
    assert err.rstrip().splitlines()[-1].startswith(f"error: run {run_id} is stored, but ")
    # the summary table says it too, its title as well as its row, and the run is stored whole
    assert "26 (100%)" in out
    assert "within the" not in out  # over the limit: the account on stderr says it all
    assert "complete · FAILED (1 agent over the failure limit)" in " ".join(out.split())
    code, out, _ = run_main(capsys, "trials", "latest", "--agent", "brokenbot", "--status",
                            "error", "--format", "json")
    assert code == 0 and len(json.loads(out)) == 26
    # the list of runs says it failed too (the status stored is "complete": every trial ran)
    code, out, _ = run_main(capsys, "runs")
    assert code == 0 and " FAILED " in out
    assert "26/26 brokenbot" in " ".join(out.split())
    code, out, _ = run_main(capsys, "runs", "--format", "json")
    (listed,) = json.loads(out)
    assert listed["status"] == "complete" and listed["over_failure_limit"] == ["brokenbot"]
    code, out, _ = run_main(capsys, "-o", "max_failure_share=1", "runs", "--format", "json")
    assert json.loads(out)[0]["over_failure_limit"] == []
    # its history says once that the run failed, not "not estimable" under every figure
    code, out, _ = run_main(capsys, "history", "brokenbot")
    assert code == 0
    text = " ".join(out.split())
    assert f"{run_id}: run failed: all 26 trials were API errors." in text
    assert "not estimable" not in text and "run failed" in text.split("History of", 1)[1]
    code, out, _ = run_main(capsys, "history", "brokenbot", "--format", "json")
    doc = json.loads(out)
    assert doc["runs"][0]["failed"] == "run failed: all 26 trials were API errors"
    # and its report's verdict says so first, with where to look, and nothing else about it
    code, out, _ = run_main(capsys, "report", run_id, "--format", "md")
    verdict = out.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert code == 0
    assert "brokenbot (agent under test) has no figures: its run failed, all 26 trials were " \
        "API errors (26 × malformed: " in verdict  # the commonest cause, with its count
    assert "wrote no JSON reply" in verdict.split("API errors (26 × malformed: ", 1)[1]
    assert f"). `mindledger trials {run_id} --agent brokenbot --status error`" in verdict
    assert "not estimable" not in verdict and "skill S is not measured" not in verdict
    assert "oracle: diagnosed as expected" in verdict  # the rest of the run still speaks
    points = [p for m in doc["metrics"].values() for p in m["points"]]
    assert {(p["text"], p["reason"]) for p in points} == {
        ("run failed", "not tested: the run failed")}


def test_the_summary_as_json_and_the_share_a_run_may_lose(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    declare(isolated_home, brokenbot=GARBAGE)
    code, out, err = run_main(capsys, "run", "--agent", "brokenbot", "--no-control",
                              "--reference", "oracle", "--format", "json")
    assert code == 3
    doc = json.loads(out)  # stdout holds the document alone
    bot = {a["name"]: a for a in doc["agents"]}["brokenbot"]
    assert (bot["trials"], bot["errors"], bot["failed"], bot["failure_share"]) == (26, 26, 26, 1.0)
    assert bot["causes"][0]["kind"] == "malformed" and bot["causes"][0]["count"] == 26
    assert doc["failed_agents"] == ["brokenbot"] and doc["exit_code"] == 3
    oracle = {a["name"]: a for a in doc["agents"]}["ref:oracle"]
    assert (oracle["correct"], oracle["failed"]) == (26, 0)
    # an operator who accepts any share of failures gets exit 0
    code, out, err = run_main(capsys, "-o", "max_failure_share=1", "run", "--agent",
                              "brokenbot", "--no-control", "--progress", "none")
    assert code == 0, err
    # and the summary still says what its failed trials were, and how to see them
    run_id = out.split("run ", 1)[1].split()[0]
    assert (
        "failed trials, within the 100% a run may lose (max_failure_share): brokenbot 26 "
        f"errors see them: mindledger trials {run_id} --agent brokenbot --status error,unparsed"
    ) in " ".join(out.split())


def test_failures_within_the_limit_are_named_once_under_the_table() -> None:
    """The table's "failed" column counts errors and unreadable answers alike; the line under
    it says which, for the agents within the limit (those over it have their own account)."""

    def agent(name: str, errors: int, unparsed: int) -> dict[str, object]:
        return {"name": name, "errors": errors, "unparsed": unparsed, "failed": errors + unparsed}

    record = {
        "run": {"id": "R"},
        "max_failure_share": 0.2,
        "failed_agents": ["over"],
        "agents": [agent("a", 0, 1), agent("b", 2, 1), agent("over", 9, 0), agent("ok", 0, 0)],
    }
    assert tolerated_failures(record) == (
        "failed trials, within the 20% a run may lose (max_failure_share): a 1 unparsed; "
        "b 2 errors and 1 unparsed (unparsed: no answer could be read from the reply)\n"
        "  see them: mindledger trials R --status error,unparsed"
    )
    record["agents"] = [agent("a", 1, 0), agent("ok", 0, 0)]
    assert tolerated_failures(record) == (
        "failed trials, within the 20% a run may lose (max_failure_share): a 1 error\n"
        "  see them: mindledger trials R --agent a --status error,unparsed"
    )
    record["agents"] = [agent("over", 9, 0), agent("ok", 0, 0)]
    assert tolerated_failures(record) is None


def test_unreadable_answers_count_as_failures_too(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    declare(isolated_home, zero=ZEROS)
    code, _out, err = run_main(capsys, "run", "--agent", "zero", "--no-control",
                              "--progress", "none")
    assert code == 3, err
    assert "× unparsed: submit_action.action: expected an integer" in err, err
    assert 'got the string "0"' in err
    # the profile counts them, and its verdict says so before any figure
    code, out, err = run_main(capsys, "report", "latest", "--format", "json")
    assert code == 0, err
    profile = json.loads(out)
    errors = profile["agents"]["zero"]["api_errors"]
    assert errors["unparsed"] == errors["trials"] - errors["count"] > 0
    assert errors["unparsed_example"]
    said = profile["verdict"]["paragraphs"][0]
    assert said.startswith(f"zero (agent under test): none of its {errors['unparsed']} answers "
                           f"could be read ({errors['unparsed_example']}), and each counts as "
                           "wrong"), said  # fmt: skip
    # on held-out seeds the reply it could not read (which quotes the item) is withheld
    code, _out, err = run_main(capsys, "run", "--agent", "zero", "--no-control", "--held-out",
                               "--progress", "none")  # fmt: skip
    assert code == 3, err
    code, out, err = run_main(capsys, "report", "latest", "--format", "json")
    assert code == 0, err
    held = json.loads(out)
    assert held["held_out"] and held["agents"]["zero"]["api_errors"]["unparsed"] > 0
    assert held["agents"]["zero"]["api_errors"]["unparsed_example"] is None
    assert held["verdict"]["paragraphs"][0].startswith(
        f"zero (agent under test): none of its {errors['unparsed']} answers could be read, and "
    )
    assert "expected an integer" not in out
    code, out, err = run_main(capsys, "report", "latest", "--format", "json", "--reveal-held-out")
    assert json.loads(out)["agents"]["zero"]["api_errors"]["unparsed_example"]


def test_doctor_sends_each_agent_real_items_and_marks_unusable_replies(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    declare(isolated_home, brokenbot=GARBAGE, zero=ZEROS,
            goodbot=f"exec(open({str(Path(__file__).parents[3] / 'examples' / 'command_agent.py')!r}).read())")
    code, out, _err = run_main(capsys, "doctor")
    assert code == 1
    assert "[ERR] agent brokenbot (command): " in out
    assert "belief question: no reply it could use" in out and "hello, not json" in out
    assert "[ERR] agent zero (command): " in out
    assert 'game: replied, but no answer could be read' in out
    assert "[ok ] agent goodbot (command)" in out
    assert "game: answered " in out
    code, out, _ = run_main(capsys, "doctor", "--format", "json")
    checks = {c["name"]: c for c in json.loads(out)}
    probes = checks["agent zero (command)"]["probes"]
    assert {p["item"] for p in probes} == {"belief question", "game"}
    assert {p["outcome"] for p in probes} == {"unparsed"}
    assert all(p["detail"] for p in probes)
    # without probes the program is only looked for
    code, out, _ = run_main(capsys, "doctor", "--no-probe")
    assert "[ok ] agent brokenbot (command): " in out and "belief question" not in out


class _NotAnAPI(http.server.BaseHTTPRequestHandler):
    """A web server that is not an OpenAI-compatible API: 404 for any page, 501 for a POST
    (an HTML error page, as ``python -m http.server`` answers)."""

    def do_GET(self) -> None:
        self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


def test_an_endpoint_that_is_not_an_api_is_said_so_by_doctor_and_run(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotAnAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        (isolated_home.parent / "work" / "mindledger.toml").write_text(
            f'[agents.webpage]\nadapter = "openai"\nendpoint = "http://127.0.0.1:{port}"\n'
            'model = "m"\n'
        )
        code, out, _ = run_main(capsys, "doctor")
        assert code == 1
        # it answers, without /models: the probe asks its chat, at the root the run posts to
        assert f"[ERR] agent webpage (openai): http://127.0.0.1:{port} answers (its /models: " \
            "HTTP 404), but its replies could not be used" in out  # fmt: skip
        probe = next(line for line in out.splitlines() if "belief question:" in line)
        assert "server_error: HTTP 501 Unsupported method ('POST'): an HTML page: " in probe
        assert "is the agent's endpoint the base URL of an OpenAI-compatible API" in probe
        assert f"POST http://127.0.0.1:{port}/v1/chat/completions, failed after 1 attempt" \
            in probe  # fmt: skip
        code, _out, err = run_main(capsys, "run", "--agent", "webpage", "--no-control",
                                   "--progress", "lines")
        assert code == 3
        progress = [line for line in err.splitlines() if line.startswith("progress ")]
        assert progress and "(last: webpage: server_error: HTTP 501" in progress[-1]
        assert "  26 × server_error: HTTP 501 Unsupported method ('POST'): an HTML page: " in err
        assert "<html" not in err and "retries" not in progress[-1]  # one line, never retried
    finally:
        server.shutdown()
        server.server_close()
