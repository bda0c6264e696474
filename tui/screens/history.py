"""An agent's history: every headline figure over its runs as a sparkline, with the runs the
regression rule flagged, and the chosen figure run by run (computed in a worker)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, LoadingIndicator, Static

from tui.history_view import (
    FORECAST_COLUMNS,
    HISTORY_COLUMNS,
    POINT_COLUMNS,
    HistoryView,
    history_view,
)
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.widgets.tables import fill_table

__all__ = ["HistoryScreen"]


class HistoryScreen(WorkerScreen):
    """The history of ``agent`` over its finished runs as the agent under test."""

    HELP: ClassVar[str] = (
        "History: each headline figure of the agent over its runs (oldest → newest) as a "
        "sparkline, red where the regression rule flagged the run, underlined where the run "
        "was held out (the daemon's nightly runs are). ↑/↓ choose a figure; the table below "
        "shows it run by run, newest first, with the recent level it was tested against."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]
    WORKER_GROUP = "history"
    LOADING = True

    def __init__(self, source: DashboardSource, agent: str) -> None:
        super().__init__(source)
        self.agent = agent
        self.view: HistoryView | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"History of {self.agent}…"), id="history-title", markup=False)
        yield Static(id="history-notes", markup=False)
        yield LoadingIndicator(id="loading")
        yield DataTable[Text](id="history", cursor_type="row", zebra_stripes=True)
        yield Static(id="history-figure", markup=False)
        yield DataTable[Text](id="points", cursor_type="row", zebra_stripes=True)
        yield Static(id="forecasts-title", markup=False)
        yield DataTable[Text](id="forecasts", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"History {self.agent}"
        fill_table(self.query_one("#history", DataTable), HISTORY_COLUMNS, [])
        fill_table(self.query_one("#points", DataTable), POINT_COLUMNS, [])
        fill_table(self.query_one("#forecasts", DataTable), FORECAST_COLUMNS, [])
        self.query_one("#forecasts", DataTable).display = False
        self.query_one("#forecasts-title", Static).display = False
        self.load()

    def read(self) -> HistoryView:
        return history_view(self.source.history(self.agent))

    def show_error(self, error: BaseException | None) -> None:
        self.query_one("#history-notes", Static).update(Text(f"Could not read the history: {error}"))

    def show_result(self, view: HistoryView) -> None:
        self.view = view
        self.query_one("#history-title", Static).update(Text(view.title))
        self.query_one("#history-notes", Static).update(Text("\n".join(view.notes)))
        table = self.query_one("#history", DataTable)
        cursor = table.cursor_row
        rows = []
        for line in view.lines:
            cells = [Text(c) for c in line.cells]
            spark = cells[1]
            for i in line.held_out_at:
                spark.stylize("underline", i, i + 1)
            for i in line.flagged_at:
                spark.stylize("bold red", i, i + 1)
            if line.flagged_at:
                cells[5].stylize("bold red")
            rows.append(cells)
        fill_table(table, HISTORY_COLUMNS, rows, [line.key for line in view.lines])
        if view.lines:
            table.move_cursor(row=min(cursor, len(view.lines) - 1), animate=False)
        self._show_points(table.cursor_row)
        self._show_forecasts(view)
        table.focus()

    def _show_forecasts(self, view: HistoryView) -> None:
        """The self-forecasts, newest run first, confidently wrong ones in red (nothing of
        them when the agent made none)."""
        title = self.query_one("#forecasts-title", Static)
        table = self.query_one("#forecasts", DataTable)
        title.display = table.display = bool(view.forecasts)
        title.update(Text("Self-forecasts: each forecast's 50% and 90% bands beside the outcome"
                          if view.forecasts else ""))
        rows = []
        for cells, wrong in zip(view.forecasts, view.forecast_wrong, strict=True):
            r = [Text(c) for c in cells]
            if wrong:
                for c in r:
                    c.stylize("bold red")
            rows.append(r)
        fill_table(table, FORECAST_COLUMNS, rows)

    def _show_points(self, row: int) -> None:
        points = self.query_one("#points", DataTable)
        label = self.query_one("#history-figure", Static)
        if self.view is None or not (0 <= row < len(self.view.lines)):
            fill_table(points, POINT_COLUMNS, [])
            label.update(Text(""))
            return
        line = self.view.lines[row]
        label.update(Text(f"{line.cells[0]}, run by run (newest first)"
                          + (f" — latest verdict: {line.verdicts[0]}" if line.verdicts else "")))
        rows = []
        for cells, flagged in zip(line.points, line.point_flagged, strict=True):
            r = [Text(c) for c in cells]
            if flagged:
                r[7].stylize("bold red")
            rows.append(r)
        fill_table(points, POINT_COLUMNS, rows)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "history":
            self._show_points(event.cursor_row)
