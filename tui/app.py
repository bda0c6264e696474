"""The dashboard App: owns navigation (runs → run, ledger, help); the screens own their data."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from reports.matrix_summary import SUITE as MATRIX_SUITE
from tui.screens.help import HelpScreen
from tui.screens.ledger import LedgerScreen
from tui.screens.matrix import MatrixScreen
from tui.screens.run import RunScreen
from tui.screens.runs import RunsScreen
from tui.source import DashboardSource
from tui.widgets.runs_table import RunsTable

__all__ = ["DashboardApp"]


class DashboardApp(App[None]):
    """Browse runs, profiles and the prediction ledger.

    ``source`` does all the reading and writing (in workers); ``refresh_seconds`` is how often
    the runs table re-reads the database (0: never); ``export_dir`` is where reports go.
    """

    CSS_PATH = "dashboard.tcss"
    TITLE = "mindledger"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("l", "ledger", "Ledger"),
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
        if message.suite == MATRIX_SUITE:
            self.push_screen(MatrixScreen(self.source, message.run_id))
            return
        self.push_screen(RunScreen(self.source, message.run_id, export_dir=self.export_dir))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_ledger(self) -> None:
        if not isinstance(self.screen, LedgerScreen | HelpScreen):
            self.push_screen(LedgerScreen(self.source))
