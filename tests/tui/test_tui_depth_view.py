"""The run screen's depth chart as data and as a character grid (pure: no Textual)."""

from __future__ import annotations

from typing import Any

from tui.depth_view import COLUMN, MARKS, ChartRow, chart_rows, depth_curve


def cell(value: float, ci: list[float] | None, n: int, depth: float) -> dict[str, Any]:
    if ci is None:
        return {
            "value": value,
            "ci": None,
            "n": n,
            "depth_n": depth,
            "status": "not_estimable",
            "reason": "n = 8: at least 10 are needed",
        }
    return {"value": value, "ci": ci, "n": n, "depth_n": depth, "status": "estimated"}


def agent(valid: bool = True) -> dict[str, Any]:
    """An agent with a reality check and three depths, given out of order; R2's false-belief
    cell has no interval."""
    return {
        "valid": valid,
        "reality_check": {"value": 1.0, "ci": [0.9, 1.0], "n": 30, "status": "estimated"},
        "accuracy_by_depth": {
            "false": {
                "R2": cell(0.5, None, 8, 2),
                "R1": cell(0.8, [0.62, 0.91], 30, 1),
                "R3": cell(0.2, [0.08, 0.41], 30, 3),
            },
            "true": {"R3": cell(0.9, [0.75, 0.97], 30, 3), "R1": cell(1.0, [0.9, 1.0], 30, 1)},
        },
    }


def column(rows: list[ChartRow], x: int) -> list[tuple[str, str]]:
    """The cells of grid column ``x``, top (100%) to bottom (0%), without the axis rows."""
    return [r.cells[x] for r in rows[:-2]]


def test_the_curve_is_in_depth_order_with_the_reality_check_at_r0() -> None:
    curve = depth_curve("piper", agent())
    assert curve.depths == ("R0", "R1", "R2", "R3")
    assert curve.false_belief[0] is None  # R0 asks where the object is: no false belief
    r0 = curve.true_belief[0]
    assert r0 is not None and r0.value == 1.0 and r0.text == "100.0% [90.0, 100.0] n=30"
    r2 = curve.false_belief[2]
    assert r2 is not None and (r2.lo, r2.hi) == (None, None)  # not estimable: no interval
    assert curve.true_belief[2] is None  # no true-belief cell at R2
    r3 = curve.false_belief[3]
    assert r3 is not None and (r3.value, r3.lo, r3.hi, r3.n) == (0.2, 0.08, 0.41, 30)
    assert not curve.empty and curve.valid
    assert depth_curve("x", {"accuracy_by_depth": {}}).empty


def test_points_sit_at_their_accuracy_with_their_interval_as_a_bar() -> None:
    rows = chart_rows(depth_curve("piper", agent()))
    assert [r.label for r in rows[:11]] == [
        "100%",
        "",
        "80%",
        "",
        "60%",
        "",
        "40%",
        "",
        "20%",
        "",
        "0%",
    ]
    assert rows[-1].cells and "".join(c for c, _ in rows[-1].cells).split() == [
        "R0",
        "R1",
        "R2",
        "R3",
    ]
    # R3 false belief: 20% [8, 41] -> the point two rows above 0%, the bar from 10% to 40%
    x = 3 * COLUMN + COLUMN // 2 - 1
    col = column(rows, x)
    assert col[8] == (MARKS["false"], "false")  # 20%
    bar_rows = [i for i, c in enumerate(col) if c[1] == "false"]
    assert bar_rows == [6, 7, 8, 9]  # 40%, 30%, 20%, 10%
    assert all(col[i][0] == MARKS["bar"] for i in bar_rows if i != 8)
    # R3 true belief beside it: 90% [75, 97] (the 80% row up to the 100% row)
    col = column(rows, x + 2)
    assert col[1] == (MARKS["true"], "true")
    assert [i for i, c in enumerate(col) if c[1] == "true"] == [0, 1, 2]


def test_a_point_without_an_interval_is_hollow_and_has_no_bar() -> None:
    rows = chart_rows(depth_curve("piper", agent()))
    col = column(rows, 2 * COLUMN + COLUMN // 2 - 1)  # R2, false belief: 50%, no interval
    assert [c for c in col if c[1] == "false"] == [(MARKS["false-bare"], "false")]
    assert col[5] == (MARKS["false-bare"], "false")


def test_the_reality_check_is_its_own_mark_at_r0_and_the_validity_line_is_drawn() -> None:
    rows = chart_rows(depth_curve("piper", agent()))
    col = column(rows, COLUMN // 2 + 1)
    assert col[0] == (MARKS["reality"], "reality")  # 100%
    assert not any(kind == "false" for _, kind in column(rows, COLUMN // 2 - 1))
    # the 90% row is the validity threshold wherever no mark is drawn
    assert {kind for _, kind in rows[1].cells} <= {"threshold", "false", "true", "reality"}
    assert rows[1].cells[0] == (MARKS["threshold"], "threshold")
