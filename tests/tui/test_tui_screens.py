"""Whole screens over the seeded database, driven with App.run_test() and Pilot."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from ledger.store import RunAgent
from tui import DashboardApp
from tui.screens import HelpScreen, LedgerScreen, RunScreen, RunsScreen
from tui.state import INVALID, fmt_pct, run_rows
from tui.widgets import AgentDetail, RunsTable, VerifyBanner

from .conftest import Seeded


def _cells(table: DataTable[Text]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def _text(widget: Static) -> str:
    return str(widget.render())


def _screen_text(screen: RunScreen) -> str:
    """Every Static's text on the screen (the verdict, notices, notes and the detail)."""
    return "\n".join(_text(w) for w in screen.query(Static) if w.display)


async def _until(pilot: Pilot[None], condition: Callable[[], bool], seconds: float = 60) -> None:
    """Let the app run until ``condition`` holds. A worker's result reaches its screen as a
    message some time after the worker finished; on a loaded machine that time has no bound
    a test can name, so wait for the effect, not for a number of pauses (a test that still
    fails after a minute has found a real hang)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the app did not get there in time"
        await pilot.pause(0.05)


def _app(seeded: Seeded, tmp_path: Path, *, with_ledger: bool = True) -> DashboardApp:
    return DashboardApp(
        seeded.source(with_ledger=with_ledger),
        refresh_seconds=0,
        export_dir=tmp_path / "exports",
    )


async def test_runs_screen_lists_runs_with_accuracy_per_agent(
    seeded: Seeded, tmp_path: Path
) -> None:
    app = _app(seeded, tmp_path)
    async with app.run_test(size=(220, 40)) as pilot:  # wide enough for every column
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        rows = _cells(app.screen.query_one(RunsTable))
        assert [r[0] for r in rows] == ["run-a", "run-empty"]  # newest first
        run_a, empty = rows
        counts = seeded.store.trial_counts("run-a")
        assert run_a[1:8] == [
            "synthetic", "11", "dev", "complete", "2026-03-01 12:01:00", "4",
            str(sum(c["ok"] + c["api_error"] + c["not_applicable"] for c in counts.values())),
        ]  # fmt: skip
        piper = fmt_pct(counts["piper"]["correct"] / counts["piper"]["ok"], 0)
        assert run_a[8].startswith(f"piper {piper} · piper-control ")
        assert run_a[8].endswith(" · not-reality " + fmt_pct(
            counts["not-reality"]["correct"] / counts["not-reality"]["ok"], 0))  # fmt: skip
        assert empty[3:5] == ["held-out", "running"] and empty[7:] == ["0", "piper —"]
        status = _text(app.screen.query_one("#runs-status", Static))
        assert status.startswith("2 runs")


async def test_the_runs_table_fits_80_columns_leaving_out_what_it_says(
    seeded: Seeded, tmp_path: Path
) -> None:
    """At 80 columns the runs table leaves out the seed, agents, held-out and created columns
    (in that order, as many as it must) rather than push accuracy off the screen, and says so;
    widened, it shows them again."""
    app = _app(seeded, tmp_path)
    async with app.run_test(size=(80, 30)) as pilot:
        table = app.screen.query_one(RunsTable)
        await _until(pilot, lambda: table.row_count == 2)
        headers = [str(c.label) for c in table.columns.values()]
        assert headers[0] == "Run" and headers[-3:] == ["Status", "Trials", "Accuracy"]
        assert "Seed" not in headers
        assert sum(c.get_render_width(table) for c in table.columns.values()) <= 78
        status = app.screen.query_one("#runs-status", Static)
        await _until(pilot, lambda: "left out at this width: " in _text(status))
        assert "Seed" in table.left_out and "Accuracy" not in table.left_out
        assert _text(status).endswith("left out at this width: " + ", ".join(table.left_out))
        assert [r[-1].split()[0] for r in _cells(table)] == ["piper", "piper"]  # accuracy
        await pilot.resize_terminal(240, 30)
        await _until(pilot, lambda: len(table.columns) == 9)
        await _until(pilot, lambda: "left out" not in _text(status))


def test_a_run_over_the_failure_limit_reads_failed_in_the_runs_table(seeded: Seeded) -> None:
    """Its agents' counts are those the store counts, and the run's status says FAILED when
    an agent failed over the limit it is given (`mindledger run` exited 3 for it)."""
    counts = seeded.store.trial_counts("run-a")
    failures = seeded.store.failure_counts(["run-a"])["run-a"]
    piper = failures["piper"]
    assert piper.errors and piper.over(0) and not piper.over(0.5)
    for share, status in ((None, "complete"), (0.5, "complete"), (0.0, "FAILED")):
        source = seeded.source()
        source.max_failure_share = share
        run = {r.id: r for r in source.runs()}["run-a"]
        assert run_rows([run])[0].cells[4] == status, share
        assert {a.name: (a.ok, a.api_error, a.correct) for a in run.agents} == {
            name: (c["ok"], c["api_error"], c["correct"]) for name, c in counts.items()
        }
    assert run.over_limit == sum(c.over(0.0) for c in failures.values())


async def test_runs_table_refreshes_in_a_worker(seeded: Seeded, tmp_path: Path) -> None:
    app = DashboardApp(seeded.source(), refresh_seconds=0.1, export_dir=tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        # the timer's refreshes cancel one another (exclusive workers): waiting for every
        # worker to complete raises WorkerCancelled, so wait for the table to fill instead
        table = app.screen.query_one(RunsTable)
        await _until(pilot, lambda: table.row_count == 2)
        seeded.clock.advance(60)
        seeded.store.create_run(
            "run-new", suite="nightly", seed=5, held_out=True, params={},
            agents=[RunAgent("piper", "agent", {})], items=[],
        )  # fmt: skip
        # the timer's refreshes are exclusive workers that cancel one another, so there is no
        # one worker to wait for: wait for the table to show the new run
        await _until(pilot, lambda: table.row_count == 3)
        assert [r[0] for r in _cells(table)] == ["run-new", "run-a", "run-empty"]


async def test_enter_opens_the_run_with_validity_first(seeded: Seeded, tmp_path: Path) -> None:
    app = _app(seeded, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RunScreen) and screen.run_id == "run-a"
        await app.workers.wait_for_complete()
        await pilot.pause()
        title = _text(screen.query_one("#run-title", Static))
        assert title.startswith("Run run-a · suite synthetic · seed 11")
        assert "development seeds" in title
        verdict = _text(screen.query_one("#run-verdict", Static))
        assert verdict.startswith("piper (agent under test) is valid")
        assert "not-reality: diagnosed as expected (marked INVALID by the controls)" in verdict
        assert "INVALID" not in _text(screen.query_one("#run-notices", Static))
        agents = _cells(screen.query_one("#agents", DataTable))
        assert [r[1] for r in agents] == [
            "piper", "piper-control", "piper-no-perspective", "not-reality",
        ]  # fmt: skip
        assert agents[0][0] == "yes" and agents[0][3][0].isdigit()
        assert agents[3][0] == f"✗ {INVALID}" and agents[3][3] == INVALID

        detail = screen.query_one(AgentDetail)
        validity = detail.query_one("#validity", Static)
        assert _text(validity).startswith("VALID: true-belief control accuracy")
        contrasts = _cells(detail.query_one("#contrasts", DataTable))
        assert contrasts[0][:2] == ["agent − control", "false-belief accuracy"]
        # the invalid reference's paragraph is said once on the screen: in its detail, when
        # it is chosen (the verdict names it in a few words)
        message = next(v.validity for v in screen.views if v.name == "not-reality")
        assert message.startswith("INVALID: not-reality")
        assert _screen_text(screen).count(message) == 0
        await pilot.press("down", "down", "down")
        await pilot.pause()
        assert _text(validity) == message
        assert _screen_text(screen).count(message) == 1
        assert contrasts[0][2].startswith(("+", "-")) and " pts [" in contrasts[0][2]
        assert any(r[0] == "credit: perspective-filtering" for r in contrasts)
        depth = _cells(detail.query_one("#depth", DataTable))
        assert depth[0][:2] == ["R0", "—"] and "R5" in [r[0] for r in depth]

        for _ in range(3):
            await pilot.press("down")
        await pilot.pause()
        assert detail.agent is not None and detail.agent.name == "not-reality"
        assert _text(validity).startswith("INVALID: not-reality's true-belief control")
        assert validity.has_class("-invalid")
        assert "INVALID (not counted: " in _text(detail.query_one("#metrics", Static))

        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)


async def test_the_run_screen_reads_failed_when_an_agent_is_over_the_failure_limit(
    seeded: Seeded, tmp_path: Path
) -> None:
    source = seeded.source()
    source.max_failure_share = 0.0  # piper has API errors: over a limit of none
    app = DashboardApp(source, refresh_seconds=0, export_dir=tmp_path)
    async with app.run_test(size=(80, 40)) as pilot:
        await app.workers.wait_for_complete()
        screen = RunScreen(source, "run-a", export_dir=tmp_path)
        app.push_screen(screen)
        await _until(pilot, lambda: screen.is_mounted and screen.header is not None)
        title = lambda: _text(screen.query_one("#run-title", Static))  # noqa: E731
        await _until(pilot, lambda: "FAILED" in title())
        over = sorted(n for n, c in seeded.store.failure_counts(["run-a"])["run-a"].items()
                      if c.over(0.0))  # fmt: skip
        assert "piper" in over
        line = title().splitlines()[1]
        assert line.startswith("FAILED (") and "over the failure limit) · " in line
        assert sorted(line[len("FAILED ("):line.index(" over the")].split(", ")) == over


async def test_export_keys_write_reports_and_say_where(seeded: Seeded, tmp_path: Path) -> None:
    app = _app(seeded, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        md = (tmp_path / "exports" / "run-a.md").resolve()
        html = (tmp_path / "exports" / "run-a.html").resolve()

        def said(path: Path) -> bool:
            return f"Wrote the report to {path}" in [n.message for n in app._notifications]

        await pilot.press("m")
        await _until(pilot, lambda: said(md))
        assert md.exists() and "piper-control" in md.read_text(encoding="utf-8")
        await pilot.press("h")
        await _until(pilot, lambda: said(html))
        assert html.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


async def test_a_run_that_cannot_be_profiled_says_why(seeded: Seeded, tmp_path: Path) -> None:
    app = _app(seeded, tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.push_screen(RunScreen(app.source, "no-such-run", export_dir=tmp_path))
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        notices = _text(app.screen.query_one("#run-notices", Static))
        assert notices.startswith("Could not build the profile: no run with id 'no-such-run'")
        assert not app.screen.query_one("#loading").display


async def test_ledger_screen_shows_every_state_and_that_it_verifies(
    seeded: Seeded, tmp_path: Path
) -> None:
    app = _app(seeded, tmp_path)
    async with app.run_test(size=(180, 40)) as pilot:
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, LedgerScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        banner = app.screen.query_one(VerifyBanner)
        assert _text(banner).startswith("Ledger intact: 12 entries, head 12 sha256:")
        assert banner.has_class("-ok")
        rows = _cells(app.screen.query_one("#predictions", DataTable))
        by_id = {r[0]: r for r in rows}
        for state, pid in seeded.predictions.items():
            assert by_id[pid][4] == state
        assert rows[0][0] == seeded.predictions["committed"]  # newest first
        scored = by_id[seeded.predictions["scored"]]
        assert scored[5:8] == ["7", "1.00", "-0.511"]
        counts = _text(app.screen.query_one("#ledger-counts", Static))
        assert counts == "1 committed · 1 observed · 1 scored · 1 expired · 1 rejected"
        calls = _text(app.screen.query_one("#ledger-calls", Static))
        assert calls == "Query proxy — no calls through the proxy"
        # the ledger screen is not stacked twice
        await pilot.press("l")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)


async def test_ledger_screen_names_the_first_bad_entry(seeded: Seeded, tmp_path: Path) -> None:
    with seeded.store.engine.begin() as conn:
        conn.execute(sa.text("DROP TRIGGER IF EXISTS ledger_entries_no_update"))
        conn.execute(
            sa.text("UPDATE ledger_entries SET payload_json = :p WHERE seq = 6"),
            {"p": '{"answer":"3"}'},
        )
    app = _app(seeded, tmp_path)
    async with app.run_test(size=(180, 40)) as pilot:
        await pilot.press("l")
        await app.workers.wait_for_complete()
        await pilot.pause()
        banner = app.screen.query_one(VerifyBanner)
        assert _text(banner).startswith("LEDGER BROKEN at entry 6")
        assert banner.has_class("-broken")


async def test_ledger_screen_without_a_ledger(seeded: Seeded, tmp_path: Path) -> None:
    app = _app(seeded, tmp_path, with_ledger=False)
    async with app.run_test(size=(180, 40)) as pilot:
        await pilot.press("l")
        await app.workers.wait_for_complete()
        await pilot.pause()
        banner = app.screen.query_one(VerifyBanner)
        assert _text(banner) == "No prediction ledger: no prediction ledger is configured"
        assert app.screen.query_one("#predictions", DataTable).row_count == 0


async def test_footer_keys_help_and_quit(seeded: Seeded, tmp_path: Path) -> None:
    app = _app(seeded, tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = {
            b.binding.key: b.binding.description
            for b in app.screen.active_bindings.values()
            if b.binding.show
        }
        assert {"q": "Quit", "question_mark": "Help", "l": "Ledger", "r": "Refresh"}.items() <= (
            shown.items()
        )
        assert shown["enter"] == "Open run"
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "m export Markdown" in _text(app.screen.query_one("#help-text", Static))
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert not app.is_running
