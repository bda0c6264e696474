"""The runs screen: every stored run, refreshed periodically in a worker; runs are marked here
for comparison and an agent's history is opened from here."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Static

from tui.messages import CompareRequested, HistoryRequested
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.state import RunRow, run_rows
from tui.widgets.runs_table import RunsTable

__all__ = ["RunsScreen"]


class RunsScreen(WorkerScreen):
    """Runs newest first; Enter opens one (the table posts :class:`RunsTable.Chosen`)."""

    HELP: ClassVar[str] = (
        "Runs: every stored run, newest first, with each agent's accuracy. Mark two runs with "
        "space and press c to compare them (the older is A, the newer B); with one run marked, "
        "c compares it with the highlighted run. a opens the history of the highlighted run's "
        "agent under test."
    )
    BINDINGS = [
        Binding("space", "mark", "Mark"),
        Binding("c", "compare", "Compare"),
        Binding("a", "history", "History"),
        Binding("r", "refresh", "Refresh"),
    ]
    WORKER_GROUP = "runs"

    def __init__(self, source: DashboardSource, *, refresh_seconds: float = 5.0) -> None:
        super().__init__(source)
        self.refresh_seconds = refresh_seconds

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Loading runs…", id="runs-status", markup=False)
        yield RunsTable(id="runs")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Runs"
        self.load()
        if self.refresh_seconds > 0:
            self.set_interval(self.refresh_seconds, self.load)

    def action_refresh(self) -> None:
        self.load()

    def action_mark(self) -> None:
        """Mark the highlighted run for comparison (again: unmark it); two at most."""
        table = self.query_one(RunsTable)
        run = table.current
        if run is None:
            return
        if run.key in table.marked:
            table.marked = tuple(k for k in table.marked if k != run.key)
        else:
            table.marked = (*table.marked, run.key)[-2:]
        self._show_status()

    def action_compare(self) -> None:
        """Compare the two marked runs, or the marked one with the highlighted one."""
        table = self.query_one(RunsTable)
        chosen = list(table.marked)
        current = table.current
        if len(chosen) == 1 and current is not None and current.key not in chosen:
            chosen.append(current.key)
        if len(chosen) != 2:
            self.notify("Mark two runs with space (or one, and highlight the other), then "
                        "press c.", severity="warning", timeout=4)
            return
        created = {r.key: r.created_at for r in table.runs}
        run_a, run_b = sorted(chosen, key=lambda k: (created.get(k, ""), k))
        self.post_message(CompareRequested(run_a, run_b))

    def action_history(self) -> None:
        """Open the history of the highlighted run's agent under test."""
        run = self.query_one(RunsTable).current
        if run is None or not run.agents:
            self.notify("This run has no agents.", severity="warning", timeout=3)
            return
        self.post_message(HistoryRequested(run.agents[0]))

    def read(self) -> list[RunRow]:
        return run_rows(self.source.runs(), self.source.clock())

    def _show_status(self) -> None:
        table = self.query_one(RunsTable)
        n = len(table.runs)
        every = f"; refreshing every {self.refresh_seconds:g} s" if self.refresh_seconds > 0 else ""
        text = (f"{n} runs{every}" if n else
                "No runs yet: start one with `mindledger run` or `mindledger quickstart`.")
        if table.marked:
            text += " · marked for comparison: " + ", ".join(table.marked)
        if n and table.left_out:
            text += f" · left out at this width: {', '.join(table.left_out)}"
        self.query_one("#runs-status", Static).update(Text(text))

    def on_runs_table_fitted(self) -> None:
        self._show_status()

    def show_result(self, rows: list[RunRow]) -> None:
        table = self.query_one(RunsTable)
        keys = {r.key for r in rows}
        table.runs = tuple(rows)
        table.marked = tuple(k for k in table.marked if k in keys)
        self._show_status()

    def show_error(self, error: BaseException | None) -> None:
        self.query_one("#runs-status", Static).update(Text(f"Could not read the runs: {error}"))
