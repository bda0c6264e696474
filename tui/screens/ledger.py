"""The prediction ledger: every prediction in its state, and whether the chain verifies."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from tui.screens._base import WorkerScreen
from tui.source import DashboardSource, NoLedger
from tui.state import PREDICTION_COLUMNS, LedgerView, ledger_view
from tui.widgets.tables import fill_table
from tui.widgets.verify_banner import VerifyBanner

__all__ = ["LedgerScreen"]


class LedgerScreen(WorkerScreen):
    """Predictions newest first; the ledger is read and verified in a worker."""

    HELP: ClassVar[str] = (
        "Ledger: every committed prediction, newest first, in its state (committed, observed, "
        "revealed, scored; expired past its deadline; rejected when the reveal did not match "
        "the commitment), the query proxy's calls, and whether the hash chain verifies — or "
        "the first entry where it breaks."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload and verify"),
    ]
    WORKER_GROUP = "ledger"

    def __init__(self, source: DashboardSource) -> None:
        super().__init__(source)

    def compose(self) -> ComposeResult:
        yield Header()
        yield VerifyBanner("Verifying the ledger…", id="verify", markup=False)
        yield Static(id="ledger-counts", markup=False)
        yield Static(id="ledger-calls", markup=False)
        yield DataTable[Text](id="predictions", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Prediction ledger"
        fill_table(self.query_one("#predictions", DataTable), PREDICTION_COLUMNS, [])
        self.load()

    def action_reload(self) -> None:
        self.query_one(VerifyBanner).show_message("Verifying the ledger…")
        self.load()

    def read(self) -> LedgerView:
        snap = self.source.ledger_snapshot()
        return ledger_view(snap.predictions, snap.verification, snap.now)

    def show_result(self, view: LedgerView) -> None:
        self.query_one(VerifyBanner).verification = view.verify
        self.query_one("#ledger-counts", Static).update(Text(view.counts))
        self.query_one("#ledger-calls", Static).update(
            Text("Query proxy — " + "\n".join(view.calls))
        )
        table = self.query_one("#predictions", DataTable)
        rows = []
        for row in view.rows:
            cells = [Text(c) for c in row.cells]
            if row.state in ("rejected", "expired"):
                cells[4].stylize("bold red")
            elif row.state == "scored":
                cells[4].stylize("green")
            rows.append(cells)
        fill_table(table, PREDICTION_COLUMNS, rows, [r.key for r in view.rows])

    def show_error(self, error: BaseException | None) -> None:
        banner = self.query_one(VerifyBanner)
        if isinstance(error, NoLedger):
            banner.show_message(f"No prediction ledger: {error}")
        else:
            banner.show_message(f"Could not read the ledger: {error}")
            banner.add_class("-broken")
