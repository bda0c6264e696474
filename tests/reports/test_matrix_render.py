"""reports.matrix_render: the heatmap page marks cells without S instead of colouring them,
carries each cell's interval and n, and the CSV has one row per cell and condition with every
figure."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from reports.matrix import METRICS
from reports.matrix_render import (
    CSV_COLUMNS,
    NOT_DIVERGENT,
    NOT_ESTIMABLE,
    heatmap_png,
    matrix_cells,
    render_matrix_csv,
    render_matrix_html,
    skill_colour,
    skill_grids,
    skill_text,
)

AGENTS = ["a", "b"]


def figure(value: float | None, lo: float | None = None, hi: float | None = None,
           reason: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"value": value, "n": 40, "ci": None if lo is None else [lo, hi],
                           "interval": None if lo is None else "hierarchical-bootstrap-95",
                           "status": "estimated" if lo is not None else "not_estimable"}
    if reason:
        out["reason"] = reason
    return out


def cell(p: str, t: str, s: dict[str, Any], n: int = 40) -> dict[str, Any]:
    return {
        "predictor": p, "target": t, "self": p == t, "n": n,
        "log_score": figure(-0.7, -0.8, -0.6), "brier": figure(0.4, 0.35, 0.45),
        "penalised": 0, "top1_accuracy": figure(0.6, 0.5, 0.7), "ece": {"value": 0.1, "n": n},
        "skill": {**s, "base": 0.4, "population_baseline": {"value": 0.4, "n": n},
                  "projection_baseline": {"value": 0.3, "n": n},
                  "ceiling": {"value": 0.9, "n": n}, "base_kind": "population",
                  "test": "sign-flip", "p": 0.01, "denominator": None, "p_holm": 0.03},
        "predictor_errors": 0, "unparsed": 1, "unscored": 0, "rejected": 0,
        "unreadable": {"target_answers": 0, "target_samples": 5 * n, "predictions": 1,
                       "predictions_asked": n},
    }  # fmt: skip


def summary() -> dict[str, Any]:
    zero = [
        cell("a", "a", figure(0.52, 0.4, 0.63)),
        cell("a", "b", figure(-0.3, -0.5, -0.1)),
        cell("b", "a", figure(None, reason="the ceiling is not above the baseline")),
        cell("b", "b", figure(1.7, reason="no spread")),
    ]
    sim = [cell(p, t, figure(0.1, 0.0, 0.2), n=39) for p in AGENTS for t in AGENTS]
    return {
        "run": "run-m", "seed": 3, "held_out": False, "status": "complete", "agents": AGENTS,
        "n_items": 40, "samples": 5, "condition": "zero-shot",
        "conditions": ["zero-shot", "simulate"], "cells": zero,
        "by_condition": {"zero-shot": {"cells": zero, "self_advantage": {}},
                         "simulate": {"cells": sim, "self_advantage": {}}},
        "self_advantage": {t: {m: figure(0.1, 0.0, 0.2) for m in METRICS} for t in AGENTS},
        "target_errors": {"a": 0, "b": 0}, "items": [],
    }  # fmt: skip


def _tds(page: str, condition: str) -> dict[str, str]:
    table = re.search(rf"<table class='heatmap' data-condition='{condition}'>.*?</table>", page,
                      re.S)
    assert table is not None
    return {m.group(1): m.group(0)
            for m in re.finditer(r"<td [^>]*data-cell='([^']*)'.*?</td>", table.group(0), re.S)}


def test_the_heatmap_colours_s_and_marks_cells_without_it() -> None:
    page = render_matrix_html(summary(), figures=False)
    tds = _tds(page, "zero-shot")
    assert set(tds) == {"a|a", "a|b", "b|a", "b|b"}
    assert f"background:{skill_colour(0.52)}" in tds["a|a"] and "0.52 [0.40, 0.63]" in tds["a|a"]
    assert "n = 40" in tds["a|a"] and "class='self'" in tds["a|a"]
    assert skill_colour(-0.3) in tds["a|b"]
    # no S: marked, not coloured, the reason in the tooltip
    assert "marked" in tds["b|a"] and "background:" not in tds["b|a"]
    assert NOT_ESTIMABLE in tds["b|a"] and "the ceiling is not above the baseline" in tds["b|a"]
    # a value without an interval is coloured (clipped) and says so
    assert "1.70 (no interval)" in tds["b|b"] and skill_colour(1.0) in tds["b|b"]
    # the tooltip carries every figure with its interval
    assert "top1_accuracy: 0.600 [0.500, 0.700]" in tds["a|a"]
    assert "n = 39" in _tds(page, "simulate")["a|b"]
    assert "<img" not in page


def test_skill_colours_run_from_red_through_white_to_blue() -> None:
    assert skill_colour(0.0) == "#ffffff"
    assert skill_colour(1.0) == "#00798c" and skill_colour(5.0) == "#00798c"
    assert skill_colour(-1.0) == "#d1495b" and skill_colour(None) is None


def mark_not_divergent(summary: dict[str, Any], verdict: str) -> None:
    """The JSON of :meth:`reports.matrix_model.MatrixSummary.with_not_divergent`."""
    summary["not_divergent"] = verdict
    for c in summary["cells"]:
        c["skill"].update(value=None, ci=None, status="not_estimable", reason=verdict)


def test_a_not_divergent_matrix_marks_every_cell() -> None:
    s = summary()
    mark_not_divergent(s, "the targets answer alike")
    cells = matrix_cells(s)
    assert {c.mark for c in cells} == {NOT_DIVERGENT}
    page = render_matrix_html(s, figures=False)
    for condition in ("zero-shot", "simulate"):
        assert all("marked" in td and "background:" not in td
                   for td in _tds(page, condition).values())
    assert "No skill reported (not divergent): the targets answer alike" in page
    assert skill_text(skill_grids(s)[1].cell("a", "b")) == NOT_DIVERGENT


def test_the_csv_has_one_row_per_cell_and_condition_with_every_figure() -> None:
    rows = list(csv.DictReader(io.StringIO(render_matrix_csv(summary()))))
    assert len(rows) == 8 and tuple(rows[0]) == CSV_COLUMNS
    first = rows[0]
    assert (first["condition"], first["predictor"], first["target"], first["self"]) == (
        "zero-shot", "a", "a", "1")
    assert float(first["skill_value"]) == 0.52 and float(first["skill_lo"]) == 0.4
    assert float(first["skill_hi"]) == 0.63 and first["n"] == "40"
    assert float(first["p"]) == 0.01 and float(first["p_holm"]) == 0.03
    assert first["unparsed"] == "1" and first["base_kind"] == "population"
    none = rows[2]
    assert none["skill_value"] == "" and none["skill_status"] == "not_estimable"
    assert none["skill_reason"] == "the ceiling is not above the baseline"
    assert [r["condition"] for r in rows].count("simulate") == 4


def test_the_heatmap_figure_is_a_png() -> None:
    png = heatmap_png(skill_grids(summary())[0])
    assert png is not None and png.startswith(b"\x89PNG")
    page = render_matrix_html(summary())
    assert page.count("data:image/png;base64,") == 2
