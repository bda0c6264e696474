"""Filling a DataTable with columns sized to their content.

DataTable measures auto-width columns on idle but keeps cells rendered before that in its
cache, so a table filled right after it is shown can stay cut to its header widths (Textual
8.2). Giving every column its width up front avoids that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.widgets import DataTable

__all__ = ["fill_table"]


def fill_table(
    table: DataTable[Text],
    columns: Sequence[str],
    rows: Sequence[Sequence[Text]],
    keys: Sequence[str] | None = None,
    *,
    most: Mapping[str, int] | None = None,
) -> None:
    """Replace the table's columns and rows; each column as wide as its widest cell, or as
    ``most`` says at most (by column: its longer cells are cut)."""
    widths = [len(c) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], cell.cell_len)
    for i, label in enumerate(columns):
        if most and label in most:
            widths[i] = min(widths[i], max(len(label), most[label]))
    table.clear(columns=True)
    for label, width in zip(columns, widths, strict=True):
        table.add_column(label, width=width, key=label)
    for n, row in enumerate(rows):
        table.add_row(*row, key=None if keys is None else keys[n])
