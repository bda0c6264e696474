"""The worker queue: batches queued, running, stalled or failed, and the workers' heartbeats."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Label, Static

from tui.operations import QUEUE_COLUMNS, WORKER_COLUMNS, QueueView, queue_view
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.widgets.tables import fill_table

__all__ = ["QueueScreen"]


class QueueScreen(WorkerScreen):
    """The queue, read in a worker every ``refresh_seconds`` (0: only on r)."""

    HELP: ClassVar[str] = (
        "Queue: the batches of trials queued for `mindledger worker` processes (PostgreSQL "
        "only) — queued, running, stalled (running on a worker that sent no heartbeat in time; "
        "the next sweep re-queues it) and failed (after 3 attempts: `mindledger enqueue RUN` "
        "queues them again) — and each worker's last heartbeat."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]
    WORKER_GROUP = "queue"

    def __init__(self, source: DashboardSource, *, refresh_seconds: float = 5.0) -> None:
        super().__init__(source)
        self.refresh_seconds = refresh_seconds

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Reading the queue…", id="queue-status", markup=False)
        yield Label("Batches", classes="section")
        yield DataTable[Text](id="batches", cursor_type="row", zebra_stripes=True)
        yield Label("Workers", classes="section")
        yield DataTable[Text](id="workers", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Queue"
        fill_table(self.query_one("#batches", DataTable), QUEUE_COLUMNS, [])
        fill_table(self.query_one("#workers", DataTable), WORKER_COLUMNS, [])
        self.load()
        if self.refresh_seconds > 0:
            self.set_interval(self.refresh_seconds, self.load)

    def read(self) -> QueueView:
        return queue_view(self.source.queue())

    def show_result(self, view: QueueView) -> None:
        self.query_one("#queue-status", Static).update(Text(view.headline))
        rows = []
        for cells, state in zip(view.batch_rows, view.batch_states, strict=True):
            row = [Text(c) for c in cells]
            if state in ("stalled", "failed", "aborted"):
                row[4].stylize("bold red")
            elif state == "running":
                row[4].stylize("green")
            rows.append(row)
        fill_table(self.query_one("#batches", DataTable), QUEUE_COLUMNS, rows)
        workers = []
        for cells in view.worker_rows:
            row = [Text(c) for c in cells]
            row[4].stylize("green" if cells[4] == "alive" else "bold red")
            workers.append(row)
        fill_table(self.query_one("#workers", DataTable), WORKER_COLUMNS, workers)

    def show_error(self, error: BaseException | None) -> None:
        self.query_one("#queue-status", Static).update(Text(f"Could not read the queue: {error}"))
