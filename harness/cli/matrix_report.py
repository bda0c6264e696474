"""A matrix run's report (`mindledger report RUN` of a suite ``matrix`` run, and what
`mindledger matrix` prints): its matrix as tables, JSON, one HTML page or CSV, rebuilt from its
stored trials. Declared to :mod:`harness.cli.suite_reports` as the matrix suite's report."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.cli.suite_reports import ReportOptions
from harness.cli.tables import fits, print_table
from ledger.store import Store
from mindledger.disclosure import seed_phrase
from mindledger.errors import UserError
from reports.matrix_cells import CellRow
from reports.matrix_json import as_summary
from reports.matrix_model import DepthCells, MatrixSummary
from reports.matrix_render import Figure
from reports.matrix_runs import SUITE
from reports.matrix_summary import stored_summary

__all__ = ["SUITE_REPORT", "MatrixReport", "print_matrix", "report_matrix"]


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def _with_ci(figure: Figure, spec: str = ".3f") -> str:
    """``0.512 [0.401, 0.630]``, or the value alone when it has no interval."""
    text = _fmt(figure.value, spec)
    if figure.lo is None:
        return text
    return f"{text} [{_fmt(figure.lo, spec)}, {_fmt(figure.hi, spec)}]"


def _unreadable(cell: CellRow) -> str:
    """``0/40 · 3/10``: the cell's unreadable target answers and predictions."""
    u = cell.unreadable
    return f"{u.target_answers}/{u.target_samples} · {u.predictions}/{u.predictions_asked}"


def _print_pilot(console: Console, summary: MatrixSummary) -> None:
    pilot = summary.pilot
    if pilot is None:
        return
    # the pilot's filter and per-kind counts are its stored record's JSON (harness.matrix.runs)
    rule = ", ".join(f"{k} {v}" for k, v in (pilot.filter or {}).items())
    console.print(f"pilot ({pilot.method}; K = {pilot.samples}; {rule}): {pilot.verdict}")
    kinds = pilot.by_kind or {}
    if kinds:
        console.print(
            "  kept per kind: "
            + ", ".join(f"{k} {v.get('kept')}/{v.get('candidates')}" for k, v in kinds.items())
        )


def _pair_table(title: str, columns: Sequence[str]) -> Table:
    """A table of (predictor → target) rows and right-aligned ``columns``."""
    table = Table(title=title)
    table.add_column("predictor → target")
    for col in columns:
        table.add_column(col, justify="right")
    return table


def _print_conditions(console: Console, summary: MatrixSummary) -> None:
    if len(summary.conditions) < 2:
        return
    table = _pair_table(
        "Per condition: top-1 match and log score [95% interval]", list(summary.conditions)
    )
    rows: dict[tuple[str, str], list[str]] = {}
    for condition in summary.conditions:
        entry = summary.condition_summary(condition)
        for cell in entry.cells if entry is not None else ():
            rows.setdefault((cell.predictor, cell.target), []).append(
                f"{_fmt(cell.top1_accuracy.value)} / {_fmt(cell.log_score.value)}"
            )
    for (p, t), values in rows.items():
        table.add_row(f"{p} → {t}", *values)
    print_table(console, table)
    for entries, title in (
        (summary.learning_curve, "Learning curve: slope per past answer shown (m)"),
        (summary.simulate_contrast, "Simulate − zero-shot"),
    ):
        if not entries:
            continue
        sub = Table(title=f"{title} [95% item bootstrap] (sign-flip p)")
        for col in ("predictor → target", "log score", "top-1"):
            sub.add_column(col, justify="left" if col.startswith("predictor") else "right")
        for e in entries:
            sub.add_row(
                f"{e.predictor} → {e.target}",
                *(
                    _with_ci(Figure.of_estimate(f), "+.4f")
                    + ("" if f.p is None else f" (p={f.p:.3g})")
                    + (f" — {f.reason}" if f.reason else "")
                    for f in (e.figures["log_score"], e.figures["top1_accuracy"])
                ),
            )
        print_table(console, sub)


