"""The daemon's schedule: each scheduled job's next run times and the last run it made."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from tui.operations import SCHEDULE_COLUMNS, ScheduleView, schedule_view
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource, NoSchedule
from tui.widgets.runs_table import RunsTable
from tui.widgets.tables import fill_table

__all__ = ["ScheduleScreen"]


class ScheduleScreen(WorkerScreen):
    """The schedule, read in a worker (the harness hands the dashboard how to read it)."""

    HELP: ClassVar[str] = (
        "Schedule: the [schedule] of the configuration (a cron expression in UTC) and each "
        "job the daemon runs on it — the nightly suite and matrix of every declared agent, "
        "queued run-now requests — with its next run, the two after it, and the last run it "
        "made (status and accuracy per agent). ↑/↓ move: the line under the table shows the "
        "job in full; enter opens its last run."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]
    WORKER_GROUP = "schedule"

    def __init__(self, source: DashboardSource) -> None:
        super().__init__(source)
        self.view: ScheduleView | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Reading the schedule…", id="schedule-title", markup=False)
        yield Static(id="schedule-notes", markup=False)
        yield DataTable[Text](id="schedule", cursor_type="row", zebra_stripes=True)
        yield Static(id="schedule-detail", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Schedule"
        fill_table(self.query_one("#schedule", DataTable), SCHEDULE_COLUMNS, [])
        self.load()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter opens the highlighted job's last run."""
        event.stop()
        if self.view is None or not (0 <= event.cursor_row < len(self.view.last_runs)):
            return
        run_id, suite = self.view.last_runs[event.cursor_row]
        if run_id:
            self.post_message(RunsTable.Chosen(run_id, suite))

    def _show_detail(self, row: int) -> None:
        detail = self.query_one("#schedule-detail", Static)
        if self.view is not None and 0 <= row < len(self.view.details):
            detail.update(Text(self.view.details[row]))
        else:
            detail.update(Text(""))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "schedule":
            self._show_detail(event.cursor_row)

    def read(self) -> ScheduleView:
        return schedule_view(self.source.schedule())

    def show_result(self, view: ScheduleView) -> None:
        self.view = view
        self.query_one("#schedule-title", Static).update(Text(view.title))
        self.query_one("#schedule-notes", Static).update(Text("\n".join(view.notes)))
        table = self.query_one("#schedule", DataTable)
        fill_table(table, SCHEDULE_COLUMNS, [[Text(c) for c in r] for r in view.rows],
                   list(view.keys))
        self._show_detail(table.cursor_row)
        table.focus()

    def show_error(self, error: BaseException | None) -> None:
        prefix = "No schedule" if isinstance(error, NoSchedule) else "Could not read the schedule"
        self.query_one("#schedule-title", Static).update(Text(f"{prefix}: {error}"))
