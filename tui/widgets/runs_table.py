"""The runs table: rows come down as an attribute, the chosen run goes up as a message."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable

from tui.state import RUN_COLUMNS, RunRow, fitted_columns
from tui.widgets.tables import fill_table

__all__ = ["RunsTable"]


class RunsTable(DataTable[Text]):
    """A table of runs; set :attr:`runs` to show them (the cursor stays on its run)."""

    BINDINGS = [Binding("enter", "select_cursor", "Open run", show=True)]

    runs: reactive[tuple[RunRow, ...]] = reactive((), init=False, always_update=True)
    marked: reactive[tuple[str, ...]] = reactive((), init=False)
    """Run ids marked for comparison, in the order they were marked (shown in bold, marked)."""

    class Chosen(Message):
        """The user opened a run (``suite`` is its suite: a matrix run opens its matrix)."""

        def __init__(self, run_id: str, suite: str = "") -> None:
            self.run_id = run_id
            self.suite = suite
            super().__init__()

    class Fitted(Message):
        """The columns the table's width leaves out (:attr:`RunsTable.left_out`) changed."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.left_out: tuple[str, ...] = ()
        """The columns the table's width left out (the runs screen's status line names them)."""

    def on_mount(self) -> None:
        fill_table(self, RUN_COLUMNS, [])

    @property
    def current(self) -> RunRow | None:
        """The highlighted run."""
        if self.row_count and self.is_valid_row_index(self.cursor_row):
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
            return next((r for r in self.runs if r.key == key), None)
        return None

    def watch_runs(self, rows: tuple[RunRow, ...]) -> None:
        self._fill(rows)

    def watch_marked(self) -> None:
        self._fill(self.runs)

    def on_resize(self) -> None:
        self._fill(self.runs)

    def _fill(self, rows: tuple[RunRow, ...]) -> None:
        """Show ``rows``, without the columns the table's width cannot hold
        (:func:`tui.state.fitted_columns`: :attr:`left_out` names them)."""
        current = self.current
        marked = set(self.marked)
        widths = [len(c) for c in RUN_COLUMNS]
        for r in rows:
            widths = [max(w, len(c)) for w, c in zip(widths, r.cells, strict=True)]
        room = self.size.width - 2  # the vertical scrollbar's
        kept = fitted_columns(RUN_COLUMNS, widths, room) if room > 0 else list(RUN_COLUMNS)
        left_out = tuple(c for c in RUN_COLUMNS if c not in kept)
        if left_out != self.left_out:
            self.left_out = left_out
            self.post_message(self.Fitted())
        at = [RUN_COLUMNS.index(c) for c in kept]
        cells = []
        for r in rows:
            style = "bold reverse" if r.key in marked else ""
            cells.append([Text(r.cells[i], style=style, overflow="ellipsis") for i in at])
        # what is left of the width, however little, goes to accuracy (cut: the run's own
        # screen has each agent's), rather than the table scrolling sideways to it
        others = sum(widths[i] + 2 for i in at if RUN_COLUMNS[i] != "Accuracy")
        most = {"Accuracy": room - others - 2} if room > 0 else None
        fill_table(self, kept, cells, [r.key for r in rows], most=most)
        keys = [r.key for r in rows]
        if current is not None and current.key in keys:
            self.move_cursor(row=keys.index(current.key), animate=False)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key is not None:
            suite = next((r.cells[1] for r in self.runs if r.key == key), "")
            self.post_message(self.Chosen(key, suite))
