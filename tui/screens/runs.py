"""The runs screen: every stored run, refreshed periodically in a worker."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual.worker import Worker, WorkerState

from tui.source import DashboardSource
from tui.state import RunRow, run_rows
from tui.widgets.runs_table import RunsTable

__all__ = ["RunsScreen"]


class RunsScreen(Screen[None]):
    """Runs newest first; Enter opens one (the table posts :class:`RunsTable.Chosen`)."""

    BINDINGS = [Binding("r", "refresh", "Refresh")]

    def __init__(self, source: DashboardSource, *, refresh_seconds: float = 5.0) -> None:
        super().__init__()
        self.source = source
        self.refresh_seconds = refresh_seconds

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Loading runs…", id="runs-status", markup=False)
        yield RunsTable(id="runs")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Runs"
        self.load_runs()
        if self.refresh_seconds > 0:
            self.set_interval(self.refresh_seconds, self.load_runs)

    def action_refresh(self) -> None:
        self.load_runs()

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False)
    def load_runs(self) -> list[RunRow]:
        return run_rows(self.source.runs())

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "runs":
            return
        status = self.query_one("#runs-status", Static)
        if event.state == WorkerState.SUCCESS:
            rows: list[RunRow] = event.worker.result or []
            self.query_one(RunsTable).runs = tuple(rows)
            every = (
                f"; refreshing every {self.refresh_seconds:g} s" if self.refresh_seconds > 0 else ""
            )
            status.update(
                Text(
                    f"{len(rows)} runs{every}"
                    if rows
                    else "No runs yet: start one with `mindledger run` or `mindledger quickstart`."
                )
            )
        elif event.state == WorkerState.ERROR:
            status.update(Text(f"Could not read the runs: {event.worker.error}"))
