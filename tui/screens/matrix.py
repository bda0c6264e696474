"""A matrix run: skill S per predictor × target as a table, one condition at a time, with the
highlighted cell's every figure below."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, LoadingIndicator, Static

from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.state import MatrixView, matrix_cell_lines, matrix_view
from tui.widgets.tables import fill_table

if TYPE_CHECKING:  # the summary is read in a worker, its modules on first use
    from reports.matrix_model import MatrixSummary

__all__ = ["MatrixScreen"]


class MatrixScreen(WorkerScreen):
    """The matrix of run ``run_id``, summarised in a worker; ``c`` shows the next condition."""

    HELP: ClassVar[str] = (
        "Matrix run: agent-prediction skill S of each predictor (down) on each target (across) "
        "with its 95% hierarchical bootstrap interval, one prediction condition at a time. "
        "Arrows move between cells; the pane below shows every figure of the highlighted "
        "cell; c shows the next condition."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("c", "next_condition", "Next condition"),
        Binding("r", "reload", "Reload"),
    ]
    WORKER_GROUP = "matrix"
    LOADING = True

    def __init__(self, source: DashboardSource, run_id: str) -> None:
        super().__init__(source)
        self.run_id = run_id
        self.summary: MatrixSummary | None = None
        self.view: MatrixView | None = None
        self.condition = 0

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"Matrix run {self.run_id}"), id="run-title", markup=False)
        yield Static(id="run-notices", markup=False)
        yield LoadingIndicator(id="loading")
        yield Static(id="matrix-condition", markup=False)
        yield DataTable[Text](id="matrix", cursor_type="cell", zebra_stripes=True)
        yield Static(id="matrix-cell", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Matrix {self.run_id}"
        self.load()

    def action_next_condition(self) -> None:
        if self.view and self.view.grids:
            self.condition = (self.condition + 1) % len(self.view.grids)
            self._show_grid()

    def read(self) -> tuple[MatrixSummary, MatrixView]:
        summary = self.source.matrix(self.run_id)
        return summary, matrix_view(summary)

    def show_result(self, result: tuple[MatrixSummary, MatrixView]) -> None:
        self.summary, self.view = result
        self.query_one("#run-title", Static).update(Text(f"{self.view.title}\n{self.view.detail}"))
        self.query_one("#run-notices", Static).update(Text("\n".join(self.view.notices)))
        self.condition = min(self.condition, max(0, len(self.view.grids) - 1))
        self._show_grid()

    def show_error(self, error: BaseException | None) -> None:
        self.query_one("#run-notices", Static).update(
            Text(f"Could not summarise the matrix: {error}"))

    def _show_grid(self) -> None:
        assert self.view is not None
        table = self.query_one("#matrix", DataTable)
        label = self.query_one("#matrix-condition", Static)
        if not self.view.grids:
            label.update(Text("No cells: the matrix has no agents."))
            fill_table(table, ["predictor"], [])
            return
        grid = self.view.grids[self.condition]
        label.update(Text(f"Condition {grid.condition} ({self.condition + 1} of "
                          f"{len(self.view.grids)}; c: next) — skill S [95% interval]"))
        cursor = table.cursor_coordinate
        rows = [[Text(c, style="bold" if i == 0 else "") for i, c in enumerate(r)]
                for r in grid.rows]
        fill_table(table, grid.columns, rows, list(grid.predictors))
        if grid.rows:
            table.move_cursor(row=min(cursor.row, len(grid.rows) - 1),
                              column=max(1, min(cursor.column, len(grid.columns) - 1)),
                              animate=False)
        self._show_cell()
        table.focus()

    def _show_cell(self) -> None:
        if self.view is None or self.summary is None or not self.view.grids:
            return
        grid = self.view.grids[self.condition]
        table = self.query_one("#matrix", DataTable)
        row, column = table.cursor_coordinate
        detail = self.query_one("#matrix-cell", Static)
        if not (0 <= row < len(grid.predictors)) or column < 1 or column > len(grid.targets):
            detail.update(Text(""))
            return
        lines = matrix_cell_lines(self.summary, grid.condition, grid.predictors[row],
                                  grid.targets[column - 1])
        detail.update(Text("\n".join(lines)))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        if event.data_table.id == "matrix":
            self._show_cell()
