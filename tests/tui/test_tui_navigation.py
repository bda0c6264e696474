"""Keyboard navigation between every screen, driven with Pilot: each screen has its key, escape
goes back, ? shows the current screen's own keys, and a key never stacks a screen twice."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

from tui import DashboardApp
from tui.screens import (
    CompareScreen,
    HelpScreen,
    HistoryScreen,
    LedgerScreen,
    QueueScreen,
    RunScreen,
    RunsScreen,
    ScheduleScreen,
)
from tui.widgets import RunsTable

from .conftest import SNAP_SIZE, Seeded
from .test_tui_snapshots import make_app, rows, text, until


def _stack(app: DashboardApp) -> list[str]:
    return [type(s).__name__ for s in app.screen_stack[1:]]


async def _runs(pilot: Pilot[None]) -> RunsTable:
    await until(pilot, lambda: rows(pilot, "#runs") == 6)
    return pilot.app.screen.query_one(RunsTable)


async def test_marking_two_runs_and_comparing_them(nightly: Seeded, tmp_path: Path) -> None:
    app = make_app(nightly, tmp_path)
    async with app.run_test(size=SNAP_SIZE) as pilot:
        table = await _runs(pilot)
        await pilot.press("c")  # nothing marked: it says how, and stays
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        assert any("Mark two runs" in n.message for n in app._notifications)
        # mark night-4 (top) and night-2; space again unmarks
        await pilot.press("space", "down", "space", "space", "down", "space")
        assert table.marked == ("night-4", "night-2")
        assert "marked for comparison: night-4, night-2" in text(pilot, "#runs-status")
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen)
                    and rows(pilot, "#compare") > 0)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert (screen.run_a, screen.run_b) == ("night-2", "night-4")  # older is A
        cells = [str(c) for c in screen.query_one("#compare", DataTable).get_row_at(0)]
        assert cells[:2] == ["piper", "false-belief accuracy"]
        assert text(pilot, "#compare-detail").startswith("piper · false-belief accuracy: ")
        await pilot.press("down")
        await until(pilot, lambda: "true-belief control accuracy" in text(pilot,
                                                                          "#compare-detail"))
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)


async def test_one_marked_run_compares_with_the_highlighted_one(
    nightly: Seeded, tmp_path: Path
) -> None:
    app = make_app(nightly, tmp_path)
    async with app.run_test(size=SNAP_SIZE) as pilot:
        await _runs(pilot)
        await pilot.press("down", "space", "up", "c")  # night-3 marked, night-4 highlighted
        await until(pilot, lambda: isinstance(app.screen, CompareScreen))
        assert isinstance(app.screen, CompareScreen)
        assert (app.screen.run_a, app.screen.run_b) == ("night-3", "night-4")


async def test_every_screen_has_its_key_and_escape_goes_back(
    nightly: Seeded, tmp_path: Path
) -> None:
    app = make_app(nightly, tmp_path)
    async with app.run_test(size=SNAP_SIZE) as pilot:
        await _runs(pilot)
        # the app's keys open their screen from anywhere, once
        for key, kind in (("l", LedgerScreen), ("s", ScheduleScreen), ("w", QueueScreen)):
            await pilot.press(key)
            await until(pilot, lambda kind=kind: isinstance(app.screen, kind))  # type: ignore[misc]
            await pilot.press(key)
            await pilot.pause()
            assert _stack(app) == ["RunsScreen", kind.__name__]
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, RunsScreen))
        # ledger → schedule → queue stack, and unwind
        await pilot.press("l", "s", "w")
        await until(pilot, lambda: isinstance(app.screen, QueueScreen))
        assert _stack(app) == ["RunsScreen", "LedgerScreen", "ScheduleScreen", "QueueScreen"]
        await pilot.press("escape", "escape", "escape")
        await until(pilot, lambda: isinstance(app.screen, RunsScreen))
        # enter opens the highlighted run; a opens its highlighted agent's history
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RunScreen) and rows(pilot, "#agents"))
        assert isinstance(app.screen, RunScreen) and app.screen.run_id == "night-4"
        await pilot.press("down", "a")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        assert isinstance(app.screen, HistoryScreen) and app.screen.agent == "piper-control"
        await pilot.press("escape", "escape")
        await until(pilot, lambda: isinstance(app.screen, RunsScreen))
        # a on the runs screen: the highlighted run's agent under test
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen)
                    and rows(pilot, "#history") > 0)
        assert isinstance(app.screen, HistoryScreen) and app.screen.agent == "piper"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RunsScreen))


async def test_enter_on_the_schedule_opens_the_jobs_last_run(
    nightly: Seeded, tmp_path: Path
) -> None:
    app = make_app(nightly, tmp_path)
    async with app.run_test(size=SNAP_SIZE) as pilot:
        await _runs(pilot)
        await pilot.press("s")
        await until(pilot, lambda: rows(pilot, "#schedule") == 2)
        await pilot.press("enter")  # nightly:piper: last run night-4
        await until(pilot, lambda: isinstance(app.screen, RunScreen))
        assert isinstance(app.screen, RunScreen) and app.screen.run_id == "night-4"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ScheduleScreen))
        await pilot.press("down", "enter")  # nightly:wren has made no run: nothing opens
        await pilot.pause()
        assert isinstance(app.screen, ScheduleScreen)


async def test_help_on_every_screen_lists_that_screens_keys(
    nightly: Seeded, tmp_path: Path
) -> None:
    app = make_app(nightly, tmp_path)
    own: dict[type[Screen[None]], tuple[str, list[str]]] = {
        RunsScreen: ("Runs", ["⏎  Open run", "space  Mark", "c      Compare", "a      History"]),
        RunScreen: ("Run night-4", ["m    Export .md", "a    History"]),
        CompareScreen: ("Compare night-3 → night-4", ["r    Reload"]),
        HistoryScreen: ("History piper", ["r    Reload"]),
        LedgerScreen: ("Prediction ledger", ["r    Reload and verify"]),
        ScheduleScreen: ("Schedule", ["r    Reload"]),
        QueueScreen: ("Queue", ["r    Reload"]),
    }
    async with app.run_test(size=SNAP_SIZE) as pilot:
        await _runs(pilot)
        for kind, (title, keys) in own.items():
            if kind is RunScreen:
                app.push_screen(RunScreen(app.source, "night-4", export_dir=tmp_path))
            elif kind is CompareScreen:
                app.push_screen(CompareScreen(app.source, "night-3", "night-4"))
            elif kind is HistoryScreen:
                app.push_screen(HistoryScreen(app.source, "piper"))
            elif kind is not RunsScreen:
                keys_of: dict[type[Screen[None]], str] = {
                    LedgerScreen: "l", ScheduleScreen: "s", QueueScreen: "w"}
                await pilot.press(keys_of[kind])
            await until(pilot, lambda kind=kind: isinstance(app.screen, kind))  # type: ignore[misc]
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen))
            help_text = text(pilot, "#help-text")
            assert help_text.startswith(f"{title} — keys on this screen"), help_text[:80]
            mine = " ".join(help_text.split("──")[0].split())  # the screen's own part
            for k in [*keys, "q Quit", "? Help", "l Ledger", "s Schedule", "w Queue"]:
                assert " ".join(k.split()) in mine, (kind.__name__, k, mine)
            assert " ".join(str(kind.__dict__["HELP"]).split()) in mine
            await pilot.press("question_mark")  # ? closes it too
            await until(pilot, lambda kind=kind: isinstance(app.screen, kind))  # type: ignore[misc]
            if kind is not RunsScreen:
                await pilot.press("escape")
                await until(pilot, lambda: isinstance(app.screen, RunsScreen))
