"""One run: each agent's profile (validity first), accuracy by depth, agent − control and
ablation credit; exports the report to a file."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, LoadingIndicator, Static
from textual.worker import Worker, WorkerState

from tui.messages import HistoryRequested
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.state import AGENT_COLUMNS, NOTE_MARK, AgentView, RunHeader, agent_views, run_header
from tui.widgets.agent_detail import AgentDetail
from tui.widgets.tables import fill_table

__all__ = ["RunScreen"]


class RunScreen(WorkerScreen):
    """The profile of run ``run_id``, computed in a worker."""

    HELP: ClassVar[str] = (
        "Run: each agent's profile, validity first, then D50, leakage resistance, true-belief "
        "control accuracy and false-belief accuracy; a cell cut short (†) is whole on the line "
        "under the table. ↑/↓ choose an agent: its detail shows accuracy by depth, agent − "
        "control and ablation credit. a opens the highlighted agent's history; m and h write "
        "the report as Markdown or HTML to the export directory."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("m", "export('md')", "Export .md"),
        Binding("h", "export('html')", "Export .html"),
        Binding("a", "history", "History"),
        Binding("r", "reload", "Reload"),
    ]
    WORKER_GROUP = "profile"
    LOADING = True

    def __init__(self, source: DashboardSource, run_id: str, *, export_dir: Path) -> None:
        super().__init__(source)
        self.run_id = run_id
        self.export_dir = export_dir
        self.views: list[AgentView] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"Run {self.run_id}"), id="run-title", markup=False)
        yield Static(id="run-notices", markup=False)
        yield LoadingIndicator(id="loading")
        yield DataTable[Text](id="agents", cursor_type="row", zebra_stripes=True)
        yield Static(id="agents-notes", markup=False)
        yield AgentDetail(id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Run {self.run_id}"
        fill_table(self.query_one("#agents", DataTable), AGENT_COLUMNS, [])
        self.load()

    def action_history(self) -> None:
        table = self.query_one("#agents", DataTable)
        if 0 <= table.cursor_row < len(self.views):
            self.post_message(HistoryRequested(self.views[table.cursor_row].name))

    def action_export(self, fmt: str) -> None:
        self.notify(f"Exporting the {fmt} report…", timeout=2)
        self.export_report(fmt)

    def read(self) -> tuple[RunHeader, list[AgentView]]:
        profile = self.source.profile(self.run_id)
        return run_header(profile), agent_views(profile)

    @work(thread=True, group="export", exit_on_error=False)
    def export_report(self, fmt: str) -> Path:
        return self.source.export(self.run_id, fmt, self.export_dir)

    def show_error(self, error: BaseException | None) -> None:
        self.query_one("#run-notices", Static).update(Text(f"Could not build the profile: {error}"))

    def other_worker_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "export":
            if event.state == WorkerState.SUCCESS:
                self.notify(f"Wrote the report to {event.worker.result}", title="Exported")
            elif event.state == WorkerState.ERROR:
                self.notify(f"Could not export the report: {event.worker.error}", severity="error")

    def show_result(self, result: tuple[RunHeader, list[AgentView]]) -> None:
        header, views = result
        self.views = views
        self.query_one("#run-title", Static).update(Text(f"{header.title}\n{header.detail}"))
        notices = self.query_one("#run-notices", Static)
        notices.update(Text("\n".join(header.notices)))
        notices.set_class(any(n.startswith("INVALID") for n in header.notices), "-invalid")
        table = self.query_one("#agents", DataTable)
        cursor = table.cursor_row
        rows = []
        for v in views:
            row = [Text(c) for c in v.summary]
            if not v.valid:
                row[0].stylize("bold red")
            rows.append(row)
        fill_table(table, AGENT_COLUMNS, rows, [v.name for v in views])
        notes = [f"{NOTE_MARK} {n}" for v in views for n in v.notes]
        self.query_one("#agents-notes", Static).update(Text("\n".join(notes)))
        if views:
            table.move_cursor(row=min(cursor, len(views) - 1), animate=False)
            self.query_one(AgentDetail).agent = views[table.cursor_row]
        table.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "agents" and 0 <= event.cursor_row < len(self.views):
            self.query_one(AgentDetail).agent = self.views[event.cursor_row]
