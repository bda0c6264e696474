"""``mindledger trials`` and ``mindledger runs``' failure shares, through the real command
line: a quick run of an ``openai`` agent against the fake OpenAI server over real sockets
(right answers with a chain of thought, wrong answers, replies with no answer, and HTTP 500s
that become API errors), stored in real SQLite, then listed, filtered and shown one trial at a
time — the messages compared with what the server logged as received — beside a held-out run
whose items no listing may show."""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import trials_cmd
from harness.cli.main import cli as mindledger
from harness.cli.trials_cmd import CSV_COLUMNS, STATUSES
from harness.run.suites import get_suite
from harness.testing import FakeOpenAI
from harness.testing.fake_openai import Faults, LoggedRequest
from ledger.db import open_engine
from ledger.store import RunAgent, Store, TrialRecord
from mindledger import family as registry
from mindledger.items import Item
from tests.cli import run_main

SEED = 11
KEYS = {"item_id", "status", "answer", "expected", "correct", "error", "transcript"}


def _truth(item: Item) -> Any:
    return registry.get(item.family).design(item).truth_answer


def _wrong(item: Item) -> Any:
    truth, spec = _truth(item), item.answer
    if spec["kind"] == "yesno":
        return "no" if truth == "yes" else "yes"
    if spec["kind"] == "integer":
        return truth + 1 if truth + 1 <= spec["max"] else truth - 1
    return next(c for c in spec["choices"] if c != truth)


