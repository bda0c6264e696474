"""``mindledger dashboard``: registered, documented, and wired to the configured database."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import COMMANDS, cli
from ledger.keys import load_or_create_service_key
from tui import DashboardApp, NoLedger


def test_dashboard_is_a_documented_command(isolated_home: Path) -> None:
    assert COMMANDS["dashboard"][0] == "harness.cli.dashboard_cmd"
    runner = CliRunner()
    top = runner.invoke(cli, ["--help"])
    assert top.exit_code == 0 and "dashboard" in top.output
    r = runner.invoke(cli, ["dashboard", "--help"])
    assert r.exit_code == 0, r.output
    assert "--refresh" in r.output and "--export-dir" in r.output and "--suite" in r.output
    # the help ends with its examples, after the options
    tail = r.output.rstrip().splitlines()[-4:]
    assert tail[0].strip() == "Examples:"
    assert [line.strip().split()[:2] for line in tail[1:]] == [["mindledger", "dashboard"],
                                                               ["mindledger", "--db"],
                                                               ["mindledger", "dashboard"]]


def test_dashboard_opens_the_configured_database_and_ledger(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[DashboardApp] = []
    monkeypatch.setattr(DashboardApp, "run", lambda self, *a, **k: started.append(self))
    db = tmp_path / "dash.db"
    out = tmp_path / "reports"
    r = CliRunner().invoke(
        cli,
        ["--db", f"sqlite:///{db}", "dashboard", "--refresh", "0", "--bootstrap", "300",
         "--export-dir", str(out)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (app,) = started
    assert app.refresh_seconds == 0 and app.export_dir == out
    assert app.source.n_boot == 300
    assert app.source.store.engine.url.database == str(db)
    assert app.source.runs() == []
    # no service key yet: the dashboard says so instead of creating one
    with pytest.raises(NoLedger, match="no service key"):
        app.source.ledger_snapshot()
    assert not (isolated_home / "keys").exists()
    load_or_create_service_key(isolated_home)
    snap = app.source.ledger_snapshot()
    assert snap.predictions == [] and snap.verification.ok
    # the schedule and the queue are handed in by the harness
    schedule = app.source.schedule()
    assert schedule.expression == "0 3 * * *" and schedule.jobs == ()
    assert app.source.queue().reason.startswith("no queue: the database is SQLite")
