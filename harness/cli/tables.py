"""Tables that fit the width they are printed at, with every header whole.

Rich shrinks a table that is too wide by cutting its widest columns evenly, whatever they
hold: a header becomes ``tria…`` and an interval ``0.51…``. :func:`fit_table` instead gives
every column at least its longest word (its header's included), so cells and headers wrap
between words and never lose a letter; when even that is too wide, it leaves out columns in the
order the caller names (the least needed first) and says which. Columns may declare
``overflow="fold"`` (ids, queries, paths): those break inside a word rather than push the
table wider, and need only their header's longest word.

Use it for any table printed for people::

    table = Table(...)
    ...
    print_table(stdout_console(), table, drop=("observed", "Brier"))

:func:`stdout_console` is the console such tables go to: the terminal's width, or on a file or
a pipe ``$COLUMNS`` when set (``COLUMNS=80 mindledger … > out.txt``) and else
:data:`PIPED_WIDTH`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import ClassVar

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markdown import Markdown, MarkdownElement, TableElement
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

__all__ = [
    "PIPED_WIDTH",
    "TerminalMarkdown",
    "fit_table",
    "fits",
    "note_dropped",
    "print_table",
    "stdout_console",
]

PIPED_WIDTH = 160
"""Columns of a table written to a file or a pipe when ``$COLUMNS`` does not say: a file has
no right edge, and wrapping it at 80 would only make it longer."""

FOLD_MIN = 8
"""Narrowest a folding column gets (unless its header needs more)."""

COMFORT = 12
"""Width below which a wrapped column reads badly (a word or two a line): a column that may be
left out is left out rather than squeeze the others below it."""


def stdout_console() -> Console:
    """A console on stdout: the terminal's width; on a file or a pipe, ``$COLUMNS`` when it is
    set, else :data:`PIPED_WIDTH`."""
    console = Console()
    if console.is_terminal:
        return console
    columns = os.environ.get("COLUMNS", "")
    return Console(width=int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH)


def _header(column: Column) -> str:
    header = column.header
    return header if isinstance(header, str) else getattr(header, "plain", str(header))


def _range(console: Console, table: Table, column: Column) -> tuple[int, int]:
    """The narrowest width ``column``'s content can take without cutting a word (a folding
    column: without cutting its header) and the width it takes unwrapped, padding excluded."""
    options = console.options.update_width(10_000)
    cells: list[RenderableType] = [*column.cells]
    measured = [Measurement.get(console, options, cell) for cell in cells]
    words = [len(w) for w in _header(column).split()] or [1]
    head_hi = len(_header(column)) if table.show_header else 0
    hi = max([head_hi, *(m.maximum for m in measured)]) or 1
    if column.no_wrap:
        lo = hi
    elif column.overflow == "fold":
        lo = min(hi, max(max(words), FOLD_MIN))
    else:
        lo = max([max(words), *(m.minimum for m in measured)])
    if column.min_width is not None:
        lo = max(lo, min(column.min_width, hi))
    return min(lo, hi), hi


def _overhead(table: Table) -> int:
    """Columns taken by borders, separators and cell padding."""
    pads = sum(table._get_padding_width(i) for i in range(len(table.columns)))
    return table._extra_width + pads


def _comfortable(ranges: Sequence[tuple[int, int]], table: Table, width: int) -> bool:
    """Whether ``table`` gives each column (of ``ranges``, from :func:`_range`), in ``width``,
    its longest word and :data:`COMFORT` columns (or all it needs, if less)."""
    return sum(min(hi, max(lo, COMFORT)) for lo, hi in ranges) <= width - _overhead(table)


def fits(table: Table, width: int) -> bool:
    """Whether ``table`` reads well in ``width`` columns with all its columns: each gets its
    longest word and :data:`COMFORT` columns (or all it needs, if less)."""
    console = Console(width=max(width, 1))
    return _comfortable([_range(console, table, c) for c in table.columns], table, width)


def fit_table(table: Table, width: int, *, drop: Sequence[str] = ()) -> list[str]:
    """Make ``table`` fit in ``width`` columns without cutting a header or a word.

    First the columns headed ``drop`` are left out, in that order, while the table cannot give
    every column :data:`COMFORT` columns (or all it needs, if less) and its longest word; then
    each column gets its longest word and what is left is shared in proportion to what each
    needs to stand unwrapped. Returns the headers left out (none when the table fits)."""
    console = Console(width=max(width, 1))
    measured = {id(c): _range(console, table, c) for c in table.columns}  # each cell once
    dropped: list[str] = []
    candidates = [d for d in drop if any(_header(c) == d for c in table.columns)]
    while candidates and not _comfortable([measured[id(c)] for c in table.columns], table,
                                          width):
        name = candidates.pop(0)
        table.columns[:] = [c for c in table.columns if _header(c) != name]
        for index, column in enumerate(table.columns):
            column._index = index
        dropped.append(name)
    ranges = [measured[id(c)] for c in table.columns]
    room = width - _overhead(table)
    if sum(hi for _, hi in ranges) <= room:
        return dropped
    lo = [lo for lo, _ in ranges]
    if sum(lo) > room:  # words must break: inside cells, never inside a header's word
        lo = _squeeze(table.columns, lo, room)
    widths = _share(lo, [hi for _, hi in ranges], room)
    for column, w in zip(table.columns, widths, strict=True):
        column.width = w
    return dropped


def _squeeze(columns: Sequence[Column], lo: list[int], room: int) -> list[int]:
    """Narrow the widest columns below their longest word, towards their header's longest
    word, until they fit in ``room`` (columns that must not wrap last); those narrowed fold
    their cells' words rather than cut them."""
    floors = [max((len(w) for w in _header(c).split()), default=1) for c in columns]
    widths = list(lo)
    for tier in (False, True):  # wrapping columns first, then those that must not wrap
        while sum(widths) > room:
            slack = [
                (widths[i] - floors[i], i)
                for i, c in enumerate(columns)
                if c.no_wrap == tier and widths[i] > floors[i]
            ]
            if not slack:
                break
            widths[max(slack)[1]] -= 1
    for column, before, after in zip(columns, lo, widths, strict=True):
        if after < before:
            column.overflow, column.no_wrap = "fold", False
    return widths


