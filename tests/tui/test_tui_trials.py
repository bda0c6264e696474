"""The drill-down run → agent's trials → one trial's transcript, driven with Pilot: the run
screen's failed column, the trials screen's filters, the transcript, escape back each level, and
a held-out run's trials withheld."""

from __future__ import annotations

import threading
from pathlib import Path

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from ledger.store import FailureCounts
from tui import DashboardApp, DashboardSource
from tui.screens import HelpScreen, RunScreen, RunsScreen, TranscriptScreen, TrialsScreen
from tui.state import AGENT_COLUMNS, COUNTING

from .conftest import TRIALS_RUN, Seeded
from .test_tui_screens import _until
from .test_tui_snapshots import rows, text, until


def _app(seeded: Seeded, tmp_path: Path, source: DashboardSource | None = None) -> DashboardApp:
    return DashboardApp(source or seeded.source(), refresh_seconds=0,
                        export_dir=tmp_path / "exports")  # fmt: skip


def _column(pilot: Pilot[None], selector: str, name: str) -> list[str]:
    table: DataTable[Text] = pilot.app.screen.query_one(selector, DataTable)
    i = [str(c.label) for c in table.ordered_columns].index(name)
    return [str(table.get_row_at(r)[i]) for r in range(table.row_count)]


async def _open_trials(pilot: Pilot[None], runs: int, run_id: str) -> None:
    """Once the runs screen shows ``runs`` runs, open piper's trials in ``run_id``."""
    await until(pilot, lambda: rows(pilot, "#runs") == runs)
    app = pilot.app
    assert isinstance(app, DashboardApp)
    app.push_screen(TrialsScreen(app.source, run_id, "piper"))
    await until(pilot, lambda: rows(pilot, "#trials") == 16)


async def test_drill_down_from_a_run_to_a_transcript_and_back(
    with_trials: Seeded, tmp_path: Path
) -> None:
    app = _app(with_trials, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: rows(pilot, "#runs") == 3)
        await pilot.press("enter")  # quick-1 is the newest run
        await until(pilot, lambda: rows(pilot, "#agents") == 2
                    and COUNTING not in _column(pilot, "#agents", "Failed"))
        assert isinstance(app.screen, RunScreen) and app.screen.run_id == TRIALS_RUN
        assert _column(pilot, "#agents", "Agent") == ["piper", "piper-control"]
        assert _column(pilot, "#agents", "Failed") == ["3/16", "0/16"]

        await pilot.press("enter")
        await until(pilot, lambda: rows(pilot, "#trials") == 16)
        screen = app.screen
        assert isinstance(screen, TrialsScreen) and screen.agent == "piper"
        assert text(pilot, "#trials-title") == "piper in run quick-1: 16 trials"
        assert text(pilot, "#trials-counts").startswith(
            "11 ok · 2 wrong · 1 unparsed · 2 error — failed 3/16 (19%)\nShowing all 16")
        for key, outcomes in (("e", ["error", "error"]), ("u", ["unparsed"]),
                              ("i", ["wrong", "wrong"])):  # fmt: skip
            await pilot.press(key)
            assert _column(pilot, "#trials", "Outcome") == outcomes
        assert _column(pilot, "#trials", "#") == ["2", "6"]
        assert "Showing wrong: 2 of 16" in text(pilot, "#trials-counts")

        await pilot.press("down", "enter")  # the second wrong trial: item 6
        await until(pilot, lambda: isinstance(app.screen, TranscriptScreen)
                    and len(app.screen.query(".message")) == 3)
        assert text(pilot, "#transcript-title") == (
            "piper · item 6 of run quick-1 · nesttom R3-loop false")
        assert text(pilot, "#answer") == "bag\nconfidence 0.55"
        assert text(pilot, "#expected") == "safe"
        assert app.screen.query_one("#answers").has_class("-wrong")
        assert text(pilot, "#transcript-facts").startswith("Outcome  wrong: truncation:2\n")
        blocks = [str(b.render()) for b in app.screen.query(".message").results(Static)]
        assert blocks[0] == "You are piper. Read each story carefully."
        assert blocks[2].startswith('→ calls submit_answer (call_1) with\n  {\n    "answer": "bag"')

        await pilot.press("escape")  # back to the trials, the filter as it was
        assert isinstance(app.screen, TrialsScreen)
        assert _column(pilot, "#trials", "Outcome") == ["wrong", "wrong"]
        await pilot.press("a")
        assert rows(pilot, "#trials") == 16
        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)


async def test_a_held_out_runs_trials_are_listed_but_not_opened(
    with_held_trials: Seeded, tmp_path: Path
) -> None:
    app = _app(with_held_trials, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_trials(pilot, 4, "quick-held")
        assert text(pilot, "#trials-notice").startswith("Run quick-held is held out")
        assert set(_column(pilot, "#trials", "Answer")) == {""}
        assert set(_column(pilot, "#trials", "Expected")) == {""}
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TrialsScreen)
        assert any("held out" in n.message for n in app._notifications)


async def test_the_trials_screens_help_lists_its_filters(
    with_trials: Seeded, tmp_path: Path
) -> None:
    app = _app(with_trials, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_trials(pilot, 3, TRIALS_RUN)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_text = " ".join(text(pilot, "#help-text").split())
        assert help_text.startswith("Trials piper · quick-1 — keys on this screen")
        for keys in ("⏎ Transcript", "a All", "e Errors", "u Unparsed", "i Wrong"):
            assert keys in help_text
        assert "Trials ↑/↓ move · enter the trial whole · r reload show a all · e errors" in help_text


class SlowCounts(DashboardSource):
    """A source whose failure counts wait until the test lets them go."""

    def __init__(self, seeded: Seeded) -> None:
        base = seeded.source()
        super().__init__(base.store, n_boot=base.n_boot, seed=base.seed, clock=base.clock)
        self.go = threading.Event()

    def failures(self, run_id: str) -> dict[str, FailureCounts]:
        assert self.go.wait(60)
        return super().failures(run_id)


async def test_the_profile_does_not_wait_for_the_failure_counts(
    with_trials: Seeded, tmp_path: Path
) -> None:
    source = SlowCounts(with_trials)
    app = _app(with_trials, tmp_path, source)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: rows(pilot, "#runs") == 3)
        app.push_screen(RunScreen(source, TRIALS_RUN, export_dir=tmp_path))
        try:  # not `until`: it waits for every worker, the counting one too
            await _until(pilot, lambda: rows(pilot, "#agents") == 2)
            assert _column(pilot, "#agents", "Failed") == [COUNTING, COUNTING]
        finally:
            source.go.set()
        await until(pilot, lambda: _column(pilot, "#agents", "Failed") == ["3/16", "0/16"])
        assert len(AGENT_COLUMNS) == len(app.screen.query_one("#agents", DataTable).columns)
