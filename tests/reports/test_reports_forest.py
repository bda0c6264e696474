"""Forest plots of a contrast block, read back from their SVG: one row per metric with its point
and interval, a zero line per unit, Holm-significant rows marked, rows without an interval
hollow with "no interval" said once, and metrics with no difference listed with their reason."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from reports._forest import MARK, forest_plot, forest_rows
from reports.render import CONTRAST_LABELS

NS = "{http://www.w3.org/2000/svg}"
SMALL_N = "n = 8 paired items: at least 10 are needed for an interval that keeps its coverage"


def block() -> dict[str, Any]:
    """A hand-built agent − control block: one Holm-significant proportion, one per-depth
    row whose interval spans zero, a D50 difference with an open upper end, one proportion
    without an interval (n < 10) and a metric with no difference at all."""
    return {
        "false_belief_accuracy": {
            "agent": 0.6,
            "control": 0.4,
            "difference": 0.2,
            "ci": [0.1, 0.3],
            "n": 40,
            "interval": "newcombe-paired-95",
            "p": 0.001,
            "p_holm": 0.01,
            "status": "estimated",
        },
        "accuracy_by_depth": {
            "R1": {
                "agent": 0.9,
                "control": 0.85,
                "difference": 0.05,
                "ci": [-0.1, 0.2],
                "n": 20,
                "p": 0.5,
                "p_holm": 1.0,
                "status": "estimated",
            },
        },
        "d50": {
            "agent": 2.5,
            "control": 1.7,
            "difference": 0.8,
            "ci": [0.4, None],
            "n": 40,
            "p": 0.03,
            "p_holm": 0.2,
            "status": "estimated",
        },
        "leakage_resistance": {
            "agent": 0.5,
            "control": 0.375,
            "difference": 0.125,
            "ci": None,
            "n": 8,
            "p": None,
            "p_holm": None,
            "status": "not_estimable",
            "reason": SMALL_N,
        },
        "games_accuracy": {"available": False, "reason": "no shared game items"},
    }


def draw(metrics: dict[str, Any]) -> ET.Element:
    svg = forest_plot(
        forest_rows(metrics, CONTRAST_LABELS),
        title="Agent − control: a − b",
        fig_id="forest-a-minus-control",
    )
    assert svg is not None
    return ET.fromstring(svg)


def rows(root: ET.Element) -> dict[str, ET.Element]:
    return {
        g.get("data-metric", ""): g for g in root.iter(f"{NS}g") if g.get("class") == "forest-row"
    }


def texts(el: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in el.iter(f"{NS}text")]


def interval_ends(row: ET.Element) -> tuple[float, float]:
    bar = next(row.iter(f"{NS}line"))  # the first line of a row is its interval
    return float(bar.get("x1", "nan")), float(bar.get("x2", "nan"))


def test_every_metric_is_a_row_in_its_units_section() -> None:
    root = draw(block())
    assert root.get("id") == "forest-a-minus-control"
    got = rows(root)
    # proportions first (the per-depth row under its metric), then D50 on its own axis
    assert list(got) == [
        "false_belief_accuracy",
        "accuracy_by_depth.R1",
        "leakage_resistance",
        "d50",
    ]
    assert root.get("data-rows") == "4"
    assert "false-belief accuracy" in texts(got["false_belief_accuracy"])
    assert "+20.0 pts [+10.0, +30.0] n=40 · p(Holm) 0.010" in texts(got["false_belief_accuracy"])
    assert "+0.80 [+0.40, open] n=40 · p(Holm) 0.200" in texts(got["d50"])
    # one zero line per unit: percentage points, depth levels
    zeros = [g for g in root.iter(f"{NS}g") if g.get("data-guide") == "zero"]
    assert len(zeros) == 2


def test_the_zero_line_sits_where_the_intervals_say() -> None:
    root = draw(block())
    zero_x = float(
        next(g for g in root.iter(f"{NS}g") if g.get("data-guide") == "zero")
        .find(f"{NS}line")
        .get("x1")
    )  # type: ignore[union-attr]
    got = rows(root)
    lo, hi = interval_ends(got["accuracy_by_depth.R1"])  # [-10, +20] pts: spans zero
    assert lo < zero_x < hi
    lo, hi = interval_ends(got["false_belief_accuracy"])  # [+10, +30] pts: right of zero
    assert zero_x < lo < hi
    # the same scale: 10 pts is the same width in both rows
    assert hi - lo == pytest.approx(2 * (zero_x - interval_ends(got["accuracy_by_depth.R1"])[0]))


def test_holm_significant_rows_are_marked_and_only_they() -> None:
    got = rows(draw(block()))
    marked = {m for m, g in got.items() if g.get("data-significant") == "yes"}
    # D50's raw p is 0.03 but its Holm-adjusted p 0.2: not marked
    assert marked == {"false_belief_accuracy"}
    diamond = got["false_belief_accuracy"].find(f"{NS}polygon")
    assert diamond is not None and diamond.get("fill") == MARK
    assert got["d50"].find(f"{NS}circle") is not None
    assert "(Holm-significant)" in got["false_belief_accuracy"].findtext(f"{NS}title", "")
    assert "Holm-significant" not in got["d50"].findtext(f"{NS}title", "")


def test_a_row_without_an_interval_is_hollow_and_no_interval_is_said_once() -> None:
    root = draw(block())
    got = rows(root)
    bare = got["leakage_resistance"]
    assert bare.get("data-interval") == "no"
    assert [g.get("data-interval") for m, g in got.items() if m != "leakage_resistance"] == [
        "yes"
    ] * 3
    assert bare.find(f"{NS}line") is None  # no bar
    point = bare.find(f"{NS}circle")
    assert point is not None and point.get("fill") == "#ffffff"  # hollow
    assert "+12.5 pts n=8" in texts(bare)
    every_text = " ".join(texts(root))
    assert every_text.count("no interval") == 1
    assert "hollow: no interval (n < 10)" in every_text
    assert bare.findtext(f"{NS}title") == "leakage resistance: +12.5 pts n=8 (no interval: n < 10)"


def test_a_metric_with_no_difference_is_listed_with_its_reason() -> None:
    root = draw(block())
    assert "games_accuracy" not in rows(root)
    assert "Not estimable: games accuracy (no shared game items)." in " ".join(texts(root))


def test_an_open_interval_end_is_an_arrowhead_at_the_edge() -> None:
    d50 = rows(draw(block()))["d50"]
    # the diamond is only for significant rows: the one polygon here is the arrowhead
    assert len(d50.findall(f"{NS}polygon")) == 1


def test_nothing_to_draw_is_none_and_text_is_escaped() -> None:
    only_missing = {"games_accuracy": {"available": False, "reason": "none"}}
    assert forest_plot(forest_rows(only_missing, CONTRAST_LABELS), title="t", fig_id="f") is None
    hostile = block()
    hostile["games_accuracy"]["reason"] = "<script>&\"'"
    svg = forest_plot(forest_rows(hostile, CONTRAST_LABELS), title="a <b> & c", fig_id="forest-x")
    assert svg is not None and "<script>" not in svg and "<b>" not in svg
    root = ET.fromstring(svg)
    assert "a <b> & c" in texts(root)
    assert "<script>&\"'" in " ".join(texts(root))