def _share(lo: list[int], hi: list[int], room: int) -> list[int]:
    """Widths from ``lo`` up towards ``hi``, the ``room`` beyond ``sum(lo)`` shared in
    proportion to what each still lacks (water-filling, in whole columns)."""
    widths = list(lo)
    spare = room - sum(widths)
    while spare > 0:
        lacking = [i for i, w in enumerate(widths) if w < hi[i]]
        if not lacking:
            break
        need = sum(hi[i] - widths[i] for i in lacking)
        given = 0
        for i in lacking:
            share = min(hi[i] - widths[i], spare * (hi[i] - widths[i]) // need)
            widths[i] += share
            given += share
        if given == 0:  # less spare than columns lacking: one column at a time
            i = max(lacking, key=lambda j: hi[j] - widths[j])
            widths[i] += 1
            given = 1
        spare -= given
    return widths


def print_table(console: Console, table: Table, *, drop: Sequence[str] = ()) -> None:
    """Print ``table`` fitted to ``console``'s width (:func:`fit_table`), and under it the
    columns left out, if any."""
    dropped = fit_table(table, console.width, drop=drop)
    console.print(table)
    note_dropped(console, dropped)


def note_dropped(console: Console, dropped: Sequence[str]) -> None:
    """Say which columns :func:`fit_table` left out, if any."""
    if dropped:
        console.print(
            f"(left out at {console.width} columns: {', '.join(dropped)}; a wider terminal or "
            "--format json shows them)",
            style="dim",
            highlight=False,
            markup=False,
        )


class _FittedTable(TableElement):
    """A Markdown table, fitted like every other table (:func:`fit_table`): rich's own cuts a
    long word to ``local-co…``, an agent's name included. The first column (what a row is
    about) is the last to be narrowed; a "role" column is left out first when the table is
    too wide (an agent's role is in its name or its own section), and that is said under
    it."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for part in super().__rich_console__(console, options):
            if isinstance(part, Table):
                if part.columns:  # what a row is about (an agent, a depth): whole, if any is
                    part.columns[0].no_wrap = True
                dropped = fit_table(part, options.max_width, drop=("role",))
                yield part
                if dropped:
                    yield Text(
                        f"(left out at {options.max_width} columns: {', '.join(dropped)}; a "
                        "wider terminal or --format html shows them)",
                        style="dim",
                    )
            else:
                yield part


class TerminalMarkdown(Markdown):
    """Markdown as a terminal shows it (headings, lists, wrapped paragraphs), its tables
    fitted to the width without cutting a word: what ``mindledger report`` prints on a
    terminal. Piped or written to a file, a report stays Markdown."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "table_open": _FittedTable,
    }
