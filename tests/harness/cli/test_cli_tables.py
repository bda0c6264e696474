"""``harness.cli.tables``: a table fitted to a width keeps every header whole and every line
within the width, leaving out only the columns it may, in the order given."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from harness.cli.tables import PIPED_WIDTH, TerminalMarkdown, fit_table, fits, stdout_console
from tests.harness.cli.test_cli_conventions import headers

MATRIX_HEADERS = ("predictor → target", "n", "log score", "Brier", "top-1", "skill S", "base",
                  "p (Holm)", "notes")


def matrix_table() -> Table:
    table = Table(title="Cross-model prediction matrix")
    for h in MATRIX_HEADERS:
        table.add_column(h, justify="left" if h in ("predictor → target", "notes") else "right")
    for _ in range(3):
        table.add_row("ref:projection → ref:clairvoyant (self)", "20", "-1.234 [-1.500, -0.900]",
                      "0.512 [0.401, 0.630]", "0.512 [0.401, 0.630]", "0.033 [-0.401, 0.630]",
                      "population = projection", "0.0123", "S: see 1; unparsed: 3")
    return table


def render(table: Table, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(table)
    text: str = console.file.getvalue()  # type: ignore[attr-defined]
    return text


def test_rich_alone_cuts_headers_at_80_columns_and_a_fitted_table_does_not() -> None:
    assert "…" in render(matrix_table(), 80)  # what issue 23 saw: `tria…`, `accur…`
    table = matrix_table()
    dropped = fit_table(table, 80, drop=("base", "p (Holm)", "Brier"))
    text = render(table, 80)
    assert "…" not in text and max(map(len, text.splitlines())) <= 80
    assert headers(text) == [[h for h in MATRIX_HEADERS if h not in dropped]]
    assert dropped == ["base", "p (Holm)", "Brier"][: len(dropped)]


def test_columns_are_left_out_in_the_order_given_and_only_when_needed() -> None:
    wide = matrix_table()
    assert fit_table(wide, 240, drop=("base",)) == []
    assert all(c.width is None for c in wide.columns)  # as rich lays it out
    narrow = matrix_table()
    assert fit_table(narrow, 60, drop=("base", "p (Holm)", "Brier")) == ["base", "p (Holm)",
                                                                         "Brier"]
    text = render(narrow, 60)
    assert max(map(len, text.splitlines())) <= 60
    assert headers(text) == [["predictor → target", "n", "log score", "top-1", "skill S",
                              "notes"]]
    assert fits(matrix_table(), 200) and not fits(matrix_table(), 60)


def test_a_word_wider_than_the_room_folds_inside_its_cell_never_in_a_header() -> None:
    digest = "sha256:" + "0123456789abcdef" * 4
    table = Table()
    for h in ("field", "value", "source"):
        table.add_column(h)
    table.add_row("commitment", digest, "the ledger")
    fit_table(table, 40)
    text = render(table, 40)
    assert max(map(len, text.splitlines())) <= 40
    assert headers(text) == [["field", "value", "source"]]
    assert digest in "".join(line.split("│")[2].strip() for line in text.splitlines()
                             if line.startswith("│"))


words = st.text(alphabet="abcdefghij-:.[]0123456789", min_size=1, max_size=14)
cells = st.lists(words, min_size=1, max_size=6).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    heads=st.lists(st.lists(words, min_size=1, max_size=3).map(" ".join), min_size=1,
                   max_size=8, unique=True),
    rows=st.lists(st.lists(cells, min_size=8, max_size=8), max_size=4),
    width=st.integers(40, 140),
    n_drop=st.integers(0, 3),
)
def test_any_table_fits_any_width_its_headers_can(
    heads: list[str], rows: list[list[str]], width: int, n_drop: int
) -> None:
    table = Table()  # Text, not markup: "[b]" and ":b:" are words here
    for h in heads:
        table.add_column(Text(h))
    for row in rows:
        table.add_row(*map(Text, row[: len(heads)]))
    room = width - (3 * len(heads) + 1)  # the box's borders and each cell's padding
    if sum(max(map(len, h.split())) for h in heads) > room:
        return  # no layout can keep every header whole
    drop = heads[len(heads) - n_drop:]
    dropped = fit_table(table, width, drop=drop)
    text = render(table, width)
    assert dropped == drop[: len(dropped)]
    assert max(map(len, text.splitlines())) <= width
    assert headers(text) == [[h for h in heads if h not in dropped]]


def test_tables_on_a_pipe_take_columns_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert stdout_console().width == 80
    monkeypatch.delenv("COLUMNS")
    assert stdout_console().width == PIPED_WIDTH


REPORT = """# mindledger profile — run `r1`

## Verdict

local (agent under test) is INVALID: true-belief controls 14.3% n=7, below the 90% required.

## Headline

| agent | role | valid | D50 [95%] | false-belief accuracy | leakage resistance | true-belief control acc. |
|---|---|---|---|---|---|---|
| local-control | control | INVALID | not counted | not counted: 14.3% n=7 | not counted: 71.4% n=7 | 28.6% n=7 |
| ref:depth-capped:2 | reference | yes | between 2 and 3 n=7 | 42.9% n=7 | 100.0% n=7 | 100.0% n=7 |
| ref:level:2 | reference | n/a | n/a (no NestToM trials) | n/a (no NestToM trials) | n/a (no NestToM trials) | n/a (no NestToM trials) |
"""


@pytest.mark.parametrize("width", [80, 120])
def test_a_report_on_a_terminal_is_shown_as_one_with_its_tables_fitted(width: int) -> None:
    """``mindledger report`` on a terminal: headings and paragraphs as a terminal shows them,
    no line wider than the terminal, every agent's name whole (rich alone cuts it to
    ``local-co…``), the role column left out first when there is no room, and said."""
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, color_system=None)
    console.print(TerminalMarkdown(REPORT))
    text = out.getvalue()
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert "| agent |" not in text and "## Headline" not in text  # shown, not Markdown
    for name in ("local-control", "ref:depth-capped:2", "ref:level:2"):
        assert any(line.lstrip().startswith(name) for line in lines), name
    dropped = f"(left out at {width} columns: role; a wider terminal or --format html shows them)"
    if width == 80:
        assert dropped in " ".join(text.split()) and "reference" not in text
    else:
        assert "left out" not in text and "reference" in text
    # rich alone cuts the names it cannot fit: what the fitting is for
    plain = io.StringIO()
    Console(file=plain, width=80, force_terminal=True, color_system=None).print(Markdown(REPORT))
    assert "…" in plain.getvalue()
