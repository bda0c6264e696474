"""One run: its verdict first, then each agent's profile (validity first) and failed trials,
accuracy by depth, agent − control and ablation credit; opens an agent's trials; exports the
report to a file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Header, LoadingIndicator, Static
from textual.worker import Worker, WorkerState

from tui.messages import HistoryRequested, TrialsRequested
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.state import (
    AGENT_COLUMNS,
    NOTE_MARK,
    AgentView,
    RunHeader,
    agent_row,
    agent_views,
    run_header,
)
from tui.widgets.agent_detail import AgentDetail
from tui.widgets.depth_chart import DepthChart
from tui.widgets.tables import fill_table

if TYPE_CHECKING:
    from ledger.store import FailureCounts

__all__ = ["RunScreen"]


class RunScreen(WorkerScreen):
    """The profile of run ``run_id``, computed in a worker."""

    HELP: ClassVar[str] = (
        "Run: the verdict first (each agent under test in a sentence or two, the reference "
        "agents, what this run is too small to say); then each agent's profile, validity "
        "first, then D50, leakage resistance, true-belief "
        "control accuracy and false-belief accuracy, its trials (n) and its failed trials "
        "(API errors and unreadable answers over the trials that asked it something); a cell "
        "cut short (†) is whole on the line under the table. ↑/↓ choose an agent: its detail "
        "shows accuracy by depth (and, as a chart, with its 95% intervals), agent − control "
        "and ablation credit. enter opens the "
        "highlighted agent's trials (and from there one trial's transcript); a opens its "
        "history; m and h write the report as Markdown or HTML to the export directory."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("enter", "trials", "Trials", priority=True),
        Binding("m", "export('md')", "Export .md"),
        Binding("h", "export('html')", "Export .html"),
        Binding("a", "history", "History"),
        Binding("r", "reload", "Reload"),
    ]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]
    """Below 140 columns the depth chart goes under the agent's detail, not beside it."""
    WORKER_GROUP = "profile"
    LOADING = True

    def __init__(self, source: DashboardSource, run_id: str, *, export_dir: Path) -> None:
        super().__init__(source)
        self.run_id = run_id
        self.export_dir = export_dir
        self.views: list[AgentView] = []
        self.failures: dict[str, FailureCounts] | None = None
        """Failed trials per agent, counted apart from the profile (None until counted)."""
        self.header: RunHeader | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"Run {self.run_id}"), id="run-title", markup=False)
        yield Static(id="run-verdict", markup=False)
        yield Static(id="run-notices", markup=False)
        yield LoadingIndicator(id="loading")
        yield DataTable[Text](id="agents", cursor_type="row", zebra_stripes=True)
        yield Static(id="agents-notes", markup=False)
        with Horizontal(id="run-body"):
            yield AgentDetail(id="detail")
            yield DepthChart(id="depth-chart")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Run {self.run_id}"
        fill_table(self.query_one("#agents", DataTable), AGENT_COLUMNS, [])
        self.load()

    def load(self) -> None:
        """Build the profile, and count the failed trials in a worker of their own (one count
        query, which neither waits for the profile nor keeps it waiting)."""
        super().load()
        self.count_failures()

    @work(thread=True, group="failures", exclusive=True, exit_on_error=False)
    def count_failures(self) -> dict[str, FailureCounts]:
        return self.source.failures(self.run_id)

    def action_trials(self) -> None:
        table = self.query_one("#agents", DataTable)
        if 0 <= table.cursor_row < len(self.views):
            self.post_message(TrialsRequested(self.run_id, self.views[table.cursor_row].name))

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
        if event.worker.group == "failures":
            if event.state == WorkerState.SUCCESS:
                self.failures = event.worker.result
                self._show_title()
                self._fill_agents()
            elif event.state == WorkerState.ERROR:
                self.notify(f"Could not count the failed trials: {event.worker.error}",
                            severity="warning")
        elif event.worker.group == "export":
            if event.state == WorkerState.SUCCESS:
                self.notify(f"Wrote the report to {event.worker.result}", title="Exported")
            elif event.state == WorkerState.ERROR:
                self.notify(f"Could not export the report: {event.worker.error}", severity="error")

    def show_result(self, result: tuple[RunHeader, list[AgentView]]) -> None:
        header, views = result
        self.header, self.views = header, views
        self._show_title()
        verdict = Text()
        for i, (line, invalid) in enumerate(zip(header.verdict, header.invalid, strict=True)):
            verdict.append(("\n" if i else "") + line, style="bold red" if invalid else "")
        self.query_one("#run-verdict", Static).update(verdict)
        self.query_one("#run-notices", Static).update(Text("\n".join(header.notices)))
        notes = [f"{NOTE_MARK} {n}" for v in views for n in v.notes]
        self.query_one("#agents-notes", Static).update(Text("\n".join(notes)))
        self._fill_agents()
        table = self.query_one("#agents", DataTable)
        if views:
            self.query_one(AgentDetail).agent = views[table.cursor_row]
            self.query_one(DepthChart).curve = views[table.cursor_row].curve
        table.focus()

    def _show_title(self) -> None:
        """The run's title and counts line, which reads ``FAILED`` (naming the agents) once
        the failed trials are counted and an agent's are over the failure limit."""
        if self.header is None:
            return
        share = self.source.max_failure_share
        over = [
            name
            for name, counts in (self.failures or {}).items()
            if share is not None and counts.over(share)
        ]
        line = self.header.detail_line(over)
        self.query_one("#run-title", Static).update(Text(f"{self.header.title}\n{line}"))

    def _fill_agents(self) -> None:
        """The agents table from the profile's views and the failed trials, as far as each
        has been read (the cursor stays on its row)."""
        table = self.query_one("#agents", DataTable)
        cursor = table.cursor_row
        rows = []
        for v in self.views:
            row = [Text(c) for c in agent_row(v, self.failures)]
            if not v.valid:
                row[0].stylize("bold red")
            rows.append(row)
        fill_table(table, AGENT_COLUMNS, rows, [v.name for v in self.views])
        if self.views:
            table.move_cursor(row=min(cursor, len(self.views) - 1), animate=False)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "agents" and 0 <= event.cursor_row < len(self.views):
            self.query_one(AgentDetail).agent = self.views[event.cursor_row]
            self.query_one(DepthChart).curve = self.views[event.cursor_row].curve
