"""Two runs side by side: every headline figure of each agent in both, the change and its
interval and test (the comparison of ``mindledger report --compare``), computed in a worker."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, LoadingIndicator, Static

from tui.comparison import COMPARE_COLUMNS, CompareView, compare_view
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.widgets.tables import fill_table

__all__ = ["CompareScreen"]


class CompareScreen(WorkerScreen):
    """Run ``run_a`` (A) against run ``run_b`` (B); differences are B − A."""

    HELP: ClassVar[str] = (
        "Compare: every headline figure of each agent in both runs, the change B − A with its "
        "95% interval and test (Newcombe and Fisher for proportions, the bootstrap for D50, "
        "ECE and log score), Holm-adjusted, and its verdict: clearly higher (green) or lower "
        "(red) only when the interval excludes 0 and the change survives Holm. ↑/↓ move; "
        "the line under the table shows the highlighted row in full, each run's figure with "
        "its interval and n."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]
    WORKER_GROUP = "compare"
    LOADING = True

    def __init__(self, source: DashboardSource, run_a: str, run_b: str) -> None:
        super().__init__(source)
        self.run_a = run_a
        self.run_b = run_b
        self.view: CompareView | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"Comparing {self.run_a} → {self.run_b}…"), id="compare-title",
                     markup=False)
        yield Static(id="compare-notes", markup=False)
        yield LoadingIndicator(id="loading")
        yield DataTable[Text](id="compare", cursor_type="row", zebra_stripes=True)
        yield Static(id="compare-detail", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Compare {self.run_a} → {self.run_b}"
        fill_table(self.query_one("#compare", DataTable), COMPARE_COLUMNS, [])
        self.load()

    def read(self) -> CompareView:
        return compare_view(self.source.compare(self.run_a, self.run_b))

    def show_error(self, error: BaseException | None) -> None:
        self.query_one("#compare-notes", Static).update(Text(f"Could not compare the runs: {error}"))

    def show_result(self, view: CompareView) -> None:
        self.view = view
        self.query_one("#compare-title", Static).update(Text(view.title))
        self.query_one("#compare-notes", Static).update(Text("\n".join(view.notes)))
        table = self.query_one("#compare", DataTable)
        rows = []
        for r in view.rows:
            cells = [Text(c) for c in r.cells]
            cells[0].stylize("bold")
            if r.direction:
                for cell in cells[4:6]:
                    cell.stylize("green" if r.direction > 0 else "red")
            rows.append(cells)
        fill_table(table, COMPARE_COLUMNS, rows, [f"{r.agent}:{r.metric}" for r in view.rows])
        self._show_detail(table.cursor_row)
        table.focus()

    def _show_detail(self, row: int) -> None:
        detail = self.query_one("#compare-detail", Static)
        if self.view is not None and 0 <= row < len(self.view.rows):
            detail.update(Text(self.view.rows[row].detail))
        else:
            detail.update(Text(""))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "compare":
            self._show_detail(event.cursor_row)
