"""A matrix run's report (`mindledger report RUN` of a suite ``matrix`` run, and what
`mindledger matrix` prints): its matrix as tables, JSON, one HTML page or CSV, rebuilt from its
stored trials. Declared to :mod:`harness.cli.suite_reports` as the matrix suite's report."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.cli.suite_reports import ReportOptions
from harness.cli.tables import fits, print_table
from ledger.store import Store
from mindledger.disclosure import seed_phrase
from mindledger.errors import UserError
from reports.matrix_runs import SUITE
from reports.matrix_summary import summarise_run

__all__ = ["SUITE_REPORT", "MatrixReport", "print_matrix", "report_matrix"]


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def _with_ci(figure: dict[str, Any], spec: str = ".3f") -> str:
    """``0.512 [0.401, 0.630]``, or the value alone when it has no interval."""
    ci = figure.get("ci")
    text = _fmt(figure.get("value"), spec)
    return text if not ci else f"{text} [{_fmt(ci[0], spec)}, {_fmt(ci[1], spec)}]"


def _unreadable(cell: dict[str, Any]) -> str:
    """``0/40 · 3/10``: the cell's unreadable target answers and predictions."""
    u = cell.get("unreadable")
    if not u:
        return "—"
    return (
        f"{u['target_answers']}/{u['target_samples']} · {u['predictions']}/{u['predictions_asked']}"
    )


def _print_pilot(console: Console, result: dict[str, Any]) -> None:
    pilot = result.get("pilot")
    if not pilot:
        return
    rule = ", ".join(f"{k} {v}" for k, v in (pilot.get("filter") or {}).items())
    console.print(
        f"pilot ({pilot.get('method')}; K = {pilot.get('samples')}; {rule}): {pilot.get('verdict')}"
    )
    kinds = pilot.get("by_kind") or {}
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


def _print_conditions(console: Console, result: dict[str, Any]) -> None:
    by_condition = result.get("by_condition")
    if not by_condition:
        return
    table = _pair_table(
        "Per condition: top-1 match and log score [95% interval]", list(by_condition)
    )
    rows: dict[tuple[str, str], list[str]] = {}
    for entry in by_condition.values():
        for cell in entry["cells"]:
            rows.setdefault((cell["predictor"], cell["target"]), []).append(
                f"{_fmt(cell['top1_accuracy']['value'])} / {_fmt(cell['log_score']['value'])}"
            )
    for (p, t), values in rows.items():
        table.add_row(f"{p} → {t}", *values)
    print_table(console, table)
    for key, title in (
        ("learning_curve", "Learning curve: slope per past answer shown (m)"),
        ("simulate_contrast", "Simulate − zero-shot"),
    ):
        entries = result.get(key)
        if not entries:
            continue
        sub = Table(title=f"{title} [95% item bootstrap] (sign-flip p)")
        for col in ("predictor → target", "log score", "top-1"):
            sub.add_column(col, justify="left" if col.startswith("predictor") else "right")
        for e in entries:
            sub.add_row(
                f"{e['predictor']} → {e['target']}",
                *(
                    _with_ci(e[m], "+.4f")
                    + ("" if e[m].get("p") is None else f" (p={e[m]['p']:.3g})")
                    + (f" — {e[m]['reason']}" if e[m].get("reason") else "")
                    for m in ("log_score", "top1_accuracy")
                ),
            )
        print_table(console, sub)


def print_matrix(console: Console, result: dict[str, Any]) -> None:
    _print_pilot(console, result)
    if result.get("not_divergent"):
        console.print(
            f"No skill reported: {result['not_divergent']}. The predictions were not run "
            "(on items where the targets answer alike, predicting another is answering the "
            "question yourself)."
        )
        return
    seed = seed_phrase(result.get("seed"), held_out=bool(result.get("held_out")))
    run = f"run {result['run']} · " if result.get("run") else ""
    table = Table(
        title=f"Cross-model prediction matrix: {run}{result['n_items']} items, "
        f"{result['samples']} target samples each ({seed}); [95% hierarchical bootstrap]"
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
    for c in result["cells"]:
        notes = []
        if c["skill"].get("reason"):
            number = footnotes.setdefault(c["skill"]["reason"], len(footnotes) + 1)
            notes.append(f"S: see {number}")
        for key in ("predictor_errors", "unscored", "rejected"):
            if c[key]:
                notes.append(f"{key.replace('_', ' ')}: {c[key]}")
        table.add_row(
            f"{c['predictor']} → {c['target']}" + (" (self)" if c["self"] else ""),
            str(c["n"]),
            _with_ci(c["log_score"]),
            _with_ci(c["brier"]),
            _with_ci(c["top1_accuracy"]),
            "not estimable" if c["skill"].get("value") is None else _with_ci(c["skill"]),
            c["skill"].get("base_kind") or "—",
            _fmt(c["skill"].get("p_holm"), ".3g"),
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
    adv = Table(
        title="Self-advantage: T predicting T minus others predicting T "
        "[95% interval] (sign-flip p, Holm)"
    )
    for col in ("target", "log score", "Brier", "top-1", "skill S"):
        adv.add_column(col, justify="left" if col == "target" else "right")
    for t, entry in result["self_advantage"].items():
        adv.add_row(
            t,
            *(
                _with_ci(entry[m], "+.3f")
                + ("" if entry[m].get("p_holm") is None else f" (p={entry[m]['p_holm']:.3g})")
                for m in ("log_score", "brier", "top1_accuracy", "skill")
            ),
        )
    print_table(console, adv, drop=("Brier",))
    reasons = {
        entry[m]["reason"]
        for entry in result["self_advantage"].values()
        for m in entry
        if entry[m].get("reason")
    }
    for reason in sorted(reasons):
        console.print(f"  — {reason}")
    errors = {t: n for t, n in result["target_errors"].items() if n}
    if errors:
        console.print(f"target API errors (samples dropped): {errors}")
    _print_conditions(console, result)
    _print_depths(console, result)


def _print_depths(console: Console, result: dict[str, Any]) -> None:
    by_depth = result.get("by_depth")
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


def _depth_table(title: str, by_depth: Sequence[dict[str, Any]]) -> Table:
    table = _pair_table(title, [f"{e['depth']} ({e['n_items']} items)" for e in by_depth])
    for cell in by_depth[0]["cells"]:
        p, t = cell["predictor"], cell["target"]
        table.add_row(
            f"{p} → {t}",
            *(
                _with_ci(
                    next(c for c in entry["cells"] if c["predictor"] == p and c["target"] == t)[
                        "skill"
                    ]
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
    result = summarise_run(
        store,
        run_id,
        n_boot=options.n_boot,
        stats_seed=options.stats_seed,
        reveal_held_out=options.reveal_held_out,
    )
    if fmt == "json":
        return json.dumps(result, indent=2, ensure_ascii=False) + "\n"
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