def print_matrix(console: Console, result: MatrixSummary | Mapping[str, Any]) -> None:
    """The matrix's tables (typed, or its JSON: :func:`reports.matrix_json.as_summary`)."""
    summary = as_summary(result)
    _print_pilot(console, summary)
    if summary.not_divergent:
        console.print(
            f"No skill reported: {summary.not_divergent}. The predictions were not run "
            "(on items where the targets answer alike, predicting another is answering the "
            "question yourself)."
        )
        return
    st = summary.stored
    seed = seed_phrase(None if st is None else st.seed, held_out=st is not None and st.held_out)
    run = f"run {st.run} · " if st is not None and st.run else ""
    table = Table(
        title=f"Cross-model prediction matrix: {run}{summary.primary.n_items} items, "
        f"{summary.primary.samples} target samples each ({seed}); [95% hierarchical bootstrap]"
    )
    cols = (
        "predictor → target",
        "n",
        "log score",
        "Brier",
        "top-1",
        "skill S",
        "base",
        "p (Holm)",
        "unreadable",
        "notes",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("predictor → target", "notes") else "right")
    footnotes: dict[str, int] = {}  # a reason → its number (long reasons would wrap the table)
    for c in summary.cells:
        notes = []
        if c.skill.reason:
            number = footnotes.setdefault(c.skill.reason, len(footnotes) + 1)
            notes.append(f"S: see {number}")
        for key, count in (
            ("predictor_errors", c.predictor_errors),
            ("unscored", c.unscored),
            ("rejected", c.rejected),
        ):
            if count:
                notes.append(f"{key.replace('_', ' ')}: {count}")
        table.add_row(
            f"{c.predictor} → {c.target}" + (" (self)" if c.is_self else ""),
            str(c.n),
            _with_ci(Figure.of(c.log_score)),
            _with_ci(Figure.of(c.brier)),
            _with_ci(Figure.of(c.top1_accuracy)),
            "not estimable" if c.skill.value is None else _with_ci(Figure.of(c.skill)),
            c.skill.base_kind or "—",
            _fmt(c.skill.p_holm, ".3g"),
            _unreadable(c),
            "; ".join(notes),
        )
    print_table(console, table, drop=("base", "p (Holm)", "Brier"))
    console.print(
        "  unreadable: the target's answers with no readable answer (of its samples) · "
        "the predictor's unparsed predictions (of its replies); more than half of "
        "either makes a cell not estimable",
        markup=False,
        highlight=False,
    )
    for reason, number in footnotes.items():
        console.print(f"  {number}. S: {reason}", markup=False, highlight=False)
    _print_self_advantage(console, summary)
    errors = {t: n for t, n in summary.primary.target_errors.items() if n}
    if errors:
        console.print(f"target API errors (samples dropped): {errors}")
    _print_conditions(console, summary)
    _print_depths(console, summary)


def _print_self_advantage(console: Console, summary: MatrixSummary) -> None:
    adv = Table(
        title="Self-advantage: T predicting T minus others predicting T "
        "[95% interval] (sign-flip p, Holm)"
    )
    for col in ("target", "log score", "Brier", "top-1", "skill S"):
        adv.add_column(col, justify="left" if col == "target" else "right")
    entries = summary.primary.self_advantage
    for t, entry in entries.items():
        adv.add_row(
            t,
            *(
                _with_ci(Figure.of_advantage(entry[m]), "+.3f")
                + ("" if entry[m].p_holm is None else f" (p={entry[m].p_holm:.3g})")
                for m in ("log_score", "brier", "top1_accuracy", "skill")
            ),
        )
    print_table(console, adv, drop=("Brier",))
    reasons = {
        reason
        for entry in entries.values()
        for figure in entry.values()
        if (reason := Figure.of_advantage(figure).reason)
    }
    for reason in sorted(reasons):
        console.print(f"  — {reason}")


def _print_depths(console: Console, summary: MatrixSummary) -> None:
    by_depth = summary.by_depth
    if not by_depth:
        return
    title = "Skill S by belief depth (NestToM items) [95% hierarchical bootstrap]"
    start = 0
    while start < len(by_depth):  # as many depths side by side as the width holds
        end = len(by_depth)
        while end > start + 1 and not fits(_depth_table(title, by_depth[start:end]), console.width):
            end -= 1
        print_table(console, _depth_table(title, by_depth[start:end]))
        title, start = "Skill S by belief depth (continued)", end


def _depth_table(title: str, by_depth: Sequence[DepthCells]) -> Table:
    table = _pair_table(title, [f"{e.depth} ({e.n_items} items)" for e in by_depth])
    for cell in by_depth[0].cells:
        p, t = cell.predictor, cell.target
        table.add_row(
            f"{p} → {t}",
            *(
                _with_ci(
                    Figure.of(
                        next(c for c in entry.cells if c.predictor == p and c.target == t).skill
                    )
                )
                for entry in by_depth
            ),
        )
    return table


def report_matrix(store: Store, run_id: str, fmt: str, options: ReportOptions) -> str:
    """A stored matrix run as `mindledger report` shows it, rebuilt from its stored trials: its
    matrix as JSON (``json``), the tables `mindledger matrix` prints (``md``, fitted to
    ``options.width`` columns), one page with the heatmap of S per condition (``html``) or one
    row per cell (``csv``)."""
    if fmt not in MatrixReport.formats:
        raise UserError(
            f"run {run_id} is a matrix run: it renders as md, json, html or csv, not {fmt}"
        )
    result = stored_summary(
        store,
        run_id,
        n_boot=options.n_boot,
        stats_seed=options.stats_seed,
        reveal_held_out=options.reveal_held_out,
    )
    if fmt == "json":
        return json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if fmt in ("html", "csv"):
        from reports.matrix_render import render_matrix_csv, render_matrix_html

        return render_matrix_html(result) if fmt == "html" else render_matrix_csv(result)
    console = Console(
        file=io.StringIO(), width=options.width, color_system=None, force_terminal=False
    )
    print_matrix(console, result)
    text: str = console.file.getvalue()  # type: ignore[attr-defined]
    return text


@dataclass(frozen=True)
class MatrixReport:
    """The matrix suite's report: its matrix, not a profile."""

    suite: str = SUITE
    formats: tuple[str, ...] = ("md", "json", "html", "csv")

    def render(self, store: Store, run_id: str, fmt: str, options: ReportOptions) -> str:
        return report_matrix(store, run_id, fmt, options)


SUITE_REPORT = MatrixReport()
"""What :mod:`harness.cli.suite_reports` loads for suite ``matrix``."""
