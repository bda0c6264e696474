"""The dashboard imports a screen, and the reports behind it, when the screen is first shown
(issue 23, "fast where users live"): checked in a fresh interpreter by the modules loaded once
the runs screen, and then a run's screen, show their rows. ``bench/bench_cli_latency.py``
measures the time; this checks the part that is deterministic."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import Seeded

# the dashboard in a fresh interpreter over the database at argv[1]; once the runs screen and
# then run argv[2]'s screen have rows, it prints the modules loaded so far
SCRIPT = """
import asyncio, json, sys

from textual.widgets import DataTable

from tui import DashboardApp, DashboardSource


def Store(engine):
    from ledger.store import Store

    return Store(engine)


def open_engine(url):
    from ledger.db import open_engine

    return open_engine(url)


async def until_rows(app, screen, table):
    while not (type(app.screen).__name__ == screen and app.screen.is_mounted):
        await asyncio.sleep(0.01)
    rows = app.screen.query_one(table, DataTable)
    while not rows.row_count:
        await asyncio.sleep(0.01)
    print(screen, json.dumps(sorted(sys.modules)), flush=True)


def source(url):
    if sys.argv[3] == "store":
        return DashboardSource(Store(open_engine(url)), n_boot=200)
    # as `mindledger dashboard` builds it (a current database: read without SQLAlchemy)
    from harness.cli.dashboard_cmd import dashboard_source
    from harness.config.settings import load_settings

    settings = load_settings(None, flags={"db_url": url})

    def open_workspace():
        from harness.config.workspace import Workspace

        return Workspace.open(settings)

    return dashboard_source(settings, open_workspace, n_boot=200)


async def main(url, run_id):
    app = DashboardApp(source(url), refresh_seconds=0)
    async with app.run_test(size=(160, 50)):
        await until_rows(app, "RunsScreen", "#runs")
        app.open_run(run_id)
        await until_rows(app, "RunScreen", "#agents")


asyncio.run(main(sys.argv[1], sys.argv[2]))
"""

OTHER_SCREENS = {
    # the screens not shown, and what they alone read: a comparison, a history, a matrix
    "tui.screens.compare", "tui.screens.history", "tui.screens.matrix", "tui.screens.ledger",
    "tui.screens.schedule", "tui.screens.queue", "tui.screens.trials", "tui.screens.transcript",
    "reports.comparison", "reports.history", "reports.matrix", "reports.matrix_summary",
    "reports.trials", "reports.render", "ledger.predictions",
}  # fmt: skip
STATS = {"scipy.stats", "statsmodels"}


def loaded(seeded: Seeded, run_id: str, how: str = "store") -> dict[str, set[str]]:
    """The modules loaded when each screen had its rows, by screen; the source over a Store
    (``how`` "store") or as ``mindledger dashboard`` builds it ("command")."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(seeded.home)
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, f"sqlite:///{seeded.home / 'dash.db'}", run_id, how],
        cwd=seeded.home, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = {}
    for line in r.stdout.splitlines():
        screen, _, modules = line.partition(" ")
        out[screen] = set(json.loads(modules))
    assert set(out) == {"RunsScreen", "RunScreen"}, r.stdout + r.stderr
    return out


def test_the_runs_and_run_screens_load_only_what_they_show(seeded: Seeded) -> None:
    """run-a has a control and an ablation: its profile's paired contrasts take the exact
    McNemar test, whose binomial comes from scipy.special, not scipy.stats."""
    by_screen = loaded(seeded, "run-a")
    runs, run = by_screen["RunsScreen"], by_screen["RunScreen"]
    assert runs & (OTHER_SCREENS | {"tui.screens.run", "reports.profile", "reports.model"}) == set()
    assert not {m for m in runs if m.partition(".")[0] in {"scipy", "statsmodels", "numpy"}}
    assert {"tui.screens.run", "reports.profile"} <= run
    assert run & (OTHER_SCREENS | STATS) == set()


def test_the_dashboard_reads_a_current_database_without_sqlalchemy(seeded: Seeded) -> None:
    """Built as `mindledger dashboard` builds it, over a database at the current schema, the
    runs and run screens fill without importing SQLAlchemy, SQLModel or the Store."""
    by_screen = loaded(seeded, "run-a", "command")
    orm = {"sqlalchemy", "sqlmodel", "ledger.store", "ledger.models", "ledger.db",
           "harness.config.workspace"}  # fmt: skip
    for screen, modules in by_screen.items():
        assert modules & orm == set(), screen
    assert {"tui.screens.run", "reports.profile", "ledger.reader"} <= by_screen["RunScreen"]
    # the same script over a Store loads them: the check can fail
    assert {"sqlalchemy", "ledger.store"} <= loaded(seeded, "run-a")["RunsScreen"]