def _agent(items: list[Item]) -> Any:
    """The fake server's answers: a third of the items right (a chain of thought, then the
    answer tool called with a confidence), a third wrong, a third with no answer at all."""

    def answer(body: dict[str, Any]) -> str | dict[str, Any]:
        asked = next(m["content"] for m in body["messages"] if m["role"] == "user")
        n = next(n for n, it in enumerate(items) if asked.startswith(it.prompt))
        if n % 3 == 1:
            return str(_wrong(items[n]))
        if n % 3 == 2:
            return "I would rather not say."
        args = json.dumps({"answer": _truth(items[n]), "confidence": 0.8})
        tool = body["tools"][0]["function"]["name"]  # submit_answer, or a game's submit_action
        return {"role": "assistant", "content": "Let me follow who saw what.",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": tool, "arguments": args}}]}  # fmt: skip

    return answer


@dataclass
class Runs:
    url: str
    run_id: str
    """The bot's run (``latest``)."""
    held_id: str
    """A held-out run of the oracle, made before it (``latest~1``)."""
    items: list[Item]
    log: list[LoggedRequest]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    home = tmp_path_factory.mktemp("trials")
    url = f"sqlite:///{home / 'mindledger.db'}"
    items = list(get_suite("quick").items(SEED))
    # every fifth or so request answered 500; no retries, so those trials end in an API error
    faults = Faults(kinds=("500",), rate=0.2, seed=5)
    with pytest.MonkeyPatch.context() as mp, FakeOpenAI(answer=_agent(items), faults=faults) as server:
        for key in list(os.environ):
            if key.startswith("MINDLEDGER_") and key != "MINDLEDGER_TEST_PG_URL":
                mp.delenv(key)
        mp.setenv("MINDLEDGER_HOME", str(home))
        mp.chdir(home)
        (home / "mindledger.toml").write_text(
            f'[agents.bot]\nadapter = "openai"\nendpoint = "{server.base_url}"\nmodel = "m"\n'
            'answer_mode = "tools"\n'
        )
        runner = CliRunner()
        held = runner.invoke(mindledger, ["run", "--suite", "quick", "--reference", "oracle",
                                          "--held-out"])  # fmt: skip
        assert held.exit_code == 0, held.output
        # the run may exit non-zero for its many failures: what it stored is what is tested
        runner.invoke(mindledger, ["-o", "max_retries=0", "run", "--suite", "quick", "--agent",
                                   "bot", "--no-control", "--seed", str(SEED)])  # fmt: skip
        log = list(server.log)
    store = Store(open_engine(url))
    run_id, held_id = (r.id for r in store.list_runs(2))
    assert store.get_run(held_id).held_out and len(store.trials(run_id)) == len(items)
    store.engine.dispose()
    yield Runs(url, run_id, held_id, items, log)


Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(
    runs: Runs,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Cli:
    """``mindledger --db RUNS ARGS`` at 80 columns: (exit code, stdout, stderr)."""
    monkeypatch.setenv("COLUMNS", "80")

    def run(*args: str) -> tuple[int, str, str]:
        return run_main(capsys, "--db", runs.url, *args)

    return run


def _json(cli: Cli, *args: str) -> Any:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_the_json_listing_holds_every_trial_of_the_agent_whole(runs: Runs, cli: Cli) -> None:
    trials = _json(cli, "trials", "latest", "--agent", "bot")
    assert len(trials) == len(runs.items) and {t["run_id"] for t in trials} == {runs.run_id}
    assert {t["item_id"] for t in trials} == {it.id for it in runs.items}
    assert all(set(t) >= KEYS for t in trials)
    by_id = {it.id: (n, it) for n, it in enumerate(runs.items)}
    statuses = Counter(t["status"] for t in trials)
    assert statuses["ok"] and statuses["wrong"] and statuses["unparsed"] and statuses["error"]
    bodies = [r.body["messages"] for r in runs.log if r.body]
    for t in trials:
        n, item = by_id[t["item_id"]]
        asked = next(m["content"] for m in t["transcript"] if m["role"] == "user")
        assert t["expected"] == _truth(item) and asked.startswith(item.prompt)
        if t["status"] == "error":  # the request the server failed is the whole transcript
            assert t["error"] == "server_error" and "500" in t["detail"]
            assert t["transcript"] in bodies and t["answer"] is None and t["correct"] is None
            continue
        # everything but the last reply went to the server exactly as stored
        assert t["transcript"][-1]["role"] == "assistant" and t["transcript"][:-1] in bodies
        kind = ("ok", "wrong", "unparsed")[n % 3]
        assert t["status"] == kind, (n, t["status"])
        if kind == "ok":
            assert t["answer"] == t["expected"] and t["correct"] is True and t["error"] is None
        elif kind == "wrong":
            assert t["answer"] == _wrong(item) and t["correct"] is False and t["error"] is None
        else:
            assert t["answer"] is None and t["error"] == "unparsed" and t["detail"]


def _sent(runs: Runs, transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of the trial's last request, as the server received them."""
    sent = [r.body["messages"] for r in runs.log
            if r.body and r.body["messages"] == transcript[: len(r.body["messages"])]]  # fmt: skip
    return max(sent, key=len)


def test_one_trial_shows_the_messages_exactly_as_sent(runs: Runs, cli: Cli) -> None:
    trials = _json(cli, "trials", "latest", "--agent", "bot", "--status", "ok")
    chosen = trials[0]
    short = chosen["item_id"].removeprefix("sha256:")[:10]
    whole = _json(cli, "trials", "latest", "--item", short, "--agent", "bot")
    assert whole == chosen
    sent = _sent(runs, whole["transcript"])
    assert whole["transcript"][: len(sent)] == sent and len(sent) >= 1

    code, text, err = cli("trials", "latest", "--item", short, "--agent", "bot")
    assert code == 0, err
    at = 0
    for message in sent:  # each message's content as sent, whole and in order
        at = text.index(message["content"], at) + len(message["content"])
    reply = whole["transcript"][-1]
    assert text.index(reply["content"], at) > at  # the chain of thought, then the call
    assert "→ calls submit_" in text and " (call_1) with" in text
    args = json.loads(reply["tool_calls"][0]["function"]["arguments"])
    assert json.dumps(args, indent=2) in "\n".join(ln[2:] for ln in text.splitlines())
    assert f"expected   {chosen['expected']}" in text and "correct    yes" in text
    assert "confidence 0.8" in text and " tokens in, " in text and "1 request sent" in text
    # the same trial by its position in the run
    position = [it.id for it in runs.items].index(chosen["item_id"]) + 1
    assert _json(cli, "trials", "latest", "--item", str(position), "--agent", "bot") == chosen
    # ITEM may come after RUN, as a newcomer types it; two different items are refused
    assert _json(cli, "trials", "latest", short, "--agent", "bot") == chosen
    assert _json(cli, "trials", "latest", short, "--item", short, "--agent", "bot") == chosen
    code, _, err = cli("trials", "latest", short, "--item", str(position + 1), "--agent", "bot")
    assert code == 2 and "two items given" in err


def test_an_api_error_and_an_unparsed_reply_show_their_cause(runs: Runs, cli: Cli) -> None:
    for status, cause in (("error", "server_error"), ("unparsed", "unparsed")):
        (first, *_) = _json(cli, "trials", "latest", "--status", status)
        code, text, err = cli("trials", "latest", "--item", first["item_id"], "--agent", "bot")
        assert code == 0, err
        line = next(ln for ln in text.splitlines() if ln.startswith("status "))
        assert line.startswith(f"status     {status}") and cause in line
        assert first["detail"].removeprefix(f"{cause}: ") in line  # the cause said once
        assert line.count(cause) == 1 or status == "unparsed", line
        code, table, _ = cli("trials", "latest", "--status", status)
        assert code == 0 and cause in table
        if status == "error":
            assert first["detail"].startswith("server_error: ") and "500" in first["detail"]


def test_filters_choose_trials(runs: Runs, cli: Cli) -> None:
    every = _json(cli, "trials", "latest")
    for status in ("ok", "wrong", "unparsed", "error"):
        chosen = _json(cli, "trials", "latest", "--status", status)
        assert chosen == [t for t in every if t["status"] == status] and chosen
    both = _json(cli, "trials", "latest", "--status", "error,unparsed", "--status", "wrong")
    assert both == [t for t in every if t["status"] in ("error", "unparsed", "wrong")]
    games = _json(cli, "trials", "latest", "--family", "games")
    assert games and games == [t for t in every if t["family"] == "games"]
    assert _json(cli, "trials", "latest", "--limit", "3") == every[:3]
    # nothing matches: said on stderr, not an error; JSON is an empty array
    code, out, err = cli("trials", "latest", "--status", "answered")
    assert code == 0 and out == "" and "no trials of run" in err and "status answered" in err
    assert _json(cli, "trials", "latest", "--status", "n/a") == []


def test_unknown_names_are_refused_with_the_known_ones(runs: Runs, cli: Cli) -> None:
    code, _, err = cli("trials", "latest", "--agent", "nobody")
    assert code == 2 and "no agent named 'nobody'" in err and "its agents: bot" in err
    code, _, err = cli("trials", "latest", "--status", "broken")
    assert code == 2 and "unknown trial status 'broken'" in err
    code, _, err = cli("trials", "latest~9")
    assert code == 2 and "only 2 runs are stored" in err
    code, _, err = cli("trials", "latest", "--item", "zzzz", "--agent", "bot")
    assert code == 2 and "has no item 'zzzz'" in err


def test_the_table_fits_80_columns_with_every_header_whole(runs: Runs, cli: Cli) -> None:
    code, table, err = cli("trials", "latest")
    assert code == 0, err
    lines = table.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    header = lines[0].split()
    assert {"item", "status", "answer", "expected"} <= set(header)
    every = _json(cli, "trials", "latest")
    for t in every:  # a row per trial, in order, with its item's start
        assert t["item_id"].removeprefix("sha256:")[:10] in table
    tally = Counter(t["status"] for t in every)
    said = ", ".join(f"{tally[s]} {s}" for s in STATUSES if tally[s])
    assert f"{len(every)} trials: {said}\n" in table and "shown: " not in table  # piped: all
    hint = next(ln for ln in err.splitlines() if ln.startswith("one whole: "))
    # the error column names a cause; under the table, each cause with its count and the first
    # one's whole reason, on a line of the table's width
    failed = [t for t in every if t["status"] in ("error", "unparsed")]
    assert failed
    why = err.split("why they failed:\n", 1)[1].split("\none whole: ")[0].splitlines()
    assert all(len(line) <= 80 for line in why)
    counts = Counter(line.split(" × ")[1].split(":")[0] for line in why)
    assert sum(int(line.split(" × ")[0]) for line in why) == len(failed)
    assert len(counts) == len(why)
    code, _, err = cli(*hint.removeprefix("one whole: mindledger ").split())
    assert code == 0, err


def test_a_terminal_shows_the_first_trials_and_counts_them_all(
    runs: Runs, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal, a run's thousands of trials would bury the tally: the table shows the
    first few, and the lines under it count every trial matched and say how to see the rest.
    --limit cuts a listing anywhere; JSON is never cut but by --limit."""
    every = _json(cli, "trials", "latest")
    wrong = [t for t in every if t["status"] == "wrong"]
    assert len(wrong) > 2
    monkeypatch.setattr(trials_cmd, "TERMINAL_ROWS", 2)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: stdout is a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, err = cli("trials", "latest", "--status", "wrong")
    assert code == 0, err
    rows = [t for t in wrong if t["item_id"].removeprefix("sha256:")[:10] in out]
    assert rows == wrong[:2]
    lines = out.splitlines()
    assert f"{len(wrong)} trials: {len(wrong)} wrong" in lines
    assert f"shown: the first 2 of {len(wrong)} (all: --limit {len(wrong)}, or pipe the output)" in lines
    assert len(_json(cli, "trials", "latest")) == len(every)  # JSON: whole on a terminal too
    code, out, err = cli("trials", "latest", "--limit", str(len(every)))
    assert code == 0 and "shown: " not in out and f"{len(every)} trials: " in out
    monkeypatch.delenv("TTY_COMPATIBLE")
    code, out, err = cli("trials", "latest", "--limit", "3")  # piped and cut: said so
    assert code == 0, err
    assert f"{len(every)} trials: " in out and f"shown: the first 3 of {len(every)} (--limit 3)" in out


def test_csv_has_a_row_per_trial(runs: Runs, cli: Cli) -> None:
    code, out, err = cli("trials", "latest", "--format", "csv")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    every = _json(cli, "trials", "latest")
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == len(every) + 1
    for row, t in zip(rows[1:], every, strict=True):
        record = dict(zip(CSV_COLUMNS, row, strict=True))
        assert record["item_id"] == t["item_id"] and record["status"] == t["status"]
        assert record["error"] == (t["error"] or "")


def test_a_held_out_run_lists_no_item_and_shows_no_trial(runs: Runs, cli: Cli) -> None:
    store = Store(open_engine(runs.url))
    items = list(store.run_items(runs.held_id))
    store.engine.dispose()
    for fmt in ("table", "json", "csv"):
        code, out, err = cli("trials", "latest~1", "--format", fmt)
        assert code == 0, err
        assert "held out" in err
        flat = out if fmt != "json" else json.dumps(json.loads(out), ensure_ascii=False)
        for item in items:
            assert item.id.removeprefix("sha256:")[:10] not in flat
            assert item.prompt.splitlines()[-1] not in flat
    listed = _json(cli, "trials", "latest~1")
    assert {t["run_id"] for t in listed} == {runs.held_id}
    assert listed and all(t["withheld"] and t["transcript"] == [] for t in listed)
    code, _, err = cli("trials", "latest~1", "--item", "1", "--agent", "ref:oracle")
    assert code == 2 and "is held out" in err
    # the operator sees them: the checks above can fail
    shown = _json(cli, "trials", "latest~1", "--reveal-held-out")
    assert {t["item_id"] for t in shown} == {it.id for it in items}
    code, out, _ = cli("trials", "latest~1", "--item", "1", "--reveal-held-out")
    assert code == 0 and items[0].prompt.splitlines()[-1] in out


def test_the_reports_a_run_writes_show_its_wrong_answers(runs: Runs, tmp_path: Path) -> None:
    """What quickstart writes: the HTML report ends with the agent's wrong and failed answers
    by cause."""
    from harness.cli.report_cmd import write_reports

    store = Store(open_engine(runs.url))
    try:
        written = write_reports(store, runs.run_id, tmp_path)
    finally:
        store.engine.dispose()
    html = next(p for p in written if p.suffix == ".html").read_text(encoding="utf-8")
    section = html[html.index("Examples of wrong and failed answers"):]
    assert "<summary><b>bot</b>" in section
    assert all(f"<h3>{cause} — " in section for cause in ("server_error", "unparsed"))


def test_statuses_offered_are_the_reports_outcomes() -> None:
    from reports.trials import OUTCOMES

    assert STATUSES == OUTCOMES


# -- runs: the failure share per agent -------------------------------------------------------


def test_runs_json_gives_each_agents_failures(runs: Runs, cli: Cli) -> None:
    listed = _json(cli, "runs")
    bot_run, held = listed
    trials = _json(cli, "trials", "latest")
    counts = Counter(t["status"] for t in trials)
    (bot,) = bot_run["agents"]
    assert bot["name"] == "bot" and bot["role"] == "agent" and bot["trials"] == len(trials)
    assert bot["errors"] == counts["error"] and bot["unparsed"] == counts["unparsed"]
    assert bot["failed"] == counts["error"] + counts["unparsed"]
    assert bot["failure_share"] == pytest.approx(bot["failed"] / len(trials))
    assert bot_run["trials"] == len(trials) and bot_run["scored"] == len(trials) - counts["error"]
    (oracle,) = held["agents"]
    assert oracle["failed"] == 0 and oracle["failure_share"] == 0.0


def test_runs_table_fits_80_columns_with_long_names(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    url = f"sqlite:///{isolated_home / 'runs.db'}"
    store = Store(open_engine(url))
    items = list(get_suite("quick").items(SEED))[:4]
    agent, control = "research-assistant-gpt-large-2026-11", "research-assistant-gpt-large-control"
    for n, run_id in enumerate(("20261203-043516-13e847", "20261203-051102-a0b1c2")):
        store.create_run(run_id, suite="[bold]base", seed=4242 + n, held_out=False, params={},
                         agents=[RunAgent(agent, "agent", {}), RunAgent(control, "control", {})],
                         items=items)  # fmt: skip
        for k, item in enumerate(items):  # the agent: 3, then 1 API error; the control: 1, 4
            error = k < 3 - 2 * n
            store.record_trial(TrialRecord(run_id, agent, item.id,
                                           "api_error" if error else "ok", [], answer="x",
                                           error="timeout: slow" if error else None))  # fmt: skip
            store.record_trial(TrialRecord(run_id, control, item.id, "ok", [],
                                           answer=None if k < 1 + 3 * n else "y"))  # fmt: skip
    store.engine.dispose()
    code, out, err = run_main(capsys, "--db", url, "runs")
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    assert {"run", "status", "trials", "failed"} <= set(lines[0].split())
    rows = [ln.split() for ln in lines if ln.startswith("20261203-")]
    # newest first, each with its worst agent's failures, its name cut, and that one more
    # agent failed (the cell may wrap, between words only)
    assert [r[0] for r in rows] == ["20261203-051102-a0b1c2", "20261203-043516-13e847"]
    assert [r[5:7] for r in rows] == [["4/4", "research-assist…"], ["3/4", "research-assist…"]]
    assert " ".join(out.split()).count("research-assist… +1") == 2
    monkeypatch.setenv("COLUMNS", "160")  # room for every column; names are text, not markup
    code, out, _ = run_main(capsys, "--db", url, "runs")
    assert out.count("[bold]base") == 2 and "research-assist…" in out
    code, out, _ = run_main(capsys, "--db", url, "runs", "--format", "json")
    newest = json.loads(out)[0]["agents"]
    assert [(a["name"], a["failed"], a["failure_share"]) for a in newest] == [
        (agent, 1, 0.25), (control, 4, 1.0)]  # fmt: skip


def test_why_they_failed_names_the_commonest_causes_on_lines_that_fit() -> None:
    from reports.trials import TrialView

    def view(outcome: str, cause: str | None, detail: str | None) -> TrialView:
        return TrialView("r", "bot", "sha256:00", "nesttom", "R1 false", outcome, None, "x",
                         None, cause, detail)  # fmt: skip

    views = (
        [view("error", "timeout", "timeout: no reply within 120 s\n(POST http://h/v1)")] * 3
        + [view("unparsed", "unparsed", "no answer: " + "y" * 200)] * 2
        + [view("error", kind, f"{kind}: it broke") for kind in ("connection", "malformed")]
        + [view("wrong", "reality_leak", None), view("ok", None, None)]
    )
    lines = trials_cmd.failure_lines(views, 60)
    assert lines[:2] == [
        "why they failed:",
        "      3 × timeout: no reply within 120 s (POST http://h/v1)",
    ]
    assert lines[2].startswith("      2 × unparsed: no answer: yyy") and len(lines[2]) == 60
    assert lines[2].endswith("…") and lines[3].startswith("      1 × ")
    assert lines[4:] == ["  … and 1 other cause"]
    assert trials_cmd.failure_lines([view("wrong", "reality_leak", None)], 60) == []
