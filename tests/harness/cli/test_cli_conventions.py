"""One convention for every command (issue 23, item 6), through the real command line over a
real SQLite database with stored suite runs, a matrix run and its ledger:

- a run is named by its id, the id's start, ``latest`` or ``latest~N`` wherever a run is
  taken, and an unknown one exits 2 naming the newest runs;
- an unknown agent is refused alike everywhere: exit 2, one line listing the known names;
- ``--format table|json`` (``csv`` where the data are rows) with ``--json`` a hidden alias;
- every table fits 80 columns with each header whole (the rest of ``harness.cli.tables`` is
  in ``tests/harness/cli/test_cli_tables.py``).
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli import run_main

MATRIX = ("matrix", "--reference", "random", "--reference", "habit", "--reference",
          "projection", "--items", "4", "--samples", "3", "--no-pilot", "--seed", "11")
SUITE_RUNS = ("r1-alpha", "r2-beta", "r3-gamma")


@dataclass(frozen=True)
class Home:
    path: Path
    matrix_run: str
    prediction: str


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """A home whose settings declare ``bot`` (a scripted agent), with three finished quick
    runs of it (oldest first), then a matrix run of three reference agents (the newest run,
    with its predictions in the ledger) and two API tokens."""
    from harness.config.settings import load_settings
    from harness.config.workspace import Workspace
    from harness.daemon.tokens import create_token
    from harness.run.build import plan_agents
    from harness.run.runs import create_run, execute_stored_run

    home = tmp_path_factory.mktemp("conventions")
    (home / "mindledger.toml").write_text(
        '[agents.bot]\nadapter = "reference"\npolicy = "depth-capped:2"\n', encoding="utf-8")
    settings = load_settings(home / "mindledger.toml", env={}, flags={"home": str(home)})
    with Workspace.open(settings) as ws:
        for seed, run_id in zip((2, 3, 4), SUITE_RUNS, strict=True):
            planned = plan_agents(settings, agents=("bot",))
            create_run(ws.store, settings, suite="quick", planned=planned, seed=seed,
                       run_id=run_id)
            asyncio.run(execute_stored_run(ws.store, settings, run_id))
        create_token(ws.engine, "bot", label="alice's laptop", max_queued_runs=2)
        create_token(ws.engine, None, scope="operator", label="ops")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    made = subprocess.run([sys.executable, "-m", "harness.cli.main", *MATRIX, "--format", "json"],
                          cwd=home, env={**env, "MINDLEDGER_HOME": str(home)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert made.returncode == 0, made.stderr
    matrix_run = json.loads(made.stdout)["run"]
    with Workspace.open(settings) as ws:
        prediction = ws.new_ledger().predictions(None, None)[0].id
    return Home(home, matrix_run, prediction)


@pytest.fixture
def home(stored: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    for key in list(os.environ):
        if key.startswith("MINDLEDGER_") and key != "MINDLEDGER_TEST_PG_URL":
            monkeypatch.delenv(key)
    monkeypatch.setenv("MINDLEDGER_HOME", str(stored.path))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(stored.path)
    yield stored


def ok(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run_main(capsys, *args)
    assert code == 0, err
    return out


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one line a refused command prints (exit 2, nothing on stdout)."""
    code, out, err = run_main(capsys, *args)
    assert (code, out) == (2, ""), (code, out, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


# -- runs by name ------------------------------------------------------------------------------


def test_a_run_is_named_by_its_id_its_start_latest_or_latest_n(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    boot = ("--format", "json", "--bootstrap", "100")
    for ref in ("latest~1", "r3-gamma", "r3", "latest~1 "):
        assert json.loads(ok(capsys, "report", ref, *boot))["run"]["id"] == "r3-gamma", ref
    assert json.loads(ok(capsys, "report", "latest", *boot))["run"] == home.matrix_run
    compared = json.loads(ok(capsys, "report", "--compare", "latest~3", "r3", *boot))
    assert "r1-alpha" in json.dumps(compared) and "r3-gamma" in json.dumps(compared)


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{ref}"],
        ["report", "--compare", "r1-alpha", "{ref}"],
        ["judge", "{ref}"],
        ["matrix", "--resume", "{ref}"],
    ],
)
def test_an_unknown_run_exits_2_naming_the_newest_runs(
    home: Home, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    err = refused(capsys, *(a.format(ref="cmdbto") for a in args))
    assert f"no run with id 'cmdbto' (newest: {home.matrix_run}, r3-gamma, r2-beta" in err
    assert "latest" in err
    err = refused(capsys, *(a.format(ref="r") for a in args))  # r1-…, r2-…, r3-…
    assert "'r' matches several runs" in err
    err = refused(capsys, *(a.format(ref="latest~9") for a in args))
    assert "only 4 runs are stored (latest~3 is the oldest)" in err


def test_matrix_resume_takes_latest_and_refuses_a_suite_run(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    resumed = json.loads(ok(capsys, "matrix", "--resume", "latest", "--format", "json"))
    assert resumed["run"] == home.matrix_run and resumed["ledger_problems"] == []
    assert "is a 'quick' run, not a matrix run" in refused(capsys, "matrix", "--resume", "r2")


# -- agents by name ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["history", "cmdbto"], ""),
        (["matrix", "--agent", "cmdbto", "--no-pilot"], "--agent: "),
        (["judge", "latest", "--judge", "cmdbto"], "--judge: "),
        (["serve", "token", "cmdbto"], ""),
    ],
)
def test_an_unknown_agent_exits_2_listing_the_known_ones(
    home: Home, capsys: pytest.CaptureFixture[str], args: list[str], where: str
) -> None:
    err = refused(capsys, *args)
    assert err.startswith(f"error: {where}no agent named 'cmdbto' ")
    known = err.split("(known: ", 1)[1]
    assert "bot" in known and "local" in known


