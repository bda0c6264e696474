"""The dashboard App: owns navigation between the screens; the screens own their data.

Runs is the root. Enter opens a run (its matrix for a matrix run); on a run, enter opens an
agent's trials and, on a trial, its transcript; space marks runs and c compares two; a opens an
agent's history; l, s and w open the prediction ledger, the schedule and the queue from
anywhere; escape goes back; ? shows the current screen's keys.

Only the runs screen is imported with the App: every other screen's module, and the reports
behind it, is imported when the screen is first opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from reports.matrix_runs import SUITE as MATRIX_SUITE
from tui.messages import (
    CompareRequested,
    HistoryRequested,
    TranscriptRequested,
    TrialsRequested,
)
from tui.screens.help import HelpScreen, screen_keys
from tui.screens.runs import RunsScreen
from tui.widgets.runs_table import RunsTable

if TYPE_CHECKING:
    from tui.source import DashboardSource

__all__ = ["DashboardApp"]


class DashboardApp(App[None]):
    """Browse runs, profiles, comparisons, histories, the schedule, the queue and the
    prediction ledger.

    ``source`` does all the reading and writing (in workers); ``refresh_seconds`` is how often
    the runs table and the queue re-read the database (0: never); ``export_dir`` is where
    reports go.
    """

    CSS_PATH = "dashboard.tcss"
    TITLE = "mindledger"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("l", "open('ledger')", "Ledger"),
        Binding("s", "open('schedule')", "Schedule"),
        Binding("w", "open('queue')", "Queue"),
    ]

    def __init__(
        self,
        source: DashboardSource,
        *,
        refresh_seconds: float = 5.0,
        export_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.refresh_seconds = refresh_seconds
        self.export_dir = Path.cwd() if export_dir is None else Path(export_dir)

    def on_mount(self) -> None:
        self.push_screen(RunsScreen(self.source, refresh_seconds=self.refresh_seconds))

    def on_runs_table_chosen(self, message: RunsTable.Chosen) -> None:
        self.open_run(message.run_id, message.suite)

    def open_run(self, run_id: str, suite: str = "") -> None:
        """Show run ``run_id``: its matrix for a matrix run, else its profile."""
        if isinstance(self.screen, HelpScreen):
            return
        if suite == MATRIX_SUITE:
            from tui.screens.matrix import MatrixScreen

            self.push_screen(MatrixScreen(self.source, run_id))
        else:
            from tui.screens.run import RunScreen

            self.push_screen(RunScreen(self.source, run_id, export_dir=self.export_dir))

    def on_compare_requested(self, message: CompareRequested) -> None:
        if not isinstance(self.screen, HelpScreen):
            from tui.screens.compare import CompareScreen

            self.push_screen(CompareScreen(self.source, message.run_a, message.run_b))

    def on_history_requested(self, message: HistoryRequested) -> None:
        if not isinstance(self.screen, HelpScreen):
            from tui.screens.history import HistoryScreen

            self.push_screen(HistoryScreen(self.source, message.agent))

    def on_trials_requested(self, message: TrialsRequested) -> None:
        if not isinstance(self.screen, HelpScreen):
            from tui.screens.trials import TrialsScreen

            self.push_screen(TrialsScreen(self.source, message.run_id, message.agent))

    def on_transcript_requested(self, message: TranscriptRequested) -> None:
        if not isinstance(self.screen, HelpScreen):
            from tui.screens.transcript import TranscriptScreen

            self.push_screen(TranscriptScreen(self.source, message.run_id, message.agent,
                                              message.item, message.position))

    def action_help(self) -> None:
        screen = self.screen
        if isinstance(screen, HelpScreen):
            return
        name = screen.sub_title or "Runs"
        about = str(getattr(screen, "HELP", ""))
        self.push_screen(HelpScreen(name, screen_keys(screen), about))

    def action_open(self, which: str) -> None:
        """Open the ledger, the schedule or the queue screen, unless it is the one shown (or
        help is)."""
        from tui.screens.ledger import LedgerScreen
        from tui.screens.queue import QueueScreen
        from tui.screens.schedule import ScheduleScreen

        kinds: dict[str, type[Screen[None]]] = {
            "ledger": LedgerScreen,
            "schedule": ScheduleScreen,
            "queue": QueueScreen,
        }
        kind = kinds[which]
        if isinstance(self.screen, HelpScreen | kind):
            return
        if kind is QueueScreen:
            self.push_screen(QueueScreen(self.source, refresh_seconds=self.refresh_seconds))
        elif kind is ScheduleScreen:
            self.push_screen(ScheduleScreen(self.source))
        else:
            self.push_screen(LedgerScreen(self.source))
