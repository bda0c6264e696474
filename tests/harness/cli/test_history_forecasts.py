"""``mindledger history`` shows each self-forecast's bands beside the outcome (issue 29): the
table output marks the confidently wrong runs, and ``--format csv`` has a row per forecast."""

from __future__ import annotations

import csv
import io

from rich.console import Console

from harness.cli.history_cmd import CSV_COLUMNS, _csv, _print_history
from reports.history import DEFAULT_RULE, AgentHistory, RunRef
from reports.self_forecast import forecast_line
from reports.self_forecast_render import WRONG
from tests.reports.forecast_states import q, state


def _history() -> AgentHistory:
    refs = (
        RunRef("n1", "2026-11-01T03:00:00+00:00", "quick", True, True),
        RunRef("n2", "2026-11-02T03:00:00+00:00", "quick", True, True),
    )
    lines = (
        forecast_line(state("n1", "d50", q(2.5, 0.4), 2.6)),
        forecast_line(state("n2", "d50", q(2.5, 0.4), 3.3, seq=1)),
    )
    return AgentHistory("piper", DEFAULT_RULE, refs, (), lines)


def test_the_table_output_shows_bands_and_marks_the_wrong_run() -> None:
    console = Console(width=160, record=True)
    _print_history(console, _history())
    out = console.export_text()
    assert "Self-forecasts: 2 of 2 runs, 1 confidently wrong" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("n")}
    assert "50% [2.37, 2.63] · 90% [2.1, 2.9]" in rows["n2"] and "3.3" in rows["n2"]
    assert WRONG in rows["n2"] and WRONG not in rows["n1"]


def test_csv_has_a_row_per_forecast() -> None:
    rows = list(csv.DictReader(io.StringIO(_csv(_history()))))
    assert list(rows[0]) == list(CSV_COLUMNS)
    f = [r for r in rows if r["metric"] == "forecast:d50"]
    assert [(r["run_id"], r["flagged"], r["value"]) for r in f] == [
        ("n1", "False", "2.6"),
        ("n2", "True", "3.3"),
    ]
    assert (float(f[1]["ci_low"]), float(f[1]["ci_high"]), float(f[1]["baseline"])) == (
        2.1,
        2.9,
        2.5,
    )
    assert f[1]["suite"] == "quick" and f[1]["reason"].startswith(WRONG)
