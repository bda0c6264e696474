"""``--format json`` on the listing commands, through the real command line and a real SQLite
database: stdout holds one JSON document and nothing else, with the documented keys and the
stored values, and no secret (token values or hashes). Held-out seeds: see
``tests/reports/test_held_out_redaction.py``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from harness.config.settings import load_settings
from harness.daemon.tokens import hash_token
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from ledger.db import open_engine
from ledger.store import Store

RUN_KEYS = {"id", "suite", "status", "created_at", "finished_at", "held_out", "seed",
            "seed_withheld", "agents", "trials", "scored", "last_trial_at",
            "over_failure_limit"}  # fmt: skip
AGENT_KEYS = {"name", "role", "trials", "failed", "errors", "unparsed", "failure_share"}
TOKEN_KEYS = {"id", "scope", "agent", "label", "created_at", "expires_at", "revoked_at",
              "last_used_at", "max_queued_runs", "state"}  # fmt: skip
DIST = '{"7": 0.6, "3": 0.4}'


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``mindledger ARGS`` in this process, through the CLI's own error handling."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = cli(capsys, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)  # the whole of stdout is one document


@pytest.fixture
def url(isolated_home: Path) -> str:
    return f"sqlite:///{isolated_home / 'runs.db'}"


def test_runs_json_lists_every_run_with_its_stored_figures(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_json(capsys, "--db", url, "runs") == []
    settings = load_settings(None, env={}, flags={"db_url": url})
    store = Store(open_engine(url))
    planned = plan_agents(settings, agents=(), references=("oracle", "random"))
    first, _, n = create_run(store, settings, suite="quick", planned=planned, seed=4242,
                             run_id="first")  # fmt: skip
    asyncio.run(execute_stored_run(store, settings, first))
    create_run(store, settings, suite="quick", planned=planned[:1], seed=77, run_id="second")
    store.engine.dispose()

    listed = cli_json(capsys, "--db", url, "runs")
    assert [r["id"] for r in listed] == ["second", "first"]  # newest first
    assert all(set(r) == RUN_KEYS for r in listed)
    second, done = listed
    assert done["suite"] == "quick" and done["status"] == "complete" and done["finished_at"]
    assert done["seed"] == 4242 and done["seed_withheld"] is False and done["held_out"] is False
    assert [(a["name"], a["role"]) for a in done["agents"]] == [
        ("ref:oracle", "reference"), ("ref:random", "reference")]  # fmt: skip
    assert all(set(a) == AGENT_KEYS and a["trials"] == n for a in done["agents"])
    assert [a["failed"] for a in done["agents"]] == [0, 0]  # references never fail
    assert done["trials"] == 2 * n and 0 < done["scored"] <= 2 * n
    assert second["seed"] == 77 and second["trials"] == 0 and second["finished_at"] is None
    assert second["last_trial_at"] is None and done["last_trial_at"] > done["created_at"]
    assert [r["id"] for r in cli_json(capsys, "--db", url, "runs", "--limit", "1")] == ["second"]

    code, table, _ = cli(capsys, "--db", url, "runs")
    assert code == 0 and "first" in table and "4242" in table and not table.startswith("[")

    verified = cli_json(capsys, "--db", url, "runs", "--verify", "first")
    assert verified == {"run": "first", "items": n, "ok": True, "problems": []}


def _commit(capsys: pytest.CaptureFixture[str], target: str) -> dict[str, Any]:
    code, out, err = cli(capsys, "ledger", "commit", "--predictor", "piper", "--target", target,
                         "--query", "Pick a number from 1 to 10", "--distribution", DIST)  # fmt: skip
    assert code == 0, err
    return dict(json.loads(out))


def test_ledger_show_json_and_table(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scored = _commit(capsys, "dusk")
    assert cli(capsys, "ledger", "observe", scored["id"], "--answer", "7")[0] == 0
    code, _, err = cli(capsys, "ledger", "reveal", scored["id"], "--distribution", DIST,
                       "--salt", scored["salt"])  # fmt: skip
    assert code == 0, err
    open_one = _commit(capsys, "sol")

    shown = cli_json(capsys, "ledger", "show")
    assert set(shown) == {"predictions", "summary", "forecasts"}
    states = {p["id"]: p["state"] for p in shown["predictions"]}
    assert states == {scored["id"]: "scored", open_one["id"]: "committed"}
    assert shown["summary"]["n"] == 1 and shown["summary"]["states"] == {
        "scored": 1, "committed": 1}  # fmt: skip
    # the salt of the open prediction is the committer's alone
    assert open_one["salt"] not in json.dumps(shown)
    only = cli_json(capsys, "ledger", "show", "--target", "sol")
    assert [p["id"] for p in only["predictions"]] == [open_one["id"]]
    one = cli_json(capsys, "ledger", "show", "--id", scored["id"])
    assert one["id"] == scored["id"] and one["scores"]["top1_match"] == 1.0

    code, table, _ = cli(capsys, "ledger", "show")
    assert code == 0 and scored["id"] in table and "committed" in table
    assert "2 predictions: 1 committed, 1 scored" in table
    code, table, _ = cli(capsys, "ledger", "show", "--id", scored["id"])
    assert code == 0 and "top1_match 1.000" in table and open_one["salt"] not in table
    code, out, err = cli(capsys, "ledger", "show", "--target", "nobody")
    assert code == 0 and out == "" and "no predictions" in err


def test_token_list_json_names_no_secret(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "--db", url, "serve", "token", "piper", "--new")
    assert code == 0, err
    token = out.strip()
    listed = cli_json(capsys, "--db", url, "serve", "token", "--list")
    assert [set(t) for t in listed] == [TOKEN_KEYS] and listed[0]["agent"] == "piper"
    text = json.dumps(listed)
    digest = hash_token(token)
    assert token not in text and digest not in text and digest.removeprefix("sha256:") not in text


def test_games_list_and_doctor_json(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    games = cli_json(capsys, "games", "list")
    assert {g["name"] for g in games} == {"11-20", "all-pay", "nash-demand", "ring-11-20"}
    assert all(set(g) == {"name", "title", "players", "actions", "anchor", "kmax"} for g in games)
    assert cli(capsys, "games", "list", "--json")[1] == cli(capsys, "games", "list",
                                                            "--format", "json")[1]  # fmt: skip
    code, out, _ = cli(capsys, "doctor", "--format", "json")
    checks = json.loads(out)
    assert [c["name"] for c in checks][:3] == ["python", "settings", "database"]
    assert all(set(c) == {"name", "ok", "detail", "needed", "probes"} for c in checks)
    assert code == (1 if any(c["needed"] and not c["ok"] for c in checks) else 0)


@pytest.mark.parametrize(
    "args",
    [["runs"], ["ledger", "show"], ["games", "list"], ["doctor"], ["serve", "token", "--list"]],
)
def test_an_unknown_format_is_refused_naming_the_option(
    url: str, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = cli(capsys, "--db", url, *args, "--format", "xml")
    assert code == 2 and out == "" and "--format" in err and "Traceback" not in err


def test_ledger_show_table_prints_markup_in_a_query_as_text(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = "[/oops] Is [red]this[/red] markup?"
    code, out, err = cli(capsys, "ledger", "commit", "--predictor", "piper", "--target", "dusk",
                         "--query", query, "--distribution", DIST)  # fmt: skip
    assert code == 0, err
    pid = json.loads(out)["id"]
    code, table, err = cli(capsys, "ledger", "show")
    assert code == 0 and query in table and "Traceback" not in err
    code, table, err = cli(capsys, "ledger", "show", "--id", pid)
    assert code == 0 and query in table