def test_agents_known_from_stored_runs_and_tokens_are_accepted(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    # a reference agent of the matrix run: known, though it is no agent under test
    code, out, err = run_main(capsys, "history", "ref:random", "--format", "json")
    assert code == 0 and json.loads(out)["runs"] == [] and "no finished run" in err
    assert "no agent named" in refused(capsys, "serve", "token", "piper")
    assert ok(capsys, "serve", "token", "piper", "--new").startswith("mlt_")
    assert ok(capsys, "serve", "token", "piper").startswith("mlt_")  # it has a token now


# -- formats ------------------------------------------------------------------------------------


DATA_COMMANDS = [  # (the command, its arguments)
    (["ledger", "verify"], []),
    (["ledger", "show"], []),
    (["config", "show"], []),
    (["db", "status"], []),
    (["history"], ["bot", "--bootstrap", "100"]),
    (["matrix"], ["--resume", "latest"]),
    (["serve", "token"], ["--list"]),
]


@pytest.mark.parametrize(("command", "rest"), DATA_COMMANDS)
def test_format_json_is_one_document_and_json_its_hidden_alias(
    home: Home, capsys: pytest.CaptureFixture[str], command: list[str], rest: list[str]
) -> None:
    args = [*command, *rest]
    table = ok(capsys, *args)
    doc = ok(capsys, *args, "--format", "json")
    assert not table.lstrip().startswith(("{", "[")) and json.loads(doc) is not None
    assert ok(capsys, *args, "--json") == doc
    assert ok(capsys, *args, "--json", "--format", "table") == table  # the last one wins
    helped = ok(capsys, *command, "--help")
    assert "--format" in helped and "--json" not in helped


@pytest.mark.parametrize(
    ("args", "header"),
    [
        (["history", "bot", "--bootstrap", "100"], ["metric", "run_id", "created_at"]),
        (["ledger", "show"], ["id", "state", "predictor", "target", "query"]),
        (["config", "show"], ["key", "value", "source"]),
        (["matrix", "--resume", "latest"], None),
    ],
)
def test_csv_where_the_data_are_rows(
    home: Home, capsys: pytest.CaptureFixture[str], args: list[str], header: list[str] | None
) -> None:
    rows = list(csv.reader(io.StringIO(ok(capsys, *args, "--format", "csv"))))
    assert len(rows) > 1 and len({len(r) for r in rows}) == 1
    if header is not None:
        assert rows[0][: len(header)] == header


def test_ledger_show_csv_has_a_row_per_prediction(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = json.loads(ok(capsys, "ledger", "show", "--format", "json"))["predictions"]
    rows = list(csv.DictReader(io.StringIO(ok(capsys, "ledger", "show", "--format", "csv"))))
    assert [r["id"] for r in rows] == [p["id"] for p in listed]
    assert rows[0]["observed"] == str(len(listed[0]["observed"]))
    assert float(rows[0]["log_score"]) == pytest.approx(listed[0]["scores"]["log_score"])


def test_config_show_table_names_where_each_value_came_from(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINDLEDGER_TIMEOUT", "30")
    rows = {r["key"]: r for r in csv.DictReader(io.StringIO(
        ok(capsys, "-o", "concurrency=8", "config", "show", "--format", "csv")))}
    assert (rows["concurrency"]["value"], rows["concurrency"]["source"]) == ("8", "flag")
    assert (rows["timeout"]["value"], rows["timeout"]["source"]) == ("30.0", "$MINDLEDGER_TIMEOUT")
    assert rows["agents.bot.policy"]["value"] == "depth-capped:2"
    assert rows["agents.bot.policy"]["source"].endswith("mindledger.toml")
    assert (rows["max_retries"]["source"], rows["notify.attempts"]["source"]) == (
        "default", "default")
    doc = json.loads(ok(capsys, "config", "show", "--format", "json"))
    assert doc["_sources"]["timeout"] == "$MINDLEDGER_TIMEOUT"  # the JSON document as it was


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["ledger", "verify", "--format", "csv"], "table or json, got 'csv'"),
        (["history", "bot", "--format", "xml"], "table, json or csv, got 'xml'"),
        (["runs", "--format", "xml"], "table or json, got 'xml'"),
    ],
)
def test_an_unknown_format_is_one_line_naming_the_option(
    home: Home, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    assert refused(capsys, *args) == f"error: --format: expected {expected}\n"


# -- tables in 80 columns -----------------------------------------------------------------------


def headers(text: str) -> list[list[str]]:
    """The column headers of every rich table in ``text``, each as its words rejoined (a
    header wrapped over lines comes back whole; a cut one does not)."""
    tables: list[list[str]] = []
    block: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("┏"):
            block = []
        elif line.startswith("┡") and block is not None:
            columns = [[c.strip() for c in row.strip("┃").split("┃")] for row in block]
            tables.append([" ".join(" ".join(cell for cell in col if cell).split())
                           for col in zip(*columns, strict=True)])
            block = None
        elif block is not None:
            block.append(line)
    return tables


def left_out(text: str) -> set[str]:
    notes = re.findall(r"\(left out at \d+ columns: (.*?); a wider", " ".join(text.split()))
    return {name for note in notes for name in note.split(", ")}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["report", "latest"], [
            ["predictor → target", "n", "log score", "Brier", "top-1", "skill S", "base",
             "p (Holm)", "unreadable", "notes"],
            ["target", "log score", "Brier", "top-1", "skill S"]]),
        (["matrix", "--resume", "latest"], [
            ["predictor → target", "n", "log score", "Brier", "top-1", "skill S", "base",
             "p (Holm)", "unreadable", "notes"],
            ["target", "log score", "Brier", "top-1", "skill S"]]),
        (["history", "bot", "--bootstrap", "100", "--metric", "false_belief", "--metric",
          "d50"], [["run", "created (UTC)", "held-out", "value", "verdict"]] * 2),
        (["ledger", "show"], [["id", "state", "predictor → target", "query", "observed",
                               "log score", "Brier", "top-1"]]),
        (["config", "show"], [["key", "value", "source"]]),
        (["serve", "token", "--list"], [["id", "scope", "agent", "label", "created", "expires",
                                         "last used", "max runs", "state"]]),
        (["ledger", "show", "--id", "{prediction}"], []),
        (["db", "status"], []),
    ],
)
def test_every_table_fits_80_columns_with_its_headers_whole(
    home: Home, capsys: pytest.CaptureFixture[str], args: list[str],
    expected: list[list[str]],
) -> None:
    text = ok(capsys, *(a.format(prediction=home.prediction) for a in args))
    assert text.strip()
    assert max(len(line) for line in text.splitlines()) <= 80
    shown, dropped = headers(text), left_out(text)
    assert len(shown) == len(expected)
    for got, want in zip(shown, expected, strict=True):
        # every header shown whole and in order; the missing ones are among those said left
        # out (one table may keep a column another had to leave out)
        assert got == [h for h in want if h in got], (got, want)
        assert set(want) - set(got) <= dropped, (got, dropped)
    assert dropped <= {h for want in expected for h in want}


def test_history_says_its_verdict_first_and_its_tables_read_alike(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """The regression verdict opens the history (a reader at 3 a.m. wants it before eight
    tables), and a column one table leaves out at 80 columns is left out of every table."""
    text = ok(capsys, "history", "bot", "--bootstrap", "100")
    lines = text.splitlines()
    assert lines[0].startswith("History of bot: ")
    assert lines[1] == "No run flagged." or re.match(r"\d+ flagged: ", lines[1])
    assert "No run flagged." not in lines[2:] and not any(
        re.match(r"\d+ flagged: ", ln) for ln in lines[2:]
    )
    tables = headers(text)
    assert len(tables) >= 5 and all(t == tables[0] for t in tables), tables
    assert set(tables[0]) | left_out(text) == {"run", "created (UTC)", "held-out", "value",
                                                "verdict"}  # fmt: skip
